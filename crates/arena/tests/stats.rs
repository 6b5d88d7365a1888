//! Elo, error bars, LOS and SPRT against known or independently computed values.
//!
//! The LLR references were computed outside this crate with fishtest's formula
//! (`LLR_logistic`: zero counts → 1e-3, MLE distribution with the hypothesised mean), the
//! trinomial ones a second way too, by maximising the constrained likelihood directly
//! (golden-section search over the one free probability); both agree to 1e-12.

use yari_arena::stats::{
    elo_from_score, erf, llr_logistic, llr_normal_approx, phi, score_from_elo, Z95,
};
use yari_arena::{Pentanomial, SprtConfig, SprtDecision, SprtModel, Wdl};

fn close(a: f64, b: f64, tol: f64) {
    assert!((a - b).abs() <= tol, "{a} vs {b} (tolerance {tol})");
}

#[test]
fn logistic_elo_known_values() {
    close(elo_from_score(0.75), 190.848_501_887_865, 1e-9);
    close(elo_from_score(0.25), -190.848_501_887_865, 1e-9);
    close(elo_from_score(0.5), 0.0, 1e-12);
    close(score_from_elo(190.848_501_887_865), 0.75, 1e-12);
    close(score_from_elo(400.0), 10.0 / 11.0, 1e-12);
    assert_eq!(elo_from_score(1.0), f64::INFINITY);
    assert_eq!(elo_from_score(0.0), f64::NEG_INFINITY);
}

#[test]
fn erf_and_phi() {
    close(erf(0.0), 0.0, 1e-15);
    close(erf(0.3), 0.328_626_759_459_127_4, 1e-9);
    close(erf(1.7), 0.983_790_458_590_774_5, 2e-7);
    close(erf(-1.7), -0.983_790_458_590_774_5, 2e-7);
    close(phi(1.0), 0.841_344_746_068_542_9, 2e-7);
    close(phi(1.959_963_984_540_054), 0.975, 2e-7);
}

#[test]
fn score_elo_interval_and_los() {
    // 60 wins, 100 draws, 40 losses: score 0.55.
    let wdl = Wdl::new(60, 100, 40);
    close(wdl.score(), 0.55, 1e-15);
    // Per-game variance: (60·0.45² + 100·0.05² + 40·0.55²) / 200 = 0.1225.
    close(wdl.per_game_variance(), 0.1225, 1e-15);
    let e = wdl.elo();
    close(e.elo, 34.860_070_287_560_08, 1e-9);
    // Wilson with the trinomial variance: centre (0.55 + z²/400) / (1 + z²/200),
    // half-width z / (1 + z²/200) · sqrt(0.1225/200 + z²/160000).
    let (z2, n) = (Z95 * Z95, 200.0);
    let centre = (0.55 + z2 / (2.0 * n)) / (1.0 + z2 / n);
    let half = Z95 / (1.0 + z2 / n) * (0.1225 / n + z2 / (4.0 * n * n)).sqrt();
    close(e.low, elo_from_score(centre - half), 1e-9);
    close(e.high, elo_from_score(centre + half), 1e-9);
    // Close to the plain normal interval (0.55 ± 0.0485) with this many games.
    assert!(
        (e.low - 1.04).abs() < 2.0 && (e.high - 69.36).abs() < 2.0,
        "{e:?}"
    );
    // LOS = Φ((W−L)/sqrt(W+L)) = Φ(2) = 0.97725.
    close(wdl.los(), 0.977_249_868_051_820_8, 2e-7);
    // 3:1 score ↔ +190.8 Elo.
    close(Wdl::new(3, 0, 1).elo().elo, 190.848_501_887_865, 1e-9);
    close(Wdl::new(2, 2, 0).elo().elo, 190.848_501_887_865, 1e-9);
}

#[test]
fn degenerate_results() {
    // Ten draws do not prove the players equal: Wilson's interval is 0.5 ± z²/(20 + 2z²).
    let draws = Wdl::new(0, 10, 0);
    let e = draws.elo();
    let half = Z95 * Z95 / (20.0 + 2.0 * Z95 * Z95);
    assert_eq!(e.elo, 0.0);
    close(e.low, elo_from_score(0.5 - half), 1e-9);
    close(e.high, -e.low, 1e-9);
    assert!(e.high > 90.0 && e.high < 110.0, "{e:?}");
    close(draws.los(), 0.5, 0.0);
    let none = Wdl::default();
    assert_eq!(none.score(), 0.5);
    assert_eq!(none.elo().elo, 0.0);
    let all_wins = Wdl::new(5, 0, 0);
    assert_eq!(all_wins.elo().elo, f64::INFINITY);
    // A clean sweep still bounds the difference from below: Wilson's n / (n + z²) for 20-0-0
    // is a score of 0.839, +287 Elo; the sweep the other way mirrors it.
    let sweep = Wdl::new(20, 0, 0).elo();
    close(sweep.low, elo_from_score(20.0 / (20.0 + Z95 * Z95)), 1e-9);
    assert!((sweep.low - 286.6).abs() < 1.0, "{sweep:?}");
    assert_eq!(sweep.high, f64::INFINITY);
    let swept = Wdl::new(0, 0, 20).elo();
    assert_eq!(swept.low, f64::NEG_INFINITY);
    close(swept.high, -sweep.low, 1e-9);
    // One win in twenty: both ends finite, the estimate inside.
    let one = Wdl::new(1, 0, 19).elo();
    assert!(one.low.is_finite() && one.high.is_finite());
    assert!(one.low < one.elo && one.elo < one.high, "{one:?}");
    // The score interval is the same interval before the Elo map: 20-0-0 is [0.839, 1].
    let (low, high) = Wdl::new(20, 0, 0).score_interval();
    close(low, 20.0 / (20.0 + Z95 * Z95), 1e-12);
    assert_eq!(high, 1.0);
    let (low, high) = Wdl::new(7, 6, 7).score_interval();
    assert!(low < 0.5 && high > 0.5 && (0.5 - low - (high - 0.5)).abs() < 1e-12);
    assert_eq!(Wdl::default().score_interval(), (0.5, 0.5));
}

