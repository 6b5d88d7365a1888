//! The [`Player`] trait, its errors, and the factories a match builds players from.

use std::time::Duration;

use thiserror::Error;
use yari_rules::{Color, Move, Position};

/// Both players' clocks before a move.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClockView {
    pub white: Duration,
    pub black: Duration,
    pub increment: Duration,
}

impl ClockView {
    /// The clock of `side`.
    pub fn of(&self, side: Color) -> Duration {
        match side {
            Color::White => self.white,
            Color::Black => self.black,
        }
    }
}

/// What a player sees when asked for a move: the position (which carries the repetition
/// history the rules need) and how the game got there, since an external engine has to be
/// told the start position and every move, not just the current FEN.
#[derive(Debug, Clone, Copy)]
pub struct GameView<'a> {
    /// The FEN the game started from (the normal start position for arena games).
    pub start_fen: &'a str,
    /// Every move played from `start_fen`, opening moves included.
    pub moves: &'a [Move],
    /// The position after `moves`, side to move to play.
    pub position: &'a Position,
    /// Both clocks before this move, when the game is played with a time control.
    pub clock: Option<ClockView>,
}

/// Why a player could not produce a move. The arena turns each of these into a loss for
/// that player with the reason recorded, so a broken engine never hangs or aborts a match.
#[derive(Debug, Error)]
pub enum PlayerError {
    /// The engine process could not be started.
    #[error("cannot start engine `{command}`: {source}")]
    Spawn {
        command: String,
        #[source]
        source: std::io::Error,
    },
    /// A file the engine needs is missing (an engine that is not installed).
    #[error("{engine} is not installed: {} does not exist; install it with `{install}`", file.display())]
    NotInstalled {
        engine: String,
        file: std::path::PathBuf,
        install: String,
    },
    /// The engine exited or closed its output.
    #[error("engine died while waiting for {waiting_for}{}", status.as_ref().map(|s| format!(" ({s})")).unwrap_or_default())]
    Died {
        waiting_for: String,
        status: Option<String>,
    },
    /// The engine did not answer in time.
    #[error("engine timed out after {after:?} waiting for {waiting_for}")]
    Timeout {
        waiting_for: String,
        after: Duration,
    },
    /// The engine said something the protocol does not allow here.
    #[error("engine protocol error: {0}")]
    Protocol(String),
    /// The engine does not know Yari Shogi.
    #[error("engine does not support variant yarishogi (its UCI_Variant has no such value)")]
    UnsupportedVariant,
    /// The player returned text that is not a move at all (legality is checked by the arena).
    #[error("unparseable move {0:?}")]
    BadMoveText(String),
    /// The player found no move although the arena sees legal ones.
    #[error("player returned no move ({0})")]
    NoMove(String),
    /// Writing to the engine failed.
    #[error("cannot write to engine: {0}")]
    Io(#[from] std::io::Error),
    /// Any other failure (a search backend, a checkpoint that will not load).
    #[error("{0}")]
    Other(String),
}

impl PlayerError {
    /// Whether the player is still usable for another game after this error. Engines that
    /// died, hung or broke protocol are rebuilt (a fresh process) before the next game.
    pub fn is_fatal(&self) -> bool {
        !matches!(self, PlayerError::BadMoveText(_) | PlayerError::NoMove(_))
    }
}

/// Something that picks moves.
///
/// Players are owned by one game thread at a time (`Send`, not `Sync`): an external engine is
/// a process with one conversation, so parallel games each get their own player, built by a
/// [`PlayerFactory`].
pub trait Player: Send {
    /// A stable name: game records and the rating list identify players by it.
    fn name(&self) -> &str;

    /// Called before each game; `seed` makes randomised players reproducible per game.
    fn new_game(&mut self, seed: u64) -> Result<(), PlayerError> {
        let _ = seed;
        Ok(())
    }

    /// The move to play in `game.position`, which is not over. The arena checks the move is
    /// legal; a player never has to be trusted.
    fn choose_move(&mut self, game: &GameView<'_>) -> Result<Move, PlayerError>;
}

/// Builds fresh players of one kind. A match calls it once per worker thread and again after
/// a player failed fatally (a dead engine is replaced by a new process).
pub trait PlayerFactory: Send + Sync {
    /// The name the built players report.
    fn name(&self) -> String;
    /// A new player.
    fn build(&self) -> Result<Box<dyn Player>, PlayerError>;
}

/// A factory from a closure, for players defined outside this crate (e.g. a search in another
/// crate, or test doubles).
pub struct FnFactory<F> {
    name: String,
    build: F,
}

impl<F> FnFactory<F>
where
    F: Fn() -> Result<Box<dyn Player>, PlayerError> + Send + Sync,
{
    pub fn new(name: impl Into<String>, build: F) -> Self {
        FnFactory {
            name: name.into(),
            build,
        }
    }
}

impl<F> PlayerFactory for FnFactory<F>
where
    F: Fn() -> Result<Box<dyn Player>, PlayerError> + Send + Sync,
{
    fn name(&self) -> String {
        self.name.clone()
    }

    fn build(&self) -> Result<Box<dyn Player>, PlayerError> {
        (self.build)()
    }
}
