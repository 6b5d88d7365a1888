//! `yari` built with the CUDA backend, on whatever machine the tests run: `--device cuda`
//! either opens the GPU or fails with an error naming the missing piece (never a panic), and
//! a CUDA build that computes elsewhere never touches CUDA, not even to resume training.
#![cfg(feature = "cuda")]

use std::path::Path;
use std::process::Command;

fn yari() -> Command {
    Command::new(env!("CARGO_BIN_EXE_yari"))
}

#[test]
fn the_cuda_device_opens_or_names_what_is_missing() {
    let out = yari()
        .args([
            "--device",
            "cuda",
            "bench",
            "nn",
            "--device-only",
            "--batch",
            "1",
        ])
        .env("RUST_LIB_BACKTRACE", "0")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    if out.status.success() {
        assert!(err.contains("backends: cuda"), "{err}");
        return;
    }
    assert_eq!(
        out.status.code(),
        Some(1),
        "an error exit, not a panic:\n{err}"
    );
    assert!(!err.contains("panicked"), "{err}");
    assert!(
        err.contains("the CUDA device cannot be opened")
            || err.contains("the CUDA device failed its first computation"),
        "{err}"
    );
    let named = ["libcuda.so.1", "libnvrtc.so", "CUDA headers"];
    assert!(
        err.contains("first computation") || named.iter().any(|n| err.contains(n)),
        "the error names the missing piece:\n{err}"
    );
}

/// burn-optim puts a resumed optimizer state on burn's default device, which in a CUDA build
/// is CUDA unless BURN_DEVICE says otherwise: the binary sets it to the device it chose. The
/// smoke run's second generation resumes the trainer, so on a machine without CUDA this run
/// panicked before that.
#[test]
fn a_cuda_build_trains_on_the_cpu_without_touching_cuda() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("run");
    let config = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../configs/smoke.toml");
    let out = yari()
        .args(["--device", "flex", "run", "--config"])
        .arg(config)
        .arg("--run-dir")
        .arg(&dir)
        .env_remove("YARI_DEVICE")
        .env_remove("BURN_DEVICE")
        .output()
        .unwrap();
    let log = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "yari run failed:\n{log}");
    assert!(log.contains("budget spent after generation 2"), "{log}");
    assert!(dir.join("models/gen-0002.yari").is_file(), "{log}");
}
