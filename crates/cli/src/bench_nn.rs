//! `yari bench nn`: network throughput against the machine's matmul peak.

use std::time::Duration;

use yari_model::bench::{bench_cpu_forward, bench_forward, matmul_peak_gflops, ForwardBench};
use yari_model::{default_device, describe_device, CpuNet, NetConfig};

/// Prints positions/s of the `config` net at batch 1, 64 and 256 (or only `batch`), through
/// burn's forward pass and through [`CpuNet`] (what evaluations use on a CPU device), with the
/// achieved GFLOP/s next to the f32 matmul peak measured on the same device.
///
/// With `json`, prints one JSON object: `positions_per_s` and `gflops` (burn, at batch 256, or
/// at `batch` when given), `cpu_positions_per_s` and `cpu_gflops` (the same for [`CpuNet`]),
/// and `peak_gflops`, plus the per-batch details.
pub fn run(config: NetConfig, batch: Option<usize>, json: bool) -> anyhow::Result<()> {
    let device = default_device();
    let net = config.init(&device);
    let cpu = CpuNet::from_net(&net, &config)?;
    let batches = match batch {
        Some(0) => anyhow::bail!("--batch must be at least 1"),
        Some(b) => vec![b],
        None => vec![1, 64, 256],
    };
    let min_time = Duration::from_secs(2);
    let results: Vec<(ForwardBench, ForwardBench)> = batches
        .iter()
        .map(|&b| {
            (
                bench_forward(&net, &config, &device, b, min_time),
                bench_cpu_forward(&cpu, b, min_time),
            )
        })
        .collect();
    let peak = matmul_peak_gflops(&device, 2048, min_time);
    let (headline, cpu_headline) = results.last().expect("at least one batch");
    if json {
        let per_batch: Vec<_> = results
            .iter()
            .map(|(r, c)| {
                serde_json::json!({
                    "batch": r.batch,
                    "positions_per_s": r.positions_per_s,
                    "gflops": r.gflops,
                    "cpu_positions_per_s": c.positions_per_s,
                    "cpu_gflops": c.gflops,
                })
            })
            .collect();
        let out = serde_json::json!({
            "positions_per_s": headline.positions_per_s,
            "gflops": headline.gflops,
            "cpu_positions_per_s": cpu_headline.positions_per_s,
            "cpu_gflops": cpu_headline.gflops,
            "peak_gflops": peak,
            "batch": headline.batch,
            "device": describe_device(&device),
            "net": config,
            "flops_per_position": config.flops_per_position(),
            "per_batch": per_batch,
        });
        println!("{out}");
    } else {
        println!(
            "net: {} blocks x {} channels, {:.1} MFLOP/position, device {}",
            config.blocks,
            config.channels,
            config.flops_per_position() as f64 / 1e6,
            describe_device(&device)
        );
        for (r, c) in &results {
            println!(
                "batch {:>4}: burn {:>7.0} positions/s {:>6.1} GFLOP/s ({:>2.0}% of peak) | cpu forward, one thread {:>7.0} positions/s {:>6.1} GFLOP/s ({:>2.0}%)",
                r.batch,
                r.positions_per_s,
                r.gflops,
                100.0 * r.gflops / peak,
                c.positions_per_s,
                c.gflops,
                100.0 * c.gflops / peak
            );
        }
        println!("f32 matmul peak (2048^3): {peak:.1} GFLOP/s");
    }
    Ok(())
}
