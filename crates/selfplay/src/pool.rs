//! The self-play worker pool: many games advanced in lock step, their leaves evaluated in one
//! network batch per round.
//!
//! Each round, rayon workers advance every game's search until it needs a leaf evaluation
//! (one leaf per game per round, so no virtual loss is needed and search stays exactly
//! sequential per game); then the leaves of all games go to the evaluator in one call. The
//! batch is as large as the number of games in flight, and no thread waits on a single
//! position. Every game draws from its own RNG seeded from (seed, game index), and games
//! are refilled in slot order, so the same seed gives the same games whatever the number
//! of threads.

use std::io::IsTerminal;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressStyle};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rayon::prelude::*;
use serde::Serialize;
use thiserror::Error;
use yari_rules::Position;

use yari_search::{
    choose_move, ConfigError, Evaluation, Evaluator, Search, SearchConfig, SearchError, Step,
};

use crate::config::SelfplayConfig;
use crate::record::{GameEnd, GameRecord, GameResult, RecordError, Sample, ShardWriter};

/// Why a self-play run stopped early.
#[derive(Debug, Error)]
pub enum SelfplayError {
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error(transparent)]
    Search(#[from] SearchError),
    #[error(transparent)]
    Record(#[from] RecordError),
}

/// Running totals of a self-play run.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct SelfplayStats {
    /// Games finished.
    pub games: usize,
    /// Plies played in all games, finished or not.
    pub plies: u64,
    /// Plies of finished games.
    pub finished_plies: u64,
    /// Training positions (full searches) in finished games.
    pub samples: u64,
    /// Positions sent to the evaluator.
    pub evaluations: u64,
    /// Evaluator calls (network batches).
    pub batches: u64,
    pub white_wins: usize,
    pub black_wins: usize,
    pub draws: usize,
    /// Finished games by how they ended, in [`GameEnd::ALL`] order.
    pub ends: [usize; 6],
    /// Games played with resignation disabled.
    pub resign_disabled_games: usize,
    /// Of those, games in which a side met the resignation rule.
    pub would_resign_games: usize,
    /// Of those, games the would-be resigner did not lose.
    pub false_resignations: usize,
    /// Wall time of the run.
    pub wall: Duration,
    /// Time spent inside `Evaluator::evaluate` (position encoding included).
    pub eval_time: Duration,
    /// Time spent advancing searches (move generation, tree updates, game bookkeeping).
    pub search_time: Duration,
    /// The run was stopped by its stop flag before all its games were played; the games in
    /// flight were dropped, every finished one went to the sink.
    pub stopped: bool,
}

impl SelfplayStats {
    fn record(&mut self, game: &GameRecord) {
        self.games += 1;
        self.finished_plies += game.moves.len() as u64;
        self.samples += game.samples.len() as u64;
        match game.result {
            GameResult::WhiteWins => self.white_wins += 1,
            GameResult::BlackWins => self.black_wins += 1,
            GameResult::Draw => self.draws += 1,
        }
        self.ends[game.end as usize] += 1;
        if game.resignation_disabled {
            self.resign_disabled_games += 1;
            if game.would_resign.is_some() {
                self.would_resign_games += 1;
            }
            if game.is_false_resignation() {
                self.false_resignations += 1;
            }
        }
    }

    /// Plies played per second of wall time.
    pub fn positions_per_s(&self) -> f64 {
        self.plies as f64 / self.wall.as_secs_f64().max(1e-9)
    }

    /// Evaluated positions per second of wall time.
    pub fn evaluations_per_s(&self) -> f64 {
        self.evaluations as f64 / self.wall.as_secs_f64().max(1e-9)
    }

    /// Share of wall time spent advancing searches (move generation, tree updates,
    /// bookkeeping). With one pipeline group it and the evaluator's share add up to about 1;
    /// with more they overlap.
    pub fn search_share(&self) -> f64 {
        share(self.search_time, self.wall)
    }

    /// Share of wall time in which no evaluation was in progress: the time a GPU waits for
    /// work (an upper bound: an evaluation call also encodes positions and reads results on
    /// the CPU).
    pub fn evaluator_idle_share(&self) -> f64 {
        1.0 - share(self.eval_time, self.wall)
    }

