//! PNG plots of a run: training losses from `metrics.jsonl`; the ratings of the run's networks
//! and their scores against each rung, as the caller fitted them ([`RunRatings`]).
//!
//! Text is drawn with a subset of DejaVu Sans compiled into the binary (plotters' `ab_glyph`
//! font backend), not with system fonts through font-kit/fontconfig: a plot must render on a
//! clean machine or a CI box without fonts installed, and never fail for lack of one.

use std::path::{Path, PathBuf};
use std::sync::Once;

use plotters::coord::types::RangedCoordf64;
use plotters::prelude::*;
use plotters::style::{register_font, FontStyle};

use crate::error::TrainError;
use crate::metrics::read_metrics;

/// The embedded font (Latin-1 subset of DejaVu Sans; licence in `assets/LICENSE-DejaVu.txt`).
static FONT: &[u8] = include_bytes!("../assets/DejaVuSans-subset.ttf");
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

/// A network of the run on the rating scale: its Bradley-Terry rating over every game of the
/// run (`yari ratings`), not a chain of gating results, so one number per network whatever
/// it played and an interval that says how much the games pin it down.
#[derive(Clone, Debug, PartialEq)]
pub struct RatedGeneration {
    /// The network's generation.
    pub generation: u32,
    /// Rating relative to the anchor.
    pub elo: f64,
    /// Half-width of the 95% interval.
    pub error: f64,
}

/// A player from outside the run (a baseline, a Fairy-Stockfish rung) on the same scale, drawn
/// as a horizontal line the networks can be read against.
#[derive(Clone, Debug, PartialEq)]
pub struct Reference {
    /// The player's arena spec (`fsf[nodes=1000]`).
    pub name: String,
    /// Rating relative to the anchor.
    pub elo: f64,
    /// Half-width of the 95% interval.
    pub error: f64,
}

/// A gating match's decision, marked at its generation rather than drawn as a rating.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GateMark {
    /// The candidate's generation.
    pub generation: u32,
    /// Whether the candidate became the best network.
    pub promoted: bool,
}

/// The score of the run's best network against one rung at one generation, with its 95%
/// interval, all in 0–1.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ScorePoint {
    /// The generation whose rating phase played the match.
    pub generation: u32,
    /// Mean score.
    pub score: f64,
    /// Lower end of the interval.
    pub low: f64,
    /// Upper end of the interval.
    pub high: f64,
}

/// One rung's scores over the run.
#[derive(Clone, Debug, PartialEq)]
pub struct ScoreCurve {
    /// The rung's arena spec.
    pub opponent: String,
    /// Its points by generation.
    pub points: Vec<ScorePoint>,
}

/// What `elo.png` shows. Rating is the arena's job (this crate does not depend on it): the
/// caller fits the run's games and passes the result here as plain numbers.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RunRatings {
    /// The player fixed at 0 (`random` when it played).
    pub anchor: String,
    /// The run's rated networks, by generation.
    pub networks: Vec<RatedGeneration>,
    /// Every other rated player.
    pub references: Vec<Reference>,
    /// Gating decisions.
    pub gates: Vec<GateMark>,
    /// Scores against each rung, from `ratings.jsonl`.
    pub scores: Vec<ScoreCurve>,
}

impl RunRatings {
    /// Whether there is nothing to draw in `elo.png`.
    pub fn is_empty(&self) -> bool {
        self.networks.is_empty() && self.gates.is_empty() && self.scores.is_empty()
    }
}

fn plot_err(path: PathBuf) -> impl Fn(String) -> TrainError {
    move |what| TrainError::Plot {
        path: path.clone(),
        what,
    }
}

/// How an axis is scaled from the values it shows.
#[derive(Clone, Copy)]
enum Axis {
    /// Non-negative quantities (losses, lr, norms): from 0 to a little above the largest.
    FromZero,
    /// Values of any sign, spanning at least this much, so that a flat or single-point series
    /// (a smoke run) gets a readable axis instead of one a hair wide.
    Span(f64),
}

