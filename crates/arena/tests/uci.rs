//! The UCI client against a scripted fake engine (tests/fixtures/fake_uci.sh, bash only):
//! legal play, illegal and unparseable moves, an engine that dies mid-game, one that hangs,
//! one without the variant. Each must end the game with a clear result, never hang or panic.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use yari_arena::{
    play_game, run_match, ArenaError, GameConfig, GameView, MatchConfig, Opening, Player,
    PlayerError, PlayerSpec, Reason, Side, TimeControl, UciConfig, UciPlayer,
};
use yari_rules::Move;

fn fake(mode: &str, log: Option<&std::path::Path>) -> UciConfig {
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/fake_uci.sh");
    let mut argv = vec![
        "bash".to_string(),
        script.display().to_string(),
        mode.to_string(),
    ];
    if let Some(log) = log {
        argv.push(log.display().to_string());
    }
    let mut config = UciConfig::new(argv);
    config.name = format!("fake-{mode}");
    config.timeout = Duration::from_secs(2);
    config
}

/// Black's side in these tests: plays a fixed list of moves.
struct Scripted {
    moves: Vec<&'static str>,
    next: usize,
}

impl Scripted {
    fn new(moves: &[&'static str]) -> Self {
        Scripted {
            moves: moves.to_vec(),
            next: 0,
        }
    }
}

impl Player for Scripted {
    fn name(&self) -> &str {
        "scripted"
    }
    fn new_game(&mut self, _seed: u64) -> Result<(), PlayerError> {
        self.next = 0;
        Ok(())
    }
    fn choose_move(&mut self, _game: &GameView<'_>) -> Result<Move, PlayerError> {
        let mv = self.moves[self.next];
        self.next += 1;
        Ok(Move::parse_uci(mv).unwrap())
    }
}

fn play(white: &mut dyn Player, black: &mut dyn Player) -> yari_arena::GameRecord {
    let started = Instant::now();
    let (record, _) = play_game(
        white,
        black,
        &Opening::startpos(),
        0,
        &GameConfig::default(),
        0,
        7,
    );
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "game took too long"
    );
    record
}

#[test]
fn legal_moves_are_played_and_the_illegal_one_loses() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("engine.log");
    let mut engine = UciPlayer::start(fake("legal", Some(&log))).unwrap();
    assert_eq!(engine.engine().engine_name(), Some("FakeEngine 1.0"));
    let mut black = Scripted::new(&["g7g6", "g6g5", "b7b6", "b6b5"]);
    let record = play(&mut engine, &mut black);
    // a3a4 g7g6 a4a5 g6g5 a5a6 b7b6, then the engine's backward a6a5 is illegal.
    assert_eq!(
        record.moves,
        ["a3a4", "g7g6", "a4a5", "g6g5", "a5a6", "b7b6"]
    );
    assert_eq!(record.reason, Reason::IllegalMove);
    assert_eq!(record.winner, Some(Side::Black));
    assert_eq!(record.result, "0-1");
    assert!(record.detail.as_deref().unwrap().contains("a6a5"));
    drop(engine);
    let sent = std::fs::read_to_string(&log).unwrap();
    assert!(
        sent.contains("setoption name UCI_Variant value yarishogi"),
        "{sent}"
    );
    assert!(sent.contains("ucinewgame"));
    assert!(sent.contains(
        "position fen rnnkbbr/7/ppppppp/7/7/7/PPPPPPP/7/RBBKNNR[] w - - 0 1 moves a3a4 g7g6 a4a5 g6g5 a5a6 b7b6"
    ));
    assert!(sent.contains("go nodes 1000"));
    assert!(
        sent.trim_end().ends_with("quit"),
        "the engine is told to quit on drop"
    );
}