    /// Mean length of finished games in plies.
    pub fn average_game_length(&self) -> f64 {
        self.finished_plies as f64 / self.games.max(1) as f64
    }

    /// Share of finished games that ended by resignation.
    pub fn resign_rate(&self) -> f64 {
        self.ends[GameEnd::Resignation as usize] as f64 / self.games.max(1) as f64
    }

    /// Share of would-be resignations (in games with resignation off) that would have been
    /// wrong; `None` before any such game.
    pub fn false_resign_rate(&self) -> Option<f64> {
        (self.would_resign_games > 0)
            .then(|| self.false_resignations as f64 / self.would_resign_games as f64)
    }

    /// Mean network batch size.
    pub fn average_batch(&self) -> f64 {
        self.evaluations as f64 / self.batches.max(1) as f64
    }

    /// One line for progress bars and logs.
    pub fn summary(&self) -> String {
        let false_resign = self
            .false_resign_rate()
            .map_or("-".to_string(), |r| format!("{:.1}%", 100.0 * r));
        format!(
            "{:.1} pos/s, {:.0} evals/s, avg len {:.1}, W/D/L(white) {}/{}/{}, resign {:.1}%, false-resign {false_resign}",
            self.positions_per_s(),
            self.evaluations_per_s(),
            self.average_game_length(),
            self.white_wins,
            self.draws,
            self.black_wins,
            100.0 * self.resign_rate(),
        )
    }
}

/// `part` as a fraction of `whole`, in [0, 1].
fn share(part: Duration, whole: Duration) -> f64 {
    let whole = whole.as_secs_f64();
    if whole <= 0.0 {
        return 0.0;
    }
    (part.as_secs_f64() / whole).clamp(0.0, 1.0)
}

/// How a run is driven, beside its config.
#[derive(Clone, Copy, Debug, Default)]
pub struct RunOptions {
    /// Show progress on stderr: an indicatif bar on a terminal; redirected to a file (a
    /// background run's log), where a bar is not drawn, one line per finished game, written
    /// before the game goes to the sink, so a log shows how many games a kill interrupted.
    pub progress: bool,
    /// Stop at this instant, dropping unfinished games (benchmarks).
    pub deadline: Option<Instant>,
}

/// The start position with 1 to `max_pieces` pieces (never the General) taken from one side,
/// both chosen at random: a handicap game.
///
/// Why: in games between two equally weak players, who has more pieces hardly predicts who
/// wins, so a value head learns little about material from them, and a net that does not
/// value material plays games in which material does not matter. Handicap games (a classic
/// shogi form, and part of KataGo's self-play) start with a real imbalance, chosen by no
/// valuation of the pieces, and let the results teach what pieces are worth.
fn handicap_position<R: Rng + ?Sized>(rng: &mut R, max_pieces: u32) -> Position {
    let start = Position::startpos();
    let side = if rng.random::<bool>() {
        yari_rules::Color::White
    } else {
        yari_rules::Color::Black
    };
    let mut squares: Vec<yari_rules::Square> = yari_rules::Square::all()
        .filter(|&sq| {
            start
                .piece_at(sq)
                .is_some_and(|p| p.color == side && p.kind != yari_rules::Kind::King)
        })
        .collect();
    let take = rng
        .random_range(1..=max_pieces.max(1) as usize)
        .min(squares.len());
    let mut board = *start.board();
    for _ in 0..take {
        let i = rng.random_range(0..squares.len());
        board.clear_square(squares.swap_remove(i));
    }
    Position::from_board(board)
}

/// The RNG of game `index` in a run with `seed`.
fn game_rng(seed: u64, index: u64) -> ChaCha8Rng {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    rng.set_stream(index);
    rng
}

enum Advance {
    NeedsEval,
    Finished,
}

/// One game in flight.
struct Game {
    id: u64,
    start_fen: String,
    rng: ChaCha8Rng,
    search: Search,
    moves: Vec<u16>,
    samples: Vec<Sample>,
    resignation_disabled: bool,
    would_resign: Option<GameResult>,
    /// Consecutive own moves below the resignation threshold, per colour.
    below: [u32; 2],
    /// Whether the current move gets a full search (and becomes a sample).
    full: bool,
    end: Option<(GameResult, GameEnd)>,
}

