//! The library's error type.

use std::path::PathBuf;

use thiserror::Error;

use crate::player::PlayerError;
use crate::spec::SpecError;

/// Why a match, a gate or a rating fit could not be carried out (as opposed to a player
/// losing a game, which is a result, not an error).
#[derive(Debug, Error)]
pub enum ArenaError {
    /// A player could not be created (an engine that does not start, a checkpoint that does
    /// not load): no game can be played, so the match stops.
    #[error("cannot build player {player}: {source}")]
    Build {
        player: String,
        #[source]
        source: PlayerError,
    },
    /// A game file or the ledger could not be read or written.
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(transparent)]
    Spec(#[from] SpecError),
}
