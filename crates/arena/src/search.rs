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
pub use imp::{model_factory, MctsFactory, MctsPlayer};

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
    use yari_search::UniformEvaluator;
    match spec {
        PlayerSpec::Mcts { sims } => Ok(Box::new(MctsFactory::new(
            spec.name(),
            Arc::new(UniformEvaluator),
            *sims,
            imp::arena_search_config(),
        ))),
        PlayerSpec::Model {
            path,
            sims,
            options,
        } => Ok(Box::new(model_factory(
            spec.name(),
            imp::load_model(path)?,
            *sims,
            options,
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
    use yari_rules::Move;
    use yari_search::{
        Batching, Control, Evaluator, GumbelConfig, PuctConfig, Search, SearchConfig, SearchVariant,
    };

    use crate::player::{GameView, Player, PlayerError, PlayerFactory};
    use crate::spec::SearchOptions;

    /// PUCT, no root noise, no ply cap: a deterministic searcher for evaluation.
    pub(crate) fn arena_search_config() -> SearchConfig {
        SearchConfig {
            ply_cap: 0,
            reuse_tree: false,
            ..SearchConfig::puct()
        }
    }

    /// `config` with a spec's overrides applied. `gumbel=N` switches to a noiseless Gumbel
    /// search over N root actions (0: PUCT); `c_puct` and `fpu` only change a PUCT search.
    pub(crate) fn with_options(config: SearchConfig, options: &SearchOptions) -> SearchConfig {
        let mut variant = match (options.gumbel_considered, config.variant) {
            (Some(0), SearchVariant::Gumbel(_)) => SearchVariant::Puct(PuctConfig {
                dirichlet_fraction: 0.0,
                ..PuctConfig::default()
            }),
            (Some(n), SearchVariant::Gumbel(g)) if n > 0 => SearchVariant::Gumbel(GumbelConfig {
                considered: n,
                scale: 0.0,
                ..g
            }),
            (Some(n), SearchVariant::Puct(_)) if n > 0 => SearchVariant::Gumbel(GumbelConfig {
                considered: n,
                scale: 0.0,
                ..GumbelConfig::default()
            }),
            (_, variant) => variant,
        };
        if let SearchVariant::Puct(p) = &mut variant {
            p.c_puct = options.c_puct.unwrap_or(p.c_puct);
            p.fpu_reduction = options.fpu_reduction.unwrap_or(p.fpu_reduction);
        }
        SearchConfig {
            variant,
            reuse_tree: options.reuse_tree.unwrap_or(config.reuse_tree),
            mate_search_plies: options
                .mate_search_plies
                .unwrap_or(config.mate_search_plies),
            policy_temperature: options
                .policy_temperature
                .unwrap_or(config.policy_temperature),
            ..config
        }
    }

    /// Loads a checkpoint on the process's backend (the binary's choice).
    pub(crate) fn load_model(path: &Path) -> Result<Arc<dyn Evaluator>, PlayerError> {
        let evaluator = yari_model::Backend::current()
            .load_evaluator(path)
            .map_err(|e| PlayerError::Other(format!("checkpoint {}: {e}", path.display())))?;
        Ok(Arc::new(evaluator))
    }

    /// The players of a `model:FILE:SIMS[OPTIONS]` spec on a network already loaded (by a
    /// caller that holds its backend, as the training loop does).
    pub fn model_factory(
        name: impl Into<String>,
        evaluator: Arc<dyn Evaluator>,
        sims: u32,
        options: &SearchOptions,
    ) -> MctsFactory {
        MctsFactory::new(
            name,
            evaluator,
            sims,
            with_options(arena_search_config(), options),
        )
        .with_batch(options.batch.unwrap_or(1))
    }

    /// Builds [`MctsPlayer`]s sharing one evaluator. Public so that the training loop can
    /// gate a network it already holds in memory, with its own search settings.
    pub struct MctsFactory {
        name: String,
        evaluator: Arc<dyn Evaluator>,
        sims: u32,
        config: SearchConfig,
        batch: usize,
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
                batch: 1,
            }
        }

        /// Leaves per network call (1: one at a time).
        pub fn with_batch(mut self, batch: usize) -> Self {
            self.batch = batch.max(1);
            self
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
                batch: self.batch,
                rng: StdRng::seed_from_u64(0),
                tree: None,
            }))
        }
    }

    /// Searches every move with the self-play MCTS and plays its best move. With tree reuse
    /// on, the search of the previous move is kept and advanced through the moves played
    /// since, so the simulations already spent below them count towards this move.
    pub struct MctsPlayer {
        name: String,
        evaluator: Arc<dyn Evaluator>,
        sims: u32,
        config: SearchConfig,
        batch: usize,
        rng: StdRng,
        /// The last search and how many of the game's moves led to its root.
        tree: Option<(Search, usize)>,
    }

    impl MctsPlayer {
        /// The previous search advanced to `game`'s position, when it can be: same game,
        /// moves only added since, and every one of them legal there.
        fn reused_tree(&mut self, game: &GameView<'_>) -> Option<Search> {
            let (mut search, seen) = self.tree.take()?;
            let new_moves = game.moves.get(seen..)?;
            for &mv in new_moves {
                search.advance(mv).ok()?;
            }
            (search.root().fen() == game.position.fen()).then_some(search)
        }
    }

    impl Player for MctsPlayer {
        fn name(&self) -> &str {
            &self.name
        }

        fn new_game(&mut self, seed: u64) -> Result<(), PlayerError> {
            self.rng = StdRng::seed_from_u64(seed);
            self.tree = None;
            Ok(())
        }

        fn choose_move(&mut self, game: &GameView<'_>) -> Result<Move, PlayerError> {
            let name = self.name.clone();
            let error = |e: yari_search::SearchError| PlayerError::Other(format!("{name}: {e}"));
            // The engine's batched search on this game's thread (one leaf at a time unless
            // the spec asks for a batch: exactly the search these players always had).
            let batching = Batching {
                leaves: self.batch,
                pool: None,
                batches_per_worker: 1,
            };
            let mut search = match self.config.reuse_tree {
                true => self.reused_tree(game),
                false => None,
            };
            let mut search = match search.take() {
                Some(search) => search,
                None => Search::new(game.position.clone(), self.config.clone()).map_err(error)?,
            };
            let result = search
                .run_batched(
                    &*self.evaluator,
                    self.sims,
                    false,
                    &mut self.rng,
                    batching,
                    |_| Control::Continue,
                )
                .map_err(error)?;
            if self.config.reuse_tree {
                self.tree = Some((search, game.moves.len()));
            }
            result
                .best_move
                .ok_or_else(|| PlayerError::NoMove("search found no move".into()))
        }
    }
}