impl Game {
    fn new(id: u64, config: &SelfplayConfig, search: &SearchConfig) -> Result<Game, SelfplayError> {
        let mut rng = game_rng(config.seed, id);
        let resignation_disabled = rng.random::<f32>() < config.resign_disabled_fraction;
        // Drawn only when handicaps are on, so that other configs keep their random streams.
        let handicap =
            config.handicap_fraction > 0.0 && rng.random::<f32>() < config.handicap_fraction;
        let pos = if handicap {
            handicap_position(&mut rng, config.handicap_max_pieces)
        } else {
            Position::startpos()
        };
        let mut game = Game {
            id,
            start_fen: pos.fen(),
            rng,
            search: Search::new(pos, search.clone())?,
            moves: Vec::new(),
            samples: Vec::new(),
            resignation_disabled,
            would_resign: None,
            below: [0; 2],
            full: false,
            end: None,
        };
        game.begin_move(config)?;
        Ok(game)
    }

    fn begin_move(&mut self, config: &SelfplayConfig) -> Result<(), SelfplayError> {
        // Always draw, so a forced move does not shift the random stream of later moves.
        let full = self.rng.random::<f32>() < config.full_search_fraction;
        let forced = self.search.root().legal_moves().len() <= 1;
        self.full = full && !forced;
        let sims = if forced {
            0
        } else if self.full {
            config.full_simulations
        } else {
            config.cheap_simulations
        };
        self.search
            .set_gumbel_temperature(config.temperature(self.moves.len()));
        // Exploration noise only where the result is trained on (KataGo's playout cap rule).
        self.search.start(sims, self.full)?;
        Ok(())
    }

    /// Feeds the pending evaluation (if any) and runs until the next one is needed or the
    /// game is over.
    fn advance(
        &mut self,
        eval: Option<&Evaluation>,
        config: &SelfplayConfig,
    ) -> Result<Advance, SelfplayError> {
        if let Some(eval) = eval {
            self.search.supply(eval);
        }
        loop {
            if let Step::NeedEval(_) = self.search.step(&mut self.rng) {
                return Ok(Advance::NeedsEval);
            }
            let result = self.search.result();
            if let Some(outcome) = result.terminal {
                self.end = Some((
                    GameResult::from_winner(outcome.winner),
                    outcome.reason.into(),
                ));
                return Ok(Advance::Finished);
            }
            let mover = self.search.root().side_to_move();
            let ply = self.moves.len();
            if self.full {
                self.samples.push(Sample {
                    ply: ply as u32,
                    root_value: result.root_value.clamp(-1.0, 1.0),
                    surprise: surprise(&result),
                    policy: result
                        .policy
                        .iter()
                        .map(|&(m, p)| (m.to_u16(), p))
                        .collect(),
                });
            }
            if config.resign_enabled() {
                let below = &mut self.below[mover.index()];
                if result.root_value < config.resign_threshold {
                    *below += 1;
                } else {
                    *below = 0;
                }
                if *below >= config.resign_consecutive {
                    let resigned = GameResult::from_winner(Some(!mover));
                    if !self.resignation_disabled {
                        self.end = Some((resigned, GameEnd::Resignation));
                        return Ok(Advance::Finished);
                    }
                    self.would_resign.get_or_insert(resigned);
                }
            }
            let temperature = config.temperature(ply);
            let mv = choose_move(&result, &config.search.variant, temperature, &mut self.rng)
                .expect("a live root has a legal move");
            self.moves.push(mv.to_u16());
            self.search.advance(mv)?;
            if let Some(outcome) = self
                .search
                .root()
                .outcome_with_ply_cap(Some(config.ply_cap as usize))
            {
                self.end = Some((
                    GameResult::from_winner(outcome.winner),
                    outcome.reason.into(),
                ));
                return Ok(Advance::Finished);
            }
            self.begin_move(config)?;
        }
    }

