//! Search behaviour with the uniform evaluator, checked against the rules crate.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use yari_rules::{Move, Position};
use yari_search::{
    search_move, Evaluation, Evaluator, GumbelConfig, Limits, PuctConfig, Search, SearchConfig,
    SearchError, SearchVariant, UniformEvaluator,
};

/// White to move: Black's general is alone on a9, a White gold on b7 guards a8 and b8, and
/// White holds a rook, so a rook drop on the ninth rank (d9 to g9) mates.
const MATE_IN_ONE: &str = "k6/7/1+N5/7/7/7/7/7/6K[R] w - - 0 1";

/// Black to move, facing the same rook-drop mate: a Black rook on g9 guards the ninth rank.
/// Leaving the rank (g8 to g2) or blocking the general's flight square (b9) allows mate;
/// staying on the rank or stepping the general to b9 does not.
const AVOID_MATE: &str = "k5r/7/1+N5/7/7/7/7/7/4K2[R] b - - 0 1";

fn rng() -> ChaCha8Rng {
    ChaCha8Rng::seed_from_u64(7)
}

fn gumbel_wide() -> SearchConfig {
    SearchConfig::gumbel_deterministic(1024)
}

/// The default (Gumbel) search with `considered` root actions.
fn gumbel_considering(considered: usize) -> SearchConfig {
    SearchConfig {
        variant: SearchVariant::Gumbel(GumbelConfig {
            considered,
            ..GumbelConfig::default()
        }),
        ..SearchConfig::default()
    }
}

/// `config` without the mate-in-one check, so that the tree search alone is tested.
fn search_only(config: SearchConfig) -> SearchConfig {
    SearchConfig {
        mate_search_plies: 0,
        ..config
    }
}

/// Whether `mv` leaves the opponent without a legal move (mate or stalemate: both lose).
fn mates(pos: &Position, mv: Move) -> bool {
    let mut p = pos.clone();
    p.play(mv);
    p.legal_moves().is_empty()
}

/// Whether the side to move in `pos` has a mating move.
fn has_mate_in_one(pos: &Position) -> bool {
    pos.legal_moves().iter().any(|&mv| mates(pos, mv))
}

/// Whether playing `mv` lets the opponent mate at once.
fn allows_mate(pos: &Position, mv: Move) -> bool {
    let mut p = pos.clone();
    p.play(mv);
    has_mate_in_one(&p)
}

#[test]
fn positions_are_what_the_tests_say() {
    let pos = Position::from_fen(MATE_IN_ONE).unwrap();
    let moves = pos.legal_moves();
    let mating = moves.iter().filter(|&&m| mates(&pos, m)).count();
    assert!(
        mating >= 1 && mating < moves.len() / 4,
        "{mating} of {}",
        moves.len()
    );

    let pos = Position::from_fen(AVOID_MATE).unwrap();
    let moves = pos.legal_moves();
    let losing = moves.iter().filter(|&&m| allows_mate(&pos, m)).count();
    assert!(
        losing >= 1 && losing < moves.len(),
        "{losing} of {} allow mate",
        moves.len()
    );
}

fn assert_finds_mate(config: &SearchConfig, sims: u32) {
    let pos = Position::from_fen(MATE_IN_ONE).unwrap();
    let r = search_move(
        &UniformEvaluator,
        &pos,
        config,
        &Limits::simulations(sims),
        &mut rng(),
    )
    .unwrap();
    let mv = r.best_move.expect("a move");
    assert!(mates(&pos, mv), "{mv} does not mate; pv {:?}", r.pv);
    assert!(r.root_value > 0.5, "root value {}", r.root_value);
}

#[test]
fn puct_finds_mate_in_one() {
    assert_finds_mate(&search_only(SearchConfig::puct()), 2000);
}

#[test]
fn gumbel_finds_mate_in_one() {
    assert_finds_mate(&search_only(gumbel_wide()), 400);
}

