//! The smoke config end to end: a complete two-generation run (self-play, train, gate,
//! rate), the files it leaves, a killed-and-resumed run, export of its best network, and
//! config validation.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn yari() -> Command {
    Command::new(env!("CARGO_BIN_EXE_yari"))
}

fn smoke_config() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../configs/smoke.toml")
}

/// Runs the smoke config in `dir` to its end; returns the log's one-line generation
/// summaries (what follows "== generation ").
fn run_to_end(dir: &Path) -> Vec<String> {
    let out = yari()
        .args(["run", "--config"])
        .arg(smoke_config())
        .arg("--run-dir")
        .arg(dir)
        .output()
        .unwrap();
    let log = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "yari run failed:\n{log}");
    assert!(log.contains("budget spent after generation 2"), "{log}");
    // Not on a terminal: one summary line per generation says where the run is, what the
    // generation did and what the ladder reads, each rung with its interval.
    log.lines()
        .filter_map(|l| {
            l.split_once("UTC] == generation ")
                .map(|(_, rest)| rest.to_string())
        })
        .collect()
}

/// A fresh run's summary lines: one per generation, each with the budget, the generation's
/// work, the gate and every rung of the ladder with its interval.
fn check_summaries(summaries: &[String]) {
    assert_eq!(summaries.len(), 2, "{summaries:?}");
    for (g, line) in (1..).zip(summaries) {
        assert!(line.starts_with(&format!("{g} of 2, 0:")), "{line}");
        for field in [
            "ETA ",
            " games, ",
            " positions | loss ",
            "lr ",
            " | gate ",
            "best models/gen-",
        ] {
            assert!(line.contains(field), "{field:?} not in {line:?}");
        }
        for rung in ["random ", "alphabeta:1 "] {
            let at = line
                .find(&format!("| {rung}"))
                .or_else(|| line.find(&format!(", {rung}")));
            assert!(at.is_some(), "no rung {rung:?} in {line:?}");
        }
        assert!(line.contains("% ["), "a rung's 95% interval in {line:?}");
    }
}

fn json(path: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// Everything a finished smoke run must have left behind.
fn check_run(dir: &Path) {
    let out = yari().arg("check").arg(dir).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "yari check failed:\n{text}");
    assert!(text.contains("intact"), "{text}");
    let state = json(&dir.join("state.json"));
    assert_eq!(state["generation"], 3);
    let best = dir.join(state["best"].as_str().unwrap());
    yari_model::Checkpoint::read(&best).expect("best network loads");
    for g in 0..=2 {
        let model = dir.join(format!("models/gen-{g:04}.yari"));
        let ckpt = yari_model::Checkpoint::read(&model).expect("every generation's network loads");
        assert_eq!(ckpt.meta.generation, g);
    }
    for g in 1..=2 {
        let shards = yari_selfplay::list_shards(dir.join(format!("games/gen-{g:04}"))).unwrap();
        let games: usize = shards
            .iter()
            .map(|s| yari_selfplay::read_shard(s).unwrap().len())
            .sum();
        assert_eq!(
            games, 8,
            "generation {g} has exactly its games, none lost or doubled"
        );
    }
    let ledger = std::fs::read_to_string(dir.join("ledger.jsonl")).unwrap();
    assert_eq!(
        ledger.lines().count(),
        2,
        "one gating decision per generation"
    );
    let ratings = std::fs::read_to_string(dir.join("ratings.jsonl")).unwrap();
    assert_eq!(ratings.lines().count(), 4, "two baselines per generation");
    let summary = json(&dir.join("summary.json"));
    assert_eq!(summary.as_array().unwrap().len(), 2);
    assert!(
        std::fs::read_to_string(dir.join("metrics.jsonl"))
            .unwrap()
            .lines()
            .count()
            >= 20
    );
    for plot in ["plots/training.png", "plots/elo.png"] {
        let bytes = std::fs::read(dir.join(plot)).unwrap();
        assert!(
            bytes.starts_with(b"\x89PNG") && bytes.len() > 1000,
            "{plot}"
        );
    }
    let arena: Vec<_> = std::fs::read_dir(dir.join("arena")).unwrap().collect();
    assert_eq!(
        arena.len(),
        6,
        "gate and two ratings per generation, every game saved"
    );
}

