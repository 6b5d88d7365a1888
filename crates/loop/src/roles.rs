//! The two roles of a many-machine run over one shared run directory: self-play workers and
//! the learner. Nothing but files connects them, and every file is written whole (temporary
//! file, sync, rename), so any process can be started, killed or restarted at any time.
//!
//! | path | written by | read by |
//! |---|---|---|
//! | `config.toml`, `state.json` (its `best`), `models/*.yari` | learner | workers |
//! | `incoming/*.yshard` | workers, one name per worker process and batch | learner |
//! | `games/gen-NNNN/*.yshard` | learner (renamed from `incoming/` once verified) | trainer |
//! | `rejected/*.yshard` | learner (shards that failed verification) | people |
//! | `workers/<id>.json` | each worker, its own file | people, tests |
//! | `finished` | learner, when the run's budget is spent | workers (they exit) |

use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};
use yari_model::Backend;

use crate::driver::{open_run, Loop};
use crate::phases;
use crate::run_dir::RunDir;
use crate::source::{GameSource, GamesIn, GamesRequest};
use crate::Log;
use crate::{LoopError, RunConfig};

impl RunDir {
    /// Where workers drop their shards for the learner.
    pub fn incoming_dir(&self) -> PathBuf {
        self.paths().incoming_dir()
    }

    /// Where the learner puts shards that do not verify.
    pub fn rejected_dir(&self) -> PathBuf {
        self.paths().rejected_dir()
    }

    /// The workers' status files.
    pub fn workers_dir(&self) -> PathBuf {
        self.paths().workers_dir()
    }

    /// The marker that tells workers the run is over.
    pub fn finished_file(&self) -> PathBuf {
        self.paths().finished_file()
    }
}

/// A worker's status file, `workers/<id>.json`, rewritten after every batch and at exit.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct WorkerStatus {
    /// The worker id, which starts its shard names.
    pub id: String,
    /// Host name.
    pub host: String,
    /// Process id.
    pub pid: u32,
    /// `running`, `waiting` (for the learner to take the games already in `incoming/`),
    /// `stopped` (by a signal) or `finished` (the run is over, or `max_batches`).
    pub state: String,
    /// Unix time the worker started.
    pub started_unix: u64,
    /// Unix time of this status.
    pub updated_unix: u64,
    /// Games written to shards, in total.
    pub games: u64,
    /// Positions of those games.
    pub positions: u64,
    /// Batches played (a stopped one included).
    pub batches: u64,
    /// Seconds spent playing (loading networks and waiting excluded).
    pub selfplay_s: f64,
    /// The network of the last batch.
    pub best: String,
}

/// How a worker runs.
#[derive(Clone, Debug)]
pub struct WorkerOptions {
    /// A readable name for this worker (e.g. the Slurm array task); the id adds host, pid and
    /// start time.
    pub tag: String,
    /// Games per batch; the best network is reloaded between batches (default: the run's
    /// `games_per_generation`, the batch `yari run` plays).
    pub batch_games: Option<usize>,
    /// How often to look again when a network cannot be loaded.
    pub poll: Duration,
    /// Stop after this many batches (0: until the run finishes or a signal).
    pub max_batches: u64,
    /// Draw a progress bar.
    pub progress: bool,
}

fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// Keeps a name safe for file names on any filesystem.
fn sanitize(s: &str) -> String {
    let out: String = s
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if out.is_empty() {
        "_".into()
    } else {
        out
    }
}

/// How many generations' worth of untaken games `incoming/` may hold before workers wait:
/// the learner takes one generation's games at a time, so more than this means it is behind
/// or gone (a learner that died on a config error once left two workers writing 17 MB in 45 s).
pub const UNTAKEN_GENERATIONS: usize = 4;

/// Sleeps `d` in short steps, returning early (true) once `stop` is set.
fn sleep_unless_stopped(d: Duration, stop: &AtomicBool) -> bool {
    let end = Instant::now() + d;
    while Instant::now() < end {
        if stop.load(Ordering::SeqCst) {
            return true;
        }
        std::thread::sleep(Duration::from_millis(100).min(end - Instant::now()));
    }
    stop.load(Ordering::SeqCst)
}

