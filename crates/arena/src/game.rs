//! Playing one game between two players, and its record.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use yari_rules::{Color, EndReason, Move, Position, START_FEN};

use crate::openings::Opening;
use crate::player::{ClockView, GameView, Player, PlayerError};

/// Why a game ended: the rules' reasons, the arena's ply-cap adjudication, and the ways a
/// player can forfeit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Reason {
    Checkmate,
    Stalemate,
    Repetition,
    PerpetualCheck,
    /// The arena's ply cap: a draw by adjudication, not by the rules.
    PlyCap,
    /// The player to move returned an illegal or unparseable move: it loses.
    IllegalMove,
    /// The player to move failed (engine died, hung, broke protocol): it loses.
    PlayerFailure,
    /// The player to move used more than its clock had left: it loses.
    Time,
}

impl Reason {
    pub fn as_str(self) -> &'static str {
        match self {
            Reason::Checkmate => "checkmate",
            Reason::Stalemate => "stalemate",
            Reason::Repetition => "repetition",
            Reason::PerpetualCheck => "perpetual_check",
            Reason::PlyCap => "ply_cap",
            Reason::IllegalMove => "illegal_move",
            Reason::PlayerFailure => "player_failure",
            Reason::Time => "time",
        }
    }

    /// Whether the game ended by the rules of Yari Shogi (not adjudicated or forfeited).
    pub fn is_rules(self) -> bool {
        matches!(
            self,
            Reason::Checkmate | Reason::Stalemate | Reason::Repetition | Reason::PerpetualCheck
        )
    }
}

impl From<EndReason> for Reason {
    fn from(r: EndReason) -> Reason {
        match r {
            EndReason::Checkmate => Reason::Checkmate,
            EndReason::Stalemate => Reason::Stalemate,
            EndReason::Repetition => Reason::Repetition,
            EndReason::PerpetualCheck => Reason::PerpetualCheck,
            EndReason::PlyCap => Reason::PlyCap,
        }
    }
}

/// `"white"`, `"black"` or `null` in records.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Side {
    White,
    Black,
}

impl From<Color> for Side {
    fn from(c: Color) -> Side {
        match c {
            Color::White => Side::White,
            Color::Black => Side::Black,
        }
    }
}

/// One finished game, one line of a game file. Replay: `start_fen` + `moves` (UCI text,
/// opening moves included; the first `opening_plies` of them are the opening).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GameRecord {
    /// Index of the game in its match (colours alternate: even = first player is White).
    pub round: usize,
    pub white: String,
    pub black: String,
    /// Index of the opening in the match's opening list.
    pub opening: usize,
    pub opening_plies: usize,
    pub start_fen: String,
    pub moves: Vec<String>,
    /// `1-0`, `0-1` or `1/2-1/2`.
    pub result: String,
    pub winner: Option<Side>,
    pub reason: Reason,
    /// Free text for forfeits: the illegal move, or the engine's failure.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
    /// The per-game seed handed to both players.
    pub seed: u64,
    /// Milliseconds each move after the opening took, measured by the arena around the
    /// player's answer (an engine's pipe round trip included): what a GUI's clock sees.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub move_ms: Vec<f64>,
}

impl GameRecord {
    /// Score of the player named `name` in this game (1, ½ or 0), `None` if it did not play.
    pub fn score_of(&self, name: &str) -> Option<f64> {
        let side = if self.white == name {
            Side::White
        } else if self.black == name {
            Side::Black
        } else {
            return None;
        };
        Some(match self.winner {
            None => 0.5,
            Some(w) if w == side => 1.0,
            Some(_) => 0.0,
        })
    }

    /// `move_ms` split by the side that moved: (White's, Black's).
    pub fn move_ms_by_side(&self) -> (Vec<f64>, Vec<f64>) {
        let black_starts = self.start_fen.split_whitespace().nth(1) == Some("b");
        let first_is_white = self.opening_plies.is_multiple_of(2) != black_starts;
        let (mut white, mut black) = (Vec::new(), Vec::new());
        for (i, &ms) in self.move_ms.iter().enumerate() {
            if (i % 2 == 0) == first_is_white {
                white.push(ms);
            } else {
                black.push(ms);
            }
        }
        (white, black)
    }
}

