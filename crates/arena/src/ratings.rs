//! One rating list over every game of a run.
//!
//! Model: Bradley–Terry in logistic Elo, `P(i beats j) = 1 / (1 + 10^((r_j − r_i)/400))`,
//! a draw counting as half a win and half a loss (as Ordo does). Ratings are the maximum
//! likelihood estimate, found by Newton's method on the concave log-likelihood, with the
//! anchor (`random` when it played, else the alphabetically first player) fixed at 0. Error
//! bars are ±1.96 standard errors from the inverse of the observed information (the negated
//! Hessian) at the optimum, so they are relative to the anchor.
//!
//! A player who won (or lost) every game has no finite MLE; to keep every rating finite,
//! each pair of players who met gets one virtual draw (BayesElo's "prior" idea, weight 1).
//! Players with no chain of games to the anchor cannot be placed and are listed as unrated.
//!
//! Run layout: game files are `RUN_DIR/arena/*.jsonl` (one [`GameRecord`] per line; any
//! number of files, e.g. one per gating match); the gating ledger is `RUN_DIR/ledger.jsonl`
//! (outside `arena/`, so it is never read as games).

use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::error::ArenaError;
use crate::game::GameRecord;
use crate::jsonl;
use crate::stats::Wdl;

/// The folder of a run that holds game files ([`yari_io::layout::ARENA_DIR`]).
pub fn games_dir(run_dir: &Path) -> PathBuf {
    yari_io::RunPaths::new(run_dir).arena_dir()
}

/// The gating ledger of a run ([`yari_io::layout::LEDGER_FILE`]).
pub fn ledger_path(run_dir: &Path) -> PathBuf {
    yari_io::RunPaths::new(run_dir).ledger_file()
}

/// Natural units (ln-odds) per Elo point.
const NAT_PER_ELO: f64 = std::f64::consts::LN_10 / 400.0;

/// One line of the rating list.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Rating {
    pub name: String,
    pub elo: f64,
    /// Half-width of the 95% interval, relative to the anchor (0 for the anchor itself).
    pub error: f64,
    pub games: u64,
    pub wins: u64,
    pub draws: u64,
    pub losses: u64,
    /// Mean score over its games.
    pub score: f64,
}

/// A fitted rating list, strongest first.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RatingList {
    pub anchor: String,
    pub ratings: Vec<Rating>,
    /// Players with no chain of games to the anchor.
    pub unrated: Vec<String>,
    pub games: usize,
}

impl RatingList {
    /// A plain-text table.
    pub fn to_table(&self) -> String {
        let width = self
            .ratings
            .iter()
            .map(|r| r.name.len())
            .max()
            .unwrap_or(6)
            .max(6);
        let mut out = format!(
            "{:>4}  {:<width$}  {:>7}  {:>6}  {:>6}  {:>6}  {:>6}  {:>6}  {:>6}\n",
            "rank", "player", "elo", "±95%", "games", "score", "wins", "draws", "losses"
        );
        for (i, r) in self.ratings.iter().enumerate() {
            out.push_str(&format!(
                "{:>4}  {:<width$}  {:>+7.1}  {:>6.1}  {:>6}  {:>5.1}%  {:>6}  {:>6}  {:>6}\n",
                i + 1,
                r.name,
                // What prints as 0.0 is 0: not "-0.0" for the anchor or a hair below it.
                if r.elo.abs() < 0.05 { 0.0 } else { r.elo },
                r.error,
                r.games,
                100.0 * r.score,
                r.wins,
                r.draws,
                r.losses
            ));
        }
        out.push_str(&format!(
            "{} games; anchor {} = 0; Bradley-Terry MLE, draws as half points\n",
            self.games, self.anchor
        ));
        if !self.unrated.is_empty() {
            out.push_str(&format!(
                "unrated (no games connecting them to the anchor): {}\n",
                self.unrated.join(", ")
            ));
        }
        out
    }
}

/// Reads every game of a run: `RUN_DIR/arena/*.jsonl`, files in name order. Torn or foreign
/// lines are skipped; the second value counts them.
pub fn read_run_games(run_dir: &Path) -> Result<(Vec<GameRecord>, usize), ArenaError> {
    let dir = games_dir(run_dir);
    let io = |source| ArenaError::Io {
        path: dir.clone(),
        source,
    };
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .map_err(io)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
        .collect();
    files.sort();
    let mut games = Vec::new();
    let mut skipped = 0;
    for file in files {
        let records: jsonl::Records<GameRecord> =
            jsonl::read(&file).map_err(|source| ArenaError::Io {
                path: file.clone(),
                source,
            })?;
        skipped += records.skipped();
        games.extend(records.records);
    }
    Ok((games, skipped))
}

