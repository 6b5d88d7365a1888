//! `yari run`: the whole AlphaZero loop on one run directory, generation after generation:
//! self-play with the current best network, train a candidate on the replay window, gate it
//! against the best, promote or not, rate the best against fixed baselines.
//!
//! Every phase writes its results atomically and records its completion in `state.json`, so
//! re-running the same command resumes where a kill left off: at worst the games in flight
//! and the training steps since the last trainer checkpoint are redone.
//!
//! Run directory (`data/runs/<name>/` by default):
//!
//! | path | what |
//! |---|---|
//! | `config.toml` | the config of the run, fixed at creation (a resumed run uses it) |
//! | `state.json` | generation and phase reached, the current best network |
//! | `models/gen-NNNN.yari` | the candidate trained in generation N (gen-0000: random init) |
//! | `games/gen-NNNN/*.yshard` | self-play games of generation N |
//! | `train/` | the trainer's resumable state; `metrics.jsonl` its per-step metrics |
//! | `arena/*.jsonl` | every arena game (gating and rating), replayable |
//! | `ledger.jsonl` | every gating decision and rating, one JSON object per line |
//! | `summary.json` | one entry per finished generation |
//! | `plots/*.png` | losses and Elo per generation, refreshed each generation |

use std::fs;
use std::path::{Path, PathBuf};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};
use yari_arena::{
    gate, run_match, GameConfig, GateConfig, MatchConfig, PlayerSpec, SprtConfig, SprtModel,
};
use yari_selfplay::{run_selfplay, RunOptions, SelfplayConfig, ShardWriter};
use yari_train::{TrainConfig, Trainer};

/// The built-in default config: `configs/default.toml`, compiled in.
pub const DEFAULT_CONFIG: &str = include_str!("../../../configs/default.toml");

/// `[run]`: the budget and shape of the loop.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RunSection {
    /// Directory name under `data/runs/`.
    pub name: String,
    /// Stop after this many generations (0: no limit).
    pub generations: u32,
    /// Stop starting new generations after this many hours of this run's wall time in total,
    /// resumed sessions included (0: no limit).
    pub max_hours: f64,
    /// Self-play games per generation.
    pub games_per_generation: usize,
}

impl Default for RunSection {
    fn default() -> Self {
        RunSection {
            name: "default".into(),
            generations: 0,
            max_hours: 2.0,
            games_per_generation: 100,
        }
    }
}

/// `[gate]`: how a candidate is judged against the best.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct GateSection {
    /// Games of the gating match at most (SPRT may stop sooner); 0 promotes every candidate
    /// without a match.
    pub games: usize,
    /// Simulations per move for both networks.
    pub simulations: u32,
    /// Score (0–1) the candidate needs over all games when the SPRT did not decide.
    pub threshold: f64,
    /// Refuse a candidate that did not win more games than it lost (false: a non-regression
    /// gate, which with a threshold below 0.5 promotes every candidate not shown to be worse).
    pub require_edge: bool,
    /// SPRT bounds in Elo; elo1 <= elo0 disables the SPRT.
    pub sprt_elo0: f64,
    pub sprt_elo1: f64,
    /// SPRT error rates.
    pub sprt_alpha: f64,
    pub sprt_beta: f64,
    /// Random plies from the start position before the players take over, so that the
    /// deterministic searches do not replay one game.
    pub opening_plies: usize,
    /// Plies after which an arena game is a draw by adjudication.
    pub ply_cap: usize,
}

impl Default for GateSection {
    fn default() -> Self {
        GateSection {
            games: 40,
            simulations: 32,
            threshold: 0.55,
            require_edge: true,
            sprt_elo0: 0.0,
            sprt_elo1: 50.0,
            sprt_alpha: 0.05,
            sprt_beta: 0.05,
            opening_plies: 4,
            ply_cap: yari_rules::DEFAULT_PLY_CAP,
        }
    }
}

/// `[rating]`: the best network against fixed baselines after each generation.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RatingSection {
    /// Games against each baseline (0: no rating).
    pub games: usize,
    /// Simulations per move for the network.
    pub simulations: u32,
    /// Baseline players (arena specs), e.g. `random`, `alphabeta:2`.
    pub baselines: Vec<String>,
    /// Rate every this many generations (and always at the last one).
    pub every: u32,
    /// Rate only generations whose candidate was promoted: an unchanged best network was
    /// already rated, and arena time is time not spent on self-play.
    pub only_promoted: bool,
}

