//! `yari uci`: a UCI engine speaking Fairy-Stockfish's dialect (`UCI_Variant yarishogi`,
//! moves like `a3a4`, `b6b7+`, `P@c5`), so match runners and GUIs that drive Fairy-Stockfish
//! can drive it. Malformed input is answered with `info string` and never ends the engine.

mod parse;
mod session;
#[cfg(test)]
mod tests;

use std::io::{BufRead, Read};

use anyhow::Result;

use std::sync::Arc;

use yari_search::{EngineOptions, Evaluator};

pub use session::{Flow, Session};

/// Longest input line taken: a `position startpos moves ...` of a very long game is tens of
/// kilobytes; a longer line is skipped with a note rather than buffered without bound.
const MAX_LINE_BYTES: usize = 1 << 20;

/// Runs the engine on standard input and output until `quit` or end of input.
pub fn run(evaluator: Arc<dyn Evaluator>, options: EngineOptions, name: &str) -> Result<()> {
    let mut session = Session::new(evaluator, options, name, Box::new(std::io::stdout()));
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
