//! Matches: N games between two players, in parallel, with openings, SPRT early stopping, a
//! progress bar, and every game appended to a JSON-lines file as it finishes.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use serde::{Deserialize, Serialize};

use crate::error::ArenaError;
use crate::game::{play_game_until, GameConfig, GameRecord, Reason};
use crate::jsonl;
use crate::openings::{random_openings, Opening};
use crate::player::{Player, PlayerFactory};
use crate::stats::{Pentanomial, SprtConfig, SprtDecision, SprtStatus, Wdl};
use yari_rules::Color;

/// How a match is played.
#[derive(Debug, Clone)]
pub struct MatchConfig {
    /// Games to play (fewer if the SPRT stops the match).
    pub games: usize,
    pub game: GameConfig,
    /// Openings, each played twice with colours swapped (game `2k` and `2k+1` use opening
    /// `k mod len`). Empty: [`random_openings`] of `opening_plies` plies from `seed`.
    pub openings: Vec<Opening>,
    /// Plies of the generated openings (when `openings` is empty).
    pub opening_plies: usize,
    /// Games in flight at once; 0 = the number of CPUs. External engines run one process per
    /// game in flight and side.
    pub concurrency: usize,
    /// Stop early once the SPRT accepts a hypothesis.
    pub sprt: Option<SprtConfig>,
    /// Show an indicatif progress bar on stderr (hidden anyway when stderr is no terminal).
    pub progress: bool,
    /// Append every finished game to this JSON-lines file.
    pub games_file: Option<PathBuf>,
    /// Seeds the openings and every game's seed.
    pub seed: u64,
    /// Print a line for every finished game with the running score and its interval (above
    /// the progress bar on a terminal, plain lines otherwise), as cutechess-cli does.
    pub game_lines: bool,
    /// Raised from outside (a signal handler) to stop the match: no game starts after it, the
    /// games in flight end at their next move unscored and unwritten, and the result holds
    /// the finished games with `interrupted` set.
    pub interrupt: Option<Arc<AtomicBool>>,
}

impl Default for MatchConfig {
    fn default() -> Self {
        MatchConfig {
            games: 100,
            game: GameConfig::default(),
            openings: Vec::new(),
            opening_plies: 4,
            concurrency: 0,
            sprt: None,
            progress: false,
            games_file: None,
            seed: 0x5eed,
            game_lines: false,
            interrupt: None,
        }
    }
}

/// What a match produced. Results are from the first player's (A's) point of view.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct MatchResult {
    pub a: String,
    pub b: String,
    pub wdl: Wdl,
    /// Complete game pairs (same opening, both colours).
    pub pairs: Pentanomial,
    /// The final SPRT status, when one was configured. If the match stopped because a bound
    /// was crossed, the decision is the one taken then, even if games still in flight at
    /// that moment moved the LLR afterwards.
    pub sprt: Option<SprtStatus>,
    pub games_planned: usize,
    pub stopped_early: bool,
    /// The match was stopped from outside ([`MatchConfig::interrupt`]) before its planned
    /// games were played.
    #[serde(default)]
    pub interrupted: bool,
    /// How many games ended for each reason.
    pub reasons: HashMap<Reason, u64>,
    /// Every game, in round order.
    pub games: Vec<GameRecord>,
}

impl MatchResult {
    pub fn games_played(&self) -> u64 {
        self.wdl.games()
    }

    /// Time per move of A and of B over all games, as the arena measured it.
    pub fn move_times(&self) -> [MoveTimes; 2] {
        let mut all: [Vec<f64>; 2] = [Vec::new(), Vec::new()];
        for g in &self.games {
            let (white, black) = g.move_ms_by_side();
            for (name, ms) in [(&g.white, white), (&g.black, black)] {
                if *name == self.a {
                    all[0].extend(ms);
                } else if *name == self.b {
                    all[1].extend(ms);
                }
            }
        }
        all.map(|ms| MoveTimes::of(&ms))
    }
}