impl RatingSection {
    /// Whether generation `g` gets rating games: every `every` generations (only those that
    /// promoted a candidate when `only_promoted`), and always at the run's last generation.
    pub fn due(&self, g: u32, promoted: bool, last: bool) -> bool {
        if self.games == 0 {
            return false;
        }
        last || (g.is_multiple_of(self.every) && (promoted || !self.only_promoted))
    }
}

impl Default for RatingSection {
    fn default() -> Self {
        RatingSection {
            games: 20,
            simulations: 32,
            baselines: vec!["random".into(), "alphabeta:2".into()],
            every: 1,
            only_promoted: false,
        }
    }
}

/// A whole run's config: `configs/*.toml`.
#[derive(Clone, Debug, PartialEq, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RunConfig {
    pub run: RunSection,
    pub selfplay: SelfplayConfig,
    pub train: TrainConfig,
    pub gate: GateSection,
    pub rating: RatingSection,
}

impl RunConfig {
    pub fn parse(text: &str, origin: &str) -> Result<RunConfig> {
        let config: RunConfig =
            toml::from_str(text).with_context(|| format!("invalid config {origin}"))?;
        config
            .validate()
            .with_context(|| format!("invalid config {origin}"))?;
        Ok(config)
    }

    pub fn load(path: Option<&Path>) -> Result<RunConfig> {
        match path {
            None => RunConfig::parse(DEFAULT_CONFIG, "(built-in default)"),
            Some(p) => {
                let text =
                    fs::read_to_string(p).with_context(|| format!("reading {}", p.display()))?;
                RunConfig::parse(&text, &p.display().to_string())
            }
        }
    }