#[test]
fn smoke_run_completes_and_exports() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("run");
    check_summaries(&run_to_end(&dir));
    check_run(&dir);

    // Running again on the finished run resumes it and finds the budget spent: it plays no
    // generation.
    assert_eq!(run_to_end(&dir), Vec::<String>::new());
    check_run(&dir);

    // Export the best network and play it from the exported file alone. An earlier export
    // killed before its rename left a temporary file (issue 38: never removed); this one
    // removes it, and the stale checkpoint temporary a kill left in models/ goes on resume.
    let exported = tmp.path().join("best.yari");
    let dead = {
        let mut child = Command::new("true").spawn().unwrap();
        child.wait().unwrap();
        child.id()
    };
    let stale_export = tmp.path().join(format!(".best.yari.{dead}-0.tmp"));
    let stale_model = dir.join(format!("models/.gen-0002.yari.{dead}-0.tmp"));
    for stale in [&stale_export, &stale_model] {
        std::fs::write(stale, vec![0u8; 1 << 20]).unwrap();
    }
    assert_eq!(run_to_end(&dir), Vec::<String>::new());
    assert!(!stale_model.exists(), "a resumed run sweeps models/");
    let out = yari()
        .args(["export", "--run-dir"])
        .arg(&dir)
        .arg("--out")
        .arg(&exported)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        !stale_export.exists(),
        "the export removed the stale temporary file"
    );
    let ckpt = yari_model::Checkpoint::read(&exported).unwrap();
    assert_eq!(ckpt.meta.notes["ratings"].as_array().unwrap().len(), 2);
    assert!(ckpt.meta.notes["source"]
        .as_str()
        .unwrap()
        .starts_with("models/gen-"));

    // The mean of the last two generations' weights; a third generation does not exist.
    let averaged = tmp.path().join("averaged.yari");
    let export_averaged = |n: &str| {
        yari()
            .args(["export", "--checkpoint"])
            .arg(dir.join("models/gen-0002.yari"))
            .arg("--run-dir")
            .arg(&dir)
            .args(["--average", n, "--out"])
            .arg(&averaged)
            .output()
            .unwrap()
    };
    let out = export_averaged("2");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let ckpt = yari_model::Checkpoint::read(&averaged).unwrap();
    assert_eq!(
        ckpt.meta.notes["averaged"],
        serde_json::json!(["models/gen-0002.yari", "models/gen-0001.yari"])
    );
    let newest = yari_model::Checkpoint::read(dir.join("models/gen-0002.yari")).unwrap();
    assert_ne!(
        ckpt.weights(),
        newest.weights(),
        "averaged weights differ from the newest network's"
    );
    let out = export_averaged("3");
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("only 2 to average"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // `yari train` on the run, without --config, trains the run's own (smoke-sized)
    // network: the built-in default's architecture would not match its checkpoints.
    let out = yari()
        .args(["train", "--steps", "2", "--run-dir"])
        .arg(&dir)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("checkpoint "));
    std::fs::remove_dir_all(&dir).unwrap();
    let mut child = yari()
        .args(["play", "--sims", "4", "--model"])
        .arg(&exported)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(b"d3d4\nresign\n")
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stdout).contains("yari-zero plays"));

    // A damaged or foreign file is refused with a clear message.
    let mut bytes = std::fs::read(&exported).unwrap();
    bytes[4] = 99; // format version
    let bad = tmp.path().join("bad.yari");
    std::fs::write(&bad, &bytes).unwrap();
    let out = yari().args(["uci", "--model"]).arg(&bad).output().unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("format version"));
    std::fs::write(&bad, &bytes[..bytes.len() / 2]).unwrap();
    let out = yari().args(["uci", "--model"]).arg(&bad).output().unwrap();
    assert!(!out.status.success());
}

#[test]
fn killed_run_resumes_without_losing_anything() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("run");
    // Kill at a few different moments of the run, then let it finish.
    for wait_for in ["games/gen-0001", "models/gen-0001.yari", "ledger.jsonl"] {
        let mut child = yari()
            .args(["run", "--config"])
            .arg(smoke_config())
            .arg("--run-dir")
            .arg(&dir)
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let start = Instant::now();
        while !dir.join(wait_for).exists() && start.elapsed() < Duration::from_secs(120) {
            if child.try_wait().unwrap().is_some() {
                break;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        child.kill().ok(); // SIGKILL
        child.wait().unwrap();
    }
    run_to_end(&dir);
    check_run(&dir);
}

#[test]
fn check_fails_on_a_damaged_run_directory_and_names_the_file() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("state.json"), b"{\"generation\": 2, \"pha").unwrap();
    let out = yari().arg("check").arg(tmp.path()).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(!out.status.success());
    assert!(
        text.contains("state.json") && text.contains("DAMAGE"),
        "{text}"
    );
    assert!(!String::from_utf8_lossy(&out.stderr).contains("panicked"));
}

