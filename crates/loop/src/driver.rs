//! [`Loop`]: the generation state machine that `yari run` drives.

use std::path::{Path, PathBuf};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use yari_io::layout::parse_generation_name;
use yari_io::RunPaths;
use yari_model::{Backend, Checkpoint};
use yari_train::Trainer;

use crate::phases;
use crate::run_dir::{GenerationSummary, Phase, RunDir, RunState};
use crate::source::{GameSource, GamesRequest};
use crate::{Log, LoopError, RunConfig, DEFAULT_CONFIG};

/// Opens the run directory of `yari run` (creating it and its `config.toml` on first use) and
/// its loop, as the directory's one writer (`role`, e.g. `yari run`, names this process to a
/// second one, which is refused). An existing run keeps the config it was created with;
/// `run_dir` defaults to `data/runs/<run.name>`.
pub fn open_run(
    config_path: Option<&Path>,
    run_dir: Option<&Path>,
    role: &str,
    backend: &Backend,
    log: Log,
) -> Result<Loop, LoopError> {
    let requested = RunConfig::load(config_path)?;
    let root = match run_dir {
        Some(d) => d.to_path_buf(),
        None => PathBuf::from("data/runs").join(&requested.run.name),
    };
    let run = RunDir::new(root);
    run.create()?;
    let lock = run.lock_writer(role)?;
    let config_file = run.paths().config_file();
    let config = if config_file.exists() {
        let stored = RunConfig::load(Some(&config_file))?;
        if config_path.is_some() && stored != requested {
            log(&format!(
                "note: {} already has a config; resuming with it, not with the one given",
                run.root().display()
            ));
        }
        stored
    } else {
        let text = match config_path {
            Some(p) => yari_io::read_regular_text(p, yari_io::MAX_CONFIG_BYTES)
                .map_err(|e| LoopError::io(p, e))?,
            None => DEFAULT_CONFIG.to_string(),
        };
        yari_io::write_atomic(&config_file, text.as_bytes())?;
        requested
    };
    let mut run = Loop::open(run, config, backend.clone(), log)?;
    run._writer_lock = Some(lock);
    Ok(run)
}

/// A run being worked on: its directory, config and state.
pub struct Loop {
    dir: RunDir,
    config: RunConfig,
    state: RunState,
    session_start: Instant,
    log: Log,
    /// Where a generation's games come from: played in this process (`yari run`), or taken
    /// from workers (`yari learn`).
    source: Box<dyn GameSource>,
    /// What this process computes on: self-play, training and the arena's networks.
    backend: Backend,
    /// This process's hold on the run directory ([`open_run`] takes it).
    _writer_lock: Option<crate::run_dir::WriterLock>,
    /// The per-generation TensorBoard scalars of this session (opened at its first generation).
    events: Option<yari_io::tensorboard::EventWriter>,
}

