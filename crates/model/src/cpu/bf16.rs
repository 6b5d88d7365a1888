//! The bf16 forward pass: bf16 weights and activations, f32 accumulation (AVX-512 BF16).
//!
//! Why: `vdpbf16ps` does 32 multiply-accumulates per instruction where an f32 FMA does 16, and
//! bf16 activations halve the bytes every layer moves. The convolution reads its input straight
//! from a zero-bordered board (11 x 9 squares per position, channels last), so there is no
//! im2col copy at all: the 7 squares of one rank are 7 consecutive rows of the padded board,
//! and a kernel tap is a fixed offset. One micro-kernel call computes one rank (7 squares) by
//! 32 output channels (14 accumulators) over all taps and input channel pairs, then applies
//! bias, skip connection and ReLU and writes f32 and/or bf16 outputs in the same pass.
//!
//! What it gained over the f32 path: `docs/experiments.md`, "Inference arithmetic". Agreement
//! with the f32 path: `tests/cpu_paths.rs`.
//!
//! Everything in this module that touches `core::arch` is only reached after
//! [`super::CpuPath::bf16_supported`] found `avx512f` and `avx512bf16` at run time.

use yari_rules::encoding::{FILES, RANKS};

use crate::net::SQUARES;

/// Files and ranks of the zero-bordered board.
pub(super) const PF: usize = FILES + 2;
pub(super) const PR: usize = RANKS + 2;
/// Squares of the zero-bordered board.
pub(super) const PSQ: usize = PR * PF;
/// Output channels per micro-kernel call (two 16-lane registers per row).
const NC: usize = 32;

/// Rounds `v` up to a multiple of [`NC`]: the channel stride of every buffer and weight.
pub(super) fn padded(v: usize) -> usize {
    v.div_ceil(NC) * NC
}

/// f32 to bf16, round to nearest even (what `vcvtneps2bf16` does; NaN stays NaN).
pub(super) fn to_bf16(v: f32) -> u16 {
    let bits = v.to_bits();
    if v.is_nan() {
        return ((bits >> 16) | 0x40) as u16;
    }
    let round = 0x7fff + ((bits >> 16) & 1);
    ((bits.wrapping_add(round)) >> 16) as u16
}

/// A convolution (3x3 or 1x1, batch norm folded) in the micro-kernel's layout.
#[derive(Clone, Debug)]
pub(super) struct ConvBf16 {
    /// `(dy, dx)` of each tap on the padded board, relative to the square above-left of the
    /// output square's padded position: `(0..3, 0..3)` for a 3x3, `[(1, 1)]` for a 1x1.
    taps: Vec<(usize, usize)>,
    /// Input channel pairs (`ceil(cin / 2)`).
    pairs: usize,
    /// Output channels, padded to a multiple of 32.
    cout_pad: usize,
    /// `[tap][pair][cout_pad][2]` bf16: one 64-byte load is 16 output channels x 2 inputs.
    weight: Vec<u16>,
    /// `[cout_pad]`, zero past the real channels.
    bias: Vec<f32>,
}

impl ConvBf16 {
    /// `weight` is `[taps * cin, cout]` f32 (row `tap * cin + ci`, the im2col layout).
    pub(super) fn new(
        taps: Vec<(usize, usize)>,
        cin: usize,
        cout: usize,
        weight: &[f32],
        bias: &[f32],
    ) -> Self {
        assert_eq!(weight.len(), taps.len() * cin * cout);
        let pairs = cin.div_ceil(2);
        let cout_pad = padded(cout);
        let mut w = vec![0u16; taps.len() * pairs * cout_pad * 2];
        for t in 0..taps.len() {
            for ci in 0..cin {
                for co in 0..cout {
                    let (pair, e) = (ci / 2, ci % 2);
                    w[((t * pairs + pair) * cout_pad + co) * 2 + e] =
                        to_bf16(weight[(t * cin + ci) * cout + co]);
                }
            }
        }
        let mut b = vec![0.0; cout_pad];
        b[..cout].copy_from_slice(bias);
        Self {
            taps,
            pairs,
            cout_pad,
            weight: w,
            bias: b,
        }
    }

    pub(super) fn taps3x3() -> Vec<(usize, usize)> {
        (0..3)
            .flat_map(|dy| (0..3).map(move |dx| (dy, dx)))
            .collect()
    }

    pub(super) fn cout_pad(&self) -> usize {
        self.cout_pad
    }

