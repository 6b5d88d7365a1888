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
//!
//! An endgame from a FEN with pieces in hand: drops are moves like any other (here a pawn drop
//! mates, which Yari Shogi allows), and bad input is an error, not a panic:
//!
//! ```
//! use yari_rules::{Color, EndReason, Position};
//! let mut pos = Position::from_fen("3k3/2p4/7/7/7/7/5+n1/7/5NK[Rp] b - - 0 1").unwrap();
//! let moves = pos.legal_moves();
//! assert_eq!(moves.len(), 62);
//! assert_eq!(moves.iter().filter(|m| m.to_string().starts_with("P@")).count(), 46);
//! pos.play_uci("P@g2").unwrap();
//! let outcome = pos.outcome().unwrap();
//! assert_eq!((outcome.winner, outcome.reason), (Some(Color::Black), EndReason::Checkmate));
//! assert_eq!(pos.fen(), "3k3/2p4/7/7/7/7/5+n1/6p/5NK[R] w - - 0 2");
//! assert!(pos.play_uci("a1a9").is_err());
//! assert!(Position::from_fen("rnnkbbr/7/ppppppp w - - 0 1").is_err());
//! ```

mod attacks;
mod board;
pub mod encoding;
mod fen;
pub mod pgn;
mod position;
mod types;
mod zobrist;

pub use board::{Board, MoveList, MAX_MOVES};
pub use fen::FenError;
pub use position::{EndReason, MoveError, Outcome, Position, DEFAULT_PLY_CAP, START_FEN};
pub use types::{Color, Kind, Move, Piece, Role, Square, FILES, RANKS, SQUARES};
