//! Match statistics: Elo with a 95% interval, likelihood of superiority, and the SPRT.
//!
//! Elo is logistic: a score `s` means `-400 log10(1/s - 1)` Elo (0.75 ↔ +190.85). The error
//! bar is the trinomial one: per-game variance of the W/D/L scores around the mean, a normal
//! interval on the score, mapped through the logistic curve.
//!
//! The SPRT is fishtest's GSPRT: the generalised log-likelihood ratio of the multinomial
//! results under the two hypotheses `score = L(elo0)` and `score = L(elo1)`, each taken as the
//! maximum-likelihood distribution with that expected score (fishtest's `LLR_logistic` with
//! `MLE_expected`, zero counts regularised to 1e-3). It runs on the pentanomial model (game
//! pairs: same opening, colours swapped; fishtest's default) or on the trinomial one.
//! [`llr_normal_approx`] is fishtest's Brownian approximation `LLR_alt2`, kept for reference.

use serde::{Deserialize, Serialize};

/// Two-sided 95% normal quantile.
pub const Z95: f64 = 1.959_963_984_540_054;

/// Expected score of a player `elo` above its opponent (logistic model).
pub fn score_from_elo(elo: f64) -> f64 {
    1.0 / (1.0 + 10f64.powf(-elo / 400.0))
}

/// Elo difference for an expected score; ±∞ at 1 and 0.
pub fn elo_from_score(score: f64) -> f64 {
    if score <= 0.0 {
        f64::NEG_INFINITY
    } else if score >= 1.0 {
        f64::INFINITY
    } else {
        -400.0 * (1.0 / score - 1.0).log10()
    }
}

/// The error function: the Maclaurin series near zero, Abramowitz & Stegun 7.1.26 elsewhere
/// (|error| < 1.5e-7, plenty for a likelihood of superiority; std has no `erf`).
pub fn erf(x: f64) -> f64 {
    if x.abs() < 0.5 {
        // Maclaurin series: accurate and cheap near zero where 7.1.26 is relatively worst.
        let x2 = x * x;
        let mut term = x;
        let mut sum = x;
        for n in 1..30 {
            term *= -x2 / n as f64;
            sum += term / (2 * n + 1) as f64;
        }
        return sum * std::f64::consts::FRAC_2_SQRT_PI;
    }
    let sign = x.signum();
    let x = x.abs();
    let t = 1.0 / (1.0 + 0.327_591_1 * x);
    let poly = t
        * (0.254_829_592
            + t * (-0.284_496_736
                + t * (1.421_413_741 + t * (-1.453_152_027 + t * 1.061_405_429))));
    sign * (1.0 - poly * (-x * x).exp())
}

/// Standard normal CDF.
pub fn phi(x: f64) -> f64 {
    0.5 * (1.0 + erf(x / std::f64::consts::SQRT_2))
}

/// Wins, draws and losses from one player's point of view.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Wdl {
    pub wins: u64,
    pub draws: u64,
    pub losses: u64,
}

/// An Elo estimate with its 95% interval.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct EloEstimate {
    #[serde(with = "json_f64")]
    pub elo: f64,
    #[serde(with = "json_f64")]
    pub low: f64,
    #[serde(with = "json_f64")]
    pub high: f64,
}

impl Wdl {
    pub fn new(wins: u64, draws: u64, losses: u64) -> Wdl {
        Wdl {
            wins,
            draws,
            losses,
        }
    }

    pub fn games(&self) -> u64 {
        self.wins + self.draws + self.losses
    }

    /// Adds one game scored 1, ½ or 0.
    pub fn add(&mut self, score: f64) {
        if score > 0.75 {
            self.wins += 1;
        } else if score < 0.25 {
            self.losses += 1;
        } else {
            self.draws += 1;
        }
    }

    /// Mean score per game (½ when no game was played).
    pub fn score(&self) -> f64 {
        let n = self.games();
        if n == 0 {
            return 0.5;
        }
        (self.wins as f64 + 0.5 * self.draws as f64) / n as f64
    }

    /// Variance of a single game's score (trinomial, population form).
    pub fn per_game_variance(&self) -> f64 {
        let n = self.games() as f64;
        if n == 0.0 {
            return 0.0;
        }
        let s = self.score();
        (self.wins as f64 * (1.0 - s).powi(2)
            + self.draws as f64 * (0.5 - s).powi(2)
            + self.losses as f64 * s.powi(2))
            / n
    }

