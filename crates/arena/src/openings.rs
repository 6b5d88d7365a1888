//! Opening sets: short seeded random move sequences from the start position.
//!
//! Deterministic players (alpha-beta, engines at fixed nodes, MCTS without noise) would
//! replay one game over and over from the start position. A match therefore plays each
//! opening twice, once with each colour, so neither side profits from a lopsided opening.

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde::{Deserialize, Serialize};
use yari_rules::{Position, START_FEN};

/// A start position and moves to play from it before the players take over.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Opening {
    pub start_fen: String,
    /// UCI move texts.
    pub moves: Vec<String>,
}

impl Opening {
    /// The bare start position.
    pub fn startpos() -> Opening {
        Opening {
            start_fen: START_FEN.to_string(),
            moves: Vec::new(),
        }
    }
}

/// `count` distinct openings of `plies` random legal moves from the start position, the same
/// for the same `seed`. Sequences that end the game or repeat an earlier opening are redrawn.
pub fn random_openings(count: usize, plies: usize, seed: u64) -> Vec<Opening> {
    let mut rng = StdRng::seed_from_u64(seed);
    let mut out: Vec<Opening> = Vec::with_capacity(count);
    let mut attempts = 0;
    while out.len() < count && attempts < count * 100 + 100 {
        attempts += 1;
        let mut pos = Position::startpos();
        let mut moves = Vec::with_capacity(plies);
        for _ in 0..plies {
            let legal = pos.legal_moves();
            if legal.is_empty() {
                break;
            }
            let mv = legal[rng.random_range(0..legal.len())];
            pos.play(mv);
            moves.push(mv.to_string());
        }
        if moves.len() < plies || pos.outcome().is_some() {
            continue;
        }
        let opening = Opening {
            start_fen: START_FEN.to_string(),
            moves,
        };
        if !out.contains(&opening) {
            out.push(opening);
        }
    }
    out
}
