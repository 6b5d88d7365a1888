//! `yari bench search`: the engine's nodes per second by thread count and batch, against what
//! the network alone computes at the same batch and thread count (the limit of a search).

use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Result;
use rand::{Rng, SeedableRng};
use yari_rules::Position;
use yari_search::{Budget, EngineOptions, Evaluator};

/// Positions the bench searches: the start and the positions every ten plies of a game of
/// random moves (a fixed seed, so every run measures the same set).
pub fn positions() -> Vec<Position> {
    let mut out = vec![Position::startpos()];
    let mut pos = Position::startpos();
    let mut rng = rand::rngs::StdRng::seed_from_u64(11);
    for ply in 1..=70 {
        let moves = pos.legal_moves();
        if moves.is_empty() {
            break;
        }
        pos.play(moves[rng.random_range(0..moves.len())]);
        if pos.outcome().is_some() {
            break;
        }
        if ply % 10 == 0 {
            out.push(pos.clone());
        }
    }
    out
}

/// One row of the bench.
#[derive(Debug, serde::Serialize)]
pub struct Row {
    pub threads: usize,
    pub batch_per_thread: usize,
    pub batches_in_flight_per_thread: usize,
    pub nodes_per_s: f64,
    /// Of those, positions the network evaluated (the rest were settled by the rules or
    /// the mate search, or were the root's).
    pub evaluations_per_s: f64,
    pub average_batch: f64,
    /// The network's positions/s with `threads` threads each evaluating `batch_per_thread`.
    pub network_positions_per_s: f64,
    /// `nodes_per_s / network_positions_per_s`.
    pub fraction_of_network: f64,
    /// `evaluations_per_s / network_positions_per_s`: how much of the network's time the
    /// search keeps it busy.
    pub network_busy: f64,
    /// `nodes_per_s` over the one-thread, one-leaf search's.
    pub speedup: f64,
}

/// The network's throughput with `threads` threads each evaluating batches of `batch`.
fn network_rate(evaluator: &dyn Evaluator, set: &[Position], threads: usize, batch: usize) -> f64 {
    let min = Duration::from_millis(1500);
    let counts: Vec<(usize, Duration)> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                s.spawn(move || {
                    let chunk: Vec<&Position> =
                        (0..batch).map(|i| &set[(t + i) % set.len()]).collect();
                    let start = Instant::now();
                    let mut n = 0;
                    while start.elapsed() < min {
                        n += evaluator.evaluate(&chunk).len();
                    }
                    (n, start.elapsed())
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("bench thread"))
            .collect()
    });
    counts
        .iter()
        .map(|(n, t)| *n as f64 / t.as_secs_f64())
        .sum()
}

pub fn run(
    evaluator: Arc<dyn Evaluator>,
    threads: Vec<usize>,
    batches: Vec<usize>,
    in_flight: Vec<usize>,
    nodes: u32,
    json: bool,
) -> Result<()> {
    if let Some(bad) = threads
        .iter()
        .chain(&batches)
        .chain(&in_flight)
        .find(|&&v| v == 0)
    {
        anyhow::bail!(
            "bench search: threads, batch and in-flight values must be at least 1, got {bad}"
        );
    }
    let set = positions();
    let mut configs = vec![(1, 1, 1)];
    for &t in &threads {
        for &b in &batches {
            // Batches in flight per thread only matter with a pool (2 or more threads).
            let depths = if t > 1 { &in_flight[..] } else { &[1][..] };
            for &d in depths {
                if (t, b, d) != (1, 1, 1) {
                    configs.push((t, b, d));
                }
            }
        }
    }
    let never = AtomicBool::new(false);
    let mut rows: Vec<Row> = Vec::new();
    if !json {
        println!(
            "{} positions, go nodes {nodes} each, fresh tree per position\n\
             threads  batch/thread  in flight   nodes/s  evals/s  avg batch  network pos/s  of network  net busy  speedup",
            set.len()
        );
    }
    for (t, b, d) in configs {
        let options = EngineOptions {
            threads: t,
            batch_per_thread: b,
            batches_per_thread: d,
            ..EngineOptions::one_thread()
        };
        let engine = crate::engine::engine(evaluator.clone(), options)?;
        let (mut sims, mut evals, mut time, mut batch_sum) = (0u64, 0u64, 0.0f64, 0.0f64);
        for pos in &set {
            engine.clear_tree();
            let start = Instant::now();
            let thought = engine.think(
                pos,
                Budget::simulations(nodes),
                start,
                &never,
                Duration::MAX,
                |_| {},
            )?;
            time += start.elapsed().as_secs_f64();
            sims += thought.result.simulations as u64;
            evals += thought.evaluations as u64;
            batch_sum += thought.average_batch;
        }
        let nps = sims as f64 / time;
        let net = network_rate(&*evaluator, &set, t, b);
        let base = rows.first().map_or(nps, |r| r.nodes_per_s);
        let row = Row {
            threads: t,
            batch_per_thread: b,
            batches_in_flight_per_thread: d,
            nodes_per_s: nps,
            evaluations_per_s: evals as f64 / time,
            average_batch: batch_sum / set.len() as f64,
            network_positions_per_s: net,
            fraction_of_network: nps / net,
            network_busy: evals as f64 / time / net,
            speedup: nps / base,
        };
        if !json {
            println!(
                "{:>7}  {:>12}  {:>9}  {:>8.0}  {:>7.0}  {:>9.1}  {:>13.0}  {:>9.0}%  {:>7.0}%  {:>6.2}x",
                row.threads,
                row.batch_per_thread,
                row.batches_in_flight_per_thread,
                row.nodes_per_s,
                row.evaluations_per_s,
                row.average_batch,
                row.network_positions_per_s,
                100.0 * row.fraction_of_network,
                100.0 * row.network_busy,
                row.speedup
            );
        }
        rows.push(row);
    }
    if json {
        println!(
            "{}",
            serde_json::json!({ "nodes": nodes, "positions": set.len(), "rows": rows })
        );
    }
    Ok(())
}
