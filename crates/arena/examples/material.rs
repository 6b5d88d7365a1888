//! Does material decide games, and does a network know it? The measurements behind the
//! default config's notes, using the alpha-beta baseline's piece values (in pawns) as the
//! yardstick; nothing here feeds training.
//!
//! ```sh
//! # who wins when one side is 5+ pawns of material ahead at ply 0, 20, ... (self-play shards)
//! cargo run --release -p yari-arena --features search --example material -- results DIR
//! # the same with hand pieces only
//! cargo run --release -p yari-arena --features search --example material -- hand-results DIR
//! # how a network's value follows material, over positions from the shards in DIR
//! cargo run --release -p yari-arena --features search --example material -- value DIR MODEL...
//! # material along arena games (JSON lines), from the first `model:` player's side
//! cargo run --release -p yari-arena --features search --example material -- arena FILE
//! ```

use std::path::Path;

use anyhow::{bail, Context, Result};
use yari_arena::alphabeta::{hand_value, material};
use yari_model::eval::NetEvaluator;
use yari_rules::{Color, Move, Position, Role};
use yari_search::Evaluator;
use yari_selfplay::{list_shards, read_shard, GameRecord, GameResult};

fn games(dir: &str) -> Result<Vec<GameRecord>> {
    let mut out = Vec::new();
    for shard in list_shards(Path::new(dir)).with_context(|| format!("listing {dir}"))? {
        out.extend(read_shard(&shard).with_context(|| format!("reading {}", shard.display()))?);
    }
    if out.is_empty() {
        bail!("no games in {dir}");
    }
    Ok(out)
}

/// Replays `game` to `ply` (its record was validated when the shard was read).
fn position(game: &GameRecord, ply: usize) -> Result<Position> {
    let mut pos = Position::from_fen(&game.start_fen)?;
    for &code in &game.moves[..ply] {
        let mv = Move::from_u16(code).context("bad move code")?;
        pos.play(mv);
    }
    Ok(pos)
}

fn hand_material(pos: &Position, color: Color) -> i32 {
    Role::ALL
        .iter()
        .map(|&r| hand_value(r) * (pos.hand(color, r) as i32 - pos.hand(!color, r) as i32))
        .sum()
}

fn results(dir: &str, hand_only: bool) -> Result<()> {
    let games = games(dir)?;
    let plies: usize = games.iter().map(|g| g.moves.len()).sum();
    let mut ends = std::collections::BTreeMap::new();
    for g in &games {
        *ends.entry(g.end.as_str()).or_insert(0) += 1;
    }
    println!(
        "{} games, {:.1} plies on average, ends {ends:?}",
        games.len(),
        plies as f64 / games.len() as f64
    );
    for ply in [0, 20, 40, 60, 80, 120] {
        let (mut won, mut drawn, mut lost) = (0, 0, 0);
        for g in games.iter().filter(|g| g.moves.len() > ply) {
            let pos = position(g, ply)?;
            let m = if hand_only {
                hand_material(&pos, Color::White)
            } else {
                material(&pos, Color::White)
            };
            if m.abs() < 500 {
                continue;
            }
            let ahead = if m > 0 { Color::White } else { Color::Black };
            match g.result {
                GameResult::Draw => drawn += 1,
                r if GameResult::from_winner(Some(ahead)) == r => won += 1,
                _ => lost += 1,
            }
        }
        println!("ply {ply:>3}: the side 5+ pawns ahead won {won}, drew {drawn}, lost {lost}");
    }
    Ok(())
}

fn value(dir: &str, models: &[String]) -> Result<()> {
    let games = games(dir)?;
    let mut positions = Vec::new();
    for (i, g) in games.iter().enumerate() {
        for ply in (11..g.moves.len()).filter(|p| p % 7 == i % 7) {
            positions.push(position(g, ply)?);
        }
    }
    positions.truncate(3000);
    let mats: Vec<f64> = positions
        .iter()
        .map(|p| material(p, p.side_to_move()) as f64 / 100.0)
        .collect();
    for model in models {
        let net = NetEvaluator::from_checkpoint(model, yari_model::default_device())
            .with_context(|| format!("loading {model}"))?;
        let refs: Vec<&Position> = positions.iter().collect();
        let vals: Vec<f64> = refs
            .chunks(256)
            .flat_map(|c| net.evaluate(c))
            .map(|e| e.value() as f64)
            .collect();
        let n = vals.len() as f64;
        let (mv, mm) = (vals.iter().sum::<f64>() / n, mats.iter().sum::<f64>() / n);
        let cov: f64 = vals
            .iter()
            .zip(&mats)
            .map(|(v, m)| (v - mv) * (m - mm))
            .sum();
        let sv = vals.iter().map(|v| (v - mv).powi(2)).sum::<f64>().sqrt();
        let sm = mats.iter().map(|m| (m - mm).powi(2)).sum::<f64>().sqrt();
        let bucket = |lo: f64, hi: f64| {
            let xs: Vec<f64> = vals
                .iter()
                .zip(&mats)
                .filter(|(_, m)| (lo..hi).contains(*m))
                .map(|(v, _)| *v)
                .collect();
            format!(
                "{:+.2} ({})",
                xs.iter().sum::<f64>() / xs.len().max(1) as f64,
                xs.len()
            )
        };
        println!(
            "{model}: {} positions, corr(value, material) {:.3}; mean value when the mover is \
             down 10+ pawns {}, down 3-10 {}, within 3 {}, up 3-10 {}, up 10+ {}",
            vals.len(),
            cov / (sv * sm),
            bucket(f64::NEG_INFINITY, -10.0),
            bucket(-10.0, -3.0),
            bucket(-3.0, 3.0),
            bucket(3.0, 10.0),
            bucket(10.0, f64::INFINITY)
        );
    }
    Ok(())
}

fn arena(file: &str) -> Result<()> {
    let text = std::fs::read_to_string(file).with_context(|| format!("reading {file}"))?;
    for line in text.lines() {
        let g: serde_json::Value = serde_json::from_str(line).context("a game line")?;
        let name = |c: &str| g[c].as_str().unwrap_or_default().to_string();
        let net = if name("white").starts_with("model") {
            Color::White
        } else {
            Color::Black
        };
        let mut pos = Position::from_fen(g["start_fen"].as_str().context("start_fen")?)?;
        let moves = g["moves"].as_array().context("moves")?;
        let mut along = Vec::new();
        for (i, m) in moves.iter().enumerate() {
            if i % 10 == 0 {
                along.push(material(&pos, net) / 100);
            }
            pos.play_uci(m.as_str().context("a move")?)?;
        }
        let result = match g["winner"].as_str() {
            Some(w) if (w == "white") == (net == Color::White) => "won",
            Some(_) => "lost",
            None => "drew",
        };
        println!(
            "{result} in {} plies ({}), material every 10 plies: {along:?}",
            moves.len(),
            g["reason"].as_str().unwrap_or("")
        );
    }
    Ok(())
}

fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.iter().map(String::as_str).collect::<Vec<_>>()[..] {
        ["results", dir] => results(dir, false),
        ["hand-results", dir] => results(dir, true),
        ["value", dir, ..] if args.len() > 2 => value(dir, &args[2..]),
        ["arena", file] => arena(file),
        _ => bail!(
            "usage: material results DIR | hand-results DIR | value DIR MODEL... | arena FILE"
        ),
    }
}
