//! `yari check` on an intact run directory and on damaged copies of it.

use std::io::Write;
use std::path::Path;
use yari_model::Backend;

use yari_loop::{check_run, Loop, Phase, RunConfig, RunDir, Severity};

fn quiet(_: &str) {}

fn finished_generation(root: &Path) -> RunDir {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../configs/smoke.toml");
    let config = RunConfig::load(Some(&path)).unwrap();
    std::fs::create_dir_all(root).unwrap();
    std::fs::copy(&path, root.join("config.toml")).unwrap();
    let mut run = Loop::open(RunDir::new(root), config, Backend::cpu(), quiet).unwrap();
    while run.state().generation == 1 {
        run.step().unwrap();
    }
    assert_eq!(run.state().phase, Phase::Selfplay);
    run.dir().clone()
}

#[test]
fn check_tells_kill_leftovers_from_damage() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = finished_generation(tmp.path());
    let report = check_run(dir.root());
    assert!(report.findings.is_empty(), "{:?}", report.findings);
    assert_eq!(report.games, 8);
    assert!(report.shards >= 1 && report.checkpoints >= 3 && report.logs >= 4);

    // What a kill leaves: a torn last line and a temporary file. Warnings, not damage.
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(dir.paths().ratings_file())
        .unwrap();
    f.write_all(b"{\"kind\":\"rating\",\"generation\":2,\"pla")
        .unwrap();
    drop(f);
    std::fs::write(dir.paths().root().join(".state.json.123-0.tmp"), b"{").unwrap();
    let report = check_run(dir.root());
    assert!(!report.is_damaged(), "{:?}", report.findings);
    assert_eq!(report.findings.len(), 2, "{:?}", report.findings);
    assert!(report
        .findings
        .iter()
        .all(|f| f.severity == Severity::Warning));

    // Real damage: a flipped byte in a shard, a garbage line in the ledger, a missing network.
    let shard = yari_selfplay::list_shards(dir.paths().generation_games_dir(1)).unwrap()[0].clone();
    let mut bytes = std::fs::read(&shard).unwrap();
    bytes[30] ^= 1;
    std::fs::write(&shard, bytes).unwrap();
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(dir.paths().ledger_file())
        .unwrap();
    f.write_all(b"garbage\n").unwrap();
    drop(f);
    std::fs::remove_file(dir.paths().model_file(0)).unwrap();
    let report = check_run(dir.root());
    assert!(report.is_damaged());
    let damaged: Vec<_> = report
        .findings
        .iter()
        .filter(|f| f.severity == Severity::Damage)
        .map(|f| f.path.clone())
        .collect();
    assert!(damaged.contains(&shard), "{damaged:?}");
    assert!(damaged.contains(&dir.paths().ledger_file()), "{damaged:?}");
    assert!(damaged.contains(&dir.paths().state_file()), "{damaged:?}");
    assert!(report.summary().contains("damaged"), "{}", report.summary());
}

#[test]
fn check_refuses_a_directory_that_is_not_a_run() {
    let tmp = tempfile::tempdir().unwrap();
    assert!(check_run(tmp.path()).is_damaged());
    assert!(check_run(&tmp.path().join("missing")).is_damaged());
}

/// A kill between the write of `summary.json` and that of `state.json` (the end of a
/// generation's rating phase) is not damage: the resumed run rewrites the summary. The same
/// summary ahead of a state at an earlier phase is.
#[test]
fn a_kill_after_the_summary_is_written_is_not_damage() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = finished_generation(tmp.path());
    let finished = dir.load_state().unwrap().unwrap();
    assert_eq!(finished.generation, 2);
    let killed = yari_loop::RunState {
        generation: 1,
        phase: Phase::Rate,
        ..finished.clone()
    };
    dir.save_state(&killed).unwrap();
    let report = check_run(dir.root());
    assert!(report.findings.is_empty(), "{:?}", report.findings);
    let behind = yari_loop::RunState {
        generation: 1,
        phase: Phase::Gate,
        ..finished
    };
    dir.save_state(&behind).unwrap();
    let report = check_run(dir.root());
    assert!(report.is_damaged(), "{:?}", report.findings);
    assert!(
        report
            .findings
            .iter()
            .any(|f| f.what.contains("state.json is only at generation 1")),
        "{:?}",
        report.findings
    );
}

/// Shard names on a directory or a pipe are damage (their games are missing), and a link under
/// `games/` is reported, never followed (`games/root -> /` once walked the whole file system).
#[test]
fn odd_files_under_games_are_reported_and_links_not_followed() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = finished_generation(tmp.path());
    let gen1 = dir.paths().generation_games_dir(1);
    std::fs::create_dir(gen1.join("a-directory.yshard")).unwrap();
    let fifo = gen1.join("a-pipe.yshard");
    assert!(std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap()
        .success());
    std::os::unix::fs::symlink("/", dir.paths().games_dir().join("root")).unwrap();
    let start = std::time::Instant::now();
    let report = check_run(dir.root());
    assert!(
        start.elapsed() < std::time::Duration::from_secs(30),
        "walked through the link"
    );
    let damaged: Vec<_> = report
        .findings
        .iter()
        .filter(|f| f.severity == Severity::Damage)
        .map(|f| f.path.clone())
        .collect();
    assert!(
        damaged.contains(&gen1.join("a-directory.yshard")),
        "{:?}",
        report.findings
    );
    assert!(damaged.contains(&fifo), "{:?}", report.findings);
    assert!(
        report
            .findings
            .iter()
            .any(|f| f.path.ends_with("games/root") && f.severity == Severity::Warning),
        "{:?}",
        report.findings
    );
    assert_eq!(report.games, 8, "the real shards are all read");
}
