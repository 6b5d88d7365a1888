//! `yari selfplay` and `yari bench selfplay`.

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use anyhow::{Context, Result};
use yari_model::{Backend, NetConfig};
use yari_search::{Evaluator, UniformEvaluator};
use yari_selfplay::{bench_selfplay, play_into_shards, RunOptions, SelfplayConfig, ShardWriter};

/// Raised by the first SIGINT or SIGTERM; the pool stops at its next round.
static STOP: AtomicBool = AtomicBool::new(false);

/// Exit status of a run ended by a signal (128 + SIGINT, as shells report it).
const INTERRUPTED: i32 = 130;

/// The first SIGINT or SIGTERM stops self-play between rounds: every finished game is
/// already in a shard, the games in flight are dropped. A second one ends the process at once
/// (still safe: shards are replaced atomically).
fn stop_on_signal() {
    let _ = ctrlc::set_handler(|| {
        if STOP.swap(true, Ordering::SeqCst) {
            std::process::exit(INTERRUPTED);
        }
        eprintln!("\ninterrupted: stopping; finished games are written, games in flight dropped");
    });
}

/// Plays `games` self-play games with the network in `model` (uniform priors and a draw value
/// everywhere when `None`) and writes them as shards into `out`.
///
/// Shard names start with the run's start time and seed, so several runs can share one
/// directory without overwriting each other.
pub fn run(
    backend: &Backend,
    model: Option<&Path>,
    games: usize,
    out: &Path,
    config: SelfplayConfig,
) -> Result<()> {
    config.validate()?;
    let evaluator: Box<dyn Evaluator> = match model {
        Some(path) => Box::new(
            backend
                .load_evaluator(path)
                .with_context(|| format!("loading network {}", path.display()))?,
        ),
        None => Box::new(UniformEvaluator),
    };
    let started = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let prefix = format!("sp-{started}-s{}", config.seed);
    let writer = ShardWriter::new(out, prefix, config.games_per_shard)
        .with_context(|| format!("creating {}", out.display()))?;
    for stale in writer.removed_temp_files() {
        eprintln!("removed {}, left by a killed writer", stale.display());
    }
    let options = RunOptions {
        progress: true,
        deadline: None,
    };
    stop_on_signal();
    let run = play_into_shards(evaluator.as_ref(), &config, games, writer, options, &STOP)?;
    let (stats, shards) = (run.stats, run.shards);
    eprintln!(
        "{} games, {} training positions in {} shards under {} ({:.0}s)",
        stats.games,
        stats.samples,
        shards.len(),
        out.display(),
        stats.wall.as_secs_f64()
    );
    eprintln!("{}", stats.summary());
    eprintln!(
        "ends: {}",
        yari_selfplay::GameEnd::ALL
            .iter()
            .zip(stats.ends)
            .map(|(e, n)| format!("{} {n}", e.as_str()))
            .collect::<Vec<_>>()
            .join(", ")
    );
    if stats.resign_disabled_games > 0 {
        eprintln!(
            "resignation disabled in {} games; {} would have resigned, {} of them wrongly",
            stats.resign_disabled_games, stats.would_resign_games, stats.false_resignations
        );
    }
    if stats.stopped {
        eprintln!("stopped by a signal after {} of {games} games", stats.games);
        std::process::exit(INTERRUPTED);
    }
    Ok(())
}

/// Self-play throughput with an untrained default-architecture net at the default config:
/// plies per second and the share of wall time spent outside network evaluation.
///
/// With `json`, prints one JSON object with `positions_per_s`, `search_share` and
/// /// `evaluator_idle_share` (fractions of 1) among other figures, for `duration`.
pub fn bench(
    backend: &Backend,
    json: bool,
    net_config: NetConfig,
    config: SelfplayConfig,
    duration: Duration,
) -> Result<()> {
    let device_name = backend.description().to_string();
    let net = net_config.init(backend.device());
    let evaluator = backend.evaluator(net, net_config);
    // Warm up the backend (allocations, thread pools) outside the measurement.
    let warm = yari_rules::Position::startpos();
    evaluator.evaluate(&vec![&warm; config.concurrent_games]);
    let r = bench_selfplay(&evaluator, &config, duration)?;
    let path = evaluator.cpu_path();
    let gflops = r.evaluations_per_s * net_config.flops_per_position() as f64 / 1e9;
    // Compared with the peaks of as many threads as self-play ran on.
    let peaks = yari_model::bench::Peaks::measure(backend.device(), Duration::from_secs(2));
    let report = peaks.report(
        gflops,
        r.threads,
        path.unwrap_or(yari_model::cpu::CpuPath::F32),
    );
    if json {
        let out = serde_json::json!({
            "positions_per_s": r.positions_per_s,
            "search_share": r.search_share,
            "evaluator_idle_share": r.evaluator_idle_share,
            "pipeline_groups": r.pipeline_groups,
            "evaluations_per_s": r.evaluations_per_s,
            "average_batch": r.average_batch,
            "threads": r.threads,
            "wall_s": r.wall_s,
            "plies": r.plies,
            "evaluations": r.evaluations,
            "concurrent_games": config.concurrent_games,
            "net": net_config,
            "cpu_path": path,
            "gflops": gflops,
            "peak_gflops": peaks.matmul_gflops,
            "f32_peak_gflops_per_thread": report["f32_peak_gflops_per_thread"],
            "bf16_peak_gflops_per_thread": peaks.bf16_thread_gflops,
            "f32_fma_peak_gflops_per_thread": peaks.fma_thread_gflops,
            "fraction_of_f32_fma_peak": report["fraction_of_f32_fma_peak"],
            "fraction_of_f32_peak": report["fraction_of_f32_peak"],
            "fraction_of_bf16_peak": report["fraction_of_bf16_peak"],
            "fraction_of_path_peak": report["fraction_of_path_peak"],
            "device": device_name,
        });
        println!("{out}");
    } else {
        println!(
            "self-play on {device_name} ({} games in flight in {} pipeline group(s), {} threads, {:.0}s): {:.1} positions/s, {:.0} evaluations/s, mean batch {:.0}, search share {:.1}%, evaluator idle {:.1}%, cpu path {}, {:.1} GFLOP/s ({:.0}% of the path's peak on {} threads)",
            config.concurrent_games,
            r.pipeline_groups,
            r.threads,
            r.wall_s,
            r.positions_per_s,
            r.evaluations_per_s,
            r.average_batch,
            100.0 * r.search_share,
            100.0 * r.evaluator_idle_share,
            path.map_or("burn", |p| p.name()),
            gflops,
            100.0 * report["fraction_of_path_peak"].as_f64().unwrap_or(0.0),
            r.threads
        );
    }
    Ok(())
}
