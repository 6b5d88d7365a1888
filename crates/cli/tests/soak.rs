//! Kill soak (issue 23): a smoke-config `yari run` stopped by one SIGINT, one SIGTERM and ten
//! SIGKILLs at moments drawn from a fixed seed, resumed after each, and finally completed.
//! Then every shard and checkpoint of the run directory reads back with the project's own
//! readers, the run has as many generations as an unkilled run, and each interruption lost
//! at most the games in flight.
//!
//! "Games lost" is counted, not estimated: a redirected run logs one line per finished game
//! before the game is written, so a session's finished games are known exactly and compared
//! with the games found on disk after the kill. The figures are printed (`--nocapture`).

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use rand::{Rng, SeedableRng};

/// The tests of this file time their kills, so they do not run at once.
static SERIAL: Mutex<()> = Mutex::new(());

/// Seed of the kill moments.
const KILL_SEED: u64 = 23;
const KILLS: usize = 10;
/// Longest any one session may take before the test gives up on it.
const SESSION_LIMIT: Duration = Duration::from_secs(600);
/// What a resumed session is given before its share of the run starts to count: starting the
/// (debug) binary, reading the run directory and loading the network.
const STARTUP_S: f64 = 0.05;

fn yari() -> Command {
    Command::new(env!("CARGO_BIN_EXE_yari"))
}

/// The smoke config with twice its games per generation, so that self-play is a good part
/// of the run and kills land in it as well as in training, gating and rating.
fn soak_config(dir: &Path) -> (PathBuf, usize, usize) {
    let smoke = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../configs/smoke.toml");
    let text = fs::read_to_string(smoke).unwrap();
    assert!(text.contains("games_per_generation = 8"));
    assert!(text.contains("concurrent_games = 8"));
    let text = text.replace("games_per_generation = 8", "games_per_generation = 16");
    let path = dir.join("soak.toml");
    fs::write(&path, text).unwrap();
    (path, 16, 8)
}

fn start_run(config: &Path, run_dir: &Path, log: &Path) -> Child {
    yari()
        .args(["run", "--config"])
        .arg(config)
        .arg("--run-dir")
        .arg(run_dir)
        .stdout(Stdio::null())
        .stderr(fs::File::create(log).unwrap())
        .spawn()
        .unwrap()
}

fn signal(child: &Child, name: &str) {
    let status = Command::new("sh")
        .arg("-c")
        .arg(format!("kill -{name} {}", child.id()))
        .status()
        .unwrap();
    assert!(status.success(), "kill -{name}");
}

