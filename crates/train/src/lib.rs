//! Training of the Yari Shogi network on self-play records.
//!
//! - [`Trainer`]: opens (or resumes) the trainer state of a run directory, runs optimizer
//!   steps over the replay window ([`Trainer::train_steps`]), writes resumable checkpoints,
//!   per-step metrics, and candidate nets ([`Trainer::save_checkpoint`]).
//! - [`TrainConfig`]: every knob, serde (TOML/JSON) with defaults and [`TrainConfig::validate`].
//! - [`window`]: the replay window over the shards in `RUN_DIR/games`, sampled uniformly and
//!   rebuilt position by position from the game records on rayon threads.
//! - [`plot::plot_run`]: PNG plots of the metrics and of the ratings the caller fitted.
//! - [`bench_train`]: training throughput.
//!
//! Training runs on `yari_model::default_device()` with autodiff: the CPU backend by default,
//! a GPU when the model crate is built with a GPU feature (this crate's `wgpu`/`cuda`
//! features forward to it).
//!
//! A tiny net trained for three steps on random games in a fresh run directory, then resumed:
//!
//! ```
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use yari_model::NetConfig;
//! use yari_train::{random_games, TrainConfig, Trainer};
//!
//! let run = tempfile::tempdir()?;
//! std::fs::create_dir_all(run.path().join("games"))?;
//! yari_selfplay::write_shard(run.path().join("games/random.yshard"), &random_games(4, 40, 0))?;
//! let net = NetConfig { blocks: 1, channels: 8, value_channels: 2, value_hidden: 8, ..NetConfig::default() };
//! let mut config = TrainConfig { net, batch_size: 16, ..TrainConfig::default() };
//! config.window.min_positions = 1;
//!
//! let mut trainer = Trainer::open(run.path(), config.clone())?;
//! let summary = trainer.train_steps(3, false)?;
//! assert!(summary.loss.is_finite());
//! trainer.save_checkpoint(&run.path().join("models/gen-0001.yari"), 1, None)?;
//! drop(trainer);
//! // Opening the same directory again resumes from its saved state.
//! assert_eq!(Trainer::open(run.path(), config)?.step(), 3);
//! # Ok(()) }
//! ```

mod bench;
pub mod config;
mod error;
pub mod metrics;
pub mod plot;
mod synthetic;
mod trainer;
pub mod window;

pub use bench::{bench_train, TrainBench};
pub use config::{LrConfig, LrScheduleKind, OptimizerKind, TrainConfig, WindowConfig};
pub use error::TrainError;
pub use metrics::{read_metrics, StepMetrics, METRICS_FILE};
pub use synthetic::random_games;
pub use trainer::{
    training_device, TrainPath, TrainState, TrainSummary, Trainer, STATE_FILE, TRAIN_DIR,
};
