//! The interface search evaluates positions through (KataGo's `nninterface.h`, mctx's
//! `recurrent_fn`): the network crate implements it, search and its tests need no network.

use yari_rules::{Move, Position};

/// What search needs to know about a position.
#[derive(Clone, Debug, PartialEq)]
pub struct Evaluation {
    /// Prior probability of each legal move, in the order of `pos.legal_moves()`; sums to 1
    /// (empty when there is no legal move).
    pub priors: Vec<(Move, f32)>,
    /// Win, draw and loss probabilities from the side to move's view; search uses
    /// `wdl[0] - wdl[2]` as the value.
    pub wdl: [f32; 3],
}

impl Evaluation {
    /// Expected score for the side to move in [-1, 1].
    pub fn value(&self) -> f32 {
        self.wdl[0] - self.wdl[2]
    }
}

/// Evaluates positions in batches.
///
/// Batched because a network pays per call, not per position; the caller (search, arena)
/// decides the batch size. `Send + Sync` so one evaluator can serve several search threads.
pub trait Evaluator: Send + Sync {
    /// One evaluation per position, in the same order.
    fn evaluate(&self, positions: &[&Position]) -> Vec<Evaluation>;
}

/// Uniform priors and a certain draw: the "no knowledge" baseline, and a stand-in for search
/// tests and the very first self-play games, which need no burn at all.
#[derive(Clone, Copy, Debug, Default)]
pub struct UniformEvaluator;

impl Evaluator for UniformEvaluator {
    fn evaluate(&self, positions: &[&Position]) -> Vec<Evaluation> {
        positions
            .iter()
            .map(|pos| {
                let moves = pos.legal_moves();
                let p = 1.0 / moves.len().max(1) as f32;
                Evaluation {
                    priors: moves.iter().map(|&m| (m, p)).collect(),
                    wdl: [0.0, 1.0, 0.0],
                }
            })
            .collect()
    }
}
