//! The one place the binary reads the process's backend choices and the outside tools it
//! runs: each from its flag, else from its environment variable (so scripts written for the
//! variables keep working), parsed once here and passed down as values; no library crate
//! reads them.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use yari_model::{Backend, BackendRequest};

use crate::args::Cli;

/// A flag's value, else the first environment variable of `names` that is set and not empty.
fn flag_or_env(flag: &Option<String>, names: &[&str]) -> Option<String> {
    flag.clone().or_else(|| {
        names
            .iter()
            .find_map(|name| std::env::var(name).ok().filter(|v| !v.trim().is_empty()))
    })
}

/// What the command line and the environment ask the process to compute with.
pub fn request(cli: &Cli) -> BackendRequest {
    BackendRequest {
        device: flag_or_env(&cli.device, &["YARI_DEVICE", "BURN_DEVICE"]),
        graphics_api: flag_or_env(&cli.graphics_api, &["WGPU_BACKEND"]),
        cpu_path: flag_or_env(&cli.cpu_path, &["YARI_CPU_PATH"]),
        train_path: flag_or_env(&cli.train_path, &["YARI_TRAIN_PATH"]),
    }
}

/// Opens the process's backend: before any work, so a missing GPU driver is a clear error,
/// not a panic mid-run.
pub fn open(cli: &Cli) -> Result<Backend> {
    let request = request(cli);
    let name = request
        .device
        .clone()
        .unwrap_or_else(yari_model::device::default_backend);
    // burn creates some tensors on its own default device, whatever the one chosen here:
    // burn-optim puts a resumed optimizer state there before moving it to the parameters'
    // device. Its default is the first GPU backend compiled in, so a run on the CPU (or wgpu)
    // in a CUDA build would start CUDA, and panic on a machine without it. burn reads
    // BURN_DEVICE for that default; it is set before any other thread runs.
    std::env::set_var("BURN_DEVICE", &name);
    Backend::open(&BackendRequest {
        device: Some(name),
        ..request
    })
    .context("choosing the backend (--device, --graphics-api, --cpu-path, --train-path)")
}

/// Fairy-Stockfish's npm build (`uci.js`) that `fsf` players run: `YARI_FSF_JS`, else the
/// project-local install under `.fsf/`.
pub fn fsf_js() -> PathBuf {
    flag_or_env(&None, &["YARI_FSF_JS"])
        .map_or_else(|| PathBuf::from(yari_arena::DEFAULT_FSF_JS), PathBuf::from)
}

/// The longest `yari bench selfplay` measures (a day): a larger `YARI_BENCH_SECONDS` is a
/// mistake, not a plan.
const MAX_BENCH_SECONDS: f64 = 86_400.0;

/// How long `yari bench selfplay` measures: `YARI_BENCH_SECONDS`, else 20 s.
pub fn bench_seconds() -> Result<Duration> {
    let Some(text) = flag_or_env(&None, &["YARI_BENCH_SECONDS"]) else {
        return Ok(Duration::from_secs(20));
    };
    match text.trim().parse::<f64>() {
        Ok(s) if s > 0.0 && s <= MAX_BENCH_SECONDS => Ok(Duration::from_secs_f64(s)),
        _ => {
            bail!("YARI_BENCH_SECONDS = {text:?}: a number of seconds in (0, {MAX_BENCH_SECONDS}]")
        }
    }
}