    pub fn validate(&self) -> Result<()> {
        let r = &self.run;
        if r.name.is_empty()
            || !r
                .name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
        {
            bail!(
                "run.name = {:?}: use letters, digits, '-', '_' or '.'",
                r.name
            );
        }
        if !(r.max_hours.is_finite() && r.max_hours >= 0.0) {
            bail!("run.max_hours = {}: must be >= 0", r.max_hours);
        }
        if r.generations == 0 && r.max_hours == 0.0 {
            bail!("run.generations and run.max_hours are both 0: the run would never stop");
        }
        if r.games_per_generation == 0 {
            bail!("run.games_per_generation must be at least 1");
        }
        self.selfplay.validate()?;
        self.train.validate()?;
        let g = &self.gate;
        if g.games > 0 && g.simulations == 0 {
            bail!("gate.simulations must be at least 1");
        }
        if !(0.0..=1.0).contains(&g.threshold) {
            bail!("gate.threshold = {}: must be in [0, 1]", g.threshold);
        }
        for (name, v) in [
            ("gate.sprt_elo0", g.sprt_elo0),
            ("gate.sprt_elo1", g.sprt_elo1),
        ] {
            if !(-1000.0..=1000.0).contains(&v) {
                bail!("{name} = {v}: must be an Elo difference in [-1000, 1000]");
            }
        }
        for (name, v) in [
            ("gate.sprt_alpha", g.sprt_alpha),
            ("gate.sprt_beta", g.sprt_beta),
        ] {
            if !(v > 0.0 && v < 0.5) {
                bail!("{name} = {v}: must be in (0, 0.5)");
            }
        }
        if g.ply_cap < 10 {
            bail!("gate.ply_cap = {}: must be at least 10", g.ply_cap);
        }
        let rt = &self.rating;
        if rt.games > 0 && rt.simulations == 0 {
            bail!("rating.simulations must be at least 1");
        }
        if rt.every == 0 {
            bail!("rating.every must be at least 1");
        }
        for b in &rt.baselines {
            PlayerSpec::parse(b).with_context(|| format!("rating.baselines: {b:?}"))?;
        }
        Ok(())
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
enum Phase {
    Selfplay,
    Train,
    Gate,
    Rate,
}

/// Progress of a run, rewritten atomically after every phase.
#[derive(Clone, Debug, Serialize, Deserialize)]
struct RunState {
    /// The generation being worked on (1-based; generation 0 is the random network).
    generation: u32,
    phase: Phase,
    /// The current best network, relative to the run directory.
    best: String,
    /// Trainer step at which this generation's training ends.
    train_target: Option<u64>,
    /// Wall time spent by all sessions of this run before the current one.
    elapsed_s: f64,
    /// What this generation's finished phases measured, so a resumed generation still
    /// reports them.
    #[serde(default)]
    summary: GenerationSummary,
}

/// One entry of `summary.json`.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
struct GenerationSummary {
    generation: u32,
    games: u64,
    positions: u64,
    selfplay_s: f64,
    /// Mean training losses of this generation's steps (`None` when none were run).
    loss: Option<f64>,
    policy_loss: Option<f64>,
    value_loss: Option<f64>,
    train_step: u64,
    candidate: String,
    promoted: bool,
    gate_score: Option<f64>,
    gate_elo: Option<f64>,
    best: String,
    /// Score and Elo (with 95% interval) of the best network against each baseline.
    ratings: Vec<serde_json::Value>,
    elapsed_s: f64,
}

fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    let tmp = path.with_extension("tmp");
    fs::write(&tmp, bytes).with_context(|| format!("writing {}", tmp.display()))?;
    fs::File::open(&tmp)
        .and_then(|f| f.sync_all())
        .with_context(|| format!("syncing {}", tmp.display()))?;
    fs::rename(&tmp, path).with_context(|| format!("renaming to {}", path.display()))?;
    Ok(())
}

fn log(message: &str) {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let (h, m, s) = ((now / 3600) % 24, (now / 60) % 60, now % 60);
    eprintln!("[{h:02}:{m:02}:{s:02} UTC] {message}");
}

pub(crate) fn gen_name(g: u32) -> String {
    format!("gen-{g:04}")
}

fn model_spec(run_dir: &Path, model: &str, sims: u32) -> PlayerSpec {
    PlayerSpec::Model {
        path: run_dir.join(model),
        sims,
        options: Default::default(),
    }
}

/// Opens (or creates) the run directory and runs generations until the budget is spent.
pub fn run(config_path: Option<&Path>, run_dir: Option<&Path>) -> Result<()> {
    let requested = RunConfig::load(config_path)?;
    let run_dir = match run_dir {
        Some(d) => d.to_path_buf(),
        None => PathBuf::from("data/runs").join(&requested.run.name),
    };
    fs::create_dir_all(&run_dir).with_context(|| format!("creating {}", run_dir.display()))?;
    let config_file = run_dir.join("config.toml");
    let config = if config_file.exists() {
        let stored = RunConfig::load(Some(&config_file))?;
        if config_path.is_some() && stored != requested {
            log(&format!(
                "note: {} already has a config; resuming with it, not with the one given",
                run_dir.display()
            ));
        }
        stored
    } else {
        let text = match config_path {
            Some(p) => fs::read_to_string(p).with_context(|| format!("reading {}", p.display()))?,
            None => DEFAULT_CONFIG.to_string(),
        };
        write_atomic(&config_file, text.as_bytes())?;
        requested
    };
    // A Ctrl-C ends the process at once: every file is written atomically and every phase is
    // resumable, so there is nothing to clean up.
    let _ = ctrlc::set_handler(|| {
        eprintln!("\ninterrupted: progress is saved; run the same command again to resume");
        std::process::exit(130);
    });
    Loop::open(run_dir, config)?.run()
}

struct Loop {
    dir: PathBuf,
    config: RunConfig,
    state: RunState,
    session_start: Instant,
}

impl Loop {
    fn open(dir: PathBuf, config: RunConfig) -> Result<Loop> {
        let state_file = dir.join("state.json");
        let state = if state_file.exists() {
            let text = fs::read_to_string(&state_file)
                .with_context(|| format!("reading {}", state_file.display()))?;
            let state: RunState = serde_json::from_str(&text)
                .with_context(|| format!("corrupt run state {}", state_file.display()))?;
            log(&format!(
                "resuming {} at generation {} ({:?}), best {}",
                dir.display(),
                state.generation,
                state.phase,
                state.best
            ));
            state
        } else {
            // Generation 0: the trainer's freshly initialised network.
            let trainer = Trainer::open(&dir, config.train.clone())?;
            let first = format!("models/{}.yari", gen_name(0));
            trainer.save_checkpoint(&dir.join(&first), 0, None)?;
            log(&format!(
                "new run in {}: generation 0 is {first}",
                dir.display()
            ));
            RunState {
                generation: 1,
                phase: Phase::Selfplay,
                best: first,
                train_target: None,
                elapsed_s: 0.0,
                summary: GenerationSummary::default(),
            }
        };
        Ok(Loop {
            dir,
            config,
            state,
            session_start: Instant::now(),
        })
    }

