//! The thinking part shared by `yari play` and `yari uci`: a network (or uniform priors) behind
//! a deterministic PUCT search that can be stopped at any moment, reporting as it goes.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use rand::SeedableRng;
use yari_model::eval::NetEvaluator;
use yari_rules::{EndReason, Move, Position};
use yari_search::{Evaluator, SearchConfig, SearchResult, UniformEvaluator};

/// The engine's default search: PUCT with this many simulations per move, for `yari play`
/// and for a UCI `go` without limits. One figure, so "the default search" means one thing
/// in the README's strength table.
///
/// 1,600 rather than 400: a trained network gains from the deeper search (the 4x48
/// generation-34 network scored 42% against alpha-beta depth 2 over 100 games at 400
/// simulations and 55% over 20 games at 1,600), and 1,600 simulations still answer in under
/// a second per move on one CPU core (that match: 20 games, two at a time, 7 minutes).
pub const DEFAULT_SIMULATIONS: u32 = 1600;

/// Where the shipped network lives, relative to the repository root.
pub const DEFAULT_MODEL: &str = "data/models/default.yari";

/// The shipped network: looked up in the working directory first, then in the source tree
/// this binary was built from, so `yari play` works from anywhere right after building.
pub fn default_model_path() -> Option<PathBuf> {
    let here = PathBuf::from(DEFAULT_MODEL);
    if here.is_file() {
        return Some(here);
    }
    let built = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .join(DEFAULT_MODEL);
    built.is_file().then_some(built)
}

/// Loads `path`, or the shipped network when `None`. The path `uniform` selects uniform priors
/// instead of a network, for trying the engine without a trained net.
pub fn load_evaluator(path: Option<&Path>) -> Result<(Arc<dyn Evaluator>, String)> {
    let path = match path {
        Some(p) => p.to_path_buf(),
        None => default_model_path().with_context(|| {
            format!("no --model given and the shipped network {DEFAULT_MODEL} was not found")
        })?,
    };
    if path.as_os_str() == "uniform" {
        return Ok((Arc::new(UniformEvaluator), "uniform".into()));
    }
    let eval = NetEvaluator::from_checkpoint(&path, yari_model::default_device())
        .with_context(|| format!("loading network {}", path.display()))?;
    Ok((Arc::new(eval), path.display().to_string()))
}

/// How long to think.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Budget {
    /// Stop after this many simulations.
    pub simulations: Option<u32>,
    /// Stop after this much time.
    pub movetime: Option<Duration>,
}

impl Budget {
    pub fn simulations(n: u32) -> Self {
        Budget {
            simulations: Some(n),
            movetime: None,
        }
    }

    /// Time for one move from a clock: a thirtieth of what is left plus most of the increment,
    /// never more than half the remaining time.
    pub fn from_clock(remaining: Duration, increment: Duration) -> Self {
        let t = remaining / 30 + increment * 3 / 4;
        let t = t.min(remaining / 2).max(Duration::from_millis(10));
        Budget {
            simulations: None,
            movetime: Some(t),
        }
    }
}

/// What the search thinks at one moment.
pub struct Thought {
    pub result: SearchResult,
    pub elapsed: Duration,
}

impl Thought {
    /// Centipawn-like score for the side to move (lc0's mapping of an expected score).
    pub fn centipawns(&self) -> i32 {
        let v = self.result.root_value.clamp(-0.999, 0.999) as f64;
        (90.0 * (1.563_754_189_7 * v).tan())
            .round()
            .clamp(-9999.0, 9999.0) as i32
    }

    /// Moves to mate along the principal variation (positive: the side to move mates).
    pub fn mate_in(&self, root: &Position) -> Option<i32> {
        let mut pos = root.clone();
        for (i, &mv) in self.result.pv.iter().enumerate() {
            if !pos.is_legal(mv) {
                return None;
            }
            pos.play(mv);
            if let Some(o) = pos.outcome() {
                if matches!(o.reason, EndReason::Checkmate | EndReason::Stalemate) {
                    let moves = (i as i32 + 2) / 2;
                    return Some(if o.winner == Some(root.side_to_move()) {
                        moves
                    } else {
                        -moves
                    });
                }
                return None;
            }
        }
        None
    }

    /// `score cp N` or `score mate N`, UCI style.
    pub fn uci_score(&self, root: &Position) -> String {
        match self.mate_in(root) {
            Some(m) => format!("mate {m}"),
            None => format!("cp {}", self.centipawns()),
        }
    }

    pub fn pv_text(&self) -> String {
        let pv: Vec<String> = self.result.pv.iter().map(Move::to_string).collect();
        pv.join(" ")
    }
}

/// A network plus search settings.
#[derive(Clone)]
pub struct Engine {
    evaluator: Arc<dyn Evaluator>,
    config: SearchConfig,
}

impl Engine {
    pub fn new(evaluator: Arc<dyn Evaluator>) -> Self {
        Engine {
            evaluator,
            // No ply cap: that is self-play's adjudication, not a rule; a game against a person
            // or another engine goes on until the rules end it.
            config: SearchConfig {
                ply_cap: 0,
                ..SearchConfig::puct()
            },
        }
    }

    /// Searches `pos` until the budget is spent or `stop` is raised; `report` is called about
    /// every half second with the current state (for `info` lines).
    pub fn think(
        &self,
        pos: &Position,
        budget: Budget,
        stop: &AtomicBool,
        mut report: impl FnMut(&Thought),
    ) -> Result<Thought> {
        let mut search = yari_search::Search::new(pos.clone(), self.config.clone())?;
        let simulations = budget
            .simulations
            .unwrap_or(yari_search::MAX_SIMULATIONS)
            .max(1);
        search.start(simulations, false)?;
        // PUCT without noise never draws from it; the rng only satisfies the signature.
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(0);
        let start = Instant::now();
        let deadline = budget.movetime.map(|t| start + t);
        let mut last_report = start;
        while let yari_search::Step::NeedEval(p) = search.step(&mut rng) {
            let evaluation = self.evaluator.evaluate(&[p]);
            match evaluation.first() {
                Some(e) => search.supply(e),
                None => anyhow::bail!("the evaluator returned no evaluation"),
            }
            let now = Instant::now();
            // Keep at least one simulation so there is a move to play.
            let may_stop = search.simulations_done() >= 1;
            if may_stop && (stop.load(Ordering::Relaxed) || deadline.is_some_and(|d| now >= d)) {
                search.stop();
                break;
            }
            if now - last_report >= Duration::from_millis(500) {
                last_report = now;
                report(&Thought {
                    result: search.result(),
                    elapsed: now - start,
                });
            }
        }
        Ok(Thought {
            result: search.result(),
            elapsed: start.elapsed(),
        })
    }
}
