//! The rules commands: `perft`, `legal` and `bench perft`.

use std::io::{BufRead, Write};
use std::time::Instant;

use anyhow::{bail, Context, Result};
use yari_rules::{Position, START_FEN};

fn parse_fen(fen: Option<&str>) -> Result<Position> {
    let fen = fen.unwrap_or(START_FEN);
    Position::from_fen(fen).with_context(|| format!("invalid FEN {fen:?}"))
}

pub fn perft(depth: u32, fen: Option<&str>, divide: bool) -> Result<()> {
    let pos = parse_fen(fen)?;
    let mut out = std::io::stdout().lock();
    let nodes = if divide && depth > 0 {
        let rows = pos.divide(depth);
        for (mv, n) in &rows {
            writeln!(out, "{mv}: {n}")?;
        }
        rows.iter().map(|(_, n)| n).sum()
    } else {
        pos.perft(depth)
    };
    writeln!(out, "{nodes}")?;
    Ok(())
}

fn legal_line(fen: &str) -> String {
    match Position::from_fen(fen) {
        Ok(pos) => {
            let mut moves: Vec<String> = pos.legal_moves().iter().map(|m| m.to_string()).collect();
            moves.sort();
            moves.join(" ")
        }
        Err(e) => format!("error: {e}"),
    }
}

pub fn legal(fen: Option<&str>) -> Result<()> {
    let mut out = std::io::stdout().lock();
    if let Some(fen) = fen {
        let line = legal_line(fen);
        writeln!(out, "{line}")?;
        if line.starts_with("error:") {
            bail!("invalid FEN {fen:?}");
        }
        return Ok(());
    }
    // One answer per input line, every line answered; the exit status then says whether
    // any of them was an error, so scripts need not parse the output to notice.
    let (mut lines, mut bad, mut first_bad) = (0usize, 0usize, 0usize);
    let mut input = std::io::stdin().lock();
    let mut buf = Vec::new();
    loop {
        buf.clear();
        if input
            .read_until(b'\n', &mut buf)
            .context("reading standard input")?
            == 0
        {
            break;
        }
        lines += 1;
        let answer = match std::str::from_utf8(&buf) {
            Ok(text) => legal_line(text.trim()),
            Err(e) => format!("error: line is not UTF-8 ({e})"),
        };
        if answer.starts_with("error:") {
            bad += 1;
            if first_bad == 0 {
                first_bad = lines;
            }
        }
        writeln!(out, "{answer}")?;
    }
    if bad > 0 {
        bail!("{bad} of {lines} input lines were not valid FENs (the first: line {first_bad})");
    }
    Ok(())
}

/// The oracle's `c_hands_both_all4_white`: both sides hold all four droppable kinds, so most
/// moves are drops (perft(3) = 2,165,546 by Fairy-Stockfish).
const FULL_HANDS_FEN: &str = "2nk1br/7/p1ppppp/7/7/7/P1PPPPP/7/2BK1NR[RBNPrbnp] w - - 0 1";

pub fn bench_perft(json: bool, quick: bool) -> Result<()> {
    let mut cases = vec![("start", START_FEN, 5u32)];
    if !quick {
        cases.push(("start", START_FEN, 6));
    }
    cases.push(("full_hands", FULL_HANDS_FEN, 4));
    let mut results = Vec::new();
    for (name, fen, depth) in cases {
        let pos = parse_fen(Some(fen))?;
        let t = Instant::now();
        let leaves = pos.perft(depth);
        let secs = t.elapsed().as_secs_f64();
        let rate = leaves as f64 / secs;
        if !json {
            println!(
                "{name:>10} depth {depth}: {leaves:>12} leaves in {secs:>7.3} s = {:>7.1} M leaves/s",
                rate / 1e6
            );
        }
        results.push((name, depth, leaves, secs, rate));
    }
    if json {
        // The headline figure is the start position at the deepest depth measured.
        let headline = results
            .iter()
            .filter(|r| r.0 == "start")
            .max_by_key(|r| r.1)
            .map(|r| r.4)
            .unwrap_or(0.0);
        let cases: Vec<serde_json::Value> = results
            .iter()
            .map(|(name, depth, leaves, secs, rate)| {
                serde_json::json!({"position": name, "depth": depth, "leaves": leaves,
                    "seconds": secs, "leaves_per_s": rate})
            })
            .collect();
        println!(
            "{}",
            serde_json::json!({"leaves_per_s": headline, "threads": 1, "cases": cases})
        );
    }
    Ok(())
}