    fn elapsed_s(&self) -> f64 {
        self.state.elapsed_s + self.session_start.elapsed().as_secs_f64()
    }

    fn save_state(&mut self) -> Result<()> {
        let mut s = self.state.clone();
        s.elapsed_s = self.elapsed_s();
        write_atomic(
            &self.dir.join("state.json"),
            &serde_json::to_vec_pretty(&s)?,
        )
    }

    fn budget_left(&self) -> bool {
        let r = &self.config.run;
        let gens_ok = r.generations == 0 || self.state.generation <= r.generations;
        gens_ok && !self.time_spent()
    }

    /// Whether the run's wall-time budget is used up (never, without one).
    fn time_spent(&self) -> bool {
        let hours = self.config.run.max_hours;
        hours > 0.0 && self.elapsed_s() >= hours * 3600.0
    }

    fn run(mut self) -> Result<()> {
        while self.budget_left() || self.state.phase != Phase::Selfplay {
            let g = self.state.generation;
            self.state.summary.generation = g;
            match self.state.phase {
                Phase::Selfplay => {
                    let (games, positions, secs) = self.selfplay(g)?;
                    let s = &mut self.state.summary;
                    s.games = games;
                    s.positions += positions;
                    s.selfplay_s += secs;
                    self.state.phase = Phase::Train;
                }
                Phase::Train => {
                    let (loss, pl, vl, step) = self.train(g)?;
                    let s = &mut self.state.summary;
                    if loss.is_some() {
                        (s.loss, s.policy_loss, s.value_loss) = (loss, pl, vl);
                    }
                    s.train_step = step;
                    s.candidate = format!("models/{}.yari", gen_name(g));
                    self.state.phase = Phase::Gate;
                }
                Phase::Gate => {
                    let (promoted, score, elo) = self.gate(g)?;
                    let s = &mut self.state.summary;
                    s.promoted = promoted;
                    s.gate_score = score;
                    s.gate_elo = elo;
                    self.state.phase = Phase::Rate;
                }
                Phase::Rate => {
                    let ratings = self.rate(g)?;
                    let mut summary = std::mem::take(&mut self.state.summary);
                    summary.ratings = ratings;
                    summary.best = self.state.best.clone();
                    summary.elapsed_s = self.elapsed_s();
                    self.finish_generation(&summary)?;
                    self.state.generation += 1;
                    self.state.phase = Phase::Selfplay;
                    self.state.train_target = None;
                }
            }
            self.save_state()?;
        }
        log(&format!(
            "budget spent after generation {} ({:.2} h); best network {}",
            self.state.generation - 1,
            self.elapsed_s() / 3600.0,
            self.dir.join(&self.state.best).display()
        ));
        Ok(())
    }

    /// Plays this generation's games (those not already on disk) with the best network.
    fn selfplay(&mut self, g: u32) -> Result<(u64, u64, f64)> {
        let dir = self.dir.join("games").join(gen_name(g));
        fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
        let mut done_games = 0usize;
        for shard in yari_selfplay::list_shards(&dir)? {
            done_games += yari_selfplay::read_shard(&shard)
                .with_context(|| format!("reading {}", shard.display()))?
                .len();
        }
        let target = self.config.run.games_per_generation;
        let start = Instant::now();
        let mut positions = 0u64;
        if done_games < target {
            let remaining = target - done_games;
            log(&format!(
                "generation {g}: self-play {remaining} games with {}",
                self.state.best
            ));
            let evaluator = yari_model::eval::NetEvaluator::from_checkpoint(
                self.dir.join(&self.state.best),
                yari_model::default_device(),
            )
            .with_context(|| format!("loading {}", self.state.best))?;
            let mut sp = self.config.selfplay.clone();
            // A distinct stream per generation and per resumption point, so resumed games are
            // new games rather than repeats of the ones already stored.
            sp.seed = sp
                .seed
                .wrapping_mul(0x9E37_79B9)
                .wrapping_add(((g as u64) << 32) | done_games as u64);
            let prefix = format!("{}-{done_games:06}", gen_name(g));
            let mut writer = ShardWriter::new(&dir, prefix, sp.games_per_shard)?;
            let stats = run_selfplay(
                &evaluator,
                &sp,
                remaining,
                RunOptions {
                    progress: true,
                    deadline: None,
                },
                |game| writer.push(game),
            )?;
            writer.finish()?;
            positions = stats.samples as u64;
            log(&format!("generation {g}: {}", stats.summary()));
        }
        Ok((target as u64, positions, start.elapsed().as_secs_f64()))
    }

