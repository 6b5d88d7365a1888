//! `scripts/ab.sh`, the A/B protocol the defaults are decided by, end to end on the smoke
//! config: two seeds a side, every run trained and exported, the pairs' matches played and
//! pooled, a second call resuming without training again, and bad settings refused.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// A scratch directory and the A/B output directory inside it (not yet made).
fn scratch() -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("ab");
    (tmp, out)
}

fn smoke_config() -> String {
    root()
        .join("configs/smoke.toml")
        .to_str()
        .unwrap()
        .to_string()
}

/// `scripts/ab.sh ARGS` with this build's `yari`, tiny matches and `random` as the outside rung.
fn ab(out: &Path, seeds: &str, args: &[&str]) -> Output {
    Command::new("bash")
        .arg(root().join("scripts/ab.sh"))
        .args(args)
        .env("YARI", env!("CARGO_BIN_EXE_yari"))
        .env("AB_OUT", out)
        .env("AB_SEEDS", seeds)
        .env("AB_GAMES", "2")
        .env("AB_SIMS", "4")
        .env("AB_FSF", "random")
        .env("AB_FSF_GAMES", "2")
        .output()
        .unwrap()
}

/// The integer `key` of section `[section]` of a derived config.
fn toml_int(path: &Path, section: &str, key: &str) -> i64 {
    let text = std::fs::read_to_string(path).unwrap();
    let table: toml::Table = toml::from_str(&text).unwrap();
    table[section][key]
        .as_integer()
        .unwrap_or_else(|| panic!("no integer {section}.{key} in {}:\n{text}", path.display()))
}

fn json_file(path: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

#[test]
fn two_seeds_a_side_are_trained_paired_and_pooled() {
    let (tmp, out) = scratch();
    let smoke = smoke_config();
    let smoke = smoke.as_str();
    // Side B: the smoke config with another net width, so its runs differ from A's.
    let b_cfg = tmp.path().join("wide.toml");
    let mut b_text = std::fs::read_to_string(smoke).unwrap();
    b_text = b_text.replace("channels = 8", "channels = 12");
    std::fs::write(&b_cfg, b_text).unwrap();
    // 0.05 minutes a run: the budget is spent after the first generation.
    let args = [smoke, b_cfg.to_str().unwrap(), "0.05"];
    let first = ab(&out, "2", &args);
    let log = String::from_utf8_lossy(&first.stdout).to_string()
        + &String::from_utf8_lossy(&first.stderr);
    assert!(first.status.success(), "ab.sh failed:\n{log}");

    // Run 0 keeps the config's seeds (1 in the smoke config); run 1 moves both on by one.
    for side in ["a", "b"] {
        for (id, seed) in [(side.to_string(), 1), (format!("{side}1"), 2)] {
            let cfg = out.join(format!("{id}.toml"));
            assert_eq!(toml_int(&cfg, "selfplay", "seed"), seed, "{id}");
            assert_eq!(toml_int(&cfg, "train", "seed"), seed, "{id}");
            assert!(
                out.join(format!("{id}.yari")).is_file(),
                "{id} not exported:\n{log}"
            );
        }
    }
    // Each B run played its own A run, from its own openings.
    let mut openings = Vec::new();
    for pair in ["b-vs-a", "b1-vs-a1"] {
        let summary = json_file(&out.join(format!("{pair}.json")));
        assert_eq!(summary["games"], 2, "{pair}: {summary}");
        let games = std::fs::read_to_string(out.join(format!("{pair}.games.jsonl"))).unwrap();
        let games: Vec<serde_json::Value> = games
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(games.len(), 2, "{pair}: {games:?}");
        let (side, base) = pair.split_once("-vs-").unwrap();
        let mut pair_openings = Vec::new();
        for game in &games {
            let players = [&game["white"], &game["black"]].map(|p| p.as_str().unwrap());
            for id in [side, base] {
                let net = format!("/{id}.yari:4");
                assert!(players.iter().any(|p| p.ends_with(&net)), "{pair}: {game}");
            }
            // The opening is the game's first plies (`opening_plies`, random from the match seed).
            let plies = game["opening_plies"].as_u64().unwrap() as usize;
            pair_openings.push(game["moves"].as_array().unwrap()[..plies].to_vec());
        }
        openings.push(pair_openings);
    }
    assert_ne!(
        openings[0], openings[1],
        "both pairs played the same openings"
    );
    let table = std::fs::read_to_string(out.join("result.md")).unwrap();
    for row in [
        "| A1 | `",
        "| B1 | `",
        "| B against A | ",
        "| B1 against A1 | ",
        "| **B against A, pooled** | 2 of 2 pairs, ",
        " of 4: ",
        "(t, 1 df)",
        "| **A against `random`, pooled** | 2 runs, ",
        "| **B against `random`, pooled** | 2 runs, ",
    ] {
        assert!(table.contains(row), "{row:?} not in\n{table}");
    }
    assert!(!table.contains("not played"), "{table}");

    // Run again: everything is on disk, so nothing is trained or played and the table is
    // printed again as it was.
    let again = ab(&out, "2", &args);
    assert!(again.status.success());
    let again_log = String::from_utf8_lossy(&again.stdout);
    assert!(!again_log.contains("] run "), "{again_log}");
    assert!(!again_log.contains("] match "), "{again_log}");
    assert_eq!(
        std::fs::read_to_string(out.join("result.md")).unwrap(),
        table
    );
}

#[test]
fn a_bad_seed_count_is_refused_before_any_run() {
    let (_tmp, out) = scratch();
    let smoke = smoke_config();
    let smoke = smoke.as_str();
    for seeds in ["0", "two", "-1"] {
        let o = ab(&out, seeds, &[smoke, smoke, "0.05"]);
        assert_eq!(o.status.code(), Some(2), "AB_SEEDS={seeds}");
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(
            err.contains("AB_SEEDS must be a whole number >= 1"),
            "{err}"
        );
        assert!(!out.exists(), "AB_SEEDS={seeds} made {}", out.display());
    }
}