fn save_status(path: &Path, status: &mut WorkerStatus) -> Result<(), LoopError> {
    status.updated_unix = unix_now();
    let bytes = serde_json::to_vec_pretty(status).map_err(|e| LoopError::Corrupt {
        path: path.to_path_buf(),
        what: e.to_string(),
    })?;
    yari_io::write_atomic(path, &bytes)?;
    Ok(())
}

/// A self-play worker: plays batches with the run's current best network into `incoming/`
/// until the learner writes `finished`, `stop` is set, or `max_batches` are done. It never
/// waits for the learner: before each batch it reads the best network `state.json` names.
pub fn run_worker(
    run: &RunDir,
    options: &WorkerOptions,
    backend: &Backend,
    stop: &AtomicBool,
    log: Log,
) -> Result<WorkerStatus, LoopError> {
    let config_file = run.paths().config_file();
    if !config_file.is_file() || !run.paths().state_file().is_file() {
        return Err(LoopError::NotARun {
            path: run.root().to_path_buf(),
        });
    }
    let config = RunConfig::load(Some(&config_file))?;
    let started = unix_now();
    // Host and pid make the name unique among live processes; the start time keeps a restarted
    // worker that got a recycled pid from reusing an old name.
    let id = format!(
        "{}-{}-{started}",
        sanitize(&options.tag),
        phases::worker_prefix()
    );
    let incoming = run.incoming_dir();
    let status_dir = run.workers_dir();
    for d in [&incoming, &status_dir] {
        std::fs::create_dir_all(d).map_err(|e| LoopError::io(d, e))?;
    }
    let status_file = status_dir.join(format!("{id}.json"));
    let mut status = WorkerStatus {
        id: id.clone(),
        host: phases::host_name().unwrap_or_default(),
        pid: std::process::id(),
        state: "running".into(),
        started_unix: started,
        ..WorkerStatus::default()
    };
    save_status(&status_file, &mut status)?;
    let batch_games = options
        .batch_games
        .unwrap_or(config.run.games_per_generation)
        .max(1);
    log(&format!(
        "worker {id}: self-play into {} in batches of {batch_games} games",
        incoming.display()
    ));
    // A hash of the id seeds this worker's games, so that no two workers (or restarts of one)
    // play the same games.
    let id_hash = id.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ b as u64).wrapping_mul(0x100_0000_01b3)
    });
    let mut loaded: Option<(String, yari_model::eval::NetEvaluator)> = None;
    let untaken_bound = UNTAKEN_GENERATIONS * config.run.games_per_generation.max(1);
    loop {
        if stop.load(Ordering::SeqCst) {
            status.state = "stopped".into();
            break;
        }
        if run.finished_file().exists() {
            log(&format!("worker {id}: the run is finished"));
            status.state = "finished".into();
            break;
        }
        if options.max_batches > 0 && status.batches >= options.max_batches {
            status.state = "finished".into();
            break;
        }
        // Workers write one game a shard, so the shards waiting are the games waiting.
        let untaken = yari_selfplay::list_shards(&incoming)?.len();
        if untaken >= untaken_bound {
            if status.state != "waiting" {
                log(&format!(
                    "worker {id}: {untaken} games in {} not taken yet (the bound is {untaken_bound}, \
                     {UNTAKEN_GENERATIONS} generations): waiting for the learner",
                    incoming.display()
                ));
                status.state = "waiting".into();
                save_status(&status_file, &mut status)?;
            }
            sleep_unless_stopped(options.poll, stop);
            continue;
        }
        if status.state == "waiting" {
            log(&format!(
                "worker {id}: the learner took games; playing again"
            ));
            status.state = "running".into();
        }
        let state = run.require_state()?;
        let best = state.best;
        if loaded.as_ref().is_none_or(|(name, _)| *name != best) {
            match phases::load_network(backend, run, &best) {
                Ok(ev) => {
                    log(&format!("worker {id}: playing with {best}"));
                    loaded = Some((best.clone(), ev));
                }
                // Published networks are written whole, so this is a real fault (a file
                // deleted by hand, a filesystem error): keep the old network if there is one.
                Err(e) if loaded.is_some() => log(&format!(
                    "worker {id}: cannot load {best} ({e}); keeping the old network"
                )),
                Err(e) => {
                    log(&format!("worker {id}: cannot load {best} ({e}); retrying"));
                    sleep_unless_stopped(options.poll, stop);
                    continue;
                }
            }
        }
        let (net_name, evaluator) = loaded.as_ref().expect("loaded above");
        // The progressive simulation budget at the run's progress, as the learner's own
        // self-play would play it (the learner saves its elapsed time in the state).
        let progress = config.run.progress(state.elapsed_s, state.generation);
        let mut sp = phases::seeded(
            &config,
            id_hash.wrapping_add(status.batches.wrapping_mul(0x2545_F491_4F6C_DD1D)),
        )
        .at_progress(progress);
        if sp.full_simulations != config.selfplay.full_simulations
            || sp.cheap_simulations != config.selfplay.cheap_simulations
        {
            log(&format!(
                "worker {id}: progressive budget at {:.0}% of the run: {}/{} simulations",
                100.0 * progress,
                sp.full_simulations,
                sp.cheap_simulations
            ));
        }
        // One game a shard: a shard in `incoming/` is then complete the moment it appears.
        // With more, the writer rewrites its open shard after every game (so a kill loses no
        // finished game) and the learner could take a shard that is still growing.
        sp.games_per_shard = 1;
        let result = phases::play_batch(
            evaluator,
            &sp,
            batch_games,
            &incoming,
            &format!("{id}-b{:05}", status.batches),
            options.progress,
            Some(stop),
        )?;
        status.games += result.games;
        status.positions += result.positions;
        status.selfplay_s += result.seconds;
        status.batches += 1;
        status.best = net_name.clone();
        if result.stopped {
            status.state = "stopped".into();
            break;
        }
        log(&format!(
            "worker {id}: batch {} with {net_name}: {}",
            status.batches, result.summary
        ));
        save_status(&status_file, &mut status)?;
    }
    save_status(&status_file, &mut status)?;
    log(&format!(
        "worker {id}: {}: {} games ({} positions) written in {} batches, {:.0} positions/s; games in flight dropped",
        status.state,
        status.games,
        status.positions,
        status.batches,
        status.positions as f64 / status.selfplay_s.max(1e-9)
    ));
    Ok(status)
}