impl Loop {
    /// Loads the run's state, or starts a new run (generation 0: the trainer's freshly
    /// initialised network) in a directory without one.
    ///
    /// Refuses a run that has trained but lost its trainer state. A best network that no longer
    /// loads (damaged on disk) is replaced by the newest one that does, with a message.
    pub fn open(
        dir: RunDir,
        config: RunConfig,
        backend: Backend,
        log: Log,
    ) -> Result<Loop, LoopError> {
        let record = backend.record();
        log(&format!(
            "backends: {}, inference {}, training {}",
            record.device, record.inference, record.training
        ));
        let state = match dir.load_state()? {
            Some(mut state) => {
                log(&format!(
                    "resuming {} at generation {} ({:?}), best {}",
                    dir.root().display(),
                    state.generation,
                    state.phase,
                    state.best
                ));
                check_trainer(&dir, &state)?;
                // Temporary files of writes a kill cut short (a checkpoint's is a megabyte):
                // these folders have one writer, the process that holds the run.
                let p = dir.paths();
                for folder in [p.root().to_path_buf(), p.models_dir(), p.train_dir()] {
                    if folder.is_dir() {
                        for removed in yari_io::remove_stale_temp_files(&folder, |_| true)? {
                            log(&format!(
                                "removed {}, left by a write that was cut short",
                                removed.display()
                            ));
                        }
                    }
                }
                if let Some(good) = fallback_best(&dir, &state, log)? {
                    state.best = good;
                    dir.save_state(&state)?;
                }
                state
            }
            None => {
                // A run's files without its state: starting afresh would overwrite them.
                let p = dir.paths();
                let holds = [
                    p.models_dir(),
                    p.train_dir(),
                    p.games_dir(),
                    p.arena_dir(),
                    p.ledger_file(),
                    p.ratings_file(),
                    p.summary_file(),
                    p.metrics_file(),
                ];
                let present: Vec<String> = holds
                    .iter()
                    .filter(|f| f.exists())
                    .filter_map(|f| f.file_name().map(|n| n.to_string_lossy().into_owned()))
                    .collect();
                if !present.is_empty() {
                    return Err(LoopError::Corrupt {
                        path: p.state_file(),
                        what: format!(
                            "missing, but the directory holds a run's files ({}): a new run would \
                             overwrite them; restore state.json from a backup, or give an empty \
                             --run-dir",
                            present.join(", ")
                        ),
                    });
                }
                let trainer = Trainer::open_on(dir.root(), config.train.clone(), None, &backend)?;
                let state = RunState::new_run();
                trainer.save_checkpoint(&dir.paths().resolve(&state.best), 0, None)?;
                log(&format!(
                    "new run in {}: generation 0 is {}",
                    dir.root().display(),
                    state.best
                ));
                dir.save_state(&state)?;
                state
            }
        };
        Ok(Loop {
            dir,
            config,
            state,
            session_start: Instant::now(),
            log,
            source: Box::new(phases::InProcess {
                backend: backend.clone(),
            }),
            backend,
            _writer_lock: None,
            events: None,
        })
    }

    /// This loop with its games from `source` instead of its own self-play (the learner's
    /// intake of workers' games).
    pub fn with_source(mut self, source: Box<dyn GameSource>) -> Loop {
        self.source = source;
        self
    }

    /// The run directory.
    pub fn dir(&self) -> &RunDir {
        &self.dir
    }

    /// The run's config.
    pub fn config(&self) -> &RunConfig {
        &self.config
    }

    /// The state as of the last finished phase.
    pub fn state(&self) -> &RunState {
        &self.state
    }

    fn elapsed_s(&self) -> f64 {
        self.state.elapsed_s + self.session_start.elapsed().as_secs_f64()
    }

    fn save_state(&mut self) -> Result<(), LoopError> {
        let mut s = self.state.clone();
        s.elapsed_s = self.elapsed_s();
        self.dir.save_state(&s)
    }

    /// How far the run is through its budget, 0 to 1: wall time against `max_hours` when it
    /// has one, else the generation against `generations`.
    pub fn progress(&self) -> f64 {
        self.config
            .run
            .progress(self.elapsed_s(), self.state.generation)
    }

    /// Whether the run's wall-time budget is used up (never, without one).
    fn time_spent(&self) -> bool {
        let hours = self.config.run.max_hours;
        hours > 0.0 && self.elapsed_s() >= hours * 3600.0
    }

    /// Whether another generation may start (a started one is always finished).
    pub fn budget_left(&self) -> bool {
        let r = &self.config.run;
        let gens_ok = (r.generations == 0 || self.state.generation <= r.generations)
            && self.state.generation <= crate::run_dir::MAX_GENERATION;
        gens_ok && !self.time_spent()
    }

    /// Whether [`Loop::run`] has more to do: a generation in progress, or budget for another.
    pub fn has_work(&self) -> bool {
        self.budget_left() || self.state.phase != Phase::Selfplay
    }

