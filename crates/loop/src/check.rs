//! `yari check`: verifies a run directory end to end with the same readers the run uses.
//!
//! What a kill can explain (a torn last line of a JSON-lines log, a temporary file of an
//! atomic write that was never renamed) is a [`Severity::Warning`]; anything else (a shard or
//! checkpoint that fails its checksum, a `state.json` naming a file that is not there, a line
//! that is not a record) is [`Severity::Damage`], and [`CheckReport::is_damaged`] says so.

use std::fmt;
use std::path::{Path, PathBuf};

use serde::de::DeserializeOwned;
use yari_io::layout::MODEL_EXTENSION;

use crate::run_dir::{PlayerKey, RunDir};
use crate::RunConfig;

/// How bad a finding is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Severity {
    /// Explained by a kill; nothing that was finished is lost.
    Warning,
    /// Real damage or an inconsistency.
    Damage,
}

/// One thing found wrong.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Finding {
    /// How bad.
    pub severity: Severity,
    /// The file concerned.
    pub path: PathBuf,
    /// What is wrong.
    pub what: String,
}

impl fmt::Display for Finding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let tag = match self.severity {
            Severity::Warning => "warning",
            Severity::Damage => "DAMAGE",
        };
        write!(f, "{tag}: {}: {}", self.path.display(), self.what)
    }
}

/// What a check looked at and found.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CheckReport {
    /// Shards read and verified.
    pub shards: usize,
    /// Games in them.
    pub games: usize,
    /// Network checkpoints loaded.
    pub checkpoints: usize,
    /// JSON-lines files parsed.
    pub logs: usize,
    /// Records in them.
    pub records: usize,
    /// Everything wrong, in the order found.
    pub findings: Vec<Finding>,
}

impl CheckReport {
    /// Whether anything is damaged (warnings do not count).
    pub fn is_damaged(&self) -> bool {
        self.findings.iter().any(|f| f.severity == Severity::Damage)
    }

    fn add(&mut self, severity: Severity, path: &Path, what: impl Into<String>) {
        self.findings.push(Finding {
            severity,
            path: path.to_path_buf(),
            what: what.into(),
        });
    }

    /// One line: what was checked and how many problems.
    pub fn summary(&self) -> String {
        let damage = self
            .findings
            .iter()
            .filter(|f| f.severity == Severity::Damage)
            .count();
        format!(
            "{} shards ({} games), {} checkpoints, {} logs ({} records): {}",
            self.shards,
            self.games,
            self.checkpoints,
            self.logs,
            self.records,
            match (damage, self.findings.len() - damage) {
                (0, 0) => "all intact".to_string(),
                (0, w) => format!("intact, {w} warning(s)"),
                (d, w) => format!("{d} damaged, {w} warning(s)"),
            }
        )
    }
}