#[cfg(all(test, feature = "search"))]
mod tests {
    use super::imp::{arena_search_config, with_options};
    use crate::spec::SearchOptions;
    use yari_search::{GumbelConfig, PuctConfig, SearchVariant};

    #[test]
    fn spec_options_override_only_what_they_name() {
        let base = arena_search_config();
        let SearchVariant::Puct(base_puct) = base.variant else {
            panic!("the arena searches with PUCT by default");
        };
        assert!(!base.reuse_tree && base_puct.dirichlet_fraction == 0.0);
        assert_eq!(with_options(base.clone(), &SearchOptions::default()), base);
        let options = SearchOptions {
            c_puct: Some(2.0),
            reuse_tree: Some(true),
            gumbel_considered: Some(8),
            policy_temperature: Some(1.5),
            ..SearchOptions::default()
        };
        let changed = with_options(base.clone(), &options);
        assert_eq!(changed.policy_temperature, 1.5);
        assert!(changed.reuse_tree);
        assert_eq!(
            changed.variant,
            SearchVariant::Gumbel(GumbelConfig {
                considered: 8,
                scale: 0.0,
                ..GumbelConfig::default()
            })
        );
        assert_eq!(changed.mate_search_plies, base.mate_search_plies);
        let puct_options = SearchOptions {
            c_puct: Some(2.0),
            ..SearchOptions::default()
        };
        let puct = with_options(base.clone(), &puct_options);
        assert_eq!(
            puct.variant,
            SearchVariant::Puct(PuctConfig {
                c_puct: 2.0,
                ..base_puct
            })
        );
        let back = SearchOptions {
            gumbel_considered: Some(0),
            ..SearchOptions::default()
        };
        assert_eq!(with_options(changed, &back).variant, base.variant);
    }
}