    fn into_record(self) -> GameRecord {
        let (result, end) = self.end.expect("finished game");
        GameRecord {
            game_id: self.id,
            start_fen: self.start_fen,
            moves: self.moves,
            samples: self.samples,
            result,
            end,
            resignation_disabled: self.resignation_disabled,
            would_resign: self.would_resign,
        }
    }
}

/// Plays `games` self-play games and hands each finished record to `sink`, in the order the
/// games finish (deterministic for a given seed and config).
pub fn run_selfplay(
    evaluator: &dyn Evaluator,
    config: &SelfplayConfig,
    games: usize,
    options: RunOptions,
    sink: impl FnMut(GameRecord) -> Result<(), RecordError>,
) -> Result<SelfplayStats, SelfplayError> {
    run_selfplay_until(
        evaluator,
        config,
        games,
        options,
        &AtomicBool::new(false),
        sink,
    )
}

/// What [`play_into_shards`] played and wrote.
#[derive(Clone, Debug, Default)]
pub struct ShardedRun {
    /// The run's totals: every game counted in them is in a shard.
    pub stats: SelfplayStats,
    /// The shards written, in order.
    pub shards: Vec<std::path::PathBuf>,
}

/// Plays `games` games into `writer`'s shards, stopping early once `stop` is raised (the
/// finished games are written, the ones in flight dropped): the one self-play routine of
/// `yari selfplay`, of a generation of `yari run` and of a worker's batch.
pub fn play_into_shards(
    evaluator: &dyn Evaluator,
    config: &SelfplayConfig,
    games: usize,
    mut writer: ShardWriter,
    options: RunOptions,
    stop: &AtomicBool,
) -> Result<ShardedRun, SelfplayError> {
    let stats = run_selfplay_until(evaluator, config, games, options, stop, |game| {
        writer.push(game)
    })?;
    Ok(ShardedRun {
        stats,
        shards: writer.finish()?,
    })
}