    /// Runs the phase the state names, records its outcome and moves the state on (saved
    /// atomically). Returns the phase that ran.
    pub fn step(&mut self) -> Result<Phase, LoopError> {
        let g = self.state.generation;
        self.state.summary.generation = g;
        let phase = self.state.phase;
        let log = self.log;
        match phase {
            Phase::Selfplay => {
                let request = GamesRequest {
                    generation: g,
                    best: &self.state.best,
                    target: self.state.games_target(&self.config),
                    progress: self.progress(),
                };
                let out = self.source.games(&self.dir, &self.config, &request, log)?;
                let s = &mut self.state.summary;
                if !out.workers.is_empty() {
                    s.workers = out.workers;
                }
                s.games = out.games;
                s.positions += out.positions;
                s.selfplay_s += out.seconds;
                self.state.phase = Phase::Train;
            }
            Phase::Train => {
                let target = match self.state.train_target {
                    Some(t) => t,
                    None => {
                        let t = phases::train_target(&self.dir, &self.config)?;
                        self.state.train_target = Some(t);
                        self.save_state()?;
                        t
                    }
                };
                let best = self.state.best.clone();
                let progress = self.progress();
                let out = match phases::train(
                    &self.backend,
                    &self.dir,
                    &self.config,
                    g,
                    &best,
                    target,
                    progress,
                    log,
                ) {
                    Err(LoopError::Train(yari_train::TrainError::NotEnoughData {
                        have,
                        need,
                        ..
                    })) => {
                        // Too few positions to train on yet: this generation plays more
                        // games (another generation's worth) instead of failing on every
                        // resume.
                        let games = self.state.summary.games;
                        let more = self.config.run.games_per_generation as u64;
                        log(&format!(
                            "generation {g}: the replay window has {have} positions, \
                                 training needs {need} (train.window.min_positions): playing \
                                 {more} more games first"
                        ));
                        self.state.games_target =
                            Some(self.state.games_target(&self.config).max(games) + more);
                        self.state.phase = Phase::Selfplay;
                        self.save_state()?;
                        return Ok(phase);
                    }
                    other => other?,
                };
                let s = &mut self.state.summary;
                if out.loss.is_some() {
                    (s.loss, s.policy_loss, s.value_loss, s.lr) =
                        (out.loss, out.policy_loss, out.value_loss, out.lr);
                }
                s.train_step = out.step;
                s.candidate = out.candidate;
                self.state.phase = Phase::Gate;
            }
            Phase::Gate => {
                let candidate = RunPaths::model_rel(g);
                let best = self.state.best.clone();
                let out = phases::gate(
                    &self.backend,
                    &self.dir,
                    &self.config,
                    g,
                    &candidate,
                    &best,
                    log,
                )?;
                let s = &mut self.state.summary;
                s.promoted = out.promoted;
                s.gate_score = out.score;
                s.gate_elo = out.elo;
                self.state.best = out.best;
                self.state.phase = Phase::Rate;
            }
            Phase::Rate => {
                // The last generation: the generation cap is reached or the time is spent, so
                // no further generation will start after this one.
                let cap = self.config.run.generations;
                let last = (cap > 0 && g >= cap) || self.time_spent();
                let ratings = if self.config.rating.due(g, self.state.summary.promoted, last) {
                    let best = self.state.best.clone();
                    phases::rate(&self.backend, &self.dir, &self.config, g, &best, log)?
                } else {
                    Vec::new()
                };
                self.finish_generation(ratings)?;
            }
        }
        self.save_state()?;
        Ok(phase)
    }

    /// Closes the current generation: its summary (with `ratings`) goes to `summary.json`, the
    /// plots are refreshed, and the state moves to the next generation's self-play.
    pub fn finish_generation(
        &mut self,
        ratings: Vec<crate::RatingEntry>,
    ) -> Result<GenerationSummary, LoopError> {
        let mut summary = std::mem::take(&mut self.state.summary);
        summary.generation = self.state.generation;
        summary.ratings = ratings;
        summary.best = self.state.best.clone();
        summary.elapsed_s = self.elapsed_s();
        summary.backends = Some(self.backend.record());
        self.dir.record_summary(&summary)?;
        // The ladder as of this generation: its own ratings, else the latest ones of the run.
        let ladder = if summary.ratings.is_empty() {
            self.dir
                .read_summaries()?
                .into_iter()
                .rev()
                .find(|s| !s.ratings.is_empty())
                .map(|s| s.ratings)
                .unwrap_or_default()
        } else {
            summary.ratings.clone()
        };
        (self.log)(&generation_line(&summary, &self.config.run, &ladder));
        self.write_events(&summary)?;
        if let Err(e) = crate::plot::plot_run(self.dir.root()) {
            (self.log)(&format!("plots not refreshed: {e}"));
        }
        self.state.generation += 1;
        self.state.phase = Phase::Selfplay;
        self.state.train_target = None;
        self.state.games_target = None;
        Ok(summary)
    }

