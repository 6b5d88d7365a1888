//! The training step's forward and backward pass on the CPU, by hand, for this fixed net.
//!
//! Why: a profile of `yari bench train` (docs/experiments.md) put only a third of a burn
//! autodiff step in GEMM; the rest went to flex's per-image convolution machinery (im2col,
//! layout changes, transposes) and its bookkeeping. Here every convolution is one im2col plus
//! one GEMM forward, and in the backward pass one GEMM for the weight gradient and one for the
//! input gradient (a same-padded 3x3 convolution's input gradient is the convolution of the
//! output gradient with the kernel rotated by 180 degrees, so it is an im2col of the output
//! gradient too, and no col2im scatter is needed). Activations are channels last, `[rows =
//! position * 63 + square, channels]`, and every stage runs over blocks of `CHUNK` (16) positions
//! in parallel on rayon's pool, so each block's im2col buffer stays in a core's L2 cache.
//!
//! Batch norm runs in training mode exactly as burn's `BatchNorm` does on an autodiff device:
//! batch mean and biased variance over batch and squares, running averages updated with the
//! layer's momentum. The losses are the trainer's: policy cross-entropy of the logits over
//! the whole policy space against the dense target, plus `value_loss_weight` times the WDL
//! cross-entropy, plus (for a net with the soft policy head) `soft_policy_weight` times that
//! head's cross-entropy against the softened target, plus (for a net with the short-term value
//! head) `short_term_value_weight` times that head's WDL cross-entropy averaged over its
//! horizons, all averaged over the batch.
//!
//! Only the loss and the gradients are computed here; the burn [`Net`] stays the owner of
//! the weights, and the trainer's burn optimizer applies the gradients, so optimizer state and
//! checkpoints are the same whichever path computed them. `tests/cpu_train.rs` compares the
//! losses and every parameter's gradient with burn's autodiff.

use burn::module::{Param, ParamId};
use burn::nn::conv::Conv2d;
use burn::nn::{BatchNorm, Linear};
use burn::tensor::{Device, Tensor, TensorData};
use rayon::prelude::*;

use super::{add_into, im2col, pooling_mismatch, CpuNetError};
use crate::net::{
    soft_policy_target, Net, NetConfig, SHORT_TERM_VALUE_HORIZONS, SHORT_TERM_WDL_SIZE, SQUARES,
};

/// Positions per parallel block: 16 x 63 = 1008 GEMM rows, an im2col block of a trunk layer
/// (1008 x 288 floats for 32 channels, 1.2 MB) near a core's L2 cache.
const CHUNK: usize = 16;

/// The gradient of one parameter of the burn [`Net`], in burn's layout for that parameter.
#[derive(Clone, Debug)]
pub struct ParamGrad {
    /// The parameter it belongs to.
    pub id: ParamId,
    /// burn's shape of the parameter.
    pub shape: Vec<usize>,
    /// Row-major values in that shape.
    pub values: Vec<f32>,
}

/// What one hand-written forward and backward pass over a batch gives.
#[derive(Clone, Debug)]
pub struct TrainGrads {
    /// Policy cross-entropy against the targets, batch mean.
    pub policy_ce: f64,
    /// WDL cross-entropy, batch mean.
    pub value_ce: f64,
    /// Soft policy cross-entropy against the softened targets, batch mean (0 without the head).
    pub soft_policy_ce: f64,
    /// Short-term WDL cross-entropy, mean over the horizons and the batch (0 without the head).
    pub short_term_value_ce: f64,
    /// Gradient of `policy_ce + weights.value * value_ce + weights.soft_policy *
    /// soft_policy_ce + weights.short_term_value * short_term_value_ce` for every trainable
    /// parameter.
    pub grads: Vec<ParamGrad>,
}

/// The weights of the loss terms relative to the policy cross-entropy.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LossWeights {
    /// Of the WDL cross-entropy.
    pub value: f32,
    /// Of the soft policy cross-entropy (used only by a net with the soft policy head).
    pub soft_policy: f32,
    /// Of the short-term value cross-entropy (used only by a net with that head).
    pub short_term_value: f32,
}

impl TrainGrads {
    /// Sum of the squares of every gradient value (the global norm's square).
    pub fn squared_norm(&self) -> f64 {
        self.grads
            .iter()
            .flat_map(|g| g.values.iter())
            .map(|&v| v as f64 * v as f64)
            .sum()
    }

    /// The gradients as burn tensors on `device` (the autodiff device's inner one, where
    /// burn's own gradients live), each multiplied by `scale` (global-norm clipping), keyed by
    /// parameter for burn's optimizers.
    pub fn into_gradients_params(
        self,
        scale: f32,
        device: &Device,
    ) -> burn::optim::GradientsParams {
        let mut out = burn::optim::GradientsParams::new();
        for g in self.grads {
            let mut values = g.values;
            if scale != 1.0 {
                values.iter_mut().for_each(|v| *v *= scale);
            }
            let data = TensorData::new(values, g.shape.clone());
            match g.shape.len() {
                1 => out.register::<1>(g.id, Tensor::from_data(data, device)),
                2 => out.register::<2>(g.id, Tensor::from_data(data, device)),
                4 => out.register::<4>(g.id, Tensor::from_data(data, device)),
                d => unreachable!("the net has no parameter of rank {d}"),
            }
        }
        out
    }
}

/// A batch for [`loss_and_grads`], in the trainer's layouts.
#[derive(Clone, Copy, Debug)]
pub struct TrainBatch<'a> {
    /// Positions.
    pub n: usize,
    /// `[n, input_planes, 9, 7]`.
    pub inputs: &'a [f32],
    /// `[n, policy_planes * 63]`, plane-major (the net's policy output layout).
    pub policy: &'a [f32],
    /// `[n, 3]`.
    pub wdl: &'a [f32],
    /// `[n, 3 * horizons]`, horizon-major within a position (the short-term value head's
    /// layout); read only for a net with that head.
    pub short_term_wdl: &'a [f32],
}

fn floats<const D: usize>(t: Tensor<D>, what: &str) -> Result<Vec<f32>, CpuNetError> {
    t.into_data()
        .convert::<f32>()
        .try_into_vec::<f32>()
        .map_err(|e| CpuNetError(format!("{what}: {e:?}")))
}

fn param_floats<const D: usize>(
    p: &Param<Tensor<D>>,
    len: usize,
    what: &str,
) -> Result<Vec<f32>, CpuNetError> {
    let v = floats(p.val(), what)?;
    if v.len() != len {
        return Err(CpuNetError(format!(
            "{what} has {} values, expected {len}",
            v.len()
        )));
    }
    Ok(v)
}

/// A batch norm's parameters and running statistics.
struct Bn<'a> {
    layer: &'a BatchNorm,
    c: usize,
    gamma: Vec<f32>,
    beta: Vec<f32>,
}

