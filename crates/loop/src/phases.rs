//! The phases of a generation, each one function with typed inputs and outputs.
//!
//! Every phase is idempotent with respect to a kill: what it finds already done on disk (games
//! of the generation, training steps up to the target, a gating decision in the ledger,
//! ratings of the generation in `ratings.jsonl`) is kept and not redone, so running a phase
//! again after a kill only finishes it.

use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::time::Instant;

use yari_arena::{
    GameConfig, GameView, GateConfig, MatchConfig, Player, PlayerError, PlayerFactory, PlayerSpec,
    SprtConfig, SprtModel,
};
use yari_io::layout::generation_name;
use yari_io::RunPaths;
use yari_model::Backend;
use yari_rules::Move;
use yari_selfplay::{play_into_shards, RunOptions, SelfplayConfig, ShardWriter};
use yari_train::Trainer;

use crate::run_dir::{PlayerKey, RatingEntry, RunDir};
use crate::source::{GameSource, GamesIn, GamesRequest};
use crate::Log;
use crate::{LoopError, RunConfig};

/// What the self-play phase did.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct SelfplayOutcome {
    /// Games of the generation on disk now.
    pub games: u64,
    /// Positions of the games played by this call.
    pub positions: u64,
    /// Seconds this call spent.
    pub seconds: f64,
}

/// Finished games in the shards of `dir` (0 for a missing folder).
pub fn count_games(dir: &Path) -> Result<usize, LoopError> {
    if !dir.exists() {
        return Ok(0);
    }
    let mut n = 0;
    for shard in yari_selfplay::list_shards(dir)? {
        n += yari_selfplay::read_shard(&shard)?.len();
    }
    Ok(n)
}

/// Finished games under every folder of `games/`: what a learner compares with the count at
/// its last generation to know how many new games the workers have written.
pub fn total_games(run: &RunDir) -> Result<usize, LoopError> {
    let games = run.paths().games_dir();
    let mut n = count_games(&games)?;
    if games.exists() {
        let entries = std::fs::read_dir(&games).map_err(|e| LoopError::io(&games, e))?;
        for entry in entries.flatten() {
            if entry.path().is_dir() {
                n += count_games(&entry.path())?;
            }
        }
    }
    Ok(n)
}

/// A shard name prefix no other process writing into the same folder uses: the host name and
/// the process id (with the generation, for the shards of a single-process run).
pub fn worker_prefix() -> String {
    let host = yari_io::layout::name_part(&host_name().unwrap_or_else(|| "host".into()), &['-']);
    format!("{host}-{}", std::process::id())
}

pub use crate::run_dir::host_name;

/// What one batch of self-play wrote.
#[derive(Clone, Debug, Default)]
pub struct BatchOutcome {
    /// Finished games written to shards.
    pub games: u64,
    /// Training positions of those games.
    pub positions: u64,
    /// Seconds spent playing.
    pub seconds: f64,
    /// Whether `stop` cut the batch short (the games then in flight were dropped).
    pub stopped: bool,
    /// The self-play statistics line (empty when stopped).
    pub summary: String,
}

/// Plays `games` games with `evaluator` into shards `{prefix}-NNNNN.yshard` in `out`: the one
/// self-play routine of `yari run` (a generation's games) and of a worker (a batch). Once
/// `stop` is set the batch ends between two rounds of the search; every finished game is still
/// written, the games in flight are dropped.
pub fn play_batch(
    evaluator: &dyn yari_search::Evaluator,
    selfplay: &SelfplayConfig,
    games: usize,
    out: &Path,
    prefix: &str,
    progress: bool,
    stop: Option<&AtomicBool>,
) -> Result<BatchOutcome, LoopError> {
    let start = Instant::now();
    let writer = ShardWriter::new(out, prefix, selfplay.games_per_shard)?;
    let never = AtomicBool::new(false);
    let run = play_into_shards(
        evaluator,
        selfplay,
        games,
        writer,
        RunOptions {
            progress,
            ..RunOptions::default()
        },
        stop.unwrap_or(&never),
    )?;
    let stats = run.stats;
    Ok(BatchOutcome {
        games: stats.games as u64,
        positions: stats.samples,
        seconds: start.elapsed().as_secs_f64(),
        stopped: stats.stopped,
        summary: if stats.stopped {
            String::new()
        } else {
            stats.summary()
        },
    })
}