/// How long a player's moves took, from the arena's side.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct MoveTimes {
    pub moves: usize,
    pub mean_ms: f64,
    pub max_ms: f64,
}

impl MoveTimes {
    fn of(ms: &[f64]) -> MoveTimes {
        MoveTimes {
            moves: ms.len(),
            mean_ms: if ms.is_empty() {
                0.0
            } else {
                ms.iter().sum::<f64>() / ms.len() as f64
            },
            max_ms: ms.iter().copied().fold(0.0, f64::max),
        }
    }
}

struct Shared {
    wdl: Wdl,
    pairs: Pentanomial,
    half_pairs: HashMap<usize, f64>,
    reasons: HashMap<Reason, u64>,
    games: Vec<GameRecord>,
    sprt_stop: Option<SprtStatus>,
    error: Option<ArenaError>,
}

/// A's score in a game where A had `a_color`.
fn score_for(record: &GameRecord, a_color: Color) -> f64 {
    match record.winner {
        None => 0.5,
        Some(w) if crate::game::Side::from(a_color) == w => 1.0,
        Some(_) => 0.0,
    }
}

/// Plays a match between `a` and `b`. Game `i` has A as White when `i` is even. Fails only
/// when a player cannot be built at all (e.g. an engine that does not start) or the games
/// file cannot be written; a player failing during a game just loses that game.
pub fn run_match(
    a: &dyn PlayerFactory,
    b: &dyn PlayerFactory,
    config: &MatchConfig,
) -> Result<MatchResult, ArenaError> {
    let openings = if config.openings.is_empty() {
        let n = config.games.div_ceil(2).max(1);
        random_openings(n, config.opening_plies, config.seed)
    } else {
        config.openings.clone()
    };
    let openings = if openings.is_empty() {
        vec![Opening::startpos()]
    } else {
        openings
    };
    let concurrency = match config.concurrency {
        0 => std::thread::available_parallelism().map_or(1, |n| n.get()),
        n => n,
    }
    .clamp(1, config.games.max(1));

    let bar = if config.progress {
        ProgressBar::with_draw_target(Some(config.games as u64), ProgressDrawTarget::stderr())
    } else {
        ProgressBar::hidden()
    };
    bar.set_style(
        ProgressStyle::with_template(
            "{elapsed_precise} [{bar:30}] {pos}/{len} games ({eta} left) {msg}",
        )
        .expect("static template")
        .progress_chars("=> "),
    );
    let (a_name, b_name) = (a.name(), b.name());
    bar.set_message(format!("{a_name} vs {b_name}"));

    let next = AtomicUsize::new(0);
    let stop = AtomicBool::new(false);
    let interrupt = config.interrupt.as_deref();
    let interrupted = || interrupt.is_some_and(|flag| flag.load(Ordering::SeqCst));
    let shared = Mutex::new(Shared {
        wdl: Wdl::default(),
        pairs: Pentanomial::default(),
        half_pairs: HashMap::new(),
        reasons: HashMap::new(),
        games: Vec::new(),
        sprt_stop: None,
        error: None,
    });

    let worker = || {
        let mut pa: Option<Box<dyn Player>> = None;
        let mut pb: Option<Box<dyn Player>> = None;
        let fail = |e: ArenaError| {
            let mut s = shared.lock().expect("no panics while locked");
            s.error.get_or_insert(e);
            stop.store(true, Ordering::SeqCst);
        };
        loop {
            if stop.load(Ordering::SeqCst) || interrupted() {
                break;
            }
            let round = next.fetch_add(1, Ordering::SeqCst);
            if round >= config.games {
                break;
            }
            for (slot, factory) in [(&mut pa, a), (&mut pb, b)] {
                if slot.is_none() {
                    match factory.build() {
                        Ok(p) => *slot = Some(p),
                        Err(source) => {
                            fail(ArenaError::Build {
                                player: factory.name(),
                                source,
                            });
                            return;
                        }
                    }
                }
            }
            let (pa_ref, pb_ref) = (pa.as_deref_mut().unwrap(), pb.as_deref_mut().unwrap());
            let a_color = if round.is_multiple_of(2) {
                Color::White
            } else {
                Color::Black
            };
            let opening_index = (round / 2) % openings.len();
            let seed = splitmix(config.seed ^ splitmix(round as u64));
            let (white, black) = if a_color == Color::White {
                (&mut *pa_ref, &mut *pb_ref)
            } else {
                (&mut *pb_ref, &mut *pa_ref)
            };
            let Some((record, broken)) = play_game_until(
                white,
                black,
                &openings[opening_index],
                opening_index,
                &config.game,
                round,
                seed,
                interrupt,
            ) else {
                // Interrupted mid-game: not scored, not written.
                break;
            };
            // A dead or hung engine is replaced by a fresh one for the next game.
            if let Some(side) = broken {
                if side == a_color {
                    pa = None;
                } else {
                    pb = None;
                }
            }
            let score = score_for(&record, a_color);
            let mut s = shared.lock().expect("no panics while locked");
            if let Some(path) = &config.games_file {
                if let Err(source) = jsonl::append(path, &record) {
                    s.error.get_or_insert(ArenaError::Io {
                        path: path.clone(),
                        source,
                    });
                    stop.store(true, Ordering::SeqCst);
                }
            }
            s.wdl.add(score);
            *s.reasons.entry(record.reason).or_default() += 1;
            if let Some(first) = s.half_pairs.remove(&(round / 2)) {
                s.pairs.add_pair(first, score);
            } else {
                s.half_pairs.insert(round / 2, score);
            }
            s.games.push(record);
            if let Some(sprt) = &config.sprt {
                let status = sprt.status(&s.wdl, &s.pairs);
                if status.decision != SprtDecision::Continue && s.sprt_stop.is_none() {
                    s.sprt_stop = Some(status);
                    stop.store(true, Ordering::SeqCst);
                }
            }
            let e = s.wdl.elo();
            let running = format!(
                "+{} ={} -{}  Elo {:+.0} [{:+.0}, {:+.0}]",
                s.wdl.wins, s.wdl.draws, s.wdl.losses, e.elo, e.low, e.high
            );
            if config.game_lines {
                let record = s.games.last().expect("just pushed");
                let line = format!(
                    "game {} of {}: {} - {} {} by {}, {} plies | {a_name} {running}",
                    s.wdl.games(),
                    config.games,
                    record.white,
                    record.black,
                    record.result,
                    record.reason.as_str(),
                    record.moves.len()
                );
                if bar.is_hidden() {
                    eprintln!("{line}");
                } else {
                    bar.println(line);
                }
            }
            bar.set_message(format!("{a_name} vs {b_name}: {running}"));
            bar.inc(1);
        }
    };

    std::thread::scope(|scope| {
        for _ in 0..concurrency {
            scope.spawn(worker);
        }
    });
    bar.finish_and_clear();

    let s = shared.into_inner().expect("no panics while locked");
    if let Some(e) = s.error {
        return Err(e);
    }
    let mut games = s.games;
    games.sort_by_key(|g| g.round);
    let sprt = config.sprt.map(|cfg| {
        let mut status = cfg.status(&s.wdl, &s.pairs);
        if let Some(stop) = s.sprt_stop {
            status.decision = stop.decision;
        }
        status
    });
    Ok(MatchResult {
        a: a_name,
        b: b_name,
        wdl: s.wdl,
        pairs: s.pairs,
        sprt,
        games_planned: config.games,
        stopped_early: s.sprt_stop.is_some() && (games.len() < config.games),
        interrupted: interrupted() && games.len() < config.games,
        reasons: s.reasons,
        games,
    })
}

/// SplitMix64: spreads a counter into an unrelated-looking seed.
fn splitmix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}
