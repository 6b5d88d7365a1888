//! MCTS players from the self-play search (only with `--features search`).
#![cfg(feature = "search")]

use yari_arena::{run_match, GameConfig, MatchConfig, PlayerSpec, Reason};

#[test]
fn uniform_mcts_plays_a_match() {
    let mcts = PlayerSpec::parse("mcts:32").unwrap();
    let random = PlayerSpec::parse("random").unwrap();
    let config = MatchConfig {
        games: 2,
        concurrency: 2,
        game: GameConfig { ply_cap: Some(80) },
        ..MatchConfig::default()
    };
    let r = run_match(&mcts, &random, &config).unwrap();
    assert_eq!(r.wdl.games(), 2);
    for g in &r.games {
        assert!(g.reason.is_rules() || g.reason == Reason::PlyCap, "{g:?}");
    }
}

#[test]
fn checkpoint_player_plays_a_match() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("tiny.ckpt");
    let config = yari_model::NetConfig::new(1, 8);
    let device = yari_model::default_device();
    let net = config.init(&device);
    yari_model::checkpoint::save(&path, &net, &yari_model::CheckpointMeta::new(config)).unwrap();
    let spec = format!("model:{}:8", path.display());
    let model = PlayerSpec::parse(&spec).unwrap();
    let random = PlayerSpec::parse("random").unwrap();
    let config = MatchConfig {
        games: 2,
        concurrency: 2,
        game: GameConfig { ply_cap: Some(30) },
        ..MatchConfig::default()
    };
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