impl<'a> Bn<'a> {
    fn new(layer: &'a BatchNorm, c: usize, what: &str) -> Result<Self, CpuNetError> {
        Ok(Self {
            layer,
            c,
            gamma: param_floats(&layer.gamma, c, what)?,
            beta: param_floats(&layer.beta, c, what)?,
        })
    }
}

/// A 3x3 same-padded convolution without bias.
struct Conv3<'a> {
    layer: &'a Conv2d,
    cin: usize,
    cout: usize,
    /// `[9 * cin, cout]`, row `k * cin + ci` with `k = ky * 3 + kx`: the im2col layout.
    w: Vec<f32>,
    /// `[9 * cout, cin]`, row `k * cout + co` = `w`'s row `(8 - k) * cin + ci` transposed:
    /// the rotated kernel that turns the input gradient into a forward convolution.
    wflip: Vec<f32>,
}

impl<'a> Conv3<'a> {
    fn new(layer: &'a Conv2d, cin: usize, cout: usize, what: &str) -> Result<Self, CpuNetError> {
        let raw = param_floats(&layer.weight, cout * cin * 9, what)?;
        let mut w = vec![0.0; 9 * cin * cout];
        let mut wflip = vec![0.0; 9 * cin * cout];
        for co in 0..cout {
            for ci in 0..cin {
                for k in 0..9 {
                    let v = raw[(co * cin + ci) * 9 + k];
                    w[(k * cin + ci) * cout + co] = v;
                    wflip[((8 - k) * cout + co) * cin + ci] = v;
                }
            }
        }
        Ok(Self {
            layer,
            cin,
            cout,
            w,
            wflip,
        })
    }

    /// burn's `[cout, cin, 3, 3]` from an im2col-layout `[9 * cin, cout]` gradient.
    fn grad(&self, g: &[f32]) -> ParamGrad {
        let (cin, cout) = (self.cin, self.cout);
        let mut values = vec![0.0; g.len()];
        for co in 0..cout {
            for ci in 0..cin {
                for k in 0..9 {
                    values[(co * cin + ci) * 9 + k] = g[(k * cin + ci) * cout + co];
                }
            }
        }
        ParamGrad {
            id: self.layer.weight.id,
            shape: vec![cout, cin, 3, 3],
            values,
        }
    }
}

/// `dst[m, n] (+)= lhs[m, k] * rhs[k, n]` with arbitrary row and column strides for the
/// inputs (so transposed operands need no copy) and a row-major `dst` of row stride `dst_rs`.
#[allow(clippy::too_many_arguments)]
fn gemm(
    m: usize,
    n: usize,
    k: usize,
    dst: &mut [f32],
    dst_rs: usize,
    accumulate: bool,
    lhs: &[f32],
    lhs_rs: usize,
    lhs_cs: usize,
    rhs: &[f32],
    rhs_rs: usize,
    rhs_cs: usize,
) {
    if m == 0 || n == 0 {
        return;
    }
    let last = |rows: usize, cols: usize, rs: usize, cs: usize| (rows - 1) * rs + (cols - 1) * cs;
    assert!(dst.len() > last(m, n, dst_rs, 1) && n <= dst_rs);
    if k == 0 {
        if !accumulate {
            for r in 0..m {
                dst[r * dst_rs..r * dst_rs + n].fill(0.0);
            }
        }
        return;
    }
    assert!(lhs.len() > last(m, k, lhs_rs, lhs_cs) && rhs.len() > last(k, n, rhs_rs, rhs_cs));
    // SAFETY: the asserts keep every element gemm touches inside its slice: with these strides
    // the largest offsets read are `last(m, k, ..)` of lhs and `last(k, n, ..)` of rhs, and the
    // largest written is `last(m, n, dst_rs, 1)` of dst; `n <= dst_rs` keeps distinct (row,
    // column) pairs of dst distinct elements. `dst` is a unique borrow, so it aliases neither
    // input. With `read_dst` gemm computes `dst = 1 * dst + 1 * lhs * rhs`, without it `dst =
    // lhs * rhs`. The gemm crate (the one burn-flex is built on) has only this unsafe entry
    // point; one GEMM per block is the reason this pass is faster than flex's.
    unsafe {
        gemm::gemm(
            m,
            n,
            k,
            dst.as_mut_ptr(),
            1,
            dst_rs as isize,
            accumulate,
            lhs.as_ptr(),
            lhs_cs as isize,
            lhs_rs as isize,
            rhs.as_ptr(),
            rhs_cs as isize,
            rhs_rs as isize,
            1.0,
            1.0,
            false,
            false,
            false,
            gemm::Parallelism::None,
        );
    }
}

/// Per-channel sums over rows, in f64: `(sum of a, sum of a * b)` or `(sum, sum of squares)`.
#[derive(Clone)]
struct ChannelSums {
    s1: Vec<f64>,
    s2: Vec<f64>,
}

impl ChannelSums {
    fn new(c: usize) -> Self {
        Self {
            s1: vec![0.0; c],
            s2: vec![0.0; c],
        }
    }

    fn merge(mut self, other: Self) -> Self {
        for (a, b) in self.s1.iter_mut().zip(&other.s1) {
            *a += b;
        }
        for (a, b) in self.s2.iter_mut().zip(&other.s2) {
            *a += b;
        }
        self
    }

    /// Adds the mean and square sums of `rows` (`[_, c]`).
    fn add_moments(&mut self, rows: &[f32]) {
        let c = self.s1.len();
        for row in rows.chunks_exact(c) {
            for ((s1, s2), &v) in self.s1.iter_mut().zip(self.s2.iter_mut()).zip(row) {
                let v = v as f64;
                *s1 += v;
                *s2 += v * v;
            }
        }
    }
}

/// Batch statistics of one batch norm in training mode, and what its backward pass needs.
struct BnStats {
    mean: Vec<f32>,
    inv_std: Vec<f32>,
    /// Per-channel `(scale, shift)` of the forward: `gamma * inv_std`, `beta - mean * scale`.
    scale: Vec<f32>,
    shift: Vec<f32>,
}

impl BnStats {
    /// From the moment sums over `count` rows; updates `bn`'s running statistics as burn does.
    fn finish(bn: &Bn, sums: &ChannelSums, count: usize, device: &Device) -> Self {
        let m = count as f64;
        let mut mean = Vec::with_capacity(bn.c);
        let mut var = Vec::with_capacity(bn.c);
        for c in 0..bn.c {
            let mu = sums.s1[c] / m;
            mean.push(mu as f32);
            var.push((sums.s2[c] / m - mu * mu).max(0.0) as f32);
        }
        let eps = bn.layer.epsilon;
        let inv_std: Vec<f32> = var
            .iter()
            .map(|&v| (1.0 / (v as f64 + eps).sqrt()) as f32)
            .collect();
        let scale: Vec<f32> = (0..bn.c).map(|c| bn.gamma[c] * inv_std[c]).collect();
        let shift = (0..bn.c).map(|c| bn.beta[c] - mean[c] * scale[c]).collect();
        let momentum = bn.layer.momentum;
        let update = |state: &burn::module::RunningState<Tensor<1>>, batch: &[f32]| {
            let batch = Tensor::<1>::from_data(TensorData::new(batch.to_vec(), [bn.c]), device);
            let running = state.value_sync().to_device(device);
            state.update(
                running
                    .mul_scalar(1.0 - momentum)
                    .add(batch.mul_scalar(momentum))
                    .detach(),
            );
        };
        update(&bn.layer.running_mean, &mean);
        update(&bn.layer.running_var, &var);
        Self {
            mean,
            inv_std,
            scale,
            shift,
        }
    }