/// Loads the run's network `network` for self-play.
pub fn load_network(
    backend: &Backend,
    run: &RunDir,
    network: &str,
) -> Result<yari_model::eval::NetEvaluator, LoopError> {
    let path = run.paths().resolve(network);
    backend
        .load_evaluator(&path)
        .map_err(|source| LoopError::Checkpoint {
            path,
            source: Box::new(source),
        })
}

/// The config's self-play settings with `seed` mixed into the seed, so that distinct
/// generations, resumption points and workers play distinct games.
pub fn seeded(config: &RunConfig, seed: u64) -> SelfplayConfig {
    let mut sp = config.selfplay.clone();
    sp.seed = sp.seed.wrapping_mul(0x9E37_79B9).wrapping_add(seed);
    sp
}

/// Self-play in this process with the run's best network (`yari run`'s [`GameSource`]), at
/// the progressive simulation budget of the run's progress
/// ([`yari_selfplay::SelfplayConfig::simulation_ramp`]), on the loop's backend.
pub struct InProcess {
    pub backend: Backend,
}

impl GameSource for InProcess {
    fn games(
        &mut self,
        run: &RunDir,
        config: &RunConfig,
        request: &GamesRequest<'_>,
        log: Log,
    ) -> Result<GamesIn, LoopError> {
        let g = request.generation;
        let mut played = config.clone();
        played.selfplay = config.selfplay.at_progress(request.progress);
        if played.selfplay != config.selfplay {
            log(&format!(
                "generation {g}: progressive budget at {:.0}% of the run: {}/{} simulations",
                100.0 * request.progress,
                played.selfplay.full_simulations,
                played.selfplay.cheap_simulations
            ));
        }
        let out = selfplay(
            &self.backend,
            run,
            &played,
            g,
            request.best,
            request.target,
            log,
        )?;
        Ok(GamesIn {
            games: out.games,
            positions: out.positions,
            seconds: out.seconds,
            workers: Default::default(),
        })
    }
}

/// Plays generation `g`'s games that are not already on disk with the network `best`.
pub fn selfplay(
    backend: &Backend,
    run: &RunDir,
    config: &RunConfig,
    g: u32,
    best: &str,
    target: u64,
    log: Log,
) -> Result<SelfplayOutcome, LoopError> {
    let dir = run.paths().generation_games_dir(g);
    std::fs::create_dir_all(&dir).map_err(|e| LoopError::io(&dir, e))?;
    let done = count_games(&dir)?;
    let target = usize::try_from(target).unwrap_or(usize::MAX);
    let start = Instant::now();
    let mut positions = 0;
    if done < target {
        let remaining = target - done;
        log(&format!(
            "generation {g}: self-play {remaining} games with {best}"
        ));
        // A distinct stream per generation and per resumption point, so resumed games are new
        // games rather than repeats of the ones already stored.
        let seed = ((g as u64) << 32) | done as u64;
        let prefix = format!("{}-{done:06}", generation_name(g));
        let evaluator = load_network(backend, run, best)?;
        let outcome = play_batch(
            &evaluator,
            &seeded(config, seed),
            remaining,
            &dir,
            &prefix,
            true,
            None,
        )?;
        log(&format!("generation {g}: self-play: {}", outcome.summary));
        positions = outcome.positions;
    }
    Ok(SelfplayOutcome {
        games: target.max(done) as u64,
        positions,
        seconds: start.elapsed().as_secs_f64(),
    })
}

/// What the training phase did.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TrainOutcome {
    /// Mean losses of the steps run by this call (`None`: none were left to run).
    pub loss: Option<f64>,
    /// Mean policy loss.
    pub policy_loss: Option<f64>,
    /// Mean value loss.
    pub value_loss: Option<f64>,
    /// Learning rate of the last step run (`None`: none were left to run).
    pub lr: Option<f64>,
    /// Trainer step after training.
    pub step: u64,
    /// The candidate written, relative to the run directory.
    pub candidate: String,
}

/// The trainer step at which a generation that starts training now should stop.
pub fn train_target(run: &RunDir, config: &RunConfig) -> Result<u64, LoopError> {
    let step = Trainer::read_state(run.root())?.map_or(0, |s| s.step);
    Ok(step + config.train.steps_per_generation)
}

