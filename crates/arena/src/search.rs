//! MCTS-backed players (`mcts:SIMS`, `model:FILE:SIMS`), built on the yari-selfplay search.
//!
//! Behind the `search` feature, because the search pulls in the network crate (burn): the
//! rest of the arena — and its tests — build without it. Without the feature the two specs
//! parse but fail to build with a clear error.
//!
//! Both players search with PUCT without root noise (deterministic for a given position;
//! match openings supply the variety) and no ply cap inside the search. `mcts:SIMS` uses
//! uniform priors and a draw value everywhere except at real game ends; `model:FILE:SIMS`
//! uses the checkpoint: [`PlayerSpec::factory`] loads it once and every game thread shares
//! it (using the spec itself as the factory loads it once per worker thread).

use crate::player::{PlayerError, PlayerFactory};
use crate::spec::PlayerSpec;

#[cfg(feature = "search")]
pub use imp::{MctsFactory, MctsPlayer};

/// A factory for an `Mcts` or `Model` spec: an error in a build without the search.
#[cfg(not(feature = "search"))]
pub(crate) fn factory(spec: &PlayerSpec) -> Result<Box<dyn PlayerFactory>, PlayerError> {
    Err(PlayerError::Other(format!(
        "{}: MCTS players need yari-arena's `search` feature (the self-play search)",
        spec.name()
    )))
}

/// A factory for an `Mcts` or `Model` spec; a checkpoint is loaded now, once.
#[cfg(feature = "search")]
pub(crate) fn factory(spec: &PlayerSpec) -> Result<Box<dyn PlayerFactory>, PlayerError> {
    use std::sync::Arc;
    use yari_selfplay::UniformEvaluator;
    match spec {
        PlayerSpec::Mcts { sims } => Ok(Box::new(MctsFactory::new(
            spec.name(),
            Arc::new(UniformEvaluator),
            *sims,
            imp::arena_search_config(),
        ))),
        PlayerSpec::Model { path, sims } => Ok(Box::new(MctsFactory::new(
            spec.name(),
            imp::load_model(path)?,
            *sims,
            imp::arena_search_config(),
        ))),
        _ => Err(PlayerError::Other(format!(
            "{} is not an MCTS player",
            spec.name()
        ))),
    }
}

#[cfg(feature = "search")]
mod imp {
    use std::path::Path;
    use std::sync::Arc;

    use rand::rngs::StdRng;
    use rand::SeedableRng;
    use yari_model::eval::NetEvaluator;
    use yari_rules::Move;
    use yari_selfplay::{search_move, Evaluator, Limits, SearchConfig};

    use crate::player::{GameView, Player, PlayerError, PlayerFactory};

    /// PUCT, no root noise, no ply cap: a deterministic searcher for evaluation.
    pub(crate) fn arena_search_config() -> SearchConfig {
        SearchConfig {
            ply_cap: 0,
            ..SearchConfig::puct()
        }
    }

    /// Loads a checkpoint on the default device.
    pub(crate) fn load_model(path: &Path) -> Result<Arc<dyn Evaluator>, PlayerError> {
        let evaluator = NetEvaluator::from_checkpoint(path, yari_model::default_device())
            .map_err(|e| PlayerError::Other(format!("checkpoint {}: {e}", path.display())))?;
        Ok(Arc::new(evaluator))
    }

    /// Builds [`MctsPlayer`]s sharing one evaluator. Public so that the training loop can
    /// gate a network it already holds in memory, with its own search settings.
    pub struct MctsFactory {
        name: String,
        evaluator: Arc<dyn Evaluator>,
        sims: u32,
        config: SearchConfig,
    }

    impl MctsFactory {
        pub fn new(
            name: impl Into<String>,
            evaluator: Arc<dyn Evaluator>,
            sims: u32,
            config: SearchConfig,
        ) -> Self {
            MctsFactory {
                name: name.into(),
                evaluator,
                sims,
                config,
            }
        }
    }

    impl PlayerFactory for MctsFactory {
        fn name(&self) -> String {
            self.name.clone()
        }

        fn build(&self) -> Result<Box<dyn Player>, PlayerError> {
            self.config
                .validate()
                .map_err(|e| PlayerError::Other(format!("{}: {e}", self.name)))?;
            Ok(Box::new(MctsPlayer {
                name: self.name.clone(),
                evaluator: Arc::clone(&self.evaluator),
                sims: self.sims.max(1),
                config: self.config.clone(),
                rng: StdRng::seed_from_u64(0),
            }))
        }
    }

    /// Searches every move from scratch with the self-play MCTS and plays its best move.
    pub struct MctsPlayer {
        name: String,
        evaluator: Arc<dyn Evaluator>,
        sims: u32,
        config: SearchConfig,
        rng: StdRng,
    }

    impl Player for MctsPlayer {
        fn name(&self) -> &str {
            &self.name
        }

        fn new_game(&mut self, seed: u64) -> Result<(), PlayerError> {
            self.rng = StdRng::seed_from_u64(seed);
            Ok(())
        }

        fn choose_move(&mut self, game: &GameView<'_>) -> Result<Move, PlayerError> {
            let result = search_move(
                &*self.evaluator,
                game.position,
                &self.config,
                &Limits::simulations(self.sims),
                &mut self.rng,
            )
            .map_err(|e| PlayerError::Other(format!("{}: {e}", self.name)))?;
            result
                .best_move
                .ok_or_else(|| PlayerError::NoMove("search found no move".into()))
        }
    }
}
