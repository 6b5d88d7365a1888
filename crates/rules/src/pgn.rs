//! PGN for Yari Shogi games, in the form Fairy-Stockfish's tools and pychess-variants read:
//! the seven-tag roster, `[Variant "yarishogi"]`, `[SetUp "1"]` and `[FEN ...]` when the game
//! did not start from the start position, and the moves in Fairy-Stockfish's UCI notation
//! (`d3d4`, `b6b7+`, `P@c5`). Every move is checked against the rules while the text is
//! written, so a PGN from here always replays.

use std::fmt::Write as _;

use thiserror::Error;

use crate::position::{EndReason, Outcome, Position, START_FEN};
use crate::types::{Color, Move};

/// Why a game could not be written.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum PgnError {
    /// A move of the game is not legal where it was played.
    #[error("move {ply} ({mv}) is illegal in {fen}")]
    Illegal { ply: usize, mv: String, fen: String },
    /// A tag value the format cannot carry (a line break).
    #[error("the {tag} tag's value contains a line break")]
    BadTag { tag: String },
}

/// How a game ended when the rules did not end it on the board.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Adjudication {
    /// The side resigned (its opponent wins).
    Resignation(Color),
    /// The side's clock ran out, or its engine failed (its opponent wins).
    Forfeit(Color),
    /// A draw by a ply cap: self-play's and the arena's adjudication, not a rule.
    PlyCap,
}

/// One game to write: where it started, its moves and the tags that describe it.
#[derive(Debug, Clone)]
pub struct PgnGame {
    /// The start position, as a FEN.
    pub start: Position,
    pub moves: Vec<Move>,
    /// Extra tags after the roster and the variant tags (`("Round", "3")` replaces the
    /// roster's own value of that name).
    pub tags: Vec<(String, String)>,
    /// Set when the game ended off the board; `None`: the rules decide, or the game goes on.
    pub adjudication: Option<Adjudication>,
}

/// The result of a written game, as the `Result` tag and the movetext's end say it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PgnResult {
    /// `1-0`, `0-1`, `1/2-1/2` or `*` (unfinished).
    pub result: &'static str,
    /// The PGN `Termination` value, when the game ended.
    pub termination: Option<&'static str>,
}

const ROSTER: [&str; 7] = ["Event", "Site", "Date", "Round", "White", "Black", "Result"];

impl PgnGame {
    pub fn new(start: Position, moves: Vec<Move>) -> PgnGame {
        PgnGame {
            start,
            moves,
            tags: Vec::new(),
            adjudication: None,
        }
    }

    /// Adds (or replaces) a tag.
    pub fn tag(mut self, name: &str, value: impl Into<String>) -> PgnGame {
        let value = value.into();
        match self.tags.iter_mut().find(|(n, _)| n == name) {
            Some(slot) => slot.1 = value,
            None => self.tags.push((name.to_string(), value)),
        }
        self
    }

    /// Replays the moves and returns the final position and the result.
    pub fn replay(&self) -> Result<(Position, PgnResult), PgnError> {
        let mut pos = self.start.clone();
        for (i, &mv) in self.moves.iter().enumerate() {
            if pos.outcome().is_some() || !pos.is_legal(mv) {
                return Err(PgnError::Illegal {
                    ply: i + 1,
                    mv: mv.to_string(),
                    fen: pos.fen(),
                });
            }
            pos.play(mv);
        }
        let result = match (pos.outcome(), self.adjudication) {
            (Some(outcome), _) => outcome_result(outcome),
            (None, Some(Adjudication::Resignation(c))) => PgnResult {
                result: win_for(!c),
                termination: Some("resignation"),
            },
            (None, Some(Adjudication::Forfeit(c))) => PgnResult {
                result: win_for(!c),
                termination: Some("forfeit"),
            },
            (None, Some(Adjudication::PlyCap)) => PgnResult {
                result: "1/2-1/2",
                termination: Some("adjudication: ply cap"),
            },
            (None, None) => PgnResult {
                result: "*",
                termination: None,
            },
        };
        Ok((pos, result))
    }

    /// The game as PGN text, ending with a blank line (games concatenate into one file).
    pub fn write(&self) -> Result<String, PgnError> {
        let (_, result) = self.replay()?;
        for (name, value) in &self.tags {
            if value.contains(['\n', '\r']) {
                return Err(PgnError::BadTag { tag: name.clone() });
            }
        }
        let lookup = |name: &str| {
            self.tags
                .iter()
                .find(|(n, _)| n == name)
                .map(|(_, v)| v.as_str())
        };
        let mut out = String::new();
        for name in ROSTER {
            let value = match name {
                "Result" => result.result,
                _ => lookup(name).unwrap_or("?"),
            };
            tag_line(&mut out, name, value);
        }
        tag_line(&mut out, "Variant", "yarishogi");
        let fen = self.start.fen();
        if fen != START_FEN {
            tag_line(&mut out, "SetUp", "1");
            tag_line(&mut out, "FEN", &fen);
        }
        if let Some(t) = result.termination {
            tag_line(&mut out, "Termination", t);
        }
        tag_line(&mut out, "PlyCount", &self.moves.len().to_string());
        let reserved = |n: &str| {
            ROSTER.contains(&n)
                || matches!(n, "Variant" | "SetUp" | "FEN" | "Termination" | "PlyCount")
        };
        for (name, value) in self.tags.iter().filter(|(n, _)| !reserved(n)) {
            tag_line(&mut out, name, value);
        }
        out.push('\n');
        out.push_str(&movetext(&fen, &self.moves, result.result));
        out.push_str("\n\n");
        Ok(out)
    }
}