/// Trains up to step `target` (resuming a killed session's steps) and writes generation `g`'s
/// candidate `models/gen-NNNN.yari`, recording `parent` as the network it descends from.
/// `run_progress` (in [0, 1], [`crate::RunSection::progress`]) sets a `run_cosine` lr.
#[allow(clippy::too_many_arguments)]
pub fn train(
    backend: &Backend,
    run: &RunDir,
    config: &RunConfig,
    g: u32,
    parent: &str,
    target: u64,
    run_progress: f64,
    log: Log,
) -> Result<TrainOutcome, LoopError> {
    let mut trainer = Trainer::open_on(run.root(), config.train.clone(), None, backend)?;
    trainer.set_run_progress(run_progress.clamp(0.0, 1.0))?;
    let steps = target.saturating_sub(trainer.step());
    log(&format!(
        "generation {g}: training {steps} steps (to step {target})"
    ));
    let mut out = TrainOutcome::default();
    if steps > 0 {
        let result = trainer.train_steps(steps, true);
        set_aside(run, trainer.take_skipped_shards(), log);
        let s = result?;
        (out.loss, out.policy_loss, out.value_loss) =
            (Some(s.loss), Some(s.policy_loss), Some(s.value_loss));
        out.lr = Some(s.lr);
        // A generation resumed after a kill ran only its last steps here: its losses are the
        // mean over all of its steps, as the metrics log recorded them.
        let first = target.saturating_sub(config.train.steps_per_generation);
        let all: Vec<_> = yari_train::read_metrics(&run.paths().metrics_file())?
            .into_iter()
            .filter(|m| m.step > first && m.step <= target)
            .collect();
        if all.len() as u64 > steps {
            let mean = |f: fn(&yari_train::StepMetrics) -> f64| {
                all.iter().map(f).sum::<f64>() / all.len() as f64
            };
            (out.loss, out.policy_loss, out.value_loss) = (
                Some(mean(|m| m.loss)),
                Some(mean(|m| m.policy_loss)),
                Some(mean(|m| m.value_loss)),
            );
        }
        log(&format!(
            "generation {g}: loss {:.4} (policy {:.4}, value {:.4}), lr {:.2e}, {:.0} positions/s",
            out.loss.unwrap_or(s.loss),
            out.policy_loss.unwrap_or(s.policy_loss),
            out.value_loss.unwrap_or(s.value_loss),
            s.lr,
            s.samples_per_s
        ));
    }
    out.candidate = RunPaths::model_rel(g);
    let candidate = candidate_net(backend, run, config, g, trainer.inference_net(), log)?;
    trainer.save_net(
        &candidate,
        &run.paths().resolve(&out.candidate),
        g,
        Some(parent.to_string()),
    )?;
    out.step = trainer.step();
    Ok(out)
}

/// Generation `g`'s candidate from the `trained` weights: those weights, or with
/// `run.candidate_ema` their blend with generation g − 1's candidate. That candidate is on
/// disk until the next one is written, so a generation resumed after a kill blends the same
/// two networks again.
fn candidate_net(
    backend: &Backend,
    run: &RunDir,
    config: &RunConfig,
    g: u32,
    trained: yari_model::Net,
    log: Log,
) -> Result<yari_model::Net, LoopError> {
    let share = config.run.candidate_share(g);
    if share <= 0.0 {
        return Ok(trained);
    }
    let previous = RunPaths::model_rel(g - 1);
    let path = run.paths().resolve(&previous);
    let (previous_net, _) =
        yari_model::checkpoint::load(&path, &config.train.net, backend.device()).map_err(
            |source| LoopError::Checkpoint {
                path: path.clone(),
                source: Box::new(source),
            },
        )?;
    log(&format!(
        "generation {g}: candidate = {share:.2} x {previous} + {:.2} x the trained weights",
        1.0 - share
    ));
    yari_model::average::blend(&previous_net, &trained, share as f32).map_err(|e| {
        LoopError::Corrupt {
            path,
            what: format!("cannot be blended with the trained weights: {e}"),
        }
    })
}

/// Moves shards the trainer could not read into `rejected/` (as the learner does with
/// workers' shards), so that a damaged shard is reported once and never stops a resume; a
/// shard that cannot be moved is left where it is, reported, and skipped again next time.
fn set_aside(run: &RunDir, skipped: Vec<(std::path::PathBuf, String)>, log: Log) {
    for (path, why) in skipped {
        let rejected = run.rejected_dir();
        // The generation folder in the name keeps shards of different generations apart.
        let folder = path
            .parent()
            .and_then(|p| p.file_name())
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let name = path.file_name().unwrap_or_default().to_string_lossy();
        let target = rejected.join(format!("{folder}-{name}"));
        let moved = std::fs::create_dir_all(&rejected)
            .and_then(|()| std::fs::rename(&path, &target))
            .is_ok();
        log(&format!(
            "warning: training without shard {}: {why}{}",
            path.display(),
            if moved {
                format!(" (moved to {})", target.display())
            } else {
                String::new()
            }
        ));
    }
}

