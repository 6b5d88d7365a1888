//! `yari uci`: a UCI engine speaking Fairy-Stockfish's dialect (`UCI_Variant yarishogi`,
//! moves like `a3a4`, `b6b7+`, `P@c5`), so match runners and GUIs that drive Fairy-Stockfish
//! can drive it. Malformed input is answered with `info string` and never ends the engine.

use std::io::{BufRead, Read, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use anyhow::Result;
use yari_rules::{Color, Position};

use crate::engine::{Budget, Engine, DEFAULT_SIMULATIONS};

/// Where answers go: stdout in the real engine, a buffer in tests.
type Out = Arc<Mutex<Box<dyn Write + Send>>>;

/// Longest input line taken: a `position startpos moves ...` of a very long game is tens of
/// kilobytes; a longer line is skipped with a note rather than buffered without bound.
const MAX_LINE_BYTES: usize = 1 << 20;

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

    fn note(&self, line: &str) {
        say(&self.out, line);
    }
}

/// Runs the engine on standard input and output until `quit` or end of input.
pub fn run(engine: Engine, name: &str) -> Result<()> {
    let mut session = Session::new(engine, name, Box::new(std::io::stdout()));
    // Read here rather than on a thread of its own: the search runs on its own thread, so a
    // blocking read still lets `stop` through the moment it arrives.
    let stdin = std::io::stdin();
    let mut input = stdin.lock();
    let mut line = Vec::new();
    loop {
        match read_capped_line(&mut input, &mut line, MAX_LINE_BYTES) {
            Ok(Line::End) => break,
            Ok(Line::TooLong) => session.note(&format!(
                "info string ignoring a line longer than {MAX_LINE_BYTES} bytes"
            )),
            Ok(Line::Complete) => {
                if session.handle_bytes(&line) == Flow::Quit {
                    session.quit();
                    return Ok(());
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => {
                session.note(&format!("info string cannot read standard input: {e}"));
                break;
            }
        }
    }
    session.end_of_input();
    Ok(())
}

/// What [`read_capped_line`] found.
#[derive(Debug, PartialEq, Eq)]
enum Line {
    /// A line, now in the buffer without its line ending.
    Complete,
    /// A line longer than the limit, read to its end and dropped.
    TooLong,
    /// The end of input.
    End,
}

/// Reads one line into `buf` (cleared first), keeping at most `max` bytes.
fn read_capped_line(
    reader: &mut impl BufRead,
    buf: &mut Vec<u8>,
    max: usize,
) -> std::io::Result<Line> {
    buf.clear();
    let n = reader
        .by_ref()
        .take(max as u64 + 1)
        .read_until(b'\n', buf)?;
    if n == 0 {
        return Ok(Line::End);
    }
    if buf.last() != Some(&b'\n') && buf.len() > max {
        buf.clear();
        loop {
            let chunk = reader.fill_buf()?;
            if chunk.is_empty() {
                return Ok(Line::TooLong);
            }
            if let Some(i) = chunk.iter().position(|&b| b == b'\n') {
                reader.consume(i + 1);
                return Ok(Line::TooLong);
            }
            let n = chunk.len();
            reader.consume(n);
        }
    }
    while matches!(buf.last(), Some(b'\n' | b'\r')) {
        buf.pop();
    }
    Ok(Line::Complete)
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
    use proptest::prelude::*;
    use yari_model::UniformEvaluator;

    /// A `Write` the test can read back while the session still holds it.
    #[derive(Clone, Default)]
    struct Shared(Arc<Mutex<Vec<u8>>>);

    impl Write for Shared {
        fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(b);
            Ok(b.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    impl Shared {
        fn text(&self) -> String {
            String::from_utf8(self.0.lock().unwrap().clone()).unwrap()
        }
    }

    fn session() -> (Session, Shared) {
        let out = Shared::default();
        let engine = Engine::new(Arc::new(UniformEvaluator));
        (Session::new(engine, "test", Box::new(out.clone())), out)
    }

    #[test]
    fn a_line_that_is_not_utf8_is_reported_and_reading_goes_on() {
        let (mut s, out) = session();
        assert_eq!(s.handle_bytes(b"is\xffready"), Flow::Continue);
        assert_eq!(s.handle_bytes(b"isready"), Flow::Continue);
        let text = out.text();
        assert!(
            text.contains("info string ignoring a line that is not UTF-8"),
            "{text}"
        );
        assert!(text.ends_with("readyok\n"), "{text}");
        assert_eq!(s.handle_line("quit"), Flow::Quit);
    }

    /// `go nodes 200` and then the end of input: the search runs its 200 nodes and answers
    /// (it was once stopped at whatever it had reached, 18 nodes).
    #[test]
    fn end_of_input_lets_a_limited_search_finish() {
        let (mut s, out) = session();
        s.handle_line("position startpos moves d3d4");
        s.handle_line("go nodes 200");
        s.end_of_input();
        let text = out.text();
        let last_info = text.lines().filter(|l| l.starts_with("info depth")).last();
        assert!(last_info.unwrap().contains(" nodes 200 "), "{text}");
        assert_eq!(
            text.lines().last().map(|l| l.starts_with("bestmove ")),
            Some(true)
        );
    }

    /// `d` prints a FEN that `position fen` reads back to the same position.
    #[test]
    fn d_reads_back_as_a_position() {
        for setup in [
            "startpos moves d3d4 d7d6 d4d5 d6d5 c3c4",
            "fen b3+N2/4+R2/p1p2kp/1R1p1p1/4NB1/5P1/+b1+nP2P/7/5KR[BPPPPPPrn] b - - 1 44",
            "fen rnnkbbr/7/ppppppp/7/7/7/PPPPPPP/7/RBBKNNR[-] w 0 1",
        ] {
            let (mut s, out) = session();
            s.handle_line(&format!("position {setup}"));
            s.handle_line("d");
            let first = out.text();
            let fen = first
                .trim()
                .strip_prefix("info string fen ")
                .unwrap()
                .to_string();
            s.handle_line(&format!("position fen {fen}"));
            s.handle_line("d");
            assert_eq!(out.text(), format!("{first}{first}"), "{setup}");
            assert!(!first.contains("bad fen"), "{first}");
        }
    }

    #[test]
    fn long_lines_are_skipped_and_line_endings_dropped() {
        let mut input = vec![b'x'; 100];
        input.extend_from_slice(b"\nisready\r\n\nlast");
        let mut reader = std::io::BufReader::with_capacity(16, &input[..]);
        let mut buf = Vec::new();
        let mut got = Vec::new();
        loop {
            let line = read_capped_line(&mut reader, &mut buf, 10).unwrap();
            if line == Line::End {
                break;
            }
            got.push((line, String::from_utf8(buf.clone()).unwrap()));
        }
        assert_eq!(
            got,
            [
                (Line::TooLong, String::new()),
                (Line::Complete, "isready".into()),
                (Line::Complete, String::new()),
                (Line::Complete, "last".into()),
            ]
        );
    }

    /// A UCI-ish input line: real commands with random arguments, or any text, or any bytes.
    fn input_line() -> impl Strategy<Value = Vec<u8>> {
        let word = prop_oneof![
            Just("startpos".to_string()),
            Just("fen".to_string()),
            Just("moves".to_string()),
            Just("infinite".to_string()),
            Just("nodes".to_string()),
            Just("movetime".to_string()),
            Just("wtime".to_string()),
            Just("btime".to_string()),
            Just("winc".to_string()),
            Just("-5".to_string()),
            Just("value".to_string()),
            Just("name".to_string()),
            "[0-9]{1,3}",
            "[a-g][1-9][a-g][1-9]\\+?",
            "[RBNP]@[a-g][1-9]",
            "[1-7rnbkpRNBKP+/\\[\\]-]{1,40}",
            "\\PC{0,12}",
        ];
        let command = prop_oneof![
            Just("uci"),
            Just("isready"),
            Just("ucinewgame"),
            Just("position"),
            Just("go"),
            Just("stop"),
            Just("d"),
            Just("setoption"),
            Just("quit"),
        ];
        prop_oneof![
            8 => (command, proptest::collection::vec(word, 0..12))
                .prop_map(|(c, w)| format!("{c} {}", w.join(" ")).into_bytes()),
            1 => "\\PC{0,60}".prop_map(String::into_bytes),
            1 => proptest::collection::vec(any::<u8>(), 0..60),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(
            std::env::var("YARI_FUZZ_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(200)
        ))]

        /// The engine's line handler, fuzzed: no panic (in the handler or in a search), and
        /// every `go` is answered by exactly one `bestmove` once the input ends.
        #[test]
        fn any_input_is_answered_without_panicking(
            lines in proptest::collection::vec(input_line(), 0..12)
        ) {
            let (mut s, out) = session();
            let mut gos = 0;
            let mut quit = false;
            for line in &lines {
                // Big budgets are valid input but would make the fuzzer a benchmark.
                if line.windows(4).any(|w| w == b"time") {
                    continue;
                }
                if std::str::from_utf8(line).is_ok_and(|t| t.split_whitespace().next() == Some("go")) {
                    gos += 1;
                }
                if s.handle_bytes(line) == Flow::Quit {
                    quit = true;
                    break;
                }
            }
            if quit { s.quit() } else { s.end_of_input() }
            let text = out.text();
            prop_assert!(!text.contains("internal error"), "{}", text);
            let answers = text.lines().filter(|l| l.starts_with("bestmove")).count();
            prop_assert_eq!(answers, gos, "{}", text);
        }
    }

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
