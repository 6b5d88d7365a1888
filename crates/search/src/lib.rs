//! Tree search for Yari Shogi, against an evaluator interface and nothing else: PUCT
//! (AlphaZero's rule) or Gumbel root search (sequential halving, completed-Q targets), with a
//! short mate search at the nodes.
//!
//! - [`search_move`] / [`Search`]: search one position to a budget ([`Limits`]); [`Search`]
//!   can also be stepped leaf by leaf, so that a caller batches the leaves of many searches
//!   into one network call (self-play does).
//! - [`SearchConfig`]: the settings and a [`SearchVariant`], validated by
//!   [`SearchConfig::validate`] wherever they come from (config files, arena player specs).
//! - [`Evaluator`]: what search asks of a network; [`UniformEvaluator`] is the no-knowledge
//!   one, and the network crate implements it.
//!
//! ```
//! use rand::SeedableRng;
//! use yari_search::{search_move, Limits, SearchConfig, UniformEvaluator};
//! let pos = yari_rules::Position::startpos();
//! let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(0);
//! let r = search_move(&UniformEvaluator, &pos, &SearchConfig::puct(), &Limits::simulations(64), &mut rng).unwrap();
//! assert!(pos.is_legal(r.best_move.unwrap()));
//! assert!((r.policy.iter().map(|(_, p)| p).sum::<f32>() - 1.0).abs() < 1e-4);
//! ```

pub mod batched;
pub mod config;
pub mod engine;
pub mod eval;
pub mod mcts;
mod noise;

pub use batched::{evaluate_leaves, Batching, Control};
pub use config::{ConfigError, GumbelConfig, PuctConfig, SearchConfig, SearchVariant};
pub use engine::{
    Budget, Clock, Engine, EngineError, EngineOptions, Thought, TimeLimits, DEFAULT_SIMULATIONS,
};
pub use eval::{Evaluation, Evaluator, UniformEvaluator};
pub use mcts::{
    choose_move, search_move, BatchId, Classifier, LeafResult, Limits, MoveStats, PvLine, Search,
    SearchError, SearchResult, Step, Verdict, MAX_SIMULATIONS,
};
