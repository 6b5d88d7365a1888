//! A real match against Fairy-Stockfish's npm build. It needs Node.js and the build
//! (`npm install --prefix .fsf fairy-stockfish-nnue.wasm` at the workspace root, or
//! `YARI_FSF_JS` pointing at its `uci.js`), so it is ignored by a plain `cargo test`;
//! `.ci/run` installs the build and runs it with `-- --ignored`, where a missing engine
//! fails the test instead of passing it unseen.

use std::path::PathBuf;

use yari_arena::{run_match, GameConfig, MatchConfig, PlayerSpec, Reason, UciConfig};

fn fsf_js() -> PathBuf {
    let js = std::env::var("YARI_FSF_JS")
        .map(PathBuf::from)
        .unwrap_or_else(|_| {
            PathBuf::from(env!("CARGO_MANIFEST_DIR"))
                .join("../..")
                .join(yari_arena::spec::DEFAULT_FSF_JS)
        });
    let node = std::process::Command::new("node")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    assert!(
        node,
        "node is not installed (needed for Fairy-Stockfish's npm build)"
    );
    assert!(
        js.exists(),
        "{} not found: npm install --prefix .fsf fairy-stockfish-nnue.wasm",
        js.display()
    );
    js
}

#[test]
#[ignore = "needs Node.js and Fairy-Stockfish's npm build (npm install --prefix .fsf fairy-stockfish-nnue.wasm); .ci/run installs it and runs this"]
fn alphabeta_vs_fairy_stockfish() {
    let js = fsf_js();
    let mut config = UciConfig::new(vec![
        "node".into(),
        "--no-experimental-fetch".into(),
        js.display().to_string(),
    ]);
    config.name = "fsf[nodes=200]".into();
    config.limit = yari_arena::SearchLimit::Nodes(200);
    let fsf = PlayerSpec::Uci(config);
    let ab = PlayerSpec::parse("alphabeta:1").unwrap();
    let result = run_match(
        &ab,
        &fsf,
        &MatchConfig {
            games: 2,
            concurrency: 2,
            game: GameConfig {
                ply_cap: Some(200),
                clock: None,
            },
            ..MatchConfig::default()
        },
    )
    .unwrap();
    assert_eq!(result.wdl.games(), 2);
    for g in &result.games {
        // Every move was checked by the arena: no forfeits from a sound engine.
        assert!(
            !matches!(g.reason, Reason::IllegalMove | Reason::PlayerFailure),
            "{g:?}"
        );
    }
}
