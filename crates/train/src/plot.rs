//! PNG plots of a run: training losses from `metrics.jsonl`, Elo per generation from
//! `ledger.jsonl`.
//!
//! Text is drawn with a subset of DejaVu Sans compiled into the binary (plotters' `ab_glyph`
//! font backend), not with system fonts through font-kit/fontconfig: a plot must render on a
//! clean machine or a CI box without fonts installed, and never fail for lack of one.

use std::path::{Path, PathBuf};
use std::sync::Once;

use plotters::prelude::*;
use plotters::style::{register_font, FontStyle};

use crate::error::TrainError;
use crate::metrics::read_metrics;

/// The embedded font (Latin-1 subset of DejaVu Sans; licence in `assets/LICENSE-DejaVu.txt`).
static FONT: &[u8] = include_bytes!("../assets/DejaVuSans-subset.ttf");
/// Ledger of the `yari run` loop: one JSON object a line with `generation` and `elo`.
pub const LEDGER_FILE: &str = yari_io::layout::LEDGER_FILE;
/// Subdirectory of the run directory the images go to.
pub const PLOTS_DIR: &str = yari_io::layout::PLOTS_DIR;

fn register_fonts() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        for style in [FontStyle::Normal, FontStyle::Bold] {
            if register_font("sans-serif", style, FONT).is_err() {
                panic!("the embedded font does not parse");
            }
        }
    });
}

/// One Elo point of the ledger.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct EloPoint {
    /// Generation number.
    pub generation: f64,
    /// Rating.
    pub elo: f64,
}

/// The fields of a ledger line that the Elo curve needs, in either form below; anything else
/// on the line is ignored.
#[derive(serde::Deserialize)]
struct LedgerLine {
    elo: Option<f64>,
    generation: Option<f64>,
    candidate: Option<String>,
    best: Option<String>,
}

/// Reads the Elo curve from a ledger; a missing ledger reads as empty, lines that fit
/// neither form below (or are torn) are skipped.
///
/// Two line forms are understood:
/// - `{"generation": G, "elo": E, ...}`: the rating of generation G, as the `yari run` loop
///   records it. For a generation listed more than once the last line wins.
/// - a gating decision of the arena crate, `{"candidate": C, "best": B, "elo": E, ...}` without
///   a generation: `E` is C's Elo relative to B, so ratings are chained (the first best is 0,
///   a candidate is its opponent's rating plus `E`) and the generation is the last number in
///   C's file name (`models/gen-0003.yari` is generation 3).
pub fn read_ledger(path: &Path) -> Result<Vec<EloPoint>, TrainError> {
    let text = match yari_io::read_regular_text(path, yari_io::MAX_LOG_BYTES) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(TrainError::io(path, e)),
    };
    let mut points = std::collections::BTreeMap::new();
    let mut chained = std::collections::HashMap::<String, f64>::new();
    for line in text.lines() {
        let Ok(line) = serde_json::from_str::<LedgerLine>(line) else {
            continue;
        };
        let Some(elo) = line.elo.filter(|e| e.is_finite()) else {
            continue;
        };
        if let Some(g) = line.generation {
            if g.is_finite() {
                points.insert(g as i64, EloPoint { generation: g, elo });
            }
            continue;
        }
        if let (Some(candidate), Some(best)) = (line.candidate, line.best) {
            if !chained.contains_key(&best) {
                // The first best anchors the scale at 0.
                chained.insert(best.clone(), 0.0);
                if let Some(g) = generation_of(&best) {
                    points.entry(g as i64).or_insert(EloPoint {
                        generation: g as f64,
                        elo: 0.0,
                    });
                }
            }
            let rating = chained[&best] + elo;
            chained.insert(candidate.clone(), rating);
            if let Some(g) = generation_of(&candidate) {
                points.insert(
                    g as i64,
                    EloPoint {
                        generation: g as f64,
                        elo: rating,
                    },
                );
            }
        }
    }
    Ok(points.into_values().collect())
}