/// A game clock: `base` for the whole game plus `increment` after every move (the UCI
/// `wtime/btime winc/binc` a GUI sends).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TimeControl {
    pub base: Duration,
    pub increment: Duration,
}

impl TimeControl {
    /// `BASE+INC` in seconds, e.g. `10+0.1`; a bare `BASE` has no increment.
    pub fn parse(text: &str) -> Result<TimeControl, String> {
        let (base, inc) = text.split_once('+').unwrap_or((text, "0"));
        let seconds = |what: &str, v: &str| -> Result<Duration, String> {
            let x: f64 = v.trim().parse().map_err(|_| {
                format!("time control {text:?}: {what} {v:?} is not a number of seconds")
            })?;
            if !(0.0..=86_400.0).contains(&x) {
                return Err(format!(
                    "time control {text:?}: {what} {x} is not in 0..=86400 seconds"
                ));
            }
            Ok(Duration::from_secs_f64(x))
        };
        let tc = TimeControl {
            base: seconds("base", base)?,
            increment: seconds("increment", inc)?,
        };
        if tc.base.is_zero() {
            return Err(format!(
                "time control {text:?}: the base time must be above 0"
            ));
        }
        Ok(tc)
    }
}

/// How a game is run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GameConfig {
    /// Total plies (opening included) after which the game is adjudicated a draw.
    pub ply_cap: Option<usize>,
    /// A game clock the arena keeps: a player whose answer takes longer than its clock has
    /// left loses on time. Players see both clocks in their [`GameView`].
    pub clock: Option<TimeControl>,
}

impl Default for GameConfig {
    fn default() -> Self {
        GameConfig {
            ply_cap: Some(yari_rules::DEFAULT_PLY_CAP),
            clock: None,
        }
    }
}

/// Plays `opening`, then lets the players move until the game ends by the rules, by the ply
/// cap, or by a forfeit. Never panics on a player's misbehaviour: an error or illegal move
/// loses the game for the player to move. Returns the record and, when a player failed in a
/// way that leaves it unusable (dead or hung engine), which side that was, so the caller can
/// replace it.
pub fn play_game(
    white: &mut dyn Player,
    black: &mut dyn Player,
    opening: &Opening,
    opening_index: usize,
    config: &GameConfig,
    round: usize,
    seed: u64,
) -> (GameRecord, Option<Color>) {
    play_game_until(
        white,
        black,
        opening,
        opening_index,
        config,
        round,
        seed,
        None,
    )
    .expect("a game without an interrupt flag always finishes")
}

