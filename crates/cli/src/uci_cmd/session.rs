//! The UCI session: the engine's state between input lines and its answers, driven one line
//! at a time so the protocol is testable (and fuzzable) without a process.

use std::io::Write;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use yari_rules::Position;
use yari_search::engine::{centipawns, mate_along, MAX_BATCH, MAX_THREADS};
use yari_search::Evaluator;

use super::parse::{parse_go, parse_position, Go};
use crate::engine::{pv_text, Budget, Engine, EngineOptions, Thought, DEFAULT_SIMULATIONS};

/// How often a search reports (`info` lines).
const REPORT_EVERY: Duration = Duration::from_millis(500);
/// Largest `MultiPV` and `Move Overhead` (ms) taken.
const MAX_MULTIPV: usize = 500;
const MAX_MOVE_OVERHEAD_MS: u64 = 5000;

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
    /// A `go ponder` search: the budget that applies from `ponderhit` on.
    ponder: Option<Budget>,
}

impl Running {
    /// Ends the search now (`stop`, `quit`); it still answers with its best move so far.
    fn finish(self) {
        self.stop.store(true, Ordering::Relaxed);
        let _ = self.handle.join();
    }

    /// Lets a limited search run to its limit before the next command takes effect, as a
    /// scripted feed of commands expects; an infinite (or pondering) one is stopped.
    fn settle(self) {
        if self.infinite || self.ponder.is_some() {
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

/// The engine's state between input lines: the position, the settings, and the search in
/// flight. Lines go in through [`Session::handle_line`], so the protocol is testable (and
/// fuzzable) without a process.
pub struct Session {
    evaluator: Arc<dyn Evaluator>,
    network: String,
    options: EngineOptions,
    show_wdl: bool,
    /// Built from the settings on the first `go` after they change (a thread pool is not
    /// started for every `setoption`).
    engine: Option<Arc<Engine>>,
    name: String,
    out: Out,
    pos: Position,
    running: Option<Running>,
}

impl Session {
    pub fn new(
        evaluator: Arc<dyn Evaluator>,
        options: EngineOptions,
        name: &str,
        out: Box<dyn Write + Send>,
    ) -> Session {
        Session {
            evaluator,
            network: name.to_string(),
            options,
            show_wdl: false,
            engine: None,
            name: name.to_string(),
            out: Arc::new(Mutex::new(out)),
            pos: Position::startpos(),
            running: None,
        }
    }

    /// The engine for the current settings.
    fn engine(&mut self) -> Result<Arc<Engine>, String> {
        if let Some(e) = &self.engine {
            return Ok(e.clone());
        }
        let engine = crate::engine::engine(self.evaluator.clone(), self.options)
            .map_err(|e| format!("{e:#}"))?;
        let engine = Arc::new(engine);
        self.engine = Some(engine.clone());
        Ok(engine)
    }

    /// `setoption name NAME value VALUE`.
    fn set_option(&mut self, name: &str, value: &str) -> Result<(), String> {
        let number = |min: u64, max: u64| -> Result<u64, String> {
            value
                .trim()
                .parse::<u64>()
                .ok()
                .filter(|v| (min..=max).contains(v))
                .ok_or_else(|| {
                    format!("option {name} takes a number from {min} to {max}, not '{value}'")
                })
        };
        match name.to_ascii_lowercase().as_str() {
            "uci_variant" if value == "yarishogi" => {}
            "uci_variant" => return Err(format!("unsupported variant '{value}', only yarishogi")),
            "threads" => {
                self.options.threads = number(1, MAX_THREADS as u64)? as usize;
                self.engine = None;
            }
            "batch" => {
                self.options.batch_per_thread = number(1, MAX_BATCH as u64)? as usize;
                self.engine = None;
            }
            "move overhead" => {
                self.options.move_overhead =
                    Duration::from_millis(number(0, MAX_MOVE_OVERHEAD_MS)?);
                self.engine = None;
            }
            "multipv" => {
                self.options.multipv = number(1, MAX_MULTIPV as u64)? as usize;
                self.engine = None;
            }
            "uci_showwdl" => match value.trim() {
                "true" => self.show_wdl = true,
                "false" => self.show_wdl = false,
                _ => {
                    return Err(format!(
                        "option UCI_ShowWDL takes true or false, not '{value}'"
                    ))
                }
            },
            // The GUI's word that it may send `go ponder`; the engine needs no setting for it.
            "ponder" => match value.trim() {
                "true" | "false" => {}
                _ => return Err(format!("option Ponder takes true or false, not '{value}'")),
            },
            "weightsfile" => {
                let path = Path::new(value.trim());
                // On the backend the binary installed at start.
                let backend = yari_model::Backend::current();
                let (evaluator, name) = crate::engine::load_evaluator(&backend, Some(path))
                    .map_err(|e| format!("{e:#}; keeping {}", self.network))?;
                self.evaluator = evaluator;
                self.network = name;
                self.engine = None;
            }
            _ => return Err(format!("ignoring unknown option {name}")),
        }
        Ok(())
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
                let o = &self.options;
                for line in [
                    "option name UCI_Variant type combo default yarishogi var yarishogi".to_string(),
                    format!("option name Threads type spin default {} min 1 max {MAX_THREADS}", o.threads),
                    format!("option name Batch type spin default {} min 1 max {MAX_BATCH}", o.batch_per_thread),
                    format!(
                        "option name Move Overhead type spin default {} min 0 max {MAX_MOVE_OVERHEAD_MS}",
                        o.move_overhead.as_millis()
                    ),
                    format!("option name MultiPV type spin default {} min 1 max {MAX_MULTIPV}", o.multipv),
                    "option name UCI_ShowWDL type check default false".to_string(),
                    "option name Ponder type check default false".to_string(),
                    format!("option name WeightsFile type string default {}", self.network),
                ] {
                    say(out, &line);
                }
                say(out, "uciok");
            }
            "isready" => say(out, "readyok"),
            // Settings change the engine under the search: the search in flight stops first
            // (with its move), rather than holding every later line until it ends.
            "setoption" => {
                if let Some(r) = self.running.take() {
                    r.finish();
                }
                let text = words[1..].join(" ");
                let parsed =
                    text.strip_prefix("name ")
                        .map(|rest| match rest.split_once(" value ") {
                            Some((n, v)) => (n.trim(), v.trim()),
                            None => (rest.trim(), ""),
                        });
                match parsed {
                    Some((name, value)) => {
                        if let Err(e) = self.set_option(name, value) {
                            say(&self.out, &format!("info string {e}"));
                        }
                    }
                    None => say(&self.out, &format!("info string ignoring option: {text}")),
                }
            }
            // A new game ends the search of the old one (it still answers with a move).
            "ucinewgame" => {
                if let Some(r) = self.running.take() {
                    r.finish();
                }
                self.pos = Position::startpos();
                if let Some(e) = &self.engine {
                    e.clear_tree();
                }
            }
            // The search in flight has its own copy of its root: a new position waits for the
            // next `go` and never blocks reading (`stop`, `isready`) meanwhile.
            "position" => match parse_position(&words[1..]) {
                Ok((p, warning)) => {
                    self.pos = p;
                    if let Some(w) = warning {
                        say(out, &format!("info string {w}"));
                    }
                }
                Err(e) => say(out, &format!("info string {e}; position unchanged")),
            },
            "go" => {
                let started = Instant::now();
                if let Some(r) = self.running.take() {
                    r.settle();
                }
                let go = match parse_go(&words[1..], &self.pos) {
                    Ok(go) => go,
                    Err(e) => {
                        say(
                            &self.out,
                            &format!("info string {e}; searching {DEFAULT_SIMULATIONS} nodes"),
                        );
                        Go {
                            budget: Budget::simulations(DEFAULT_SIMULATIONS),
                            ..Go::default()
                        }
                    }
                };
                // A ponder search runs until `ponderhit` or `stop`; the `go`'s own limits
                // apply from `ponderhit` on.
                let budget = match go.ponder {
                    true => Budget {
                        infinite: true,
                        ..Budget::default()
                    },
                    false => go.budget,
                };
                let searchmoves = go.searchmoves.clone();
                let engine = match self.engine() {
                    Ok(e) => e,
                    Err(e) => {
                        say(&self.out, &format!("info string {e}"));
                        say(&self.out, "bestmove (none)");
                        return Flow::Continue;
                    }
                };
                let out = &self.out;
                let stop = Arc::new(AtomicBool::new(false));
                let show_wdl = self.show_wdl;
                let (root, out2, stop2) = (self.pos.clone(), out.clone(), stop.clone());
                let handle = std::thread::spawn(move || {
                    // Whatever happens in the search, the GUI gets its `bestmove`: one that
                    // never comes hangs a match runner for good.
                    let searched = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                        let request = Request {
                            root: &root,
                            searchmoves: &searchmoves,
                            budget,
                            started,
                            show_wdl,
                        };
                        search_and_answer(&engine, &request, &stop2, &out2)
                    }));
                    if searched.is_err() {
                        say(&out2, "info string internal error: the search panicked");
                        say(&out2, "bestmove (none)");
                    }
                });
                self.running = Some(Running {
                    stop,
                    handle,
                    infinite: budget.infinite && !go.ponder,
                    ponder: go.ponder.then_some(go.budget),
                });
            }
            // The move pondered on was played: the search goes on, now under the `go`'s
            // limits counted from here (a nodes-only or unlimited ponder has searched
            // enough and answers now).
            "ponderhit" => match self.running.take() {
                Some(mut r) if r.ponder.is_some() => {
                    let budget = r.ponder.take().expect("checked");
                    let overhead = self.options.move_overhead;
                    let limit = match (budget.movetime, budget.clock) {
                        (Some(t), _) => Some(t.saturating_sub(overhead)),
                        (None, Some(clock)) => Some(clock.limits(overhead).soft),
                        (None, None) => None,
                    };
                    match limit {
                        Some(limit) => {
                            let stop = r.stop.clone();
                            std::thread::spawn(move || {
                                std::thread::sleep(limit);
                                stop.store(true, Ordering::Relaxed);
                            });
                            r.infinite = false;
                            self.running = Some(r);
                        }
                        None => r.finish(),
                    }
                }
                other => {
                    self.running = other;
                    say(
                        out,
                        "info string ponderhit without a ponder search; ignored",
                    );
                }
            },
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

/// The `info` lines of a thought: one per `MultiPV` line.
pub(super) fn info_lines(thought: &Thought, root: &Position, show_wdl: bool) -> Vec<String> {
    let nodes = thought.result.simulations as u64;
    let ms = thought.elapsed.as_millis().max(1) as u64;
    let nps = thought.nodes_per_second.round() as u64;
    let head = |multipv: Option<usize>, depth: usize| {
        let mut s = format!(
            "info depth {} seldepth {}",
            depth.max(1),
            thought.seldepth.max(1)
        );
        if let Some(k) = multipv {
            s.push_str(&format!(" multipv {k}"));
        }
        s
    };
    let tail = format!("nodes {nodes} nps {nps} time {ms}");
    if thought.lines.len() <= 1 {
        let mut s = format!(
            "{} score {}",
            head(None, thought.result.pv.len()),
            uci_score(thought, root)
        );
        if show_wdl {
            let [w, d, l] = thought.wdl_per_mille();
            s.push_str(&format!(" wdl {w} {d} {l}"));
        }
        return vec![format!("{s} {tail} pv {}", pv_text(thought))];
    }
    thought
        .lines
        .iter()
        .enumerate()
        .map(|(k, line)| {
            let score = match mate_along(root, &line.pv) {
                Some(m) => format!("mate {m}"),
                None => format!("cp {}", centipawns(line.value)),
            };
            let pv: Vec<String> = line.pv.iter().map(|m| m.to_string()).collect();
            format!(
                "{} score {score} {tail} pv {}",
                head(Some(k + 1), line.pv.len()),
                pv.join(" ")
            )
        })
        .collect()
}

/// `score cp N` or `score mate N`, UCI style.
fn uci_score(thought: &Thought, root: &Position) -> String {
    match thought.mate_in(root) {
        Some(m) => format!("mate {m}"),
        None => format!("cp {}", thought.centipawns()),
    }
}

/// What one `go` asks for.
pub(super) struct Request<'a> {
    pub root: &'a Position,
    /// The moves the search may play at the root (empty: every move).
    pub searchmoves: &'a [yari_rules::Move],
    pub budget: Budget,
    /// When the `go` arrived: time limits count from it.
    pub started: Instant,
    pub show_wdl: bool,
}