    /// `out = relu(scale * z + shift [+ skip])`, rows of `c`.
    fn apply(&self, z: &[f32], skip: Option<&[f32]>, out: &mut [f32]) {
        let c = self.scale.len();
        match skip {
            Some(skip) => {
                for ((o, z), s) in out
                    .chunks_exact_mut(c)
                    .zip(z.chunks_exact(c))
                    .zip(skip.chunks_exact(c))
                {
                    for i in 0..c {
                        o[i] = (z[i] * self.scale[i] + self.shift[i] + s[i]).max(0.0);
                    }
                }
            }
            None => {
                for (o, z) in out.chunks_exact_mut(c).zip(z.chunks_exact(c)) {
                    for i in 0..c {
                        o[i] = (z[i] * self.scale[i] + self.shift[i]).max(0.0);
                    }
                }
            }
        }
    }

    /// Masks `dy` (the gradient of the post-ReLU output `a`, in place) into the gradient of
    /// the batch norm's output, and adds `(sum dy, sum dy * xhat)` to `sums`.
    fn mask_and_sum(&self, dy: &mut [f32], a: &[f32], z: &[f32], sums: &mut ChannelSums) {
        let c = self.scale.len();
        for ((d, a), z) in dy
            .chunks_exact_mut(c)
            .zip(a.chunks_exact(c))
            .zip(z.chunks_exact(c))
        {
            for i in 0..c {
                if a[i] <= 0.0 {
                    d[i] = 0.0;
                }
                let xhat = (z[i] - self.mean[i]) * self.inv_std[i];
                sums.s1[i] += d[i] as f64;
                sums.s2[i] += (d[i] * xhat) as f64;
            }
        }
    }

    /// The input gradient of the batch norm: `gamma * inv_std * (dy - dbeta / M - xhat *
    /// dgamma / M)`, given the final sums (`dbeta`, `dgamma`) over all `count` rows.
    fn backward(
        &self,
        bn: &Bn,
        sums: &ChannelSums,
        count: usize,
        dy: &[f32],
        z: &[f32],
        dz: &mut [f32],
    ) {
        let c = self.scale.len();
        let m = count as f64;
        let mut k1 = vec![0.0f32; c];
        let mut k2 = vec![0.0f32; c];
        for i in 0..c {
            k1[i] = (sums.s1[i] / m) as f32;
            k2[i] = (sums.s2[i] / m) as f32;
        }
        for ((o, d), z) in dz
            .chunks_exact_mut(c)
            .zip(dy.chunks_exact(c))
            .zip(z.chunks_exact(c))
        {
            for i in 0..c {
                let xhat = (z[i] - self.mean[i]) * self.inv_std[i];
                o[i] = bn.gamma[i] * self.inv_std[i] * (d[i] - k1[i] - xhat * k2[i]);
            }
        }
    }

    /// `(gamma, beta)` gradients from the final sums.
    fn param_grads(bn: &Bn, sums: &ChannelSums) -> [ParamGrad; 2] {
        let f = |v: &[f64]| v.iter().map(|&x| x as f32).collect::<Vec<_>>();
        [
            ParamGrad {
                id: bn.layer.gamma.id,
                shape: vec![bn.c],
                values: f(&sums.s2),
            },
            ParamGrad {
                id: bn.layer.beta.id,
                shape: vec![bn.c],
                values: f(&sums.s1),
            },
        ]
    }
}

/// One conv + batch norm + ReLU layer's saved activations.
struct Saved {
    /// Pre-batch-norm convolution output `[rows, c]`.
    z: Vec<f32>,
    stats: BnStats,
}

/// Groups of consecutive blocks that the parallel stages hand to rayon: fixed, so that
/// per-group sums are added in the same order whatever the scheduling, and a step is
/// reproducible bit for bit (a resumed run must end where an uninterrupted one does).
const GROUPS: usize = 8;

/// Runs `f(acc, block, rows)` over the [`CHUNK`]-position blocks of `out` (`chunk_len` floats
/// a block), [`GROUPS`] fixed groups of consecutive blocks in parallel, each group with its
/// own `init()` accumulator, and merges the accumulators in group order.
fn blocks_fold<A: Send>(
    out: &mut [f32],
    chunk_len: usize,
    init: impl Fn() -> A + Sync + Send,
    f: impl Fn(&mut A, usize, &mut [f32]) + Sync + Send,
    merge: impl Fn(A, A) -> A,
) -> A {
    let blocks = out.len().div_ceil(chunk_len).max(1);
    let per_group = blocks.div_ceil(GROUPS);
    let parts: Vec<A> = out
        .par_chunks_mut(per_group * chunk_len)
        .enumerate()
        .map(|(g, part)| {
            let mut acc = init();
            for (j, rows) in part.chunks_mut(chunk_len).enumerate() {
                f(&mut acc, g * per_group + j, rows);
            }
            acc
        })
        .collect();
    parts.into_iter().reduce(merge).unwrap_or_else(init)
}

/// [`blocks_fold`] over `blocks` blocks without an output array.
fn count_fold<A: Send>(
    blocks: usize,
    init: impl Fn() -> A + Sync + Send,
    f: impl Fn(&mut A, usize) + Sync + Send,
    merge: impl Fn(A, A) -> A,
) -> A {
    let per_group = blocks.div_ceil(GROUPS).max(1);
    let parts: Vec<A> = (0..blocks.div_ceil(per_group))
        .into_par_iter()
        .map(|g| {
            let mut acc = init();
            for b in g * per_group..((g + 1) * per_group).min(blocks) {
                f(&mut acc, b);
            }
            acc
        })
        .collect();
    parts.into_iter().reduce(merge).unwrap_or_else(init)
}

fn sum_vecs(mut a: Vec<f32>, b: Vec<f32>) -> Vec<f32> {
    add_into(&mut a, &b);
    a
}

/// Rows of positions `[p0, p0 + CHUNK)` as a sub-slice of a `[rows, width]` array.
fn rows_of(x: &[f32], chunk: usize, width: usize) -> &[f32] {
    let len = CHUNK * SQUARES * width;
    let start = chunk * len;
    &x[start..(start + len).min(x.len())]
}

