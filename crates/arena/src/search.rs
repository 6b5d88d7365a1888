//! MCTS-backed players (`mcts:SIMS`, `model:FILE:SIMS`), built on the yari-selfplay search.
//!
//! Behind the `search` feature, because the search pulls in the network crate (burn): the
//! rest of the arena — and its tests — build without it. Without the feature the two specs
//! parse but fail to build with a clear error.
//!
//! Both players search with PUCT without root noise (deterministic for a given position;
//! match openings supply the variety) and no ply cap inside the search. `mcts:SIMS` uses
//! uniform priors and a draw value everywhere except at real game ends; `model:FILE:SIMS`
//! uses the checkpoint, loaded once per process and shared by every game thread.

use crate::player::{Player, PlayerError};
use crate::spec::PlayerSpec;

#[cfg(feature = "search")]
pub use imp::{MctsFactory, MctsPlayer};

/// Builds an MCTS player for an `Mcts` or `Model` spec; `None` when this build has no search.
#[cfg(not(feature = "search"))]
pub(crate) fn build(spec: &PlayerSpec) -> Option<Result<Box<dyn Player>, PlayerError>> {
    let _ = spec;
    None
}

/// Builds an MCTS player for an `Mcts` or `Model` spec.
#[cfg(feature = "search")]
pub(crate) fn build(spec: &PlayerSpec) -> Option<Result<Box<dyn Player>, PlayerError>> {
    use crate::player::PlayerFactory;
    use std::sync::Arc;
    use yari_selfplay::UniformEvaluator;
    let factory = match spec {
        PlayerSpec::Mcts { sims } => MctsFactory::new(
            spec.name(),
            Arc::new(UniformEvaluator),
            *sims,
            imp::arena_search_config(),
        ),
        PlayerSpec::Model { path, sims } => match imp::load_model(path) {
            Ok(evaluator) => {
                MctsFactory::new(spec.name(), evaluator, *sims, imp::arena_search_config())
            }
            Err(e) => return Some(Err(e)),
        },
        _ => return None,
    };
    Some(factory.build())
}

#[cfg(feature = "search")]
mod imp {
    use std::collections::HashMap;
    use std::path::{Path, PathBuf};
    use std::sync::{Arc, Mutex, OnceLock};

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

    /// Loads a checkpoint on the default device, once per path per process.
    pub(crate) fn load_model(path: &Path) -> Result<Arc<dyn Evaluator>, PlayerError> {
        static CACHE: OnceLock<Mutex<HashMap<PathBuf, Arc<dyn Evaluator>>>> = OnceLock::new();
        let cache = CACHE.get_or_init(Default::default);
        let mut cache = cache.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(e) = cache.get(path) {
            return Ok(Arc::clone(e));
        }
        let evaluator = NetEvaluator::from_checkpoint(path, yari_model::default_device())
            .map_err(|e| PlayerError::Other(format!("checkpoint {}: {e}", path.display())))?;
        let evaluator: Arc<dyn Evaluator> = Arc::new(evaluator);
        cache.insert(path.to_path_buf(), Arc::clone(&evaluator));
        Ok(evaluator)
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