fn assert_avoids_mate(config: &SearchConfig, sims: u32) {
    let pos = Position::from_fen(AVOID_MATE).unwrap();
    let r = search_move(
        &UniformEvaluator,
        &pos,
        config,
        &Limits::simulations(sims),
        &mut rng(),
    )
    .unwrap();
    let mv = r.best_move.expect("a move");
    assert!(
        !allows_mate(&pos, mv),
        "{mv} allows mate in one; pv {:?}",
        r.pv
    );
}

#[test]
fn puct_avoids_allowing_mate_in_one() {
    assert_avoids_mate(&search_only(SearchConfig::puct()), 20_000);
}

#[test]
fn gumbel_avoids_allowing_mate_in_one() {
    assert_avoids_mate(&search_only(gumbel_wide()), 20_000);
}

/// With the mate-in-one check, a root that mates in one plays the mate at once: no network
/// call, whatever the budget, and the mate is the whole policy target.
#[test]
fn mate_check_plays_the_mate_without_evaluating() {
    let pos = Position::from_fen(MATE_IN_ONE).unwrap();
    for config in [SearchConfig::puct(), SearchConfig::default(), gumbel_wide()] {
        assert!(config.mate_search_plies >= 1, "on by default");
        for sims in [0, 1, 50] {
            let counter = Counting(AtomicUsize::new(0));
            let mut search = Search::new(pos.clone(), config.clone()).unwrap();
            let r = search
                .run(&counter, &Limits::simulations(sims), false, &mut rng())
                .unwrap();
            let mv = r.best_move.expect("a move");
            assert!(mates(&pos, mv), "{mv} does not mate");
            assert_eq!(r.root_value, 1.0);
            assert_eq!(r.pv, vec![mv]);
            assert_eq!(counter.0.load(Ordering::Relaxed), 0, "{sims} simulations");
            assert_distribution_over_legal_moves(&pos, &r.policy);
            assert_eq!(r.policy.iter().find(|(m, _)| *m == mv).unwrap().1, 1.0);
            assert_eq!(r.moves.len(), pos.legal_moves().len());
            assert!(
                !r.priors_from_network,
                "the network never saw the root: its priors are a placeholder"
            );
        }
    }
    // A root the network evaluated says so.
    let mut search = Search::new(Position::startpos(), SearchConfig::default()).unwrap();
    let counter = Counting(AtomicUsize::new(0));
    let r = search
        .run(&counter, &Limits::simulations(8), false, &mut rng())
        .unwrap();
    assert!(r.priors_from_network);
}

/// A mate threat costs the search one visit per move it looks at instead of a subtree deep
/// enough to stumble on the mating reply: a budget of twice the legal moves suffices where
/// the search alone needed 20,000 simulations above.
#[test]
fn mate_check_sees_mate_threats_with_a_small_budget() {
    let pos = Position::from_fen(AVOID_MATE).unwrap();
    let sims = 2 * pos.legal_moves().len() as u32;
    for config in [SearchConfig::puct(), gumbel_wide()] {
        let r = search_move(
            &UniformEvaluator,
            &pos,
            &config,
            &Limits::simulations(sims),
            &mut rng(),
        )
        .unwrap();
        let mv = r.best_move.expect("a move");
        assert!(!allows_mate(&pos, mv), "{mv} allows mate; pv {:?}", r.pv);
        // Every visited move that allows mate is known lost.
        for m in r.moves.iter().filter(|m| m.visits > 0) {
            if allows_mate(&pos, m.mv) {
                assert_eq!(m.q, Some(-1.0), "{}", m.mv);
            }
        }
    }
}