/// The worker id a worker's shard name starts with: `<id>-bNNNNN-NNNNN.yshard`.
pub fn worker_of_shard(name: &str) -> String {
    match name.rfind("-b") {
        Some(i) => name[..i].to_string(),
        None => name.trim_end_matches(".yshard").to_string(),
    }
}

/// What a generation took in.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Taken {
    /// Games moved into the generation.
    pub games: u64,
    /// Their positions.
    pub positions: u64,
    /// File name and games of each shard.
    pub shards: Vec<(String, u64)>,
}

/// The learner's intake: verifies the shards workers put in `incoming/` and moves them into
/// the generation's game directory, where the trainer's window sees them. A shard that does
/// not verify is moved to `rejected/` with a warning and never trained on.
pub struct Intake {
    run: RunDir,
    poll: Duration,
    /// Verified shards waiting in `incoming/`: path, games, positions.
    pending: Vec<(PathBuf, u64, u64)>,
    /// Shards that failed verification but could not be moved away.
    bad: HashSet<PathBuf>,
}

impl Intake {
    /// An intake of `run`'s `incoming/`, looked at every `poll` while games are missing.
    pub fn new(run: &RunDir, poll: Duration) -> Intake {
        Intake {
            run: run.clone(),
            poll,
            pending: Vec::new(),
            bad: HashSet::new(),
        }
    }

