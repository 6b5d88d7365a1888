//! Arguments of the `position` and `go` commands.

use std::time::Duration;

use yari_rules::{Color, Move, Position};

use crate::engine::{Budget, DEFAULT_SIMULATIONS};
use yari_search::engine::Clock;

/// Parses `position startpos|fen FEN [moves ...]`; on an illegal move it keeps the position
/// reached so far and says which move was refused.
pub(super) fn parse_position(args: &[&str]) -> Result<(Position, Option<String>), String> {
    let moves_at = args.iter().position(|&a| a == "moves");
    let (setup, moves) = match moves_at {
        Some(i) => (&args[..i], &args[i + 1..]),
        None => (args, &[][..]),
    };
    let mut pos = match setup.first() {
        Some(&"startpos") if setup.len() == 1 => Position::startpos(),
        Some(&"fen") if setup.len() > 1 => {
            Position::from_fen(&setup[1..].join(" ")).map_err(|e| format!("bad fen: {e}"))?
        }
        _ => return Err("expected 'position startpos' or 'position fen FEN' [moves ...]".into()),
    };
    for mv in moves {
        if let Err(e) = pos.play_uci(mv) {
            return Ok((
                pos,
                Some(format!("{e}; ignoring it and the moves after it")),
            ));
        }
    }
    Ok((pos, None))
}

/// A parsed `go`: the budget, whether it is a ponder search, and the root moves it may play.
#[derive(Clone, Debug, Default, PartialEq)]
pub(super) struct Go {
    pub budget: Budget,
    /// `go ponder`: search until `ponderhit` (then `budget` applies from that moment) or
    /// `stop`.
    pub ponder: bool,
    /// `go searchmoves M1 M2 ...`: only these at the root (empty: every move).
    pub searchmoves: Vec<Move>,
}

/// The words of `go` that take no value or a list, or name a limit.
const GO_WORDS: [&str; 12] = [
    "searchmoves",
    "ponder",
    "wtime",
    "btime",
    "winc",
    "binc",
    "movestogo",
    "depth",
    "nodes",
    "mate",
    "movetime",
    "infinite",
];

/// Parses the arguments of `go` in position `pos` (whose side to move picks the clock and
/// which checks the `searchmoves`).
pub(super) fn parse_go(args: &[&str], pos: &Position) -> Result<Go, String> {
    let side = pos.side_to_move();
    let mut go = Go::default();
    let mut budget = Budget::default();
    let (mut wtime, mut btime, mut winc, mut binc) = (None, None, 0u64, 0u64);
    let mut moves_to_go = None;
    let mut i = 0;
    while i < args.len() {
        let value = || -> Result<u64, String> {
            args.get(i + 1)
                .and_then(|v| v.parse::<i64>().ok())
                .map(|v| v.max(0) as u64)
                .ok_or_else(|| format!("'{}' needs a number", args[i]))
        };
        match args[i] {
            "infinite" => {
                budget.infinite = true;
                i += 1;
                continue;
            }
            "ponder" => {
                go.ponder = true;
                i += 1;
                continue;
            }
            "searchmoves" => {
                i += 1;
                while i < args.len() && !GO_WORDS.contains(&args[i]) {
                    let mv = pos
                        .parse_move(args[i])
                        .map_err(|e| format!("searchmoves: {e}"))?;
                    go.searchmoves.push(mv);
                    i += 1;
                }
                if go.searchmoves.is_empty() {
                    return Err("'searchmoves' needs at least one move".into());
                }
                continue;
            }
            "nodes" => budget.simulations = Some(value()?.clamp(1, 10_000_000) as u32),
            "movetime" => budget.movetime = Some(Duration::from_millis(value()?)),
            "wtime" => wtime = Some(value()?),
            "btime" => btime = Some(value()?),
            "winc" => winc = value()?,
            "binc" => binc = value()?,
            "movestogo" => moves_to_go = Some(value()?.min(u32::MAX as u64) as u32),
            "depth" | "mate" => {
                value()?;
            }
            other => return Err(format!("unknown go parameter '{other}'")),
        }
        i += 2;
    }
    let (time, inc) = match side {
        Color::White => (wtime, winc),
        Color::Black => (btime, binc),
    };
    if let Some(t) = time {
        budget.clock = Some(Clock {
            remaining: Duration::from_millis(t),
            increment: Duration::from_millis(inc),
            moves_to_go: moves_to_go.filter(|&m| m > 0),
        });
    }
    if !budget.is_limited() && !budget.infinite && !go.ponder {
        budget.simulations = Some(DEFAULT_SIMULATIONS);
    }
    go.budget = budget;
    Ok(go)
}
