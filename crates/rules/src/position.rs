//! A game position with the history that repetition and perpetual check depend on.

use thiserror::Error;

use crate::board::{Board, MoveList};
use crate::fen::{self, FenError};
use crate::types::{Color, Move, Piece, Role, Square};

/// The start position.
pub const START_FEN: &str = "rnnkbbr/7/ppppppp/7/7/7/PPPPPPP/7/RBBKNNR[] w - - 0 1";

/// Plies after which self-play, gating and arena games are adjudicated a draw unless a
/// config says otherwise: the one default every crate and `configs/default.toml` use (it
/// once defaulted to 240, 300, 320 or 400 depending on where one looked). Not a rule of the
/// game, so positions and the UCI engine know no cap.
pub const DEFAULT_PLY_CAP: usize = 240;

/// Why a move text was not played.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum MoveError {
    #[error("malformed move {0:?}: expected e.g. a3a4, b6b7+ or P@c5")]
    Malformed(String),
    #[error("illegal move {mv} in {fen}")]
    Illegal { mv: String, fen: String },
}

/// Why a game ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EndReason {
    /// No legal move while in check: the side to move loses.
    Checkmate,
    /// No legal move while not in check: the side to move loses too.
    Stalemate,
    /// The same position for the third time: a draw.
    Repetition,
    /// A repetition in which one side checked with every move: that side loses.
    PerpetualCheck,
    /// Self-play's own ply cap was reached: a draw by adjudication, not by the rules.
    PlyCap,
}

impl EndReason {
    pub fn as_str(self) -> &'static str {
        match self {
            EndReason::Checkmate => "checkmate",
            EndReason::Stalemate => "stalemate",
            EndReason::Repetition => "repetition",
            EndReason::PerpetualCheck => "perpetual_check",
            EndReason::PlyCap => "ply_cap",
        }
    }
}

/// The result of a finished game.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Outcome {
    /// `None` for a draw.
    pub winner: Option<Color>,
    pub reason: EndReason,
}