/// The largest magnitude an axis shows: a value beyond it (a diverged loss of 1e308) is drawn
/// at the edge, and the axis arithmetic stays finite.
const AXIS_LIMIT: f64 = 1e15;

/// The range of `values` on `axis`, with a margin; never empty.
fn axis_range(values: impl Iterator<Item = f64>, axis: Axis) -> (f64, f64) {
    let (mut lo, mut hi) = (f64::INFINITY, f64::NEG_INFINITY);
    for v in values.filter(|v| v.is_finite()) {
        let v = v.clamp(-AXIS_LIMIT, AXIS_LIMIT);
        lo = lo.min(v);
        hi = hi.max(v);
    }
    match axis {
        _ if !lo.is_finite() => (0.0, 1.0),
        Axis::FromZero => {
            let hi = hi.max(0.0);
            (0.0, if hi > 0.0 { hi * 1.05 } else { 1.0 })
        }
        Axis::Span(min_span) => {
            if hi - lo < min_span {
                let mid = 0.5 * (lo + hi);
                lo = mid - 0.5 * min_span;
                hi = mid + 0.5 * min_span;
            }
            let pad = 0.05 * (hi - lo);
            (lo - pad, hi + pad)
        }
    }
}

/// The generation axis: whole numbers, at least two generations wide.
fn generation_range(values: impl Iterator<Item = f64>) -> (f64, f64) {
    axis_range(values, Axis::Span(2.0))
}

/// A named series of (x, y) points in a colour.
type Series<'a> = (&'a str, RGBColor, Vec<(f64, f64)>);

/// One colour per opponent, the same in both panels of the ratings plot (its reference line
/// and its score curve); the networks' own curve keeps the first colour.
fn opponent_colour(ratings: &RunRatings, name: &str) -> RGBColor {
    let mut names: Vec<&str> = ratings
        .references
        .iter()
        .map(|r| r.name.as_str())
        .chain(ratings.scores.iter().map(|c| c.opponent.as_str()))
        .collect();
    names.sort_unstable();
    names.dedup();
    let i = names.iter().position(|n| *n == name).unwrap_or(0);
    COLOURS[1 + i % (COLOURS.len() - 1)]
}

/// The colours of successive series.
const COLOURS: [RGBColor; 6] = [
    RGBColor(31, 119, 180),
    RGBColor(214, 39, 40),
    RGBColor(44, 160, 44),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(23, 190, 207),
];

type Chart<'a, DB> = ChartContext<'a, DB, Cartesian2d<RangedCoordf64, RangedCoordf64>>;

/// A chart over `x` × `y` in `area` with a caption, axis descriptions and whole-number x
/// labels (steps and generations are counts).
fn chart<'a, DB: DrawingBackend>(
    area: &'a DrawingArea<DB, plotters::coord::Shift>,
    caption: &str,
    (x_desc, x): (&str, (f64, f64)),
    (y_desc, y): (&str, (f64, f64)),
) -> Result<Chart<'a, DB>, String> {
    let mut chart = ChartBuilder::on(area)
        .caption(caption, ("sans-serif", 22))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(60)
        .build_cartesian_2d(x.0..x.1, y.0..y.1)
        .map_err(|e| e.to_string())?;
    // Whole-number ticks: at most one per unit, at most ten.
    let x_labels = ((x.1 - x.0).floor() as usize + 1).clamp(2, 10);
    chart
        .configure_mesh()
        .x_desc(x_desc)
        .y_desc(y_desc)
        .x_labels(x_labels)
        .x_label_formatter(&|x| {
            if (x - x.round()).abs() < 1e-6 {
                format!("{x:.0}")
            } else {
                String::new()
            }
        })
        .label_style(("sans-serif", 14))
        .draw()
        .map_err(|e| e.to_string())?;
    Ok(chart)
}

fn legend<'a, DB: DrawingBackend + 'a>(chart: &mut Chart<'a, DB>) -> Result<(), String> {
    legend_at(chart, SeriesLabelPosition::MiddleRight)
}

