//! The batched search for play: the same search as the one-leaf loop at batch 1, and a sound
//! tree at any batch and thread count.

use std::sync::atomic::{AtomicUsize, Ordering};

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use yari_rules::Position;
use yari_search::{
    Batching, Control, Evaluation, Evaluator, Limits, Search, SearchConfig, SearchResult,
    UniformEvaluator,
};

/// Priors and values that differ from position to position (drawn from the position's hash),
/// so that a search's shape depends on every evaluation reaching the right leaf.
struct Hashed {
    calls: AtomicUsize,
    positions: AtomicUsize,
}

impl Hashed {
    fn new() -> Self {
        Hashed {
            calls: AtomicUsize::new(0),
            positions: AtomicUsize::new(0),
        }
    }
}

impl Evaluator for Hashed {
    fn evaluate(&self, positions: &[&Position]) -> Vec<Evaluation> {
        self.calls.fetch_add(1, Ordering::Relaxed);
        self.positions.fetch_add(positions.len(), Ordering::Relaxed);
        positions
            .iter()
            .map(|pos| {
                let mut x = pos.key() | 1;
                let mut next = || {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    (x >> 40) as f32 / (1u64 << 24) as f32
                };
                let mut priors: Vec<_> = pos
                    .legal_moves()
                    .iter()
                    .map(|&m| (m, 0.05 + next()))
                    .collect();
                let total: f32 = priors.iter().map(|(_, p)| p).sum();
                priors.iter_mut().for_each(|(_, p)| *p /= total);
                let win = 0.8 * next();
                let loss = 0.8 * next();
                Evaluation {
                    priors,
                    wdl: [win, 1.0 - win - loss, loss],
                }
            })
            .collect()
    }
}

/// Opening, middle-game and end-game positions from play, and a mate in one.
fn positions() -> Vec<Position> {
    let mut out = vec![Position::startpos()];
    let mut pos = Position::startpos();
    let mut rng = ChaCha8Rng::seed_from_u64(3);
    for ply in 0..60 {
        let moves = pos.legal_moves();
        if moves.is_empty() {
            break;
        }
        let mv = moves[rand::Rng::random_range(&mut rng, 0..moves.len())];
        pos.play(mv);
        if pos.outcome().is_some() {
            break;
        }
        if ply % 20 == 19 {
            out.push(pos.clone());
        }
    }
    out.push(Position::from_fen("k6/7/1+N5/7/7/7/7/7/6K[R] w - - 0 1").unwrap());
    out
}

fn config() -> SearchConfig {
    SearchConfig {
        ply_cap: 0,
        ..SearchConfig::puct()
    }
}

fn batched(pos: &Position, sims: u32, batching: Batching<'_>) -> SearchResult {
    let mut search = Search::new(pos.clone(), config()).unwrap();
    let mut rng = ChaCha8Rng::seed_from_u64(0);
    search
        .run_batched(&Hashed::new(), sims, false, &mut rng, batching, |_| {
            Control::Continue
        })
        .unwrap()
}

#[test]
fn one_leaf_batches_are_the_sequential_search() {
    for pos in positions() {
        for sims in [1, 7, 200] {
            let mut search = Search::new(pos.clone(), config()).unwrap();
            let mut rng = ChaCha8Rng::seed_from_u64(0);
            let sequential = search
                .run(&Hashed::new(), &Limits::simulations(sims), false, &mut rng)
                .unwrap();
            let one = batched(&pos, sims, Batching::sequential());
            assert_eq!(sequential, one, "{} at {sims} simulations", pos.fen());
        }
    }
}

#[test]
fn batches_spend_the_budget_and_keep_the_tree_sound() {
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(3)
        .build()
        .unwrap();
    for pos in positions() {
        for leaves in [1, 2, 8, 32] {
            // On the calling thread, and with batches in flight on three workers (whose
            // order of return, and so the search, varies from run to run).
            for pool in [None, Some(&pool)] {
                let r = batched(
                    &pos,
                    300,
                    Batching {
                        leaves,
                        pool,
                        batches_per_worker: 2,
                    },
                );
                let what = format!(
                    "{} with {leaves} leaves, pool {}",
                    pos.fen(),
                    pool.is_some()
                );
                if r.pv.len() == 1 && r.root_value == 1.0 {
                    continue; // the root's mate was found before any simulation
                }
                assert_eq!(r.simulations, 300, "{what}");
                let visits: u32 = r.moves.iter().map(|m| m.visits).sum();
                assert_eq!(
                    visits, 300,
                    "every simulation reaches one root move: {what}"
                );
                assert!(pos.is_legal(r.best_move.unwrap()), "{what}");
            }
        }
    }
}

/// An evaluator that fails on the third call.
struct Failing(AtomicUsize);

impl Evaluator for Failing {
    fn evaluate(&self, positions: &[&Position]) -> Vec<Evaluation> {
        if self.0.fetch_add(1, Ordering::SeqCst) == 2 {
            panic!("the network is gone");
        }
        UniformEvaluator.evaluate(positions)
    }
}

