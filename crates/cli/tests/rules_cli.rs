//! `yari perft` and `yari legal` as a user runs them.

use std::io::Write;
use std::process::{Command, Stdio};

fn yari(args: &[&str], stdin: &str) -> (bool, String, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_yari"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run yari");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(stdin.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    (
        out.status.success(),
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

#[test]
fn perft_prints_the_count_last() {
    let (ok, out, _) = yari(&["perft", "4"], "");
    assert!(ok);
    assert_eq!(out.lines().last(), Some("158404"));
    let (ok, out, _) = yari(&["perft", "2", "--divide"], "");
    assert!(ok);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 21);
    assert_eq!(lines[0], "a1a2: 20");
    assert_eq!(lines[20], "400");
}

#[test]
fn perft_from_fen_and_bad_fen() {
    let fen = "kn5/7/1+N5/7/3p3/7/2P4/7/3K3[Pb] w - - 0 1";
    let (ok, out, _) = yari(&["perft", "1", "--fen", fen], "");
    assert!(ok);
    assert_eq!(out.trim(), "62");
    let (ok, _, err) = yari(&["perft", "1", "--fen", "nonsense"], "");
    assert!(!ok);
    assert!(err.contains("ranks"), "{err}");
}

#[test]
fn legal_reads_fens_from_stdin_and_reports_bad_ones() {
    let input = "rnnkbbr/7/ppppppp/7/7/7/PPPPPPP/7/RBBKNNR[] w - - 0 1\nbad fen\n\
                 kn5/7/1+N5/7/3p3/7/2P4/7/3K3[Pb] w - - 0 1\n";
    let (ok, out, err) = yari(&["legal"], input);
    // Every line is answered, and the exit status reports the bad one.
    assert!(!ok);
    assert!(
        err.contains("1 of 3 input lines") && err.contains("line 2"),
        "{err}"
    );
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 3);
    assert!(lines[0].starts_with("a1a2 a3a4 b1a2"));
    assert_eq!(lines[0].split(' ').count(), 20);
    assert!(lines[1].starts_with("error:"));
    assert!(
        lines[2].split(' ').any(|m| m == "P@a8"),
        "pawn-drop mate is legal"
    );
    let mut sorted: Vec<&str> = lines[2].split(' ').collect();
    sorted.sort();
    assert_eq!(sorted.join(" "), lines[2]);
}

#[test]
fn legal_succeeds_on_good_input_and_survives_bytes_that_are_not_utf8() {
    let (ok, out, err) = yari(
        &["legal"],
        "rnnkbbr/7/ppppppp/7/7/7/PPPPPPP/7/RBBKNNR[] w - - 0 1\n",
    );
    assert!(ok, "{err}");
    assert_eq!(out.lines().count(), 1);
    let mut child = Command::new(env!("CARGO_BIN_EXE_yari"))
        .arg("legal")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin
        .write_all(b"\xff\xfe\nrnnkbbr/7/ppppppp/7/7/7/PPPPPPP/7/RBBKNNR[-] w 0 1\n")
        .unwrap();
    drop(stdin);
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert!(lines[0].starts_with("error: line is not UTF-8"), "{text}");
    assert_eq!(lines[1].split(' ').count(), 20, "{text}");
}

/// Counts out of range are refused with the range, never a crash or a giant allocation.
#[test]
fn out_of_range_counts_are_refused_by_name() {
    for (args, says) in [
        (&["perft", "3531"][..], "3531"),
        (
            &[
                "arena",
                "--a",
                "random",
                "--b",
                "random",
                "--games",
                "2000000000",
            ][..],
            "1 to 1000000",
        ),
        (
            &[
                "arena",
                "--a",
                "random",
                "--b",
                "random",
                "--games",
                "18446744073709551615",
            ][..],
            "1 to 1000000",
        ),
        (
            &["arena", "--a", "random", "--b", "random", "--games", "0"][..],
            "1 to 1000000",
        ),
        (
            &[
                "arena", "--a", "random", "--b", "random", "--sprt", "nan,inf",
            ][..],
            "Elo bound",
        ),
        (
            &["arena", "--a", "random", "--b", "random", "--sprt", "5,1"][..],
            "must be below",
        ),
    ] {
        let (ok, _, err) = yari(args, "");
        assert!(!ok, "{args:?} accepted");
        assert!(err.contains(says), "{args:?}: {err}");
        assert!(!err.contains("panicked"), "{args:?}: {err}");
    }
}

/// `yari legal ... | head -1`: when the reader closes the pipe, yari ends quietly with the
/// status a shell gives a tool ended by SIGPIPE (141): no panic, no error message.
#[test]
fn a_closed_pipe_ends_output_quietly() {
    let dir = tempfile::tempdir().unwrap();
    let err = dir.path().join("stderr");
    let script = format!(
        "yes 'rnnkbbr/7/ppppppp/7/7/7/PPPPPPP/7/RBBKNNR[] w - - 0 1' | head -n 200000 | \
         '{}' legal 2>'{}' | head -n 1 >/dev/null; echo ${{PIPESTATUS[2]}}",
        env!("CARGO_BIN_EXE_yari"),
        err.display()
    );
    let out = Command::new("bash")
        .arg("-c")
        .arg(&script)
        .output()
        .unwrap();
    let status = String::from_utf8_lossy(&out.stdout);
    let stderr = std::fs::read_to_string(&err).unwrap();
    assert_eq!(status.trim(), "141", "stderr: {stderr}");
    assert!(stderr.is_empty(), "{stderr}");
}
