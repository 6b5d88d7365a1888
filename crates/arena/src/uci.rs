//! A client for external UCI engines (Fairy-Stockfish and anything speaking its dialect).
//!
//! Every read has a deadline and a dead process is noticed at once (its output pipe closes),
//! so an engine that hangs or crashes costs it the game instead of hanging the match. The
//! arena, not the engine, judges moves: Fairy-Stockfish silently drops an illegal move list,
//! so the client only parses `bestmove`, and the game loop checks legality.

use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

use yari_rules::Move;

use crate::player::{ClockView, GameView, Player, PlayerError};

/// Lines the reader thread queues ahead of the client. When the queue is full the thread
/// stops reading, so the pipe fills and the engine blocks: an engine that floods output
/// costs a bounded amount of memory (once 1.2 GB in 10 s), not all of it.
const QUEUE_LINES: usize = 1024;
/// Longest line kept; the rest of a longer line is read and dropped. Real UCI lines (a long
/// `info ... pv`) are well under a kilobyte.
const MAX_LINE_BYTES: usize = 64 * 1024;

/// Reads `source` line by line on a thread of its own into a bounded queue; the queue closes
/// when `source` ends or fails, which is how the client learns that the engine died. Bytes
/// that are not UTF-8 are replaced, not taken as the end of the engine.
fn spawn_reader(source: impl Read + Send + 'static) -> std::io::Result<Receiver<String>> {
    let (tx, rx) = mpsc::sync_channel(QUEUE_LINES);
    std::thread::Builder::new()
        .name("uci-reader".into())
        .spawn(move || {
            let mut reader = BufReader::new(source);
            let mut buf = Vec::new();
            loop {
                buf.clear();
                match read_capped_line(&mut reader, &mut buf, MAX_LINE_BYTES) {
                    Ok(0) | Err(_) => break,
                    Ok(_) => {}
                }
                let text = String::from_utf8_lossy(&buf);
                let line = text.trim_end_matches(['\n', '\r']).to_string();
                if tx.send(line).is_err() {
                    break;
                }
            }
        })?;
    Ok(rx)
}

/// Reads one line into `buf`, keeping at most `max` bytes of it and skipping the rest.
/// Returns the bytes consumed (0 at the end of input).
fn read_capped_line(
    reader: &mut impl BufRead,
    buf: &mut Vec<u8>,
    max: usize,
) -> std::io::Result<usize> {
    let mut consumed = reader.by_ref().take(max as u64).read_until(b'\n', buf)?;
    if consumed < max || buf.last() == Some(&b'\n') {
        return Ok(consumed);
    }
    loop {
        let chunk = reader.fill_buf()?;
        if chunk.is_empty() {
            return Ok(consumed);
        }
        match chunk.iter().position(|&b| b == b'\n') {
            Some(i) => {
                reader.consume(i + 1);
                return Ok(consumed + i + 1);
            }
            None => {
                let n = chunk.len();
                reader.consume(n);
                consumed += n;
            }
        }
    }
}

/// How the engine is asked to search each move.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum SearchLimit {
    /// `go nodes N`
    Nodes(u64),
    /// `go movetime MS`
    MoveTime(u64),
    /// `go depth D`
    Depth(u32),
}

/// How to run and talk to an engine. Parsed from a player spec (the `spec` module).
#[derive(Debug, Clone, PartialEq)]
pub struct UciConfig {
    /// Program and arguments (no shell involved: the child is the engine itself, so killing
    /// it on drop really ends it).
    pub argv: Vec<String>,
    /// The name in game records and ratings.
    pub name: String,
    pub limit: SearchLimit,
    /// Deadline for every answer: `uciok`, `readyok`, and `bestmove` (added to the move time).
    pub timeout: Duration,
    /// Extra `setoption name N value V` lines, sent after the variant.
    pub options: Vec<(String, String)>,
    /// A file the engine cannot run without and the command that installs it: checked
    /// before the engine starts, so a missing install is an error that says how to fix it
    /// rather than an engine that died during the handshake.
    pub requires: Option<(std::path::PathBuf, String)>,
}

impl UciConfig {
    /// An engine with default limits: `go nodes 1000`, 30 s deadline.
    pub fn new(argv: Vec<String>) -> Self {
        UciConfig {
            name: format!("uci:{}", argv.join(" ")),
            argv,
            limit: SearchLimit::Nodes(1000),
            timeout: Duration::from_secs(30),
            options: Vec::new(),
            requires: None,
        }
    }
}

/// A running engine. Killed on drop.
pub struct UciEngine {
    config: UciConfig,
    child: Child,
    stdin: ChildStdin,
    lines: Receiver<String>,
    /// `id name` as the engine announced it.
    engine_name: Option<String>,
}

