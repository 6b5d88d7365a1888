//! The run page's data: a run directory's progress, budget, losses, ratings, gating decisions
//! and checkpoints, read from the files the loop writes (their names from
//! [`yari_io::layout`]) and passed on as the loop wrote them.

use std::path::Path;

use serde_json::{json, Value};
use yari_io::layout::parse_generation_name;
use yari_io::read::{read_regular_text, MAX_CONFIG_BYTES, MAX_LOG_BYTES};
use yari_io::RunPaths;

/// Most training-step points sent for the loss chart.
const MAX_METRIC_POINTS: usize = 400;

/// A file the run may not have written yet reads as `None`; one that exists but cannot be
/// read or parsed is an error naming it.
fn read_optional(path: &Path, max: u64) -> Result<Option<String>, String> {
    match read_regular_text(path, max) {
        Ok(text) => Ok(Some(text)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(format!("reading {}: {e}", path.display())),
    }
}

fn read_json(path: &Path) -> Result<Option<Value>, String> {
    read_optional(path, MAX_LOG_BYTES)?
        .map(|text| {
            serde_json::from_str(&text).map_err(|e| format!("parsing {}: {e}", path.display()))
        })
        .transpose()
}

/// The lines of a JSON-lines log that parse (a torn last line of a running writer is left
/// out, as every reader of these logs does).
fn read_lines(path: &Path) -> Result<Vec<Value>, String> {
    Ok(read_optional(path, MAX_LOG_BYTES)?
        .map(|text| {
            text.lines()
                .filter_map(|l| serde_json::from_str::<Value>(l).ok())
                .collect()
        })
        .unwrap_or_default())
}

/// Every `stride`-th training step and the last, with the fields the chart draws.
fn thin_metrics(lines: Vec<Value>) -> Vec<Value> {
    let stride = lines.len().div_ceil(MAX_METRIC_POINTS).max(1);
    let last = lines.len().saturating_sub(1);
    lines
        .into_iter()
        .enumerate()
        .filter(|(i, _)| i % stride == 0 || *i == last)
        .map(|(_, v)| {
            let mut point = serde_json::Map::new();
            for key in ["step", "loss", "policy_loss", "value_loss", "lr"] {
                if let Some(x) = v.get(key) {
                    point.insert(key.into(), x.clone());
                }
            }
            Value::Object(point)
        })
        .collect()
}

/// The generations of the run's networks, in order.
pub fn checkpoints(run: &RunPaths) -> Vec<u32> {
    let mut out: Vec<u32> = std::fs::read_dir(run.models_dir())
        .map(|entries| {
            entries
                .filter_map(|e| e.ok())
                .filter_map(|e| {
                    let path = e.path();
                    let ext_ok = path
                        .extension()
                        .is_some_and(|x| x == yari_io::layout::MODEL_EXTENSION);
                    let stem = path.file_stem()?.to_str()?;
                    (ext_ok && path.is_file())
                        .then(|| parse_generation_name(stem))
                        .flatten()
                })
                .collect()
        })
        .unwrap_or_default();
    out.sort_unstable();
    out
}

/// The run page's JSON.
pub fn run_json(run_dir: &Path) -> Result<Value, String> {
    let run = RunPaths::new(run_dir);
    let state = read_json(&run.state_file())?;
    let summary = read_json(&run.summary_file())?.unwrap_or_else(|| json!([]));
    let config: Option<toml::Table> = read_optional(&run.config_file(), MAX_CONFIG_BYTES)?
        .map(|t| {
            toml::from_str(&t).map_err(|e| format!("parsing {}: {e}", run.config_file().display()))
        })
        .transpose()?;
    let run_section = config.as_ref().and_then(|c| c.get("run"));
    let setting = |key: &str| run_section.and_then(|r| r.get(key));
    let generations = setting("generations").and_then(|v| v.as_integer());
    let max_hours = setting("max_hours")
        .and_then(|v| v.as_float().or_else(|| v.as_integer().map(|i| i as f64)))
        .filter(|h| *h > 0.0);
    let name = setting("name")
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_else(|| {
            run_dir
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default()
        });
    let generation = state
        .as_ref()
        .and_then(|s| s.get("generation"))
        .and_then(Value::as_u64);
    let last_elapsed = summary
        .as_array()
        .and_then(|a| a.last())
        .and_then(|s| s.get("elapsed_s"))
        .and_then(Value::as_f64);
    let state_elapsed = state
        .as_ref()
        .and_then(|s| s.get("elapsed_s"))
        .and_then(Value::as_f64);
    let elapsed = last_elapsed
        .unwrap_or(0.0)
        .max(state_elapsed.unwrap_or(0.0));
    let finished = match (generation, generations) {
        (Some(g), Some(total)) => g as i64 > total,
        _ => false,
    } || max_hours.is_some_and(|h| elapsed >= h * 3600.0);
    let best = state
        .as_ref()
        .and_then(|s| s.get("best"))
        .and_then(Value::as_str)
        .and_then(|b| Path::new(b).file_stem())
        .map(|s| s.to_string_lossy().into_owned());
    Ok(json!({
        "run_dir": run_dir.display().to_string(),
        "name": name,
        "generation": generation,
        "phase": state.as_ref().and_then(|s| s.get("phase")).cloned(),
        "best": best,
        "generations": generations,
        "max_hours": max_hours,
        "elapsed_s": elapsed,
        "finished": finished,
        "summary": summary,
        "ratings": read_lines(&run.ratings_file())?,
        "metrics": thin_metrics(read_lines(&run.metrics_file())?),
        "checkpoints": checkpoints(&run)
            .into_iter()
            .map(yari_io::layout::generation_name)
            .collect::<Vec<_>>(),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_log_is_thinned_to_the_chart_and_keeps_its_last_step() {
        let lines: Vec<Value> = (1..=1001)
            .map(|s| json!({"step": s, "loss": 1.0, "grad_norm": 2.0}))
            .collect();
        let points = thin_metrics(lines);
        assert!(points.len() <= MAX_METRIC_POINTS + 1, "{}", points.len());
        assert_eq!(points.last().unwrap()["step"], 1001);
        assert!(points[0].get("grad_norm").is_none());
    }

    #[test]
    fn an_empty_run_directory_reads_as_a_run_not_started() {
        let dir = tempfile::tempdir().unwrap();
        let v = run_json(dir.path()).unwrap();
        assert!(v["generation"].is_null());
        assert_eq!(v["summary"], json!([]));
        assert_eq!(v["checkpoints"], json!([]));
    }

    #[test]
    fn a_damaged_state_file_is_an_error_naming_it() {
        let dir = tempfile::tempdir().unwrap();
        let run = RunPaths::new(dir.path());
        std::fs::write(run.state_file(), "{not json").unwrap();
        let e = run_json(dir.path()).unwrap_err();
        assert!(e.contains("state.json"), "{e}");
    }
}
