//! The UCI session, line by line.

use super::parse::*;
use super::session::*;
use super::*;
use proptest::prelude::*;
use std::io::Write;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use yari_rules::Color;
use yari_search::UniformEvaluator;

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
    let last_info = text.lines().rfind(|l| l.starts_with("info depth"));
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