/// A mating root reached by tree reuse still plays its mate (its node is kept as a proven
/// win, not expanded).
#[test]
fn mate_check_survives_tree_reuse() {
    // Black to move in AVOID_MATE: after a move that allows mate, White mates at once.
    let pos = Position::from_fen(AVOID_MATE).unwrap();
    let blunder = pos
        .legal_moves()
        .iter()
        .copied()
        .find(|&m| allows_mate(&pos, m))
        .unwrap();
    let sims = 2 * pos.legal_moves().len() as u32;
    // Sequential halving over every move visits each one at least once.
    let mut search = Search::new(pos.clone(), gumbel_wide()).unwrap();
    let r = search
        .run(
            &UniformEvaluator,
            &Limits::simulations(sims),
            false,
            &mut rng(),
        )
        .unwrap();
    assert!(r.moves.iter().any(|m| m.mv == blunder && m.visits > 0));
    search.advance(blunder).unwrap();
    let counter = Counting(AtomicUsize::new(0));
    let r = search
        .run(&counter, &Limits::simulations(10), false, &mut rng())
        .unwrap();
    assert!(mates(search.root(), r.best_move.unwrap()));
    assert_eq!(counter.0.load(Ordering::Relaxed), 0);
}

/// Gumbel temperature 0 removes the root noise: every seed searches alike. At temperature 1
/// the considered moves, and with them the chosen move, depend on the seed.
#[test]
fn gumbel_temperature_scales_the_root_noise() {
    let pos = Position::startpos();
    let config = gumbel_considering(4);
    let best = |t: f32, seed: u64| {
        let mut search = Search::new(pos.clone(), config.clone()).unwrap();
        search.set_gumbel_temperature(t);
        let r = search
            .run(
                &UniformEvaluator,
                &Limits::simulations(16),
                false,
                &mut ChaCha8Rng::seed_from_u64(seed),
            )
            .unwrap();
        r.best_move.unwrap()
    };
    let cold: std::collections::HashSet<Move> = (0..20).map(|seed| best(0.0, seed)).collect();
    assert_eq!(cold.len(), 1);
    let hot: std::collections::HashSet<Move> = (0..20).map(|seed| best(1.0, seed)).collect();
    assert!(hot.len() > 3, "{} distinct moves", hot.len());
}

fn assert_distribution_over_legal_moves(pos: &Position, policy: &[(Move, f32)]) {
    let legal = pos.legal_moves();
    assert_eq!(policy.len(), legal.len());
    for &(mv, p) in policy {
        assert!(legal.contains(&mv), "{mv} is not legal");
        assert!(p.is_finite() && p >= 0.0, "{mv}: {p}");
    }
    let sum: f32 = policy.iter().map(|(_, p)| p).sum();
    assert!((sum - 1.0).abs() < 1e-4, "sum {sum}");
}

#[test]
fn targets_are_distributions_over_legal_moves() {
    let mut pos = Position::startpos();
    let mut rng = rng();
    let configs = [SearchConfig::puct(), SearchConfig::default(), gumbel_wide()];
    for ply in 0..24 {
        for config in &configs {
            for sims in [0, 1, 7, 50] {
                let r = search_move(
                    &UniformEvaluator,
                    &pos,
                    config,
                    &Limits::simulations(sims),
                    &mut rng,
                )
                .unwrap();
                assert_distribution_over_legal_moves(&pos, &r.policy);
                assert!(pos.is_legal(r.best_move.unwrap()));
                for mv in &r.pv {
                    assert!(Move::from_u16(mv.to_u16()).is_some());
                }
            }
        }
        let r = search_move(
            &UniformEvaluator,
            &pos,
            &SearchConfig::default(),
            &Limits::simulations(16),
            &mut rng,
        )
        .unwrap();
        pos.play(r.best_move.unwrap());
        if pos.outcome().is_some() {
            break;
        }
        let _ = ply;
    }
}

/// Counts the positions it is asked about.
struct Counting(AtomicUsize);

impl Evaluator for Counting {
    fn evaluate(&self, positions: &[&Position]) -> Vec<Evaluation> {
        self.0.fetch_add(positions.len(), Ordering::Relaxed);
        UniformEvaluator.evaluate(positions)
    }
}

