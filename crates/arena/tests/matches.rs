//! Full small matches, game files, gating and its ledger, and the rating fit.

use std::io::Write;

use yari_arena::{
    current_best, decide, fit_ratings, gate, jsonl, read_ledger, read_run_games, run_match,
    AlphaBetaPlayer, GameConfig, GameRecord, GateConfig, GateReason, MatchConfig, MatchResult,
    Pentanomial, PlayerSpec, Reason, SprtConfig, SprtModel, SprtStatus, Wdl,
};
use yari_rules::Position;

#[test]
fn random_vs_alphabeta_small_match() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("arena").join("m.jsonl");
    let ab = PlayerSpec::parse("alphabeta:1").unwrap();
    let random = PlayerSpec::parse("random").unwrap();
    let config = MatchConfig {
        games: 6,
        concurrency: 2,
        games_file: Some(file.clone()),
        game: GameConfig {
            ply_cap: Some(200),
            clock: None,
        },
        ..MatchConfig::default()
    };
    let result = run_match(&ab, &random, &config).unwrap();
    assert_eq!(result.wdl.games(), 6);
    assert_eq!(result.games.len(), 6);
    assert_eq!(result.pairs.pairs(), 3);
    // Material search beats random moves.
    assert!(result.wdl.wins >= 4, "{:?}", result.wdl);
    // Colours alternate, each opening is played with both colours.
    for (i, g) in result.games.iter().enumerate() {
        assert_eq!(g.round, i);
        let (white, black) = if i % 2 == 0 {
            ("alphabeta:1", "random")
        } else {
            ("random", "alphabeta:1")
        };
        assert_eq!((g.white.as_str(), g.black.as_str()), (white, black));
        assert_eq!(g.opening, i / 2);
        assert_eq!(g.opening_plies, 4);
    }
    assert_eq!(result.games[0].moves[..4], result.games[1].moves[..4]);
    // Every saved game replays legally from its start FEN to its recorded end.
    let saved: Vec<GameRecord> = jsonl::read(&file).unwrap().records;
    assert_eq!(saved.len(), 6);
    for g in &saved {
        let mut pos = Position::from_fen(&g.start_fen).unwrap();
        for mv in &g.moves {
            pos.play_uci(mv).unwrap();
        }
        match g.reason {
            Reason::PlyCap => assert_eq!(pos.plies_played(), 200),
            Reason::IllegalMove | Reason::PlayerFailure => panic!("no forfeits here: {g:?}"),
            _ => {
                let outcome = pos.outcome().expect("game over by the rules");
                assert_eq!(Reason::from(outcome.reason), g.reason);
                assert_eq!(outcome.winner.map(Into::into), g.winner);
            }
        }
    }
    // The run's rating list puts alphabeta above random = 0.
    let (games, skipped) = read_run_games(dir.path()).unwrap();
    assert_eq!((games.len(), skipped), (6, 0));
    let list = fit_ratings(&games, "random");
    assert_eq!(list.anchor, "random");
    assert_eq!(list.ratings[0].name, "alphabeta:1");
    assert!(list.ratings[0].elo > 0.0);
    assert!(list.ratings[0].error > 0.0);
}

#[test]
fn matches_are_reproducible() {
    let a = PlayerSpec::parse("random:1").unwrap();
    let b = PlayerSpec::parse("random:2").unwrap();
    let config = MatchConfig {
        games: 4,
        concurrency: 2,
        game: GameConfig {
            ply_cap: Some(60),
            clock: None,
        },
        ..MatchConfig::default()
    };
    let r1 = run_match(&a, &b, &config).unwrap();
    let r2 = run_match(&a, &b, &config).unwrap();
    // Everything but the measured think times.
    let untimed = |r: &yari_arena::MatchResult| {
        let mut games = r.games.clone();
        games.iter_mut().for_each(|g| g.move_ms.clear());
        games
    };
    assert_eq!(untimed(&r1), untimed(&r2));
}

#[test]
fn ply_cap_is_an_adjudicated_draw() {
    let a = PlayerSpec::parse("random:3").unwrap();
    let b = PlayerSpec::parse("random:4").unwrap();
    let config = MatchConfig {
        games: 2,
        concurrency: 1,
        game: GameConfig {
            ply_cap: Some(10),
            clock: None,
        },
        ..MatchConfig::default()
    };
    let r = run_match(&a, &b, &config).unwrap();
    for g in &r.games {
        assert_eq!(g.reason, Reason::PlyCap);
        assert_eq!(g.result, "1/2-1/2");
        assert_eq!(g.moves.len(), 10);
    }
    assert_eq!(r.wdl.draws, 2);
}