fn win_for(c: Color) -> &'static str {
    match c {
        Color::White => "1-0",
        Color::Black => "0-1",
    }
}

fn outcome_result(outcome: Outcome) -> PgnResult {
    PgnResult {
        result: outcome.result_str(),
        termination: Some(match outcome.reason {
            EndReason::Checkmate => "checkmate",
            EndReason::Stalemate => "no legal moves",
            EndReason::Repetition => "threefold repetition",
            EndReason::PerpetualCheck => "perpetual check",
            EndReason::PlyCap => "adjudication: ply cap",
        }),
    }
}

fn tag_line(out: &mut String, name: &str, value: &str) {
    let escaped = value.replace('\\', "\\\\").replace('"', "\\\"");
    let _ = writeln!(out, "[{name} \"{escaped}\"]");
}

/// `1. d3d4 d7d6 2. ...`, numbered from the FEN's move number, wrapped before 80 columns.
fn movetext(fen: &str, moves: &[Move], result: &str) -> String {
    let mut fields = fen.split_whitespace().skip(1);
    let mut black = fields.next() == Some("b");
    let mut number: u32 = fen
        .split_whitespace()
        .nth(5)
        .and_then(|n| n.parse().ok())
        .filter(|&n| n > 0)
        .unwrap_or(1);
    let mut tokens = Vec::with_capacity(moves.len() * 3 / 2 + 1);
    for (i, mv) in moves.iter().enumerate() {
        if !black {
            tokens.push(format!("{number}."));
        } else if i == 0 {
            tokens.push(format!("{number}..."));
        }
        tokens.push(mv.to_string());
        if black {
            number += 1;
        }
        black = !black;
    }
    tokens.push(result.to_string());
    let mut out = String::new();
    let mut column = 0;
    for token in tokens {
        if column > 0 && column + 1 + token.len() > 79 {
            out.push('\n');
            column = 0;
        } else if column > 0 {
            out.push(' ');
            column += 1;
        }
        out.push_str(&token);
        column += token.len();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn game(fen: &str, moves: &[&str]) -> PgnGame {
        let start = Position::from_fen(fen).unwrap();
        let mut pos = start.clone();
        let moves = moves.iter().map(|m| pos.play_uci(m).unwrap()).collect();
        PgnGame::new(start, moves)
    }

    #[test]
    fn a_game_from_the_start_position_has_no_fen_tag_and_numbers_its_moves() {
        let text = game(START_FEN, &["d3d4", "d7d6", "c3c4"])
            .tag("White", "yari")
            .write()
            .unwrap();
        assert!(text.contains("[White \"yari\"]\n[Black \"?\"]\n[Result \"*\"]\n"));
        assert!(text.contains("[Variant \"yarishogi\"]"));
        assert!(!text.contains("[FEN"));
        assert!(text.ends_with("\n1. d3d4 d7d6 2. c3c4 *\n\n"), "{text}");
    }

    #[test]
    fn a_mate_from_a_set_up_position_gives_the_result_and_its_reason() {
        let fen = "3k3/2p4/7/7/7/7/5+n1/7/5NK[Rp] b - - 0 1";
        let text = game(fen, &["P@g2"]).write().unwrap();
        assert!(text.contains(&format!("[SetUp \"1\"]\n[FEN \"{fen}\"]\n")));
        assert!(text.contains("[Result \"0-1\"]"));
        assert!(text.contains("[Termination \"checkmate\"]"));
        assert!(text.ends_with("\n1... P@g2 0-1\n\n"), "{text}");
    }

    #[test]
    fn adjudications_set_the_result_only_when_the_rules_did_not_end_the_game() {
        let mut g = game(START_FEN, &["d3d4"]);
        g.adjudication = Some(Adjudication::Resignation(Color::Black));
        let (_, r) = g.replay().unwrap();
        assert_eq!((r.result, r.termination), ("1-0", Some("resignation")));
        g.adjudication = Some(Adjudication::PlyCap);
        assert_eq!(g.replay().unwrap().1.result, "1/2-1/2");
        let mut mate = game("3k3/2p4/7/7/7/7/5+n1/7/5NK[Rp] b - - 0 1", &["P@g2"]);
        mate.adjudication = Some(Adjudication::Forfeit(Color::Black));
        assert_eq!(mate.replay().unwrap().1.result, "0-1");
    }

    #[test]
    fn an_illegal_move_or_a_tag_with_a_line_break_is_an_error() {
        let mut g = game(START_FEN, &["d3d4"]);
        g.moves.push(Move::parse_uci("d4d9").unwrap());
        assert!(matches!(g.write(), Err(PgnError::Illegal { ply: 2, .. })));
        let bad = game(START_FEN, &[]).tag("Event", "a\nb");
        assert!(matches!(bad.write(), Err(PgnError::BadTag { .. })));
        let quoted = game(START_FEN, &[])
            .tag("Event", "say \"hi\"")
            .write()
            .unwrap();
        assert!(quoted.contains(r#"[Event "say \"hi\""]"#));
    }

    #[test]
    fn long_games_wrap_before_eighty_columns() {
        let mut pos = Position::startpos();
        let mut moves = Vec::new();
        for _ in 0..60 {
            let Some(&mv) = pos.legal_moves().first() else {
                break;
            };
            if pos.outcome().is_some() {
                break;
            }
            pos.play(mv);
            moves.push(mv);
        }
        let text = PgnGame::new(Position::startpos(), moves).write().unwrap();
        assert!(text.lines().all(|l| l.len() < 80));
    }
}
