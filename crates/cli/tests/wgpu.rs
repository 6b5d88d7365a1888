//! `yari` on the wgpu device: the smoke run completes its two generations there, and a
//! machine without a usable adapter gets an error naming what is missing, not a panic.
//! CI runs this on lavapipe: `cargo test --workspace --features yari-cli/wgpu --test wgpu`.
#![cfg(feature = "wgpu")]

use std::path::{Path, PathBuf};
use std::process::Command;

fn yari() -> Command {
    Command::new(env!("CARGO_BIN_EXE_yari"))
}

fn smoke_config() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../configs/smoke.toml")
}

#[test]
fn smoke_run_completes_two_generations_on_wgpu() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("run");
    let out = yari()
        .args(["--device", "wgpu", "run", "--config"])
        .arg(smoke_config())
        .arg("--run-dir")
        .arg(&dir)
        .env_remove("YARI_DEVICE")
        .env_remove("BURN_DEVICE")
        .output()
        .unwrap();
    let log = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "yari run failed:\n{log}");
    assert!(log.contains("backends: wgpu: "), "not on wgpu:\n{log}");
    assert!(log.contains("budget spent after generation 2"), "{log}");
    let state: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("state.json")).unwrap()).unwrap();
    assert_eq!(state["generation"], 3);
    for g in 0..=2 {
        let ckpt = yari_model::Checkpoint::read(dir.join(format!("models/gen-{g:04}.yari")))
            .expect("every generation's network loads");
        assert_eq!(ckpt.meta.generation, g);
    }
    // Training on the device produced finite losses.
    let metrics = std::fs::read_to_string(dir.join("metrics.jsonl")).unwrap();
    assert!(metrics.lines().count() >= 20);
    for line in metrics.lines() {
        let m: serde_json::Value = serde_json::from_str(line).unwrap();
        assert!(m["loss"].as_f64().is_some_and(f64::is_finite), "{line}");
    }
}

#[test]
fn no_adapter_is_a_clear_error_naming_the_driver() {
    // The Vulkan loader finds no driver manifest here, so no adapter comes up.
    let out = yari()
        .args(["--device", "wgpu", "bench", "nn", "--batch", "1"])
        .env("VK_ICD_FILENAMES", "/nonexistent/icd.json")
        .env("VK_DRIVER_FILES", "/nonexistent/icd.json")
        .env("WGPU_BACKEND", "vulkan")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        out.status.code(),
        Some(1),
        "an error exit, not a panic:\n{err}"
    );
    assert!(err.contains("no wgpu adapter"), "{err}");
    assert!(
        err.contains("VK_"),
        "the hint names the variable at fault:\n{err}"
    );
    assert!(!err.contains("panicked"), "{err}");
}

/// A wgpu build (CI's) still computes on the CPU unless a device is asked for.
#[test]
fn without_a_device_flag_a_wgpu_build_runs_on_the_cpu() {
    let out = yari()
        .args(["bench", "nn", "--batch", "1", "--json"])
        .env_remove("YARI_DEVICE")
        .env_remove("BURN_DEVICE")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(err.contains("backends: flex"), "{err}");
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(
        report["device"]
            .as_str()
            .is_some_and(|d| !d.contains("wgpu")),
        "{report}"
    );
}

#[test]
fn an_unknown_device_is_refused_with_the_choices() {
    let out = yari()
        .args(["--device", "tpu", "bench", "nn", "--batch", "1"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("unknown device \"tpu\"") && err.contains("wgpu"),
        "{err}"
    );
}