#[test]
fn alphabeta_finds_mate_in_one_and_avoids_hanging() {
    // White: K d1, R (forward rook) a8; Black: K d9 with pawns shielding c8 and e8? Use a
    // simple back-rank mate: black king a9 boxed by its own pieces, white rook drops in.
    let pos = Position::from_fen("k6/ppp4/7/7/7/7/7/7/3K3[R] w - - 0 1").unwrap();
    let mut ab = AlphaBetaPlayer::new(2);
    let (mv, score) = ab.search(&pos).unwrap();
    let mut after = pos.clone();
    after.play(mv);
    let outcome = after.outcome().expect("the move mates");
    assert_eq!(outcome.winner, Some(yari_rules::Color::White));
    assert!(score > yari_arena::alphabeta::MATE - 10);
}

fn result_with(wdl: Wdl, sprt: Option<SprtStatus>) -> MatchResult {
    MatchResult {
        a: "candidate".into(),
        b: "best".into(),
        wdl,
        pairs: Pentanomial::default(),
        sprt,
        games_planned: wdl.games() as usize,
        stopped_early: false,
        interrupted: false,
        reasons: Default::default(),
        games: Vec::new(),
    }
}

/// The fields a test does not set (the library has no default gate: the run's is
/// `configs/default.toml`'s `[gate]`).
fn gate_basics() -> GateConfig {
    GateConfig {
        games: 200,
        sprt: Some(SprtConfig::new(0.0, 10.0)),
        threshold: 0.55,
        require_edge: true,
        match_config: MatchConfig::default(),
        ledger: None,
    }
}

#[test]
fn gating_never_promotes_on_draws() {
    let config = GateConfig {
        games: 100,
        threshold: 0.5,
        sprt: None,
        ..gate_basics()
    };
    let d = decide(&result_with(Wdl::new(0, 100, 0), None), &config);
    assert!(!d.promote);
    assert_eq!(d.reason, GateReason::NoEdge);
    // Even with an (absurd) accepted H1.
    let h1 = SprtStatus {
        llr: 3.0,
        lower: -2.94,
        upper: 2.94,
        decision: yari_arena::SprtDecision::AcceptH1,
    };
    let d = decide(&result_with(Wdl::new(0, 100, 0), Some(h1)), &config);
    assert!(!d.promote);
    // Equal wins and losses: no edge either.
    assert!(!decide(&result_with(Wdl::new(10, 80, 10), None), &config).promote);
}

#[test]
fn gating_threshold_and_sprt() {
    let config = GateConfig {
        games: 100,
        threshold: 0.55,
        sprt: None,
        ..gate_basics()
    };
    let d = decide(&result_with(Wdl::new(30, 50, 20), None), &config);
    assert!(d.promote);
    assert_eq!(d.reason, GateReason::Threshold);
    let d = decide(&result_with(Wdl::new(25, 55, 20), None), &config);
    assert!(!d.promote);
    assert_eq!(d.reason, GateReason::BelowThreshold);
    // Fewer games than planned: the threshold does not apply.
    let d = decide(&result_with(Wdl::new(30, 10, 10), None), &config);
    assert!(!d.promote);
    let h1 = SprtStatus {
        llr: 3.0,
        lower: -2.94,
        upper: 2.94,
        decision: yari_arena::SprtDecision::AcceptH1,
    };
    let d = decide(&result_with(Wdl::new(30, 10, 10), Some(h1)), &config);
    assert!(d.promote);
    assert_eq!(d.reason, GateReason::SprtH1);
}