#[test]
fn llr_trinomial_matches_reference() {
    // counts are [L, D, W]
    let cases: [([f64; 3], f64, f64, f64); 5] = [
        ([40.0, 100.0, 60.0], 0.0, 10.0, 0.988_082_775_431_315_5),
        ([60.0, 100.0, 40.0], 0.0, 10.0, -1.312_676_608_557_596_7),
        ([10.0, 20.0, 30.0], 0.0, 5.0, 0.423_169_446_897_124_8),
        ([0.0, 50.0, 0.0], 0.0, 10.0, -1.452_273_831_852_962_9),
        ([100.0, 0.0, 120.0], -5.0, 5.0, 0.575_648_889_643_352),
    ];
    for (counts, elo0, elo1, want) in cases {
        close(llr_logistic(elo0, elo1, &counts), want, 1e-9);
    }
}

#[test]
fn llr_pentanomial_matches_reference() {
    let cases: [([f64; 5], f64, f64, f64); 3] = [
        (
            [5.0, 30.0, 80.0, 40.0, 10.0],
            0.0,
            10.0,
            1.124_530_003_600_521_5,
        ),
        (
            [1.0, 10.0, 40.0, 25.0, 4.0],
            0.0,
            5.0,
            0.802_214_790_597_982_6,
        ),
        (
            [0.0, 0.0, 12.0, 0.0, 0.0],
            0.0,
            10.0,
            -0.344_006_441_936_917_3,
        ),
    ];
    for (counts, elo0, elo1, want) in cases {
        close(llr_logistic(elo0, elo1, &counts), want, 1e-9);
    }
}

#[test]
fn llr_normal_approximation_by_hand() {
    // [40, 100, 60]: s = 0.55, σ² = 0.1225; s0 = 0.5, s1 = L(10) = 0.514387...
    // LLR ≈ N (s1 − s0)(2s − s0 − s1) / (2σ²).
    let s1 = score_from_elo(10.0);
    let want = 200.0 * (s1 - 0.5) * (1.1 - 0.5 - s1) / (2.0 * 0.1225);
    close(
        llr_normal_approx(0.0, 10.0, &[40.0, 100.0, 60.0]),
        want,
        1e-12,
    );
    close(want, 1.005_491_712_957_966_1, 1e-9);
    // Close to the exact GSPRT value for results near the hypotheses.
    close(
        llr_normal_approx(0.0, 10.0, &[40.0, 100.0, 60.0]),
        llr_logistic(0.0, 10.0, &[40.0, 100.0, 60.0]),
        0.05,
    );
}

#[test]
fn sprt_bounds_and_decisions() {
    let sprt = SprtConfig {
        elo0: 0.0,
        elo1: 10.0,
        alpha: 0.05,
        beta: 0.05,
        model: SprtModel::Trinomial,
    };
    let (lo, hi) = sprt.bounds();
    close(lo, (0.05f64 / 0.95).ln(), 1e-15);
    close(hi, (0.95f64 / 0.05).ln(), 1e-15);
    close(hi, 2.944_438_979_166_440_5, 1e-12);
    let none = Pentanomial::default();
    assert_eq!(
        sprt.status(&Wdl::new(60, 100, 40), &none).decision,
        SprtDecision::Continue
    );
    assert_eq!(
        sprt.status(&Wdl::new(300, 400, 100), &none).decision,
        SprtDecision::AcceptH1
    );
    assert_eq!(
        sprt.status(&Wdl::new(100, 400, 300), &none).decision,
        SprtDecision::AcceptH0
    );
    // Draws only: no evidence of superiority; enough of them reject H1.
    assert_eq!(
        sprt.status(&Wdl::new(0, 500, 0), &none).decision,
        SprtDecision::AcceptH0
    );
    assert!(sprt.status(&Wdl::new(0, 500, 0), &none).llr < 0.0);
    assert_eq!(sprt.status(&Wdl::default(), &none).llr, 0.0);
}

#[test]
fn pentanomial_pairs() {
    let mut p = Pentanomial::default();
    p.add_pair(1.0, 1.0);
    p.add_pair(1.0, 0.0);
    p.add_pair(0.5, 0.5);
    p.add_pair(0.5, 1.0);
    p.add_pair(0.0, 0.5);
    assert_eq!(p.counts, [0, 1, 2, 1, 1]);
    assert_eq!(p.pairs(), 5);
}