/// The fields of a `ratings.jsonl` line that the score curves need.
#[derive(serde::Deserialize)]
struct RatingLine {
    generation: f64,
    opponent: String,
    score: f64,
}

/// One opponent's curve: its arena spec and (generation, score in percent) points.
pub type ScoreCurve = (String, Vec<(f64, f64)>);

/// Reads the score (in percent) of the rated network against each opponent by generation from
/// a run's `ratings.jsonl`, opponents in the order they first appear. A missing file reads as
/// empty; lines that do not parse (or are torn) are skipped; for a generation rated twice
/// against one opponent the last line wins.
pub fn read_rating_scores(path: &Path) -> Result<Vec<ScoreCurve>, TrainError> {
    let text = match yari_io::read_regular_text(path, yari_io::MAX_LOG_BYTES) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(TrainError::io(path, e)),
    };
    let mut curves: Vec<(String, std::collections::BTreeMap<i64, f64>)> = Vec::new();
    for line in text.lines() {
        let Ok(r) = serde_json::from_str::<RatingLine>(line) else {
            continue;
        };
        if !(r.generation.is_finite() && r.score.is_finite()) {
            continue;
        }
        let i = match curves.iter().position(|(o, _)| *o == r.opponent) {
            Some(i) => i,
            None => {
                curves.push((r.opponent, Default::default()));
                curves.len() - 1
            }
        };
        curves[i].1.insert(r.generation as i64, 100.0 * r.score);
    }
    Ok(curves
        .into_iter()
        .map(|(o, pts)| (o, pts.into_iter().map(|(g, s)| (g as f64, s)).collect()))
        .collect())
}

/// The last run of digits in the file stem of `name` (`runs/x/models/gen-0012.yari` → 12).
fn generation_of(name: &str) -> Option<u64> {
    let stem = Path::new(name).file_stem()?.to_str()?;
    let end = stem.rfind(|c: char| c.is_ascii_digit())? + 1;
    let start = stem[..end]
        .rfind(|c: char| !c.is_ascii_digit())
        .map_or(0, |i| i + 1);
    stem[start..end].parse().ok()
}

fn plot_err(path: PathBuf) -> impl Fn(String) -> TrainError {
    move |what| TrainError::Plot {
        path: path.clone(),
        what,
    }
}

/// `[lo, hi]` with a margin, never empty; with `nonneg`, a range of non-negative values
/// (losses, lr, norms, steps) keeps a non-negative axis.
fn padded_range(values: impl Iterator<Item = f64>, nonneg: bool) -> (f64, f64) {
    let (mut lo, mut hi) = (f64::INFINITY, f64::NEG_INFINITY);
    for v in values.filter(|v| v.is_finite()) {
        lo = lo.min(v);
        hi = hi.max(v);
    }
    if !lo.is_finite() {
        return (0.0, 1.0);
    }
    let pad = ((hi - lo) * 0.05).max(1e-3 * hi.abs().max(1e-9));
    let low = if nonneg && lo >= 0.0 {
        (lo - pad).max(0.0)
    } else {
        lo - pad
    };
    (low, hi + pad)
}

/// A named series of (x, y) points in a colour.
type Series<'a> = (&'a str, RGBColor, Vec<(f64, f64)>);