/// Fits ratings to `games`, anchored at `anchor` if it played (else the alphabetically
/// first player).
pub fn fit_ratings(games: &[GameRecord], anchor: &str) -> RatingList {
    // Per-player results and per-pair aggregates (i < j: games, score of i).
    let mut results: BTreeMap<String, Wdl> = BTreeMap::new();
    for g in games {
        for name in [&g.white, &g.black] {
            let wdl = results.entry(name.clone()).or_default();
            wdl.add(g.score_of(name).unwrap_or(0.5));
        }
    }
    let names: Vec<String> = results.keys().cloned().collect();
    let index: HashMap<&str, usize> = names
        .iter()
        .enumerate()
        .map(|(i, n)| (n.as_str(), i))
        .collect();
    let mut pairs: BTreeMap<(usize, usize), (f64, f64)> = BTreeMap::new();
    for g in games {
        let (w, b) = (index[g.white.as_str()], index[g.black.as_str()]);
        if w == b {
            continue; // self-play carries no rating information
        }
        let sw = g.score_of(&g.white).unwrap_or(0.5);
        let (i, j, si) = if w < b { (w, b, sw) } else { (b, w, 1.0 - sw) };
        let e = pairs.entry((i, j)).or_insert((0.0, 0.0));
        e.0 += 1.0;
        e.1 += si;
    }
    // One virtual draw per pair that met.
    for e in pairs.values_mut() {
        e.0 += 1.0;
        e.1 += 0.5;
    }

    let anchor_name = if index.contains_key(anchor) {
        anchor.to_string()
    } else {
        names.first().cloned().unwrap_or_else(|| anchor.to_string())
    };
    let Some(&anchor_idx) = index.get(anchor_name.as_str()) else {
        return RatingList {
            anchor: anchor_name,
            ratings: Vec::new(),
            unrated: Vec::new(),
            games: games.len(),
        };
    };

    // Players connected to the anchor.
    let mut adjacent: Vec<BTreeSet<usize>> = vec![BTreeSet::new(); names.len()];
    for &(i, j) in pairs.keys() {
        adjacent[i].insert(j);
        adjacent[j].insert(i);
    }
    let mut connected = vec![false; names.len()];
    connected[anchor_idx] = true;
    let mut queue = VecDeque::from([anchor_idx]);
    while let Some(i) = queue.pop_front() {
        for &j in &adjacent[i] {
            if !connected[j] {
                connected[j] = true;
                queue.push_back(j);
            }
        }
    }
    // Free parameters: connected players other than the anchor.
    let free: Vec<usize> = (0..names.len())
        .filter(|&i| connected[i] && i != anchor_idx)
        .collect();
    let slot: HashMap<usize, usize> = free.iter().enumerate().map(|(k, &i)| (i, k)).collect();
    let m = free.len();
    let mut theta = vec![0.0f64; names.len()];
    let pair_list: Vec<(usize, usize, f64, f64)> = pairs
        .iter()
        .filter(|(&(i, _), _)| connected[i])
        .map(|(&(i, j), &(n, s))| (i, j, n, s))
        .collect();

    let information = |theta: &[f64]| -> (Vec<f64>, Vec<Vec<f64>>) {
        let mut grad = vec![0.0; m];
        let mut info = vec![vec![0.0; m]; m];
        for &(i, j, n, s) in &pair_list {
            let p = 1.0 / (1.0 + (theta[j] - theta[i]).exp());
            let g = s - n * p;
            let w = n * p * (1.0 - p);
            if let Some(&a) = slot.get(&i) {
                grad[a] += g;
                info[a][a] += w;
            }
            if let Some(&b) = slot.get(&j) {
                grad[b] -= g;
                info[b][b] += w;
            }
            if let (Some(&a), Some(&b)) = (slot.get(&i), slot.get(&j)) {
                info[a][b] -= w;
                info[b][a] -= w;
            }
        }
        (grad, info)
    };

    for _ in 0..200 {
        let (grad, info) = information(&theta);
        let Some(step) = solve(&info, &grad) else {
            break;
        };
        // Damped Newton: the likelihood is concave, a bounded step keeps early iterations
        // from overshooting when ratings are far apart.
        let largest = step.iter().fold(0.0f64, |a, s| a.max(s.abs()));
        let scale = if largest > 2.0 { 2.0 / largest } else { 1.0 };
        for (k, &i) in free.iter().enumerate() {
            theta[i] += scale * step[k];
        }
        if largest < 1e-10 {
            break;
        }
    }
    let (_, info) = information(&theta);
    let covariance = invert(&info);

    let mut ratings: Vec<Rating> = Vec::new();
    let mut unrated = Vec::new();
    for (i, name) in names.iter().enumerate() {
        if !connected[i] {
            unrated.push(name.clone());
            continue;
        }
        let error = match (slot.get(&i), &covariance) {
            (Some(&k), Some(cov)) => {
                1.959_963_984_540_054 * cov[k][k].max(0.0).sqrt() / NAT_PER_ELO
            }
            (None, _) => 0.0,
            (Some(_), None) => f64::NAN,
        };
        let wdl = results[name];
        ratings.push(Rating {
            name: name.clone(),
            elo: theta[i] / NAT_PER_ELO,
            error,
            games: wdl.games(),
            wins: wdl.wins,
            draws: wdl.draws,
            losses: wdl.losses,
            score: wdl.score(),
        });
    }
    ratings.sort_by(|a, b| b.elo.total_cmp(&a.elo).then_with(|| a.name.cmp(&b.name)));
    RatingList {
        anchor: anchor_name,
        ratings,
        unrated,
        games: games.len(),
    }
}

