//! The engine behind `yari play`, `yari uci` and the arena's network players: one batched
//! search ([`crate::batched`]) on a pool of threads, the tree kept from move to move, and the
//! time a move may take.
//!
//! Time follows lc0 and KataGo: a clock gives each move a share of what is left (more when
//! the search is still contested at that point, up to a hard limit), and any search stops as
//! soon as the most visited move cannot be overtaken in the time left ("smart pruning").

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rand::SeedableRng;
use rayon::ThreadPool;
use thiserror::Error;
use yari_rules::{EndReason, Move, Position};

use crate::batched::{Batching, Control};
use crate::config::SearchConfig;
use crate::eval::Evaluator;
use crate::mcts::{PvLine, Search, SearchError, SearchResult, MAX_SIMULATIONS};

/// The engine's default search: PUCT with this many simulations per move, for `yari play`,
/// a UCI `go` without limits and the arena's `model:FILE` without a count. One figure, so that
/// "the default search" means one thing in the README's strength table.
pub const DEFAULT_SIMULATIONS: u32 = 1600;

/// Why an engine could not be built.
#[derive(Debug, Error)]
pub enum EngineError {
    #[error(transparent)]
    Search(#[from] SearchError),
    #[error("threads must be between 1 and {MAX_THREADS}, not {0}")]
    Threads(usize),
    #[error("the batch must be between 1 and {MAX_BATCH} leaves, not {0}")]
    Batch(usize),
    #[error("cannot start {threads} search threads: {reason}")]
    Pool { threads: usize, reason: String },
}

/// Most search threads an engine takes.
pub const MAX_THREADS: usize = 512;
/// Largest batch of leaves.
pub const MAX_BATCH: usize = 4096;

/// How the engine spreads a search over the machine.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EngineOptions {
    /// Threads that run the mate search and the network on a batch's leaves.
    pub threads: usize,
    /// Leaves gathered per batch for each thread (the network's batch on one thread).
    pub batch_per_thread: usize,
    /// Batches in flight per thread (see [`Batching::batches_per_worker`]).
    pub batches_per_thread: usize,
    /// Time kept back from every move for the GUI and the pipe (UCI `Move Overhead`).
    pub move_overhead: Duration,
    /// Lines of play each [`Thought`] carries (UCI `MultiPV`).
    pub multipv: usize,
}

impl EngineOptions {
    /// All the machine's cores, the batch `docs/experiments.md` measured best.
    pub fn all_cores() -> Self {
        EngineOptions {
            threads: std::thread::available_parallelism().map_or(1, |n| n.get()),
            ..Self::one_thread()
        }
    }

    /// One thread, one leaf at a time: the search of the arena's players before batching.
    pub fn sequential() -> Self {
        EngineOptions {
            threads: 1,
            batch_per_thread: 1,
            batches_per_thread: 1,
            move_overhead: Duration::from_millis(DEFAULT_MOVE_OVERHEAD_MS),
            multipv: 1,
        }
    }

    /// One thread with the default batch.
    pub fn one_thread() -> Self {
        EngineOptions {
            threads: 1,
            batch_per_thread: DEFAULT_BATCH_PER_THREAD,
            batches_per_thread: DEFAULT_BATCHES_PER_THREAD,
            move_overhead: Duration::from_millis(DEFAULT_MOVE_OVERHEAD_MS),
            multipv: 1,
        }
    }
}

/// Leaves per thread in a batch (see `docs/experiments.md`, "The engine").
pub const DEFAULT_BATCH_PER_THREAD: usize = 16;
/// Batches in flight per thread (the same section).
pub const DEFAULT_BATCHES_PER_THREAD: usize = 1;
/// Default `Move Overhead`, in milliseconds.
pub const DEFAULT_MOVE_OVERHEAD_MS: u64 = 20;

/// How long to think about one move.
#[derive(Clone, Copy, Debug, PartialEq, Default)]
pub struct Budget {
    /// Stop after this many simulations (exactly, unless time runs out first).
    pub simulations: Option<u32>,
    /// Stop after this much time.
    pub movetime: Option<Duration>,
    /// A game clock to share out.
    pub clock: Option<Clock>,
    /// Search until stopped.
    pub infinite: bool,
}