    /// Looks at `incoming/` once: verifies every shard not seen before.
    fn scan(&mut self, log: Log) -> Result<(), LoopError> {
        let incoming = self.run.incoming_dir();
        if !incoming.exists() {
            return Ok(());
        }
        let known: HashSet<PathBuf> = self.pending.iter().map(|(p, ..)| p.clone()).collect();
        for path in yari_selfplay::list_shards(&incoming)? {
            if known.contains(&path) || self.bad.contains(&path) {
                continue;
            }
            match yari_selfplay::read_shard(&path) {
                Ok(games) => {
                    let positions = games.iter().map(|g| g.samples.len() as u64).sum();
                    self.pending.push((path, games.len() as u64, positions));
                }
                Err(e) => {
                    let rejected = self.run.rejected_dir();
                    let target = rejected.join(path.file_name().unwrap_or_default());
                    let moved = std::fs::create_dir_all(&rejected)
                        .and_then(|_| std::fs::rename(&path, &target))
                        .is_ok();
                    log(&format!(
                        "warning: skipping shard {}: {e}{}",
                        path.display(),
                        if moved {
                            format!(" (moved to {})", target.display())
                        } else {
                            String::new()
                        }
                    ));
                    if !moved {
                        self.bad.insert(path);
                    }
                }
            }
        }
        Ok(())
    }

    /// Games verified and waiting.
    pub fn pending_games(&self) -> u64 {
        self.pending.iter().map(|(_, n, _)| n).sum()
    }

    /// Moves every verified shard waiting into `games_dir` once at least `need` games are
    /// there (more, if more came), looking at `incoming/` again every poll until then.
    pub fn take(&mut self, need: u64, games_dir: &Path, log: Log) -> Result<Taken, LoopError> {
        let mut last_note = Instant::now();
        loop {
            self.scan(log)?;
            if self.pending_games() >= need {
                break;
            }
            if last_note.elapsed() >= Duration::from_secs(60) {
                log(&format!(
                    "waiting for games: {} of {need} arrived",
                    self.pending_games()
                ));
                last_note = Instant::now();
            }
            std::thread::sleep(self.poll);
        }
        std::fs::create_dir_all(games_dir).map_err(|e| LoopError::io(games_dir, e))?;
        let mut taken = Taken::default();
        for (path, games, positions) in std::mem::take(&mut self.pending) {
            let name = path.file_name().unwrap_or_default();
            let target = games_dir.join(name);
            std::fs::rename(&path, &target).map_err(|e| LoopError::io(&path, e))?;
            taken.positions += positions;
            taken.games += games;
            taken
                .shards
                .push((name.to_string_lossy().into_owned(), games));
        }
        if let Ok(d) = std::fs::File::open(games_dir) {
            let _ = d.sync_all();
        }
        Ok(taken)
    }
}

/// What the intake phase did: the learner's counterpart of [`phases::selfplay`].
#[derive(Clone, Debug, Default, PartialEq)]
pub struct IntakeOutcome {
    /// Games of the generation on disk now.
    pub games: u64,
    /// Positions of the games taken by this call.
    pub positions: u64,
    /// Seconds this call spent (mostly waiting).
    pub seconds: f64,
    /// Games of the generation by worker id (all of them, also those a killed session took).
    pub workers: BTreeMap<String, u64>,
}

/// Takes generation `g`'s games from the workers: the shards already moved into
/// `games/gen-NNNN/` (by a session that was killed) count, then verified shards from
/// `incoming/` until `target` are there.
pub fn take_games(
    run: &RunDir,
    intake: &mut Intake,
    g: u32,
    target: u64,
    log: Log,
) -> Result<IntakeOutcome, LoopError> {
    let dir = run.paths().generation_games_dir(g);
    std::fs::create_dir_all(&dir).map_err(|e| LoopError::io(&dir, e))?;
    let start = Instant::now();
    let mut out = IntakeOutcome::default();
    for shard in yari_selfplay::list_shards(&dir)? {
        let n = yari_selfplay::read_shard(&shard)?.len() as u64;
        let name = shard.file_name().unwrap_or_default().to_string_lossy();
        *out.workers.entry(worker_of_shard(&name)).or_default() += n;
        out.games += n;
    }
    if out.games < target {
        log(&format!(
            "generation {g}: waiting for {} games from the workers",
            target - out.games
        ));
        let taken = intake.take(target - out.games, &dir, log)?;
        for (name, games) in &taken.shards {
            *out.workers.entry(worker_of_shard(name)).or_default() += games;
        }
        log(&format!(
            "generation {g}: took {} games ({} positions) in {} shards; games by worker: {:?}",
            taken.games,
            taken.positions,
            taken.shards.len(),
            out.workers
        ));
        out.games += taken.games;
        out.positions = taken.positions;
    }
    out.seconds = start.elapsed().as_secs_f64();
    Ok(out)
}