/// [`play_game`] that gives up before any move once `interrupt` is raised: `None` then, the
/// game unfinished (a match stopped from outside does not score half-played games).
#[allow(clippy::too_many_arguments)]
pub(crate) fn play_game_until(
    white: &mut dyn Player,
    black: &mut dyn Player,
    opening: &Opening,
    opening_index: usize,
    config: &GameConfig,
    round: usize,
    seed: u64,
    interrupt: Option<&AtomicBool>,
) -> Option<(GameRecord, Option<Color>)> {
    // An unreadable start FEN is a bug in the opening list; fall back to the start position.
    let (mut pos, start_fen) = match Position::from_fen(&opening.start_fen) {
        Ok(pos) => (pos, opening.start_fen.clone()),
        Err(_) => (Position::startpos(), START_FEN.to_string()),
    };
    let mut moves: Vec<Move> = Vec::new();
    for text in &opening.moves {
        match pos.play_uci(text) {
            Ok(mv) => moves.push(mv),
            // A bad opening is a bug in the opening list, not a player's fault: stop the
            // opening there and let the players take over.
            Err(_) => break,
        }
    }
    let opening_plies = moves.len();
    let mut record = GameRecord {
        round,
        white: white.name().to_string(),
        black: black.name().to_string(),
        opening: opening_index,
        opening_plies,
        start_fen: start_fen.clone(),
        moves: Vec::new(),
        result: String::new(),
        winner: None,
        reason: Reason::PlyCap,
        detail: None,
        seed,
        move_ms: Vec::new(),
    };
    let mut clock = config.clock.map(|tc| ClockView {
        white: tc.base,
        black: tc.base,
        increment: tc.increment,
    });
    let mut broken = None;
    let forfeit = |record: &mut GameRecord, loser: Color, reason: Reason, detail: String| {
        record.winner = Some((!loser).into());
        record.reason = reason;
        record.detail = Some(detail);
    };

    let mut started = true;
    for (color, player) in [
        (Color::White, &mut *white as &mut dyn Player),
        (Color::Black, &mut *black as &mut dyn Player),
    ] {
        if let Err(e) = player.new_game(seed) {
            broken = Some(color);
            forfeit(&mut record, color, Reason::PlayerFailure, e.to_string());
            started = false;
            break;
        }
    }

    if started {
        loop {
            if interrupt.is_some_and(|flag| flag.load(Ordering::SeqCst)) {
                return None;
            }
            if let Some(outcome) = pos.outcome_with_ply_cap(config.ply_cap) {
                record.winner = outcome.winner.map(Side::from);
                record.reason = outcome.reason.into();
                break;
            }
            let to_move = pos.side_to_move();
            let player: &mut dyn Player = match to_move {
                Color::White => &mut *white,
                Color::Black => &mut *black,
            };
            let view = GameView {
                start_fen: &start_fen,
                moves: &moves,
                position: &pos,
                clock,
            };
            let asked = Instant::now();
            let answer = player.choose_move(&view);
            let took = asked.elapsed();
            // A Ctrl-C in a terminal reaches the engines too: an engine that died of it has
            // not lost the game, the game was interrupted.
            if interrupt.is_some_and(|flag| flag.load(Ordering::SeqCst)) {
                return None;
            }
            record
                .move_ms
                .push((took.as_secs_f64() * 1e5).round() / 100.0);
            if let Some(c) = clock.as_mut() {
                let left = match to_move {
                    Color::White => &mut c.white,
                    Color::Black => &mut c.black,
                };
                if took > *left {
                    forfeit(
                        &mut record,
                        to_move,
                        Reason::Time,
                        format!(
                            "{} took {} ms with {} ms left",
                            player.name(),
                            took.as_millis(),
                            left.as_millis()
                        ),
                    );
                    break;
                }
                *left = *left - took + c.increment;
            }
            match answer {
                Ok(mv) if pos.is_legal(mv) => {
                    pos.play(mv);
                    moves.push(mv);
                }
                Ok(mv) => {
                    forfeit(
                        &mut record,
                        to_move,
                        Reason::IllegalMove,
                        format!(
                            "{} played illegal move {mv} in {}",
                            player.name(),
                            pos.fen()
                        ),
                    );
                    break;
                }
                Err(PlayerError::BadMoveText(text)) => {
                    forfeit(
                        &mut record,
                        to_move,
                        Reason::IllegalMove,
                        format!(
                            "{} sent unparseable move {text:?} in {}",
                            player.name(),
                            pos.fen()
                        ),
                    );
                    break;
                }
                Err(e) => {
                    if e.is_fatal() {
                        broken = Some(to_move);
                    }
                    forfeit(
                        &mut record,
                        to_move,
                        Reason::PlayerFailure,
                        format!("{}: {e}", player.name()),
                    );
                    break;
                }
            }
        }
    }
    record.moves = moves.iter().map(|m| m.to_string()).collect();
    record.result = match record.winner {
        Some(Side::White) => "1-0",
        Some(Side::Black) => "0-1",
        None => "1/2-1/2",
    }
    .to_string();
    Some((record, broken))
}
