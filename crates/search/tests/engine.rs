//! The engine: time limits from a clock, stopping early when the move is settled, the tree
//! kept from move to move.

use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::{Duration, Instant};

use yari_rules::Position;
use yari_search::{Budget, Clock, Engine, EngineOptions, UniformEvaluator};

fn engine(threads: usize, batch: usize) -> Engine {
    let options = EngineOptions {
        threads,
        batch_per_thread: batch,
        ..EngineOptions::one_thread()
    };
    Engine::new(Arc::new(UniformEvaluator), Engine::play_config(), options).unwrap()
}

fn think(engine: &Engine, pos: &Position, budget: Budget) -> yari_search::Thought {
    let never = AtomicBool::new(false);
    engine
        .think(pos, budget, Instant::now(), &never, Duration::MAX, |_| {})
        .unwrap()
}

#[test]
fn a_clock_is_shared_out_and_never_spent() {
    let overhead = Duration::from_millis(20);
    for remaining_ms in [0u64, 5, 50, 1_000, 10_000, 600_000] {
        for inc_ms in [0u64, 100, 2_000] {
            for moves_to_go in [None, Some(1), Some(2), Some(40)] {
                let clock = Clock {
                    remaining: Duration::from_millis(remaining_ms),
                    increment: Duration::from_millis(inc_ms),
                    moves_to_go,
                };
                let l = clock.limits(overhead);
                let what = format!("{clock:?}: {l:?}");
                assert!(l.soft <= l.hard, "{what}");
                // Never more than what is left, less the overhead (a millisecond at least,
                // to have a move at all).
                let usable = clock.remaining.saturating_sub(overhead * 2);
                assert!(l.hard <= usable.max(Duration::from_millis(1)), "{what}");
                if moves_to_go != Some(1) && remaining_ms >= 1_000 {
                    assert!(
                        l.hard <= clock.remaining / 4 + clock.increment / 2,
                        "{what}"
                    );
                    assert!(l.soft >= clock.remaining / 40, "{what}");
                }
            }
        }
    }
    // The last move before the control may use nearly all of it.
    let last = Clock {
        remaining: Duration::from_millis(10_000),
        increment: Duration::ZERO,
        moves_to_go: Some(1),
    };
    assert!(last.limits(overhead).soft >= Duration::from_millis(9_000));
}

#[test]
fn fixed_nodes_are_searched_exactly_on_several_threads() {
    let engine = engine(2, 8);
    let pos = Position::startpos();
    let t = think(&engine, &pos, Budget::simulations(500));
    assert_eq!(t.result.simulations, 500);
    assert!(pos.is_legal(t.result.best_move.unwrap()));
    assert!(t.average_batch > 1.0, "{}", t.average_batch);
}

#[test]
fn a_forced_move_is_played_at_once() {
    // White's general on g1 in check from a rook on g9 with one flight square.
    let pos = Position::from_fen("k5r/7/7/7/7/7/7/7/5PK[] w - - 0 1").unwrap();
    let legal = pos.legal_moves();
    assert_eq!(legal.len(), 1, "{legal:?}");
    let engine = engine(1, 8);
    let start = Instant::now();
    let t = think(&engine, &pos, Budget::movetime(Duration::from_secs(20)));
    assert_eq!(t.result.best_move, Some(legal[0]));
    assert!(
        start.elapsed() < Duration::from_secs(10),
        "{:?}",
        start.elapsed()
    );
}

#[test]
fn the_tree_is_kept_through_our_move_and_the_reply() {
    let engine = engine(1, 4);
    let mut pos = Position::startpos();
    let first = think(&engine, &pos, Budget::simulations(3000));
    let ours = first.result.best_move.unwrap();
    pos.play(ours);
    // The reply the search expected most: its subtree holds many visits.
    let reply = first.result.pv.get(1).copied().unwrap();
    pos.play(reply);
    let second = think(&engine, &pos, Budget::simulations(10));
    let visits: u32 = second.result.moves.iter().map(|m| m.visits).sum();
    assert_eq!(second.result.simulations, 10);
    assert!(visits > 10, "{visits} visits: nothing was kept");
    // A position that does not follow from the kept root starts afresh.
    engine.clear_tree();
    let third = think(&engine, &pos, Budget::simulations(10));
    let visits: u32 = third.result.moves.iter().map(|m| m.visits).sum();
    assert_eq!(visits, 10);
}

#[test]
fn movetime_counts_from_the_request() {
    let engine = engine(1, 8);
    let pos = Position::startpos();
    let never = AtomicBool::new(false);
    // A request that arrived 300 ms ago with 200 ms to think: the search stops at once,
    // still with a move.
    let started = Instant::now() - Duration::from_millis(300);
    let t = engine
        .think(
            &pos,
            Budget::movetime(Duration::from_millis(200)),
            started,
            &never,
            Duration::MAX,
            |_| {},
        )
        .unwrap();
    assert!(pos.is_legal(t.result.best_move.unwrap()));
    assert!(t.result.simulations < 200, "{}", t.result.simulations);
}

/// `go searchmoves` leaves a forced mate alone when its first move is not in the list, with
/// one thread and with batches on several (whose workers classify the root themselves).
#[test]
fn searchmoves_are_kept_even_when_another_move_mates() {
    let pos = Position::from_fen("k6/7/1+N5/7/7/7/7/7/6K[R] w - - 0 1").unwrap();
    let quiet = pos.parse_move("g1g2").unwrap();
    for (threads, batch) in [(1, 1), (2, 8)] {
        let engine = engine(threads, batch);
        let never = AtomicBool::new(false);
        let thought = engine
            .think_among(
                &pos,
                &[quiet],
                Budget::simulations(100),
                Instant::now(),
                &never,
                Duration::MAX,
                |_| {},
            )
            .unwrap();
        assert_eq!(thought.result.best_move, Some(quiet), "{threads} threads");
        assert!(thought.result.moves.iter().all(|m| m.mv == quiet));
        // The next search, unrestricted, finds the mate: no restricted tree was kept.
        let free = think(&engine, &pos, Budget::simulations(100));
        let mut after = pos.clone();
        after.play(free.result.best_move.unwrap());
        assert!(after.legal_moves().is_empty(), "{threads} threads");
    }
}