/// [`run_selfplay`] that also stops once `stop` is raised (a signal handler sets it): the
/// flag is checked between rounds, so every game that finished before it went to `sink` and
/// only the games in flight are dropped. The stats say whether it stopped early.
pub fn run_selfplay_until(
    evaluator: &dyn Evaluator,
    config: &SelfplayConfig,
    games: usize,
    options: RunOptions,
    stop: &AtomicBool,
    mut sink: impl FnMut(GameRecord) -> Result<(), RecordError>,
) -> Result<SelfplayStats, SelfplayError> {
    config.validate()?;
    let search = config.effective_search();
    let start = Instant::now();
    let mut stats = SelfplayStats::default();
    let lines = options.progress && !std::io::stderr().is_terminal();
    let bar = (options.progress && !lines).then(|| {
        let bar = ProgressBar::new(games as u64);
        bar.set_style(
            ProgressStyle::with_template(
                "{elapsed_precise} [{bar:30}] {pos}/{len} games ({eta} left)  {msg}",
            )
            .expect("valid template")
            .progress_chars("=> "),
        );
        bar
    });

    let concurrency = config.concurrent_games.min(games);
    let mut slots: Vec<Option<Game>> = Vec::with_capacity(concurrency);
    let mut next_id = 0u64;
    for _ in 0..concurrency {
        slots.push(Some(Game::new(next_id, config, &search)?));
        next_id += 1;
    }
    let mut evals: Vec<Option<Evaluation>> = vec![None; concurrency];
    let mut plies_before: Vec<usize> = vec![0; concurrency];
    // Contiguous slot ranges, so that two groups are two disjoint slices.
    let groups = config.pipeline_groups.clamp(1, concurrency.max(1));
    let group_range = |g: usize| (g * concurrency / groups)..((g + 1) * concurrency / groups);

    // Step k advances group k mod G (its evaluations are in) while the batch of the group
    // advanced at step k - 1 is evaluated on another thread; with one group the two happen
    // one after the other, in lock step.
    for step in 0usize.. {
        if options.deadline.is_some_and(|d| Instant::now() >= d) {
            break;
        }
        if stop.load(Ordering::SeqCst) {
            stats.stopped = slots.iter().any(Option::is_some);
            break;
        }
        let advancing = group_range(step % groups);
        let evaluating = (step > 0).then(|| group_range((step - 1) % groups));
        let (advanced, evaluated) = match &evaluating {
            None => (
                advance_games(&mut slots, &mut evals, advancing.clone(), config),
                None,
            ),
            Some(range) if *range == advancing => {
                let batch = evaluate_games(evaluator, &slots[range.clone()], config.eval_chunk);
                let evaluated = store_evaluations(&mut evals[range.clone()], batch);
                let advanced = advance_games(&mut slots, &mut evals, advancing.clone(), config);
                (advanced, Some(evaluated))
            }
            Some(range) => {
                let (adv_slots, eval_slots) = disjoint(&mut slots, &advancing, range);
                let (adv_evals, _) = disjoint(&mut evals, &advancing, range);
                let chunk = config.eval_chunk;
                let (advanced, batch) = std::thread::scope(|scope| {
                    let batch = scope.spawn(|| evaluate_games(evaluator, eval_slots, chunk));
                    let advanced = advance_slice(adv_slots, adv_evals, config);
                    let batch = batch
                        .join()
                        .unwrap_or_else(|e| std::panic::resume_unwind(e));
                    (advanced, batch)
                });
                let evaluated = store_evaluations(&mut evals[range.clone()], batch);
                (advanced, Some(evaluated))
            }
        };
        if let Some((positions, time)) = evaluated {
            stats.eval_time += time;
            if positions > 0 {
                stats.evaluations += positions as u64;
                stats.batches += 1;
            }
        }
        stats.search_time += advanced.time;
        for (k, step) in advanced.steps.into_iter().enumerate() {
            let i = advancing.start + k;
            let step = step?;
            if let Some(game) = &slots[i] {
                stats.plies += (game.moves.len() - plies_before[i]) as u64;
                plies_before[i] = game.moves.len();
            }
            if let Some(Advance::Finished) = step {
                let record = slots[i].take().expect("finished game").into_record();
                stats.record(&record);
                if lines {
                    eprintln!(
                        "self-play: game {}/{games} finished ({} plies, {} by {})",
                        stats.games,
                        record.moves.len(),
                        record.result.as_str(),
                        record.end.as_str()
                    );
                }
                sink(record)?;
                plies_before[i] = 0;
                if (next_id as usize) < games {
                    let mut game = Game::new(next_id, config, &search)?;
                    next_id += 1;
                    // A new game's first step only asks for its root evaluation.
                    game.advance(None, config)?;
                    slots[i] = Some(game);
                }
            }
        }
        if slots.iter().all(Option::is_none) {
            break;
        }
        stats.wall = start.elapsed();
        if let Some(bar) = &bar {
            bar.set_position(stats.games as u64);
            bar.set_message(stats.summary());
        }
    }
    stats.wall = start.elapsed();
    if let Some(bar) = bar {
        bar.set_position(stats.games as u64);
        bar.finish_with_message(stats.summary());
    }
    Ok(stats)
}

/// The outcome of advancing one group of games.
struct Advanced {
    steps: Vec<Result<Option<Advance>, SelfplayError>>,
    time: Duration,
}

/// Advances the games in `range` of `slots`, feeding each its pending evaluation.
fn advance_games(
    slots: &mut [Option<Game>],
    evals: &mut [Option<Evaluation>],
    range: std::ops::Range<usize>,
    config: &SelfplayConfig,
) -> Advanced {
    advance_slice(&mut slots[range.clone()], &mut evals[range], config)
}

/// Advances every game of `slots` on the rayon threads until it needs an evaluation.
fn advance_slice(
    slots: &mut [Option<Game>],
    evals: &mut [Option<Evaluation>],
    config: &SelfplayConfig,
) -> Advanced {
    let t = Instant::now();
    let steps = slots
        .par_iter_mut()
        .zip(evals.par_iter_mut())
        .map(|(slot, eval)| match slot {
            Some(game) => game.advance(eval.take().as_ref(), config).map(Some),
            None => Ok(None),
        })
        .collect();
    Advanced {
        steps,
        time: t.elapsed(),
    }
}

/// The evaluations of one group's pending leaves, by slot of the group.
struct Batch {
    evaluations: Vec<(usize, Evaluation)>,
    positions: usize,
    time: Duration,
}