/// Convolution forward over the whole batch, chunk-parallel, with the batch norm's moments.
fn conv_forward(conv: &Conv3, x: &[f32], rows: usize) -> (Vec<f32>, ChannelSums) {
    let (cin, cout) = (conv.cin, conv.cout);
    let mut z = vec![0.0f32; rows * cout];
    let (_, sums) = blocks_fold(
        &mut z,
        CHUNK * SQUARES * cout,
        || {
            (
                vec![0.0f32; CHUNK * SQUARES * 9 * cin],
                ChannelSums::new(cout),
            )
        },
        |(col, sums), i, out| {
            let xin = rows_of(x, i, cin);
            let r = xin.len() / cin;
            im2col(xin, cin, col);
            gemm(
                r,
                cout,
                9 * cin,
                out,
                cout,
                false,
                col,
                9 * cin,
                1,
                &conv.w,
                cout,
                1,
            );
            sums.add_moments(out);
        },
        |(c, a), (_, b)| (c, a.merge(b)),
    );
    (z, sums)
}

/// `relu(bn(z) [+ skip])` over the whole batch, chunk-parallel.
fn bn_apply(stats: &BnStats, z: &[f32], skip: Option<&[f32]>, c: usize) -> Vec<f32> {
    let mut out = vec![0.0f32; z.len()];
    out.par_chunks_mut(CHUNK * SQUARES * c)
        .enumerate()
        .for_each(|(i, o)| stats.apply(rows_of(z, i, c), skip.map(|s| rows_of(s, i, c)), o));
    out
}

/// Masks the gradient `dy` of the post-ReLU output `a` in place, returning the batch norm's
/// `(dbeta, dgamma)` sums.
fn bn_mask(stats: &BnStats, dy: &mut [f32], a: &[f32], z: &[f32], c: usize) -> ChannelSums {
    blocks_fold(
        dy,
        CHUNK * SQUARES * c,
        || ChannelSums::new(c),
        |sums, i, d| stats.mask_and_sum(d, rows_of(a, i, c), rows_of(z, i, c), sums),
        ChannelSums::merge,
    )
}

/// Backward of conv + batch norm: from `dy` (gradient of the batch norm's output) returns the
/// conv weight gradient (im2col layout) and, when `dx` is given, adds the input gradient to it
/// (`accumulate`) or writes it.
#[allow(clippy::too_many_arguments)]
fn conv_backward(
    conv: &Conv3,
    bn: &Bn,
    saved: &Saved,
    sums: &ChannelSums,
    x: &[f32],
    dy: &[f32],
    dx: Option<(&mut [f32], bool)>,
    rows: usize,
) -> Vec<f32> {
    let (cin, cout) = (conv.cin, conv.cout);
    let wlen = 9 * cin * cout;
    let chunk_rows = CHUNK * SQUARES;
    type Scratch = (Vec<f32>, Vec<f32>, Vec<f32>, Vec<f32>);
    let step = |i: usize, dx: Option<&mut [f32]>, accumulate: bool, s: &mut Scratch| {
        let (col, dcol, dz, dw) = s;
        let xin = rows_of(x, i, cin);
        let r = xin.len() / cin;
        let dz = &mut dz[..r * cout];
        saved.stats.backward(
            bn,
            sums,
            rows,
            rows_of(dy, i, cout),
            rows_of(&saved.z, i, cout),
            dz,
        );
        im2col(xin, cin, col);
        // dW[9cin, cout] += col^T dz
        gemm(
            9 * cin,
            cout,
            r,
            dw,
            cout,
            true,
            col,
            1,
            9 * cin,
            dz,
            cout,
            1,
        );
        if let Some(dx) = dx {
            im2col(dz, cout, dcol);
            gemm(
                r,
                cin,
                9 * cout,
                dx,
                cin,
                accumulate,
                dcol,
                9 * cout,
                1,
                &conv.wflip,
                cin,
                1,
            );
        }
    };
    let with_dx = dx.is_some();
    let init = || {
        (
            vec![0.0f32; chunk_rows * 9 * cin],
            vec![0.0f32; if with_dx { chunk_rows * 9 * cout } else { 0 }],
            vec![0.0f32; chunk_rows * cout],
            vec![0.0f32; wlen],
        )
    };
    let merge = |a: Scratch, b: Scratch| (a.0, a.1, a.2, sum_vecs(a.3, b.3));
    match dx {
        Some((dx, accumulate)) => {
            blocks_fold(
                dx,
                chunk_rows * cin,
                init,
                |s, i, d| step(i, Some(d), accumulate, s),
                merge,
            )
            .3
        }
        None => {
            count_fold(
                rows.div_ceil(chunk_rows),
                init,
                |s, i| step(i, None, false, s),
                merge,
            )
            .3
        }
    }
}

/// Log-softmax cross-entropy of one row of logits `z` against `target` (any non-negative
/// weights): returns the loss `-sum t log softmax(z)` and overwrites `z` with `scale *
/// (softmax * sum t - t)`, the loss's gradient times `scale`.
fn softmax_ce(z: &mut [f32], target: &[f32], scale: f32) -> f64 {
    let max = z.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    let sum: f64 = z.iter().map(|&v| ((v - max) as f64).exp()).sum();
    let lse = max as f64 + sum.ln();
    let t_sum: f64 = target.iter().map(|&t| t as f64).sum();
    let mut loss = 0.0f64;
    for (g, &t) in z.iter_mut().zip(target) {
        let logp = *g as f64 - lse;
        loss -= t as f64 * logp;
        *g = scale * (logp.exp() * t_sum - t as f64) as f32;
    }
    loss
}

/// Column sums of `[_, n]` rows added to `acc`.
fn add_col_sums(acc: &mut [f32], rows: &[f32]) {
    let n = acc.len();
    for row in rows.chunks_exact(n) {
        add_into(acc, row);
    }
}