#[test]
fn a_panicking_evaluator_on_a_worker_is_an_error_not_a_hang() {
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(2)
        .build()
        .unwrap();
    let mut search = Search::new(Position::startpos(), config()).unwrap();
    let mut rng = ChaCha8Rng::seed_from_u64(0);
    let batching = Batching {
        leaves: 4,
        pool: Some(&pool),
        batches_per_worker: 1,
    };
    let failed = search.run_batched(
        &Failing(AtomicUsize::new(0)),
        1000,
        false,
        &mut rng,
        batching,
        |_| Control::Continue,
    );
    assert_eq!(
        failed.unwrap_err(),
        yari_search::SearchError::EvaluatorPanicked
    );
    // The tree is left consistent: it searches on with a working evaluator.
    let r = search
        .run_batched(&UniformEvaluator, 100, false, &mut rng, batching, |_| {
            Control::Continue
        })
        .unwrap();
    assert_eq!(r.simulations, 100);
}

#[test]
fn batches_spread_over_the_tree_and_fill_up() {
    let pos = Position::startpos();
    let mut search = Search::new(pos, config()).unwrap();
    let mut rng = ChaCha8Rng::seed_from_u64(0);
    let eval = Hashed::new();
    search
        .run_batched(
            &eval,
            2000,
            false,
            &mut rng,
            Batching {
                leaves: 16,
                pool: None,
                batches_per_worker: 1,
            },
            |_| Control::Continue,
        )
        .unwrap();
    let calls = eval.calls.load(Ordering::Relaxed);
    let evaluated = eval.positions.load(Ordering::Relaxed);
    // Virtual loss sends the descents of one batch to different leaves: batches are nearly
    // full rather than cut short by the first collision.
    let average = evaluated as f64 / calls as f64;
    assert!(average > 12.0, "average batch {average:.1} of 16");
    // Each simulation evaluated at most one position (the root's own evaluation aside).
    assert!(
        evaluated <= 2001,
        "{evaluated} evaluations for 2000 simulations"
    );
}

#[test]
fn a_mate_is_found_and_played_in_batches() {
    let pos = Position::from_fen("k6/7/1+N5/7/7/7/7/7/6K[R] w - - 0 1").unwrap();
    let config = SearchConfig {
        mate_search_plies: 0,
        ..config()
    };
    let mut search = Search::new(pos.clone(), config).unwrap();
    let mut rng = ChaCha8Rng::seed_from_u64(0);
    let r = search
        .run_batched(
            &UniformEvaluator,
            400,
            false,
            &mut rng,
            Batching {
                leaves: 8,
                pool: None,
                batches_per_worker: 1,
            },
            |_| Control::Continue,
        )
        .unwrap();
    let mut after = pos.clone();
    after.play(r.best_move.unwrap());
    assert!(
        after.legal_moves().is_empty(),
        "{} does not mate",
        r.best_move.unwrap()
    );
}

#[test]
fn stopping_after_a_batch_leaves_a_usable_tree() {
    let pos = Position::startpos();
    let mut search = Search::new(pos.clone(), config()).unwrap();
    let mut rng = ChaCha8Rng::seed_from_u64(0);
    let eval = Hashed::new();
    let mut batches = 0;
    let batching = Batching {
        leaves: 8,
        pool: None,
        batches_per_worker: 1,
    };
    let r = search
        .run_batched(&eval, 1000, false, &mut rng, batching, |_| {
            batches += 1;
            if batches >= 3 {
                Control::Stop
            } else {
                Control::Continue
            }
        })
        .unwrap();
    assert!(
        r.simulations > 0 && r.simulations <= 16,
        "{}",
        r.simulations
    );
    let visits: u32 = r.moves.iter().map(|m| m.visits).sum();
    assert_eq!(visits, r.simulations);
    // The stopped search's tree searches on, and goes on to a move after tree reuse.
    let more = search
        .run_batched(&eval, 100, false, &mut rng, batching, |_| Control::Continue)
        .unwrap();
    assert_eq!(more.simulations, 100);
    search.advance(more.best_move.unwrap()).unwrap();
    let next = search
        .run_batched(&eval, 50, false, &mut rng, batching, |_| Control::Continue)
        .unwrap();
    assert_eq!(next.simulations, 50);
    let visits: u32 = next.moves.iter().map(|m| m.visits).sum();
    assert!(visits >= 50, "inherited visits are kept");
}

#[test]
fn the_root_is_evaluated_before_a_stop_is_honoured() {
    let pos = Position::startpos();
    let mut search = Search::new(pos.clone(), config()).unwrap();
    let mut rng = ChaCha8Rng::seed_from_u64(0);
    let r = search
        .run_batched(
            &Hashed::new(),
            100,
            false,
            &mut rng,
            Batching::sequential(),
            |_| Control::Stop,
        )
        .unwrap();
    assert!(pos.is_legal(r.best_move.expect("a move even when stopped at once")));
    assert!(search.root_wdl().is_some());
}
