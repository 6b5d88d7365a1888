//! `yari uci`: a UCI engine speaking Fairy-Stockfish's dialect (`UCI_Variant yarishogi`,
//! moves like `a3a4`, `b6b7+`, `P@c5`), so match runners and GUIs that drive Fairy-Stockfish
//! can drive it. Malformed input is answered with `info string` and never ends the engine.

use std::io::{BufRead, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use anyhow::Result;
use yari_rules::{Color, Position};

use crate::engine::{Budget, Engine, DEFAULT_SIMULATIONS};

type Out = Arc<Mutex<std::io::Stdout>>;

fn say(out: &Out, line: &str) {
    let mut o = out.lock().unwrap_or_else(|e| e.into_inner());
    // A closed stdout (the GUI went away) is not worth dying over mid-search.
    let _ = writeln!(o, "{line}");
    let _ = o.flush();
}

struct Running {
    stop: Arc<AtomicBool>,
    handle: JoinHandle<()>,
    infinite: bool,
}

impl Running {
    /// Ends the search now (`stop`, `quit`); it still answers with its best move so far.
    fn finish(self) {
        self.stop.store(true, Ordering::Relaxed);
        let _ = self.handle.join();
    }

    /// Lets a limited search run to its limit before the next command takes effect, as a
    /// scripted feed of commands expects; an infinite one is stopped.
    fn settle(self) {
        if self.infinite {
            self.finish();
        } else {
            let _ = self.handle.join();
        }
    }
}

/// Parses `position startpos|fen FEN [moves ...]`; on an illegal move it keeps the position
/// reached so far and says which move was refused.
fn parse_position(args: &[&str]) -> Result<(Position, Option<String>), String> {
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

fn parse_go(args: &[&str], side: Color) -> Result<(Budget, bool), String> {
    let mut budget = Budget {
        simulations: None,
        movetime: None,
    };
    let mut infinite = false;
    let (mut wtime, mut btime, mut winc, mut binc) = (None, None, 0u64, 0u64);
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
                infinite = true;
                i += 1;
                continue;
            }
            "nodes" => budget.simulations = Some(value()?.clamp(1, 10_000_000) as u32),
            "movetime" => budget.movetime = Some(Duration::from_millis(value()?)),
            "wtime" => wtime = Some(value()?),
            "btime" => btime = Some(value()?),
            "winc" => winc = value()?,
            "binc" => binc = value()?,
            "depth" | "movestogo" | "mate" => {
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
    if budget.movetime.is_none() && budget.simulations.is_none() && !infinite {
        match time {
            Some(t) => {
                budget = Budget::from_clock(Duration::from_millis(t), Duration::from_millis(inc))
            }
            None => budget.simulations = Some(DEFAULT_SIMULATIONS),
        }
    }
    Ok((budget, infinite))
}

/// Runs the engine on standard input and output until `quit` or end of input.
pub fn run(engine: Engine, name: &str) -> Result<()> {
    let out: Out = Arc::new(Mutex::new(std::io::stdout()));
    let (tx, rx) = mpsc::channel::<String>();
    std::thread::spawn(move || {
        for line in std::io::stdin().lock().lines() {
            match line {
                Ok(l) => {
                    if tx.send(l).is_err() {
                        break;
                    }
                }
                Err(_) => break,
            }
        }
    });
    let mut pos = Position::startpos();
    let mut running: Option<Running> = None;
    for line in rx {
        let words: Vec<&str> = line.split_whitespace().collect();
        let Some(&command) = words.first() else {
            continue;
        };
        // A finished search's thread has already printed its bestmove; reap it.
        if running.as_ref().is_some_and(|r| r.handle.is_finished()) {
            if let Some(r) = running.take() {
                r.finish();
            }
        }
        match command {
            "uci" => {
                say(
                    &out,
                    &format!("id name yari-zero {} ({name})", env!("CARGO_PKG_VERSION")),
                );
                say(&out, "id author the yari-zero developers");
                say(
                    &out,
                    "option name UCI_Variant type combo default yarishogi var yarishogi",
                );
                say(&out, "uciok");
            }
            "isready" => say(&out, "readyok"),
            "setoption" => {
                let text = words[1..].join(" ");
                match text.split_once(" value ") {
                    Some(("name UCI_Variant", "yarishogi")) => {}
                    Some(("name UCI_Variant", v)) => say(
                        &out,
                        &format!("info string unsupported variant '{v}', only yarishogi"),
                    ),
                    _ => say(&out, &format!("info string ignoring option: {text}")),
                }
            }
            "ucinewgame" => {
                if let Some(r) = running.take() {
                    r.settle();
                }
                pos = Position::startpos();
            }
            "position" => {
                if let Some(r) = running.take() {
                    r.settle();
                }
                match parse_position(&words[1..]) {
                    Ok((p, warning)) => {
                        pos = p;
                        if let Some(w) = warning {
                            say(&out, &format!("info string {w}"));
                        }
                    }
                    Err(e) => say(&out, &format!("info string {e}; position unchanged")),
                }
            }
            "go" => {
                if let Some(r) = running.take() {
                    r.settle();
                }
                let (budget, infinite) = match parse_go(&words[1..], pos.side_to_move()) {
                    Ok(b) => b,
                    Err(e) => {
                        say(
                            &out,
                            &format!("info string {e}; searching {DEFAULT_SIMULATIONS} nodes"),
                        );
                        (Budget::simulations(DEFAULT_SIMULATIONS), false)
                    }
                };
                let stop = Arc::new(AtomicBool::new(false));
                let (engine, root, out2, stop2) =
                    (engine.clone(), pos.clone(), out.clone(), stop.clone());
                let handle = std::thread::spawn(move || {
                    search_and_answer(&engine, &root, budget, infinite, &stop2, &out2)
                });
                running = Some(Running {
                    stop,
                    handle,
                    infinite,
                });
            }
            "stop" => {
                if let Some(r) = running.take() {
                    r.finish();
                }
            }
            "quit" => break,
            "d" => say(&out, &format!("info string fen {}", pos.fen())),
            _ => say(&out, &format!("info string unknown command: {line}")),
        }
    }
    if let Some(r) = running.take() {
        r.finish();
    }
    Ok(())
}

fn info_line(thought: &crate::engine::Thought, root: &Position) -> String {
    let nodes = thought.result.simulations as u64;
    let ms = thought.elapsed.as_millis().max(1) as u64;
    format!(
        "info depth {} nodes {} nps {} time {} score {} pv {}",
        thought.result.pv.len().max(1),
        nodes,
        nodes * 1000 / ms,
        ms,
        thought.uci_score(root),
        thought.pv_text()
    )
}

fn search_and_answer(
    engine: &Engine,
    root: &Position,
    budget: Budget,
    infinite: bool,
    stop: &AtomicBool,
    out: &Out,
) {
    let result = engine.think(root, budget, stop, |t| say(out, &info_line(t, root)));
    match result {
        Ok(thought) => {
            if thought.result.best_move.is_some() {
                say(out, &info_line(&thought, root));
            } else {
                say(out, "info depth 0 score mate 0");
            }
            // With `go infinite` the answer must wait for `stop`.
            while infinite && !stop.load(Ordering::Relaxed) {
                std::thread::sleep(Duration::from_millis(5));
            }
            match thought.result.best_move {
                Some(mv) => say(out, &format!("bestmove {mv}")),
                None => say(out, "bestmove (none)"),
            }
        }
        Err(e) => {
            say(out, &format!("info string search failed: {e:#}"));
            say(out, "bestmove (none)");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn go_parameters() {
        let (b, inf) = parse_go(&["nodes", "50"], Color::White).unwrap();
        assert_eq!(b.simulations, Some(50));
        assert!(!inf);
        let (b, _) = parse_go(
            &["wtime", "60000", "btime", "3000", "binc", "0"],
            Color::Black,
        )
        .unwrap();
        assert_eq!(b.movetime, Some(Duration::from_millis(100)));
        assert!(parse_go(&["nodes"], Color::White).is_err());
        assert!(parse_go(&["sideways", "3"], Color::White).is_err());
        let (_, inf) = parse_go(&["infinite"], Color::White).unwrap();
        assert!(inf);
    }

    #[test]
    fn position_commands() {
        let (p, w) = parse_position(&["startpos", "moves", "d3d4", "d7d6"]).unwrap();
        assert!(w.is_none());
        assert_eq!(p.plies_played(), 2);
        let (p, w) = parse_position(&["startpos", "moves", "d3d4", "d3d4", "d7d6"]).unwrap();
        assert!(w.unwrap().contains("illegal"));
        assert_eq!(p.plies_played(), 1);
        assert!(parse_position(&["fen", "garbage"]).is_err());
        assert!(parse_position(&[]).is_err());
    }
}
