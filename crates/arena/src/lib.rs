//! The evaluation arena: it decides which checkpoint self-play uses, and it is how anyone
//! measures strength.
//!
//! - [`Player`]s: [`RandomPlayer`] (the rating anchor), [`AlphaBetaPlayer`] (a fixed
//!   material searcher, the non-learning baseline), MCTS players from the self-play search,
//!   and any external UCI engine ([`UciPlayer`], e.g. Fairy-Stockfish). [`PlayerSpec`] parses
//!   their text forms (`random`, `alphabeta:2`, `mcts:800`, `model:FILE:SIMS`, `uci:COMMAND`).
//! - [`run_match`]: N games in parallel from seeded openings, colours alternating, a ply cap
//!   adjudicated as a draw, every game appended to a JSON-lines file, optional SPRT stop.
//!   The arena judges every move: a player's illegal move or failure loses the game.
//! - [`stats`]: Elo with a 95% interval, likelihood of superiority, fishtest's GSPRT.
//! - [`gate`](mod@gate): should a candidate replace the best? Decisions go to a ledger.
//! - [`fit_ratings`]: one Bradley–Terry rating list over a run's games, `random` = 0.
//!
//! ```
//! use yari_arena::{run_match, MatchConfig, PlayerSpec};
//! let a = PlayerSpec::parse("alphabeta:1").unwrap();
//! let b = PlayerSpec::parse("random").unwrap();
//! let config = MatchConfig { games: 2, concurrency: 1, ..MatchConfig::default() };
//! let result = run_match(&a, &b, &config).unwrap();
//! assert_eq!(result.wdl.games(), 2);
//! ```

pub mod alphabeta;
mod build;
mod error;
pub mod game;
pub mod gate;
pub mod jsonl;
pub mod matches;
pub mod openings;
pub mod player;
pub mod random;
pub mod ratings;
pub mod search;
pub mod spec;
pub mod stats;
pub mod uci;

pub use alphabeta::AlphaBetaPlayer;
pub use error::ArenaError;
pub use game::{play_game, GameConfig, GameRecord, Reason, Side, TimeControl};
pub use gate::{
    append_ledger, current_best, decide, gate, read_ledger, GateConfig, GateDecision, GateReason,
};
pub use matches::{run_match, MatchConfig, MatchResult, MoveTimes};
pub use openings::{random_openings, Opening};
pub use player::{ClockView, FnFactory, GameView, Player, PlayerError, PlayerFactory};
pub use random::RandomPlayer;
pub use ratings::{fit_ratings, games_dir, ledger_path, read_run_games, Rating, RatingList};
pub use spec::{fsf_js, set_fsf_js, PlayerSpec, SpecError, DEFAULT_FSF_JS};
pub use stats::{EloEstimate, Pentanomial, SprtConfig, SprtDecision, SprtModel, SprtStatus, Wdl};
pub use uci::{SearchLimit, UciConfig, UciEngine, UciPlayer};