#[test]
fn gumbel_sequential_halving_spends_exactly_the_budget() {
    let pos = Position::startpos();
    for considered in [1, 2, 4, 16, 64] {
        for sims in [1, 2, 5, 16, 17, 64, 100, 257] {
            let config = gumbel_considering(considered);
            let counter = Counting(AtomicUsize::new(0));
            let mut search = Search::new(pos.clone(), config).unwrap();
            let r = search
                .run(&counter, &Limits::simulations(sims), false, &mut rng())
                .unwrap();
            assert_eq!(r.simulations, sims, "m={considered}");
            let visits: u32 = r.moves.iter().map(|m| m.visits).sum();
            assert_eq!(visits, sims, "m={considered} n={sims}: root child visits");
            // One evaluation for the root, one per simulation (no terminal this close to
            // the start).
            assert_eq!(counter.0.load(Ordering::Relaxed), sims as usize + 1);
            // Sequential halving never visits more than m distinct root moves.
            let visited = r.moves.iter().filter(|m| m.visits > 0).count();
            assert!(
                visited <= considered.min(sims as usize),
                "m={considered} n={sims}: {visited}"
            );
        }
    }
}

#[test]
fn terminal_root_reports_the_result() {
    let pos = Position::from_fen(MATE_IN_ONE).unwrap();
    let mv = pos
        .legal_moves()
        .iter()
        .copied()
        .find(|&m| mates(&pos, m))
        .unwrap();
    let mut mated = pos.clone();
    mated.play(mv);
    for config in [SearchConfig::puct(), SearchConfig::default()] {
        let r = search_move(
            &UniformEvaluator,
            &mated,
            &config,
            &Limits::simulations(10),
            &mut rng(),
        )
        .unwrap();
        assert_eq!(r.best_move, None);
        assert_eq!(r.root_value, -1.0);
        assert!(r.terminal.is_some());
        assert!(r.policy.is_empty());
    }
}

#[test]
fn limits_stop_the_search() {
    let pos = Position::startpos();
    let mut search = Search::new(pos.clone(), SearchConfig::puct()).unwrap();
    let limits = Limits {
        simulations: 1_000_000,
        max_nodes: Some(5_000),
        deadline: None,
    };
    let r = search
        .run(&UniformEvaluator, &limits, false, &mut rng())
        .unwrap();
    assert!(
        r.nodes >= 5_000 && r.nodes < 5_000 + 1024,
        "{} nodes",
        r.nodes
    );
    assert!(r.simulations < 1_000_000);

    let mut search = Search::new(pos, SearchConfig::puct()).unwrap();
    let limits = Limits {
        simulations: 1_000_000,
        max_nodes: None,
        deadline: Some(Instant::now() + Duration::from_millis(100)),
    };
    let t = Instant::now();
    let r = search
        .run(&UniformEvaluator, &limits, false, &mut rng())
        .unwrap();
    assert!(t.elapsed() < Duration::from_secs(5));
    assert!(r.simulations > 0 && r.simulations < 1_000_000);
    assert!(!r.pv.is_empty());
}

#[test]
fn tree_reuse_keeps_the_played_subtree() {
    let pos = Position::startpos();
    let mut search = Search::new(pos, SearchConfig::puct()).unwrap();
    let r = search
        .run(
            &UniformEvaluator,
            &Limits::simulations(2000),
            false,
            &mut rng(),
        )
        .unwrap();
    let best = r.best_move.unwrap();
    let kept = r.moves.iter().find(|m| m.mv == best).unwrap().visits;
    assert!(kept > 1);
    search.advance(best).unwrap();
    let r2 = search.result();
    let inherited: u32 = r2.moves.iter().map(|m| m.visits).sum();
    assert_eq!(inherited + 1, kept, "the new root's visits are the child's");
    // `best` was a board move of the side that just moved: its origin square is empty now,
    // so playing it again is refused and leaves the root and its inherited tree alone.
    assert!(
        matches!(search.advance(best), Err(SearchError::IllegalMove { .. })),
        "replaying {best} must be refused"
    );
    assert_eq!(search.root().plies_played(), 1);
    let again: u32 = search.result().moves.iter().map(|m| m.visits).sum();
    assert_eq!(again, inherited, "a refused move keeps the tree");
    // A legal reply is played and keeps its own subtree.
    let reply = search.result().best_move.unwrap();
    search.advance(reply).unwrap();
    assert_eq!(search.root().plies_played(), 2);

    let mut fresh = Search::new(
        Position::startpos(),
        SearchConfig {
            reuse_tree: false,
            ..SearchConfig::puct()
        },
    )
    .unwrap();
    fresh
        .run(
            &UniformEvaluator,
            &Limits::simulations(100),
            false,
            &mut rng(),
        )
        .unwrap();
    fresh.advance(best).unwrap();
    assert_eq!(fresh.node_count(), 1);
}