#[test]
fn non_regression_gating_promotes_an_even_candidate_but_not_a_worse_one() {
    let config = GateConfig {
        games: 40,
        threshold: 0.45,
        require_edge: false,
        sprt: None,
        ..gate_basics()
    };
    // 18-4-18: even, promoted (with require_edge it would be NoEdge).
    let d = decide(&result_with(Wdl::new(18, 4, 18), None), &config);
    assert!(d.promote);
    assert_eq!(d.reason, GateReason::Threshold);
    // 15-4-21 = 42.5%: worse than the threshold, kept.
    let d = decide(&result_with(Wdl::new(15, 4, 21), None), &config);
    assert!(!d.promote);
    assert_eq!(d.reason, GateReason::BelowThreshold);
    let strict = GateConfig {
        require_edge: true,
        ..config
    };
    let d = decide(&result_with(Wdl::new(18, 4, 18), None), &strict);
    assert_eq!(d.reason, GateReason::NoEdge);
}

#[test]
fn gate_on_an_all_draws_match_does_not_promote() {
    // A ply cap equal to the opening length adjudicates every game a draw at once.
    let dir = tempfile::tempdir().unwrap();
    let ledger = dir.path().join("ledger.jsonl");
    let a = PlayerSpec::parse("alphabeta:1").unwrap();
    let b = PlayerSpec::parse("random").unwrap();
    let config = GateConfig {
        games: 6,
        threshold: 0.5,
        sprt: Some(SprtConfig::new(0.0, 10.0)),
        match_config: MatchConfig {
            concurrency: 2,
            opening_plies: 4,
            game: GameConfig {
                ply_cap: Some(4),
                clock: None,
            },
            games_file: Some(dir.path().join("arena/gate.jsonl")),
            ..MatchConfig::default()
        },
        require_edge: true,
        ledger: Some(ledger.clone()),
    };
    let d = gate(&a, &b, &config).unwrap();
    assert_eq!((d.wins, d.draws, d.losses), (0, 6, 0));
    assert_eq!(d.score, 0.5);
    assert!(!d.promote);
    assert_eq!(d.reason, GateReason::NoEdge);
    assert_eq!(d.candidate, "alphabeta:1");
    assert_eq!(d.best, "random");
    let read = read_ledger(&ledger).unwrap();
    assert_eq!(read.records, vec![d]);
    assert_eq!(current_best(&ledger).unwrap(), None);
}

#[test]
fn ledger_survives_a_torn_line() {
    let dir = tempfile::tempdir().unwrap();
    let ledger = dir.path().join("ledger.jsonl");
    let config = GateConfig {
        games: 10,
        threshold: 0.55,
        sprt: Some(SprtConfig {
            model: SprtModel::Trinomial,
            ..SprtConfig::new(0.0, 10.0)
        }),
        ..gate_basics()
    };
    let mut first = decide(&result_with(Wdl::new(10, 0, 0), None), &config);
    first.candidate = "gen1".into();
    assert!(first.promote);
    yari_arena::append_ledger(&ledger, &first).unwrap();
    // A writer dies mid-line...
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(&ledger)
        .unwrap();
    f.write_all(b"{\"time\":1,\"candidate\":\"gen2\",\"pro")
        .unwrap();
    drop(f);
    let read = read_ledger(&ledger).unwrap();
    assert_eq!((read.records.len(), read.skipped()), (1, 1));
    // ...and the next append still lands on its own line.
    let mut third = decide(&result_with(Wdl::new(0, 10, 0), None), &config);
    third.candidate = "gen3".into();
    yari_arena::append_ledger(&ledger, &third).unwrap();
    let read = read_ledger(&ledger).unwrap();
    assert_eq!((read.records.len(), read.skipped()), (2, 1));
    assert_eq!(current_best(&ledger).unwrap().as_deref(), Some("gen1"));
    // Infinite Elo (a 100% score) round-trips as null → NaN instead of breaking the line.
    assert!(first.elo.is_infinite());
    assert!(read.records[0].elo.is_nan());
}

