//! Perft speed (the start position and a middle game with full hands), and the cost of the
//! mate search that MCTS runs at every node it reaches.

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use yari_rules::{Position, START_FEN};

const FULL_HANDS_FEN: &str = "2nk1br/7/p1ppppp/7/7/7/P1PPPPP/7/2BK1NR[RBNPrbnp] w - - 0 1";

fn perft(c: &mut Criterion) {
    let mut group = c.benchmark_group("perft");
    group.sample_size(10);
    for (name, fen, depth) in [
        ("start", START_FEN, 5u32),
        ("start", START_FEN, 6),
        ("full_hands", FULL_HANDS_FEN, 4),
    ] {
        let pos = Position::from_fen(fen).unwrap();
        let leaves = pos.perft(depth);
        group.throughput(Throughput::Elements(leaves));
        group.bench_function(format!("{name}_d{depth}"), |b| b.iter(|| pos.perft(depth)));
    }
    group.finish();
}

/// Positions from the oracle's games, a few plies before their mates: where checks are many
/// and the mate search has the most to do.
fn mate_positions() -> Vec<Position> {
    let text = include_str!("../tests/data/games.jsonl");
    let mut out = Vec::new();
    for line in text.lines().take(200) {
        let moves: Vec<&str> = line
            .split("\"moves\":[")
            .nth(1)
            .and_then(|rest| rest.split(']').next())
            .map(|list| list.split(',').map(|m| m.trim_matches('"')).collect())
            .unwrap_or_default();
        let mut pos = Position::startpos();
        for (ply, mv) in moves.iter().enumerate() {
            if ply + 8 >= moves.len() && ply % 2 == 0 {
                out.push(pos.clone());
            }
            if pos.play_uci(mv).is_err() {
                break;
            }
        }
    }
    out
}

fn mate_search(c: &mut Criterion) {
    let positions = mate_positions();
    let mut group = c.benchmark_group("mate_search");
    group.sample_size(10);
    group.throughput(Throughput::Elements(positions.len() as u64));
    for plies in [1u32, 3, 5] {
        group.bench_function(format!("forced_mate_{plies}"), |b| {
            b.iter(|| {
                positions
                    .iter()
                    .filter(|p| p.forced_mate(plies).is_some())
                    .count()
            })
        });
    }
    group.finish();
}

criterion_group!(benches, perft, mate_search);
criterion_main!(benches);
