//! The two random draws search needs, written out so results only depend on the RNG stream
//! (no distribution crate whose algorithms could change between versions).

use rand::Rng;

/// One standard Gumbel(0, 1) sample, `-ln(-ln U)`.
pub fn gumbel<R: Rng + ?Sized>(rng: &mut R) -> f32 {
    // Keeping U away from 0 and 1 keeps both logarithms finite.
    let u: f64 = rng.random::<f64>().clamp(1e-12, 1.0 - 1e-12);
    (-(-u.ln()).ln()) as f32
}

/// A standard normal sample (Box-Muller).
fn normal<R: Rng + ?Sized>(rng: &mut R) -> f64 {
    let u1: f64 = rng.random::<f64>().max(1e-300);
    let u2: f64 = rng.random();
    (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
}

/// A Gamma(alpha, 1) sample (Marsaglia and Tsang; alpha < 1 by the usual boost).
fn gamma<R: Rng + ?Sized>(rng: &mut R, alpha: f64) -> f64 {
    if alpha < 1.0 {
        let u: f64 = rng.random::<f64>().max(1e-300);
        return gamma(rng, alpha + 1.0) * u.powf(1.0 / alpha);
    }
    let d = alpha - 1.0 / 3.0;
    let c = 1.0 / (9.0 * d).sqrt();
    loop {
        let x = normal(rng);
        let v = 1.0 + c * x;
        if v <= 0.0 {
            continue;
        }
        let v = v * v * v;
        let u: f64 = rng.random();
        if u < 1.0 - 0.0331 * x * x * x * x || u.ln() < 0.5 * x * x + d * (1.0 - v + v.ln()) {
            return d * v;
        }
    }
}

/// A sample of a symmetric Dirichlet(alpha) over `n` outcomes.
pub fn dirichlet<R: Rng + ?Sized>(rng: &mut R, alpha: f32, n: usize) -> Vec<f32> {
    let mut xs: Vec<f64> = (0..n).map(|_| gamma(rng, alpha as f64)).collect();
    let sum: f64 = xs.iter().sum();
    if sum > 0.0 && sum.is_finite() {
        xs.iter_mut().for_each(|x| *x /= sum);
    } else {
        // Tiny alphas can underflow every draw; any point of the simplex will do then.
        xs.iter_mut().for_each(|x| *x = 1.0 / n as f64);
    }
    xs.into_iter().map(|x| x as f32).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand_chacha::ChaCha8Rng;

    #[test]
    fn dirichlet_is_a_distribution_with_the_right_mean() {
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        let mut mean = [0.0f64; 4];
        for _ in 0..4000 {
            let d = dirichlet(&mut rng, 0.3, 4);
            assert!((d.iter().sum::<f32>() - 1.0).abs() < 1e-4);
            assert!(d.iter().all(|&x| (0.0..=1.0).contains(&x)));
            for (m, x) in mean.iter_mut().zip(&d) {
                *m += *x as f64 / 4000.0;
            }
        }
        for m in mean {
            assert!((m - 0.25).abs() < 0.03, "mean {m}");
        }
    }

    #[test]
    fn gumbel_has_the_euler_mascheroni_mean() {
        let mut rng = ChaCha8Rng::seed_from_u64(2);
        let n = 20000;
        let mean: f64 = (0..n).map(|_| gumbel(&mut rng) as f64).sum::<f64>() / n as f64;
        assert!((mean - 0.5772).abs() < 0.03, "mean {mean}");
    }
}
