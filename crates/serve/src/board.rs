//! A game as the pages see it: the start position and the moves, replayed by the rules and
//! described in JSON (board, hands, legal moves, check, result).

use serde_json::{json, Value};
use yari_rules::{Color, EndReason, Move, Outcome, Position, Role, Square, FILES, RANKS};

/// Longest FEN accepted (a real one is under 100 characters).
const MAX_FEN_LEN: usize = 256;

/// A start position and legal moves from it.
pub struct Game {
    pub start: Position,
    pub moves: Vec<Move>,
    pub position: Position,
}

/// Replays `moves` from `fen` (the start position when `None`). The error names the FEN's
/// fault or the first illegal move and its ply.
pub fn replay(fen: Option<&str>, moves: &[String], max_moves: usize) -> Result<Game, String> {
    let start = match fen.map(str::trim).filter(|f| !f.is_empty()) {
        None => Position::startpos(),
        Some(f) if f.len() > MAX_FEN_LEN => {
            return Err(format!("FEN longer than {MAX_FEN_LEN} characters"))
        }
        Some(f) => Position::from_fen(f).map_err(|e| format!("bad FEN {f:?}: {e}"))?,
    };
    if moves.len() > max_moves {
        return Err(format!(
            "{} moves: at most {max_moves} are accepted",
            moves.len()
        ));
    }
    let mut position = start.clone();
    let mut played = Vec::with_capacity(moves.len());
    for (i, text) in moves.iter().enumerate() {
        if let Some(outcome) = position.outcome() {
            return Err(format!(
                "move {} ({text}) after the game ended ({})",
                i + 1,
                outcome_text(outcome)
            ));
        }
        let mv = position
            .play_uci(text)
            .map_err(|e| format!("move {}: {e}", i + 1))?;
        played.push(mv);
    }
    Ok(Game {
        start,
        moves: played,
        position,
    })
}

/// The piece on each square, rank 9 first, file a first; `""` for an empty square.
fn board_rows(pos: &Position) -> Vec<Vec<String>> {
    (0..RANKS)
        .rev()
        .map(|rank| {
            (0..FILES)
                .map(|file| {
                    Square::from_coords(file, rank)
                        .and_then(|sq| pos.piece_at(sq))
                        .map(|p| p.to_string())
                        .unwrap_or_default()
                })
                .collect()
        })
        .collect()
}

fn hand(pos: &Position, color: Color) -> Value {
    let mut map = serde_json::Map::new();
    for role in Role::ALL {
        map.insert(role.char().to_string(), json!(pos.hand(color, role)));
    }
    Value::Object(map)
}

fn capitalised(c: Color) -> &'static str {
    match c {
        Color::White => "White",
        Color::Black => "Black",
    }
}

/// A sentence for people: "Black wins by checkmate", "Draw by threefold repetition".
pub fn outcome_text(outcome: Outcome) -> String {
    match (outcome.winner, outcome.reason) {
        (Some(w), EndReason::Checkmate) => format!("{} wins by checkmate", capitalised(w)),
        (Some(w), EndReason::Stalemate) => {
            format!(
                "{} wins: {} has no legal move",
                capitalised(w),
                capitalised(!w)
            )
        }
        (Some(w), EndReason::PerpetualCheck) => {
            format!(
                "{} wins: perpetual check by {}",
                capitalised(w),
                capitalised(!w)
            )
        }
        (None, EndReason::PlyCap) => "Draw by adjudication (ply cap)".into(),
        (None, _) => "Draw by threefold repetition".into(),
        (Some(w), _) => format!("{} wins", capitalised(w)),
    }
}

/// The JSON the pages draw a position from.
pub fn position_json(game: &Game) -> Value {
    let pos = &game.position;
    let side = pos.side_to_move();
    let outcome = pos.outcome().map(|o| {
        json!({
            "result": o.result_str(),
            "winner": o.winner.map(|c| c.to_string()),
            "reason": o.reason.as_str(),
            "text": outcome_text(o),
        })
    });
    let legal: Vec<String> = match outcome {
        Some(_) => Vec::new(),
        None => pos.legal_moves().iter().map(Move::to_string).collect(),
    };
    json!({
        "start_fen": game.start.fen(),
        "fen": pos.fen(),
        "side": side.to_string(),
        "board": board_rows(pos),
        "hands": {"white": hand(pos, Color::White), "black": hand(pos, Color::Black)},
        "legal": legal,
        "check": pos.is_check(),
        "king": Square::new(pos.board().king(side)).map(|s| s.to_string()),
        "last_move": game.moves.last().map(Move::to_string),
        "moves": game.moves.iter().map(Move::to_string).collect::<Vec<_>>(),
        "ply": game.moves.len(),
        "outcome": outcome,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(moves: &[&str]) -> Vec<String> {
        moves.iter().map(|m| m.to_string()).collect()
    }

    #[test]
    fn the_start_position_is_drawn_rank_nine_first() {
        let game = replay(None, &[], 10).unwrap();
        let v = position_json(&game);
        assert_eq!(v["board"][0][3], "k");
        assert_eq!(v["board"][8][0], "R");
        assert_eq!(v["board"][6][4], "P");
        assert_eq!(v["side"], "white");
        assert_eq!(v["king"], "d1");
        assert_eq!(v["legal"].as_array().unwrap().len(), 20);
        assert!(v["outcome"].is_null());
    }

    #[test]
    fn a_pawn_drop_mate_ends_the_game_with_its_reason() {
        let fen = "3k3/2p4/7/7/7/7/5+n1/7/5NK[Rp] b - - 0 1";
        let game = replay(Some(fen), &strings(&["P@g2"]), 10).unwrap();
        let v = position_json(&game);
        assert_eq!(v["outcome"]["result"], "0-1");
        assert_eq!(v["outcome"]["reason"], "checkmate");
        assert_eq!(v["outcome"]["text"], "Black wins by checkmate");
        assert_eq!(v["legal"].as_array().unwrap().len(), 0);
        assert_eq!(v["check"], true);
        assert_eq!(v["last_move"], "P@g2");
        assert_eq!(v["hands"]["black"]["P"], 0);
        assert_eq!(v["hands"]["white"]["R"], 1);
    }

    #[test]
    fn bad_fens_illegal_moves_and_moves_after_the_end_are_refused_with_their_ply() {
        let e = replay(Some("rnnkbbr/7 w"), &[], 10).err().unwrap();
        assert!(e.starts_with("bad FEN"), "{e}");
        let e = replay(None, &strings(&["d3d4", "d4d6"]), 10).err().unwrap();
        assert!(e.starts_with("move 2:") && e.contains("d4d6"), "{e}");
        let e = replay(None, &strings(&["d3"]), 10).err().unwrap();
        assert!(e.contains("malformed"), "{e}");
        let fen = "3k3/2p4/7/7/7/7/5+n1/7/5NK[Rp] b - - 0 1";
        let e = replay(Some(fen), &strings(&["P@g2", "g1f2"]), 10)
            .err()
            .unwrap();
        assert!(e.contains("after the game ended"), "{e}");
        let e = replay(None, &strings(&["d3d4"; 11]), 10).err().unwrap();
        assert!(e.contains("at most 10"), "{e}");
        let long = "p".repeat(300);
        assert!(replay(Some(&long), &[], 10).is_err());
    }
}
