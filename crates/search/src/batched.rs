//! One search driven in batches of leaves, for play: while worker threads classify (the mate
//! search) and evaluate batches already handed out, the calling thread gathers the next ones
//! under virtual loss and backs up those that come back. The tree is only touched by the
//! calling thread, so it needs no locks.
//!
//! lc0 and KataGo both feed their networks batches gathered under virtual loss; this is the
//! single-gatherer form of that (lc0's default), with one or more batches per worker in flight
//! so that a worker never waits for another (`docs/experiments.md`, "The engine", measured splitting
//! one batch over the threads).

use std::sync::mpsc;

use rand::Rng;
use rayon::ThreadPool;
use yari_rules::Position;

use crate::eval::Evaluator;
use crate::mcts::{Classifier, LeafResult, Search, SearchError, SearchResult};

/// How a batched search spreads its work.
#[derive(Clone, Copy, Debug)]
pub struct Batching<'p> {
    /// Leaves per batch (1: exactly the one-leaf search of [`Search::run`]).
    pub leaves: usize,
    /// Workers that classify and evaluate batches; `None`: the calling thread alone, one
    /// batch at a time.
    pub pool: Option<&'p ThreadPool>,
    /// Batches in flight per worker (with a pool): with 2, a worker that hands a batch back
    /// finds the next one waiting instead of waiting while the gatherer backs up and gathers,
    /// at the price of twice the leaves under virtual loss.
    pub batches_per_worker: usize,
}

impl Batching<'_> {
    /// One leaf at a time on the calling thread.
    pub fn sequential() -> Batching<'static> {
        Batching {
            leaves: 1,
            pool: None,
            batches_per_worker: 1,
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

/// Classifies `positions` and evaluates those the classifier leaves open in one evaluator
/// call; the results in the positions' order (cut short where the evaluator answered short).
pub fn evaluate_leaves(
    classifier: &Classifier,
    evaluator: &dyn Evaluator,
    positions: &[Position],
) -> Vec<LeafResult> {
    let verdicts: Vec<_> = positions.iter().map(|p| classifier.classify(p)).collect();
    let live: Vec<&Position> = positions
        .iter()
        .zip(&verdicts)
        .filter(|(_, v)| v.is_none())
        .map(|(p, _)| p)
        .collect();
    let mut evaluations = match live.is_empty() {
        true => Vec::new(),
        false => evaluator.evaluate(&live),
    }
    .into_iter();
    let mut out = Vec::with_capacity(positions.len());
    for verdict in verdicts {
        match verdict {
            Some(v) => out.push(LeafResult::Known(v)),
            // supply_batch takes what is missing as uniform.
            None => match evaluations.next() {
                Some(e) => out.push(LeafResult::Evaluated(e)),
                None => break,
            },
        }
    }
    out
}

impl Search {
    /// Searches `simulations` simulations in batches; `control` is asked after each batch
    /// comes back whether to go on. With `batching.leaves == 1` and no pool this is
    /// [`Search::run`]'s search, simulation for simulation.
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
        let classifier = self.classifier();
        let leaves = batching.leaves.max(1);
        let stop_now = |s: &mut Search, control: &mut dyn FnMut(&Search) -> Control| {
            let stop = control(s) == Control::Stop && s.root_evaluated();
            if stop {
                s.stop();
            }
            stop
        };
        let Some(pool) = batching.pool else {
            while !self.finished() {
                if let Some(id) = self.gather(rng, leaves) {
                    let positions: Vec<Position> = self.batch(id).cloned().collect();
                    let results = evaluate_leaves(&classifier, evaluator, &positions);
                    self.supply_batch(id, results);
                }
                if stop_now(self, &mut control) {
                    break;
                }
            }
            return Ok(self.result());
        };
        let most_in_flight = pool.current_num_threads().max(1) * batching.batches_per_worker.max(1);
        pool.in_place_scope(|scope| -> Result<(), SearchError> {
            let (done_tx, done_rx) = mpsc::channel();
            let mut in_flight = 0;
            loop {
                while in_flight < most_in_flight {
                    let Some(id) = self.gather(rng, leaves) else {
                        break;
                    };
                    let positions: Vec<Position> = self.batch(id).cloned().collect();
                    let done_tx = done_tx.clone();
                    scope.spawn(move |_| {
                        // A panic in the evaluator is reported, not left to hang the
                        // gatherer waiting for this batch.
                        let results =
                            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                                evaluate_leaves(&classifier, evaluator, &positions)
                            }));
                        // The receiver is gone only when the search has already stopped.
                        let _ = done_tx.send((id, results.ok()));
                    });
                    in_flight += 1;
                }
                if in_flight == 0 {
                    if self.finished() {
                        break;
                    }
                } else {
                    let (id, results) = done_rx.recv().expect("the gatherer holds a sender");
                    in_flight -= 1;
                    match results {
                        Some(results) => self.supply_batch(id, results),
                        None => {
                            self.stop();
                            return Err(SearchError::EvaluatorPanicked);
                        }
                    }
                }
                if stop_now(self, &mut control) {
                    break;
                }
            }
            Ok(())
        })?;
        Ok(self.result())
    }
}
