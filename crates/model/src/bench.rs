//! Throughput measurement of the net against the machine's own matrix-multiply peak.
//!
//! Positions per second alone does not say whether a backend is doing well; comparing the
//! net's analytic FLOP rate with a large matmul on the same device does.

use std::time::{Duration, Instant};

use burn::tensor::{Device, Distribution, Tensor, TensorData};

pub use crate::cpu::{dpbf16_peak_gflops, fma_f32_peak_gflops};
use crate::cpu::{CpuNet, CpuPath};
use crate::net::{Net, NetConfig};

/// Throughput of the net at one batch size.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ForwardBench {
    /// Positions per forward call.
    pub batch: usize,
    /// Forward calls timed.
    pub iterations: usize,
    /// Positions evaluated per second, host-to-host (upload, forward, read back).
    pub positions_per_s: f64,
    /// Achieved GFLOP/s, from [`NetConfig::flops_per_position`].
    pub gflops: f64,
}

/// An input batch of deterministic pseudo-random planes: the figure isolates the network.
fn bench_input(config: &NetConfig, batch: usize) -> Vec<f32> {
    let per = config.input_planes * crate::net::SQUARES;
    (0..batch * per)
        .map(|i| ((i * 2654435761) % 1000) as f32 / 1000.0)
        .collect()
}

/// Calls `run` (one forward pass of `batch` positions) for at least `min_time` after a warm-up.
fn time_forward(
    config: &NetConfig,
    batch: usize,
    min_time: Duration,
    mut run: impl FnMut(),
) -> ForwardBench {
    run();
    run();
    let start = Instant::now();
    let mut iterations = 0;
    while iterations < 3 || start.elapsed() < min_time {
        run();
        iterations += 1;
    }
    let secs = start.elapsed().as_secs_f64();
    let positions_per_s = (iterations * batch) as f64 / secs;
    ForwardBench {
        batch,
        iterations,
        positions_per_s,
        gflops: positions_per_s * config.flops_per_position() as f64 / 1e9,
    }
}

/// Times burn's forward passes of `net` at `batch` for at least `min_time` after a warm-up.
///
/// The upload and read-back of the outputs are included because every evaluation pays them.
pub fn bench_forward(
    net: &Net,
    config: &NetConfig,
    device: &Device,
    batch: usize,
    min_time: Duration,
) -> ForwardBench {
    let input = bench_input(config, batch);
    time_forward(config, batch, min_time, || {
        let x = Tensor::<4>::from_data(
            TensorData::new(
                input.clone(),
                [
                    batch,
                    config.input_planes,
                    yari_rules::encoding::RANKS,
                    yari_rules::encoding::FILES,
                ],
            ),
            device,
        );
        let (p, v) = net.forward(x);
        std::hint::black_box((read_back(p), read_back(v)));
    })
}

/// Times [`CpuNet`] forward passes at `batch` on the calling thread, like [`bench_forward`].
pub fn bench_cpu_forward(net: &CpuNet, batch: usize, min_time: Duration) -> ForwardBench {
    let input = bench_input(net.config(), batch);
    time_forward(net.config(), batch, min_time, || {
        std::hint::black_box(net.forward(&input, batch));
    })
}

/// GFLOP/s of an `n x n` by `n x n` f32 matmul on `device`, best of repeated runs for at least
/// `min_time`: the practical peak the net's convolutions (im2col + gemm on CPU) can approach.
///
/// Each timed run is a chain of [`PEAK_CHAIN`] products, each the input of the next (a GPU's
/// launch and read-back latency shared by the chain), and ends by reading the sum of the last
/// one into host memory with [`read_back`]. `b` is scaled by `sqrt(3 / n)` so the chain's
/// entries stay of order one.
pub fn matmul_peak_gflops(device: &Device, n: usize, min_time: Duration) -> f64 {
    let a = Tensor::<2>::random([n, n], Distribution::Uniform(-1.0, 1.0), device);
    let s = (3.0 / n as f64).sqrt();
    let b = Tensor::<2>::random([n, n], Distribution::Uniform(-s, s), device);
    let chain = |len: usize| {
        let mut c = a.clone();
        for _ in 0..len {
            c = c.matmul(b.clone());
        }
        std::hint::black_box(read_back(c.sum()));
    };
    // Compiles (and on a GPU autotunes) the kernel outside the clock.
    chain(1);
    let flops = PEAK_CHAIN as f64 * 2.0 * (n as f64).powi(3);
    let start = Instant::now();
    let mut best = f64::INFINITY;
    let mut runs = 0;
    while runs < 2 || start.elapsed() < min_time {
        let t = Instant::now();
        chain(PEAK_CHAIN);
        best = best.min(t.elapsed().as_secs_f64());
        runs += 1;
    }
    flops / best / 1e9
}