/// The training-mode forward and backward pass of `net` on `batch`, by hand; see the module
/// docs. Updates `net`'s batch-norm running statistics as burn's training forward does and
/// returns the losses and every parameter's gradient (in burn's layout, to be applied by a
/// burn optimizer).
pub fn loss_and_grads(
    net: &Net,
    config: &NetConfig,
    batch: &TrainBatch,
    weights: LossWeights,
) -> Result<TrainGrads, CpuNetError> {
    let value_loss_weight = weights.value;
    let n = batch.n;
    let (c, cin0) = (config.channels, config.input_planes);
    let (pp, vc, hid) = (
        config.policy_planes,
        config.value_channels,
        config.value_hidden,
    );
    let psize = pp * SQUARES;
    if n == 0
        || batch.inputs.len() != n * cin0 * SQUARES
        || batch.policy.len() != n * psize
        || batch.wdl.len() != n * 3
    {
        return Err(CpuNetError(format!(
            "batch of {n}: inputs {}, policy {}, wdl {} values do not fit the net",
            batch.inputs.len(),
            batch.policy.len(),
            batch.wdl.len()
        )));
    }
    if net.blocks.len() != config.blocks {
        return Err(CpuNetError(format!(
            "net has {} blocks, config {}",
            net.blocks.len(),
            config.blocks
        )));
    }
    let device = net.stem_bn.gamma.val().device();
    let rows = n * SQUARES;
    let count = rows;

    // Weights, re-read every step: the optimizer owns them.
    let stem = Conv3::new(&net.stem, cin0, c, "stem")?;
    let stem_bn = Bn::new(&net.stem_bn, c, "stem_bn")?;
    let mut blocks = Vec::with_capacity(config.blocks);
    for (i, b) in net.blocks.iter().enumerate() {
        let what = format!("blocks.{i}");
        let pool = match (&b.pool, config.global_pooling) {
            (Some(layer), true) => Some(Pool {
                layer,
                w: param_floats(&layer.weight, c * c, &format!("{what}.pool"))?,
                b: linear_bias(layer, c, &format!("{what}.pool.bias"))?,
            }),
            (None, false) => None,
            (_, pooling) => return Err(pooling_mismatch(&what, pooling)),
        };
        blocks.push((
            Conv3::new(&b.conv1, c, c, &what)?,
            Bn::new(&b.bn1, c, &what)?,
            Conv3::new(&b.conv2, c, c, &what)?,
            Bn::new(&b.bn2, c, &what)?,
            pool,
        ));
    }
    let pconv = Conv3::new(&net.policy_conv, c, c, "policy_conv")?;
    let pbn = Bn::new(&net.policy_bn, c, "policy_bn")?;
    let (po_w, po_b) = output_conv(&net.policy_out, c, pp, "policy_out")?;
    let soft = match (&net.soft_policy_out, config.soft_policy_head) {
        (Some(layer), true) => {
            let (w, b) = output_conv(layer, c, pp, "soft_policy_out")?;
            Some((layer, w, b))
        }
        (None, false) => None,
        (layer, head) => return Err(head_mismatch("soft policy", head, layer.is_some())),
    };
    let vconv_raw = param_floats(&net.value_conv.weight, vc * c, "value_conv")?;
    let vconv_w: Vec<f32> = (0..c * vc)
        .map(|i| vconv_raw[(i % vc) * c + i / vc])
        .collect();
    let vbn = Bn::new(&net.value_bn, vc, "value_bn")?;
    let fc_raw = param_floats(&net.value_fc.weight, vc * SQUARES * hid, "value_fc")?;
    // Rows permuted from burn's flatten order (channel * 63 + square) to channels last
    // (square * vc + channel).
    let mut fc_w = vec![0.0f32; fc_raw.len()];
    for s in 0..SQUARES {
        for v in 0..vc {
            let dst = (s * vc + v) * hid;
            let src = (v * SQUARES + s) * hid;
            fc_w[dst..dst + hid].copy_from_slice(&fc_raw[src..src + hid]);
        }
    }
    let fc_b = linear_bias(&net.value_fc, hid, "value_fc.bias")?;
    let out_w = param_floats(&net.value_out.weight, hid * 3, "value_out")?;
    let out_b = linear_bias(&net.value_out, 3, "value_out.bias")?;
    // short_term_value_out: [hid, 3 * horizons], as value_out.
    let sw = SHORT_TERM_WDL_SIZE;
    let short = match (&net.short_term_value_out, config.short_term_value_head) {
        (Some(layer), true) => {
            if batch.short_term_wdl.len() != n * sw {
                return Err(CpuNetError(format!(
                    "batch of {n}: {} short-term WDL values, expected {}",
                    batch.short_term_wdl.len(),
                    n * sw
                )));
            }
            let w = param_floats(&layer.weight, hid * sw, "short_term_value_out")?;
            let b = linear_bias(layer, sw, "short_term_value_out.bias")?;
            Some((layer, w, b))
        }
        (None, false) => None,
        (layer, head) => return Err(head_mismatch("short-term value", head, layer.is_some())),
    };

    // Input planes [n, cin0, 63] -> channels last [n * 63, cin0].
    let mut x0 = vec![0.0f32; rows * cin0];
    x0.par_chunks_mut(SQUARES * cin0)
        .zip(batch.inputs.par_chunks(SQUARES * cin0))
        .for_each(|(dst, src)| {
            for ch in 0..cin0 {
                for s in 0..SQUARES {
                    dst[s * cin0 + ch] = src[ch * SQUARES + s];
                }
            }
        });

    // ---- forward ----
    let (z, sums) = conv_forward(&stem, &x0, rows);
    let stats = BnStats::finish(&stem_bn, &sums, count, &device);
    let h0 = bn_apply(&stats, &z, None, c);
    let stem_saved = Saved { z, stats };
    let mut hs = vec![h0];
    let mut block_saved = Vec::with_capacity(blocks.len());
    for (conv1, bn1, conv2, bn2, pool) in &blocks {
        let h = hs.last().expect("input");
        let (z1, s1) = conv_forward(conv1, h, rows);
        let st1 = BnStats::finish(bn1, &s1, count, &device);
        let a1 = bn_apply(&st1, &z1, None, c);
        let pooled = pool.as_ref().map(|pool| pool.forward(&a1, n));
        let conv2_in = pooled.as_ref().map_or(&a1, |(_, biased)| biased);
        let (z2, s2) = conv_forward(conv2, conv2_in, rows);
        let st2 = BnStats::finish(bn2, &s2, count, &device);
        let out = bn_apply(&st2, &z2, Some(h), c);
        block_saved.push((
            Saved { z: z1, stats: st1 },
            a1,
            pooled,
            Saved { z: z2, stats: st2 },
        ));
        hs.push(out);
    }
    let trunk = hs.last().expect("trunk output");

    // Policy head forward through the loss and back to the 1x1 conv's input.
    let (zp, sp) = conv_forward(&pconv, trunk, rows);
    let stp = BnStats::finish(&pbn, &sp, count, &device);
    let ap = bn_apply(&stp, &zp, None, c);
    let inv_n = 1.0 / n as f32;
    let chunk_rows = CHUNK * SQUARES;
    let mut dap = vec![0.0f32; rows * c];
    let soft_scale = weights.soft_policy * inv_n;
    let with_soft = soft.is_some();
    let (policy_loss, po_dw, po_db, soft_loss, so_dw, so_db) = {
        let acc = blocks_fold(
            &mut dap,
            chunk_rows * c,
            || PolicyAcc::new(c, pp, chunk_rows, psize, with_soft),
            |acc, i, dxc| {
                let a = rows_of(&ap, i, c);
                let r = a.len() / c;
                let p0 = i * CHUNK;
                let lgs = &mut acc.logits[..r * pp];
                gemm(r, pp, c, lgs, pp, false, a, c, 1, &po_w, pp, 1);
                for row in lgs.chunks_exact_mut(pp) {
                    add_into(row, &po_b);
                }
                for (j, lg) in lgs.chunks_exact_mut(SQUARES * pp).enumerate() {
                    let t = &batch.policy[(p0 + j) * psize..(p0 + j + 1) * psize];
                    square_major(t, pp, &mut acc.target);
                    acc.loss += softmax_ce(lg, &acc.target, inv_n);
                }
                // The logits now hold d loss / d logits.
                gemm(c, pp, r, &mut acc.dw, pp, true, a, 1, c, lgs, pp, 1);
                add_col_sums(&mut acc.db, lgs);
                gemm(r, c, pp, dxc, c, false, lgs, pp, 1, &po_w, 1, pp);
                if let Some((_, so_w, so_b)) = &soft {
                    let lgs = &mut acc.soft_logits[..r * pp];
                    gemm(r, pp, c, lgs, pp, false, a, c, 1, so_w, pp, 1);
                    for row in lgs.chunks_exact_mut(pp) {
                        add_into(row, so_b);
                    }
                    for (j, lg) in lgs.chunks_exact_mut(SQUARES * pp).enumerate() {
                        let t = &batch.policy[(p0 + j) * psize..(p0 + j + 1) * psize];
                        soft_policy_target(t, &mut acc.soft_plane);
                        square_major(&acc.soft_plane, pp, &mut acc.target);
                        acc.soft_loss += softmax_ce(lg, &acc.target, soft_scale);
                    }
                    gemm(c, pp, r, &mut acc.soft_dw, pp, true, a, 1, c, lgs, pp, 1);
                    add_col_sums(&mut acc.soft_db, lgs);
                    gemm(r, c, pp, dxc, c, true, lgs, pp, 1, so_w, 1, pp);
                }
            },
            PolicyAcc::merge,
        );
        (
            acc.loss,
            acc.dw,
            acc.db,
            acc.soft_loss,
            acc.soft_dw,
            acc.soft_db,
        )
    };

    // Value head forward.
    let mut zv = vec![0.0f32; rows * vc];
    let sv = blocks_fold(
        &mut zv,
        chunk_rows * vc,
        || ChannelSums::new(vc),
        |sums, i, out| {
            let xin = rows_of(trunk, i, c);
            let r = xin.len() / c;
            gemm(r, vc, c, out, vc, false, xin, c, 1, &vconv_w, vc, 1);
            sums.add_moments(out);
        },
        ChannelSums::merge,
    );
    let stv = BnStats::finish(&vbn, &sv, count, &device);
    let av = bn_apply(&stv, &zv, None, vc);
    let vwidth = SQUARES * vc;
    let vscale = value_loss_weight * inv_n;
    let mut dav = vec![0.0f32; rows * vc];
    // Each horizon's cross-entropy is one term of a mean over the horizons.
    let short_scale = weights.short_term_value * inv_n / SHORT_TERM_VALUE_HORIZONS.len() as f32;
    let sw_used = if short.is_some() { sw } else { 0 };
    let acc = blocks_fold(
        &mut dav,
        CHUNK * vwidth,
        || ValueAcc::new(vwidth, hid, sw_used),
        |acc, i, dxc| {
            let ValueAcc {
                loss,
                fdw,
                fdb,
                odw,
                odb,
                short_loss,
                sdw,
                sdb,
            } = acc;
            let a = rows_of(&av, i, vc);
            let m = a.len() / vwidth;
            let p0 = i * CHUNK;
            let mut hidden = vec![0.0f32; m * hid];
            gemm(
                m,
                hid,
                vwidth,
                &mut hidden,
                hid,
                false,
                a,
                vwidth,
                1,
                &fc_w,
                hid,
                1,
            );
            for row in hidden.chunks_exact_mut(hid) {
                for (h, b) in row.iter_mut().zip(&fc_b) {
                    *h = (*h + b).max(0.0);
                }
            }
            let mut wdl = vec![0.0f32; m * 3];
            gemm(m, 3, hid, &mut wdl, 3, false, &hidden, hid, 1, &out_w, 3, 1);
            for (j, row) in wdl.chunks_exact_mut(3).enumerate() {
                add_into(row, &out_b);
                let t = &batch.wdl[(p0 + j) * 3..(p0 + j + 1) * 3];
                *loss += softmax_ce(row, t, vscale);
            }
            gemm(hid, 3, m, odw, 3, true, &hidden, 1, hid, &wdl, 3, 1);
            add_col_sums(odb, &wdl);
            let mut dh = vec![0.0f32; m * hid];
            gemm(m, hid, 3, &mut dh, hid, false, &wdl, 3, 1, &out_w, 1, 3);
            if let Some((_, s_w, s_b)) = &short {
                let mut logits = vec![0.0f32; m * sw];
                gemm(
                    m,
                    sw,
                    hid,
                    &mut logits,
                    sw,
                    false,
                    &hidden,
                    hid,
                    1,
                    s_w,
                    sw,
                    1,
                );
                for (j, row) in logits.chunks_exact_mut(sw).enumerate() {
                    add_into(row, s_b);
                    let t = &batch.short_term_wdl[(p0 + j) * sw..(p0 + j + 1) * sw];
                    for (z, th) in row.chunks_exact_mut(3).zip(t.chunks_exact(3)) {
                        *short_loss += softmax_ce(z, th, short_scale);
                    }
                }
                // The logits now hold d loss / d logits.
                gemm(hid, sw, m, sdw, sw, true, &hidden, 1, hid, &logits, sw, 1);
                add_col_sums(sdb, &logits);
                gemm(m, hid, sw, &mut dh, hid, true, &logits, sw, 1, s_w, 1, sw);
            }
            for (d, h) in dh.iter_mut().zip(&hidden) {
                if *h <= 0.0 {
                    *d = 0.0;
                }
            }
            gemm(vwidth, hid, m, fdw, hid, true, a, 1, vwidth, &dh, hid, 1);
            add_col_sums(fdb, &dh);
            gemm(
                m, vwidth, hid, dxc, vwidth, false, &dh, hid, 1, &fc_w, 1, hid,
            );
        },
        ValueAcc::merge,
    );
    let ValueAcc {
        loss: value_loss,
        fdw: fc_dw,
        fdb: fc_db,
        odw: out_dw,
        odb: out_db,
        short_loss,
        sdw: short_dw,
        sdb: short_db,
    } = acc;
    let value_ce = value_loss / n as f64;

    // ---- backward ----
    let mut grads = Vec::new();
    // Policy head: bn + conv, into the trunk output's gradient.
    let sums_p = bn_mask(&stp, &mut dap, &ap, &zp, c);
    let mut dtrunk = vec![0.0f32; rows * c];
    let pconv_dw = conv_backward(
        &pconv,
        &pbn,
        &Saved { z: zp, stats: stp },
        &sums_p,
        trunk,
        &dap,
        Some((&mut dtrunk, false)),
        rows,
    );
    grads.push(pconv.grad(&pconv_dw));
    grads.extend(BnStats::param_grads(&pbn, &sums_p));
    grads.extend(output_conv_grads(&net.policy_out, c, pp, &po_dw, po_db));
    if let Some((layer, ..)) = &soft {
        grads.extend(output_conv_grads(layer, c, pp, &so_dw, so_db));
    }

    // Value head: bn + 1x1 conv, added into the trunk output's gradient.
    let sums_v = bn_mask(&stv, &mut dav, &av, &zv, vc);
    let (vconv_dw, _) = blocks_fold(
        &mut dtrunk,
        chunk_rows * c,
        || (vec![0.0f32; c * vc], vec![0.0f32; chunk_rows * vc]),
        |(dw, dz), i, dxc| {
            let xin = rows_of(trunk, i, c);
            let r = xin.len() / c;
            let d = &mut dz[..r * vc];
            stv.backward(
                &vbn,
                &sums_v,
                count,
                rows_of(&dav, i, vc),
                rows_of(&zv, i, vc),
                d,
            );
            gemm(c, vc, r, dw, vc, true, xin, 1, c, d, vc, 1);
            gemm(r, c, vc, dxc, c, true, d, vc, 1, &vconv_w, 1, vc);
        },
        |a, b| (sum_vecs(a.0, b.0), a.1),
    );
    grads.push(ParamGrad {
        id: net.value_conv.weight.id,
        shape: vec![vc, c, 1, 1],
        values: (0..vc * c)
            .map(|i| vconv_dw[(i % c) * vc + i / c])
            .collect(),
    });
    grads.extend(BnStats::param_grads(&vbn, &sums_v));
    let mut fc_grad = vec![0.0f32; fc_dw.len()];
    for s in 0..SQUARES {
        for v in 0..vc {
            let src = (s * vc + v) * hid;
            let dst = (v * SQUARES + s) * hid;
            fc_grad[dst..dst + hid].copy_from_slice(&fc_dw[src..src + hid]);
        }
    }
    grads.push(ParamGrad {
        id: net.value_fc.weight.id,
        shape: vec![vc * SQUARES, hid],
        values: fc_grad,
    });
    if let Some(b) = &net.value_fc.bias {
        grads.push(ParamGrad {
            id: b.id,
            shape: vec![hid],
            values: fc_db,
        });
    }
    grads.extend(linear_grads(&net.value_out, hid, 3, out_dw, out_db));
    if let Some((layer, ..)) = &short {
        grads.extend(linear_grads(layer, hid, sw, short_dw, short_db));
    }

    // Trunk, last block first. `dh` is the gradient of the block's output.
    let mut dh = dtrunk;
    for (b, ((conv1, bn1, conv2, bn2, pool), (saved1, a1, pooled, saved2))) in
        blocks.iter().zip(&block_saved).enumerate().rev()
    {
        let (h_in, h_out) = (&hs[b], &hs[b + 1]);
        // dh becomes d(bn2 output) = d(skip input): the ReLU after the sum masks both.
        let sums2 = bn_mask(&saved2.stats, &mut dh, h_out, &saved2.z, c);
        let mut da1 = vec![0.0f32; rows * c];
        let w2 = conv_backward(
            conv2,
            bn2,
            saved2,
            &sums2,
            pooled.as_ref().map_or(a1, |(_, biased)| biased),
            &dh,
            Some((&mut da1, false)),
            rows,
        );
        // With global pooling `da1` is the gradient of the biased activation; the bias path
        // adds its share of every square's gradient to it.
        if let (Some(pool), Some((means, _))) = (pool, pooled) {
            grads.extend(pool.backward(means, &mut da1, n));
        }
        let sums1 = bn_mask(&saved1.stats, &mut da1, a1, &saved1.z, c);
        // The skip gradient is already in dh; the conv path adds to it.
        let w1 = conv_backward(
            conv1,
            bn1,
            saved1,
            &sums1,
            h_in,
            &da1,
            Some((&mut dh, true)),
            rows,
        );
        grads.push(conv1.grad(&w1));
        grads.extend(BnStats::param_grads(bn1, &sums1));
        grads.push(conv2.grad(&w2));
        grads.extend(BnStats::param_grads(bn2, &sums2));
    }

    // Stem.
    let sums0 = bn_mask(&stem_saved.stats, &mut dh, &hs[0], &stem_saved.z, c);
    let w0 = conv_backward(&stem, &stem_bn, &stem_saved, &sums0, &x0, &dh, None, rows);
    grads.push(stem.grad(&w0));
    grads.extend(BnStats::param_grads(&stem_bn, &sums0));

    Ok(TrainGrads {
        policy_ce: policy_loss / n as f64,
        value_ce,
        soft_policy_ce: soft_loss / n as f64,
        // softmax_ce returns each term unscaled: this is the mean over positions and horizons.
        short_term_value_ce: short_loss / (n * SHORT_TERM_VALUE_HORIZONS.len()) as f64,
        grads,
    })
}