#[test]
fn ratings_recover_known_strengths() {
    // A beats anchor 3:1 (= +190.8), B beats A 3:1: B ≈ +381.7 with a virtual draw per pair
    // pulling both slightly towards their opponents.
    let mut games = Vec::new();
    let mut add = |w: &str, b: &str, winner: Option<yari_arena::Side>, n: usize| {
        for _ in 0..n {
            games.push(GameRecord {
                round: 0,
                white: w.into(),
                black: b.into(),
                opening: 0,
                opening_plies: 0,
                start_fen: yari_rules::START_FEN.into(),
                moves: vec![],
                result: String::new(),
                winner,
                reason: Reason::Checkmate,
                detail: None,
                seed: 0,
                move_ms: Vec::new(),
            });
        }
    };
    use yari_arena::Side::{Black, White};
    add("A", "random", Some(White), 300);
    add("A", "random", Some(Black), 100);
    add("B", "A", Some(White), 300);
    add("B", "A", Some(Black), 100);
    add("C", "D", Some(White), 5); // not connected to the anchor
    let list = fit_ratings(&games, "random");
    let get = |n: &str| list.ratings.iter().find(|r| r.name == n).unwrap().clone();
    let (a, b, r) = (get("A"), get("B"), get("random"));
    assert_eq!(r.elo, 0.0);
    assert_eq!(r.error, 0.0);
    assert!((a.elo - 190.85).abs() < 2.0, "{a:?}");
    assert!((b.elo - 381.7).abs() < 4.0, "{b:?}");
    assert!(b.error > a.error, "errors grow along the chain");
    // 400 games at 3:1: standard error of the score sqrt(.1875/400) ≈ .02165, times
    // dElo/dscore = 400 / (ln 10 · .75 · .25) ≈ 926.5 → 20.06 Elo, ±39.3 at 95%.
    assert!((a.error - 39.3).abs() < 1.5, "{a:?}");
    assert_eq!(list.unrated, vec!["C".to_string(), "D".to_string()]);
    assert!(list.to_table().contains("anchor random = 0"));
}

#[test]
fn alphabeta_is_reproducible_and_makes_progress() {
    // Deterministic per game seed; and the advancement tie-breaker keeps two material
    // searchers from shuffling into a repetition every game.
    let a = PlayerSpec::parse("alphabeta:2").unwrap();
    let b = PlayerSpec::parse("alphabeta:1").unwrap();
    let config = MatchConfig {
        games: 4,
        concurrency: 2,
        game: GameConfig {
            ply_cap: Some(150),
            clock: None,
        },
        ..MatchConfig::default()
    };
    let r1 = run_match(&a, &b, &config).unwrap();
    let r2 = run_match(&a, &b, &config).unwrap();
    // Everything but the measured think times.
    let untimed = |r: &yari_arena::MatchResult| {
        let mut games = r.games.clone();
        games.iter_mut().for_each(|g| g.move_ms.clear());
        games
    };
    assert_eq!(untimed(&r1), untimed(&r2));
    let repetitions = r1
        .games
        .iter()
        .filter(|g| g.reason == Reason::Repetition)
        .count();
    assert!(repetitions < 4, "{:?}", r1.reasons);
    assert!(
        r1.wdl.wins > r1.wdl.losses,
        "depth 2 beats depth 1: {:?}",
        r1.wdl
    );
}

#[test]
fn sprt_stops_a_lopsided_match_and_the_gate_promotes() {
    let dir = tempfile::tempdir().unwrap();
    let ledger = dir.path().join("ledger.jsonl");
    let a = PlayerSpec::parse("alphabeta:1").unwrap();
    let b = PlayerSpec::parse("random").unwrap();
    let config = GateConfig {
        games: 200,
        threshold: 0.55,
        sprt: Some(SprtConfig::new(0.0, 200.0)),
        match_config: MatchConfig {
            concurrency: 2,
            game: GameConfig {
                ply_cap: Some(150),
                clock: None,
            },
            ..MatchConfig::default()
        },
        require_edge: true,
        ledger: Some(ledger.clone()),
    };
    let d = gate(&a, &b, &config).unwrap();
    assert!(d.promote, "{d:?}");
    assert_eq!(d.reason, GateReason::SprtH1);
    assert!(d.games < 200, "stopped early: {d:?}");
    let sprt = d.sprt.unwrap();
    assert!(sprt.llr >= sprt.upper);
    assert_eq!(
        current_best(&ledger).unwrap().as_deref(),
        Some("alphabeta:1")
    );

    // The same through run_match: the result says it stopped early, and serialises.
    let mut mc = config.match_config.clone();
    mc.games = 200;
    mc.sprt = config.sprt;
    let r = run_match(&a, &b, &mc).unwrap();
    assert!(r.stopped_early);
    assert_eq!(r.sprt.unwrap().decision, yari_arena::SprtDecision::AcceptH1);
    let text = serde_json::to_string(&r).unwrap();
    assert!(text.contains("\"checkmate\""), "{text}");
}
