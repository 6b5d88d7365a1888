//! `yari serve` and `yari games` from the outside: the pages in a real headless Chromium, and
//! every kind of PGN the project writes replayed by Fairy-Stockfish's own rules (pyffish).
//! Both need tools outside Cargo (`.ci/run` installs them: Debian's chromium and
//! chromium-driver, and selenium and pyffish in the project's .venv), so they are ignored
//! in a plain `cargo test` and run by name in CI.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

fn yari() -> Command {
    Command::new(env!("CARGO_BIN_EXE_yari"))
}

/// Runs `cmd` and returns its output, failing the test with its standard error if it failed.
fn succeed(cmd: &mut Command) -> std::process::Output {
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn python() -> PathBuf {
    std::env::var_os("YARI_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| root().join(".venv/bin/python"))
}

/// Runs a Python script of `scripts/`; returns its output, failing the test on a non-zero exit.
fn script(name: &str, args: &[&std::ffi::OsStr]) -> String {
    let out = Command::new(python())
        .arg(root().join("scripts").join(name))
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("{}: {e} (see .ci/run for the .venv)", python().display()));
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{name} failed:\n{text}");
    text
}

#[test]
fn games_lists_a_runs_games_and_refuses_a_missing_run() {
    let out = yari().args(["games", "/nonexistent/run"]).output().unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("no run directory"));
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("arena/extra.jsonl");
    succeed(
        yari()
            .args(["arena", "--a", "random", "--b", "random", "--games", "4"])
            .arg("--games-file")
            .arg(&file),
    );
    let out = succeed(yari().arg("games").arg(dir.path()));
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(text.lines().count(), 4, "{text}");
    assert!(
        text.starts_with("arena/extra.jsonl/0\trandom - random\t"),
        "{text}"
    );
    let out = yari()
        .arg("games")
        .arg(dir.path())
        .args(["--pgn", "--id", "arena/extra.jsonl/3"])
        .output()
        .unwrap();
    let pgn = String::from_utf8_lossy(&out.stdout);
    assert!(pgn.starts_with("[Event \"yari-zero arena\"]"), "{pgn}");
    assert_eq!(pgn.matches("[Variant \"yarishogi\"]").count(), 1);
    let out = yari()
        .arg("games")
        .arg(dir.path())
        .args(["--id", "arena/../../x/0"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("no game"));
}

#[test]
fn serve_refuses_a_public_address_named_once() {
    let out = yari()
        .args([
            "serve", "--model", "uniform", "--host", "0.0.0.0", "--port", "0",
        ])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("twice to confirm"), "{err}");
}

/// `yari serve` on a free port; its child process and address.
fn serve(args: &[&str]) -> (Child, String) {
    let mut child = yari()
        .args(["serve", "--port", "0"])
        .args(args)
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let addr = line
        .split("http://")
        .nth(1)
        .and_then(|rest| rest.split('/').next())
        .unwrap_or_else(|| panic!("no address in {line:?}"))
        .to_string();
    (child, addr)
}

fn post(addr: &str, path: &str, body: &str) -> String {
    let mut stream = TcpStream::connect(addr).unwrap();
    write!(
        stream,
        "POST {path} HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    let (head, body) = response.split_once("\r\n\r\n").unwrap();
    assert!(head.starts_with("HTTP/1.1 200"), "{response}");
    body.to_string()
}

#[test]
#[ignore = "needs pyffish in .venv (installed by .ci/run)"]
fn every_pgn_the_project_writes_replays_in_pyffish() {
    let dir = tempfile::tempdir().unwrap();
    let run = dir.path().join("run");
    succeed(
        yari()
            .args(["run", "--config"])
            .arg(root().join("configs/smoke.toml"))
            .arg("--run-dir")
            .arg(&run),
    );
    // Decisive games by the rules: random players mate, stalemate and repeat.
    for (a, b, games) in [("random", "random", "60"), ("alphabeta:1", "random", "10")] {
        succeed(
            yari()
                .args([
                    "arena",
                    "--a",
                    a,
                    "--b",
                    b,
                    "--games",
                    games,
                    "--ply-cap",
                    "400",
                ])
                .arg("--games-file")
                .arg(run.join("arena/extra.jsonl")),
        );
    }
    let out = succeed(yari().arg("games").arg(&run).arg("--pgn"));
    let run_pgn = dir.path().join("run.pgn");
    std::fs::write(&run_pgn, &out.stdout).unwrap();

    // The play page's export, from the server: a game in progress and a finished one.
    let (mut server, addr) = serve(&["--model", "uniform"]);
    let mut play_pgn = String::new();
    for body in [
        r#"{"moves":["d3d4","d7d6","c3c4"],"white":"You","black":"yari"}"#,
        r#"{"fen":"3k3/2p4/7/7/7/7/5+n1/7/5NK[Rp] b - - 0 1","moves":["P@g2"]}"#,
    ] {
        let reply: serde_json::Value =
            serde_json::from_str(&post(&addr, "/api/pgn", body)).unwrap();
        play_pgn.push_str(reply["pgn"].as_str().unwrap());
    }
    server.kill().unwrap();
    let _ = server.wait();
    let play = dir.path().join("play.pgn");
    std::fs::write(&play, play_pgn).unwrap();

    let text = script("pgn-replay.py", &[run_pgn.as_os_str(), play.as_os_str()]);
    println!("{text}");
    let count = |pat: &str| -> usize {
        text.split(pat)
            .next()
            .and_then(|t| t.split_whitespace().last())
            .and_then(|n| n.parse().ok())
            .unwrap_or(0)
    };
    assert!(text.starts_with("ok: "), "{text}");
    assert!(count(" games replay legally") >= 80, "{text}");
    assert!(count(" ended by the rules") >= 20, "{text}");
}

#[test]
#[ignore = "needs chromium, chromium-driver and selenium in .venv (installed by .ci/run)"]
fn the_pages_work_in_headless_chromium() {
    let shots = match std::env::var_os("YARI_SCREENSHOTS") {
        Some(dir) => PathBuf::from(dir),
        None => tempfile::tempdir().unwrap().keep(),
    };
    let text = script(
        "browser-test.py",
        &[
            "--yari".as_ref(),
            env!("CARGO_BIN_EXE_yari").as_ref(),
            "--model".as_ref(),
            root().join("data/models/default.yari").as_os_str(),
            "--config".as_ref(),
            root().join("configs/smoke.toml").as_os_str(),
            "--shots".as_ref(),
            shots.as_os_str(),
        ],
    );
    println!("{text}");
    for check in [
        "a move by clicking",
        "an illegal move (d4d6) is refused",
        "optional promotion",
        "a drop from hand",
        "a mate in one played to the end",
        "the run page follows a run in progress",
        "the viewer replays a game",
    ] {
        assert!(text.contains(check), "{check:?} missing:\n{text}");
    }
    for shot in ["play.png", "run.png", "game.png"] {
        let len = std::fs::metadata(shots.join(shot)).map_or(0, |m| m.len());
        assert!(len > 10_000, "{shot}: {len} bytes");
    }
}