/// A block's global pooling layer: `[c, c]` weight (burn's linear layout) and bias.
struct Pool<'a> {
    layer: &'a Linear,
    w: Vec<f32>,
    b: Vec<f32>,
}

impl Pool<'_> {
    fn channels(&self) -> usize {
        self.b.len()
    }

    /// From a block's middle activation `a` (`[n * 63, c]`) returns its board means `[n, c]`
    /// and `a` with the pooling bias `means * w + b` added to every square of each position.
    fn forward(&self, a: &[f32], n: usize) -> (Vec<f32>, Vec<f32>) {
        let c = self.channels();
        let mut means = board_sums(a, c);
        let inv = 1.0 / SQUARES as f32;
        means.iter_mut().for_each(|m| *m *= inv);
        let mut bias = vec![0.0f32; n * c];
        gemm(n, c, c, &mut bias, c, false, &means, c, 1, &self.w, c, 1);
        let mut biased = a.to_vec();
        biased
            .par_chunks_mut(SQUARES * c)
            .zip(bias.par_chunks_mut(c))
            .for_each(|(rows, bias)| {
                add_into(bias, &self.b);
                for row in rows.chunks_exact_mut(c) {
                    add_into(row, bias);
                }
            });
        (means, biased)
    }

    /// Given `d` (`[n * 63, c]`), the gradient of the biased activation, adds the bias path's
    /// gradient into it (each square gets `1 / 63` of the board mean's gradient) and returns
    /// the layer's weight and bias gradients.
    fn backward(&self, means: &[f32], d: &mut [f32], n: usize) -> Vec<ParamGrad> {
        let c = self.channels();
        let dbias = board_sums(d, c);
        let mut dw = vec![0.0f32; c * c];
        gemm(c, c, n, &mut dw, c, false, means, 1, c, &dbias, c, 1);
        let mut db = vec![0.0f32; c];
        add_col_sums(&mut db, &dbias);
        let mut dmeans = vec![0.0f32; n * c];
        gemm(n, c, c, &mut dmeans, c, false, &dbias, c, 1, &self.w, 1, c);
        let inv = 1.0 / SQUARES as f32;
        d.par_chunks_mut(SQUARES * c)
            .zip(dmeans.par_chunks(c))
            .for_each(|(rows, dm)| {
                for row in rows.chunks_exact_mut(c) {
                    for (v, &g) in row.iter_mut().zip(dm) {
                        *v += g * inv;
                    }
                }
            });
        linear_grads(self.layer, c, c, dw, db)
    }
}