    /// Trains `steps_per_generation` steps (resuming a killed session's count) and writes the
    /// candidate `models/gen-NNNN.yari`.
    #[allow(clippy::type_complexity)]
    fn train(&mut self, g: u32) -> Result<(Option<f64>, Option<f64>, Option<f64>, u64)> {
        let mut trainer = Trainer::open(&self.dir, self.config.train.clone())?;
        let target = match self.state.train_target {
            Some(t) => t,
            None => {
                let t = trainer.step() + self.config.train.steps_per_generation;
                self.state.train_target = Some(t);
                self.save_state()?;
                t
            }
        };
        let steps = target.saturating_sub(trainer.step());
        log(&format!(
            "generation {g}: training {steps} steps (to step {target})"
        ));
        let (loss, pl, vl) = if steps > 0 {
            let s = trainer.train_steps(steps, true)?;
            log(&format!(
                "generation {g}: loss {:.4} (policy {:.4}, value {:.4}), {:.0} positions/s",
                s.loss, s.policy_loss, s.value_loss, s.samples_per_s
            ));
            (Some(s.loss), Some(s.policy_loss), Some(s.value_loss))
        } else {
            (None, None, None)
        };
        let candidate = format!("models/{}.yari", gen_name(g));
        trainer.save_checkpoint(&self.dir.join(&candidate), g, Some(self.state.best.clone()))?;
        Ok((loss, pl, vl, trainer.step()))
    }

    fn match_config(&self, games_file: PathBuf, seed: u64, games: usize) -> MatchConfig {
        MatchConfig {
            games,
            game: GameConfig {
                ply_cap: Some(self.config.gate.ply_cap),
            },
            openings: Vec::new(),
            opening_plies: self.config.gate.opening_plies,
            concurrency: 0,
            sprt: None,
            progress: true,
            games_file: Some(games_file),
            seed,
        }
    }

    /// Gates the candidate against the best; a promotion makes it the best.
    fn gate(&mut self, g: u32) -> Result<(bool, Option<f64>, Option<f64>)> {
        let candidate = format!("models/{}.yari", gen_name(g));
        let gc = &self.config.gate;
        if gc.games == 0 {
            self.state.best = candidate;
            return Ok((true, None, None));
        }
        let cand = model_spec(&self.dir, &candidate, gc.simulations);
        let best = model_spec(&self.dir, &self.state.best, gc.simulations);
        let ledger = yari_arena::ledger_path(&self.dir);
        // A decision already in the ledger (the process died after writing it) stands.
        let existing = if ledger.exists() {
            yari_arena::read_ledger(&ledger)?
                .records
                .into_iter()
                .rev()
                .find(|d| d.candidate == cand.name())
        } else {
            None
        };
        let decision = match existing {
            Some(d) => d,
            None => {
                let games_file =
                    yari_arena::games_dir(&self.dir).join(format!("gate-{}.jsonl", gen_name(g)));
                // A partial games file of a killed match would double-count its games.
                let _ = fs::remove_file(&games_file);
                log(&format!(
                    "generation {g}: gating {candidate} against {}",
                    self.state.best
                ));
                let config = GateConfig {
                    games: gc.games,
                    sprt: (gc.sprt_elo1 > gc.sprt_elo0).then_some(SprtConfig {
                        elo0: gc.sprt_elo0,
                        elo1: gc.sprt_elo1,
                        alpha: gc.sprt_alpha,
                        beta: gc.sprt_beta,
                        model: SprtModel::default(),
                    }),
                    threshold: gc.threshold,
                    require_edge: gc.require_edge,
                    match_config: self.match_config(games_file, g as u64, gc.games),
                    ledger: Some(ledger),
                };
                gate(cand.factory()?.as_ref(), best.factory()?.as_ref(), &config)?
            }
        };
        log(&format!(
            "generation {g}: gate {} {}-{}-{} score {:.3} Elo {:+.0} [{:+.0}, {:+.0}] -> {}",
            candidate,
            decision.wins,
            decision.draws,
            decision.losses,
            decision.score,
            decision.elo,
            decision.elo_low,
            decision.elo_high,
            if decision.promote {
                "promoted"
            } else {
                "kept best"
            }
        ));
        if decision.promote {
            self.state.best = candidate;
        }
        Ok((decision.promote, Some(decision.score), Some(decision.elo)))
    }