/// Solves `a x = b` by Gaussian elimination with partial pivoting; `None` if singular.
fn solve(a: &[Vec<f64>], b: &[f64]) -> Option<Vec<f64>> {
    let n = b.len();
    let mut m: Vec<Vec<f64>> = a
        .iter()
        .zip(b)
        .map(|(row, &bi)| {
            let mut r = row.clone();
            r.push(bi);
            r
        })
        .collect();
    for col in 0..n {
        let pivot = (col..n).max_by(|&x, &y| m[x][col].abs().total_cmp(&m[y][col].abs()))?;
        if m[pivot][col].abs() < 1e-300 {
            return None;
        }
        m.swap(col, pivot);
        let pivot_row = m[col].clone();
        for (row, r) in m.iter_mut().enumerate() {
            if row != col {
                let f = r[col] / pivot_row[col];
                if f != 0.0 {
                    for (x, p) in r[col..].iter_mut().zip(&pivot_row[col..]) {
                        *x -= f * p;
                    }
                }
            }
        }
    }
    Some((0..n).map(|i| m[i][n] / m[i][i]).collect())
}

/// The inverse of a square matrix, column by column; `None` if singular.
fn invert(a: &[Vec<f64>]) -> Option<Vec<Vec<f64>>> {
    let n = a.len();
    let mut columns = Vec::with_capacity(n);
    for c in 0..n {
        let mut e = vec![0.0; n];
        e[c] = 1.0;
        columns.push(solve(a, &e)?);
    }
    Some(
        (0..n)
            .map(|r| (0..n).map(|c| columns[c][r]).collect())
            .collect(),
    )
}

#[cfg(test)]
mod table_tests {
    use super::*;

    /// The anchor (and any rating that rounds to zero) prints as +0.0, never -0.0.
    #[test]
    fn a_zero_rating_prints_without_a_sign_flip() {
        let rating = |name: &str, elo: f64| Rating {
            name: name.into(),
            elo,
            error: 0.0,
            games: 2,
            wins: 1,
            draws: 0,
            losses: 1,
            score: 0.5,
        };
        let list = RatingList {
            anchor: "random".into(),
            ratings: vec![
                rating("gen-0001", 12.34),
                rating("random", -0.0),
                rating("gen-0000", -0.04),
            ],
            unrated: Vec::new(),
            games: 2,
        };
        let table = list.to_table();
        assert!(!table.contains("-0.0"), "{table}");
        assert!(table.contains("+12.3"), "{table}");
        assert_eq!(table.matches("   +0.0").count(), 2, "{table}");
    }
}