/// Per-position sums over the board of `[n * 63, c]` rows, `[n, c]`.
fn board_sums(x: &[f32], c: usize) -> Vec<f32> {
    let n = x.len() / (SQUARES * c);
    let mut sums = vec![0.0f32; n * c];
    sums.par_chunks_mut(c)
        .zip(x.par_chunks(SQUARES * c))
        .for_each(|(s, rows)| add_col_sums(s, rows));
    sums
}

/// A policy target from plane-major (the net's output layout) to the logits' square-major
/// order.
fn square_major(t: &[f32], pp: usize, out: &mut [f32]) {
    for s in 0..SQUARES {
        for q in 0..pp {
            out[s * pp + q] = t[q * SQUARES + s];
        }
    }
}

/// The policy head's per-group state in [`loss_and_grads`]: losses, weight and bias gradients
/// of both policy outputs, and scratch rows.
struct PolicyAcc {
    loss: f64,
    dw: Vec<f32>,
    db: Vec<f32>,
    logits: Vec<f32>,
    target: Vec<f32>,
    soft_loss: f64,
    soft_dw: Vec<f32>,
    soft_db: Vec<f32>,
    soft_logits: Vec<f32>,
    soft_plane: Vec<f32>,
}

impl PolicyAcc {
    fn new(c: usize, pp: usize, chunk_rows: usize, psize: usize, soft: bool) -> Self {
        let k = usize::from(soft);
        Self {
            loss: 0.0,
            dw: vec![0.0; c * pp],
            db: vec![0.0; pp],
            logits: vec![0.0; chunk_rows * pp],
            target: vec![0.0; psize],
            soft_loss: 0.0,
            soft_dw: vec![0.0; k * c * pp],
            soft_db: vec![0.0; k * pp],
            soft_logits: vec![0.0; k * chunk_rows * pp],
            soft_plane: vec![0.0; k * psize],
        }
    }