/// Draws line series into `area` with a caption, axis descriptions and a legend. The x axis
/// counts (steps, generations), so it is labelled with integers; with few points every point
/// gets a marker.
fn draw_lines<DB: DrawingBackend>(
    area: &DrawingArea<DB, plotters::coord::Shift>,
    caption: &str,
    x_desc: &str,
    y_desc: &str,
    y_nonneg: bool,
    series: &[Series<'_>],
) -> Result<(), String> {
    let (x0, x1) = padded_range(series.iter().flat_map(|s| s.2.iter().map(|p| p.0)), true);
    // Whole-number ticks: at most one per unit, at most ten.
    let x_labels = ((x1 - x0).floor() as usize + 1).clamp(2, 10);
    let (y0, y1) = padded_range(
        series.iter().flat_map(|s| s.2.iter().map(|p| p.1)),
        y_nonneg,
    );
    let mut chart = ChartBuilder::on(area)
        .caption(caption, ("sans-serif", 22))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(60)
        .build_cartesian_2d(x0..x1, y0..y1)
        .map_err(|e| e.to_string())?;
    chart
        .configure_mesh()
        .x_desc(x_desc)
        .y_desc(y_desc)
        .x_labels(x_labels)
        .x_label_formatter(&|x| format!("{x:.0}"))
        .label_style(("sans-serif", 14))
        .draw()
        .map_err(|e| e.to_string())?;
    for (name, color, points) in series {
        let color = *color;
        chart
            .draw_series(LineSeries::new(
                points.iter().copied(),
                color.stroke_width(2),
            ))
            .map_err(|e| e.to_string())?
            .label(*name)
            .legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(2))
            });
        if points.len() <= 50 {
            chart
                .draw_series(points.iter().map(|&p| Circle::new(p, 4, color.filled())))
                .map_err(|e| e.to_string())?;
        }
    }
    chart
        .configure_series_labels()
        .label_font(("sans-serif", 14))
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .draw()
        .map_err(|e| e.to_string())?;
    Ok(())
}

