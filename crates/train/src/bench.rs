//! Training throughput measurement.

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::Serialize;
use yari_model::NetConfig;

use yari_model::Backend;

use crate::config::TrainConfig;
use crate::error::TrainError;
use crate::synthetic::random_games;
use crate::trainer::{Stepper, TrainPath};
use crate::window::{Prefetcher, WindowSnapshot};

/// Result of [`bench_train`].
#[derive(Clone, Debug, Serialize)]
pub struct TrainBench {
    /// Net trained.
    pub net: NetConfig,
    /// Positions per step.
    pub batch_size: usize,
    /// Timed steps.
    pub steps: u64,
    /// Mean wall time of a step, milliseconds.
    pub step_ms: f64,
    /// Training positions per second (forward, backward, optimizer; batch building overlapped
    /// by the prefetching producer, as in real training).
    pub samples_per_s: f64,
    /// The burn device trained on.
    pub device: String,
    /// The arithmetic of the step: f32 on both paths.
    pub path: &'static str,
    /// How the gradients were computed: `burn` (autodiff) or `cpu` (the hand-written pass),
    /// as the backend says.
    pub train_path: TrainPath,
    /// Achieved GFLOP/s, counting a step as 3 forward passes per sample (forward, and the
    /// backward pass's two products per layer: gradients of inputs and of weights).
    pub gflops: f64,
    /// The f32 matmul peak of one thread on the training device's backend (2048^3).
    pub peak_gflops: f64,
    /// `gflops` over the peak of all the threads the backend uses (`threads * peak_gflops`).
    pub fraction_of_f32_peak: f64,
    /// Threads of the backend's pool.
    pub threads: usize,
    /// One thread's AVX-512 FMA instruction peak (clean even on a loaded machine, unlike the
    /// matmul), and the fraction of `threads` times it that `gflops` is.
    pub f32_fma_peak_gflops_per_thread: Option<f64>,
    pub fraction_of_f32_fma_peak: Option<f64>,
}

/// Times training steps of `config`'s net and batch size on the training device, on batches
/// from random games, for at least `min_time` (and 3 steps) after 2 warm-up steps, on
/// `backend`'s device and training path.
pub fn bench_train(
    config: &TrainConfig,
    backend: &Backend,
    min_time: Duration,
) -> Result<TrainBench, TrainError> {
    config.validate()?;
    let device = backend.device().clone().autodiff();
    device.seed(config.seed);
    let net = config.net.init(&device);
    let train_path = backend.train_path();
    let mut stepper = Stepper::new(config.clone(), device.clone(), net, train_path);
    let window = Arc::new(WindowSnapshot::from_games(random_games(
        48,
        160,
        config.seed,
    )));
    let mut producer =
        Prefetcher::spawn(window, config.seed, config.batch_size, 0, u64::MAX / 2, 2);
    for _ in 0..2 {
        stepper.step(&producer.next_batch()?)?;
    }
    let start = Instant::now();
    let mut steps = 0u64;
    while steps < 3 || start.elapsed() < min_time {
        stepper.step(&producer.next_batch()?)?;
        steps += 1;
    }
    let secs = start.elapsed().as_secs_f64();
    let samples_per_s = (steps as usize * config.batch_size) as f64 / secs;
    let gflops = samples_per_s * 3.0 * config.net.flops_per_position() as f64 / 1e9;
    // burn's 2048^3 matmul uses every thread; its figure is the whole machine's peak.
    let machine_peak =
        yari_model::bench::matmul_peak_gflops(backend.device(), 2048, Duration::from_secs(2));
    let threads = rayon::current_num_threads();
    let fma = yari_model::bench::fma_f32_peak_gflops(Duration::from_secs(1));
    Ok(TrainBench {
        net: config.net,
        batch_size: config.batch_size,
        steps,
        step_ms: secs * 1e3 / steps as f64,
        samples_per_s,
        device: yari_model::describe_device(&device),
        path: "f32",
        train_path,
        gflops,
        peak_gflops: machine_peak / threads as f64,
        fraction_of_f32_peak: gflops / machine_peak,
        threads,
        f32_fma_peak_gflops_per_thread: fma,
        fraction_of_f32_fma_peak: fma.map(|p| gflops / (threads as f64 * p)),
    })
}
