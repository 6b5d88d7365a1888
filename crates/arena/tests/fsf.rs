//! A real match against Fairy-Stockfish's npm build, when it is installed
//! (`npm install --prefix .fsf fairy-stockfish-nnue.wasm` at the workspace root, or
//! `YARI_FSF_JS` pointing at its `uci.js`). Skipped, with a note, when it is not.

use std::path::PathBuf;

use yari_arena::{run_match, GameConfig, MatchConfig, PlayerSpec, Reason, UciConfig};

fn fsf_js() -> Option<PathBuf> {
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
    (node && js.exists()).then_some(js)
}

#[test]
fn alphabeta_vs_fairy_stockfish() {
    let Some(js) = fsf_js() else {
        eprintln!("skipped: Fairy-Stockfish npm build not installed");
        return;
    };
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
            game: GameConfig { ply_cap: Some(200) },
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