impl std::fmt::Debug for UciEngine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("UciEngine")
            .field("name", &self.config.name)
            .field("pid", &self.child.id())
            .finish()
    }
}

impl UciEngine {
    /// Starts the engine and completes the handshake: `uci`/`uciok`, the variant when the
    /// engine has a `UCI_Variant` option, the configured options, `isready`/`readyok`.
    pub fn start(config: UciConfig) -> Result<UciEngine, PlayerError> {
        let (program, args) = config
            .argv
            .split_first()
            .ok_or_else(|| PlayerError::Protocol("empty engine command".into()))?;
        if let Some((file, install)) = &config.requires {
            if !file.is_file() {
                return Err(PlayerError::NotInstalled {
                    engine: config.name.clone(),
                    file: file.clone(),
                    install: install.clone(),
                });
            }
        }
        let mut child = Command::new(program)
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|source| PlayerError::Spawn {
                command: config.argv.join(" "),
                source,
            })?;
        let stdin = child.stdin.take().expect("stdin was piped");
        let stdout = child.stdout.take().expect("stdout was piped");
        // The reader thread ends when the engine's stdout closes (exit or kill).
        let rx = spawn_reader(stdout).map_err(PlayerError::Io)?;
        let mut engine = UciEngine {
            config,
            child,
            stdin,
            lines: rx,
            engine_name: None,
        };
        engine.handshake()?;
        Ok(engine)
    }

    fn handshake(&mut self) -> Result<(), PlayerError> {
        self.send("uci")?;
        let mut variant_option: Option<String> = None;
        let deadline = Instant::now() + self.config.timeout;
        loop {
            let line = self.read_line("uciok", deadline)?;
            let line = line.trim();
            if line == "uciok" {
                break;
            }
            if let Some(name) = line.strip_prefix("id name ") {
                self.engine_name = Some(name.to_string());
            }
            if line.starts_with("option name UCI_Variant ") {
                variant_option = Some(line.to_string());
            }
        }
        if let Some(option) = variant_option {
            if !option.split_whitespace().any(|w| w == "yarishogi") {
                return Err(PlayerError::UnsupportedVariant);
            }
            self.send("setoption name UCI_Variant value yarishogi")?;
        }
        for (name, value) in self.config.options.clone() {
            self.send(&format!("setoption name {name} value {value}"))?;
        }
        self.sync()
    }

    /// `isready` → `readyok`.
    fn sync(&mut self) -> Result<(), PlayerError> {
        self.send("isready")?;
        let deadline = Instant::now() + self.config.timeout;
        loop {
            if self.read_line("readyok", deadline)?.trim() == "readyok" {
                return Ok(());
            }
        }
    }

    /// The name the engine gave in `id name`.
    pub fn engine_name(&self) -> Option<&str> {
        self.engine_name.as_deref()
    }

    fn send(&mut self, line: &str) -> Result<(), PlayerError> {
        let result = writeln!(self.stdin, "{line}").and_then(|_| self.stdin.flush());
        match result {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Err(PlayerError::Died {
                waiting_for: format!("a reader of {line:?}"),
                status: self.exit_status(),
            }),
            Err(e) => Err(PlayerError::Io(e)),
        }
    }

    /// The next line, if it comes before `deadline`. The deadline is checked before the
    /// queue: an engine that keeps talking without ever saying what is waited for (a flood
    /// of `info` lines) must still run out of time.
    fn read_line(&mut self, waiting_for: &str, deadline: Instant) -> Result<String, PlayerError> {
        let timed_out = || PlayerError::Timeout {
            waiting_for: waiting_for.to_string(),
            after: self.config.timeout,
        };
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(timed_out());
        }
        match self.lines.recv_timeout(left) {
            Ok(line) => Ok(line),
            Err(RecvTimeoutError::Timeout) => Err(timed_out()),
            Err(RecvTimeoutError::Disconnected) => Err(PlayerError::Died {
                waiting_for: waiting_for.to_string(),
                status: self.exit_status(),
            }),
        }
    }

    fn exit_status(&mut self) -> Option<String> {
        // The pipe may close a moment before the process is reaped.
        let deadline = Instant::now() + Duration::from_millis(200);
        loop {
            match self.child.try_wait() {
                Ok(Some(status)) => return Some(status.to_string()),
                Ok(None) if Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(10))
                }
                _ => return None,
            }
        }
    }

    /// Asks for a move in the game so far; returns the raw `bestmove` text. With a `clock`
    /// the engine is sent both clocks (`go wtime .. btime .. winc .. binc ..`) instead of its
    /// configured limit, and waited for until its own clock plus the timeout has run out.
    pub fn go(
        &mut self,
        start_fen: &str,
        moves: &[Move],
        clock: Option<(ClockView, yari_rules::Color)>,
    ) -> Result<String, PlayerError> {
        let mut cmd = format!("position fen {start_fen}");
        if !moves.is_empty() {
            cmd.push_str(" moves");
            for mv in moves {
                cmd.push(' ');
                cmd.push_str(&mv.to_string());
            }
        }
        self.send(&cmd)?;
        let (go, extra) = match (clock, self.config.limit) {
            (Some((c, side)), _) => {
                let inc = c.increment.as_millis();
                (
                    format!(
                        "go wtime {} btime {} winc {inc} binc {inc}",
                        c.white.as_millis(),
                        c.black.as_millis()
                    ),
                    c.of(side),
                )
            }
            (None, SearchLimit::Nodes(n)) => (format!("go nodes {n}"), Duration::ZERO),
            (None, SearchLimit::MoveTime(ms)) => {
                (format!("go movetime {ms}"), Duration::from_millis(ms))
            }
            (None, SearchLimit::Depth(d)) => (format!("go depth {d}"), Duration::ZERO),
        };
        self.send(&go)?;
        let deadline = Instant::now() + self.config.timeout + extra;
        loop {
            let line = self.read_line("bestmove", deadline)?;
            let mut words = line.split_whitespace();
            if words.next() == Some("bestmove") {
                return match words.next() {
                    Some(text) => Ok(text.to_string()),
                    None => Err(PlayerError::Protocol("bestmove without a move".into())),
                };
            }
        }
    }
}