fn wait(child: &mut Child) -> ExitStatus {
    let start = Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        if start.elapsed() > SESSION_LIMIT {
            child.kill().ok();
            panic!("session did not end within {SESSION_LIMIT:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Games in the shards of each generation's games directory, read and verified with the
/// project's reader.
fn games_on_disk(run_dir: &Path) -> BTreeMap<u32, usize> {
    let mut out = BTreeMap::new();
    let Ok(entries) = fs::read_dir(run_dir.join("games")) else {
        return out;
    };
    for entry in entries {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let Some(g) = name.strip_prefix("gen-").and_then(|n| n.parse().ok()) else {
            continue;
        };
        let games: usize = yari_selfplay::list_shards(&path)
            .unwrap()
            .iter()
            .map(|s| {
                yari_selfplay::read_shard(s)
                    .unwrap_or_else(|e| panic!("{}: {e}", s.display()))
                    .len()
            })
            .sum();
        out.insert(g, games);
    }
    out
}

/// What a session's log says about its self-play.
#[derive(Debug, Default)]
struct SessionLog {
    /// Games finished per generation (logged before they are written).
    finished: BTreeMap<u32, usize>,
    /// The generation whose self-play was running when the log ends, if any.
    playing: Option<u32>,
    /// Whether the loop logged anything (a kill before that struck during start-up).
    any_line: bool,
}

fn parse_log(text: &str) -> SessionLog {
    let mut log = SessionLog::default();
    for line in text.lines() {
        if line.starts_with("self-play: game ") {
            let g = log.playing.expect("a finished game outside self-play");
            *log.finished.entry(g).or_default() += 1;
        } else if let Some((_, rest)) = line.split_once("UTC] ") {
            log.any_line = true;
            log.playing = rest
                .strip_prefix("generation ")
                .and_then(|r| r.split_once(": self-play "))
                .and_then(|(g, _)| g.parse().ok());
        }
    }
    log
}

/// One interruption's figures.
struct Interruption {
    how: &'static str,
    after_s: f64,
    /// Where the run was: "gen N self-play" or "other phases".
    phase: String,
    finished: usize,
    /// Finished games (logged) that are not on disk: only one whose write the kill cut.
    finished_lost: usize,
    /// Games being played at the kill, dropped.
    in_flight: usize,
    stray_shard_temps: usize,
}

/// Compares a session's log with the games on disk before and after it.
fn account(
    how: &'static str,
    after_s: f64,
    log: &SessionLog,
    before: &BTreeMap<u32, usize>,
    after: &BTreeMap<u32, usize>,
    run_dir: &Path,
    (per_generation, concurrent): (usize, usize),
) -> Interruption {
    let mut finished_lost = 0;
    let mut finished = 0;
    for (&g, &n) in &log.finished {
        let had = before.get(&g).copied().unwrap_or(0);
        let has = after.get(&g).copied().unwrap_or(0);
        assert!(
            has >= had,
            "gen {g}: games on disk went from {had} to {has}"
        );
        assert!(
            has - had <= n,
            "gen {g}: {} games written, only {n} finished",
            has - had
        );
        finished += n;
        finished_lost += n - (has - had);
    }
    // The pool keeps `concurrent` games going while any are left to start.
    let in_flight = match log.playing {
        Some(g) => {
            let remaining = per_generation - before.get(&g).copied().unwrap_or(0);
            let done = log.finished.get(&g).copied().unwrap_or(0);
            concurrent.min(remaining - done)
        }
        None => 0,
    };
    let stray_shard_temps = walk(run_dir)
        .iter()
        .filter(|p| {
            let n = p.file_name().unwrap().to_string_lossy();
            n.starts_with('.') && n.contains(".yshard.") && n.ends_with(".tmp")
        })
        .count();
    // A kill can cut the write of at most one finished game (shards are written one game at
    // a time), and that write leaves its temporary file behind.
    assert!(
        finished_lost <= 1,
        "{how}: {finished_lost} finished games lost"
    );
    assert!(in_flight <= concurrent);
    Interruption {
        how,
        after_s,
        phase: match log.playing {
            Some(g) => format!("gen {g} self-play"),
            None if log.any_line => "train/gate/rate".into(),
            None => "start-up".into(),
        },
        finished,
        finished_lost,
        in_flight,
        stray_shard_temps,
    }
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = fs::read_dir(&d) else {
            continue;
        };
        for e in entries {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

fn json(path: &Path) -> serde_json::Value {
    serde_json::from_str(&fs::read_to_string(path).unwrap()).unwrap()
}

/// Waits until the session has finished at least `games` games of its own (or ended).
fn wait_for_games(child: &mut Child, log: &Path, games: usize) {
    let start = Instant::now();
    while start.elapsed() < SESSION_LIMIT {
        let text = fs::read_to_string(log).unwrap_or_default();
        let done: usize = parse_log(&text).finished.values().sum();
        if done >= games || child.try_wait().unwrap().is_some() {
            return;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    panic!("no {games} games finished within {SESSION_LIMIT:?}");
}

#[test]
fn kill_soak_loses_only_games_in_flight() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let tmp = tempfile::tempdir().unwrap();
    let (config, per_generation, concurrent) = soak_config(tmp.path());
    let shape = (per_generation, concurrent);

    // The unkilled reference: its length spreads the kills, its generations are the target.
    let reference = tmp.path().join("reference");
    let t = Instant::now();
    let mut child = start_run(&config, &reference, &tmp.path().join("reference.log"));
    let status = wait(&mut child);
    let reference_s = t.elapsed().as_secs_f64();
    let log = fs::read_to_string(tmp.path().join("reference.log")).unwrap();
    assert!(status.success(), "reference run failed:\n{log}");
    let reference_generation = json(&reference.join("state.json"))["generation"].clone();
    let reference_summaries = json(&reference.join("summary.json"))
        .as_array()
        .unwrap()
        .len();

    let dir = tmp.path().join("soak");
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(KILL_SEED);
    let mut figures = Vec::new();
    let mut session = 0;
    let mut next_log = || {
        session += 1;
        tmp.path().join(format!("session-{session}.log"))
    };

    // SIGINT, then SIGTERM, each once self-play has finished games: both must print the
    // message, exit 130 and leave every finished game on disk.
    for (how, sig, games) in [("SIGINT", "INT", 2), ("SIGTERM", "TERM", 3)] {
        let log_path = next_log();
        let before = games_on_disk(&dir);
        let t = Instant::now();
        let mut child = start_run(&config, &dir, &log_path);
        wait_for_games(&mut child, &log_path, games);
        signal(&child, sig);
        let status = wait(&mut child);
        let text = fs::read_to_string(&log_path).unwrap();
        assert_eq!(status.code(), Some(130), "{how}:\n{text}");
        assert!(
            text.contains("interrupted: progress is saved"),
            "{how}:\n{text}"
        );
        let log = parse_log(&text);
        let after = games_on_disk(&dir);
        let f = account(
            how,
            t.elapsed().as_secs_f64(),
            &log,
            &before,
            &after,
            &dir,
            shape,
        );
        assert!(f.finished >= games, "{how}: {} games finished", f.finished);
        figures.push(f);
    }

    // Ten SIGKILLs at moments spread over the run: after a start-up allowance (a resumed
    // session first loads its run directory and network), each session advances the run by
    // 0.3 to 0.9 elevenths of the reference run's length: the ten kills fall throughout the
    // run (the games lost at each kill are played again, so they reach its last phases), with room
    // left for a machine that runs faster during the soak than it did for the reference.
    let mut completed_early = false;
    for _ in 0..KILLS {
        let share = (0.3 + 0.6 * rng.random::<f64>()) / (KILLS as f64 + 1.0);
        let after_s = STARTUP_S + reference_s * share;
        let log_path = next_log();
        let before = games_on_disk(&dir);
        let t = Instant::now();
        let mut child = start_run(&config, &dir, &log_path);
        while t.elapsed().as_secs_f64() < after_s && child.try_wait().unwrap().is_none() {
            std::thread::sleep(Duration::from_millis(5));
        }
        if child.try_wait().unwrap().is_some() {
            completed_early = true;
            break;
        }
        child.kill().unwrap(); // SIGKILL
        wait(&mut child);
        // What an ordinary kill leaves is never damage by the project's own check.
        let check = yari().arg("check").arg(&dir).output().unwrap();
        assert!(
            check.status.success(),
            "yari check after a SIGKILL at {after_s:.2} s:\n{}{}",
            String::from_utf8_lossy(&check.stdout),
            String::from_utf8_lossy(&check.stderr)
        );
        let text = fs::read_to_string(&log_path).unwrap();
        let after = games_on_disk(&dir);
        figures.push(account(
            "SIGKILL",
            after_s,
            &parse_log(&text),
            &before,
            &after,
            &dir,
            shape,
        ));
    }
    assert!(
        !completed_early,
        "the run finished before its {KILLS} kills; lengthen it"
    );

    // The last session completes the run.
    let log_path = next_log();
    let mut child = start_run(&config, &dir, &log_path);
    let status = wait(&mut child);
    let text = fs::read_to_string(&log_path).unwrap();
    assert!(status.success(), "final session failed:\n{text}");
    assert!(text.contains("budget spent after generation 2"), "{text}");

    // The run directory is intact and complete: first by the project's own check...
    let check = yari().arg("check").arg(&dir).output().unwrap();
    assert!(
        check.status.success(),
        "yari check after the soak:\n{}{}",
        String::from_utf8_lossy(&check.stdout),
        String::from_utf8_lossy(&check.stderr)
    );
    // ...then by counting what it holds.
    assert_eq!(
        json(&dir.join("state.json"))["generation"],
        reference_generation
    );
    let summaries = json(&dir.join("summary.json")).as_array().unwrap().len();
    assert_eq!(summaries, reference_summaries, "generations as unkilled");
    let games = games_on_disk(&dir);
    assert_eq!(
        games,
        (1..=summaries as u32)
            .map(|g| (g, per_generation))
            .collect::<BTreeMap<u32, usize>>(),
        "every generation has exactly its games"
    );
    let files = walk(&dir);
    let mut checkpoints = 0;
    for path in files
        .iter()
        .filter(|p| p.extension().is_some_and(|e| e == "yari"))
    {
        yari_model::Checkpoint::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        checkpoints += 1;
    }
    let shards = files
        .iter()
        .filter(|p| p.extension().is_some_and(|e| e == "yshard"))
        .count();
    let stray: Vec<_> = files
        .iter()
        .filter(|p| p.file_name().unwrap().to_string_lossy().contains(".tmp"))
        .collect();
    let stray_shards: Vec<_> = stray
        .iter()
        .filter(|p| p.to_string_lossy().contains(".yshard."))
        .collect();
    assert!(
        stray_shards.is_empty(),
        "shard temporary files left: {stray_shards:?}"
    );
    for line in ["ledger.jsonl", "ratings.jsonl"] {
        let text = fs::read_to_string(dir.join(line)).unwrap();
        for l in text.lines() {
            serde_json::from_str::<serde_json::Value>(l)
                .unwrap_or_else(|e| panic!("{line}: {e}: {l}"));
        }
    }

    println!(
        "kill soak (seed {KILL_SEED}): reference run {reference_s:.1}s, {summaries} generations"
    );
    println!("  # signal   after_s  phase              finished  finished_lost  in_flight_dropped  shard_temps");
    for (i, f) in figures.iter().enumerate() {
        println!(
            "  {:<2} {:<8} {:>6.1}  {:<18} {:>8}  {:>13}  {:>17}  {:>11}",
            i + 1,
            f.how,
            f.after_s,
            f.phase,
            f.finished,
            f.finished_lost,
            f.in_flight,
            f.stray_shard_temps
        );
    }
    let lost: usize = figures.iter().map(|f| f.finished_lost + f.in_flight).sum();
    println!(
        "  interruptions {}, games lost in all {lost} (finished {}, in flight {}); final: {summaries} generations, {} games in {shards} shards, {checkpoints} checkpoints read, stray temp files {stray:?}",
        figures.len(),
        figures.iter().map(|f| f.finished_lost).sum::<usize>(),
        figures.iter().map(|f| f.in_flight).sum::<usize>(),
        games.values().sum::<usize>(),
    );
}

/// `yari selfplay` stops on SIGTERM like on Ctrl-C: a message, exit 130, and exactly the
/// games it finished in its shards.
#[test]
fn selfplay_stops_on_sigterm_with_its_finished_games() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let tmp = tempfile::tempdir().unwrap();
    let config = tmp.path().join("sp.toml");
    fs::write(
        &config,
        "full_simulations = 8\ncheap_simulations = 4\nply_cap = 40\nconcurrent_games = 4\ngames_per_shard = 3\n",
    )
    .unwrap();
    let out = tmp.path().join("games");
    let log_path = tmp.path().join("selfplay.log");
    let mut child = yari()
        .args(["selfplay", "--games", "100000", "--out"])
        .arg(&out)
        .arg("--config")
        .arg(&config)
        .stdout(Stdio::null())
        .stderr(fs::File::create(&log_path).unwrap())
        .spawn()
        .unwrap();
    let start = Instant::now();
    loop {
        let text = fs::read_to_string(&log_path).unwrap_or_default();
        if text.matches("self-play: game ").count() >= 5 {
            break;
        }
        assert!(child.try_wait().unwrap().is_none(), "ended early:\n{text}");
        assert!(start.elapsed() < SESSION_LIMIT, "no games:\n{text}");
        std::thread::sleep(Duration::from_millis(10));
    }
    signal(&child, "TERM");
    let status = wait(&mut child);
    let text = fs::read_to_string(&log_path).unwrap();
    assert_eq!(status.code(), Some(130), "{text}");
    assert!(text.contains("interrupted: stopping"), "{text}");
    let finished = text.matches("self-play: game ").count();
    assert!(
        text.contains(&format!(
            "stopped by a signal after {finished} of 100000 games"
        )),
        "{text}"
    );
    let on_disk: usize = yari_selfplay::list_shards(&out)
        .unwrap()
        .iter()
        .map(|s| yari_selfplay::read_shard(s).unwrap().len())
        .sum();
    assert_eq!(
        on_disk, finished,
        "every finished game is written, no other"
    );
    println!("selfplay SIGTERM: {finished} games finished, {on_disk} on disk");
}

/// `yari arena` on SIGINT prints the score of the games it finished (with a line for each as
/// it went), says it was interrupted, exits 130, and its games file holds exactly those games.
#[test]
fn arena_interrupted_by_sigint_prints_the_score_so_far() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let tmp = tempfile::tempdir().unwrap();
    let games_file = tmp.path().join("games.jsonl");
    let log_path = tmp.path().join("arena.log");
    let out_path = tmp.path().join("arena.out");
    let mut child = yari()
        .args([
            "arena",
            "--a",
            "mcts:16",
            "--b",
            "alphabeta:1",
            "--games",
            "100000",
            "--concurrency",
            "2",
            "--json",
            "--games-file",
        ])
        .arg(&games_file)
        .stdout(fs::File::create(&out_path).unwrap())
        .stderr(fs::File::create(&log_path).unwrap())
        .spawn()
        .unwrap();
    let start = Instant::now();
    loop {
        let text = fs::read_to_string(&log_path).unwrap_or_default();
        if text.matches("\ngame ").count() + usize::from(text.starts_with("game ")) >= 3 {
            break;
        }
        assert!(child.try_wait().unwrap().is_none(), "ended early:\n{text}");
        assert!(start.elapsed() < SESSION_LIMIT, "no games:\n{text}");
        std::thread::sleep(Duration::from_millis(10));
    }
    signal(&child, "INT");
    let status = wait(&mut child);
    let log = fs::read_to_string(&log_path).unwrap();
    let out = fs::read_to_string(&out_path).unwrap();
    assert_eq!(status.code(), Some(130), "{log}\n{out}");
    assert!(log.contains("interrupted: finishing"), "{log}");
    let lines: Vec<&str> = log.lines().filter(|l| l.starts_with("game ")).collect();
    // Each game line carries the running score of the match so far.
    assert!(lines[0].starts_with("game 1 of 100000: "), "{}", lines[0]);
    assert!(lines[0].contains(" Elo "), "{}", lines[0]);
    let json: serde_json::Value =
        serde_json::from_str(out.lines().last().expect("a JSON line")).unwrap();
    let played = json["games"].as_u64().unwrap() as usize;
    assert_eq!(played, lines.len(), "one line per scored game:\n{log}");
    assert_eq!(json["interrupted"], serde_json::Value::Bool(true));
    assert!(
        out.contains(&format!("{played} games (of 100000 planned; interrupted)")),
        "{out}"
    );
    let wdl: u64 = ["wins", "draws", "losses"]
        .iter()
        .map(|k| json[k].as_u64().unwrap())
        .sum();
    assert_eq!(wdl as usize, played);
    let on_disk = fs::read_to_string(&games_file).unwrap().lines().count();
    assert_eq!(
        on_disk, played,
        "the games file holds exactly the scored games"
    );
    println!("arena SIGINT: {played} games scored and written");
}

/// One writer per run directory: a second `yari run` or `yari learn` on a directory another
/// one is writing is refused, naming the holder, and the first one's records are not doubled.
/// A killed holder leaves the directory free for the next.
#[test]
fn a_second_writer_of_a_run_directory_is_refused() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let tmp = tempfile::tempdir().unwrap();
    let smoke = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../configs/smoke.toml");
    // Long enough to be running when the second one starts.
    let text = fs::read_to_string(smoke)
        .unwrap()
        .replace("generations = 2", "generations = 1000");
    let config = tmp.path().join("long.toml");
    fs::write(&config, text).unwrap();
    for role in ["run", "learn"] {
        let dir = tmp.path().join(role);
        let log = tmp.path().join(format!("{role}.log"));
        let mut first = yari()
            .arg(role)
            .arg("--config")
            .arg(&config)
            .arg("--run-dir")
            .arg(&dir)
            .stdout(Stdio::null())
            .stderr(fs::File::create(&log).unwrap())
            .spawn()
            .unwrap();
        let start = Instant::now();
        while !fs::read_to_string(&log)
            .unwrap_or_default()
            .contains("new run in")
        {
            assert!(first.try_wait().unwrap().is_none(), "ended early");
            assert!(start.elapsed() < SESSION_LIMIT, "never started");
            std::thread::sleep(Duration::from_millis(10));
        }
        for second in ["run", "learn"] {
            let out = yari()
                .arg(second)
                .arg("--config")
                .arg(&config)
                .arg("--run-dir")
                .arg(&dir)
                .output()
                .unwrap();
            let err = String::from_utf8_lossy(&out.stderr);
            assert!(
                !out.status.success(),
                "a second {second} ran beside {role}: {err}"
            );
            assert!(err.contains("is in use by another writer"), "{err}");
            assert!(
                err.contains(&format!("yari {role}, pid {}", first.id())),
                "the holder is named: {err}"
            );
        }
        // Killed, the first leaves the directory free.
        signal(&first, "KILL");
        wait(&mut first);
        let lock = yari_loop::RunDir::new(&dir).lock_writer("test");
        assert!(lock.is_ok(), "{:?}", lock.err());
    }
}
