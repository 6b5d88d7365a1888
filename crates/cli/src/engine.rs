//! The network `yari play` and `yari uci` think with, and how it is found; the search itself
//! is yari-search's [`Engine`].

use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{Context, Result};
use yari_model::Backend;
use yari_rules::Move;
pub use yari_search::engine::{Budget, Engine, EngineOptions, Thought, DEFAULT_SIMULATIONS};
use yari_search::{Evaluator, UniformEvaluator};

/// Where the shipped network lives, relative to the repository root.
pub const DEFAULT_MODEL: &str = "data/models/default.yari";

/// The shipped network: looked up in the working directory first, then in the source tree
/// this binary was built from, so `yari play` works from anywhere right after building.
pub fn default_model_path() -> Option<PathBuf> {
    let here = PathBuf::from(DEFAULT_MODEL);
    if here.is_file() {
        return Some(here);
    }
    let built = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .join(DEFAULT_MODEL);
    built.is_file().then_some(built)
}

/// Loads `path`, or the shipped network when `None`. The path `uniform` selects uniform priors
/// instead of a network, for trying the engine without a trained net.
pub fn load_evaluator(
    backend: &Backend,
    path: Option<&Path>,
) -> Result<(Arc<dyn Evaluator>, String)> {
    let path = match path {
        Some(p) => p.to_path_buf(),
        None => default_model_path().with_context(|| {
            format!("no --model given and the shipped network {DEFAULT_MODEL} was not found")
        })?,
    };
    if path.as_os_str() == "uniform" {
        return Ok((Arc::new(UniformEvaluator), "uniform".into()));
    }
    let eval = backend
        .load_evaluator(&path)
        .with_context(|| format!("loading network {}", path.display()))?;
    Ok((Arc::new(eval), path.display().to_string()))
}

/// An engine on `evaluator` with the engine's own search.
pub fn engine(evaluator: Arc<dyn Evaluator>, options: EngineOptions) -> Result<Engine> {
    Engine::new(evaluator, Engine::play_config(), options).context("setting up the search")
}

/// The principal variation as UCI moves.
pub fn pv_text(thought: &Thought) -> String {
    let pv: Vec<String> = thought.result.pv.iter().map(Move::to_string).collect();
    pv.join(" ")
}
