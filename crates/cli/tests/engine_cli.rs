//! `yari uci` and `yari play` driven as child processes, the way GUIs, match runners and
//! people use them.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use yari_model::checkpoint::{save, CheckpointMeta};
use yari_model::NetConfig;
use yari_rules::Position;

/// A small untrained network checkpoint, so the tests exercise real loading and inference.
fn tiny_model(dir: &Path) -> PathBuf {
    let config = NetConfig::new(1, 8);
    let net = config.init(&yari_model::default_device());
    let path = dir.join("tiny.yari");
    save(&path, &net, &CheckpointMeta::new(config)).unwrap();
    path
}

struct Engine {
    child: Child,
    stdin: ChildStdin,
    lines: mpsc::Receiver<String>,
}

impl Engine {
    fn start(model: &Path) -> Engine {
        let mut child = Command::new(env!("CARGO_BIN_EXE_yari"))
            .args(["uci", "--model"])
            .arg(model)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take().unwrap();
        let stdout: ChildStdout = child.stdout.take().unwrap();
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Engine {
            child,
            stdin,
            lines,
        }
    }

    fn send(&mut self, line: &str) {
        writeln!(self.stdin, "{line}").unwrap();
        self.stdin.flush().unwrap();
    }

    /// Lines up to and including the first one starting with `prefix`.
    fn until(&mut self, prefix: &str) -> Vec<String> {
        let mut seen = Vec::new();
        loop {
            let line = self
                .lines
                .recv_timeout(Duration::from_secs(60))
                .unwrap_or_else(|_| panic!("no '{prefix}' from the engine; got {seen:?}"));
            let done = line.starts_with(prefix);
            seen.push(line);
            if done {
                return seen;
            }
        }
    }
}

#[test]
fn uci_engine_plays_a_full_game_and_survives_bad_input() {
    let dir = tempfile::tempdir().unwrap();
    let model = tiny_model(dir.path());
    let mut e = Engine::start(&model);
    e.send("uci");
    let hello = e.until("uciok");
    assert!(hello
        .iter()
        .any(|l| l.contains("UCI_Variant") && l.contains("yarishogi")));
    e.send("setoption name UCI_Variant value yarishogi");
    e.send("isready");
    e.until("readyok");
    e.send("ucinewgame");

    // Bad input of every kind: each gets an `info string`, and the engine keeps answering.
    for bad in [
        "flip the board",
        "position fen not/a/fen w",
        "position sideways",
        "go nodes many",
        "setoption name UCI_Variant value chess",
    ] {
        e.send(bad);
        e.send("isready");
        let lines = e.until("readyok");
        assert!(
            lines.iter().any(|l| l.starts_with("info string")) || bad.starts_with("go"),
            "{bad}: {lines:?}"
        );
        if bad.starts_with("go") {
            e.until("bestmove");
        }
    }

    // A whole game: the engine plays White, a seeded "random" mover plays Black. An illegal
    // move in the list is refused with an info string and the rest ignored.
    let mut pos = Position::startpos();
    let mut moves: Vec<String> = Vec::new();
    let mut state = 12345u64;
    while pos.outcome().is_none() && moves.len() < 400 {
        let mv = if moves.len().is_multiple_of(2) {
            e.send(&format!("position startpos moves {}", moves.join(" ")));
            e.send("go nodes 8");
            let lines = e.until("bestmove");
            assert!(
                lines.iter().any(|l| l.starts_with("info depth")),
                "{lines:?}"
            );
            let best = lines
                .last()
                .unwrap()
                .split_whitespace()
                .nth(1)
                .unwrap()
                .to_string();
            pos.parse_move(&best).unwrap_or_else(|err| {
                panic!("engine move {best}: {err}; {lines:?} after {moves:?}")
            })
        } else {
            let legal = pos.legal_moves();
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            legal[(state >> 33) as usize % legal.len()]
        };
        pos.play(mv);
        moves.push(mv.to_string());
        if moves.len() == 10 {
            e.send(&format!("position startpos moves {} e9e1", moves.join(" ")));
            e.send("isready");
            let lines = e.until("readyok");
            assert!(lines.iter().any(|l| l.contains("illegal")), "{lines:?}");
        }
    }
    assert!(moves.len() >= 10);
    if let Some(o) = pos.outcome() {
        // The game is over: the engine answers with no move.
        e.send(&format!("position startpos moves {}", moves.join(" ")));
        e.send("go nodes 8");
        let lines = e.until("bestmove");
        assert_eq!(lines.last().unwrap(), "bestmove (none)", "{o:?}");
    }
    e.send("go infinite");
    std::thread::sleep(Duration::from_millis(200));
    e.send("stop");
    e.until("bestmove");
    e.send("quit");
    let status = e.child.wait().unwrap();
    assert!(status.success());
}