/// Evaluates the pending leaf of every game in `slots` in one batch.
fn evaluate_games(evaluator: &dyn Evaluator, slots: &[Option<Game>], chunk: usize) -> Batch {
    let (index, positions): (Vec<usize>, Vec<&Position>) = slots
        .iter()
        .enumerate()
        .filter_map(|(i, s)| Some((i, s.as_ref()?.search.pending_position()?)))
        .unzip();
    let t = Instant::now();
    if positions.is_empty() {
        return Batch {
            evaluations: Vec::new(),
            positions: 0,
            time: Duration::ZERO,
        };
    }
    // The CPU backend computes one call on about one core, so the batch is split into
    // fixed-size chunks evaluated on rayon threads. The split does not depend on the thread
    // count, so neither do the results.
    let out: Vec<Evaluation> = positions
        .par_chunks(chunk)
        .map(|chunk| evaluator.evaluate(chunk))
        .collect::<Vec<_>>()
        .into_iter()
        .flatten()
        .collect();
    // A short answer leaves games pending; they fall back to uniform priors in supply.
    let mut out = out.into_iter();
    let evaluations = index
        .into_iter()
        .map(|i| {
            let eval = out.next().unwrap_or_else(|| Evaluation {
                priors: Vec::new(),
                wdl: [0.0, 1.0, 0.0],
            });
            (i, eval)
        })
        .collect();
    Batch {
        evaluations,
        positions: positions.len(),
        time: t.elapsed(),
    }
}

/// Hands a group's evaluations to its games' slots; returns the batch's size and time.
fn store_evaluations(evals: &mut [Option<Evaluation>], batch: Batch) -> (usize, Duration) {
    for (i, eval) in batch.evaluations {
        evals[i] = Some(eval);
    }
    (batch.positions, batch.time)
}

/// Two disjoint ranges of one slice, borrowed at once.
fn disjoint<'a, T>(
    items: &'a mut [T],
    a: &std::ops::Range<usize>,
    b: &std::ops::Range<usize>,
) -> (&'a mut [T], &'a mut [T]) {
    debug_assert!(a.end <= b.start || b.end <= a.start, "ranges overlap");
    if a.start < b.start {
        let (left, right) = items.split_at_mut(b.start);
        (&mut left[a.clone()], &mut right[..b.len()])
    } else {
        let (left, right) = items.split_at_mut(a.start);
        (&mut right[..a.len()], &mut left[b.clone()])
    }
}

/// Throughput of self-play, as `yari bench selfplay` reports it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SelfplayBench {
    /// Plies played per second.
    pub positions_per_s: f64,
    /// Evaluated positions per second.
    pub evaluations_per_s: f64,
    /// Share of wall time spent advancing searches, in [0, 1].
    pub search_share: f64,
    /// Share of wall time with no evaluation in progress (the device waiting for work).
    pub evaluator_idle_share: f64,
    /// Groups of games pipelined (searched while another group's batch is evaluated).
    pub pipeline_groups: usize,
    /// Mean network batch size.
    pub average_batch: f64,
    /// Rayon threads used for search.
    pub threads: usize,
    /// Wall time measured, seconds.
    pub wall_s: f64,
    pub plies: u64,
    pub evaluations: u64,
}

/// Runs self-play for about `duration` (games are never all finished; the run just stops)
/// and measures throughput and the share of time spent outside the evaluator.
pub fn bench_selfplay(
    evaluator: &dyn Evaluator,
    config: &SelfplayConfig,
    duration: Duration,
) -> Result<SelfplayBench, SelfplayError> {
    let options = RunOptions {
        progress: false,
        deadline: Some(Instant::now() + duration),
    };
    let stats = run_selfplay(evaluator, config, usize::MAX, options, |_| Ok(()))?;
    Ok(SelfplayBench {
        positions_per_s: stats.positions_per_s(),
        evaluations_per_s: stats.evaluations_per_s(),
        search_share: stats.search_share(),
        evaluator_idle_share: stats.evaluator_idle_share(),
        pipeline_groups: config.pipeline_groups,
        average_batch: stats.average_batch(),
        threads: rayon::current_num_threads(),
        wall_s: stats.wall.as_secs_f64(),
        plies: stats.plies,
        evaluations: stats.evaluations,
    })
}