/// Draws the run's plots into `RUN_DIR/plots/` and returns the files written:
/// `training.png` (losses, and learning rate with gradient norm) when `metrics.jsonl` has
/// records, `elo.png` when `ledger.jsonl` has generation/elo pairs or `ratings.jsonl` has
/// ratings (the score against each baseline and outside rung, such as Fairy-Stockfish, below
/// the Elo curve). Nothing to draw is not an error (the list is then empty).
pub fn plot_run(run_dir: &Path) -> Result<Vec<PathBuf>, TrainError> {
    register_fonts();
    let paths = yari_io::RunPaths::new(run_dir);
    let metrics = read_metrics(&paths.metrics_file())?;
    let ledger = read_ledger(&paths.ledger_file())?;
    let scores = read_rating_scores(&paths.ratings_file())?;
    let out_dir = paths.plots_dir();
    let mut written = Vec::new();
    if metrics.is_empty() && ledger.is_empty() && scores.is_empty() {
        return Ok(written);
    }
    std::fs::create_dir_all(&out_dir).map_err(|e| TrainError::io(&out_dir, e))?;

    if !metrics.is_empty() {
        let path = out_dir.join("training.png");
        let err = plot_err(path.clone());
        let xs = |f: fn(&crate::metrics::StepMetrics) -> f64| -> Vec<(f64, f64)> {
            metrics.iter().map(|m| (m.step as f64, f(m))).collect()
        };
        {
            let root = BitMapBackend::new(&path, (1200, 900)).into_drawing_area();
            root.fill(&WHITE).map_err(|e| err(e.to_string()))?;
            let areas = root.split_evenly((2, 1));
            draw_lines(
                &areas[0],
                "Training loss",
                "step",
                "loss (nats)",
                true,
                &[
                    ("total", RGBColor(20, 20, 20), xs(|m| m.loss)),
                    ("policy (KL)", RGBColor(31, 119, 180), xs(|m| m.policy_loss)),
                    (
                        "value (WDL CE)",
                        RGBColor(214, 39, 40),
                        xs(|m| m.value_loss),
                    ),
                ],
            )
            .map_err(&err)?;
            let lower = areas[1].split_evenly((1, 2));
            draw_lines(
                &lower[0],
                "Learning rate",
                "step",
                "lr",
                true,
                &[("lr", RGBColor(44, 160, 44), xs(|m| m.lr))],
            )
            .map_err(&err)?;
            draw_lines(
                &lower[1],
                "Gradient norm (before clipping)",
                "step",
                "L2 norm",
                true,
                &[("grad norm", RGBColor(148, 103, 189), xs(|m| m.grad_norm))],
            )
            .map_err(&err)?;
            root.present().map_err(|e| err(e.to_string()))?;
        }
        written.push(path);
    }

    if !ledger.is_empty() || !scores.is_empty() {
        let path = out_dir.join("elo.png");
        let err = plot_err(path.clone());
        {
            let root = BitMapBackend::new(&path, (1000, 900)).into_drawing_area();
            root.fill(&WHITE).map_err(|e| err(e.to_string()))?;
            let areas = root.split_evenly((2, 1));
            if !ledger.is_empty() {
                let points = ledger.iter().map(|p| (p.generation, p.elo)).collect();
                draw_lines(
                    &areas[0],
                    "Elo by generation (gating matches, chained)",
                    "generation",
                    "Elo",
                    false,
                    &[("Elo", RGBColor(255, 127, 14), points)],
                )
                .map_err(&err)?;
            }
            if !scores.is_empty() {
                const COLOURS: [RGBColor; 6] = [
                    RGBColor(31, 119, 180),
                    RGBColor(214, 39, 40),
                    RGBColor(44, 160, 44),
                    RGBColor(148, 103, 189),
                    RGBColor(140, 86, 75),
                    RGBColor(23, 190, 207),
                ];
                let series: Vec<Series<'_>> = scores
                    .iter()
                    .enumerate()
                    .map(|(i, (name, pts))| {
                        (name.as_str(), COLOURS[i % COLOURS.len()], pts.clone())
                    })
                    .collect();
                draw_lines(
                    &areas[1],
                    "Score of the best network against each rung",
                    "generation",
                    "score (%)",
                    true,
                    &series,
                )
                .map_err(&err)?;
            }
            root.present().map_err(|e| err(e.to_string()))?;
        }
        written.push(path);
    }
    Ok(written)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ledger_forms() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(LEDGER_FILE);
        assert!(read_ledger(&path).unwrap().is_empty());
        std::fs::write(
            &path,
            concat!(
                "{\"generation\":0,\"elo\":0}\n",
                "{\"generation\":1,\"elo\":20.5}\n",
                "{\"gener",
            ),
        )
        .unwrap();
        let pts = read_ledger(&path).unwrap();
        assert_eq!(pts.len(), 2);
        assert_eq!(pts[1].elo, 20.5);

        std::fs::write(
            &path,
            concat!(
                "{\"candidate\":\"nets/gen-0001.ckpt\",\"best\":\"nets/gen-0000.ckpt\",\"elo\":30.0,\"promote\":true}\n",
                "{\"candidate\":\"nets/gen-0002.ckpt\",\"best\":\"nets/gen-0001.ckpt\",\"elo\":-5.0,\"promote\":false}\n",
                "{\"candidate\":\"nets/gen-0003.ckpt\",\"best\":\"nets/gen-0001.ckpt\",\"elo\":\"inf\"}\n",
            ),
        )
        .unwrap();
        let pts = read_ledger(&path).unwrap();
        let got: Vec<(f64, f64)> = pts.iter().map(|p| (p.generation, p.elo)).collect();
        assert_eq!(got, [(0.0, 0.0), (1.0, 30.0), (2.0, 25.0)]);
        assert_eq!(generation_of("a/b/gen12-v2.ckpt"), Some(2));
        assert_eq!(generation_of("best"), None);
    }

    #[test]
    fn rating_scores_by_opponent() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("ratings.jsonl");
        assert!(read_rating_scores(&path).unwrap().is_empty());
        std::fs::write(
            &path,
            concat!(
                "{\"generation\":1,\"opponent\":\"random\",\"score\":0.5}\n",
                "{\"generation\":1,\"opponent\":\"fsf[nodes=100]\",\"score\":0.1}\n",
                "{\"generation\":2,\"opponent\":\"random\",\"score\":0.75}\n",
                "{\"generation\":2,\"opponent\":\"random\",\"score\":1.0}\n",
                "{\"generation\":3,\"oppo",
            ),
        )
        .unwrap();
        let got = read_rating_scores(&path).unwrap();
        assert_eq!(
            got,
            [
                ("random".to_string(), vec![(1.0, 50.0), (2.0, 100.0)]),
                ("fsf[nodes=100]".to_string(), vec![(1.0, 10.0)]),
            ]
        );
    }
}
