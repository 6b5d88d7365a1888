//! Self-play for Yari Shogi: a worker pool that plays many games with yari-search's tree
//! search and batches their leaves into one network call, and the record shards the trainer
//! reads.
//!
//! - [`run_selfplay`]: play games and hand out [`GameRecord`]s; [`ShardWriter`] stores each
//!   one as it finishes; [`run_selfplay_until`] also stops on a flag (signals).
//! - [`SelfplayConfig`]: simulations, temperatures, resignation, games in flight, and the
//!   [`yari_search::SearchConfig`] every move is searched with.
//! - [`read_shard`] and [`GameRecord::replay_samples`]: the trainer's side.
//!
//! Two short self-play games, stored as a shard and read back as the trainer reads them:
//!
//! ```
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use yari_selfplay::{read_shard, run_selfplay, write_shard, RunOptions, SelfplayConfig};
//! use yari_search::UniformEvaluator;
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
pub mod pool;
pub mod record;

pub use config::SelfplayConfig;
pub use pool::{
    bench_selfplay, play_into_shards, run_selfplay, run_selfplay_until, RunOptions, SelfplayBench,
    SelfplayError, SelfplayStats, ShardedRun,
};
pub use record::{
    list_shards, read_shard, remove_stale_temp_files, write_shard, GameEnd, GameRecord, GameResult,
    RecordError, Sample, ShardWriter,
};