/// A player factory whose players carry the run's key as their name, so that game files,
/// the ledger and the rating list name a network `gen-0012` wherever the run directory is.
struct Keyed {
    key: PlayerKey,
    inner: Box<dyn PlayerFactory>,
}

struct KeyedPlayer {
    key: String,
    inner: Box<dyn Player>,
}

impl Player for KeyedPlayer {
    fn name(&self) -> &str {
        &self.key
    }
    fn new_game(&mut self, seed: u64) -> Result<(), PlayerError> {
        self.inner.new_game(seed)
    }
    fn choose_move(&mut self, game: &GameView<'_>) -> Result<Move, PlayerError> {
        self.inner.choose_move(game)
    }
}

impl PlayerFactory for Keyed {
    fn name(&self) -> String {
        self.key.to_string()
    }
    fn build(&self) -> Result<Box<dyn Player>, PlayerError> {
        Ok(Box::new(KeyedPlayer {
            key: self.key.to_string(),
            inner: self.inner.build()?,
        }))
    }
}

/// The run's network `rel`, loaded on `backend`, as an arena player named by its key.
fn network_player(
    backend: &Backend,
    run: &RunDir,
    rel: &str,
    sims: u32,
) -> Result<Box<dyn PlayerFactory>, LoopError> {
    let evaluator = load_network(backend, run, rel)?;
    Ok(Box::new(Keyed {
        key: PlayerKey::of_model(rel),
        inner: Box::new(yari_arena::search::model_factory(
            rel,
            std::sync::Arc::new(evaluator),
            sims,
            &Default::default(),
        )),
    }))
}

fn match_config(config: &RunConfig, games_file: PathBuf, seed: u64, games: usize) -> MatchConfig {
    MatchConfig {
        games,
        game: GameConfig {
            ply_cap: Some(config.gate.ply_cap),
            clock: None,
        },
        openings: Vec::new(),
        opening_plies: config.gate.opening_plies,
        concurrency: 0,
        sprt: None,
        progress: true,
        games_file: Some(games_file),
        seed,
        game_lines: false,
        interrupt: None,
    }
}

/// What the gate decided.
#[derive(Clone, Debug, PartialEq)]
pub struct GateOutcome {
    /// Whether the candidate became the best.
    pub promoted: bool,
    /// The candidate's score (`None`: no match was played).
    pub score: Option<f64>,
    /// The candidate's Elo against the best.
    pub elo: Option<f64>,
    /// The best network after the gate, relative to the run directory.
    pub best: String,
}