    /// Elo difference and its 95% interval.
    ///
    /// The interval is Wilson's score interval with the trinomial per-game variance in place
    /// of the binomial one (the same thing when there are no draws). Unlike the plain normal
    /// interval it stays informative at the extremes a baseline match often ends in: 20-0-0
    /// gives a lower bound of +287 Elo instead of +∞, 1-0-19 an interval inside (0, 1).
    pub fn elo(&self) -> EloEstimate {
        let n = self.games() as f64;
        let s = self.score();
        if n == 0.0 {
            let e = elo_from_score(s);
            return EloEstimate {
                elo: e,
                low: e,
                high: e,
            };
        }
        let (low, high) = self.score_interval();
        EloEstimate {
            elo: elo_from_score(s),
            low: elo_from_score(low),
            high: elo_from_score(high),
        }
    }

    /// The 95% interval of the score: Wilson's score interval with the trinomial per-game
    /// variance (see [`Wdl::elo`], which maps it to Elo). No games: the point ½.
    pub fn score_interval(&self) -> (f64, f64) {
        let n = self.games() as f64;
        if n == 0.0 {
            return (0.5, 0.5);
        }
        let z2 = Z95 * Z95;
        let shrink = 1.0 + z2 / n;
        let centre = (self.score() + z2 / (2.0 * n)) / shrink;
        let half = Z95 / shrink * (self.per_game_variance() / n + z2 / (4.0 * n * n)).sqrt();
        ((centre - half).max(0.0), (centre + half).min(1.0))
    }

    /// Likelihood of superiority: the probability that the player is stronger, from wins and
    /// losses only (draws carry no information about who is better).
    pub fn los(&self) -> f64 {
        let decisive = (self.wins + self.losses) as f64;
        if decisive == 0.0 {
            return 0.5;
        }
        0.5 * (1.0 + erf((self.wins as f64 - self.losses as f64) / (2.0 * decisive).sqrt()))
    }

    /// The same results seen from the other player.
    pub fn flipped(&self) -> Wdl {
        Wdl::new(self.losses, self.draws, self.wins)
    }

    /// Counts in fishtest's order, lowest score first: `[L, D, W]`.
    pub fn trinomial(&self) -> [f64; 3] {
        [self.losses as f64, self.draws as f64, self.wins as f64]
    }
}

/// Game-pair results: `counts[k]` pairs where the player scored `k / 2` points in total over
/// the pair (LL, LD+DL, LW+DD+WL, DW+WD, WW — fishtest's pentanomial order).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Pentanomial {
    pub counts: [u64; 5],
}

impl Pentanomial {
    /// Adds a pair whose two games scored `first` and `second` (each 1, ½ or 0).
    pub fn add_pair(&mut self, first: f64, second: f64) {
        let k = ((first + second) * 2.0).round().clamp(0.0, 4.0) as usize;
        self.counts[k] += 1;
    }

    pub fn pairs(&self) -> u64 {
        self.counts.iter().sum()
    }

    pub fn as_f64(&self) -> [f64; 5] {
        self.counts.map(|c| c as f64)
    }
}

/// Which outcome model the SPRT uses.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SprtModel {
    /// Single games (L, D, W).
    Trinomial,
    /// Game pairs on the same opening with colours swapped: removes the opening's bias from
    /// the variance, as fishtest does. The default.
    #[default]
    Pentanomial,
}

/// SPRT parameters: H0 `elo = elo0` against H1 `elo = elo1` (logistic Elo), with error
/// rates `alpha` (false H1) and `beta` (false H0).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct SprtConfig {
    pub elo0: f64,
    pub elo1: f64,
    pub alpha: f64,
    pub beta: f64,
    pub model: SprtModel,
}

/// Where the SPRT stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SprtDecision {
    Continue,
    AcceptH0,
    AcceptH1,
}

/// The LLR and its stopping bounds.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct SprtStatus {
    #[serde(with = "json_f64")]
    pub llr: f64,
    pub lower: f64,
    pub upper: f64,
    pub decision: SprtDecision,
}

impl SprtConfig {
    /// `alpha = beta = 0.05`, pentanomial.
    pub fn new(elo0: f64, elo1: f64) -> SprtConfig {
        SprtConfig {
            elo0,
            elo1,
            alpha: 0.05,
            beta: 0.05,
            model: SprtModel::Pentanomial,
        }
    }

    /// Wald's bounds: `(ln(β/(1−α)), ln((1−β)/α))`.
    pub fn bounds(&self) -> (f64, f64) {
        (
            (self.beta / (1.0 - self.alpha)).ln(),
            ((1.0 - self.beta) / self.alpha).ln(),
        )
    }

    /// The status for these results (the model picks which counts are used).
    pub fn status(&self, wdl: &Wdl, pairs: &Pentanomial) -> SprtStatus {
        let llr = match self.model {
            SprtModel::Trinomial => llr_logistic(self.elo0, self.elo1, &wdl.trinomial()),
            SprtModel::Pentanomial => llr_logistic(self.elo0, self.elo1, &pairs.as_f64()),
        };
        let (lower, upper) = self.bounds();
        let decision = if llr >= upper {
            SprtDecision::AcceptH1
        } else if llr <= lower {
            SprtDecision::AcceptH0
        } else {
            SprtDecision::Continue
        };
        SprtStatus {
            llr,
            lower,
            upper,
            decision,
        }
    }
}

