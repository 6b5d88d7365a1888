//! [`Loop`]: the generation state machine that `yari run` drives.

use std::path::{Path, PathBuf};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use yari_io::layout::parse_generation_name;
use yari_io::RunPaths;
use yari_model::Checkpoint;
use yari_train::Trainer;

use crate::phases;
use crate::run_dir::{GenerationSummary, Phase, RunDir, RunState};
use crate::{LoopError, RunConfig, DEFAULT_CONFIG};

/// Where progress messages go (one line each).
pub type Log = fn(&str);

/// Writes a progress message to stderr with a UTC time stamp.
pub fn stderr_log(message: &str) {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let (h, m, s) = ((now / 3600) % 24, (now / 60) % 60, now % 60);
    eprintln!("[{h:02}:{m:02}:{s:02} UTC] {message}");
}

/// Opens the run directory of `yari run` (creating it and its `config.toml` on first use) and
/// its loop. An existing run keeps the config it was created with; `run_dir` defaults to
/// `data/runs/<run.name>`.
pub fn open_run(
    config_path: Option<&Path>,
    run_dir: Option<&Path>,
    log: Log,
) -> Result<Loop, LoopError> {
    let requested = RunConfig::load(config_path)?;
    let root = match run_dir {
        Some(d) => d.to_path_buf(),
        None => PathBuf::from("data/runs").join(&requested.run.name),
    };
    let run = RunDir::new(root);
    run.create()?;
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
            Some(p) => std::fs::read_to_string(p).map_err(|e| LoopError::io(p, e))?,
            None => DEFAULT_CONFIG.to_string(),
        };
        yari_io::write_atomic(&config_file, text.as_bytes())?;
        requested
    };
    Loop::open(run, config, log)
}

/// A run being worked on: its directory, config and state.
pub struct Loop {
    dir: RunDir,
    config: RunConfig,
    state: RunState,
    session_start: Instant,
    log: Log,
    /// Where a generation's games come from: `None`, played in this process (`yari run`);
    /// an intake, written by workers into `incoming/` (`yari learn`).
    intake: Option<crate::roles::Intake>,
}

impl Loop {
    /// Loads the run's state, or starts a new run (generation 0: the trainer's freshly
    /// initialised network) in a directory without one.
    ///
    /// Refuses a run that has trained but lost its trainer state. A best network that no longer
    /// loads (damaged on disk) is replaced by the newest one that does, with a message.
    pub fn open(dir: RunDir, config: RunConfig, log: Log) -> Result<Loop, LoopError> {
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
                if let Some(good) = fallback_best(&dir, &state, log)? {
                    state.best = good;
                    dir.save_state(&state)?;
                }
                state
            }
            None => {
                let trainer = Trainer::open(dir.root(), config.train.clone())?;
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
            intake: None,
        })
    }

    /// This loop with its self-play phase replaced by the intake of workers' games.
    pub fn with_intake(mut self, intake: crate::roles::Intake) -> Loop {
        self.intake = Some(intake);
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
        let gens_ok = r.generations == 0 || self.state.generation <= r.generations;
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
                let (games, positions, seconds) = match &mut self.intake {
                    None => {
                        // The progressive simulation budget
                        // ([`yari_selfplay::SelfplayConfig::simulation_ramp`]) at the run's
                        // progress, read once so the log says what was played.
                        let progress = self.progress();
                        let mut config = self.config.clone();
                        config.selfplay = config.selfplay.at_progress(progress);
                        if config.selfplay != self.config.selfplay {
                            log(&format!(
                                "generation {g}: progressive budget at {:.0}% of the run: {}/{} \
                                 simulations",
                                100.0 * progress,
                                config.selfplay.full_simulations,
                                config.selfplay.cheap_simulations
                            ));
                        }
                        let out = phases::selfplay(&self.dir, &config, g, &self.state.best, log)?;
                        (out.games, out.positions, out.seconds)
                    }
                    Some(intake) => {
                        let out =
                            crate::roles::take_games(&self.dir, &self.config, intake, g, log)?;
                        self.state.summary.workers = out.workers;
                        (out.games, out.positions, out.seconds)
                    }
                };
                let s = &mut self.state.summary;
                s.games = games;
                s.positions += positions;
                s.selfplay_s += seconds;
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
                let out = phases::train(&self.dir, &self.config, g, &best, target, progress, log)?;
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
                let out = phases::gate(&self.dir, &self.config, g, &candidate, &best, log)?;
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
                    phases::rate(&self.dir, &self.config, g, &best, log)?
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
        self.dir.record_summary(&summary)?;
        let ratings: Vec<String> = summary
            .ratings
            .iter()
            .map(|r| format!("vs {} {:.0}%", r.opponent, r.score * 100.0))
            .collect();
        (self.log)(&format!(
            "== generation {}: {} games, {} positions, loss {} (policy {} value {}), gate {}, best {}{}{}",
            summary.generation,
            summary.games,
            summary.positions,
            fmt_loss(summary.loss),
            fmt_loss(summary.policy_loss),
            fmt_loss(summary.value_loss),
            match summary.gate_score {
                Some(s) => format!("{:.0}%{}", s * 100.0, if summary.promoted { " promoted" } else { "" }),
                None => "skipped".into(),
            },
            summary.best,
            if ratings.is_empty() { "" } else { ", " },
            ratings.join(", ")
        ));
        if let Err(e) = yari_train::plot::plot_run(self.dir.root()) {
            (self.log)(&format!("plots not refreshed: {e}"));
        }
        self.state.generation += 1;
        self.state.phase = Phase::Selfplay;
        self.state.train_target = None;
        Ok(summary)
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