/// KL divergence (nats) of the search's training target from the priors the search started
/// from at the root: what the search taught the policy in this position. Priors are floored
/// at 1e-6 so that a move the network all but ruled out counts as very surprising, not as
/// infinitely so. A root the mate search settled before the network saw it has no
/// network priors; it gets ln(legal moves), the surprise of a one-move target against a
/// uniform prior, so surprise weighting over-samples solved positions, whose targets are
/// exact (a proven mate and its first move). Whether that beats giving them zero is not
/// settled: zero lost by 177 Elo in one A/B and drew in its replication (docs/experiments.md,
/// sessions 28 and 29).
pub fn surprise(result: &yari_search::SearchResult) -> f32 {
    if !result.priors_from_network {
        return (result.moves.len().max(1) as f32).ln();
    }
    let kl: f64 = result
        .moves
        .iter()
        .zip(&result.policy)
        .filter(|(_, &(_, t))| t > 0.0)
        .map(|(m, &(_, t))| {
            let t = t as f64;
            t * (t / (m.prior as f64).max(1e-6)).ln()
        })
        .sum();
    if kl.is_finite() {
        kl.max(0.0) as f32
    } else {
        0.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Surprise is the KL of the target from the network's priors; at a root the mate search
    /// settled (no network priors) it is ln(legal moves), whatever the placeholder priors say.
    #[test]
    fn surprise_is_ln_legal_moves_where_the_network_gave_no_priors() {
        let pos = Position::startpos();
        let legal = pos.legal_moves();
        let n = legal.len();
        // The target's move at prior 0.5, the rest sharing the other half.
        let prior = |mv| {
            if mv == legal[0] {
                0.5
            } else {
                0.5 / (n - 1) as f32
            }
        };
        let result = |priors_from_network| yari_search::SearchResult {
            best_move: Some(legal[0]),
            root_value: 1.0,
            moves: legal
                .iter()
                .map(|&mv| yari_search::MoveStats {
                    mv,
                    prior: prior(mv),
                    visits: u32::from(mv == legal[0]),
                    q: None,
                })
                .collect(),
            policy: legal
                .iter()
                .map(|&mv| (mv, if mv == legal[0] { 1.0 } else { 0.0 }))
                .collect(),
            pv: vec![legal[0]],
            simulations: 1,
            nodes: 1,
            terminal: None,
            priors_from_network,
        };
        let from_network = surprise(&result(true));
        assert!(
            ((from_network as f64) - 2f64.ln()).abs() < 1e-4,
            "{from_network} against ln 2"
        );
        let settled = surprise(&result(false));
        assert!(
            ((settled as f64) - (n as f64).ln()).abs() < 1e-4,
            "{settled} against ln {n}"
        );
    }

    /// Every handicap start is a legal position (it survives a FEN round trip, which refuses a
    /// side not to move in check, for instance) with one side complete and the other short.
    #[test]
    fn handicap_positions_are_legal() {
        let start = Position::startpos();
        let count = |pos: &Position, color: yari_rules::Color| {
            yari_rules::Square::all()
                .filter(|&sq| pos.piece_at(sq).is_some_and(|p| p.color == color))
                .count()
        };
        let mut rng = ChaCha8Rng::seed_from_u64(7);
        let mut fewest = usize::MAX;
        for _ in 0..500 {
            let pos = handicap_position(&mut rng, 13);
            let parsed = Position::from_fen(&pos.fen());
            assert!(parsed.is_ok(), "{}: {:?}", pos.fen(), parsed.err());
            let (w, b) = (
                count(&pos, yari_rules::Color::White),
                count(&pos, yari_rules::Color::Black),
            );
            let full = count(&start, yari_rules::Color::White);
            assert!((w == full) != (b == full), "{}", pos.fen());
            assert!(w >= 1 && b >= 1, "{}", pos.fen());
            fewest = fewest.min(w.min(b));
        }
        // Most of the 500 took every piece they could.
        assert!(fewest <= 3, "fewest pieces left: {fewest}");
    }
}