    /// Runs the layer over `n` positions.
    ///
    /// `input`: `n` padded boards, `[n][PSQ][cs_in]` bf16 with zero borders, `cs_in` even and
    /// at least `2 * pairs`. Outputs (each optional, at least one given): `out_f32`
    /// `[n][63][cout_pad]`, `out_bf16` padded boards `[n][PSQ][cout_pad]` (only interior
    /// squares written, so a zeroed buffer keeps its borders). With `skip`, what `out_f32`
    /// holds on entry (the residual stream) is added before the ReLU, in place.
    ///
    /// # Safety
    ///
    /// The CPU must support `avx512f` and `avx512bf16`.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx512f,avx512bf16")]
    #[allow(clippy::too_many_arguments)]
    pub(super) unsafe fn forward(
        &self,
        n: usize,
        input: &[u16],
        cs_in: usize,
        skip: bool,
        out_f32: Option<&mut [f32]>,
        out_bf16: Option<&mut [u16]>,
        relu: bool,
    ) {
        use core::arch::x86_64::*;
        let cp = self.cout_pad;
        assert!(cs_in.is_multiple_of(2) && cs_in >= 2 * self.pairs);
        assert!(input.len() >= n * PSQ * cs_in);
        // Every tap of every output square stays on the padded board: dy <= 2, dx + 6 <= 8.
        assert!(self.taps.iter().all(|&(dy, dx)| dy <= 2 && dx <= 2));
        assert!(!skip || out_f32.is_some(), "skip adds to out_f32");
        let f32_ptr = out_f32.map(|o| {
            assert!(o.len() >= n * SQUARES * cp);
            o.as_mut_ptr()
        });
        let bf_ptr = out_bf16.map(|o| {
            assert!(o.len() >= n * PSQ * cp);
            o.as_mut_ptr()
        });
        let zero = _mm512_setzero_ps();
        let w = self.weight.as_ptr();
        let pairs = self.pairs;
        for p in 0..n {
            let board = input.as_ptr().add(p * PSQ * cs_in);
            for r in 0..RANKS {
                for nc in (0..cp).step_by(NC) {
                    let mut acc = [[zero; 2]; FILES];
                    for (t, &(dy, dx)) in self.taps.iter().enumerate() {
                        // SAFETY (reads): row i of this tap is square (r + dy, i + dx) of the
                        // padded board, i < 7, so within [0, PSQ); its pairs read 2 * pairs
                        // <= cs_in values. Weights: tap t, pair kp, channels nc..nc + 32 lie
                        // inside [taps][pairs][cout_pad][2].
                        let a0 = board.add(((r + dy) * PF + dx) * cs_in);
                        let wt = w.add((t * pairs * cp + nc) * 2);
                        for kp in 0..pairs {
                            let wp = wt.add(kp * cp * 2);
                            let b0: __m512bh =
                                core::mem::transmute(_mm512_loadu_si512(wp as *const __m512i));
                            let b1: __m512bh = core::mem::transmute(_mm512_loadu_si512(
                                wp.add(32) as *const __m512i
                            ));
                            for (i, row) in acc.iter_mut().enumerate() {
                                let pair =
                                    (a0.add(i * cs_in + 2 * kp) as *const i32).read_unaligned();
                                let a: __m512bh = core::mem::transmute(_mm512_set1_epi32(pair));
                                row[0] = _mm512_dpbf16_ps(row[0], a, b0);
                                row[1] = _mm512_dpbf16_ps(row[1], a, b1);
                            }
                        }
                    }
                    for (i, row) in acc.iter().enumerate() {
                        let sq = r * FILES + i;
                        for (j, &v) in row.iter().enumerate() {
                            let ch = nc + 16 * j;
                            let mut v =
                                _mm512_add_ps(v, _mm512_loadu_ps(self.bias.as_ptr().add(ch)));
                            let at = (p * SQUARES + sq) * cp + ch;
                            if let (true, Some(o)) = (skip, f32_ptr) {
                                // SAFETY: asserted n * 63 * cout_pad floats below `o`.
                                v = _mm512_add_ps(v, _mm512_loadu_ps(o.add(at)));
                            }
                            if relu {
                                v = _mm512_max_ps(v, zero);
                            }
                            if let Some(o) = f32_ptr {
                                // SAFETY: asserted n * 63 * cout_pad floats above.
                                _mm512_storeu_ps(o.add(at), v);
                            }
                            if let Some(o) = bf_ptr {
                                let padded_sq = (r + 1) * PF + i + 1;
                                let h: __m256i = core::mem::transmute(_mm512_cvtneps_pbh(v));
                                // SAFETY: asserted n * PSQ * cout_pad values above.
                                _mm256_storeu_si256(
                                    o.add((p * PSQ + padded_sq) * cp + ch) as *mut __m256i,
                                    h,
                                );
                            }
                        }
                    }
                }
            }
        }
    }