/// The side to move's clock (UCI `wtime/btime`, `winc/binc`, `movestogo`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Clock {
    pub remaining: Duration,
    pub increment: Duration,
    /// Moves until the next time control; `None`: the rest of the game.
    pub moves_to_go: Option<u32>,
}

impl Budget {
    pub fn simulations(n: u32) -> Self {
        Budget {
            simulations: Some(n),
            ..Budget::default()
        }
    }

    pub fn movetime(t: Duration) -> Self {
        Budget {
            movetime: Some(t),
            ..Budget::default()
        }
    }

    /// Whether some limit was given; a budget without any searches the default simulations.
    pub fn is_limited(&self) -> bool {
        self.simulations.is_some() || self.movetime.is_some() || self.clock.is_some()
    }
}

/// The time limits of one move: the search may stop at `soft` unless it is contested, and
/// stops at `hard` in any case.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TimeLimits {
    pub soft: Duration,
    pub hard: Duration,
}

/// Moves a game is assumed still to last when the clock does not say.
const MOVES_LEFT_GUESS: u32 = 30;

impl Clock {
    /// A move's share of the clock: what is left over the moves still to play, plus most of
    /// the increment; up to three times that when the search is contested, never more than a
    /// quarter of what is left (or, with a time control ahead, what it leaves to spare), and
    /// the overhead kept back from both.
    pub fn limits(&self, overhead: Duration) -> TimeLimits {
        let moves = self
            .moves_to_go
            .map_or(MOVES_LEFT_GUESS, |m| m.clamp(1, MOVES_LEFT_GUESS));
        let usable = self.remaining.saturating_sub(overhead);
        let base = usable / moves + self.increment * 3 / 4;
        let cap = match self.moves_to_go {
            Some(1) => usable.saturating_sub(overhead),
            _ => usable / 4 + self.increment / 2,
        }
        .min(usable.saturating_sub(overhead));
        let soft = base.min(cap).max(Duration::from_millis(1));
        let hard = (base * 3).min(cap).max(soft);
        TimeLimits { soft, hard }
    }
}

/// What the search thinks at one moment.
#[derive(Clone, Debug)]
pub struct Thought {
    pub result: SearchResult,
    /// Since the `go` (or the call) arrived.
    pub elapsed: Duration,
    /// Deepest descent, in plies.
    pub seldepth: u32,
    /// The network's draw probability at the root, for a WDL estimate.
    pub root_draw: Option<f32>,
    /// Simulations of this search per second.
    pub nodes_per_second: f64,
    /// Positions the network evaluated in this search.
    pub evaluations: u32,
    /// Leaves per batch, on average.
    pub average_batch: f64,
    /// The most visited root moves with their lines ([`EngineOptions::multipv`] of them).
    pub lines: Vec<PvLine>,
}

impl Thought {
    /// A centipawn-like score for the side to move (lc0's mapping of an expected score).
    pub fn centipawns(&self) -> i32 {
        centipawns(self.result.root_value)
    }

    /// Moves to mate along the principal variation (positive: the side to move mates).
    pub fn mate_in(&self, root: &Position) -> Option<i32> {
        mate_along(root, &self.result.pv)
    }

    /// Win, draw and loss per mille for the side to move: the searched value with the
    /// network's draw probability at the root (all decisive when unknown).
    pub fn wdl_per_mille(&self) -> [u32; 3] {
        let q = self.result.root_value.clamp(-1.0, 1.0);
        let d = self.root_draw.unwrap_or(0.0).clamp(0.0, 1.0 - q.abs());
        let w = ((1.0 + q - d) / 2.0).clamp(0.0, 1.0);
        let w = (w * 1000.0).round() as u32;
        let d = (d * 1000.0).round() as u32;
        [w, d, 1000u32.saturating_sub(w + d)]
    }
}

