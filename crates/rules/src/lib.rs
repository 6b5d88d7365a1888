//! Yari Shogi rules, exactly as Fairy-Stockfish's `yarishogi` plays them: positions, legal
//! moves, FEN and move text, game outcomes (mate, stalemate, repetition, perpetual check),
//! perft, and the tensor view of a position and its moves that the network sees.
//!
//! ```
//! use yari_rules::Position;
//! let mut pos = Position::startpos();
//! assert_eq!(pos.legal_moves().len(), 20);
//! pos.play_uci("d3d4").unwrap();
//! assert_eq!(pos.fen(), "rnnkbbr/7/ppppppp/7/7/3P3/PPP1PPP/7/RBBKNNR[] b - - 1 1");
//! ```

mod attacks;
mod board;
pub mod encoding;
mod fen;
mod position;
mod types;
mod zobrist;

pub use board::{Board, MoveList, MAX_MOVES};
pub use fen::FenError;
pub use position::{EndReason, MoveError, Outcome, Position, DEFAULT_PLY_CAP, START_FEN};
pub use types::{Color, Kind, Move, Piece, Role, Square, FILES, RANKS, SQUARES};