#[test]
fn illegal_advance_is_an_error() {
    let mut search = Search::new(Position::startpos(), SearchConfig::default()).unwrap();
    let bogus = Move::parse_uci("a1a9").unwrap();
    assert!(search.advance(bogus).is_err());
    assert_eq!(search.root().plies_played(), 0);
}

#[test]
fn invalid_config_is_rejected() {
    let config = SearchConfig {
        variant: SearchVariant::Puct(PuctConfig {
            c_puct: -1.0,
            ..PuctConfig::default()
        }),
        ..SearchConfig::default()
    };
    let err = Search::new(Position::startpos(), config).err().unwrap();
    assert!(err.to_string().contains("c_puct"), "{err}");
    let config = gumbel_considering(0);
    let err = Search::new(Position::startpos(), config).err().unwrap();
    assert!(err.to_string().contains("gumbel_considered"), "{err}");
}

#[test]
fn root_noise_only_when_asked_and_only_for_puct() {
    let pos = Position::startpos();
    let uniform = 1.0 / pos.legal_moves().len() as f32;
    let config = SearchConfig {
        variant: SearchVariant::Puct(PuctConfig {
            dirichlet_fraction: 0.25,
            ..PuctConfig::default()
        }),
        ..SearchConfig::default()
    };
    let priors = |config: &SearchConfig, noise: bool| {
        let mut s = Search::new(pos.clone(), config.clone()).unwrap();
        let r = s
            .run(
                &UniformEvaluator,
                &Limits::simulations(8),
                noise,
                &mut rng(),
            )
            .unwrap();
        r.moves.iter().map(|m| m.prior).collect::<Vec<_>>()
    };
    let noised = priors(&config, true);
    assert!(noised.iter().any(|p| (p - uniform).abs() > 1e-3));
    assert!((noised.iter().sum::<f32>() - 1.0).abs() < 1e-4);
    assert!(priors(&config, false)
        .iter()
        .all(|p| (p - uniform).abs() < 1e-6));
    let gumbel = SearchConfig {
        variant: SearchVariant::Gumbel(GumbelConfig::default()),
        ..config
    };
    assert!(priors(&gumbel, true)
        .iter()
        .all(|p| (p - uniform).abs() < 1e-6));
}

#[test]
fn temperature_samples_in_proportion_to_visits() {
    let pos = Position::startpos();
    let mut s = Search::new(pos, SearchConfig::puct()).unwrap();
    let r = s
        .run(
            &UniformEvaluator,
            &Limits::simulations(400),
            false,
            &mut rng(),
        )
        .unwrap();
    let best = r.best_move.unwrap();
    let mut rng = rng();
    for _ in 0..20 {
        assert_eq!(
            yari_search::choose_move(&r, &SearchConfig::puct().variant, 0.0, &mut rng),
            Some(best)
        );
    }
    let mut distinct = std::collections::HashSet::new();
    for _ in 0..200 {
        let mv =
            yari_search::choose_move(&r, &SearchConfig::puct().variant, 1.0, &mut rng).unwrap();
        assert!(r.moves.iter().any(|m| m.mv == mv && m.visits > 0));
        distinct.insert(mv);
    }
    assert!(
        distinct.len() > 3,
        "temperature 1 should spread over visited moves"
    );
}

