//! Crash-safe file I/O, in one place, for every crate that writes a run directory.
//!
//! A training run is killed often (Ctrl-C, a cluster's pre-emption, an out-of-memory kill), and
//! its files are read back by the next session, by other processes polling the directory, and by
//! `yari check`. Three kinds of file cover everything it writes, and each has one writer here:
//!
//! - whole files replaced at once ([`write_atomic`]): state, configs, summaries, checkpoints,
//!   shards; a reader sees the old content or the new, never a mixture;
//! - append-only logs of JSON lines ([`jsonl`]): ledgers, ratings, metrics, arena games; a kill
//!   mid-line leaves one torn line that readers report apart from real corruption, and the next
//!   append does not glue its record onto it;
//! - binary containers with a fixed header and a CRC-32 trailer ([`frame`]): checkpoints and
//!   game shards, so truncation, foreign files and flipped bits are told apart before parsing.
//!
//! This crate depends on nothing heavier than serde, so the rules-free and burn-free crates can
//! use it too.
//!
//! ```
//! # fn main() -> Result<(), yari_io::Error> {
//! let dir = tempfile::tempdir().unwrap();
//! let state = dir.path().join("state.json");
//! yari_io::write_atomic(&state, b"{\"generation\": 1}")?;
//!
//! let log = dir.path().join("ratings.jsonl");
//! yari_io::jsonl::append(&log, &serde_json::json!({"generation": 1, "score": 0.5}))?;
//! let read = yari_io::jsonl::read::<serde_json::Value>(&log)?;
//! assert_eq!(read.records.len(), 1);
//! assert!(read.is_clean());
//! # Ok(())
//! # }
//! ```

pub mod atomic;
pub mod frame;
pub mod jsonl;
pub mod layout;
pub mod proto;
pub mod read;
pub mod tensorboard;

use std::path::{Path, PathBuf};

use thiserror::Error;

pub use atomic::{is_temp_name, remove_stale_temp_files, write_atomic};
pub use layout::RunPaths;
pub use read::{read_regular_file, read_regular_text, MAX_CONFIG_BYTES, MAX_LOG_BYTES};

/// A file operation that failed, with the file it failed on.
#[derive(Debug, Error)]
pub enum Error {
    /// The file system refused.
    #[error("{}: {source}", path.display())]
    Io {
        /// File or directory being read or written.
        path: PathBuf,
        /// Underlying error.
        #[source]
        source: std::io::Error,
    },
    /// A record could not be turned into JSON (a non-string map key, a failing `Serialize`).
    #[error("{}: cannot serialise record: {source}", path.display())]
    Serialize {
        /// File the record was meant for.
        path: PathBuf,
        /// Underlying error.
        #[source]
        source: serde_json::Error,
    },
}

impl Error {
    pub(crate) fn io(path: &Path, source: std::io::Error) -> Self {
        Error::Io {
            path: path.to_path_buf(),
            source,
        }
    }

    /// The file the error is about.
    pub fn path(&self) -> &Path {
        match self {
            Error::Io { path, .. } | Error::Serialize { path, .. } => path,
        }
    }

    /// The error as a plain `std::io::Error` (the path dropped), for callers whose own error
    /// type already carries the path.
    pub fn into_io(self) -> std::io::Error {
        match self {
            Error::Io { source, .. } => source,
            Error::Serialize { source, .. } => std::io::Error::other(source),
        }
    }
}
