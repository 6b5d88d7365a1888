//! Typed errors of the training library.

use std::path::{Path, PathBuf};

use thiserror::Error;
use yari_model::cpu::CpuNetError;
use yari_model::CheckpointError;
use yari_selfplay::RecordError;

/// Why training (or plotting) failed.
#[derive(Debug, Error)]
pub enum TrainError {
    /// A configuration value is out of range or the file could not be parsed.
    #[error("invalid training config: {0}")]
    Config(String),
    /// The hand-written CPU training step refused its inputs (a batch or a net of another
    /// shape than the config's): a fault of the caller or of this crate, not of the config.
    #[error("the CPU training step failed: {0}")]
    Kernel(#[source] CpuNetError),
    /// The file system refused.
    #[error("{path}: {source}")]
    Io {
        /// File or directory involved.
        path: PathBuf,
        /// Underlying error.
        #[source]
        source: std::io::Error,
    },
    /// A checkpoint could not be read or written, or does not fit the configured net.
    #[error("checkpoint {path}: {source}")]
    Checkpoint {
        /// The checkpoint file.
        path: PathBuf,
        /// What was wrong with it.
        #[source]
        source: Box<CheckpointError>,
    },
    /// A self-play shard is unreadable or corrupt.
    #[error("game shard {path}: {source}")]
    Shard {
        /// The shard file.
        path: PathBuf,
        /// What was wrong with it.
        #[source]
        source: Box<RecordError>,
    },
    /// A game record does not replay (shards are validated when read, so only hand-built
    /// records get here).
    #[error("game {game_id}: {what}")]
    BadRecord {
        /// The game's id.
        game_id: u64,
        /// What is wrong.
        what: String,
    },
    /// The background batch producer stopped without a result (it panicked).
    #[error("the batch producer thread stopped unexpectedly")]
    ProducerStopped,
    /// The replay window holds too few positions to train on.
    #[error("replay window has {have} positions in {dir}, training needs at least {need} (window.min_positions)")]
    NotEnoughData {
        /// Positions found.
        have: usize,
        /// Positions required.
        need: usize,
        /// Where shards were looked for.
        dir: PathBuf,
    },
    /// The loss or the weights stopped being finite. Nothing was written for this step: the
    /// last checkpoint on disk is the last good state.
    #[error("training diverged at step {step}: {what} is not finite (lr {lr:e}); the last checkpoint (step {last_checkpoint_step}) is untouched")]
    NonFinite {
        /// The optimizer step (1-based, as in metrics) whose loss or update was not finite.
        step: u64,
        /// What was not finite (`loss`, `gradient norm`, `weights`).
        what: String,
        /// Learning rate of that step.
        lr: f64,
        /// Step of the newest checkpoint on disk.
        last_checkpoint_step: u64,
    },
    /// The backward pass produced no gradient for any parameter (the net is not on an
    /// autodiff device, or its parameters do not require gradients).
    #[error("no parameter received a gradient: the net is not trainable on this device")]
    NoGradients,
    /// The trainer hit a fatal error earlier and must be reopened from its last checkpoint.
    #[error(
        "trainer is unusable after an earlier error; reopen it to resume from the last checkpoint"
    )]
    Poisoned,
    /// The run directory's trainer state does not fit the config (e.g. another optimizer).
    #[error("trainer state {path}: {what}")]
    State {
        /// The state file.
        path: PathBuf,
        /// What is wrong.
        what: String,
    },
    /// The optimizer state could not be encoded or decoded.
    #[error("optimizer state {path}: {what}")]
    OptimizerState {
        /// The optimizer state file.
        path: PathBuf,
        /// What failed.
        what: String,
    },
    /// Drawing a plot failed.
    #[error("plot {path}: {what}")]
    Plot {
        /// The image being drawn.
        path: PathBuf,
        /// What failed.
        what: String,
    },
}

impl From<yari_io::Error> for TrainError {
    fn from(e: yari_io::Error) -> Self {
        TrainError::Io {
            path: e.path().to_path_buf(),
            source: e.into_io(),
        }
    }
}

impl TrainError {
    pub(crate) fn io(path: &Path, source: std::io::Error) -> Self {
        TrainError::Io {
            path: path.to_path_buf(),
            source,
        }
    }

    pub(crate) fn shard(path: &Path, source: RecordError) -> Self {
        TrainError::Shard {
            path: path.to_path_buf(),
            source: Box::new(source),
        }
    }

    pub(crate) fn checkpoint(path: &Path, source: CheckpointError) -> Self {
        TrainError::Checkpoint {
            path: path.to_path_buf(),
            source: Box::new(source),
        }
    }
}