/// Priors rising with the move's index (move i gets weight i + 1), value 0.
struct Ramp;

impl Evaluator for Ramp {
    fn evaluate(&self, positions: &[&Position]) -> Vec<Evaluation> {
        UniformEvaluator
            .evaluate(positions)
            .into_iter()
            .map(|mut e| {
                let n = e.priors.len() as f32;
                let total = n * (n + 1.0) / 2.0;
                for (i, (_, p)) in e.priors.iter_mut().enumerate() {
                    *p = (i as f32 + 1.0) / total;
                }
                e
            })
            .collect()
    }
}

#[test]
fn policy_temperature_flattens_the_priors() {
    let pos = Position::startpos();
    let root_priors = |t: f32| {
        let config = SearchConfig {
            policy_temperature: t,
            ..SearchConfig::puct()
        };
        let mut s = Search::new(pos.clone(), config).unwrap();
        let r = s
            .run(&Ramp, &Limits::simulations(4), false, &mut rng())
            .unwrap();
        r.moves.iter().map(|m| m.prior).collect::<Vec<_>>()
    };
    let plain = root_priors(1.0);
    let n = plain.len() as f32;
    assert!(
        (plain[0] * n * (n + 1.0) / 2.0 - 1.0).abs() < 1e-3,
        "{plain:?}"
    );
    let flat = root_priors(2.0);
    assert!((flat.iter().sum::<f32>() - 1.0).abs() < 1e-4);
    // p^(1/2) renormalised: the ratio of the last prior to the first is sqrt(n), not n.
    let ratio = flat[flat.len() - 1] / flat[0];
    assert!(
        (ratio - n.sqrt()).abs() < 1e-2 * n.sqrt(),
        "{ratio} vs {}",
        n.sqrt()
    );
    let sharp = root_priors(0.5);
    assert!(sharp[sharp.len() - 1] / sharp[0] > n * n * 0.99);
    let bad = SearchConfig {
        policy_temperature: 0.0,
        ..SearchConfig::puct()
    };
    let err = Search::new(pos, bad).err().unwrap();
    assert!(err.to_string().contains("policy_temperature"), "{err}");
}

/// `go searchmoves`: a restricted root holds exactly the moves given, in either variant; the
/// list is checked, and it must come before the root is expanded.
#[test]
fn a_restricted_root_searches_only_the_moves_given() {
    let pos = Position::startpos();
    let allowed: Vec<Move> = ["a3a4", "g3g4", "a3a4"]
        .iter()
        .map(|m| pos.parse_move(m).unwrap())
        .collect();
    for config in [SearchConfig::puct(), gumbel_considering(8)] {
        let mut search = Search::new(pos.clone(), config).unwrap();
        search.restrict_root(&allowed).unwrap();
        let r = search
            .run(
                &UniformEvaluator,
                &Limits::simulations(64),
                false,
                &mut rng(),
            )
            .unwrap();
        assert_eq!(r.moves.len(), 2, "{:?}", r.moves);
        assert!(r.moves.iter().all(|m| allowed.contains(&m.mv)));
        assert!(allowed.contains(&r.best_move.unwrap()));
        assert_eq!(r.moves.iter().map(|m| m.visits).sum::<u32>(), 64);
        assert!(matches!(
            search.restrict_root(&allowed),
            Err(SearchError::RootExpanded)
        ));
    }
    let mut search = Search::new(pos.clone(), SearchConfig::puct()).unwrap();
    let mut black = pos.clone();
    black.play(allowed[0]);
    let not_here = black.parse_move("a7a6").unwrap();
    assert!(matches!(
        search.restrict_root(&[not_here]),
        Err(SearchError::IllegalMove { .. })
    ));
}