    fn merge(a: Self, b: Self) -> Self {
        Self {
            loss: a.loss + b.loss,
            dw: sum_vecs(a.dw, b.dw),
            db: sum_vecs(a.db, b.db),
            soft_loss: a.soft_loss + b.soft_loss,
            soft_dw: sum_vecs(a.soft_dw, b.soft_dw),
            soft_db: sum_vecs(a.soft_db, b.soft_db),
            logits: a.logits,
            target: a.target,
            soft_logits: a.soft_logits,
            soft_plane: a.soft_plane,
        }
    }
}

/// A config and a net that disagree about an auxiliary head.
fn head_mismatch(head: &str, in_config: bool, in_net: bool) -> CpuNetError {
    CpuNetError(format!(
        "the config {} a {head} head, the net {}",
        if in_config { "has" } else { "has no" },
        if in_net { "has one" } else { "has none" }
    ))
}

/// The value head's per-block accumulators: its loss and its layers' weight gradients
/// (`sw` short-term logits; 0 without that head).
struct ValueAcc {
    loss: f64,
    fdw: Vec<f32>,
    fdb: Vec<f32>,
    odw: Vec<f32>,
    odb: Vec<f32>,
    short_loss: f64,
    sdw: Vec<f32>,
    sdb: Vec<f32>,
}

impl ValueAcc {
    fn new(vwidth: usize, hid: usize, sw: usize) -> Self {
        Self {
            loss: 0.0,
            fdw: vec![0.0; vwidth * hid],
            fdb: vec![0.0; hid],
            odw: vec![0.0; hid * 3],
            odb: vec![0.0; 3],
            short_loss: 0.0,
            sdw: vec![0.0; hid * sw],
            sdb: vec![0.0; sw],
        }
    }

    fn merge(a: Self, b: Self) -> Self {
        Self {
            loss: a.loss + b.loss,
            fdw: sum_vecs(a.fdw, b.fdw),
            fdb: sum_vecs(a.fdb, b.fdb),
            odw: sum_vecs(a.odw, b.odw),
            odb: sum_vecs(a.odb, b.odb),
            short_loss: a.short_loss + b.short_loss,
            sdw: sum_vecs(a.sdw, b.sdw),
            sdb: sum_vecs(a.sdb, b.sdb),
        }
    }
}

/// A 1x1 output convolution `[cout, cin, 1, 1]` (with its bias, zeros without one) as the
/// `[cin, cout]` matrix the channels-last GEMMs take.
fn output_conv(
    layer: &Conv2d,
    cin: usize,
    cout: usize,
    what: &str,
) -> Result<(Vec<f32>, Vec<f32>), CpuNetError> {
    let raw = param_floats(&layer.weight, cout * cin, what)?;
    let w = (0..cin * cout)
        .map(|i| raw[(i % cout) * cin + i / cout])
        .collect();
    let b = match &layer.bias {
        Some(b) => param_floats(b, cout, &format!("{what}.bias"))?,
        None => vec![0.0; cout],
    };
    Ok((w, b))
}

/// The gradients of an [`output_conv`] layer from its `[cin, cout]` weight gradient `dw` and
/// its bias gradient, in burn's layout.
fn output_conv_grads(
    layer: &Conv2d,
    cin: usize,
    cout: usize,
    dw: &[f32],
    db: Vec<f32>,
) -> Vec<ParamGrad> {
    let weight = ParamGrad {
        id: layer.weight.id,
        shape: vec![cout, cin, 1, 1],
        values: (0..cout * cin)
            .map(|i| dw[(i % cin) * cout + i / cin])
            .collect(),
    };
    with_bias_grad(weight, layer.bias.as_ref(), db)
}

/// The gradients of a linear layer `[input, output]` (burn's layout, the GEMMs' too).
fn linear_grads(
    layer: &Linear,
    input: usize,
    output: usize,
    dw: Vec<f32>,
    db: Vec<f32>,
) -> Vec<ParamGrad> {
    let weight = ParamGrad {
        id: layer.weight.id,
        shape: vec![input, output],
        values: dw,
    };
    with_bias_grad(weight, layer.bias.as_ref(), db)
}

/// A layer's weight gradient, and its bias gradient `db` when the layer has a bias.
fn with_bias_grad(
    weight: ParamGrad,
    bias: Option<&Param<Tensor<1>>>,
    db: Vec<f32>,
) -> Vec<ParamGrad> {
    let mut out = vec![weight];
    if let Some(b) = bias {
        out.push(ParamGrad {
            id: b.id,
            shape: vec![db.len()],
            values: db,
        });
    }
    out
}

fn linear_bias(layer: &Linear, len: usize, what: &str) -> Result<Vec<f32>, CpuNetError> {
    match &layer.bias {
        Some(b) => param_floats(b, len, what),
        None => Ok(vec![0.0; len]),
    }
}
