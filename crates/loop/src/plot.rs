//! The run's plots. Drawing is yari-train's; what the rating panel shows is fitted here, where
//! the arena is at hand: the Bradley-Terry list of `yari ratings` over every game of the run
//! (so the plot and the command agree), the gate decisions from `summary.json` and the rung
//! scores from `ratings.jsonl`, each with its 95% interval.

use std::path::{Path, PathBuf};

use yari_arena::{fit_ratings, read_run_games, ArenaError, Wdl};
use yari_train::plot::{GateMark, RatedGeneration, Reference, RunRatings, ScoreCurve, ScorePoint};

use crate::{LoopError, PlayerKey, RunDir};

/// The rating list's anchor, as in `yari ratings`.
pub const ANCHOR: &str = "random";

/// What `elo.png` shows for the run in `run`.
pub fn run_ratings(run: &RunDir) -> Result<RunRatings, LoopError> {
    let games = match read_run_games(run.root()) {
        Ok((games, _skipped)) => games,
        Err(ArenaError::Io { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => {
            Vec::new()
        }
        Err(e) => return Err(e.into()),
    };
    let list = fit_ratings(&games, ANCHOR);
    let mut out = RunRatings {
        anchor: list.anchor.clone(),
        ..RunRatings::default()
    };
    for r in &list.ratings {
        match PlayerKey::from_recorded(&r.name).generation_of() {
            Some(generation) => out.networks.push(RatedGeneration {
                generation,
                elo: r.elo,
                error: r.error,
            }),
            None => out.references.push(Reference {
                name: r.name.clone(),
                elo: r.elo,
                error: r.error,
            }),
        }
    }
    // References stay strongest first, as in the rating list.
    out.networks.sort_by_key(|n| n.generation);
    out.gates = run
        .read_summaries()?
        .iter()
        .filter(|s| s.gate_score.is_some())
        .filter_map(|s| {
            Some(GateMark {
                generation: PlayerKey::of_model(&s.candidate).generation_of()?,
                promoted: s.promoted,
            })
        })
        .collect();
    for entry in run.read_ratings()?.records {
        let wdl = Wdl::new(entry.wins, entry.draws, entry.losses);
        if wdl.games() == 0 {
            continue;
        }
        let (low, high) = wdl.score_interval();
        let point = ScorePoint {
            generation: entry.generation,
            score: wdl.score(),
            low,
            high,
        };
        let curve = match out.scores.iter().position(|c| c.opponent == entry.opponent) {
            Some(i) => &mut out.scores[i],
            None => {
                out.scores.push(ScoreCurve {
                    opponent: entry.opponent.clone(),
                    points: Vec::new(),
                });
                out.scores.last_mut().expect("just pushed")
            }
        };
        // A generation rated twice against one rung (a resumed phase): the last match counts.
        curve.points.retain(|p| p.generation != point.generation);
        curve.points.push(point);
    }
    for curve in &mut out.scores {
        curve.points.sort_by_key(|p| p.generation);
    }
    Ok(out)
}

/// Draws `RUN_DIR/plots/training.png` and `elo.png` (see [`yari_train::plot::plot_run`]) and
/// returns the files written.
pub fn plot_run(run_dir: &Path) -> Result<Vec<PathBuf>, LoopError> {
    let run = RunDir::new(run_dir);
    let ratings = run_ratings(&run)?;
    Ok(yari_train::plot::plot_run(run_dir, &ratings)?)
}