/// With a game clock the engine is sent both clocks, the arena times every answer, takes
/// the time from the mover's clock, adds the increment, and the engine that oversteps its clock
/// loses on time.
#[test]
fn the_arena_keeps_the_clock_and_a_slow_engine_loses_on_time() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("engine.log");
    // 150 ms an answer against 0.4 s + 0.05 s a move: 0.4 -> 0.3 -> 0.2 -> 0.1 left, then
    // the fourth answer oversteps.
    let mut engine = UciPlayer::start(fake("slow:150", Some(&log))).unwrap();
    let mut black = Scripted::new(&["g7g6", "g6g5", "b7b6", "b6b5"]);
    let config = GameConfig {
        clock: Some(TimeControl::parse("0.4+0.05").unwrap()),
        ..GameConfig::default()
    };
    let (record, _) = play_game(
        &mut engine,
        &mut black,
        &Opening::startpos(),
        0,
        &config,
        0,
        7,
    );
    assert_eq!(record.reason, Reason::Time, "{record:?}");
    assert_eq!(record.winner, Some(Side::Black));
    assert_eq!(record.moves.len(), 6, "{record:?}");
    assert!(record.detail.as_deref().unwrap().contains("ms left"));
    let (white_ms, black_ms) = record.move_ms_by_side();
    assert_eq!((white_ms.len(), black_ms.len()), (4, 3));
    assert!(white_ms.iter().all(|&ms| ms >= 150.0), "{white_ms:?}");
    assert!(black_ms.iter().all(|&ms| ms < 50.0), "{black_ms:?}");
    drop(engine);
    let sent = std::fs::read_to_string(&log).unwrap();
    let gos: Vec<Vec<u64>> = sent
        .lines()
        .filter(|l| l.starts_with("go "))
        .map(|l| {
            let w: Vec<&str> = l.split_whitespace().collect();
            assert_eq!(
                [w[1], w[3], w[5], w[7]],
                ["wtime", "btime", "winc", "binc"],
                "{l}"
            );
            [2, 4, 6, 8]
                .iter()
                .map(|&i| w[i].parse().unwrap())
                .collect()
        })
        .collect();
    assert_eq!(gos.len(), 4, "{sent}");
    assert_eq!(gos[0], [400, 400, 50, 50]);
    // White's clock lost 150 ms and gained 50 a move; Black's only gained (its moves take
    // next to no time).
    for (k, go) in gos.iter().enumerate().skip(1) {
        let white = 400 + 50 * k as u64 - 150 * k as u64;
        assert!((white - 40..=white).contains(&go[0]), "{go:?}");
        assert!(
            (400 + 50 * k as u64 - 5..=400 + 50 * k as u64).contains(&go[1]),
            "{go:?}"
        );
    }
    assert!(!sent.contains("go nodes"), "{sent}");
}

#[test]
fn time_controls_parse_and_bad_ones_are_named() {
    let tc = TimeControl::parse("10+0.1").unwrap();
    assert_eq!(tc.base, Duration::from_secs(10));
    assert_eq!(tc.increment, Duration::from_millis(100));
    assert_eq!(TimeControl::parse("60").unwrap().increment, Duration::ZERO);
    for (bad, named) in [
        ("x+1", "base"),
        ("10+y", "increment"),
        ("0+1", "above 0"),
        ("-5", "base"),
        ("1e9", "86400"),
    ] {
        let e = TimeControl::parse(bad).unwrap_err();
        assert!(e.contains(named), "{bad}: {e}");
    }
}

#[test]
fn illegal_first_move_loses() {
    let mut engine = UciPlayer::start(fake("illegal", None)).unwrap();
    let mut black = Scripted::new(&[]);
    let record = play(&mut engine, &mut black);
    assert!(record.moves.is_empty());
    assert_eq!(record.reason, Reason::IllegalMove);
    assert_eq!(record.winner, Some(Side::Black));
}

#[test]
fn unparseable_move_loses() {
    let mut white = Scripted::new(&["d3d4"]);
    let mut engine = UciPlayer::start(fake("garbage", None)).unwrap();
    let record = play(&mut white, &mut engine);
    assert_eq!(record.moves, ["d3d4"]);
    assert_eq!(record.reason, Reason::IllegalMove);
    assert_eq!(record.winner, Some(Side::White));
    assert!(record.detail.unwrap().contains("hello"));
}

#[test]
fn engine_dying_mid_game_loses() {
    let mut engine = UciPlayer::start(fake("die:2", None)).unwrap();
    let mut black = Scripted::new(&["g7g6", "g6g5", "b7b6"]);
    let record = play(&mut engine, &mut black);
    assert_eq!(record.moves, ["a3a4", "g7g6", "a4a5", "g6g5"]);
    assert_eq!(record.reason, Reason::PlayerFailure);
    assert_eq!(record.winner, Some(Side::Black));
    assert!(record.detail.unwrap().contains("died"));
}

#[test]
fn hanging_engine_times_out_and_loses() {
    let mut config = fake("hang", None);
    config.timeout = Duration::from_millis(500);
    let mut engine = UciPlayer::start(config).unwrap();
    let mut white = Scripted::new(&["d3d4"]);
    let started = Instant::now();
    let record = play(&mut white, &mut engine);
    assert!(started.elapsed() < Duration::from_secs(5));
    assert_eq!(record.reason, Reason::PlayerFailure);
    assert_eq!(record.winner, Some(Side::White));
    assert!(record.detail.unwrap().contains("timed out"));
}