fn legend_at<'a, DB: DrawingBackend + 'a>(
    chart: &mut Chart<'a, DB>,
    position: SeriesLabelPosition,
) -> Result<(), String> {
    chart
        .configure_series_labels()
        .position(position)
        .label_font(("sans-serif", 14))
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .draw()
        .map_err(|e| e.to_string())
}

/// Draws line series into `area`; with few points every point gets a marker.
fn draw_lines<DB: DrawingBackend>(
    area: &DrawingArea<DB, plotters::coord::Shift>,
    caption: &str,
    x_desc: &str,
    y_desc: &str,
    series: &[Series<'_>],
) -> Result<(), String> {
    let x = axis_range(
        series.iter().flat_map(|s| s.2.iter().map(|p| p.0)),
        Axis::FromZero,
    );
    let y = axis_range(
        series.iter().flat_map(|s| s.2.iter().map(|p| p.1)),
        Axis::FromZero,
    );
    let mut chart = chart(area, caption, (x_desc, x), (y_desc, y))?;
    for (name, color, points) in series {
        let color = *color;
        // Drawn where the axis can show them: plotters' pixel arithmetic overflows on a
        // diverged loss of 1e308, and a NaN has no place at all.
        let points: Vec<(f64, f64)> = points
            .iter()
            .filter(|p| p.0.is_finite() && p.1.is_finite())
            .map(|&(x, y)| (x, y.clamp(-AXIS_LIMIT, AXIS_LIMIT)))
            .collect();
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
    legend(&mut chart)
}

/// Points with vertical 95% bars, joined by a line, labelled `name`.
fn draw_with_bars<'a, DB: DrawingBackend + 'a>(
    chart: &mut Chart<'a, DB>,
    name: &str,
    color: RGBColor,
    points: &[(f64, f64, f64, f64)],
) -> Result<(), String> {
    chart
        .draw_series(LineSeries::new(
            points.iter().map(|p| (p.0, p.1)),
            color.stroke_width(2),
        ))
        .map_err(|e| e.to_string())?
        .label(name)
        .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(2)));
    chart
        .draw_series(
            points
                .iter()
                .map(|&(x, y, lo, hi)| ErrorBar::new_vertical(x, lo, y, hi, color.filled(), 8)),
        )
        .map_err(|e| e.to_string())?;
    Ok(())
}

/// The rating panel: each network's rating with its interval, the outside players as
/// horizontal dashed lines, and gating decisions as marks along the bottom.
fn draw_ratings<DB: DrawingBackend>(
    area: &DrawingArea<DB, plotters::coord::Shift>,
    ratings: &RunRatings,
) -> Result<(), String> {
    let networks: Vec<(f64, f64, f64, f64)> = ratings
        .networks
        .iter()
        .filter(|n| n.elo.is_finite() && n.error.is_finite())
        .map(|n| {
            let g = f64::from(n.generation);
            (g, n.elo, n.elo - n.error, n.elo + n.error)
        })
        .collect();
    let references: Vec<&Reference> = ratings
        .references
        .iter()
        .filter(|r| r.elo.is_finite())
        .collect();
    let x = generation_range(
        networks
            .iter()
            .map(|p| p.0)
            .chain(ratings.gates.iter().map(|g| f64::from(g.generation))),
    );
    let y = axis_range(
        networks
            .iter()
            .flat_map(|p| [p.2, p.3])
            .chain(references.iter().map(|r| r.elo))
            .chain([0.0]),
        Axis::Span(100.0),
    );
    let caption = format!(
        "Rating of the run's networks (Bradley-Terry over all games, {} = 0, 95% intervals)",
        ratings.anchor
    );
    let mut chart = chart(area, &caption, ("generation", x), ("Elo", y))?;
    for r in &references {
        let color = opponent_colour(ratings, &r.name);
        let label = if r.error > 0.0 {
            format!("{} {:+.0} ±{:.0}", r.name, r.elo, r.error)
        } else {
            format!("{} {:+.0}", r.name, r.elo)
        };
        chart
            .draw_series(DashedLineSeries::new(
                [(x.0, r.elo), (x.1, r.elo)],
                8,
                6,
                color.stroke_width(2),
            ))
            .map_err(|e| e.to_string())?
            .label(label)
            .legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(2))
            });
    }
    if !networks.is_empty() {
        draw_with_bars(&mut chart, "network", COLOURS[0], &networks)?;
    }
    // Gate decisions sit on the bottom edge: they are events, not ratings.
    let base = y.0 + 0.03 * (y.1 - y.0);
    for (promoted, color, label) in [
        (true, RGBColor(44, 160, 44), "gate: promoted"),
        (false, RGBColor(214, 39, 40), "gate: rejected"),
    ] {
        let marks: Vec<(f64, f64)> = ratings
            .gates
            .iter()
            .filter(|g| g.promoted == promoted)
            .map(|g| (f64::from(g.generation), base))
            .collect();
        if marks.is_empty() {
            continue;
        }
        chart
            .draw_series(
                marks
                    .iter()
                    .map(|&p| TriangleMarker::new(p, 6, color.filled())),
            )
            .map_err(|e| e.to_string())?
            .label(label)
            .legend(move |(x, y)| TriangleMarker::new((x + 10, y), 6, color.filled()));
    }
    // Upper left: the network's curve rises towards the right.
    legend_at(&mut chart, SeriesLabelPosition::UpperLeft)
}

