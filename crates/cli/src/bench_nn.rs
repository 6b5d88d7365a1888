//! `yari bench nn`: network throughput against the machine's matmul peak.

use std::time::Duration;

use yari_model::bench::{
    bench_cpu_forward, bench_forward, matmul_peak_gflops, ForwardBench, Peaks,
};
use yari_model::cpu::CpuPath;
use yari_model::{is_cpu, open_device, Backend, CpuNet, NetConfig};

/// Prints positions/s of the `config` net at batch 1, 64 and 256 (or only `batch`), through
/// burn's forward pass and through [`CpuNet`] (what evaluations use on a CPU device), with the
/// achieved GFLOP/s next to the f32 matmul peak measured on the same device.
///
/// With `json`, prints one JSON object: `positions_per_s` and `gflops` (burn, at batch 256, or
/// at `batch` when given), `cpu_positions_per_s` and `cpu_gflops` (the same for [`CpuNet`]),
/// and `peak_gflops` (the f32 matmul peak of burn's device), plus the per-batch details; the
/// CPU figures are relative to the CPU's own peaks (`f32_peak_gflops_per_thread` and after). `cpu_path` is the arithmetic [`CpuNet`] ran
/// (the backend's `--cpu-path`); when it is not f32, `cpu_f32_*` are the same
/// figures on the f32 fallback for comparison. `bf16_peak_gflops` and the `fraction_of_*`
/// fields relate each GFLOP/s to the one-thread peak of its arithmetic.
pub fn run(
    backend: &Backend,
    config: NetConfig,
    batch: Vec<usize>,
    json: bool,
) -> anyhow::Result<()> {
    let device = backend.device().clone();
    let net = config.init(&device);
    let cpu = CpuNet::from_net_with_path(&net, &config, backend.cpu_path())?;
    let path = cpu.path();
    let cpu_f32 = match path {
        CpuPath::F32 => None,
        _ => Some(CpuNet::from_net_with_path(&net, &config, CpuPath::F32)?),
    };
    let batches = batches(batch)?;
    let min_time = Duration::from_secs(2);
    let results: Vec<(ForwardBench, ForwardBench, Option<ForwardBench>)> = batches
        .iter()
        .map(|&b| {
            (
                bench_forward(&net, &config, &device, b, min_time),
                bench_cpu_forward(&cpu, b, min_time),
                cpu_f32.as_ref().map(|f| bench_cpu_forward(f, b, min_time)),
            )
        })
        .collect();
    // The CPU forward pass is measured against the CPU's peaks, burn's against its device's.
    let peaks = Peaks::measure(&open_device("flex")?, min_time);
    let peak = if is_cpu(&device) {
        peaks.matmul_gflops
    } else {
        matmul_peak_gflops(&device, 2048, min_time)
    };
    let (headline, cpu_headline, f32_headline) = results.last().expect("at least one batch");
    if json {
        let per_batch: Vec<_> = results
            .iter()
            .map(|(r, c, f)| {
                serde_json::json!({
                    "batch": r.batch,
                    "positions_per_s": r.positions_per_s,
                    "gflops": r.gflops,
                    "cpu_positions_per_s": c.positions_per_s,
                    "cpu_gflops": c.gflops,
                    "cpu_fraction_of_path_peak": c.gflops / peaks.thread_peak(path),
                    "cpu_f32_positions_per_s": f.map(|f| f.positions_per_s),
                    "cpu_f32_gflops": f.map(|f| f.gflops),
                })
            })
            .collect();
        let report = peaks.report(cpu_headline.gflops, 1, path);
        let out = serde_json::json!({
            "positions_per_s": headline.positions_per_s,
            "gflops": headline.gflops,
            "fraction_of_f32_peak": headline.gflops / peak,
            "cpu_path": path,
            "cpu_positions_per_s": cpu_headline.positions_per_s,
            "cpu_gflops": cpu_headline.gflops,
            "cpu_fraction_of_f32_peak": report["fraction_of_f32_peak"],
            "cpu_fraction_of_bf16_peak": report["fraction_of_bf16_peak"],
            "cpu_fraction_of_path_peak": report["fraction_of_path_peak"],
            "cpu_f32_positions_per_s": f32_headline.map(|f| f.positions_per_s),
            "cpu_f32_gflops": f32_headline.map(|f| f.gflops),
            "peak_gflops": peak,
            "f32_peak_gflops_per_thread": report["f32_peak_gflops_per_thread"],
            "bf16_peak_gflops_per_thread": peaks.bf16_thread_gflops,
            "f32_fma_peak_gflops_per_thread": peaks.fma_thread_gflops,
            "cpu_fraction_of_f32_fma_peak": report["fraction_of_f32_fma_peak"],
            "batch": headline.batch,
            "device": backend.description(),
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
            backend.description()
        );
        for (r, c, f) in &results {
            let f32_part = f
                .map(|f| {
                    format!(
                        " | f32 fallback {:>7.0} positions/s {:>6.1} GFLOP/s ({:>2.0}% of f32 peak)",
                        f.positions_per_s,
                        f.gflops,
                        100.0 * f.gflops / peaks.f32_thread_gflops()
                    )
                })
                .unwrap_or_default();
            println!(
                "batch {:>4}: burn {:>7.0} positions/s {:>6.1} GFLOP/s ({:>2.0}% of peak) | cpu forward ({path}), one thread {:>7.0} positions/s {:>6.1} GFLOP/s ({:>2.0}% of {path} peak){f32_part}",
                r.batch,
                r.positions_per_s,
                r.gflops,
                100.0 * r.gflops / peak,
                c.positions_per_s,
                c.gflops,
                100.0 * c.gflops / peaks.thread_peak(path)
            );
        }
        if !is_cpu(&device) {
            println!(
                "f32 matmul peak (2048^3) on {}: {peak:.1} GFLOP/s",
                backend.description()
            );
        }
        println!(
            "f32 matmul peak (2048^3) on the CPU, {} threads: {:.1} GFLOP/s, {:.1} a thread",
            peaks.threads,
            peaks.matmul_gflops,
            peaks.f32_thread_gflops()
        );
        if let Some(p) = peaks.fma_thread_gflops {
            println!("f32 FMA peak (registers only, one thread): {p:.1} GFLOP/s");
        }
        if let Some(p) = peaks.bf16_thread_gflops {
            println!("bf16 vdpbf16ps peak (registers only, one thread): {p:.1} GFLOP/s");
        }
    }
    Ok(())
}

/// The batch sizes asked for, or 1, 64 and 256.
fn batches(asked: Vec<usize>) -> anyhow::Result<Vec<usize>> {
    if asked.contains(&0) {
        anyhow::bail!("--batch must be at least 1");
    }
    if asked.iter().any(|&b| b > MAX_BATCH) {
        anyhow::bail!("--batch must be at most {MAX_BATCH}");
    }
    Ok(if asked.is_empty() {
        vec![1, 64, 256]
    } else {
        asked
    })
}

/// Largest batch `bench nn` builds: 65,536 positions of the default encoding are already
/// some 700 MB of input on the device.
const MAX_BATCH: usize = 65_536;

/// A network shape written BLOCKSxCHANNELS, with the default heads.
pub fn parse_net(shape: &str) -> anyhow::Result<NetConfig> {
    let parsed = shape
        .split_once(['x', 'X'])
        .and_then(|(b, c)| Some((b.trim().parse().ok()?, c.trim().parse().ok()?)));
    let Some((blocks, channels)) = parsed else {
        anyhow::bail!("--net {shape:?}: expected BLOCKSxCHANNELS, e.g. 10x128");
    };
    let config = NetConfig::new(blocks, channels);
    config
        .validate()
        .map_err(|e| anyhow::anyhow!("--net {shape:?}: {e}"))?;
    Ok(config)
}

/// The device's forward pass alone at each batch size, against its matmul peak.
pub fn run_device_only(
    backend: &Backend,
    config: NetConfig,
    batch: Vec<usize>,
    json: bool,
) -> anyhow::Result<()> {
    let device = backend.device().clone();
    let net = config.init(&device);
    let min_time = Duration::from_secs(2);
    let results: Vec<ForwardBench> = batches(batch)?
        .into_iter()
        .map(|b| bench_forward(&net, &config, &device, b, min_time))
        .collect();
    let peak = matmul_peak_gflops(&device, 2048, min_time);
    let description = backend.description().to_string();
    if json {
        let per_batch: Vec<_> = results
            .iter()
            .map(|r| {
                serde_json::json!({
                    "batch": r.batch,
                    "positions_per_s": r.positions_per_s,
                    "gflops": r.gflops,
                    "fraction_of_f32_peak": r.gflops / peak,
                })
            })
            .collect();
        let out = serde_json::json!({
            "device": description,
            "net": config,
            "flops_per_position": config.flops_per_position(),
            "peak_gflops": peak,
            "per_batch": per_batch,
        });
        println!("{out}");
    } else {
        println!(
            "net: {} blocks x {} channels, {:.1} MFLOP/position, device {description}",
            config.blocks,
            config.channels,
            config.flops_per_position() as f64 / 1e6,
        );
        for r in &results {
            println!(
                "batch {:>5}: {:>9.0} positions/s {:>8.1} GFLOP/s ({:>2.0}% of the f32 matmul peak)",
                r.batch,
                r.positions_per_s,
                r.gflops,
                100.0 * r.gflops / peak
            );
        }
        println!("f32 matmul peak (2048^3) on {description}: {peak:.1} GFLOP/s");
    }
    Ok(())
}