/// Checks every file of the run directory at `root`.
pub fn check_run(root: &Path) -> CheckReport {
    let run = RunDir::new(root);
    let paths = run.paths();
    let mut report = CheckReport::default();
    if !root.is_dir() {
        report.add(Severity::Damage, root, "not a directory");
        return report;
    }
    let config_file = paths.config_file();
    if config_file.exists() {
        if let Err(e) = RunConfig::load(Some(&config_file)) {
            report.add(Severity::Damage, &config_file, e.to_string());
        }
    }
    // state.json and the files it names.
    match run.load_state() {
        Ok(Some(state)) => {
            let best = paths.resolve(&state.best);
            if !best.is_file() {
                report.add(
                    Severity::Damage,
                    &paths.state_file(),
                    format!("names best network {} which does not exist", state.best),
                );
            }
            for g in 0..state.generation {
                let model = paths.model_file(g);
                if !model.is_file() {
                    report.add(
                        Severity::Damage,
                        &paths.state_file(),
                        format!(
                            "is at generation {} but {} is missing",
                            state.generation,
                            yari_io::RunPaths::model_rel(g)
                        ),
                    );
                }
            }
            match run.read_summaries() {
                Ok(summaries) => {
                    // The generation being rated may already be in summary.json: a kill
                    // between that write and state.json's, which the resumed run rewrites.
                    let kill_window = |g: u32| {
                        g == state.generation && state.phase == crate::run_dir::Phase::Rate
                    };
                    for s in summaries
                        .iter()
                        .filter(|s| s.generation >= state.generation && !kill_window(s.generation))
                    {
                        report.add(
                            Severity::Damage,
                            &paths.summary_file(),
                            format!(
                                "has generation {} but state.json is only at generation {}",
                                s.generation, state.generation
                            ),
                        );
                    }
                }
                Err(e) => report.add(Severity::Damage, &paths.summary_file(), e.to_string()),
            }
            match yari_train::Trainer::read_state(root) {
                Ok(Some(ts)) => {
                    let ckpt = paths.train_dir().join(&ts.checkpoint);
                    check_checkpoint(&mut report, &ckpt);
                    let optim = paths.train_dir().join(&ts.optimizer_state);
                    if !optim.is_file() {
                        report.add(
                            Severity::Damage,
                            &optim,
                            "named by train/state.json but missing",
                        );
                    }
                }
                Ok(None) if state.generation > 1 => report.add(
                    Severity::Damage,
                    &paths.train_dir(),
                    "the trainer's state is missing, but the run has trained",
                ),
                Ok(None) => {}
                Err(e) => report.add(Severity::Damage, &paths.train_dir(), e.to_string()),
            }
        }
        Ok(None) => report.add(Severity::Damage, root, "no state.json: not a run directory"),
        Err(e) => report.add(Severity::Damage, &paths.state_file(), e.to_string()),
    }
    // Networks.
    for path in files_in(&paths.models_dir()) {
        if path.extension().is_some_and(|e| e == MODEL_EXTENSION) && !hidden(&path) {
            check_checkpoint(&mut report, &path);
        }
    }
    // Shards, in every folder under games/.
    let games = paths.games_dir();
    let mut dirs = vec![games.clone()];
    for entry in files_in(&games) {
        if real_dir(&entry) {
            dirs.push(entry);
        } else if std::fs::symlink_metadata(&entry).is_ok_and(|m| m.file_type().is_symlink()) {
            report.add(
                Severity::Warning,
                &entry,
                "a symbolic link under games/: not followed (no run writes one)",
            );
        }
    }
    for dir in dirs {
        let Ok(shards) = yari_selfplay::list_shards(&dir) else {
            continue;
        };
        // Shard names on anything but a regular file: skipped by training, so games missing.
        for path in files_in(&dir) {
            let named_shard = path.extension().is_some_and(|e| e == "yshard") && !hidden(&path);
            let regular = std::fs::symlink_metadata(&path).is_ok_and(|m| m.is_file());
            if named_shard && !regular {
                report.add(
                    Severity::Damage,
                    &path,
                    "named as a shard but not a regular file (a directory, pipe or link): \
                     its games are not read",
                );
            }
        }
        for shard in shards {
            report.shards += 1;
            match yari_selfplay::read_shard(&shard) {
                Ok(g) => report.games += g.len(),
                Err(e) => report.add(Severity::Damage, &shard, e.to_string()),
            }
        }
    }
    check_roles(&mut report, &run);
    // Logs.
    check_log::<yari_arena::GateDecision>(&mut report, &paths.ledger_file());
    check_log::<crate::RatingEntry>(&mut report, &paths.ratings_file());
    check_log::<yari_train::StepMetrics>(&mut report, &paths.metrics_file());
    for file in files_in(&paths.arena_dir()) {
        if file.extension().is_some_and(|e| e == "jsonl") {
            check_log::<yari_arena::GameRecord>(&mut report, &file);
        }
    }
    // Ratings name networks of the run that exist.
    if let Ok(ratings) = run.read_ratings() {
        for r in ratings.records {
            if let Some(g) = PlayerKey::generation_of(&r.player) {
                if !paths.model_file(g).is_file() {
                    report.add(
                        Severity::Damage,
                        &paths.ratings_file(),
                        format!("rates {} whose network is missing", r.player),
                    );
                }
            }
        }
    }
    // Temporary files of writes that never finished.
    for tmp in temp_files(root) {
        report.add(
            Severity::Warning,
            &tmp,
            "temporary file of an interrupted write (its target was never replaced; safe to delete)",
        );
    }
    report
}