    /// Plays the best network against each baseline and records the results in the ledger.
    fn rate(&mut self, g: u32) -> Result<Vec<serde_json::Value>> {
        let rc = self.config.rating.clone();
        // The last generation: the generation cap is reached or the time is spent, so no
        // further generation will start after this one.
        let cap = self.config.run.generations;
        let last = (cap > 0 && g >= cap) || self.time_spent();
        if !rc.due(g, self.state.summary.promoted, last) {
            return Ok(Vec::new());
        }
        let best = model_spec(&self.dir, &self.state.best, rc.simulations);
        let mut out = Vec::new();
        for baseline in &rc.baselines {
            let spec = PlayerSpec::parse(baseline)?;
            let tag = baseline.replace([':', '/'], "_");
            let games_file =
                yari_arena::games_dir(&self.dir).join(format!("rate-{}-{tag}.jsonl", gen_name(g)));
            let _ = fs::remove_file(&games_file);
            log(&format!(
                "generation {g}: rating {} against {baseline} ({} games)",
                self.state.best, rc.games
            ));
            let result = run_match(
                best.factory()?.as_ref(),
                spec.factory()?.as_ref(),
                &self.match_config(games_file, 1000 + g as u64, rc.games),
            )?;
            let elo = result.wdl.elo();
            let entry = serde_json::json!({
                "kind": "rating",
                "generation": g,
                "player": self.state.best,
                "opponent": baseline,
                "wins": result.wdl.wins,
                "draws": result.wdl.draws,
                "losses": result.wdl.losses,
                "score": result.wdl.score(),
                "elo": finite_or_null(elo.elo),
                "elo_low": finite_or_null(elo.low),
                "elo_high": finite_or_null(elo.high),
            });
            log(&format!(
                "generation {g}: vs {baseline}: {}-{}-{} score {:.3} Elo {:+.0} [{:+.0}, {:+.0}]",
                result.wdl.wins,
                result.wdl.draws,
                result.wdl.losses,
                result.wdl.score(),
                elo.elo,
                elo.low,
                elo.high
            ));
            append_line(&self.dir.join("ratings.jsonl"), &entry)?;
            out.push(entry);
        }
        Ok(out)
    }

