//! Self-play for Yari Shogi: Monte Carlo tree search (PUCT or Gumbel), a worker pool that
//! batches the leaves of many games into one network call, and the record shards the trainer
//! reads.
//!
//! - [`search_move`] / [`Search`]: search one position (arena, UCI engine, `yari play`).
//! - [`run_selfplay`]: play games and hand out [`GameRecord`]s; [`ShardWriter`] stores each
//!   one as it finishes; [`run_selfplay_until`] also stops on a flag (signals).
//! - [`SearchConfig`]: the shared settings and a [`SearchVariant`], PUCT or Gumbel.
//! - [`read_shard`] and [`GameRecord::replay_samples`]: the trainer's side.
//!
//! ```
//! use rand::SeedableRng;
//! use yari_selfplay::{search_move, Limits, SearchConfig, UniformEvaluator};
//! let pos = yari_rules::Position::startpos();
//! let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(0);
//! let r = search_move(&UniformEvaluator, &pos, &SearchConfig::puct(), &Limits::simulations(64), &mut rng).unwrap();
//! assert!(pos.is_legal(r.best_move.unwrap()));
//! assert!((r.policy.iter().map(|(_, p)| p).sum::<f32>() - 1.0).abs() < 1e-4);
//! ```
//!
//! Two short self-play games, stored as a shard and read back as the trainer reads them:
//!
//! ```
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use yari_selfplay::{read_shard, run_selfplay, write_shard, RunOptions, SelfplayConfig};
//! use yari_selfplay::UniformEvaluator;
//! let config = SelfplayConfig {
//!     full_simulations: 8,
//!     cheap_simulations: 4,
//!     ply_cap: 20,
//!     ..SelfplayConfig::default()
//! };
//! let mut games = Vec::new();
//! run_selfplay(&UniformEvaluator, &config, 2, RunOptions::default(), |game| {
//!     games.push(game);
//!     Ok(())
//! })?;
//! let dir = tempfile::tempdir()?;
//! let shard = dir.path().join("gen-0000.yshard");
//! write_shard(&shard, &games)?;
//! assert_eq!(read_shard(&shard)?, games);
//! assert!(games.iter().all(|g| g.moves.len() <= 20));
//! # Ok(()) }
//! ```

pub mod config;
pub mod mcts;
mod noise;
pub mod pool;
pub mod record;

pub use config::{
    ConfigError, GumbelConfig, PuctConfig, SearchConfig, SearchVariant, SelfplayConfig,
};
pub use mcts::{
    choose_move, search_move, Limits, MoveStats, Search, SearchError, SearchResult, Step,
};
pub use pool::{
    bench_selfplay, run_selfplay, run_selfplay_until, RunOptions, SelfplayBench, SelfplayError,
    SelfplayStats,
};
pub use record::{
    list_shards, read_shard, remove_stale_temp_files, write_shard, GameEnd, GameRecord, GameResult,
    RecordError, Sample, ShardWriter,
};
/// The evaluation interface search runs against, re-exported so callers need one import.
pub use yari_model::eval::{Evaluation, Evaluator, UniformEvaluator};
