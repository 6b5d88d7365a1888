//! `yari bench nn`: network throughput against the machine's matmul peak.

use std::time::Duration;

use yari_model::bench::{bench_forward, matmul_peak_gflops};
use yari_model::{default_device, NetConfig};

/// Prints positions/s of the default net at batch 1, 64 and 256 (or only `batch`), with the
/// achieved GFLOP/s next to the f32 matmul peak measured on the same device.
///
/// With `json`, prints one JSON object: `positions_per_s` (at batch 256, or at `batch` when
/// given), `gflops` (at that batch) and `peak_gflops`, plus the per-batch details.
pub fn run(batch: Option<usize>, json: bool) -> anyhow::Result<()> {
    let device = default_device();
    let config = NetConfig::default();
    let net = config.init(&device);
    let batches = match batch {
        Some(0) => anyhow::bail!("--batch must be at least 1"),
        Some(b) => vec![b],
        None => vec![1, 64, 256],
    };
    let min_time = Duration::from_secs(2);
    let results: Vec<_> = batches
        .iter()
        .map(|&b| bench_forward(&net, &config, &device, b, min_time))
        .collect();
    let peak = matmul_peak_gflops(&device, 2048, min_time);
    let headline = results.last().expect("at least one batch");
    if json {
        let per_batch: Vec<_> = results
            .iter()
            .map(|r| {
                serde_json::json!({
                    "batch": r.batch,
                    "positions_per_s": r.positions_per_s,
                    "gflops": r.gflops,
                })
            })
            .collect();
        let out = serde_json::json!({
            "positions_per_s": headline.positions_per_s,
            "gflops": headline.gflops,
            "peak_gflops": peak,
            "batch": headline.batch,
            "device": format!("{device:?}"),
            "net": config,
            "flops_per_position": config.flops_per_position(),
            "per_batch": per_batch,
        });
        println!("{out}");
    } else {
        println!(
            "net: {} blocks x {} channels, {:.1} MFLOP/position, device {device:?}",
            config.blocks,
            config.channels,
            config.flops_per_position() as f64 / 1e6
        );
        for r in &results {
            println!(
                "batch {:>4}: {:>9.0} positions/s  {:>7.1} GFLOP/s  ({:.0}% of peak)",
                r.batch,
                r.positions_per_s,
                r.gflops,
                100.0 * r.gflops / peak
            );
        }
        println!("f32 matmul peak (2048^3): {peak:.1} GFLOP/s");
    }
    Ok(())
}