    fn finish_generation(&mut self, summary: &GenerationSummary) -> Result<()> {
        let path = self.dir.join("summary.json");
        let mut all: Vec<GenerationSummary> = if path.exists() {
            serde_json::from_str(
                &fs::read_to_string(&path)
                    .with_context(|| format!("reading {}", path.display()))?,
            )
            .with_context(|| format!("corrupt {}", path.display()))?
        } else {
            Vec::new()
        };
        all.retain(|s| s.generation != summary.generation);
        all.push(summary.clone());
        write_atomic(&path, &serde_json::to_vec_pretty(&all)?)?;
        let ratings: Vec<String> = summary
            .ratings
            .iter()
            .map(|r| {
                format!(
                    "vs {} {:.0}%",
                    r["opponent"].as_str().unwrap_or("?"),
                    r["score"].as_f64().unwrap_or(0.0) * 100.0
                )
            })
            .collect();
        log(&format!(
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
        if let Err(e) = yari_train::plot::plot_run(&self.dir) {
            log(&format!("plots not refreshed: {e}"));
        }
        Ok(())
    }
}

fn fmt_loss(x: Option<f64>) -> String {
    x.map(|v| format!("{v:.3}")).unwrap_or_else(|| "-".into())
}

fn finite_or_null(x: f64) -> serde_json::Value {
    if x.is_finite() {
        serde_json::json!(x)
    } else {
        serde_json::Value::Null
    }
}

/// Appends one JSON line in one write, so a kill leaves at most a torn last line.
fn append_line(path: &Path, value: &serde_json::Value) -> Result<()> {
    use std::io::Write;
    let mut line = serde_json::to_string(value)?;
    line.push('\n');
    let mut f = fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .with_context(|| format!("opening {}", path.display()))?;
    f.write_all(line.as_bytes())?;
    f.sync_data()?;
    Ok(())
}

/// Reads one table of a config file: either a file holding just that table's fields, or a
/// whole run config (then its `[name]` table). Validated like a whole run config.
pub fn section_from_file<T: serde::de::DeserializeOwned>(path: &Path, name: &str) -> Result<T> {
    let text = fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    let table: toml::Table =
        toml::from_str(&text).with_context(|| format!("invalid TOML in {}", path.display()))?;
    let whole = ["run", "selfplay", "train", "gate", "rating"]
        .iter()
        .any(|k| table.contains_key(*k));
    if whole {
        let config = RunConfig::parse(&text, &path.display().to_string())?;
        let value = match name {
            "selfplay" => toml::Value::try_from(&config.selfplay)?,
            _ => toml::Value::try_from(&config.train)?,
        };
        return Ok(value.try_into()?);
    }
    let value: T = toml::Value::Table(table)
        .try_into()
        .with_context(|| format!("invalid [{name}] config {}", path.display()))?;
    Ok(value)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rating_is_due_every_n_generations_and_only_after_promotions_when_asked() {
        let mut rc = RatingSection {
            every: 2,
            ..RatingSection::default()
        };
        assert!(rc.due(2, false, false));
        assert!(!rc.due(3, true, false));
        assert!(
            rc.due(3, false, true),
            "the last generation is always rated"
        );
        rc.only_promoted = true;
        assert!(rc.due(4, true, false));
        assert!(!rc.due(4, false, false));
        assert!(rc.due(5, false, true));
        rc.games = 0;
        assert!(!rc.due(4, true, true), "no games, no rating");
    }

    #[test]
    fn nan_and_huge_gate_bounds_are_refused() {
        for text in [
            "[gate]\nsprt_elo0 = nan",
            "[gate]\nsprt_elo1 = inf",
            "[gate]\nsprt_elo0 = 1e9",
        ] {
            let err = RunConfig::parse(text, "test").unwrap_err();
            assert!(
                format!("{err:#}").contains("gate.sprt_elo"),
                "{text}: {err:#}"
            );
        }
    }

    #[test]
    fn shipped_configs_load_and_validate() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../configs");
        for name in ["default", "smoke", "gpu"] {
            let path = dir.join(format!("{name}.toml"));
            let config = RunConfig::load(Some(&path)).unwrap();
            assert_eq!(config.run.name, name);
        }
        let builtin = RunConfig::load(None).unwrap();
        assert_eq!(
            builtin,
            RunConfig::load(Some(&dir.join("default.toml"))).unwrap()
        );
        assert!(builtin.run.max_hours > 0.0);
    }

    #[test]
    fn sections_read_from_whole_or_partial_files() {
        let tmp = tempfile::tempdir().unwrap();
        let whole = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../configs/smoke.toml");
        let sp: SelfplayConfig = section_from_file(&whole, "selfplay").unwrap();
        assert_eq!(sp.full_simulations, 8);
        let tc: TrainConfig = section_from_file(&whole, "train").unwrap();
        assert_eq!(tc.net.channels, 8);
        let partial = tmp.path().join("sp.toml");
        fs::write(&partial, "full_simulations = 5\n").unwrap();
        let sp: SelfplayConfig = section_from_file(&partial, "selfplay").unwrap();
        assert_eq!(sp.full_simulations, 5);
        fs::write(&partial, "full_simulation = 5\n").unwrap();
        assert!(section_from_file::<SelfplayConfig>(&partial, "selfplay").is_err());
    }
}
