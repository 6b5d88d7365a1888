//! Perft speed: the start position and a middle game with full hands.

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

criterion_group!(benches, perft);
criterion_main!(benches);
