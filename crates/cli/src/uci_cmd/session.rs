//! The UCI session: the engine's state between input lines and its answers, driven one line
//! at a time so the protocol is testable (and fuzzable) without a process.

use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use yari_rules::Position;

use super::parse::{parse_go, parse_position};
use crate::engine::{Budget, Engine, DEFAULT_SIMULATIONS};

/// Where answers go: stdout in the real engine, a buffer in tests.
pub(super) type Out = Arc<Mutex<Box<dyn Write + Send>>>;

pub(super) fn say(out: &Out, line: &str) {
    let mut o = out.lock().unwrap_or_else(|e| e.into_inner());
    // A closed stdout (the GUI went away) is not worth dying over mid-search.
    let _ = writeln!(o, "{line}");
    let _ = o.flush();
}

pub(super) struct Running {
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

/// Whether the engine reads on after a line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flow {
    Continue,
    Quit,
}

/// The engine's state between input lines: the position, and the search in flight. Lines go
/// in through [`Session::handle_line`], so the protocol is testable (and fuzzable) without
/// a process.
pub struct Session {
    engine: Engine,
    name: String,
    out: Out,
    pos: Position,
    running: Option<Running>,
}

impl Session {
    pub fn new(engine: Engine, name: &str, out: Box<dyn Write + Send>) -> Session {
        Session {
            engine,
            name: name.to_string(),
            out: Arc::new(Mutex::new(out)),
            pos: Position::startpos(),
            running: None,
        }
    }

    /// One raw input line: text that is not UTF-8 is reported and skipped, never the end
    /// of the engine (a stray byte once made `yari uci` exit without a word).
    pub fn handle_bytes(&mut self, line: &[u8]) -> Flow {
        match std::str::from_utf8(line) {
            Ok(text) => self.handle_line(text),
            Err(e) => {
                say(
                    &self.out,
                    &format!("info string ignoring a line that is not UTF-8 ({e})"),
                );
                Flow::Continue
            }
        }
    }

    /// One input line (a UCI command).
    pub fn handle_line(&mut self, line: &str) -> Flow {
        let out = &self.out;
        let words: Vec<&str> = line.split_whitespace().collect();
        let Some(&command) = words.first() else {
            return Flow::Continue;
        };
        // A finished search's thread has already printed its bestmove; reap it.
        if self
            .running
            .as_ref()
            .is_some_and(|r| r.handle.is_finished())
        {
            if let Some(r) = self.running.take() {
                r.finish();
            }
        }
        match command {
            "uci" => {
                say(
                    out,
                    &format!(
                        "id name yari-zero {} ({})",
                        env!("CARGO_PKG_VERSION"),
                        self.name
                    ),
                );
                say(out, "id author the yari-zero developers");
                say(
                    out,
                    "option name UCI_Variant type combo default yarishogi var yarishogi",
                );
                say(out, "uciok");
            }
            "isready" => say(out, "readyok"),
            "setoption" => {
                let text = words[1..].join(" ");
                match text.split_once(" value ") {
                    Some(("name UCI_Variant", "yarishogi")) => {}
                    Some(("name UCI_Variant", v)) => say(
                        out,
                        &format!("info string unsupported variant '{v}', only yarishogi"),
                    ),
                    _ => say(out, &format!("info string ignoring option: {text}")),
                }
            }
            "ucinewgame" => {
                if let Some(r) = self.running.take() {
                    r.settle();
                }
                self.pos = Position::startpos();
            }
            "position" => {
                if let Some(r) = self.running.take() {
                    r.settle();
                }
                match parse_position(&words[1..]) {
                    Ok((p, warning)) => {
                        self.pos = p;
                        if let Some(w) = warning {
                            say(out, &format!("info string {w}"));
                        }
                    }
                    Err(e) => say(out, &format!("info string {e}; position unchanged")),
                }
            }
            "go" => {
                if let Some(r) = self.running.take() {
                    r.settle();
                }
                let (budget, infinite) = match parse_go(&words[1..], self.pos.side_to_move()) {
                    Ok(b) => b,
                    Err(e) => {
                        say(
                            out,
                            &format!("info string {e}; searching {DEFAULT_SIMULATIONS} nodes"),
                        );
                        (Budget::simulations(DEFAULT_SIMULATIONS), false)
                    }
                };
                let stop = Arc::new(AtomicBool::new(false));
                let (engine, root, out2, stop2) = (
                    self.engine.clone(),
                    self.pos.clone(),
                    out.clone(),
                    stop.clone(),
                );
                let handle = std::thread::spawn(move || {
                    // Whatever happens in the search, the GUI gets its `bestmove`: one that
                    // never comes hangs a match runner for good.
                    let searched = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                        search_and_answer(&engine, &root, budget, infinite, &stop2, &out2)
                    }));
                    if searched.is_err() {
                        say(&out2, "info string internal error: the search panicked");
                        say(&out2, "bestmove (none)");
                    }
                });
                self.running = Some(Running {
                    stop,
                    handle,
                    infinite,
                });
            }
            "stop" => {
                if let Some(r) = self.running.take() {
                    r.finish();
                }
            }
            "quit" => return Flow::Quit,
            // `position fen` takes this text back unchanged.
            "d" => say(out, &format!("info string fen {}", self.pos.fen())),
            _ => say(out, &format!("info string unknown command: {line}")),
        }
        Flow::Continue
    }

    /// `quit`: a search in flight stops now and still answers with its best move so far.
    pub fn quit(mut self) {
        if let Some(r) = self.running.take() {
            r.finish();
        }
    }

    /// End of input: a limited search runs to its limit and answers, as a scripted feed
    /// (`go nodes 200`, then EOF) expects; only an infinite one is stopped.
    pub fn end_of_input(mut self) {
        if let Some(r) = self.running.take() {
            r.settle();
        }
    }

    pub fn note(&self, line: &str) {
        say(&self.out, line);
    }
}

pub(super) fn info_line(thought: &crate::engine::Thought, root: &Position) -> String {
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

pub(super) fn search_and_answer(
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
