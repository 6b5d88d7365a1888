//! `yari export`: one self-contained network file from a run, carrying its architecture,
//! encoding version, generation and the ratings the run measured, loadable without the run.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use yari_loop::{PlayerKey, RunDir};
use yari_model::checkpoint::{save, Checkpoint};

/// `source` and the checkpoints of the `average - 1` generations before it, newest first:
/// `gen-0057.yari` with 3 gives `gen-0057`, `gen-0056` and `gen-0055` of the same directory.
fn generations_to_average(source: &Path, average: u32) -> Result<Vec<PathBuf>> {
    if average <= 1 {
        return Ok(vec![source.to_path_buf()]);
    }
    let stem = source
        .file_stem()
        .and_then(|s| s.to_str())
        .unwrap_or_default();
    let generation: u32 = stem
        .strip_prefix("gen-")
        .and_then(|n| n.parse().ok())
        .with_context(|| {
            format!(
                "--average needs a run's generation checkpoint (gen-NNNN.yari), not {}",
                source.display()
            )
        })?;
    anyhow::ensure!(
        average <= generation,
        "--average {average}: {} is generation {generation}, so there are only {generation} to average",
        source.display()
    );
    let dir = source.parent().unwrap_or(Path::new(""));
    Ok((0..average)
        .map(|k| {
            dir.join(format!(
                "{}.{}",
                yari_io::layout::generation_name(generation - k),
                yari_io::layout::MODEL_EXTENSION
            ))
        })
        .collect())
}

/// `path` relative to the run directory when it lies inside it, as the run's files name it.
fn relative_to(run_dir: &Path, path: &Path) -> String {
    path.strip_prefix(run_dir)
        .unwrap_or(path)
        .display()
        .to_string()
}

/// The file format `yari export` writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum ExportFormat {
    /// yari's own network file (loads in `yari play`, `yari uci`, `model:` players).
    Yari,
    /// An ONNX model (batch norm folded; see docs/network.md) for other tools.
    Onnx,
}

pub fn run(
    backend: &yari_model::Backend,
    run_dir: &Path,
    checkpoint: &str,
    out: &Path,
    average: u32,
    format: ExportFormat,
) -> Result<()> {
    let run = RunDir::new(run_dir);
    let source = if checkpoint == "best" {
        run.best_model()?
    } else {
        PathBuf::from(checkpoint)
    };
    let device = backend.device().clone();
    let ckpt = Checkpoint::read(&source)
        .with_context(|| format!("reading network {}", source.display()))?;
    let mut meta = ckpt.meta.clone();
    let mut net = ckpt.into_net_any(&device)?;
    let sources = generations_to_average(&source, average)?;
    if sources.len() > 1 {
        let mut nets = vec![net];
        for path in &sources[1..] {
            let ckpt = Checkpoint::read(path)
                .with_context(|| format!("reading network {} to average", path.display()))?;
            nets.push(ckpt.into_net_any(&device)?);
        }
        net = yari_model::average::average(&nets)
            .with_context(|| format!("averaging {} networks", nets.len()))?;
        let names: Vec<serde_json::Value> = sources
            .iter()
            .map(|p| relative_to(run_dir, p).into())
            .collect();
        meta.notes
            .insert("averaged".into(), serde_json::Value::Array(names));
    }
    let relative = relative_to(run_dir, &source);
    let run_name = run_dir
        .canonicalize()
        .ok()
        .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
        .unwrap_or_default();
    meta.notes.insert("run".into(), run_name.into());
    meta.notes.insert("source".into(), relative.clone().into());
    // The latest rating against each opponent of the exported network, if the run rated it.
    let ratings = run.ratings_of(&PlayerKey::of_model(&relative))?;
    meta.notes
        .insert("ratings".into(), serde_json::to_value(ratings)?);
    meta.notes.insert(
        "exported_unix_s".into(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0)
            .into(),
    );
    // An export killed between writing and renaming left its temporary file beside `out`.
    if let (Some(dir), Some(name)) = (out.parent(), out.file_name()) {
        let dir = if dir.as_os_str().is_empty() {
            Path::new(".")
        } else {
            dir
        };
        if dir.is_dir() {
            yari_io::remove_stale_temp_files(dir, |target| std::ffi::OsStr::new(target) == name)?;
        }
    }
    match format {
        ExportFormat::Yari => {
            save(out, &net, &meta).with_context(|| format!("writing {}", out.display()))?;
            // Read it back as a user would: the exported file must load on its own.
            Checkpoint::read(out).with_context(|| format!("re-reading {}", out.display()))?;
        }
        ExportFormat::Onnx => {
            let bytes = yari_model::onnx::to_onnx(&net, &meta)?;
            yari_io::write_atomic(out, &bytes)
                .with_context(|| format!("writing {}", out.display()))?;
        }
    }
    eprintln!(
        "exported {}{} (generation {}, {} blocks x {} channels, encoding v{}) to {}",
        relative,
        if sources.len() > 1 {
            format!(
                " averaged with the {} generations before it",
                sources.len() - 1
            )
        } else {
            String::new()
        },
        meta.generation,
        meta.config.blocks,
        meta.config.channels,
        meta.encoding_version,
        out.display()
    );
    Ok(())
}
