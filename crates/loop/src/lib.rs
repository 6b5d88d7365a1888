//! The AlphaZero generation loop of yari-zero, as a library: self-play with the best network,
//! train a candidate on the replay window, gate it against the best, rate the best against
//! fixed baselines, and again.
//!
//! A generation is a small state machine over [`Phase`]s, recorded in the run directory's
//! `state.json` ([`RunState`]) after every phase; resuming a killed run is "load the state,
//! run the next phase". Each phase is one function with typed inputs and outputs in
//! [`phases`], usable on its own, and [`Loop`] strings them together for `yari run`.
//!
//! # Roles over one run directory
//!
//! `yari run` plays every role in one process. The same functions serve split roles:
//!
//! - a **worker** ([`roles::run_worker`], self-play forever) reads [`RunDir::require_state`]
//!   before each batch to pick up the current best network, then plays the batch with
//!   [`phases::play_batch`] (the routine `yari run` plays a generation with) into shards named
//!   after its tag, host, process id and start time in `incoming/`, until the learner writes
//!   `finished` or a signal stops it;
//! - a **learner** ([`roles::open_learner`]) is the same [`Loop`] with the self-play phase
//!   replaced by [`roles::take_games`]: verified shards from `incoming/`, once
//!   `games_per_generation` of them have arrived from any workers, are moved into the
//!   generation's games; corrupt ones go to `rejected/`.
//!
//! Both go through [`RunDir`] for every file, and every file is written by [`yari_io`]'s
//! crash-safe writers, so a kill of either loses only the games or steps in flight.
//!
//! # Example
//!
//! ```
//! use yari_loop::{RunConfig, RunDir, RunState, Phase};
//!
//! // The built-in config is configs/default.toml; a config file is laid over it.
//! let config = RunConfig::parse("[run]\nname = \"tiny\"\ngenerations = 2\n", "example").unwrap();
//! assert_eq!(config.gate, RunConfig::default().gate);
//!
//! let dir = tempfile::tempdir().unwrap();
//! let run = RunDir::new(dir.path());
//! assert!(run.load_state().unwrap().is_none());
//! run.save_state(&RunState::new_run()).unwrap();
//! assert_eq!(run.require_state().unwrap().phase, Phase::Selfplay);
//! ```

pub mod check;
pub mod config;
mod driver;
pub mod phases;
pub mod plot;
pub mod roles;
pub mod run_dir;
pub mod source;

use std::path::{Path, PathBuf};

use thiserror::Error;

pub use check::{check_run, CheckReport, Finding, Severity};
pub use config::{
    section_from_file, GateSection, RatingSection, RunConfig, RunSection, DEFAULT_CONFIG,
};
pub use driver::{open_run, Loop};
pub use source::{GameSource, GamesIn, GamesRequest};

/// Where progress messages go (one line each).
pub type Log = fn(&str);

/// Writes a progress message to stderr with a UTC time stamp.
pub fn stderr_log(message: &str) {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let (h, m, s) = ((now / 3600) % 24, (now / 60) % 60, now % 60);
    eprintln!("[{h:02}:{m:02}:{s:02} UTC] {message}");
}
pub use roles::{Intake, WorkerOptions, WorkerStatus};
pub use run_dir::{GenerationSummary, Phase, PlayerKey, RatingEntry, RunDir, RunState};

/// Why the loop (or a check) could not go on.
#[derive(Debug, Error)]
pub enum LoopError {
    /// A config file is not valid TOML, has an unknown key, or a value out of range.
    #[error("invalid config {origin}: {what}")]
    Config {
        /// The file (or `(built-in default)`).
        origin: String,
        /// What is wrong, naming the field.
        what: String,
    },
    /// The file system refused.
    #[error(transparent)]
    Io(#[from] yari_io::Error),
    /// A file of the run exists but cannot be understood.
    #[error("{}: corrupt: {what}", path.display())]
    Corrupt {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        what: String,
    },
    /// Another process writes the run directory (`yari run` or `yari learn`).
    #[error(
        "{} is in use by another writer ({holder}): one `yari run` or `yari learn` at a time; \
         stop it first, or use another --run-dir",
        path.display()
    )]
    Busy {
        /// The run directory.
        path: PathBuf,
        /// Who holds it, as it wrote into the lock file.
        holder: String,
    },
    /// A command that needs a run directory was given another directory.
    #[error("{} is not a run directory (no state.json)", path.display())]
    NotARun {
        /// The directory.
        path: PathBuf,
    },
    /// The run has trained before, but the trainer's state is gone.
    #[error(
        "{}: the trainer's state is missing, but this run has already trained {steps} steps; \
         resuming would silently retrain from a fresh network. Restore train/ from a backup, \
         or start a new run directory",
        path.display()
    )]
    MissingTrainer {
        /// The trainer's directory.
        path: PathBuf,
        /// Steps trained according to the run's summaries.
        steps: u64,
    },
    /// No network of the run can be loaded.
    #[error("{}: {what}", path.display())]
    NoGoodNetwork {
        /// The damaged network.
        path: PathBuf,
        /// What is wrong with it and the others.
        what: String,
    },
    /// Training failed.
    #[error(transparent)]
    Train(#[from] yari_train::TrainError),
    /// A match or the gate failed.
    #[error(transparent)]
    Arena(#[from] yari_arena::ArenaError),
    /// Self-play failed.
    #[error(transparent)]
    Selfplay(#[from] yari_selfplay::SelfplayError),
    /// A shard could not be read or written.
    #[error(transparent)]
    Record(#[from] yari_selfplay::RecordError),
    /// A network could not be loaded.
    #[error("{}: {source}", path.display())]
    Checkpoint {
        /// The checkpoint.
        path: PathBuf,
        /// What is wrong with it.
        #[source]
        source: Box<yari_model::CheckpointError>,
    },
}

impl LoopError {
    pub(crate) fn io(path: &Path, source: std::io::Error) -> Self {
        LoopError::Io(yari_io::Error::Io {
            path: path.to_path_buf(),
            source,
        })
    }
}