#[test]
fn bad_configs_are_refused_with_the_field_named() {
    let tmp = tempfile::tempdir().unwrap();
    let base = std::fs::read_to_string(smoke_config()).unwrap();
    for (change, expect) in [
        (
            base.replace("games_per_generation = 8", "games_per_generation = 0"),
            "games_per_generation",
        ),
        (base.replace("[gate]", "[gate]\ncolour = \"red\""), "colour"),
        (
            base.replace("threshold = 0.55", "threshold = 1.5"),
            "gate.threshold",
        ),
        (
            base.replace("full_simulations = 8", "full_simulations = -3"),
            "full_simulations",
        ),
        (base.replace("[run]", "[run\n"), "invalid"),
    ] {
        let path = tmp.path().join("bad.toml");
        std::fs::write(&path, change).unwrap();
        let out = yari()
            .args(["run", "--config"])
            .arg(&path)
            .arg("--run-dir")
            .arg(tmp.path().join("never"))
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success());
        assert!(err.contains(expect), "expected {expect:?} in: {err}");
        assert!(
            !tmp.path().join("never").exists(),
            "nothing written for a bad config"
        );
    }
}

/// The run's TensorBoard event files, read back by TensorBoard's own reader
/// (`scripts/tensorboard-readback.py`), hold every training step's scalars of `metrics.jsonl`
/// and every generation's of `summary.json`.
#[test]
#[ignore = "needs Python's tensorboard package: .ci/run installs it into .venv and runs this test"]
fn tensorboard_reads_the_runs_scalars() {
    let dir = tempfile::tempdir().unwrap();
    run_to_end(dir.path());
    let events: Vec<_> = std::fs::read_dir(dir.path().join("tensorboard"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(
        events.iter().all(|n| n.starts_with("events.out.tfevents.")),
        "{events:?}"
    );
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let python = std::env::var_os("YARI_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join(".venv/bin/python"));
    let out = Command::new(&python)
        .arg(root.join("scripts/tensorboard-readback.py"))
        .arg(dir.path())
        .output()
        .unwrap_or_else(|e| {
            panic!(
                "{}: {e} (python -m venv .venv && .venv/bin/pip install tensorboard)",
                python.display()
            )
        });
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{text}");
    assert!(
        text.starts_with("ok: 20 training steps and 2 generations"),
        "{text}"
    );
    println!("{text}");
}

/// The backends are chosen once, from flags or their environment variables, and a run records
/// what it computed with in `summary.json`; a choice that is unknown or cannot run here is an
/// error naming it, before any work.
#[test]
fn a_run_records_the_backends_its_flags_chose_and_bad_choices_are_named() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("run");
    let out = yari()
        .args([
            "--cpu-path",
            "f32",
            "--train-path",
            "burn",
            "run",
            "--config",
        ])
        .arg(smoke_config())
        .arg("--run-dir")
        .arg(&dir)
        .output()
        .unwrap();
    let log = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{log}");
    assert!(log.contains("inference cpu-f32, training burn"), "{log}");
    let summaries = json(&dir.join("summary.json"));
    let summaries = summaries.as_array().unwrap();
    assert_eq!(summaries.len(), 2);
    for s in summaries {
        assert_eq!(s["backends"]["inference"], "cpu-f32", "{s}");
        assert_eq!(s["backends"]["training"], "burn", "{s}");
        assert!(
            s["backends"]["device"].as_str().unwrap().contains("CPU"),
            "{s}"
        );
    }

    let refused = |flags: &[&str], env: Option<(&str, &str)>| {
        let mut command = yari();
        command
            .env_remove("YARI_CPU_PATH")
            .env_remove("YARI_TRAIN_PATH");
        if let Some((k, v)) = env {
            command.env(k, v);
        }
        let out = command
            .args(flags)
            .args(["bench", "nn", "--batch", "1"])
            .output()
            .unwrap();
        assert!(!out.status.success());
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    let err = refused(&["--cpu-path", "fp8"], None);
    assert!(
        err.contains("\"fp8\"") && err.contains("f32, bf16 or auto"),
        "{err}"
    );
    let err = refused(&[], Some(("YARI_CPU_PATH", "int4")));
    assert!(err.contains("\"int4\""), "{err}");
    let err = refused(&["--train-path", "gpu"], None);
    assert!(
        err.contains("\"gpu\"") && err.contains("burn, cpu or auto"),
        "{err}"
    );
    let err = refused(&["--graphics-api", "directx9"], None);
    assert!(err.contains("\"directx9\""), "{err}");
    assert!(!err.contains("panicked"), "{err}");
}