impl Outcome {
    /// `1-0`, `0-1` or `1/2-1/2`.
    pub fn result_str(&self) -> &'static str {
        match self.winner {
            Some(Color::White) => "1-0",
            Some(Color::Black) => "0-1",
            None => "1/2-1/2",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Record {
    key: u64,
    in_check: bool,
}

/// A position together with every position reached since it was set up.
#[derive(Debug, Clone)]
pub struct Position {
    board: Board,
    /// One record per position from the set-up one to the current one (inclusive).
    history: Vec<Record>,
}

impl PartialEq for Position {
    /// Positions are equal when the boards are; history is not compared.
    fn eq(&self, other: &Self) -> bool {
        self.board == other.board
    }
}

impl Default for Position {
    fn default() -> Self {
        Position::startpos()
    }
}

impl Position {
    pub fn startpos() -> Position {
        Position::from_fen(START_FEN).expect("the start position is valid")
    }

    pub fn from_fen(fen: &str) -> Result<Position, FenError> {
        Ok(Position::from_board(fen::parse(fen)?))
    }

    /// A position whose history starts at `board`.
    pub fn from_board(board: Board) -> Position {
        let mut history = Vec::with_capacity(128);
        history.push(Record {
            key: board.key(),
            in_check: board.is_check(),
        });
        Position { board, history }
    }

    /// The FEN in Fairy-Stockfish's normal form.
    pub fn fen(&self) -> String {
        fen::write(&self.board)
    }

    pub fn board(&self) -> &Board {
        &self.board
    }

    #[inline]
    pub fn side_to_move(&self) -> Color {
        self.board.side_to_move()
    }

    #[inline]
    pub fn piece_at(&self, sq: Square) -> Option<Piece> {
        self.board.piece_at(sq)
    }

    #[inline]
    pub fn hand(&self, color: Color, role: Role) -> u8 {
        self.board.hand(color, role)
    }

    #[inline]
    pub fn is_check(&self) -> bool {
        self.board.is_check()
    }

    #[inline]
    pub fn key(&self) -> u64 {
        self.board.key()
    }

    /// Moves played since the position was set up.
    #[inline]
    pub fn plies_played(&self) -> usize {
        self.history.len() - 1
    }

    pub fn legal_moves(&self) -> MoveList {
        self.board.legal_moves()
    }

    pub fn is_legal(&self, mv: Move) -> bool {
        self.board.is_legal(mv)
    }

    /// A legal move that checkmates at once, if there is one (see [`Board::mating_move`]).
    /// Checkmate ends the game before any repetition is counted, so the history does not
    /// matter here.
    pub fn mating_move(&self) -> Option<Move> {
        self.board.mating_move()
    }

    /// The first move of a forced mate in at most `plies` plies (1, 3, 5, ...) in which every
    /// move of the mating side gives check, or `None`; the shortest such mate is found first.
    ///
    /// This is the mate search of shogi engines (a "tsume" search): checks are few and
    /// replies to a check fewer, so a 3-ply search costs about one network call while a
    /// mate found this way is exact. Every reply of the defender is tried, and a line that
    /// repeats a position for the third time on the way (a draw, or a lost perpetual check)
    /// does not count as a mate.
    pub fn forced_mate(&self, plies: u32) -> Option<Move> {
        let mut depth = 1;
        while depth <= plies {
            if let Some(mv) = self.mate_by_checks(depth) {
                return Some(mv);
            }
            depth += 2;
        }
        None
    }

    /// A checking move after which every reply loses to a mate by checks within
    /// `plies - 2` more plies (`plies` odd, at least 1).
    fn mate_by_checks(&self, plies: u32) -> Option<Move> {
        if plies <= 1 {
            return self.board.mating_move();
        }
        // One copy of the history per call, moves played on it and taken back: this runs at
        // every leaf of the tree search, where a copy per reply would dominate.
        let mut line = self.clone();
        self.legal_moves().into_iter().find(|&mv| {
            let mut board = self.board;
            board.play(mv);
            if !board.is_check() {
                return false;
            }
            let replies = board.legal_moves();
            if replies.is_empty() {
                return true;
            }
            line.push(board);
            let mate = line.repetition_outcome().is_none()
                && replies.iter().all(|&reply| {
                    line.play(reply);
                    let mate = line.repetition_outcome().is_none()
                        && line.mate_by_checks(plies - 2).is_some();
                    line.take_back(board);
                    mate
                });
            line.take_back(self.board);
            mate
        })
    }

    /// Undoes the last [`Position::play`], given the board before it.
    fn take_back(&mut self, board: Board) {
        self.board = board;
        self.history.pop();
    }

    /// Plays a legal move. Playing an illegal move leaves the position meaningless; use
    /// [`Position::play_uci`] or check [`Position::is_legal`] for untrusted input.
    pub fn play(&mut self, mv: Move) {
        let mut board = self.board;
        board.play(mv);
        self.push(board);
    }

    /// Makes `board`, the board after one legal move from the current one, the position's.
    fn push(&mut self, board: Board) {
        self.board = board;
        self.history.push(Record {
            key: board.key(),
            in_check: board.is_check(),
        });
    }

    /// Parses move text and checks it is legal here, without playing it.
    pub fn parse_move(&self, text: &str) -> Result<Move, MoveError> {
        let mv = Move::parse_uci(text).ok_or_else(|| MoveError::Malformed(text.to_string()))?;
        if self.is_legal(mv) {
            Ok(mv)
        } else {
            Err(MoveError::Illegal {
                mv: text.trim().to_string(),
                fen: self.fen(),
            })
        }
    }

    /// Parses, checks and plays a move.
    pub fn play_uci(&mut self, text: &str) -> Result<Move, MoveError> {
        let mv = self.parse_move(text)?;
        self.play(mv);
        Ok(mv)
    }

    /// How many times the current position occurred earlier in the history (0, 1, 2, ...).
    pub fn repetitions(&self) -> usize {
        let n = self.history.len() - 1;
        let key = self.history[n].key;
        (0..n)
            .rev()
            .step_by(2)
            .skip(1)
            .filter(|&i| self.history[i].key == key)
            .count()
    }

    /// The game's result by the rules, or `None` while it goes on.
    pub fn outcome(&self) -> Option<Outcome> {
        if self.board.count_legal_moves() == 0 {
            let reason = if self.is_check() {
                EndReason::Checkmate
            } else {
                EndReason::Stalemate
            };
            return Some(Outcome {
                winner: Some(!self.side_to_move()),
                reason,
            });
        }
        self.repetition_outcome()
    }

    /// Like [`Position::outcome`], with a draw by adjudication once `ply_cap` moves were played
    /// (see [`DEFAULT_PLY_CAP`]).
    pub fn outcome_with_ply_cap(&self, ply_cap: Option<usize>) -> Option<Outcome> {
        self.outcome().or_else(|| match ply_cap {
            Some(cap) if self.plies_played() >= cap => Some(Outcome {
                winner: None,
                reason: EndReason::PlyCap,
            }),
            _ => None,
        })
    }

    /// Fairy-Stockfish's n-fold rule: the third occurrence of a position ends the game. The
    /// stretch from the first occurrence decides perpetual check: a side that checked with
    /// every one of its moves in it loses, unless both sides did (then it is a draw).
    fn repetition_outcome(&self) -> Option<Outcome> {
        let h = &self.history;
        let n = h.len() - 1;
        if n < 4 {
            return None;
        }
        let key = h[n].key;
        // Did the opponent's last move give check, and ours before it...
        let mut perpetual_them = h[n].in_check && h[n - 2].in_check;
        let mut perpetual_us = h[n - 1].in_check && h[n - 3].in_check;
        let mut count = 0;
        let mut i = 4;
        while i <= n {
            let j = n - i;
            perpetual_them &= h[j].in_check;
            if h[j].key == key {
                count += 1;
                if count == 2 {
                    let us = self.side_to_move();
                    let (winner, reason) = match (perpetual_them, perpetual_us) {
                        (true, false) => (Some(us), EndReason::PerpetualCheck),
                        (false, true) => (Some(!us), EndReason::PerpetualCheck),
                        _ => (None, EndReason::Repetition),
                    };
                    return Some(Outcome { winner, reason });
                }
            }
            if i < n {
                perpetual_us &= h[j - 1].in_check;
            }
            i += 2;
        }
        None
    }

    /// Leaf count `depth` plies down (repetition is ignored, as in Fairy-Stockfish's perft).
    pub fn perft(&self, depth: u32) -> u64 {
        self.board.perft(depth)
    }

    /// Per-move leaf counts at `depth` (depth ≥ 1), sorted by move text.
    pub fn divide(&self, depth: u32) -> Vec<(Move, u64)> {
        let mut out: Vec<(Move, u64)> = self
            .legal_moves()
            .iter()
            .map(|&mv| {
                let mut child = *self.board();
                child.play(mv);
                (mv, child.perft(depth.saturating_sub(1)))
            })
            .collect();
        out.sort_by_key(|(mv, _)| mv.to_string());
        out
    }
}