    /// A finished generation's scalars for TensorBoard, at step = the generation: self-play,
    /// the gate, and each rung's score and Elo (`tensorboard --logdir RUN_DIR/tensorboard`).
    fn write_events(&mut self, summary: &GenerationSummary) -> Result<(), LoopError> {
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0.0, |d| d.as_secs_f64());
        if self.events.is_none() {
            let host = crate::run_dir::host_name().unwrap_or_else(|| "yari".into());
            self.events = Some(yari_io::tensorboard::EventWriter::create(
                &self.dir.paths().tensorboard_dir(),
                &host,
                now,
            )?);
        }
        let mut values: Vec<(String, f64)> = vec![
            ("generation/games".into(), summary.games as f64),
            ("generation/positions".into(), summary.positions as f64),
            (
                "generation/elapsed_hours".into(),
                summary.elapsed_s / 3600.0,
            ),
            (
                "gate/promoted".into(),
                f64::from(u8::from(summary.promoted)),
            ),
        ];
        if summary.selfplay_s > 0.0 {
            values.push((
                "selfplay/positions_per_s".into(),
                summary.positions as f64 / summary.selfplay_s,
            ));
        }
        if let Some(score) = summary.gate_score {
            values.push(("gate/score".into(), score));
        }
        for r in &summary.ratings {
            let rung = yari_io::layout::name_part(&r.opponent, &[':']);
            values.push((format!("rating/{rung}/score"), r.score));
            if let Some(elo) = r.elo {
                values.push((format!("rating/{rung}/elo"), elo));
            }
        }
        let values: Vec<(&str, f64)> = values.iter().map(|(t, v)| (t.as_str(), *v)).collect();
        if let Some(events) = &mut self.events {
            events.scalars(u64::from(summary.generation), now, &values)?;
        }
        Ok(())
    }

    /// Runs phases until the budget is spent (finishing a started generation).
    pub fn run(&mut self) -> Result<(), LoopError> {
        let finished = self.dir.finished_file();
        // A run whose budget was raised (a config edited by hand) is not finished any more.
        if self.has_work() && finished.exists() {
            std::fs::remove_file(&finished).map_err(|e| LoopError::io(&finished, e))?;
        }
        while self.has_work() {
            self.step()?;
        }
        // Tells the workers to stop.
        yari_io::write_atomic(&finished, format!("{}\n", self.state.best).as_bytes())?;
        (self.log)(&format!(
            "budget spent after generation {} ({:.2} h); best network {}",
            self.state.generation - 1,
            self.elapsed_s() / 3600.0,
            self.dir.paths().resolve(&self.state.best).display()
        ));
        Ok(())
    }
}

fn fmt_loss(x: Option<f64>) -> String {
    x.map(|v| format!("{v:.3}")).unwrap_or_else(|| "-".into())
}