    /// Never called off x86_64: [`super::CpuPath::bf16_supported`] is false there.
    #[cfg(not(target_arch = "x86_64"))]
    #[allow(clippy::too_many_arguments)]
    pub(super) unsafe fn forward(
        &self,
        _n: usize,
        _input: &[u16],
        _cs_in: usize,
        _skip: bool,
        _out_f32: Option<&mut [f32]>,
        _out_bf16: Option<&mut [u16]>,
        _relu: bool,
    ) {
        unreachable!("the bf16 path exists only on x86_64")
    }
}

/// GFLOP/s of `vdpbf16ps` alone on one thread: 24 independent accumulators in registers, no
/// memory traffic. The instruction peak the bf16 forward pass can approach.
pub fn dpbf16_peak_gflops(min_time: std::time::Duration) -> Option<f64> {
    if !super::CpuPath::bf16_supported() {
        return None;
    }
    // SAFETY: avx512f and avx512bf16 were detected just above.
    // 24 instructions x 16 lanes x 2 pairs x 2 flops per iteration.
    Some(register_peak(min_time, 24.0 * 16.0 * 4.0, |n| unsafe {
        dpbf16_loop(n)
    }))
}

/// GFLOP/s of AVX-512 f32 FMAs alone on one thread (24 accumulators in registers), the f32
/// counterpart of [`dpbf16_peak_gflops`]. Unlike the 2048^3 matmul, each timed run lasts
/// about a millisecond, so the best of many runs is a clean figure even on a loaded machine.
pub fn fma_f32_peak_gflops(min_time: std::time::Duration) -> Option<f64> {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx512f") {
        // SAFETY: avx512f was detected just above.
        // 24 instructions x 16 lanes x 2 flops per iteration.
        return Some(register_peak(min_time, 24.0 * 16.0 * 2.0, |n| unsafe {
            fma_loop(n)
        }));
    }
    let _ = min_time;
    None
}

/// Best GFLOP/s of `run(iterations)` (doing `flops_per_iteration` each) over repeated runs.
fn register_peak(
    min_time: std::time::Duration,
    flops_per_iteration: f64,
    run: impl Fn(u64) -> f32,
) -> f64 {
    std::hint::black_box(run(10_000));
    let iters = 200_000u64;
    let start = std::time::Instant::now();
    let mut best = f64::INFINITY;
    let mut runs = 0;
    while runs < 3 || start.elapsed() < min_time {
        let t = std::time::Instant::now();
        std::hint::black_box(run(iters));
        best = best.min(t.elapsed().as_secs_f64());
        runs += 1;
    }
    iters as f64 * flops_per_iteration / best / 1e9
}

/// # Safety
///
/// The CPU must support `avx512f`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn fma_loop(iters: u64) -> f32 {
    use core::arch::x86_64::*;
    let a = _mm512_set1_ps(1.0);
    let b = _mm512_set1_ps(1e-7);
    let mut acc = [_mm512_setzero_ps(); 24];
    for _ in 0..iters {
        for v in acc.iter_mut() {
            *v = _mm512_fmadd_ps(a, b, *v);
        }
        // Keep the compiler from collapsing the loop.
        core::arch::asm!("", options(nomem, nostack));
    }
    let mut s = _mm512_setzero_ps();
    for v in acc {
        s = _mm512_add_ps(s, v);
    }
    _mm512_reduce_add_ps(s)
}

/// # Safety
///
/// The CPU must support `avx512f` and `avx512bf16`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bf16")]
unsafe fn dpbf16_loop(iters: u64) -> f32 {
    use core::arch::x86_64::*;
    let a: __m512bh = core::mem::transmute(_mm512_set1_epi32(0x3f80_3f80));
    let b: __m512bh = core::mem::transmute(_mm512_set1_epi32(0x3c00_3c00));
    let mut acc = [_mm512_setzero_ps(); 24];
    for _ in 0..iters {
        for v in acc.iter_mut() {
            *v = _mm512_dpbf16_ps(*v, a, b);
        }
        // Keep the compiler from collapsing the loop.
        core::arch::asm!("", options(nomem, nostack));
    }
    let mut s = _mm512_setzero_ps();
    for v in acc {
        s = _mm512_add_ps(s, v);
    }
    _mm512_reduce_add_ps(s)
}

#[cfg(not(target_arch = "x86_64"))]
unsafe fn dpbf16_loop(_iters: u64) -> f32 {
    unreachable!("the bf16 path exists only on x86_64")
}