/// The score panel: the best network's score against each rung, 0–100%, with intervals.
fn draw_scores<DB: DrawingBackend>(
    area: &DrawingArea<DB, plotters::coord::Shift>,
    ratings: &RunRatings,
) -> Result<(), String> {
    let scores = &ratings.scores;
    let x = generation_range(
        scores
            .iter()
            .flat_map(|c| c.points.iter().map(|p| f64::from(p.generation))),
    );
    let mut chart = chart(
        area,
        "Score of the best network against each rung (95% intervals)",
        ("generation", x),
        ("score (%)", (0.0, 100.0)),
    )?;
    for curve in scores {
        let points: Vec<(f64, f64, f64, f64)> = curve
            .points
            .iter()
            .map(|p| {
                (
                    f64::from(p.generation),
                    100.0 * p.score,
                    100.0 * p.low,
                    100.0 * p.high,
                )
            })
            .collect();
        draw_with_bars(
            &mut chart,
            &curve.opponent,
            opponent_colour(ratings, &curve.opponent),
            &points,
        )?;
    }
    // Middle left: early in a run the scores sit low and the anchor's at the top.
    legend_at(&mut chart, SeriesLabelPosition::MiddleLeft)
}

/// Renders `draw` on a `size` canvas and replaces `path` with the PNG whole (a kill or a full
/// disk leaves the previous image, never a torn one).
fn write_png(
    path: &Path,
    size: (u32, u32),
    draw: impl FnOnce(&DrawingArea<BitMapBackend<'_>, plotters::coord::Shift>) -> Result<(), String>,
) -> Result<(), TrainError> {
    let err = plot_err(path.to_path_buf());
    let mut rgb = vec![0u8; size.0 as usize * size.1 as usize * 3];
    {
        let root = BitMapBackend::with_buffer(&mut rgb, size).into_drawing_area();
        root.fill(&WHITE).map_err(|e| err(e.to_string()))?;
        draw(&root).map_err(&err)?;
        root.present().map_err(|e| err(e.to_string()))?;
    }
    let mut png_bytes = Vec::new();
    {
        let mut encoder = png::Encoder::new(&mut png_bytes, size.0, size.1);
        encoder.set_color(png::ColorType::Rgb);
        encoder.set_depth(png::BitDepth::Eight);
        let mut writer = encoder.write_header().map_err(|e| err(e.to_string()))?;
        writer
            .write_image_data(&rgb)
            .map_err(|e| err(e.to_string()))?;
        writer.finish().map_err(|e| err(e.to_string()))?;
    }
    yari_io::write_atomic(path, &png_bytes)?;
    Ok(())
}

/// Draws the run's plots into `RUN_DIR/plots/` and returns the files written:
/// `training.png` (losses, and learning rate with gradient norm) when `metrics.jsonl` has
/// records, `elo.png` when `ratings` has anything to show (the networks' ratings with the
/// outside players as references and the gate decisions, then the scores against each rung).
/// Nothing to draw is not an error (the list is then empty).
pub fn plot_run(run_dir: &Path, ratings: &RunRatings) -> Result<Vec<PathBuf>, TrainError> {
    register_fonts();
    let paths = yari_io::RunPaths::new(run_dir);
    let metrics = read_metrics(&paths.metrics_file())?;
    let out_dir = paths.plots_dir();
    let mut written = Vec::new();
    if metrics.is_empty() && ratings.is_empty() {
        return Ok(written);
    }
    std::fs::create_dir_all(&out_dir).map_err(|e| TrainError::io(&out_dir, e))?;

    if !metrics.is_empty() {
        let path = out_dir.join("training.png");
        let xs = |f: fn(&crate::metrics::StepMetrics) -> f64| -> Vec<(f64, f64)> {
            metrics.iter().map(|m| (m.step as f64, f(m))).collect()
        };
        write_png(&path, (1200, 900), |root| {
            let areas = root.split_evenly((2, 1));
            draw_lines(
                &areas[0],
                "Training loss",
                "step",
                "loss (nats)",
                &[
                    ("total", RGBColor(20, 20, 20), xs(|m| m.loss)),
                    ("policy (KL)", RGBColor(31, 119, 180), xs(|m| m.policy_loss)),
                    (
                        "value (WDL CE)",
                        RGBColor(214, 39, 40),
                        xs(|m| m.value_loss),
                    ),
                ],
            )?;
            let lower = areas[1].split_evenly((1, 2));
            draw_lines(
                &lower[0],
                "Learning rate",
                "step",
                "lr",
                &[("lr", RGBColor(44, 160, 44), xs(|m| m.lr))],
            )?;
            draw_lines(
                &lower[1],
                "Gradient norm (before clipping)",
                "step",
                "L2 norm",
                &[("grad norm", RGBColor(148, 103, 189), xs(|m| m.grad_norm))],
            )
        })?;
        written.push(path);
    }

    if !ratings.is_empty() {
        let path = out_dir.join("elo.png");
        write_png(&path, (1000, 900), |root| {
            let areas = root.split_evenly((2, 1));
            draw_ratings(&areas[0], ratings)?;
            draw_scores(&areas[1], ratings)
        })?;
        written.push(path);
    }
    Ok(written)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An opponent has one colour in both panels (its reference line above, its score curve
    /// below), distinct opponents distinct colours, none the networks' own.
    #[test]
    fn each_opponent_has_one_colour_in_both_panels() {
        let reference = |name: &str| Reference {
            name: name.into(),
            elo: 900.0,
            error: 100.0,
        };
        let curve = |name: &str| ScoreCurve {
            opponent: name.into(),
            points: Vec::new(),
        };
        let ratings = RunRatings {
            anchor: "random".into(),
            networks: Vec::new(),
            references: vec![reference("fsf[nodes=1000]"), reference("alphabeta:2")],
            gates: Vec::new(),
            scores: vec![
                curve("random"),
                curve("alphabeta:2"),
                curve("fsf[nodes=1000]"),
            ],
        };
        let colours: Vec<RGBColor> = ["random", "alphabeta:2", "fsf[nodes=1000]"]
            .iter()
            .map(|n| opponent_colour(&ratings, n))
            .collect();
        for (i, c) in colours.iter().enumerate() {
            assert_ne!(*c, COLOURS[0]);
            for d in &colours[i + 1..] {
                assert_ne!(c, d);
            }
        }
        // The order of the panels' lists does not matter: one colour per name.
        let swapped = RunRatings {
            references: ratings.references.iter().rev().cloned().collect(),
            scores: ratings.scores.iter().rev().cloned().collect(),
            ..ratings.clone()
        };
        for n in ["random", "alphabeta:2", "fsf[nodes=1000]"] {
            assert_eq!(opponent_colour(&ratings, n), opponent_colour(&swapped, n));
        }
    }

    #[test]
    fn axes_are_readable_on_flat_and_tiny_series() {
        // A single generation is shown two generations wide, not 0.999–1.001.
        let (lo, hi) = generation_range([1.0].into_iter());
        assert!(lo <= 0.0 && hi >= 2.0, "{lo}..{hi}");
        // A flat rating spans 100 Elo around it.
        let (lo, hi) = axis_range([50.0, 50.0].into_iter(), Axis::Span(100.0));
        assert!(lo <= 0.0 && hi >= 100.0, "{lo}..{hi}");
        // A wide one gets a 5% margin and no more.
        let (lo, hi) = axis_range([-300.0, 700.0].into_iter(), Axis::Span(100.0));
        assert_eq!((lo, hi), (-350.0, 750.0));
        // Losses, lr and norms start at 0, a constant lr included.
        let (lo, hi) = axis_range([0.02, 0.02].into_iter(), Axis::FromZero);
        assert_eq!(lo, 0.0);
        assert!((hi - 0.021).abs() < 1e-12);
        assert_eq!(axis_range([].into_iter(), Axis::FromZero), (0.0, 1.0));
        assert_eq!(
            axis_range([f64::NAN, 5.0].into_iter(), Axis::FromZero),
            (0.0, 5.25)
        );
        // Huge values keep the axis finite.
        let (lo, hi) = axis_range([-1e308, 1e308].into_iter(), Axis::Span(100.0));
        assert!(lo.is_finite() && hi.is_finite() && hi > lo, "{lo}..{hi}");
    }

    #[test]
    fn a_diverged_loss_is_plotted() {
        let dir = tempfile::tempdir().unwrap();
        let paths = yari_io::RunPaths::new(dir.path());
        let mut writer = crate::metrics::MetricsWriter::open(&paths.metrics_file()).unwrap();
        for (step, loss) in [(1, 3.0), (2, 1e308), (3, -1e308), (4, f64::INFINITY)] {
            writer
                .append(&crate::metrics::StepMetrics {
                    step,
                    loss,
                    lr: 0.02,
                    grad_norm: 1e300,
                    ..Default::default()
                })
                .unwrap();
        }
        drop(writer);
        let files = plot_run(dir.path(), &RunRatings::default()).unwrap();
        assert_eq!(files, [paths.plots_dir().join("training.png")]);
    }

    #[test]
    fn elo_png_is_drawn_and_replaced_whole() {
        let dir = tempfile::tempdir().unwrap();
        let ratings = RunRatings {
            anchor: "random".into(),
            networks: vec![
                RatedGeneration {
                    generation: 0,
                    elo: 40.0,
                    error: 90.0,
                },
                RatedGeneration {
                    generation: 6,
                    elo: 420.0,
                    error: 75.0,
                },
            ],
            references: vec![
                Reference {
                    name: "random".into(),
                    elo: 0.0,
                    error: 0.0,
                },
                Reference {
                    name: "fsf[nodes=1000]".into(),
                    elo: 610.0,
                    error: 120.0,
                },
            ],
            gates: vec![
                GateMark {
                    generation: 1,
                    promoted: false,
                },
                GateMark {
                    generation: 2,
                    promoted: true,
                },
            ],
            scores: vec![ScoreCurve {
                opponent: "fsf[nodes=1000]".into(),
                points: vec![ScorePoint {
                    generation: 6,
                    score: 0.25,
                    low: 0.1,
                    high: 0.47,
                }],
            }],
        };
        let files = plot_run(dir.path(), &ratings).unwrap();
        assert_eq!(files, [dir.path().join("plots").join("elo.png")]);
        let bytes = std::fs::read(&files[0]).unwrap();
        assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n");
        // No temporary file is left beside it.
        let names: Vec<_> = std::fs::read_dir(dir.path().join("plots"))
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, ["elo.png"]);
        assert!(plot_run(dir.path(), &RunRatings::default())
            .unwrap()
            .is_empty());
    }
}
