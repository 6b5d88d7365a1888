//! `yari train`, `yari plot` and `yari bench train`: thin wrappers over the `yari-train`
//! library, which does the work and documents the run-directory files.

use std::path::Path;
use std::time::Duration;

use anyhow::{Context, Result};
use yari_loop::plot::plot_run;
use yari_model::Backend;
use yari_train::{bench_train, TrainConfig, Trainer};

/// `yari train --run-dir DIR [--config FILE] [--steps N]`: resumes (or starts) the trainer of
/// the run and runs `steps` optimizer steps (default: the config's `steps_per_generation`)
/// with a progress bar, then prints the mean losses.
pub fn run(
    backend: &Backend,
    run_dir: &Path,
    config: TrainConfig,
    steps: Option<u64>,
    run_progress: f64,
) -> Result<()> {
    let steps = steps.unwrap_or(config.steps_per_generation);
    let mut trainer = Trainer::open_on(run_dir, config, None, backend)
        .with_context(|| format!("opening the trainer in {}", run_dir.display()))?;
    trainer.set_run_progress(run_progress)?;
    eprintln!(
        "training {} steps from step {} in {}",
        steps,
        trainer.step(),
        run_dir.display()
    );
    let s = trainer.train_steps(steps, true)?;
    println!(
        "step {}: loss {:.4} (policy KL {:.4}, value {:.4}), grad norm {:.3}, lr {:.3e}, {:.0} positions/s, window {} of {} positions",
        s.last_step, s.loss, s.policy_loss, s.value_loss, s.grad_norm, s.lr, s.samples_per_s, s.window, s.total_positions
    );
    println!("checkpoint {}", trainer.latest_checkpoint_path().display());
    Ok(())
}

/// `yari plot RUN_DIR`: draws `plots/training.png` and `plots/elo.png` (the ratings of `yari
/// ratings` by generation) and prints their paths.
pub fn plot(run_dir: &Path) -> Result<()> {
    let files = plot_run(run_dir).with_context(|| format!("plotting {}", run_dir.display()))?;
    if files.is_empty() {
        println!(
            "nothing to plot in {}: no training metrics and no rated games yet",
            run_dir.display()
        );
    }
    for f in files {
        println!("{}", f.display());
    }
    Ok(())
}

/// `yari bench train [--json]`: training positions per second for the default net and batch
/// size on the training device (about 10 s of steps after a warm-up).
/// Training samples/s for `config`'s network and batch size (the default run's, from `yari
/// bench train`).
pub fn bench(backend: &Backend, json: bool, config: TrainConfig) -> Result<()> {
    let b = bench_train(&config, backend, Duration::from_secs(10)).context("training benchmark")?;
    if json {
        println!("{}", serde_json::to_string(&b)?);
    } else {
        println!(
            "net {}x{}, batch {}, device {}: {:.1} ms/step, {:.0} samples/s ({} steps)",
            b.net.blocks,
            b.net.channels,
            b.batch_size,
            b.device,
            b.step_ms,
            b.samples_per_s,
            b.steps
        );
    }
    Ok(())
}