/// A stray byte that is not UTF-8 is reported and skipped (it once ended the engine without a
/// word), and the end of input right after `go nodes 200` lets that search finish and answer
/// (it was once cut off at 18 nodes).
#[test]
fn uci_engine_skips_bytes_that_are_not_utf8_and_answers_before_eof() {
    let mut child = Command::new(env!("CARGO_BIN_EXE_yari"))
        .args(["uci", "--model", "uniform"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin
        .write_all(b"isready\n\xff\xfe junk\nisready\nposition startpos\ngo nodes 200\n")
        .unwrap();
    drop(stdin);
    let out = child.wait_with_output().unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(out.status.success(), "{text}");
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines[0], "readyok", "{text}");
    assert!(
        lines[1].starts_with("info string ignoring a line that is not UTF-8"),
        "{text}"
    );
    assert_eq!(lines[2], "readyok", "{text}");
    let info = lines
        .iter()
        .rev()
        .find(|l| l.starts_with("info depth"))
        .unwrap();
    assert!(info.contains(" nodes 200 "), "{text}");
    assert!(lines.last().unwrap().starts_with("bestmove "), "{text}");
}

fn play(args: &[&str], script: &str) -> String {
    play_bytes(args, script.as_bytes())
}

fn play_bytes(args: &[&str], script: &[u8]) -> String {
    let mut child = Command::new(env!("CARGO_BIN_EXE_yari"))
        .arg("play")
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(script).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success());
    String::from_utf8(out.stdout).unwrap()
}

/// `yari play` answers a line that is not UTF-8 and goes on (it once ended the game).
#[test]
fn play_skips_a_line_that_is_not_utf8() {
    let out = play_bytes(
        &["--model", "uniform", "--sims", "4"],
        b"\xff\xfe\nfen\nresign\n",
    );
    assert!(out.contains("not UTF-8"), "{out}");
    assert!(
        out.contains("rnnkbbr/7/ppppppp/7/7/7/PPPPPPP/7/RBBKNNR"),
        "the game went on: {out}"
    );
    assert!(out.contains("You resign"), "{out}");
}

#[test]
fn terminal_game_follows_a_scripted_person() {
    let dir = tempfile::tempdir().unwrap();
    let model = tiny_model(dir.path());
    let model = model.to_str().unwrap();
    let out = play(
        &["--model", model, "--sims", "8"],
        "d3d4\nxyz\nd4d9\nmoves\nhint\nfen\nundo\nfen\nc3c4\nresign\n",
    );
    assert!(out.contains("you play white"));
    assert!(out.contains(" 9   r   n   n   k   b   b   r  9"), "{out}");
    assert!(out.contains("[ P]"), "last move marked: {out}");
    assert!(out.contains("yari-zero plays"));
    assert!(out.contains("eval"));
    assert!(out.contains("'xyz' is not a move"));
    assert!(out.contains("'d4d9' is not legal here"));
    assert!(out.contains("legal moves: "));
    assert!(out.contains("hint: "));
    // After `undo` the position is the start again, White to move.
    assert!(out.contains("rnnkbbr/7/ppppppp/7/7/7/PPPPPPP/7/RBBKNNR[] w - - 0 1"));
    assert!(out.contains("You resign: black wins."));

    // As Black the engine moves first; end of input leaves cleanly.
    let out = play(
        &["--model", model, "--color", "black", "--movetime", "50"],
        "",
    );
    assert!(out.contains("yari-zero plays"));
    assert!(out.contains("end of input"));
}