/// An engine that talks without end but never answers is cut off at its deadline, just like
/// a silent one (the queued lines once kept the client reading past it, without bound).
#[test]
fn flooding_engine_times_out_and_loses() {
    let mut config = fake("flood", None);
    config.timeout = Duration::from_millis(500);
    let mut engine = UciPlayer::start(config).unwrap();
    let mut white = Scripted::new(&["d3d4"]);
    let started = Instant::now();
    let record = play(&mut white, &mut engine);
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(record.reason, Reason::PlayerFailure);
    assert_eq!(record.winner, Some(Side::White));
    assert!(record.detail.unwrap().contains("timed out"));
}

#[test]
fn flooding_engine_times_out_at_handshake() {
    let mut config = fake("floodstart", None);
    config.timeout = Duration::from_millis(300);
    let started = Instant::now();
    match UciPlayer::start(config) {
        Err(PlayerError::Timeout { waiting_for, .. }) => assert_eq!(waiting_for, "uciok"),
        other => panic!("expected a timeout, got {other:?}"),
    }
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
}

#[test]
fn engine_without_the_variant_is_refused() {
    match UciPlayer::start(fake("novariant", None)) {
        Err(PlayerError::UnsupportedVariant) => {}
        other => panic!("expected UnsupportedVariant, got {other:?}"),
    }
}

#[test]
fn silent_engine_times_out_at_handshake() {
    let mut config = fake("slowstart", None);
    config.timeout = Duration::from_millis(300);
    match UciPlayer::start(config) {
        Err(PlayerError::Timeout { waiting_for, .. }) => assert_eq!(waiting_for, "uciok"),
        other => panic!("expected a timeout, got {other:?}"),
    }
}

#[test]
fn missing_program_is_a_spawn_error() {
    let config = UciConfig::new(vec!["/nonexistent/engine-binary".into()]);
    assert!(matches!(
        UciPlayer::start(config),
        Err(PlayerError::Spawn { .. })
    ));
}

#[test]
fn a_match_with_a_dying_engine_finishes_and_replaces_the_engine() {
    // Every game the engine dies after one move (or sends an illegal one): the match must
    // still play all games, each a loss for the engine, starting a fresh process each time.
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/fake_uci.sh");
    let spec = format!("uci[timeout=2,name=fake]:bash '{}' die:1", script.display());
    let engine = PlayerSpec::parse(&spec).unwrap();
    assert_eq!(engine.name(), "fake");
    let random = PlayerSpec::parse("random").unwrap();
    let config = MatchConfig {
        games: 4,
        concurrency: 2,
        ..MatchConfig::default()
    };
    let result = run_match(&engine, &random, &config).unwrap();
    assert_eq!(result.wdl.games(), 4);
    assert_eq!(result.wdl.losses, 4);
    for g in &result.games {
        assert!(
            matches!(g.reason, Reason::PlayerFailure | Reason::IllegalMove),
            "{g:?}"
        );
    }
}

#[test]
fn a_match_whose_engine_cannot_start_is_an_error() {
    let engine = PlayerSpec::parse("uci:/nonexistent/engine-binary").unwrap();
    let random = PlayerSpec::parse("random").unwrap();
    let config = MatchConfig {
        games: 2,
        concurrency: 1,
        ..MatchConfig::default()
    };
    match run_match(&engine, &random, &config) {
        Err(ArenaError::Build { player, .. }) => assert_eq!(player, engine.name()),
        other => panic!("expected a build error, got {other:?}"),
    }
}

/// An engine whose install is missing is named with the command that installs it, not as an
/// engine that died during the handshake; `fsf` knows its own install command.
#[test]
fn a_missing_install_is_named_with_its_fix() {
    let mut config = fake("legal", None);
    config.requires = Some((
        PathBuf::from("/nonexistent/yari-test/uci.js"),
        "npm install --prefix .fsf fairy-stockfish-nnue.wasm".into(),
    ));
    let Err(err) = UciPlayer::start(config.clone()) else {
        panic!("started without its install");
    };
    assert!(matches!(err, PlayerError::NotInstalled { .. }), "{err:?}");
    let text = err.to_string();
    assert!(
        text.contains("/nonexistent/yari-test/uci.js does not exist"),
        "{text}"
    );
    assert!(
        text.contains("`npm install --prefix .fsf fairy-stockfish-nnue.wasm`"),
        "{text}"
    );
    // With the file there, the same engine starts.
    config.requires = Some((config_script(), "unused".into()));
    assert!(UciPlayer::start(config).is_ok());

    let PlayerSpec::Uci(fsf) = PlayerSpec::parse("fsf[nodes=100]").unwrap() else {
        panic!("fsf is a UCI engine");
    };
    let (file, install) = fsf.requires.expect("fsf checks its install");
    assert!(file.ends_with("uci.js"), "{}", file.display());
    assert_eq!(install, yari_arena::spec::FSF_INSTALL);
}

fn config_script() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/fake_uci.sh")
}
