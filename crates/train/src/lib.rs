//! Training of the Yari Shogi network on self-play records.
//!
//! - [`Trainer`]: opens (or resumes) the trainer state of a run directory, runs optimizer
//!   steps over the replay window ([`Trainer::train_steps`]), writes resumable checkpoints,
//!   per-step metrics, and candidate nets ([`Trainer::save_checkpoint`]).
//! - [`TrainConfig`]: every knob, serde (TOML/JSON) with defaults and [`TrainConfig::validate`].
//! - [`window`]: the replay window over the shards in `RUN_DIR/games`, sampled uniformly and
//!   rebuilt position by position from the game records on rayon threads.
//! - [`plot::plot_run`]: PNG plots of the metrics and of the Elo ledger.
//! - [`bench_train`]: training throughput.
//!
//! Training runs on `yari_model::default_device()` with autodiff: the CPU backend by default,
//! a GPU when the model crate is built with a GPU feature (this crate's `wgpu`/`cuda`
//! features forward to it).
//!
//! ```no_run
//! # fn main() -> Result<(), yari_train::TrainError> {
//! use yari_train::{TrainConfig, Trainer};
//! let run = std::path::Path::new("runs/first");
//! let mut trainer = Trainer::open(run, TrainConfig::default())?; // resumes if state exists
//! let summary = trainer.train_steps(500, true)?;
//! trainer.save_checkpoint(&run.join("nets/gen-0001.ckpt"), 1, None)?;
//! yari_train::plot::plot_run(run)?;
//! # Ok(()) }
//! ```

mod bench;
pub mod config;
mod error;
pub mod metrics;
pub mod plot;
mod trainer;
pub mod window;

pub use bench::{bench_train, random_games, TrainBench};
pub use config::{LrConfig, LrScheduleKind, OptimizerKind, TrainConfig, WindowConfig};
pub use error::TrainError;
pub use metrics::{read_metrics, StepMetrics, METRICS_FILE};
pub use trainer::{training_device, TrainState, TrainSummary, Trainer, STATE_FILE, TRAIN_DIR};
