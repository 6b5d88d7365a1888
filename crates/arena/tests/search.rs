//! MCTS players from the self-play search (only with `--features search`).
#![cfg(feature = "search")]

use yari_arena::{run_match, GameConfig, MatchConfig, PlayerSpec, Reason};

/// Two games played side by side, stopped at `ply_cap`.
fn two_games(ply_cap: usize) -> MatchConfig {
    MatchConfig {
        games: 2,
        concurrency: 2,
        game: GameConfig {
            ply_cap: Some(ply_cap),
            clock: None,
        },
        ..MatchConfig::default()
    }
}

#[test]
fn uniform_mcts_plays_a_match() {
    let mcts = PlayerSpec::parse("mcts:32").unwrap();
    let random = PlayerSpec::parse("random").unwrap();
    let config = two_games(80);
    let r = run_match(&mcts, &random, &config).unwrap();
    assert_eq!(r.wdl.games(), 2);
    for g in &r.games {
        assert!(g.reason.is_rules() || g.reason == Reason::PlyCap, "{g:?}");
    }
}

/// A freshly initialised 1x8 network saved under `dir`.
fn tiny_checkpoint(dir: &std::path::Path) -> std::path::PathBuf {
    let path = dir.join("tiny.ckpt");
    let config = yari_model::NetConfig::new(1, 8);
    let net = config.init(&yari_model::default_device());
    yari_model::checkpoint::save(&path, &net, &yari_model::CheckpointMeta::new(config)).unwrap();
    path
}

#[test]
fn checkpoint_player_plays_a_match() {
    let dir = tempfile::tempdir().unwrap();
    let path = tiny_checkpoint(dir.path());
    let spec = format!("model:{}:8", path.display());
    let model = PlayerSpec::parse(&spec).unwrap();
    let random = PlayerSpec::parse("random").unwrap();
    let config = two_games(30);
    let factory = model.factory().unwrap();
    let r = run_match(factory.as_ref(), &random, &config).unwrap();
    assert_eq!(r.wdl.games(), 2);
    assert_eq!(r.games[0].white, spec);
    for g in &r.games {
        assert!(g.reason.is_rules() || g.reason == Reason::PlyCap, "{g:?}");
    }
}

#[test]
fn missing_checkpoint_is_a_build_error() {
    let model = PlayerSpec::parse("model:/nonexistent/x.ckpt:8").unwrap();
    let random = PlayerSpec::parse("random").unwrap();
    let config = MatchConfig {
        games: 2,
        concurrency: 1,
        ..MatchConfig::default()
    };
    assert!(matches!(
        run_match(&model, &random, &config),
        Err(yari_arena::ArenaError::Build { .. })
    ));
    assert!(matches!(
        model.factory(),
        Err(yari_arena::ArenaError::Build { .. })
    ));
}

#[test]
fn tree_reusing_player_follows_the_game_and_recovers_from_a_jump() {
    use yari_arena::GameView;
    use yari_rules::Position;

    let dir = tempfile::tempdir().unwrap();
    let path = tiny_checkpoint(dir.path());
    let spec = PlayerSpec::parse(&format!("model[reuse=1]:{}:16", path.display())).unwrap();
    let factory = spec.factory().unwrap();

    // A whole match: every move the reused trees suggest must be legal in the real game.
    let random = PlayerSpec::parse("random").unwrap();
    let match_config = two_games(40);
    let r = run_match(factory.as_ref(), &random, &match_config).unwrap();
    for g in &r.games {
        assert!(g.reason.is_rules() || g.reason == Reason::PlyCap, "{g:?}");
    }

    // Positions fed out of order (the game jumps, or goes back) get a fresh search.
    let mut player = factory.build().unwrap();
    player.new_game(1).unwrap();
    let start_fen = Position::startpos().fen();
    let mut pos = Position::startpos();
    let mut moves = Vec::new();
    for _ in 0..4 {
        let view = GameView {
            start_fen: &start_fen,
            moves: &moves,
            position: &pos,
            clock: None,
        };
        let mv = player.choose_move(&view).unwrap();
        assert!(pos.is_legal(mv), "{mv} in {}", pos.fen());
        pos.play(mv);
        moves.push(mv);
    }
    let earlier = Position::startpos();
    let view = GameView {
        start_fen: &start_fen,
        moves: &[],
        position: &earlier,
        clock: None,
    };
    let mv = player.choose_move(&view).unwrap();
    assert!(earlier.is_legal(mv));
}
