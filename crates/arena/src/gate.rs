//! Gating: does a candidate checkpoint replace the current best? And the ledger that records
//! every such decision.
//!
//! The rule: promote when the SPRT accepts H1, or — when the SPRT did not decide (or none is
//! configured) and every planned game was played — when the candidate's score reaches the
//! threshold. With `require_edge` (the default) never promote a candidate that did not win
//! more games than it lost: a match of draws only (or an even one) carries no evidence that
//! the candidate is better, whatever the threshold says. Without it the gate is a
//! non-regression test (fishtest's term): a threshold below one half promotes every candidate
//! that is not shown to be worse, which keeps a short run's self-play data moving while the
//! networks are too close for a small match to tell apart.

use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

use crate::error::ArenaError;
use crate::jsonl::{self, Records};
use crate::matches::{run_match, MatchConfig, MatchResult};
use crate::player::PlayerFactory;
use crate::stats::{Pentanomial, SprtConfig, SprtDecision, SprtStatus, Wdl};

/// How a gating match is played and judged. No `Default`: the run's gate is the `[gate]`
/// section of `configs/default.toml`, and a second set of values here would disagree with it.
#[derive(Debug, Clone)]
pub struct GateConfig {
    /// Games to play at most (the SPRT may stop sooner).
    pub games: usize,
    /// Optional SPRT; with H1 accepted the candidate is promoted at once.
    pub sprt: Option<SprtConfig>,
    /// Score (0–1, from the candidate's side) needed after all `games` when the SPRT did not
    /// decide. AlphaZero-style gating used 0.55.
    pub threshold: f64,
    /// Refuse a candidate that did not win more games than it lost, whatever the threshold.
    pub require_edge: bool,
    /// Everything else about the match (openings, ply cap, parallelism, games file); its
    /// `games` and `sprt` are replaced by the fields above.
    pub match_config: MatchConfig,
    /// Append the decision to this ledger (JSON lines).
    pub ledger: Option<PathBuf>,
}

/// Why the gate decided as it did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GateReason {
    /// The SPRT accepted H1 (candidate at least `elo1` stronger): promoted.
    SprtH1,
    /// The SPRT accepted H0: kept the current best.
    SprtH0,
    /// All games played, score at or above the threshold: promoted.
    Threshold,
    /// All games played (or stopped), score below the threshold: kept.
    BelowThreshold,
    /// The candidate did not win more games than it lost (all draws included): kept.
    NoEdge,
}

/// A gating decision with the statistics behind it: one line of the ledger.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GateDecision {
    /// Seconds since the Unix epoch when the decision was taken.
    pub time: u64,
    pub candidate: String,
    pub best: String,
    pub promote: bool,
    pub reason: GateReason,
    /// Games played and planned.
    pub games: u64,
    pub games_planned: usize,
    /// From the candidate's side.
    pub wins: u64,
    pub draws: u64,
    pub losses: u64,
    pub score: f64,
    #[serde(with = "crate::stats::json_f64")]
    pub elo: f64,
    #[serde(with = "crate::stats::json_f64")]
    pub elo_low: f64,
    #[serde(with = "crate::stats::json_f64")]
    pub elo_high: f64,
    pub los: f64,
    /// Pentanomial pair counts `[LL, LD+DL, LW+DD+WL, DW+WD, WW]`.
    pub pairs: [u64; 5],
    pub threshold: f64,
    #[serde(default)]
    pub sprt_config: Option<SprtConfig>,
    #[serde(default)]
    pub sprt: Option<SprtStatus>,
    /// Where the games of this match were written, if anywhere.
    #[serde(default)]
    pub games_file: Option<PathBuf>,
}

/// The decision for a finished match (pure: no I/O), `result.a` being the candidate.
pub fn decide(result: &MatchResult, config: &GateConfig) -> GateDecision {
    let wdl: Wdl = result.wdl;
    let sprt_decision = result.sprt.map(|s| s.decision);
    let complete = result.games_played() as usize >= config.games;
    let (promote, reason) = if config.require_edge && wdl.wins <= wdl.losses {
        (false, GateReason::NoEdge)
    } else if sprt_decision == Some(SprtDecision::AcceptH1) {
        (true, GateReason::SprtH1)
    } else if sprt_decision == Some(SprtDecision::AcceptH0) {
        (false, GateReason::SprtH0)
    } else if complete && wdl.score() >= config.threshold {
        (true, GateReason::Threshold)
    } else {
        (false, GateReason::BelowThreshold)
    };
    let elo = wdl.elo();
    let pairs: Pentanomial = result.pairs;
    GateDecision {
        time: SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_secs()),
        candidate: result.a.clone(),
        best: result.b.clone(),
        promote,
        reason,
        games: wdl.games(),
        games_planned: config.games,
        wins: wdl.wins,
        draws: wdl.draws,
        losses: wdl.losses,
        score: wdl.score(),
        elo: elo.elo,
        elo_low: elo.low,
        elo_high: elo.high,
        los: wdl.los(),
        pairs: pairs.counts,
        threshold: config.threshold,
        sprt_config: config.sprt,
        sprt: result.sprt,
        games_file: config.match_config.games_file.clone(),
    }
}

/// Plays `candidate` against `best` and decides; the decision is appended to the ledger when
/// one is configured (before returning, so a crash right after cannot lose it).
pub fn gate(
    candidate: &dyn PlayerFactory,
    best: &dyn PlayerFactory,
    config: &GateConfig,
) -> Result<GateDecision, ArenaError> {
    let mut match_config = config.match_config.clone();
    match_config.games = config.games;
    match_config.sprt = config.sprt;
    let result = run_match(candidate, best, &match_config)?;
    let decision = decide(&result, config);
    if let Some(path) = &config.ledger {
        append_ledger(path, &decision)?;
    }
    Ok(decision)
}

/// Appends one decision as one whole line (see [`crate::jsonl`]).
pub fn append_ledger(path: &Path, decision: &GateDecision) -> Result<(), ArenaError> {
    jsonl::append(path, decision).map_err(|source| ArenaError::Io {
        path: path.to_path_buf(),
        source,
    })
}

/// Every decision in a ledger, oldest first; a torn last line is skipped (and counted).
pub fn read_ledger(path: &Path) -> Result<Records<GateDecision>, ArenaError> {
    jsonl::read(path).map_err(|source| ArenaError::Io {
        path: path.to_path_buf(),
        source,
    })
}

/// The player that the ledger says is the best now: the candidate of the last promotion,
/// or `None` when nothing was ever promoted (then the run's first network is the best).
pub fn current_best(path: &Path) -> Result<Option<String>, ArenaError> {
    Ok(read_ledger(path)?
        .records
        .iter()
        .rev()
        .find(|d| d.promote)
        .map(|d| d.candidate.clone()))
}
