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
    let options = yari_search::EngineOptions {
        threads: 2,
        ..yari_search::EngineOptions::one_thread()
    };
    let session = Session::new(
        Arc::new(UniformEvaluator),
        options,
        "test",
        Box::new(out.clone()),
    );
    (session, out)
}

/// Waits until the output holds a line starting with `prefix` (or fails after 20 s).
fn wait_for(out: &Shared, prefix: &str) -> String {
    let start = std::time::Instant::now();
    loop {
        let text = out.text();
        if text.lines().any(|l| l.starts_with(prefix)) {
            return text;
        }
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "no '{prefix}' in {text}"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
}

#[test]
fn stop_ends_an_infinite_search_with_a_move_and_isready_answers_meanwhile() {
    let (mut s, out) = session();
    s.handle_line("position startpos moves d3d4");
    s.handle_line("go infinite");
    std::thread::sleep(Duration::from_millis(50));
    // The search goes on while the engine answers.
    s.handle_line("isready");
    let text = wait_for(&out, "readyok");
    assert!(!text.contains("bestmove"), "{text}");
    s.handle_line("stop");
    let text = wait_for(&out, "bestmove");
    let mv = best_move(&text);
    let mut pos = yari_rules::Position::startpos();
    pos.play_uci("d3d4").unwrap();
    assert!(pos.parse_move(mv).is_ok(), "{mv} is not legal: {text}");
    s.quit();
}

/// A position drawn by threefold repetition is reported as a draw (score 0), not as mate.
#[test]
fn a_drawn_root_scores_zero_not_mate() {
    let (mut s, out) = session();
    s.handle_line("position startpos moves d1d2 d9d8 d2d1 d8d9 d1d2 d9d8 d2d1 d8d9");
    s.handle_line("go nodes 100");
    let text = wait_for(&out, "bestmove");
    assert!(text.contains("info depth 0 score cp 0"), "{text}");
    assert!(!text.contains("score mate"), "{text}");
    s.quit();
    // A side to move with no legal move (a loss) still reads mate 0.
    let (mut s, out) = session();
    s.handle_line("position fen k6/1R5/1+N5/7/7/7/7/7/6K[] b - - 0 1");
    s.handle_line("go nodes 100");
    let text = wait_for(&out, "bestmove");
    s.quit();
    let pos = yari_rules::Position::from_fen("k6/1R5/1+N5/7/7/7/7/7/6K[] b - - 0 1").unwrap();
    assert!(pos.legal_moves().is_empty(), "Black has no move: a loss");
    assert!(text.contains("score mate 0"), "{text}");
    assert!(text.contains("bestmove (none)"), "{text}");
}

#[test]
fn options_are_listed_set_and_refused_by_name() {
    let (mut s, out) = session();
    s.handle_line("uci");
    let text = out.text();
    for name in [
        "Threads",
        "Batch",
        "Move Overhead",
        "MultiPV",
        "UCI_ShowWDL",
        "WeightsFile",
    ] {
        assert!(
            text.contains(&format!("option name {name} type")),
            "{name}: {text}"
        );
    }
    s.handle_line("setoption name Threads value 0");
    s.handle_line("setoption name Hash value 16");
    s.handle_line("setoption name WeightsFile value /nonexistent/net.yari");
    let text = out.text();
    assert!(
        text.contains("info string option Threads takes a number from 1"),
        "{text}"
    );
    assert!(
        text.contains("info string ignoring unknown option Hash"),
        "{text}"
    );
    assert!(
        text.contains("/nonexistent/net.yari") && text.contains("keeping test"),
        "{text}"
    );
    // Set ones take effect: three lines of play, each with its own first move, and WDL.
    s.handle_line("setoption name Threads value 1");
    s.handle_line("setoption name MultiPV value 3");
    s.handle_line("setoption name UCI_ShowWDL value true");
    s.handle_line("go nodes 300");
    s.end_of_input();
    let text = out.text();
    let last: Vec<&str> = text.lines().filter(|l| l.contains(" multipv ")).collect();
    let tail = &last[last.len() - 3..];
    for (k, line) in tail.iter().enumerate() {
        assert!(line.contains(&format!(" multipv {} ", k + 1)), "{text}");
        assert!(line.contains(" nodes 300 "), "{line}");
    }
    let firsts: std::collections::HashSet<&str> = tail
        .iter()
        .map(|l| l.split(" pv ").nth(1).unwrap().split(' ').next().unwrap())
        .collect();
    assert_eq!(firsts.len(), 3, "{text}");
}

#[test]
fn wdl_is_shown_when_asked() {
    let (mut s, out) = session();
    s.handle_line("setoption name UCI_ShowWDL value true");
    s.handle_line("go nodes 50");
    s.end_of_input();
    let text = out.text();
    let info = text.lines().rfind(|l| l.starts_with("info depth")).unwrap();
    let wdl: Vec<u32> = info
        .split(" wdl ")
        .nth(1)
        .unwrap()
        .split(' ')
        .take(3)
        .map(|x| x.parse().unwrap())
        .collect();
    // The uniform evaluator says "a certain draw".
    assert_eq!(wdl.iter().sum::<u32>(), 1000, "{info}");
    assert!(wdl[1] >= 900, "{info}");
    assert!(
        info.contains(" seldepth ") && info.contains(" nps "),
        "{info}"
    );
}

#[test]
fn movetime_is_kept_from_the_go() {
    let (mut s, out) = session();
    let start = std::time::Instant::now();
    s.handle_line("go movetime 150");
    let text = wait_for(&out, "bestmove");
    let took = start.elapsed();
    // Not a timing test of the machine: only that the limit, not the default nodes, ended
    // the search, and that it did not run far past it.
    assert!(took >= Duration::from_millis(100), "{took:?} {text}");
    assert!(took < Duration::from_secs(5), "{took:?} {text}");
    s.quit();
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

/// The move of the last `bestmove` line (without its `ponder` move).
fn best_move(text: &str) -> &str {
    text.lines()
        .rev()
        .find_map(|l| l.strip_prefix("bestmove "))
        .and_then(|rest| rest.split_whitespace().next())
        .unwrap_or_else(|| panic!("no bestmove in {text}"))
}

/// Issue 38: `position` or `ucinewgame` during a timed search blocked all input until the
/// search ended (`readyok` after 20 s).
#[test]
fn position_and_ucinewgame_during_a_search_do_not_block_input() {
    let (mut s, out) = session();
    s.handle_line("position startpos");
    s.handle_line("go movetime 20000");
    std::thread::sleep(Duration::from_millis(50));
    let start = std::time::Instant::now();
    s.handle_line("position startpos moves d3d4");
    s.handle_line("isready");
    wait_for(&out, "readyok");
    assert!(
        start.elapsed() < Duration::from_secs(5),
        "{:?}",
        start.elapsed()
    );
    assert!(!out.text().contains("bestmove"), "the search goes on");
    // The new position is the next search's; `ucinewgame` ends the old one now.
    s.handle_line("ucinewgame");
    let text = wait_for(&out, "bestmove");
    assert!(
        start.elapsed() < Duration::from_secs(5),
        "{:?}",
        start.elapsed()
    );
    // The first search's move, legal at the start position it searched.
    let first = best_move(&text).to_string();
    assert!(
        yari_rules::Position::startpos().parse_move(&first).is_ok(),
        "{text}"
    );
    s.quit();
}

/// `go searchmoves` searches only the moves given.
#[test]
fn searchmoves_limits_the_root_moves() {
    for moves in [["a3a4", "g3g4"], ["d1d2", "d1d2"]] {
        let (mut s, out) = session();
        s.handle_line("position startpos");
        s.handle_line(&format!(
            "go nodes 200 searchmoves {} {}",
            moves[0], moves[1]
        ));
        let text = wait_for(&out, "bestmove");
        assert!(moves.contains(&best_move(&text)), "{moves:?}: {text}");
        s.quit();
    }
    // An illegal move in the list is named, and the search falls back to its default.
    let (mut s, out) = session();
    s.handle_line("go nodes 50 searchmoves d1d5");
    let text = wait_for(&out, "bestmove");
    assert!(text.contains("info string searchmoves:"), "{text}");
    s.quit();
}

/// `go ponder` searches until `ponderhit`, then for the `go`'s time from that moment.
#[test]
fn ponder_searches_until_ponderhit_then_for_its_time() {
    let (mut s, out) = session();
    s.handle_line("uci");
    assert!(
        out.text().contains("option name Ponder type check"),
        "{}",
        out.text()
    );
    s.handle_line("setoption name Ponder value true");
    s.handle_line("position startpos moves d3d4");
    s.handle_line("go ponder movetime 300");
    std::thread::sleep(Duration::from_millis(600));
    assert!(
        !out.text().contains("bestmove"),
        "no answer while pondering"
    );
    let hit = std::time::Instant::now();
    s.handle_line("ponderhit");
    let text = wait_for(&out, "bestmove");
    let took = hit.elapsed();
    assert!(took >= Duration::from_millis(200), "{took:?}");
    assert!(took < Duration::from_secs(10), "{took:?}");
    let mut pos = yari_rules::Position::startpos();
    pos.play_uci("d3d4").unwrap();
    assert!(pos.parse_move(best_move(&text)).is_ok(), "{text}");
    // `stop` ends a ponder search as well, with a move.
    s.handle_line("go ponder wtime 1000 btime 1000");
    std::thread::sleep(Duration::from_millis(100));
    s.handle_line("stop");
    let text = out.text();
    assert_eq!(text.matches("bestmove").count(), 2, "{text}");
    s.handle_line("ponderhit");
    assert!(out.text().contains("ponderhit without a ponder search"));
    s.quit();
}

#[test]
fn go_parameters() {
    let start = yari_rules::Position::startpos();
    let mut black = yari_rules::Position::startpos();
    black.play_uci("d3d4").unwrap();
    assert_eq!(black.side_to_move(), Color::Black);
    let b = parse_go(&["nodes", "50"], &start).unwrap().budget;
    assert_eq!(b.simulations, Some(50));
    assert!(!b.infinite);
    let b = parse_go(
        &[
            "wtime",
            "60000",
            "btime",
            "3000",
            "binc",
            "0",
            "movestogo",
            "5",
        ],
        &black,
    )
    .unwrap()
    .budget;
    let clock = b.clock.unwrap();
    assert_eq!(clock.remaining, Duration::from_millis(3000));
    assert_eq!(clock.moves_to_go, Some(5));
    assert!(b.movetime.is_none() && b.simulations.is_none());
    assert!(parse_go(&["nodes"], &start).is_err());
    assert!(parse_go(&["sideways", "3"], &start).is_err());
    assert!(parse_go(&["infinite"], &start).unwrap().budget.infinite);
    assert_eq!(
        parse_go(&[], &start).unwrap().budget.simulations,
        Some(1600)
    );
    let go = parse_go(&["searchmoves", "a3a4", "P@d5", "nodes", "9"], &black);
    assert!(go.is_err(), "P@d5: Black has no pawn in hand");
    let go = parse_go(
        &["searchmoves", "a7a6", "d7d6", "nodes", "9", "ponder"],
        &black,
    )
    .unwrap();
    assert_eq!(go.searchmoves.len(), 2);
    assert_eq!(go.budget.simulations, Some(9));
    assert!(go.ponder);
    assert!(parse_go(&["searchmoves", "nodes", "9"], &black).is_err());
    // A ponder search without limits stays unlimited until `ponderhit`.
    assert_eq!(
        parse_go(&["ponder"], &start).unwrap().budget.simulations,
        None
    );
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