/// Moves to mate along `pv` from `root` (positive: the side to move at `root` mates).
pub fn mate_along(root: &Position, pv: &[Move]) -> Option<i32> {
    let mut pos = root.clone();
    for (i, &mv) in pv.iter().enumerate() {
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

/// A centipawn-like score from an expected score for the side to move (lc0's mapping).
pub fn centipawns(value: f32) -> i32 {
    let v = value.clamp(-0.999, 0.999) as f64;
    (90.0 * (1.563_754_189_7 * v).tan())
        .round()
        .clamp(-9999.0, 9999.0) as i32
}

/// A network (or any evaluator) with its search settings, threads and the tree of the last
/// move. Shared between a UCI session and its search thread; one search at a time.
pub struct Engine {
    evaluator: Arc<dyn Evaluator>,
    config: SearchConfig,
    options: EngineOptions,
    pool: Option<ThreadPool>,
    tree: Mutex<Option<Search>>,
}

impl Engine {
    pub fn new(
        evaluator: Arc<dyn Evaluator>,
        config: SearchConfig,
        options: EngineOptions,
    ) -> Result<Engine, EngineError> {
        config.validate().map_err(SearchError::from)?;
        if !(1..=MAX_THREADS).contains(&options.threads) {
            return Err(EngineError::Threads(options.threads));
        }
        if !(1..=MAX_BATCH).contains(&options.batch_per_thread) {
            return Err(EngineError::Batch(options.batch_per_thread));
        }
        let pool = match options.threads {
            1 => None,
            threads => Some(
                rayon::ThreadPoolBuilder::new()
                    .num_threads(threads)
                    .thread_name(|i| format!("yari-search-{i}"))
                    .build()
                    .map_err(|e| EngineError::Pool {
                        threads,
                        reason: e.to_string(),
                    })?,
            ),
        };
        Ok(Engine {
            evaluator,
            config,
            options,
            pool,
            tree: Mutex::new(None),
        })
    }

    /// The engine's own search: PUCT without root noise and without a ply cap (that is
    /// self-play's adjudication, not a rule: a game against a person or another engine goes
    /// on until the rules end it), keeping the tree between moves.
    pub fn play_config() -> SearchConfig {
        SearchConfig {
            ply_cap: 0,
            reuse_tree: true,
            ..SearchConfig::puct()
        }
    }

    pub fn options(&self) -> EngineOptions {
        self.options
    }

    pub fn config(&self) -> &SearchConfig {
        &self.config
    }

    /// Forgets the kept tree (a new game).
    pub fn clear_tree(&self) {
        *self.tree.lock().unwrap_or_else(|e| e.into_inner()) = None;
    }

    /// The kept tree moved on to `pos`, when `pos` is its root or follows from it by one or
    /// two moves (our move and the reply); else a fresh search.
    fn tree_for(&self, pos: &Position) -> Result<Search, SearchError> {
        let kept = self.tree.lock().unwrap_or_else(|e| e.into_inner()).take();
        if let Some(mut search) = kept.filter(|_| self.config.reuse_tree) {
            if let Some(path) = path_to(search.root(), pos) {
                if path.iter().all(|&mv| search.advance(mv).is_ok()) {
                    return Ok(search);
                }
            }
        }
        Search::new(pos.clone(), self.config.clone())
    }

    /// Searches `pos` until the budget is spent, `stop` is raised or the best move cannot
    /// change; `report` is called about every `report_every` with the current state (for
    /// `info` lines). `started` is when the request came in: the time limits count from it.
    pub fn think(
        &self,
        pos: &Position,
        budget: Budget,
        started: Instant,
        stop: &AtomicBool,
        report_every: Duration,
        report: impl FnMut(&Thought),
    ) -> Result<Thought, SearchError> {
        self.think_among(pos, &[], budget, started, stop, report_every, report)
    }

    /// [`Engine::think`] over only `root_moves` at the root (UCI's `go searchmoves`; empty:
    /// every move). A restricted search starts a new tree and keeps none: the kept tree
    /// would lack the other moves at the root for the next search.
    #[allow(clippy::too_many_arguments)]
    pub fn think_among(
        &self,
        pos: &Position,
        root_moves: &[Move],
        budget: Budget,
        started: Instant,
        stop: &AtomicBool,
        report_every: Duration,
        mut report: impl FnMut(&Thought),
    ) -> Result<Thought, SearchError> {
        let mut search = if root_moves.is_empty() {
            self.tree_for(pos)?
        } else {
            self.clear_tree();
            let mut search = Search::new(pos.clone(), self.config.clone())?;
            search.restrict_root(root_moves)?;
            search
        };
        let overhead = self.options.move_overhead;
        let time = match (budget.movetime, budget.clock) {
            _ if budget.infinite => None,
            (Some(t), _) => {
                let t = t.saturating_sub(overhead).max(Duration::from_millis(1));
                Some(TimeLimits { soft: t, hard: t })
            }
            (None, Some(clock)) => Some(clock.limits(overhead)),
            (None, None) => None,
        };
        let simulations = match budget.simulations {
            Some(n) => n.max(1),
            None if budget.is_limited() || budget.infinite => MAX_SIMULATIONS,
            None => DEFAULT_SIMULATIONS,
        };
        // PUCT without noise never draws from it; the rng only satisfies the signature.
        let mut rng = rand::rngs::StdRng::seed_from_u64(0);
        let batching = Batching {
            // Each thread's network call is one batch of its own.
            leaves: self.options.batch_per_thread,
            pool: self.pool.as_ref(),
            batches_per_worker: self.options.batches_per_thread,
        };
        let multipv = self.options.multipv.max(1);
        // A kept tree's root was evaluated as a child, whose draw probability is not kept.
        let kept_draw = match search.root_evaluated() && search.root_wdl().is_none() {
            true => self.evaluator.evaluate(&[pos]).first().map(|e| e.wdl[1]),
            false => None,
        };
        let search_start = Instant::now();
        let mut last_report = search_start;
        let mut batches = 0u64;
        let mut leaves = 0u64;
        let stats = |s: &Search, batches: u64, leaves: u64| -> (f64, f64) {
            let secs = search_start.elapsed().as_secs_f64().max(1e-6);
            (
                s.simulations_done() as f64 / secs,
                leaves as f64 / batches.max(1) as f64,
            )
        };
        let thought = |s: &Search, batches: u64, leaves: u64| {
            let (nps, average_batch) = stats(s, batches, leaves);
            Thought {
                result: s.result(),
                elapsed: started.elapsed(),
                seldepth: s.max_depth(),
                root_draw: s.root_wdl().map(|w| w[1]).or(kept_draw),
                nodes_per_second: nps,
                evaluations: s.evaluations(),
                average_batch,
                lines: s.lines(multipv),
            }
        };
        let infinite = budget.infinite;
        let fixed_nodes = budget.simulations.is_some();
        let result = search.run_batched(
            &*self.evaluator,
            simulations,
            false,
            &mut rng,
            batching,
            |s| {
                batches += 1;
                leaves += s.last_batch_len() as u64;
                if stop.load(Ordering::Relaxed) {
                    return Control::Stop;
                }
                let now = Instant::now();
                if now - last_report >= report_every {
                    last_report = now;
                    report(&thought(s, batches, leaves));
                }
                let Some(limits) = time else {
                    return Control::Continue;
                };
                let elapsed = now - started;
                if elapsed >= limits.hard {
                    return Control::Stop;
                }
                let (nps, _) = stats(s, batches, leaves);
                let left = (limits.hard - elapsed).as_secs_f64() * nps;
                let left = match fixed_nodes {
                    true => left.min((simulations - s.simulations_done()) as f64),
                    false => left,
                };
                if !infinite && s.best_is_settled(left) {
                    return Control::Stop;
                }
                if elapsed >= limits.soft && !s.is_contested() {
                    return Control::Stop;
                }
                Control::Continue
            },
        );
        let thought = result.map(|_| thought(&search, batches, leaves));
        if root_moves.is_empty() {
            *self.tree.lock().unwrap_or_else(|e| e.into_inner()) = Some(search);
        }
        thought
    }
}

/// The moves (at most two) that lead from `from` to `to`, if any.
fn path_to(from: &Position, to: &Position) -> Option<Vec<Move>> {
    let same = |a: &Position, b: &Position| {
        a.key() == b.key() && a.plies_played() == b.plies_played() && a.fen() == b.fen()
    };
    if same(from, to) {
        return Some(Vec::new());
    }
    let plies = to.plies_played().checked_sub(from.plies_played())?;
    if !(1..=2).contains(&plies) {
        return None;
    }
    for mv in from.legal_moves() {
        let mut one = from.clone();
        one.play(mv);
        if plies == 1 {
            if same(&one, to) {
                return Some(vec![mv]);
            }
            continue;
        }
        for reply in one.legal_moves() {
            let mut two = one.clone();
            two.play(reply);
            if same(&two, to) {
                return Some(vec![mv, reply]);
            }
        }
    }
    None
}
