//! Many machines on one: `yari learn` and `yari worker` processes sharing a run directory on
//! the smoke config. A worker's games reach the learner, corrupt shards are refused, a
//! SIGTERM loses nothing but the games in flight, and the end of the run stops the workers.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

fn yari() -> Command {
    Command::new(env!("CARGO_BIN_EXE_yari"))
}

fn smoke_config() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../configs/smoke.toml")
}

fn json(path: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn init(dir: &Path) {
    init_with(dir, &smoke_config());
}

fn init_with(dir: &Path, config: &Path) {
    let out = yari()
        .args(["learn", "--init", "--config"])
        .arg(config)
        .arg("--run-dir")
        .arg(dir)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn worker(dir: &Path, tag: &str, extra: &[&str]) -> Child {
    yari()
        .args(["worker", "--tag", tag, "--run-dir"])
        .arg(dir)
        .args(extra)
        .stderr(Stdio::null())
        .spawn()
        .unwrap()
}

/// Games in the shards of `dir` whose names start with `prefix`.
fn games_in(dir: &Path, prefix: &str) -> usize {
    if !dir.exists() {
        return 0;
    }
    yari_selfplay::list_shards(dir)
        .unwrap()
        .iter()
        .filter(|p| p.file_name().unwrap().to_string_lossy().starts_with(prefix))
        .map(|p| yari_selfplay::read_shard(p).unwrap().len())
        .sum()
}

fn status_of(dir: &Path, tag: &str) -> serde_json::Value {
    status_of_any(dir, tag).expect("a status file")
}

fn wait_with_deadline(child: &mut Child, limit: Duration) -> std::process::ExitStatus {
    let start = Instant::now();
    loop {
        if let Some(s) = child.try_wait().unwrap() {
            return s;
        }
        if start.elapsed() > limit {
            child.kill().ok();
            panic!("process did not exit within {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn a_worker_needs_a_run_directory() {
    let tmp = tempfile::tempdir().unwrap();
    let out = yari()
        .args(["worker", "--run-dir"])
        .arg(tmp.path().join("nothing"))
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("not a run directory"), "{err}");
}

#[test]
fn init_again_leaves_a_running_learners_state_alone() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("run");
    init(&dir);
    let before = std::fs::read(dir.join("state.json")).unwrap();
    std::thread::sleep(Duration::from_millis(20));
    init(&dir);
    assert_eq!(std::fs::read(dir.join("state.json")).unwrap(), before);
}

#[test]
fn sigterm_writes_the_finished_games_and_drops_those_in_flight() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("run");
    init(&dir);
    // Big batches, so that the signal lands mid-batch.
    let mut child = worker(&dir, "t", &["--batch-games", "1000"]);
    let start = Instant::now();
    while games_in(&dir.join("incoming"), "t-") == 0 {
        assert!(
            start.elapsed() < Duration::from_secs(120),
            "no shard written"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let status = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let exit = wait_with_deadline(&mut child, Duration::from_secs(60));
    assert!(exit.success(), "a clean exit after SIGTERM, got {exit:?}");
    let s = status_of(&dir, "t");
    assert_eq!(s["state"], "stopped");
    let written = games_in(&dir.join("incoming"), "t-");
    assert_eq!(s["games"].as_u64().unwrap() as usize, written);
    assert!(written < 1000, "the batch was cut short");
    let leftovers: Vec<_> = std::fs::read_dir(dir.join("incoming"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with('.'))
        .collect();
    assert!(leftovers.is_empty(), "temporary files left: {leftovers:?}");
}

#[test]
fn learner_trains_on_workers_games_and_refuses_corrupt_shards() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("run");
    init(&dir);
    // One batch of a first worker, before the learner starts: its games wait in incoming/.
    let mut first = worker(&dir, "a", &["--max-batches", "1"]);
    assert!(wait_with_deadline(&mut first, Duration::from_secs(300)).success());
    assert_eq!(games_in(&dir.join("incoming"), "a-"), 8);
    // A corrupt copy of one of its shards (a flipped byte) and a truncated one.
    let shard = yari_selfplay::list_shards(dir.join("incoming")).unwrap()[0].clone();
    let mut bytes = std::fs::read(&shard).unwrap();
    let middle = bytes.len() / 2;
    bytes[middle] ^= 0x40;
    std::fs::write(dir.join("incoming/bad-b00000-00000.yshard"), &bytes).unwrap();
    let bytes = std::fs::read(&shard).unwrap();
    std::fs::write(
        dir.join("incoming/cut-b00000-00000.yshard"),
        &bytes[..bytes.len() - 9],
    )
    .unwrap();

    let mut learner = yari()
        .args(["learn", "--run-dir"])
        .arg(&dir)
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Read as it comes, so that a full pipe never stalls the learner.
    let mut stderr = learner.stderr.take().unwrap();
    let reader = std::thread::spawn(move || {
        use std::io::Read;
        let mut s = String::new();
        stderr.read_to_string(&mut s).unwrap();
        s
    });
    let mut second = worker(&dir, "b", &[]);
    let exit = wait_with_deadline(&mut learner, Duration::from_secs(600));
    let log = reader.join().unwrap();
    assert!(exit.success(), "learner failed:\n{log}");
    assert!(log.contains("budget spent after generation 2"), "{log}");
    assert!(
        log.contains("skipping shard") && log.contains("checksum"),
        "{log}"
    );
    assert!(log.contains("truncated"), "{log}");
    // The worker leaves on its own once the learner marks the run finished.
    assert!(wait_with_deadline(&mut second, Duration::from_secs(120)).success());
    assert_eq!(status_of(&dir, "b")["state"], "finished");

    let rejected: Vec<_> = std::fs::read_dir(dir.join("rejected"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(rejected.len(), 2, "{rejected:?}");
    let summary = json(&dir.join("summary.json"));
    let gens = summary.as_array().unwrap();
    assert_eq!(gens.len(), 2);
    for g in gens {
        let taken: u64 = g["workers"]
            .as_object()
            .unwrap()
            .values()
            .map(|v| v.as_u64().unwrap())
            .sum();
        assert_eq!(g["games"].as_u64().unwrap(), taken);
        assert!(
            taken >= 8,
            "a generation waits for games_per_generation games"
        );
        assert!(g["gate_score"].is_number(), "every generation is gated");
    }
    // Generation 1 took the first worker's waiting games; every game in games/ came from a
    // worker, none from the corrupt shards.
    assert_eq!(games_in(&dir.join("games/gen-0001"), "a-"), 8);
    let in_games: usize = (1..=2)
        .map(|g| games_in(&dir.join(format!("games/gen-{g:04}")), ""))
        .sum();
    let from_workers: usize = (1..=2)
        .map(|g| {
            let d = dir.join(format!("games/gen-{g:04}"));
            games_in(&d, "a-") + games_in(&d, "b-")
        })
        .sum();
    assert_eq!(in_games, from_workers);
    // Every game worker b reported is in the run: taken, or still waiting in incoming/.
    let b_games = (1..=2)
        .map(|g| games_in(&dir.join(format!("games/gen-{g:04}")), "b-"))
        .sum::<usize>()
        + games_in(&dir.join("incoming"), "b-");
    assert_eq!(
        status_of(&dir, "b")["games"].as_u64().unwrap() as usize,
        b_games
    );
    assert!(dir.join("finished").exists());
}

/// A worker whose learner is gone does not fill the disk: once `incoming/` holds four
/// generations of untaken games (32 in the smoke config) it waits, says why, and writes nothing.
#[test]
fn a_worker_waits_while_its_games_are_not_taken() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("run");
    init(&dir);
    let incoming = dir.join("incoming");
    std::fs::create_dir_all(&incoming).unwrap();
    for i in 0..32 {
        std::fs::write(incoming.join(format!("old-b00000-{i:05}.yshard")), b"x").unwrap();
    }
    let mut child = yari()
        .args(["worker", "--tag", "w", "--batch-games", "1", "--run-dir"])
        .arg(&dir)
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let start = Instant::now();
    while status_of_any(&dir, "w").is_none_or(|s| s["state"] != "waiting") {
        assert!(start.elapsed() < Duration::from_secs(60), "never waited");
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_secs(2));
    assert!(Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap()
        .success());
    let exit = wait_with_deadline(&mut child, Duration::from_secs(60));
    let mut log = String::new();
    use std::io::Read;
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut log)
        .unwrap();
    assert!(exit.success(), "{log}");
    assert!(
        log.contains("32 games in") && log.contains("waiting for the learner"),
        "{log}"
    );
    assert_eq!(games_in(&incoming, "w-"), 0, "{log}");
    assert_eq!(status_of(&dir, "w")["games"], 0);
}

fn status_of_any(dir: &Path, tag: &str) -> Option<serde_json::Value> {
    let entry = std::fs::read_dir(dir.join("workers"))
        .ok()?
        .map(|e| e.unwrap().path())
        .find(|p| {
            p.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with(&format!("{tag}-"))
        })?;
    serde_json::from_str(&std::fs::read_to_string(entry).ok()?).ok()
}

/// A worker plays the progressive simulation budget at the run's progress, as `yari run`'s
/// own self-play does: at the start of a run with `simulation_ramp = 0.5` the counts are
/// halved (8/4 in the smoke config: 4/2).
#[test]
fn a_worker_follows_the_simulation_ramp() {
    let tmp = tempfile::tempdir().unwrap();
    let config = tmp.path().join("ramp.toml");
    let smoke = std::fs::read_to_string(smoke_config()).unwrap();
    let ramped = smoke.replacen("[selfplay]\n", "[selfplay]\nsimulation_ramp = 0.5\n", 1);
    assert_ne!(ramped, smoke, "the smoke config has a [selfplay] table");
    std::fs::write(&config, ramped).unwrap();
    let dir = tmp.path().join("run");
    init_with(&dir, &config);
    let out = yari()
        .args([
            "worker",
            "--tag",
            "r",
            "--batch-games",
            "1",
            "--max-batches",
            "1",
        ])
        .arg("--run-dir")
        .arg(&dir)
        .output()
        .unwrap();
    let log = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{log}");
    assert!(
        log.contains("progressive budget at 0% of the run: 4/2 simulations"),
        "{log}"
    );
    assert_eq!(games_in(&dir.join("incoming"), "r-"), 1, "{log}");
    // The status names the machine, also when no HOSTNAME is exported.
    let host = status_of(&dir, "r")["host"].as_str().unwrap().to_string();
    assert!(!host.is_empty(), "workers/*.json has an empty host");
}