/// The learner's [`GameSource`]: the workers' games, through [`take_games`].
impl GameSource for Intake {
    fn games(
        &mut self,
        run: &RunDir,
        _config: &RunConfig,
        request: &GamesRequest<'_>,
        log: Log,
    ) -> Result<GamesIn, LoopError> {
        let out = take_games(run, self, request.generation, request.target, log)?;
        Ok(GamesIn {
            games: out.games,
            positions: out.positions,
            seconds: out.seconds,
            workers: out.workers,
        })
    }
}

/// `yari learn --init`: creates the run directory (config and generation 0) so that workers
/// started next find a network at once. A directory that already has a state (a learner may be
/// running on it) is left alone.
pub fn init_run(
    config_path: Option<&Path>,
    root: &Path,
    backend: &Backend,
    log: Log,
) -> Result<(), LoopError> {
    let run = RunDir::new(root);
    if run.paths().state_file().exists() {
        log(&format!(
            "run directory {} exists; kept as it is",
            root.display()
        ));
        return Ok(());
    }
    open_run(config_path, Some(root), "yari learn --init", backend, log)?;
    log(&format!(
        "run directory {} ready for workers",
        root.display()
    ));
    Ok(())
}

/// `yari learn`: the loop of `yari run` with the self-play phase replaced by the intake of the
/// games workers write into `incoming/`.
pub fn open_learner(
    config_path: Option<&Path>,
    root: &Path,
    poll: Duration,
    backend: &Backend,
    log: Log,
) -> Result<Loop, LoopError> {
    let run = open_run(config_path, Some(root), "yari learn", backend, log)?;
    let intake = Intake::new(run.dir(), poll);
    Ok(run.with_source(Box::new(intake)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shard_names_lead_back_to_their_worker() {
        assert_eq!(
            worker_of_shard("task1-vm-b2-4242-1764680000-b00003-00001.yshard"),
            "task1-vm-b2-4242-1764680000"
        );
        assert_eq!(worker_of_shard("odd.yshard"), "odd");
    }

    #[test]
    fn names_are_made_safe_for_file_names() {
        assert_eq!(sanitize("node 7/a.b"), "node_7_a_b");
        assert_eq!(sanitize(""), "_");
        assert_eq!(sanitize("task-0_x"), "task-0_x");
    }

    #[test]
    fn the_intake_takes_verified_shards_and_rejects_damaged_ones() {
        let dir = tempfile::tempdir().unwrap();
        let run = RunDir::new(dir.path());
        let incoming = run.incoming_dir();
        std::fs::create_dir_all(&incoming).unwrap();
        let game = || yari_selfplay::GameRecord {
            game_id: 0,
            start_fen: yari_rules::START_FEN.to_string(),
            moves: Vec::new(),
            samples: Vec::new(),
            result: yari_selfplay::GameResult::Draw,
            end: yari_selfplay::GameEnd::PlyCap,
            resignation_disabled: false,
            would_resign: None,
        };
        yari_selfplay::write_shard(
            incoming.join("w1-h-1-9-b00000-00000.yshard"),
            &[game(), game()],
        )
        .unwrap();
        yari_selfplay::write_shard(incoming.join("w2-h-2-9-b00000-00000.yshard"), &[game()])
            .unwrap();
        let good = std::fs::read(incoming.join("w2-h-2-9-b00000-00000.yshard")).unwrap();
        std::fs::write(
            incoming.join("cut-b00000-00000.yshard"),
            &good[..good.len() - 3],
        )
        .unwrap();
        let mut intake = Intake::new(&run, Duration::from_millis(1));
        let games = run.paths().generation_games_dir(1);
        let taken = intake.take(3, &games, |_| {}).unwrap();
        assert_eq!(taken.games, 3);
        assert_eq!(taken.shards.len(), 2);
        assert_eq!(yari_selfplay::list_shards(&games).unwrap().len(), 2);
        assert!(yari_selfplay::list_shards(&incoming).unwrap().is_empty());
        assert!(run.rejected_dir().join("cut-b00000-00000.yshard").is_file());
    }
}