/// Gates generation `g`'s `candidate` against `best`. A decision already in the ledger for
/// this candidate (the process died after writing it) stands and is not played again.
pub fn gate(
    backend: &Backend,
    run: &RunDir,
    config: &RunConfig,
    g: u32,
    candidate: &str,
    best: &str,
    log: Log,
) -> Result<GateOutcome, LoopError> {
    let gc = &config.gate;
    if gc.games == 0 {
        return Ok(GateOutcome {
            promoted: true,
            score: None,
            elo: None,
            best: candidate.to_string(),
        });
    }
    let key = PlayerKey::of_model(candidate);
    let ledger = run.paths().ledger_file();
    let existing = yari_arena::read_ledger(&ledger)?
        .records
        .into_iter()
        .rev()
        .find(|d| PlayerKey::from_recorded(&d.candidate) == key);
    let decision = match existing {
        Some(d) => d,
        None => {
            let games_file = run
                .paths()
                .arena_dir()
                .join(format!("gate-{}.jsonl", generation_name(g)));
            // A partial games file of a killed match would double-count its games.
            let _ = std::fs::remove_file(&games_file);
            log(&format!(
                "generation {g}: gating {candidate} against {best}"
            ));
            let cand = network_player(backend, run, candidate, gc.simulations)?;
            let best_player = network_player(backend, run, best, gc.simulations)?;
            let gate_config = GateConfig {
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
                match_config: match_config(config, games_file, g as u64, gc.games),
                ledger: Some(ledger),
            };
            yari_arena::gate(cand.as_ref(), best_player.as_ref(), &gate_config)?
        }
    };
    log(&format!(
        "generation {g}: gate {candidate} {}-{}-{} score {:.3} Elo {:+.0} [{:+.0}, {:+.0}] -> {}",
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
    Ok(GateOutcome {
        promoted: decision.promote,
        score: Some(decision.score),
        elo: Some(decision.elo),
        best: if decision.promote {
            candidate.to_string()
        } else {
            best.to_string()
        },
    })
}

fn finite(x: f64) -> Option<f64> {
    x.is_finite().then_some(x)
}

/// Plays the network `best` against each baseline of the config, and against each outside
/// rung whose engine starts, and appends the results to `ratings.jsonl`. Opponents that
/// already have a rating of this network in this generation (the process died before the
/// generation was closed) are not played again, so a resumed generation never records a
/// rating twice.
pub fn rate(
    backend: &Backend,
    run: &RunDir,
    config: &RunConfig,
    g: u32,
    best: &str,
    log: Log,
) -> Result<Vec<RatingEntry>, LoopError> {
    let rc = &config.rating;
    let key = PlayerKey::of_model(best);
    let done: Vec<RatingEntry> = run
        .read_ratings()?
        .records
        .into_iter()
        .filter(|r| r.generation == g && r.player == key)
        .collect();
    let rungs = rc
        .baselines
        .iter()
        .map(|b| (b, rc.simulations, false))
        .chain(rc.outside.iter().map(|b| (b, rc.outside_sims(), true)));
    let mut out = Vec::new();
    for (opponent, sims, outside) in rungs {
        if let Some(r) = done.iter().rev().find(|r| &r.opponent == opponent) {
            out.push(r.clone());
            continue;
        }
        let spec = PlayerSpec::parse(opponent).map_err(yari_arena::ArenaError::from)?;
        if outside && !outside_engine_starts(opponent, &spec, log) {
            continue;
        }
        let tag = opponent.replace([':', '/', '[', ']', '=', ','], "_");
        let games_file = run
            .paths()
            .arena_dir()
            .join(format!("rate-{}-{tag}.jsonl", generation_name(g)));
        let _ = std::fs::remove_file(&games_file);
        log(&format!(
            "generation {g}: rating {best} ({sims} simulations) against {opponent} ({} games)",
            rc.games
        ));
        let network = network_player(backend, run, best, sims)?;
        let result = yari_arena::run_match(
            network.as_ref(),
            spec.factory()?.as_ref(),
            &match_config(config, games_file, 1000 + g as u64, rc.games),
        )?;
        let elo = result.wdl.elo();
        let entry = RatingEntry {
            kind: "rating".into(),
            generation: g,
            player: key.clone(),
            opponent: opponent.clone(),
            wins: result.wdl.wins,
            draws: result.wdl.draws,
            losses: result.wdl.losses,
            score: result.wdl.score(),
            elo: finite(elo.elo),
            elo_low: finite(elo.low),
            elo_high: finite(elo.high),
        };
        log(&format!(
            "generation {g}: vs {opponent}: {}-{}-{} score {:.3} Elo {:+.0} [{:+.0}, {:+.0}]",
            entry.wins, entry.draws, entry.losses, entry.score, elo.elo, elo.low, elo.high
        ));
        run.append_rating(&entry)?;
        out.push(entry);
    }
    Ok(out)
}

/// Whether the outside engine of `spec` starts and answers the UCI handshake. Probed once a
/// process (a run rates many generations) and, when it does not start, said once: an engine
/// that is not installed skips its rung, it does not stop the run.
fn outside_engine_starts(text: &str, spec: &PlayerSpec, log: Log) -> bool {
    static PROBED: std::sync::Mutex<Vec<(String, bool)>> = std::sync::Mutex::new(Vec::new());
    let mut probed = PROBED.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((_, ok)) = probed.iter().find(|(t, _)| t == text) {
        return *ok;
    }
    let started = match spec {
        PlayerSpec::Uci(config) => yari_arena::uci::UciEngine::start(config.clone()).map(drop),
        _ => Ok(()),
    };
    let ok = match started {
        Ok(()) => true,
        Err(e) => {
            let hint = match &e {
                // The error already names the missing file and the install command.
                yari_arena::PlayerError::NotInstalled { .. } if text.starts_with("fsf") => {
                    " (run it in the directory yari runs in, or set YARI_FSF_JS to its uci.js)"
                }
                _ if text.starts_with("fsf") => {
                    " (install Fairy-Stockfish's npm build with `npm install --prefix .fsf \
                     fairy-stockfish-nnue.wasm` in the directory yari runs in, or set \
                     YARI_FSF_JS to its uci.js)"
                }
                _ => "",
            };
            log(&format!(
                "rating: outside rung {text} skipped for this run: its engine did not start: {e}{hint}"
            ));
            false
        }
    };
    probed.push((text.to_string(), ok));
    ok
}
