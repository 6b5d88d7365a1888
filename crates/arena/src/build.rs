//! From a parsed [`PlayerSpec`] to players: the one module that knows every kind of player,
//! so that the spec parser, the error type and the search players need not know each other.

use crate::alphabeta::AlphaBetaPlayer;
use crate::error::ArenaError;
use crate::player::{Player, PlayerError, PlayerFactory};
use crate::random::RandomPlayer;
use crate::spec::PlayerSpec;
use crate::uci::UciPlayer;

impl PlayerSpec {
    /// A factory for this spec with its expensive set-up done once, now: a checkpoint is
    /// loaded here (and shared by every player built), so a missing or broken file fails
    /// before any game starts. Cheap specs just return themselves.
    pub fn factory(&self) -> Result<Box<dyn PlayerFactory>, ArenaError> {
        match self {
            PlayerSpec::Mcts { .. } | PlayerSpec::Model { .. } => crate::search::factory(self)
                .map_err(|source| ArenaError::Build {
                    player: PlayerSpec::name(self),
                    source,
                }),
            _ => Ok(Box::new(self.clone())),
        }
    }
}

impl PlayerFactory for PlayerSpec {
    fn name(&self) -> String {
        PlayerSpec::name(self)
    }

    fn build(&self) -> Result<Box<dyn Player>, PlayerError> {
        match self {
            PlayerSpec::Random { seed } => Ok(Box::new(RandomPlayer::new(*seed))),
            PlayerSpec::AlphaBeta { depth } => Ok(Box::new(AlphaBetaPlayer::new(*depth))),
            PlayerSpec::Uci(config) => Ok(Box::new(UciPlayer::start(config.clone())?)),
            PlayerSpec::Mcts { .. } | PlayerSpec::Model { .. } => {
                crate::search::factory(self)?.build()
            }
        }
    }
}