/// Counts → (total, [(value, probability)]), values evenly spread over [0, 1]; empty cells
/// get 1e-3 so that no outcome has probability zero (fishtest's `regularize`).
fn results_to_pdf(counts: &[f64]) -> (f64, Vec<(f64, f64)>) {
    let reg: Vec<f64> = counts
        .iter()
        .map(|&c| if c == 0.0 { 1e-3 } else { c })
        .collect();
    let n: f64 = reg.iter().sum();
    let last = (reg.len() - 1) as f64;
    let pdf = reg
        .iter()
        .enumerate()
        .map(|(i, &c)| (i as f64 / last, c / n))
        .collect();
    (n, pdf)
}

fn mean_var(pdf: &[(f64, f64)]) -> (f64, f64) {
    let mean: f64 = pdf.iter().map(|(v, p)| v * p).sum();
    let var: f64 = pdf.iter().map(|(v, p)| p * (v - mean).powi(2)).sum();
    (mean, var)
}

/// The distribution closest to `pdf` (maximum likelihood) whose mean is `s`:
/// `p_i / (1 + x (v_i − s))` with `x` solving `Σ p_i (v_i − s) / (1 + x (v_i − s)) = 0`.
fn mle_expected(pdf: &[(f64, f64)], s: f64) -> Vec<(f64, f64)> {
    let a: Vec<f64> = pdf.iter().map(|(v, _)| v - s).collect();
    let max_a = a.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
    let min_a = a.iter().cloned().fold(f64::INFINITY, f64::min);
    // Needs values on both sides of s, which holds for 0 < s < 1 (regularised pdf).
    let f = |x: f64| -> f64 {
        pdf.iter()
            .zip(&a)
            .map(|((_, p), ai)| p * ai / (1.0 + x * ai))
            .sum()
    };
    // f decreases on (−1/max_a, −1/min_a): bisection cannot fail.
    let (mut lo, mut hi) = (-1.0 / max_a, -1.0 / min_a);
    for _ in 0..200 {
        let mid = 0.5 * (lo + hi);
        if mid <= lo || mid >= hi {
            break;
        }
        if f(mid) > 0.0 {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    let x = 0.5 * (lo + hi);
    pdf.iter()
        .zip(&a)
        .map(|(&(v, p), ai)| (v, p / (1.0 + x * ai)))
        .collect()
}

/// fishtest's `LLR_logistic`: the generalised log-likelihood ratio of H1 (`elo1`) over H0
/// (`elo0`) for `counts` in ascending score order — `[L, D, W]` or the pentanomial
/// `[LL, LD+DL, LW+DD+WL, DW+WD, WW]`. Zero when there are no results.
pub fn llr_logistic(elo0: f64, elo1: f64, counts: &[f64]) -> f64 {
    if counts.len() < 2 || counts.iter().sum::<f64>() == 0.0 {
        return 0.0;
    }
    let (n, pdf) = results_to_pdf(counts);
    let (s0, s1) = (score_from_elo(elo0), score_from_elo(elo1));
    let p0 = mle_expected(&pdf, s0);
    let p1 = mle_expected(&pdf, s1);
    n * pdf
        .iter()
        .zip(p0.iter().zip(&p1))
        .map(|((_, p), ((_, q0), (_, q1)))| p * (q1.ln() - q0.ln()))
        .sum::<f64>()
}

/// fishtest's `LLR_alt2`, the Brownian-motion approximation of the GSPRT LLR:
/// `N (s1 − s0)(2 s̄ − s0 − s1) / (2 σ²)` with the sample mean and variance.
pub fn llr_normal_approx(elo0: f64, elo1: f64, counts: &[f64]) -> f64 {
    if counts.len() < 2 || counts.iter().sum::<f64>() == 0.0 {
        return 0.0;
    }
    let (n, pdf) = results_to_pdf(counts);
    let (s0, s1) = (score_from_elo(elo0), score_from_elo(elo1));
    let (s, var) = mean_var(&pdf);
    n * (s1 - s0) * (2.0 * s - s0 - s1) / var / 2.0
}

/// Serde for Elo numbers that may be infinite (a 100% or 0% score): written as `null` when
/// not finite (JSON has no infinity), read back from `null` as NaN, so such records still
/// parse. W/D/L beside them say which infinity it was.
pub mod json_f64 {
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(value: &f64, s: S) -> Result<S::Ok, S::Error> {
        if value.is_finite() {
            s.serialize_f64(*value)
        } else {
            s.serialize_none()
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
        Ok(Option::<f64>::deserialize(d)?.unwrap_or(f64::NAN))
    }
}
