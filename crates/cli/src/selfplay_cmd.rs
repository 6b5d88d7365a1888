//! `yari selfplay` and `yari bench selfplay`.

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use anyhow::{Context, Result};
use yari_model::{default_device, NetConfig, NetEvaluator};
use yari_selfplay::{
    bench_selfplay, run_selfplay_until, Evaluator, RunOptions, SelfplayConfig, ShardWriter,
    UniformEvaluator,
};

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
pub fn run(model: Option<&Path>, games: usize, out: &Path, config: SelfplayConfig) -> Result<()> {
    config.validate()?;
    let evaluator: Box<dyn Evaluator> = match model {
        Some(path) => Box::new(
            NetEvaluator::from_checkpoint(path, default_device())
                .with_context(|| format!("loading network {}", path.display()))?,
        ),
        None => Box::new(UniformEvaluator),
    };
    let started = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let prefix = format!("sp-{started}-s{}", config.seed);
    let mut writer = ShardWriter::new(out, prefix, config.games_per_shard)
        .with_context(|| format!("creating {}", out.display()))?;
    for stale in writer.removed_temp_files() {
        eprintln!("removed {}, left by a killed writer", stale.display());
    }
    let options = RunOptions {
        progress: true,
        deadline: None,
    };
    stop_on_signal();
    let stats = run_selfplay_until(evaluator.as_ref(), &config, games, options, &STOP, |g| {
        writer.push(g)
    })?;
    let shards = writer.finish()?;
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
/// With `json`, prints one JSON object with `positions_per_s` and `search_share` (a fraction
/// of 1) among other figures. The measurement lasts 20 s, or `YARI_BENCH_SECONDS`.
pub fn bench(json: bool, net_config: NetConfig, config: SelfplayConfig) -> Result<()> {
    let device = default_device();
    let net = net_config.init(&device);
    let evaluator = NetEvaluator::new(net, net_config, device);
    let seconds: f64 = std::env::var("YARI_BENCH_SECONDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .filter(|s: &f64| *s > 0.0)
        .unwrap_or(20.0);
    // Warm up the backend (allocations, thread pools) outside the measurement.
    let warm = yari_rules::Position::startpos();
    evaluator.evaluate(&vec![&warm; config.concurrent_games]);
    let r = bench_selfplay(&evaluator, &config, Duration::from_secs_f64(seconds))?;
    if json {
        let out = serde_json::json!({
            "positions_per_s": r.positions_per_s,
            "search_share": r.search_share,
            "evaluations_per_s": r.evaluations_per_s,
            "average_batch": r.average_batch,
            "threads": r.threads,
            "wall_s": r.wall_s,
            "plies": r.plies,
            "evaluations": r.evaluations,
            "concurrent_games": config.concurrent_games,
            "net": net_config,
        });
        println!("{out}");
    } else {
        println!(
            "self-play ({} games in flight, {} threads, {:.0}s): {:.1} positions/s, {:.0} evaluations/s, mean batch {:.0}, search share {:.1}%",
            config.concurrent_games,
            r.threads,
            r.wall_s,
            r.positions_per_s,
            r.evaluations_per_s,
            r.average_batch,
            100.0 * r.search_share
        );
    }
    Ok(())
}