/// Products per timed run of [`matmul_peak_gflops`].
pub const PEAK_CHAIN: usize = 4;

/// The tensor's values in host memory, which a bench's clock must wait for.
///
/// `into_data` alone is not enough on wgpu: the `TensorData` it returns can be handed out
/// before the device has finished, and only reading its values waits. With the `TensorData`
/// only black-boxed, a 2048^3 matmul "took" 0.5 ms on lavapipe (34 TFLOP/s on two CPU cores;
/// `yari bench nn` printed a peak of 566,525 GFLOP/s), while the process spent the real
/// second of CPU time per product outside the clock.
pub fn read_back<const D: usize>(t: Tensor<D>) -> Vec<f32> {
    t.into_data()
        .convert::<f32>()
        .try_into_vec::<f32>()
        .expect("f32 after convert")
}

/// The measured peaks, per arithmetic, for reporting a forward pass's GFLOP/s as a fraction of
/// what its own arithmetic allows on the threads it ran on.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
pub struct Peaks {
    /// f32: a 2048^3 matmul on the CPU device, on all `threads` of its pool (what im2col +
    /// gemm can approach); the historic `peak_gflops`.
    pub matmul_gflops: f64,
    /// Threads of the pool that matmul ran on.
    pub threads: usize,
    /// bf16 on one thread: `vdpbf16ps` with operands in registers; `None` without AVX-512 BF16.
    pub bf16_thread_gflops: Option<f64>,
    /// f32 on one thread: AVX-512 FMAs with operands in registers, the instruction peak
    /// (`None` without AVX-512). Short timed runs keep it clean on a loaded machine, where the
    /// matmul figure is not.
    pub fma_thread_gflops: Option<f64>,
}

impl Peaks {
    /// Measures both (each for at least `min_time`).
    pub fn measure(device: &Device, min_time: Duration) -> Self {
        Self {
            matmul_gflops: matmul_peak_gflops(device, 2048, min_time),
            threads: burn_threads(),
            bf16_thread_gflops: dpbf16_peak_gflops(min_time),
            fma_thread_gflops: fma_f32_peak_gflops(min_time),
        }
    }

    /// One thread's f32 peak.
    pub fn f32_thread_gflops(&self) -> f64 {
        self.matmul_gflops / self.threads.max(1) as f64
    }

    /// One thread's peak of `path`'s arithmetic (f32's when bf16's was not measured).
    pub fn thread_peak(&self, path: CpuPath) -> f64 {
        match path {
            CpuPath::F32 => self.f32_thread_gflops(),
            CpuPath::Bf16 => self.bf16_thread_gflops.unwrap_or(self.f32_thread_gflops()),
        }
    }

    /// JSON fields: the peaks, and the fractions that `gflops`, reached on `threads` threads
    /// running `path`, is of `threads` times each one-thread peak.
    pub fn report(&self, gflops: f64, threads: usize, path: CpuPath) -> serde_json::Value {
        let t = threads.max(1) as f64;
        serde_json::json!({
            "path": path,
            "threads": threads,
            "peak_gflops": self.matmul_gflops,
            "f32_peak_gflops_per_thread": self.f32_thread_gflops(),
            "bf16_peak_gflops_per_thread": self.bf16_thread_gflops,
            "f32_fma_peak_gflops_per_thread": self.fma_thread_gflops,
            "fraction_of_f32_fma_peak": self.fma_thread_gflops.map(|p| gflops / (t * p)),
            "fraction_of_f32_peak": gflops / (t * self.f32_thread_gflops()),
            "fraction_of_bf16_peak": self.bf16_thread_gflops.map(|p| gflops / (t * p)),
            "fraction_of_path_peak": gflops / (t * self.thread_peak(path)),
        })
    }
}

/// Threads burn's CPU backend computes on: rayon's global pool.
fn burn_threads() -> usize {
    rayon::current_num_threads()
}