/// The files of a many-machine run (`yari learn` and `yari worker`): shards waiting in
/// `incoming/` must verify like any other (a damaged one is a warning only, since the learner
/// moves it to `rejected/` and never trains on it), `rejected/` holds what was refused, and the
/// workers' status files must be status records.
fn check_roles(report: &mut CheckReport, run: &RunDir) {
    if let Ok(shards) = yari_selfplay::list_shards(run.incoming_dir()) {
        for shard in shards {
            report.shards += 1;
            match yari_selfplay::read_shard(&shard) {
                Ok(g) => report.games += g.len(),
                Err(e) => report.add(
                    Severity::Warning,
                    &shard,
                    format!("{e} (the learner moves it to rejected/, never trains on it)"),
                ),
            }
        }
    }
    if let Ok(shards) = yari_selfplay::list_shards(run.rejected_dir()) {
        for shard in shards {
            report.add(
                Severity::Warning,
                &shard,
                "refused by the learner (failed verification), never trained on; safe to delete",
            );
        }
    }
    for file in files_in(&run.workers_dir()) {
        if hidden(&file) || file.extension().is_none_or(|e| e != "json") {
            continue;
        }
        let parsed = std::fs::read_to_string(&file)
            .map_err(|e| e.to_string())
            .and_then(|t| {
                serde_json::from_str::<crate::WorkerStatus>(&t).map_err(|e| e.to_string())
            });
        if let Err(e) = parsed {
            report.add(Severity::Damage, &file, format!("not a worker status: {e}"));
        }
    }
    let finished = run.finished_file();
    if finished.exists() && !finished.is_file() {
        report.add(
            Severity::Damage,
            &finished,
            "the finished marker is not a file",
        );
    }
}

fn check_checkpoint(report: &mut CheckReport, path: &Path) {
    let loaded = yari_model::Checkpoint::read(path)
        .and_then(|c| c.into_net_any(&yari_model::default_device()).map(|_| ()));
    match loaded {
        Ok(()) => report.checkpoints += 1,
        Err(e) => report.add(Severity::Damage, path, e.to_string()),
    }
}

fn check_log<T: DeserializeOwned>(report: &mut CheckReport, path: &Path) {
    if !path.exists() {
        return;
    }
    match yari_io::jsonl::read::<T>(path) {
        Ok(read) => {
            report.logs += 1;
            report.records += read.records.len();
            for bad in &read.torn {
                report.add(
                    Severity::Warning,
                    path,
                    format!(
                        "line {}: a record cut short by a kill mid-write (only that record is lost)",
                        bad.line
                    ),
                );
            }
            for bad in &read.corrupt {
                report.add(
                    Severity::Damage,
                    path,
                    format!("line {}: not a record: {}", bad.line, bad.error),
                );
            }
        }
        Err(e) => report.add(Severity::Damage, path, e.to_string()),
    }
}

fn hidden(path: &Path) -> bool {
    path.file_name()
        .is_some_and(|n| n.to_string_lossy().starts_with('.'))
}

fn files_in(dir: &Path) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|entries| entries.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    out.sort();
    out
}

/// Whether `path` is a directory itself, not a link to one: the walks below never follow a
/// link (`games/root -> /` would walk the whole file system).
fn real_dir(path: &Path) -> bool {
    std::fs::symlink_metadata(path).is_ok_and(|m| m.is_dir())
}

fn temp_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for path in files_in(dir) {
        if real_dir(&path) {
            out.extend(temp_files(&path));
        } else if path
            .file_name()
            .and_then(|n| n.to_str())
            .is_some_and(yari_io::is_temp_name)
        {
            out.push(path);
        }
    }
    out
}