pub(super) fn search_and_answer(
    engine: &Engine,
    request: &Request<'_>,
    stop: &AtomicBool,
    out: &Out,
) {
    let Request {
        root,
        searchmoves,
        budget,
        started,
        show_wdl,
    } = *request;
    let report = |t: &Thought| {
        for line in info_lines(t, root, show_wdl) {
            say(out, &line);
        }
    };
    let result = engine.think_among(
        root,
        searchmoves,
        budget,
        started,
        stop,
        REPORT_EVERY,
        report,
    );
    match result {
        Ok(thought) => {
            if thought.result.best_move.is_some() {
                report(&thought);
            } else {
                // The game is over at the root: lost for the side to move (mated, or no
                // legal move), or drawn (repetition), which is a score of 0, not a mate.
                match &thought.result.terminal {
                    Some(outcome) if outcome.winner.is_none() => {
                        say(out, "info string the game is drawn in this position");
                        say(out, "info depth 0 score cp 0");
                    }
                    _ => say(out, "info depth 0 score mate 0"),
                }
            }
            // With `go infinite` the answer must wait for `stop`.
            while budget.infinite && !stop.load(Ordering::Relaxed) {
                std::thread::sleep(Duration::from_millis(2));
            }
            // The expected reply, for a GUI that ponders on it.
            match (thought.result.best_move, thought.result.pv.get(1)) {
                (Some(mv), Some(reply)) if thought.result.pv.first() == Some(&mv) => {
                    say(out, &format!("bestmove {mv} ponder {reply}"))
                }
                (Some(mv), _) => say(out, &format!("bestmove {mv}")),
                (None, _) => say(out, "bestmove (none)"),
            }
        }
        Err(e) => {
            say(out, &format!("info string search failed: {e:#}"));
            say(out, "bestmove (none)");
        }
    }
}
