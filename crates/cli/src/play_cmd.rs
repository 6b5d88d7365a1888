//! `yari play`: a game against a person in the terminal.

use std::io::{BufRead, Write};
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

use anyhow::Result;
use yari_rules::{Color, Move, Position, Role, Square, FILES, RANKS};

use crate::engine::{pv_text, Budget, Engine, Thought};

const HELP: &str = "Type a move (a3a4, b6b7+ to promote, P@c5 to drop) or a command:\n  \
moves   list the legal moves\n  hint    ask the engine for a move\n  undo    take back your last move\n  \
fen     print the position as FEN\n  resign  give up\n  quit    leave\n  help    this text";

/// The board as the person sees it (their side at the bottom), hands and the last move marked.
pub fn render(pos: &Position, last: Option<Move>, viewer: Color) -> String {
    let mut s = String::new();
    let marked = |sq: Square| last.is_some_and(|m| m.to() == sq || m.from() == Some(sq));
    let files: Vec<usize> = match viewer {
        Color::White => (0..FILES).collect(),
        Color::Black => (0..FILES).rev().collect(),
    };
    let ranks: Vec<usize> = match viewer {
        Color::White => (0..RANKS).rev().collect(),
        Color::Black => (0..RANKS).collect(),
    };
    let hand = |color: Color| {
        let items: Vec<String> = Role::ALL
            .iter()
            .filter(|&&r| pos.hand(color, r) > 0)
            .map(|&r| format!("{}x{}", r.char(), pos.hand(color, r)))
            .collect();
        if items.is_empty() {
            "-".to_string()
        } else {
            items.join(" ")
        }
    };
    let top = !viewer;
    s.push_str(&format!("  {} hand: {}\n", top, hand(top)));
    let header: String = files
        .iter()
        .map(|&f| format!("  {} ", (b'a' + f as u8) as char))
        .collect();
    s.push_str(&format!("   {header}\n"));
    for &r in &ranks {
        s.push_str(&format!(" {} ", r + 1));
        for &f in &files {
            let sq = Square::from_coords(f, r).expect("on board");
            let text = pos
                .piece_at(sq)
                .map(|p| p.to_string())
                .unwrap_or_else(|| ".".into());
            if marked(sq) {
                s.push_str(&format!("[{text:>2}]"));
            } else {
                s.push_str(&format!(" {text:>2} "));
            }
        }
        s.push_str(&format!(" {}\n", r + 1));
    }
    s.push_str(&format!("   {header}\n"));
    s.push_str(&format!("  {} hand: {}\n", viewer, hand(viewer)));
    s.push_str("  (upper case: White, lower case: Black, +: promoted, [ ]: last move)\n");
    s
}

fn describe(thought: &Thought, root: &Position) -> String {
    let score = match thought.mate_in(root) {
        Some(m) if m > 0 => format!("mate in {m}"),
        Some(m) => format!("mated in {}", -m),
        None => format!("{:+.2}", thought.result.root_value),
    };
    format!(
        "eval {score} (for the side to move), {} simulations, pv {}",
        thought.result.simulations,
        pv_text(thought)
    )
}

/// Plays one game on `input`/`output`; returns when it ends, the person quits or input ends.
pub fn run(
    engine: &Engine,
    person: Color,
    budget: Budget,
    input: &mut dyn BufRead,
    output: &mut dyn Write,
) -> Result<()> {
    let never = AtomicBool::new(false);
    let start = Position::startpos();
    let mut moves: Vec<Move> = Vec::new();
    let replay = |moves: &[Move]| {
        let mut p = start.clone();
        for &m in moves {
            p.play(m);
        }
        p
    };
    let mut pos = start.clone();
    writeln!(output, "yari-zero: you play {person}. {HELP}")?;
    let mut show = true;
    loop {
        if show {
            writeln!(output, "\n{}", render(&pos, moves.last().copied(), person))?;
        }
        show = true;
        if let Some(outcome) = pos.outcome() {
            let who = match outcome.winner {
                Some(c) if c == person => "you win",
                Some(_) => "yari-zero wins",
                None => "draw",
            };
            writeln!(
                output,
                "Game over: {} by {} ({who}).",
                outcome.result_str(),
                outcome.reason.as_str()
            )?;
            return Ok(());
        }
        if pos.side_to_move() != person {
            let thought =
                engine.think(&pos, budget, Instant::now(), &never, Duration::MAX, |_| {})?;
            let Some(mv) = thought.result.best_move else {
                anyhow::bail!("the engine found no move in a position that is not over");
            };
            writeln!(
                output,
                "yari-zero plays {mv}   [{}]",
                describe(&thought, &pos)
            )?;
            pos.play(mv);
            moves.push(mv);
            continue;
        }
        write!(output, "your move> ")?;
        output.flush()?;
        let mut bytes = Vec::new();
        if input.read_until(b'\n', &mut bytes)? == 0 {
            writeln!(output, "\n(end of input: leaving the game)")?;
            return Ok(());
        }
        // A line that is not UTF-8 (a stray byte from the terminal) is answered, not fatal.
        let Ok(line) = String::from_utf8(bytes) else {
            writeln!(
                output,
                "that line is not UTF-8 text; type a move like d3d4, or help"
            )?;
            continue;
        };
        let text = line.trim();
        show = false;
        match text {
            "" => {}
            "help" | "?" => writeln!(output, "{HELP}")?,
            "quit" | "exit" => return Ok(()),
            "fen" => writeln!(output, "{}", pos.fen())?,
            "moves" | "legal" => {
                let mut legal: Vec<String> =
                    pos.legal_moves().iter().map(|m| m.to_string()).collect();
                legal.sort();
                writeln!(output, "legal moves: {}", legal.join(" "))?;
            }
            "resign" => {
                writeln!(output, "You resign: {} wins.", !person)?;
                return Ok(());
            }
            "hint" => {
                let thought =
                    engine.think(&pos, budget, Instant::now(), &never, Duration::MAX, |_| {})?;
                match thought.result.best_move {
                    Some(mv) => writeln!(output, "hint: {mv}   [{}]", describe(&thought, &pos))?,
                    None => writeln!(output, "hint: no move")?,
                }
            }
            "undo" => {
                // Take back the engine's reply (if any) and the person's move before it.
                let kept = moves.clone();
                let mut popped = false;
                while moves.pop().is_some() {
                    let before = replay(&moves);
                    if before.side_to_move() == person {
                        popped = true;
                        pos = before;
                        break;
                    }
                }
                if popped {
                    show = true;
                } else {
                    moves = kept;
                    writeln!(output, "nothing to undo")?;
                }
            }
            _ => match pos.parse_move(text) {
                Ok(mv) => {
                    pos.play(mv);
                    moves.push(mv);
                    show = true;
                }
                Err(yari_rules::MoveError::Malformed(_)) => writeln!(
                    output,
                    "'{text}' is not a move: write e.g. a3a4, b6b7+ or P@c5 ('help' for commands)"
                )?,
                Err(yari_rules::MoveError::Illegal { .. }) => writeln!(
                    output,
                    "'{text}' is not legal here; type 'moves' to list the legal moves"
                )?,
            },
        }
    }
}
