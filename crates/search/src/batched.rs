//! One search driven in batches of leaves, for play: the leaves of a batch are classified
//! (the mate search) and evaluated on several threads, while the tree itself is only touched
//! by the calling thread between batches, so it needs no locks.
//!
//! lc0 and KataGo both feed their networks batches gathered under virtual loss; this is the
//! single-gatherer form of that (lc0's default): the tree walk is a small part of a
//! simulation next to the network and the mate search, which are what the threads share.

use rand::Rng;
use rayon::prelude::*;
use rayon::ThreadPool;
use yari_rules::Position;

use crate::eval::Evaluator;
use crate::mcts::{LeafResult, Search, SearchError, SearchResult};

/// How a batched search spreads its work.
#[derive(Clone, Copy, Debug)]
pub struct Batching<'p> {
    /// Leaves gathered per batch (1: exactly the one-leaf search of [`Search::run`]).
    pub leaves: usize,
    /// Threads that classify and evaluate a batch's leaves; `None`: the calling thread alone.
    pub pool: Option<&'p ThreadPool>,
}

impl Batching<'_> {
    /// One leaf at a time on the calling thread.
    pub fn sequential() -> Batching<'static> {
        Batching {
            leaves: 1,
            pool: None,
        }
    }
}

/// What the caller of [`Search::run_batched`] wants after a batch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Control {
    Continue,
    /// End the search now (time is up, `stop` came, the best move cannot change). Honoured
    /// once the root has been evaluated, so that there is always a move to play.
    Stop,
}

/// Classifies and evaluates the leaves of the batch `search` handed out, in its order: each
/// thread takes a contiguous share, runs the mate search on each leaf and evaluates the rest
/// of its share in one evaluator call.
pub fn evaluate_batch(
    search: &Search,
    evaluator: &dyn Evaluator,
    pool: Option<&ThreadPool>,
) -> Vec<LeafResult> {
    let positions: Vec<&Position> = search.batch().collect();
    let share = |chunk: &[&Position]| -> Vec<LeafResult> {
        let verdicts: Vec<_> = chunk.iter().map(|p| search.classify(p)).collect();
        let live: Vec<&Position> = chunk
            .iter()
            .zip(&verdicts)
            .filter(|(_, v)| v.is_none())
            .map(|(p, _)| *p)
            .collect();
        let mut evaluations = if live.is_empty() {
            Vec::new()
        } else {
            evaluator.evaluate(&live)
        }
        .into_iter();
        let mut out = Vec::with_capacity(chunk.len());
        for verdict in verdicts {
            match verdict {
                Some(v) => out.push(LeafResult::Known(v)),
                // A short answer from the evaluator ends the share here; supply_batch takes
                // what is missing as uniform.
                None => match evaluations.next() {
                    Some(e) => out.push(LeafResult::Evaluated(e)),
                    None => break,
                },
            }
        }
        out
    };
    match pool {
        Some(pool) if positions.len() > 1 && pool.current_num_threads() > 1 => {
            let threads = pool.current_num_threads();
            let chunk = positions.len().div_ceil(threads);
            let shares: Vec<Vec<LeafResult>> =
                pool.install(|| positions.par_chunks(chunk).map(share).collect());
            let mut out = Vec::with_capacity(positions.len());
            for (s, expected) in shares.into_iter().zip(positions.chunks(chunk)) {
                let complete = s.len() == expected.len();
                out.extend(s);
                if !complete {
                    // Keep later shares in their places: what follows a gap would shift.
                    break;
                }
            }
            out
        }
        _ => share(&positions),
    }
}

impl Search {
    /// Searches `simulations` simulations in batches; `control` is asked after each batch
    /// whether to go on. With `batching.leaves == 1` and no pool this is [`Search::run`]'s
    /// search, simulation for simulation.
    pub fn run_batched<R: Rng + ?Sized>(
        &mut self,
        evaluator: &dyn Evaluator,
        simulations: u32,
        noise: bool,
        rng: &mut R,
        batching: Batching<'_>,
        mut control: impl FnMut(&Search) -> Control,
    ) -> Result<SearchResult, SearchError> {
        self.start(simulations, noise)?;
        while !self.finished() {
            if self.gather(rng, batching.leaves) > 0 {
                let results = evaluate_batch(self, evaluator, batching.pool);
                self.supply_batch(results);
            }
            if control(self) == Control::Stop && self.root_evaluated() {
                self.stop();
                break;
            }
        }
        Ok(self.result())
    }
}