impl Drop for UciEngine {
    fn drop(&mut self) {
        let _ = writeln!(self.stdin, "quit").and_then(|_| self.stdin.flush());
        let deadline = Instant::now() + Duration::from_millis(300);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A [`Player`] backed by an external engine.
#[derive(Debug)]
pub struct UciPlayer {
    engine: UciEngine,
}

impl UciPlayer {
    /// Starts the engine (see [`UciEngine::start`]).
    pub fn start(config: UciConfig) -> Result<UciPlayer, PlayerError> {
        Ok(UciPlayer {
            engine: UciEngine::start(config)?,
        })
    }

    pub fn engine(&self) -> &UciEngine {
        &self.engine
    }
}

impl Player for UciPlayer {
    fn name(&self) -> &str {
        &self.engine.config.name
    }

    fn new_game(&mut self, _seed: u64) -> Result<(), PlayerError> {
        self.engine.send("ucinewgame")?;
        self.engine.sync()
    }

    fn choose_move(&mut self, game: &GameView<'_>) -> Result<Move, PlayerError> {
        let clock = game.clock.map(|c| (c, game.position.side_to_move()));
        let text = self.engine.go(game.start_fen, game.moves, clock)?;
        if text == "(none)" || text == "0000" {
            return Err(PlayerError::NoMove(format!("bestmove {text}")));
        }
        Move::parse_uci(&text).ok_or(PlayerError::BadMoveText(text))
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;

    use super::*;

    /// An endless engine output of `info` lines, counting the bytes taken from it.
    struct Flood {
        read: Arc<AtomicUsize>,
    }

    impl Read for Flood {
        fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
            const LINE: &[u8] = b"info depth 1 nodes 1 score cp 0 pv a3a4\n";
            let n = out.len().min(LINE.len());
            out[..n].copy_from_slice(&LINE[..n]);
            self.read.fetch_add(n, Ordering::Relaxed);
            Ok(n)
        }
    }

    #[test]
    fn a_flood_fills_a_bounded_queue_and_then_waits() {
        let read = Arc::new(AtomicUsize::new(0));
        let rx = spawn_reader(Flood { read: read.clone() }).unwrap();
        std::thread::sleep(Duration::from_millis(300));
        let after_a_while = read.load(Ordering::Relaxed);
        std::thread::sleep(Duration::from_millis(300));
        // Queue full: the reader is blocked, not reading (and buffering) on.
        assert_eq!(read.load(Ordering::Relaxed), after_a_while);
        assert!(
            after_a_while <= QUEUE_LINES * 64 + 64 * 1024,
            "{after_a_while}"
        );
        assert_eq!(rx.try_iter().take(2).count(), 2);
    }

    #[test]
    fn long_lines_are_cut_and_bad_bytes_replaced() {
        let mut input = vec![b'x'; 3 * MAX_LINE_BYTES];
        input.extend_from_slice(b"\n\xffbestmove a3a4\r\nlast");
        let rx = spawn_reader(std::io::Cursor::new(input)).unwrap();
        let lines: Vec<String> = rx.iter().collect();
        assert_eq!(
            lines.len(),
            3,
            "{:?}",
            lines.iter().map(String::len).collect::<Vec<_>>()
        );
        assert_eq!(lines[0].len(), MAX_LINE_BYTES);
        assert_eq!(lines[1], "\u{fffd}bestmove a3a4");
        assert_eq!(lines[2], "last");
    }
}