/// `h:mm:ss`.
fn fmt_hms(seconds: f64) -> String {
    let s = seconds.max(0.0).round() as u64;
    format!("{}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60)
}

/// Seconds until the run's budget is spent, from what it has done so far: the wall time
/// left under `max_hours`, the generations left under `generations` at the mean time a
/// generation has taken, the sooner of the two; `None` without a budget.
fn run_eta_s(run: &crate::RunSection, elapsed_s: f64, generation: u32) -> Option<f64> {
    let by_time = (run.max_hours > 0.0).then(|| (run.max_hours * 3600.0 - elapsed_s).max(0.0));
    let by_generations = (run.generations > 0 && generation > 0).then(|| {
        let per_generation = elapsed_s / generation as f64;
        run.generations.saturating_sub(generation) as f64 * per_generation
    });
    match (by_time, by_generations) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// The 95% Wilson interval of a score of `score` over `games` games, in [0, 1].
fn wilson(score: f64, games: u64) -> (f64, f64) {
    if games == 0 {
        return (0.0, 1.0);
    }
    let n = games as f64;
    let z = 1.96f64;
    let d = 1.0 + z * z / n;
    let centre = (score + z * z / (2.0 * n)) / d;
    let half = z * (score * (1.0 - score) / n + z * z / (4.0 * n * n)).sqrt() / d;
    ((centre - half).max(0.0), (centre + half).min(1.0))
}

/// The one line a finished generation gets: where the run is (elapsed against the budget, the
/// ETA of its end), what the generation did (games, positions, losses, lr, the gate), and the
/// ladder as last rated, each rung with its 95% interval and the generation that played it.
fn generation_line(
    summary: &GenerationSummary,
    run: &crate::RunSection,
    ladder: &[crate::RatingEntry],
) -> String {
    let g = summary.generation;
    let mut budget = Vec::new();
    if run.generations > 0 {
        budget.push(format!("of {}", run.generations));
    }
    let mut clock = fmt_hms(summary.elapsed_s);
    if run.max_hours > 0.0 {
        clock += &format!(" of {}", fmt_hms(run.max_hours * 3600.0));
    }
    budget.push(clock);
    if let Some(eta) = run_eta_s(run, summary.elapsed_s, g) {
        budget.push(format!("ETA {}", fmt_hms(eta)));
    }
    let gate = match summary.gate_score {
        Some(s) => format!(
            "gate {:.0}% {}",
            s * 100.0,
            if summary.promoted {
                "promoted"
            } else {
                "rejected"
            }
        ),
        None if summary.promoted => "promoted without a gate".into(),
        None => "no gate".into(),
    };
    let lr = summary
        .lr
        .map(|lr| format!(", lr {lr:.2e}"))
        .unwrap_or_default();
    let rungs: Vec<String> = ladder
        .iter()
        .map(|r| {
            let games = r.wins + r.draws + r.losses;
            let (low, high) = wilson(r.score, games);
            format!(
                "{} {}-{}-{} {:.0}% [{:.0}, {:.0}]{}",
                r.opponent,
                r.wins,
                r.draws,
                r.losses,
                r.score * 100.0,
                low * 100.0,
                high * 100.0,
                if r.generation == g {
                    String::new()
                } else {
                    format!(" (gen {})", r.generation)
                }
            )
        })
        .collect();
    format!(
        "== generation {g} {} | {} games, {} positions | loss {} (policy {}, value {}){lr} | {gate}, best {}{}{}",
        budget.join(", "),
        summary.games,
        summary.positions,
        fmt_loss(summary.loss),
        fmt_loss(summary.policy_loss),
        fmt_loss(summary.value_loss),
        summary.best,
        if rungs.is_empty() { "" } else { " | " },
        rungs.join(", ")
    )
}

/// A run that has trained needs its trainer state: without it, `Trainer::open` would start a
/// fresh network at step 0 and the run would silently forget its training.
fn check_trainer(dir: &RunDir, state: &RunState) -> Result<(), LoopError> {
    if Trainer::read_state(dir.root())?.is_some() {
        return Ok(());
    }
    let trained = dir
        .read_summaries()?
        .iter()
        .map(|s| s.train_step)
        .chain([state.summary.train_step])
        .max()
        .unwrap_or(0);
    if trained > 0 || state.train_target.is_some_and(|t| t > 0) || state.generation > 1 {
        return Err(LoopError::MissingTrainer {
            path: dir.paths().train_dir(),
            steps: trained,
        });
    }
    Ok(())
}

/// When the best network no longer loads, the newest network of the run that does, or an
/// error when none does. `None`: the best network is fine.
fn fallback_best(dir: &RunDir, state: &RunState, log: Log) -> Result<Option<String>, LoopError> {
    let best = dir.paths().resolve(&state.best);
    let damage = match Checkpoint::read(&best) {
        Ok(_) => return Ok(None),
        Err(e) => e,
    };
    let models = dir.paths().models_dir();
    let mut generations: Vec<u32> = std::fs::read_dir(&models)
        .map_err(|e| LoopError::io(&models, e))?
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().into_string().ok()?;
            parse_generation_name(name.strip_suffix(".yari")?)
        })
        .filter(|&g| g < state.generation)
        .collect();
    generations.sort_unstable_by(|a, b| b.cmp(a));
    for g in generations {
        let rel = RunPaths::model_rel(g);
        if rel == state.best {
            continue;
        }
        if Checkpoint::read(dir.paths().resolve(&rel)).is_ok() {
            log(&format!(
                "warning: the best network {} does not load ({damage}); falling back to {rel}, \
                 the newest network of the run that does (the damaged file is left in place)",
                state.best
            ));
            return Ok(Some(rel));
        }
    }
    Err(LoopError::NoGoodNetwork {
        path: best,
        what: format!("{damage}, and no other network of the run loads"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{RatingEntry, RunSection};

    fn run(max_hours: f64, generations: u32) -> RunSection {
        RunSection {
            max_hours,
            generations,
            ..RunSection::default()
        }
    }

    #[test]
    fn the_eta_is_the_sooner_end_of_the_budget() {
        // Two hours, half an hour spent: 1.5 h left.
        assert_eq!(run_eta_s(&run(2.0, 0), 1800.0, 10), Some(5400.0));
        // 10 of 40 generations in 1,000 s: 30 more at 100 s each.
        assert_eq!(run_eta_s(&run(0.0, 40), 1000.0, 10), Some(3000.0));
        // Both: the generations run out first.
        assert_eq!(run_eta_s(&run(2.0, 40), 1000.0, 10), Some(3000.0));
        // Past the time budget: nothing left, never negative.
        assert_eq!(run_eta_s(&run(1.0, 0), 4000.0, 10), Some(0.0));
        assert_eq!(run_eta_s(&run(0.0, 0), 4000.0, 10), None);
        assert_eq!(fmt_hms(5400.0), "1:30:00");
        assert_eq!(fmt_hms(59.6), "0:01:00");
    }

    #[test]
    fn a_generation_line_says_where_the_run_is_and_what_the_ladder_reads() {
        let summary = GenerationSummary {
            generation: 12,
            games: 256,
            positions: 6012,
            loss: Some(2.3456),
            policy_loss: Some(1.5),
            value_loss: Some(0.8456),
            lr: Some(0.0123),
            gate_score: Some(0.4),
            promoted: true,
            best: "models/gen-0012.yari".into(),
            elapsed_s: 1800.0,
            ..GenerationSummary::default()
        };
        let rung = |generation, opponent: &str, wins, losses| RatingEntry {
            kind: "rating".into(),
            generation,
            player: crate::PlayerKey::generation(12),
            opponent: opponent.into(),
            wins,
            draws: 0,
            losses,
            score: wins as f64 / (wins + losses) as f64,
            elo: None,
            elo_low: None,
            elo_high: None,
        };
        let ladder = [
            rung(12, "fsf[nodes=100]", 10, 10),
            rung(6, "fsf[nodes=1000]", 2, 18),
        ];
        let line = generation_line(&summary, &run(2.0, 0), &ladder);
        assert!(
            line.starts_with("== generation 12 0:30:00 of 2:00:00, ETA 1:30:00 | "),
            "{line}"
        );
        for part in [
            "256 games, 6012 positions",
            "loss 2.346 (policy 1.500, value 0.846), lr 1.23e-2",
            "gate 40% promoted",
            "fsf[nodes=100] 10-0-10 50% [30, 70]",
            "fsf[nodes=1000] 2-0-18 10% [3, 30] (gen 6)",
        ] {
            assert!(line.contains(part), "{part:?} not in {line:?}");
        }
        let rejected = GenerationSummary {
            promoted: false,
            gate_score: Some(0.2),
            ..summary.clone()
        };
        let line = generation_line(&rejected, &run(0.0, 40), &[]);
        assert!(line.contains("gate 20% rejected"), "{line}");
        assert!(
            line.starts_with("== generation 12 of 40, 0:30:00, ETA 1:10:00 | "),
            "{line}"
        );
        assert!(!line.contains("fsf"), "{line}");
    }
}
