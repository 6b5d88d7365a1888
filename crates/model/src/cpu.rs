//! The network's forward pass for inference on a CPU, outside burn.
//!
//! Why: self-play spends 98% of its time in the network (`yari bench selfplay`, search share
//! 2%), and on the 2-core machine burn's flex backend ran the default 4x32 net at 23% of the
//! matmul peak. A profile showed why: flex convolves image by image (63-row GEMMs), so im2col,
//! packing and memset took three times as long as the GEMM kernel itself. Here batch norm is
//! folded into the convolutions once, at load time, and blocks of `CHUNK` positions go
//! through the whole net together, every layer one im2col plus one GEMM, with bias, skip
//! connection and ReLU applied in one pass over the output. What it gained over flex:
//! `docs/experiments.md`, "Speed history".
//!
//! Two arithmetic paths compute the same function, chosen at run time ([`CpuPath`]): f32
//! (im2col + the `gemm` crate, any CPU) and, where the CPU has AVX-512 BF16, bf16 weights and
//! activations with f32 accumulation (the `bf16` module's hand-written `vdpbf16ps` kernel, no im2col).
//! `yari --cpu-path f32` (a [`crate::Backend`] choice) forces the fallback. `tests/cpu.rs` bounds how far the two disagree on
//! the shipped net over the oracle positions.
//!
//! The weights come from a burn [`Net`] (checkpoints, training and GPU inference stay burn's);
//! `tests/cpu.rs` checks that both forward passes agree on trained and random nets.

use burn::tensor::Tensor;
use yari_rules::encoding::{FILES, RANKS};

use crate::net::{Net, NetConfig, SQUARES};

mod bf16;
pub mod train;

pub use bf16::{dpbf16_peak_gflops, fma_f32_peak_gflops};
use bf16::{ConvBf16, PSQ};

/// The arithmetic a [`CpuNet`] runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum CpuPath {
    /// f32 everywhere: im2col + the `gemm` crate. Any CPU.
    F32,
    /// bf16 weights and activations, f32 accumulation, AVX-512 BF16 (`vdpbf16ps`). The value
    /// head's two dense layers stay f32 (5% of the work).
    Bf16,
}

impl CpuPath {
    /// Whether this CPU runs [`CpuPath::Bf16`].
    pub fn bf16_supported() -> bool {
        #[cfg(target_arch = "x86_64")]
        {
            std::arch::is_x86_feature_detected!("avx512f")
                && std::arch::is_x86_feature_detected!("avx512bf16")
        }
        #[cfg(not(target_arch = "x86_64"))]
        false
    }

    /// The fastest path this CPU supports.
    pub fn best_supported() -> Self {
        if Self::bf16_supported() {
            CpuPath::Bf16
        } else {
            CpuPath::F32
        }
    }

    /// `"f32"` or `"bf16"`.
    pub fn name(self) -> &'static str {
        match self {
            CpuPath::F32 => "f32",
            CpuPath::Bf16 => "bf16",
        }
    }
}

impl std::str::FromStr for CpuPath {
    type Err = CpuNetError;

    fn from_str(s: &str) -> Result<Self, CpuNetError> {
        match s {
            "f32" => Ok(CpuPath::F32),
            "bf16" if Self::bf16_supported() => Ok(CpuPath::Bf16),
            "bf16" => Err(CpuNetError(
                "the bf16 path needs AVX-512 BF16, which this CPU lacks".into(),
            )),
            other => Err(CpuNetError(format!(
                "unknown CPU path {other:?}: expected f32 or bf16"
            ))),
        }
    }
}

impl std::fmt::Display for CpuPath {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// The layers of the bf16 path (the value head's dense layers are shared with the f32 path).
#[derive(Clone, Debug)]
struct Bf16Layers {
    stem: ConvBf16,
    blocks: Vec<(ConvBf16, ConvBf16)>,
    policy_conv: ConvBf16,
    policy_out: ConvBf16,
    value_conv: ConvBf16,
}

impl Bf16Layers {
    fn conv3(c: &Conv3x3) -> ConvBf16 {
        ConvBf16::new(ConvBf16::taps3x3(), c.cin, c.cout, &c.weight, &c.bias)
    }

    fn conv1(d: &Dense) -> ConvBf16 {
        ConvBf16::new(vec![(1, 1)], d.din, d.dout, &d.weight, &d.bias)
    }
}

/// Positions that go through the whole net together: 8 x 63 = 504 GEMM rows, and an im2col
/// block of a trunk layer (504 x 288 floats for 32 channels) and activations that stay in a
/// core's L2 cache; the sizes tried: `docs/experiments.md`, "Speed history".
const CHUNK: usize = 8;

/// One residual block: two convolutions and, with [`NetConfig::global_pooling`], the linear
/// layer from the board mean of the first one's output to a bias for every square.
#[derive(Clone, Debug)]
struct Block {
    conv1: Conv3x3,
    conv2: Conv3x3,
    pool: Option<Dense>,
}

/// A config and a net's `block` that disagree about global pooling (`in_config`: the config
/// has it).
pub(crate) fn pooling_mismatch(block: &str, in_config: bool) -> CpuNetError {
    CpuNetError(format!(
        "{block}: the config {} global pooling, the net {}",
        if in_config { "has" } else { "has no" },
        if in_config { "has none" } else { "has it" }
    ))
}

/// The board mean of each of the first `c` channels of `n` positions' channels-last
/// activations (`[n][63][stride]`), `[n, c]`.
fn board_means(y: &[f32], n: usize, stride: usize, c: usize) -> Vec<f32> {
    let mut means = vec![0.0f32; n * c];
    for (p, mean) in means.chunks_exact_mut(c).enumerate() {
        for row in y[p * SQUARES * stride..(p + 1) * SQUARES * stride].chunks_exact(stride) {
            for (m, &v) in mean.iter_mut().zip(&row[..c]) {
                *m += v;
            }
        }
        let inv = 1.0 / SQUARES as f32;
        mean.iter_mut().for_each(|m| *m *= inv);
    }
    means
}

/// The global pooling bias of `n` positions, `[n, c]`: `pool` applied to their board means.
fn pooling_bias(pool: &Dense, y: &[f32], n: usize, stride: usize) -> Vec<f32> {
    let c = pool.din;
    let means = board_means(y, n, stride, c);
    let mut bias = vec![0.0f32; n * pool.dout];
    pool.forward(&means, false, &mut bias);
    bias
}

/// A 3x3 same-padded convolution with its batch norm folded in.
#[derive(Clone, Debug)]
pub(crate) struct Conv3x3 {
    pub(crate) cin: usize,
    pub(crate) cout: usize,
    /// `[9 * cin, cout]`, row `(ky * 3 + kx) * cin + ci`: the im2col layout.
    pub(crate) weight: Vec<f32>,
    /// `[cout]`: the batch norm's shift.
    pub(crate) bias: Vec<f32>,
}

/// A dense layer (a linear layer, or a 1x1 convolution over channels-last activations).
#[derive(Clone, Debug)]
pub(crate) struct Dense {
    pub(crate) din: usize,
    pub(crate) dout: usize,
    /// `[din, dout]`.
    pub(crate) weight: Vec<f32>,
    /// `[dout]`.
    pub(crate) bias: Vec<f32>,
}

/// Why a [`Net`] could not be turned into a [`CpuNet`].
#[derive(Debug, thiserror::Error)]
#[error("cannot build the CPU forward pass: {0}")]
pub struct CpuNetError(String);

/// A [`Net`]'s inference forward pass on the CPU; see the module docs.
#[derive(Clone, Debug)]
pub struct CpuNet {
    config: NetConfig,
    stem: Conv3x3,
    blocks: Vec<Block>,
    policy_conv: Conv3x3,
    policy_out: Dense,
    value_conv: Dense,
    value_fc: Dense,
    value_out: Dense,
    path: CpuPath,
    /// Present when `path` is [`CpuPath::Bf16`].
    fast: Option<Bf16Layers>,
}

fn floats<const D: usize>(t: Tensor<D>, what: &str) -> Result<Vec<f32>, CpuNetError> {
    t.into_data()
        .try_into_vec_as::<f32>()
        .map_err(|e| CpuNetError(format!("{what}: {e:?}")))
}

fn expect_len(v: &[f32], len: usize, what: &str) -> Result<(), CpuNetError> {
    if v.len() == len {
        Ok(())
    } else {
        Err(CpuNetError(format!(
            "{what} has {} values, expected {len}",
            v.len()
        )))
    }
}

/// Per-channel `(scale, shift)` of a batch norm in inference mode:
/// `gamma * (x - mean) / sqrt(var + eps) + beta = scale * x + shift`.
fn fold_batch_norm(
    bn: &burn::nn::BatchNorm,
    channels: usize,
    what: &str,
) -> Result<(Vec<f32>, Vec<f32>), CpuNetError> {
    let gamma = floats(bn.gamma.val(), what)?;
    let beta = floats(bn.beta.val(), what)?;
    let mean = floats(bn.running_mean.value(), what)?;
    let var = floats(bn.running_var.value(), what)?;
    for v in [&gamma, &beta, &mean, &var] {
        expect_len(v, channels, what)?;
    }
    let eps = bn.epsilon;
    let scale: Vec<f32> = (0..channels)
        .map(|c| (gamma[c] as f64 / (var[c] as f64 + eps).sqrt()) as f32)
        .collect();
    let shift = (0..channels)
        .map(|c| beta[c] - mean[c] * scale[c])
        .collect();
    Ok((scale, shift))
}

/// Conv weight `[cout, cin, 3, 3]` (no bias) followed by `bn`, in im2col layout.
pub(crate) fn fold_conv3x3(
    conv: &burn::nn::conv::Conv2d,
    bn: &burn::nn::BatchNorm,
    cin: usize,
    cout: usize,
    what: &str,
) -> Result<Conv3x3, CpuNetError> {
    let w = floats(conv.weight.val(), what)?;
    expect_len(&w, cout * cin * 9, what)?;
    let (scale, mut bias) = fold_batch_norm(bn, cout, what)?;
    if let Some(b) = &conv.bias {
        let b = floats(b.val(), what)?;
        expect_len(&b, cout, what)?;
        for c in 0..cout {
            bias[c] += b[c] * scale[c];
        }
    }
    let mut weight = vec![0.0; 9 * cin * cout];
    for co in 0..cout {
        for ci in 0..cin {
            for k in 0..9 {
                weight[(k * cin + ci) * cout + co] = w[(co * cin + ci) * 9 + k] * scale[co];
            }
        }
    }
    Ok(Conv3x3 {
        cin,
        cout,
        weight,
        bias,
    })
}

/// A 1x1 conv weight `[cout, cin, 1, 1]` (bias optional), optionally followed by a batch norm.
pub(crate) fn fold_conv1x1(
    conv: &burn::nn::conv::Conv2d,
    bn: Option<&burn::nn::BatchNorm>,
    cin: usize,
    cout: usize,
    what: &str,
) -> Result<Dense, CpuNetError> {
    let w = floats(conv.weight.val(), what)?;
    expect_len(&w, cout * cin, what)?;
    let mut bias = match &conv.bias {
        Some(b) => floats(b.val(), what)?,
        None => vec![0.0; cout],
    };
    expect_len(&bias, cout, what)?;
    let (scale, shift) = match bn {
        Some(bn) => fold_batch_norm(bn, cout, what)?,
        None => (vec![1.0; cout], vec![0.0; cout]),
    };
    for c in 0..cout {
        bias[c] = bias[c] * scale[c] + shift[c];
    }
    let mut weight = vec![0.0; cin * cout];
    for co in 0..cout {
        for ci in 0..cin {
            weight[ci * cout + co] = w[co * cin + ci] * scale[co];
        }
    }
    Ok(Dense {
        din: cin,
        dout: cout,
        weight,
        bias,
    })
}

/// A burn linear layer (weight `[d_input, d_output]`, the layout [`Dense`] uses).
pub(crate) fn linear(
    layer: &burn::nn::Linear,
    din: usize,
    dout: usize,
    what: &str,
) -> Result<Dense, CpuNetError> {
    let weight = floats(layer.weight.val(), what)?;
    expect_len(&weight, din * dout, what)?;
    let bias = match &layer.bias {
        Some(b) => floats(b.val(), what)?,
        None => vec![0.0; dout],
    };
    expect_len(&bias, dout, what)?;
    Ok(Dense {
        din,
        dout,
        weight,
        bias,
    })
}

/// `dst[m, n] = lhs[m, k] * rhs[k, n]`, all row-major and contiguous.
fn matmul(m: usize, k: usize, n: usize, lhs: &[f32], rhs: &[f32], dst: &mut [f32]) {
    assert!(lhs.len() >= m * k && rhs.len() >= k * n && dst.len() >= m * n);
    if m == 0 || n == 0 {
        return;
    }
    if k == 0 {
        dst[..m * n].fill(0.0);
        return;
    }
    // SAFETY: the assert above keeps every element gemm touches inside its slice: with
    // row-major strides (row stride = columns, column stride 1) the last elements read are
    // lhs[m * k - 1] and rhs[k * n - 1] and the last written is dst[m * n - 1]. `dst` is a
    // unique borrow, so it aliases neither input. `read_dst = false` makes gemm overwrite dst
    // (alpha is ignored) with beta = 1 times the product. Measured reason for calling the
    // unsafe entry point: it is the only interface of the gemm crate, which burn-flex already
    // builds, and one GEMM over a block is what makes this forward pass faster than flex's.
    unsafe {
        gemm::gemm(
            m,
            n,
            k,
            dst.as_mut_ptr(),
            1,
            n as isize,
            false,
            lhs.as_ptr(),
            1,
            k as isize,
            rhs.as_ptr(),
            1,
            n as isize,
            0.0,
            1.0,
            false,
            false,
            false,
            gemm::Parallelism::None,
        );
    }
}

impl Conv3x3 {
    /// `out = relu(conv(x) + bias [+ skip])` over the `x.len() / (63 * cin)` positions of `x`,
    /// channels last, as one im2col and one GEMM.
    ///
    /// `col` is this layer shape's im2col buffer, at least `positions * 63 * 9 * cin` long and
    /// all zero when first used: the slots of off-board neighbours are never written, so they
    /// stay zero from one call to the next and need no clearing (the caller keeps one buffer
    /// per input width, since the slots depend on it).
    fn forward(&self, x: &[f32], skip: Option<&[f32]>, out: &mut [f32], col: &mut [f32]) {
        let (cin, cout) = (self.cin, self.cout);
        let positions = x.len() / (SQUARES * cin);
        let k = 9 * cin;
        let rows = positions * SQUARES;
        im2col(x, cin, col);
        let block = &mut out[..rows * cout];
        matmul(rows, k, cout, &col[..rows * k], &self.weight, block);
        match skip {
            Some(skip) => {
                for (row, s) in block.chunks_exact_mut(cout).zip(skip.chunks_exact(cout)) {
                    for ((v, b), s) in row.iter_mut().zip(&self.bias).zip(s) {
                        *v = (*v + b + s).max(0.0);
                    }
                }
            }
            None => {
                for row in block.chunks_exact_mut(cout) {
                    for (v, b) in row.iter_mut().zip(&self.bias) {
                        *v = (*v + b).max(0.0);
                    }
                }
            }
        }
    }
}

impl Dense {
    /// `out = x * weight + bias`, ReLU'd if `relu`, for `x.len() / din` rows.
    fn forward(&self, x: &[f32], relu: bool, out: &mut [f32]) {
        let rows = x.len() / self.din;
        matmul(rows, self.din, self.dout, x, &self.weight, out);
        for row in out[..rows * self.dout].chunks_exact_mut(self.dout) {
            for (v, b) in row.iter_mut().zip(&self.bias) {
                *v += b;
                if relu {
                    *v = v.max(0.0);
                }
            }
        }
    }
}

impl CpuNet {
    /// Folds `net` (whose shape is `config`) into the CPU forward pass, on the fastest path
    /// this CPU supports.
    pub fn from_net(net: &Net, config: &NetConfig) -> Result<Self, CpuNetError> {
        Self::from_net_with_path(net, config, CpuPath::best_supported())
    }

    /// [`CpuNet::from_net`] on a given path (an error if this CPU cannot run it).
    pub fn from_net_with_path(
        net: &Net,
        config: &NetConfig,
        path: CpuPath,
    ) -> Result<Self, CpuNetError> {
        if path == CpuPath::Bf16 && !CpuPath::bf16_supported() {
            return Err(CpuNetError(
                "the bf16 path needs AVX-512 BF16, which this CPU lacks".into(),
            ));
        }
        let c = config.channels;
        if net.blocks.len() != config.blocks {
            return Err(CpuNetError(format!(
                "the net has {} blocks, its config {}",
                net.blocks.len(),
                config.blocks
            )));
        }
        let stem = fold_conv3x3(&net.stem, &net.stem_bn, config.input_planes, c, "stem")?;
        let blocks = net
            .blocks
            .iter()
            .enumerate()
            .map(|(i, b)| {
                let pool = match (&b.pool, config.global_pooling) {
                    (Some(layer), true) => Some(linear(layer, c, c, &format!("block {i} pool"))?),
                    (None, false) => None,
                    (_, pooling) => return Err(pooling_mismatch(&format!("block {i}"), pooling)),
                };
                Ok(Block {
                    conv1: fold_conv3x3(&b.conv1, &b.bn1, c, c, &format!("block {i} conv1"))?,
                    conv2: fold_conv3x3(&b.conv2, &b.bn2, c, c, &format!("block {i} conv2"))?,
                    pool,
                })
            })
            .collect::<Result<Vec<_>, CpuNetError>>()?;
        let policy_conv = fold_conv3x3(&net.policy_conv, &net.policy_bn, c, c, "policy conv")?;
        let policy_out =
            fold_conv1x1(&net.policy_out, None, c, config.policy_planes, "policy out")?;
        let vc = config.value_channels;
        let value_conv = fold_conv1x1(&net.value_conv, Some(&net.value_bn), c, vc, "value conv")?;
        let fc = linear(&net.value_fc, vc * SQUARES, config.value_hidden, "value fc")?;
        // burn flattens the value planes channel-major (`ch * 63 + sq`); the activations here
        // are square-major (`sq * vc + ch`), so the rows of the weight are permuted to match.
        let mut weight = vec![0.0; fc.weight.len()];
        let h = config.value_hidden;
        for ch in 0..vc {
            for sq in 0..SQUARES {
                let from = (ch * SQUARES + sq) * h;
                let to = (sq * vc + ch) * h;
                weight[to..to + h].copy_from_slice(&fc.weight[from..from + h]);
            }
        }
        let value_fc = Dense { weight, ..fc };
        let value_out = linear(&net.value_out, config.value_hidden, 3, "value out")?;
        let fast = (path == CpuPath::Bf16).then(|| Bf16Layers {
            stem: Bf16Layers::conv3(&stem),
            blocks: blocks
                .iter()
                .map(|b| (Bf16Layers::conv3(&b.conv1), Bf16Layers::conv3(&b.conv2)))
                .collect(),
            policy_conv: Bf16Layers::conv3(&policy_conv),
            policy_out: Bf16Layers::conv1(&policy_out),
            value_conv: Bf16Layers::conv1(&value_conv),
        });
        Ok(CpuNet {
            path,
            fast,
            config: *config,
            stem,
            blocks,
            policy_conv,
            policy_out,
            value_conv,
            value_fc,
            value_out,
        })
    }

    /// The net's shape.
    pub fn config(&self) -> &NetConfig {
        &self.config
    }

    /// The arithmetic this net runs.
    pub fn path(&self) -> CpuPath {
        self.path
    }

    /// Runs the net on `n` encoded positions (`input`: `[n, C, 9, 7]` row-major, as
    /// `encode_batch` makes them). Returns policy logits `[n, policy_size]` (plane-major) and
    /// WDL logits `[n, 3]`, exactly what [`Net::forward`] returns.
    ///
    /// # Panics
    ///
    /// If `input` is not `n` positions of the net's input planes.
    pub fn forward(&self, input: &[f32], n: usize) -> (Vec<f32>, Vec<f32>) {
        let cfg = &self.config;
        let per_input = cfg.input_planes * SQUARES;
        assert_eq!(input.len(), n * per_input, "input size");
        let per_policy = cfg.policy_size();
        let mut policy = vec![0.0; n * per_policy];
        let mut wdl = vec![0.0; n * 3];
        let chunk = CHUNK.min(n.max(1));
        if let Some(fast) = &self.fast {
            let mut bufs = Bf16Buffers::new(cfg, fast, chunk);
            for first in (0..n).step_by(chunk) {
                let count = chunk.min(n - first);
                // SAFETY: `fast` exists only when `from_net_with_path` found avx512f and
                // avx512bf16 on this CPU.
                unsafe {
                    self.forward_chunk_bf16(
                        fast,
                        &input[first * per_input..(first + count) * per_input],
                        count,
                        &mut bufs,
                        &mut policy[first * per_policy..(first + count) * per_policy],
                        &mut wdl[first * 3..(first + count) * 3],
                    )
                };
            }
            return (policy, wdl);
        }
        let mut col_stem = vec![0.0; chunk * SQUARES * 9 * cfg.input_planes];
        let mut col_trunk = vec![0.0; chunk * SQUARES * 9 * cfg.channels];
        for first in (0..n).step_by(chunk) {
            let count = chunk.min(n - first);
            self.forward_chunk(
                &input[first * per_input..(first + count) * per_input],
                count,
                &mut col_stem,
                &mut col_trunk,
                &mut policy[first * per_policy..(first + count) * per_policy],
                &mut wdl[first * 3..(first + count) * 3],
            );
        }
        (policy, wdl)
    }

    /// [`CpuNet::forward`] on a block of positions small enough to stay in cache, writing
    /// straight into the block's part of the outputs.
    fn forward_chunk(
        &self,
        input: &[f32],
        n: usize,
        col_stem: &mut [f32],
        col_trunk: &mut [f32],
        policy: &mut [f32],
        wdl: &mut [f32],
    ) {
        let cfg = &self.config;
        let planes = cfg.input_planes;
        let c = cfg.channels;
        // Channels last: square-major rows of `planes` values.
        let mut x0 = vec![0.0; n * SQUARES * planes];
        for p in 0..n {
            for ch in 0..planes {
                let src = &input[(p * planes + ch) * SQUARES..(p * planes + ch + 1) * SQUARES];
                for (sq, &v) in src.iter().enumerate() {
                    x0[(p * SQUARES + sq) * planes + ch] = v;
                }
            }
        }
        let mut x = vec![0.0; n * SQUARES * c];
        let mut y = vec![0.0; n * SQUARES * c];
        let mut z = vec![0.0; n * SQUARES * c];
        self.stem.forward(&x0, None, &mut x, col_stem);
        for block in &self.blocks {
            block.conv1.forward(&x, None, &mut y, col_trunk);
            if let Some(pool) = &block.pool {
                let bias = pooling_bias(pool, &y, n, c);
                for (rows, b) in y.chunks_exact_mut(SQUARES * c).zip(bias.chunks_exact(c)) {
                    for row in rows.chunks_exact_mut(c) {
                        add_into(row, b);
                    }
                }
            }
            block.conv2.forward(&y, Some(&x), &mut z, col_trunk);
            std::mem::swap(&mut x, &mut z);
        }
        // Policy: 3x3 conv, then the 1x1 conv to policy planes, returned plane-major.
        self.policy_conv.forward(&x, None, &mut y, col_trunk);
        let planes_out = cfg.policy_planes;
        let mut logits = vec![0.0; n * SQUARES * planes_out];
        self.policy_out.forward(&y, false, &mut logits);
        for p in 0..n {
            for sq in 0..SQUARES {
                let row = &logits[(p * SQUARES + sq) * planes_out..][..planes_out];
                for (pl, &v) in row.iter().enumerate() {
                    policy[(p * planes_out + pl) * SQUARES + sq] = v;
                }
            }
        }
        // Value: 1x1 conv, then two dense layers over each position's flattened planes.
        let vc = cfg.value_channels;
        let mut v = vec![0.0; n * SQUARES * vc];
        self.value_conv.forward(&x, true, &mut v);
        let mut hidden = vec![0.0; n * cfg.value_hidden];
        self.value_fc.forward(&v, true, &mut hidden);
        self.value_out.forward(&hidden, false, wdl);
    }
}

/// Activations of the bf16 path for one block of positions. The padded boards' borders are
/// never written, so they stay zero from block to block.
struct Bf16Buffers {
    /// Input planes, bf16 padded boards, channel stride `cs_in`.
    input: Vec<u16>,
    cs_in: usize,
    /// The trunk's activations as bf16 padded boards (the next layer's input), stride `cs`.
    xb: Vec<u16>,
    yb: Vec<u16>,
    cs: usize,
    /// The residual stream in f32 (skip connections add it unrounded), `[n][63][cs]`.
    x: Vec<f32>,
    /// A block's middle activation in f32 before its global pooling bias, `[n][63][cs]`
    /// (empty without global pooling).
    y: Vec<f32>,
    /// Policy logits `[n][63][policy stride]`.
    logits: Vec<f32>,
    /// Value planes `[n][63][value stride]`, and compacted `[n][63 * value_channels]`.
    value: Vec<f32>,
    value_compact: Vec<f32>,
    hidden: Vec<f32>,
}

impl Bf16Buffers {
    fn new(cfg: &NetConfig, fast: &Bf16Layers, n: usize) -> Self {
        let cs_in = bf16::padded(cfg.input_planes);
        let cs = fast.stem.cout_pad();
        Self {
            input: vec![0; n * PSQ * cs_in],
            cs_in,
            xb: vec![0; n * PSQ * cs],
            yb: vec![0; n * PSQ * cs],
            cs,
            x: vec![0.0; n * SQUARES * cs],
            y: vec![
                0.0;
                if cfg.global_pooling {
                    n * SQUARES * cs
                } else {
                    0
                }
            ],
            logits: vec![0.0; n * SQUARES * fast.policy_out.cout_pad()],
            value: vec![0.0; n * SQUARES * fast.value_conv.cout_pad()],
            value_compact: vec![0.0; n * SQUARES * cfg.value_channels],
            hidden: vec![0.0; n * cfg.value_hidden],
        }
    }
}

impl CpuNet {
    /// [`CpuNet::forward_chunk`] on the bf16 path.
    ///
    /// # Safety
    ///
    /// The CPU must support `avx512f` and `avx512bf16`.
    unsafe fn forward_chunk_bf16(
        &self,
        fast: &Bf16Layers,
        input: &[f32],
        n: usize,
        b: &mut Bf16Buffers,
        policy: &mut [f32],
        wdl: &mut [f32],
    ) {
        let cfg = &self.config;
        let planes = cfg.input_planes;
        for p in 0..n {
            for ch in 0..planes {
                let src = &input[(p * planes + ch) * SQUARES..(p * planes + ch + 1) * SQUARES];
                for r in 0..RANKS {
                    for f in 0..FILES {
                        let at = (p * PSQ + (r + 1) * bf16::PF + f + 1) * b.cs_in + ch;
                        b.input[at] = bf16::to_bf16(src[r * FILES + f]);
                    }
                }
            }
        }
        let cs = b.cs;
        fast.stem.forward(
            n,
            &b.input,
            b.cs_in,
            false,
            Some(&mut b.x),
            Some(&mut b.xb),
            true,
        );
        for ((conv1, conv2), block) in fast.blocks.iter().zip(&self.blocks) {
            match &block.pool {
                None => conv1.forward(n, &b.xb, cs, false, None, Some(&mut b.yb), true),
                Some(pool) => {
                    // The pooled bias is added in f32 and the sum rounded once.
                    conv1.forward(n, &b.xb, cs, false, Some(&mut b.y), None, true);
                    let c = pool.dout;
                    let bias = pooling_bias(pool, &b.y, n, cs);
                    for p in 0..n {
                        let bias = &bias[p * c..(p + 1) * c];
                        for sq in 0..SQUARES {
                            let row = &b.y[(p * SQUARES + sq) * cs..][..c];
                            let padded_sq = (sq / FILES + 1) * bf16::PF + sq % FILES + 1;
                            let out = &mut b.yb[(p * PSQ + padded_sq) * cs..][..c];
                            for ((o, &v), &d) in out.iter_mut().zip(row).zip(bias) {
                                *o = bf16::to_bf16(v + d);
                            }
                        }
                    }
                }
            }
            conv2.forward(n, &b.yb, cs, true, Some(&mut b.x), Some(&mut b.xb), true);
        }
        fast.policy_conv
            .forward(n, &b.xb, cs, false, None, Some(&mut b.yb), true);
        fast.policy_out
            .forward(n, &b.yb, cs, false, Some(&mut b.logits), None, false);
        let stride = fast.policy_out.cout_pad();
        let planes_out = cfg.policy_planes;
        for p in 0..n {
            for sq in 0..SQUARES {
                let row = &b.logits[(p * SQUARES + sq) * stride..][..planes_out];
                for (pl, &v) in row.iter().enumerate() {
                    policy[(p * planes_out + pl) * SQUARES + sq] = v;
                }
            }
        }
        fast.value_conv
            .forward(n, &b.xb, cs, false, Some(&mut b.value), None, true);
        let (vs, vc) = (fast.value_conv.cout_pad(), cfg.value_channels);
        for (dst, src) in b.value_compact[..n * SQUARES * vc]
            .chunks_exact_mut(vc)
            .zip(b.value.chunks_exact(vs))
        {
            dst.copy_from_slice(&src[..vc]);
        }
        let hidden = &mut b.hidden[..n * cfg.value_hidden];
        self.value_fc
            .forward(&b.value_compact[..n * SQUARES * vc], true, hidden);
        self.value_out.forward(hidden, false, wdl);
    }
}

/// `acc += other`, element by element.
pub(crate) fn add_into(acc: &mut [f32], other: &[f32]) {
    for (a, b) in acc.iter_mut().zip(other) {
        *a += b;
    }
}

/// Writes the im2col rows (`[rows, 9 * c]`) of the `x.len() / (63 * c)` channels-last positions
/// of `x` into `col`, for a same-padded 3x3 convolution. The on-board neighbours of one kernel
/// row are adjacent squares of one rank and adjacent slots of the im2col row: one copy per
/// kernel row. Slots of off-board neighbours are never written: `col` must have been zeroed
/// when allocated and used only with this `c` since, so they stay zero.
pub(crate) fn im2col(x: &[f32], c: usize, col: &mut [f32]) {
    let positions = x.len() / (SQUARES * c);
    let k = 9 * c;
    for p in 0..positions {
        let image = &x[p * SQUARES * c..(p + 1) * SQUARES * c];
        for r in 0..RANKS {
            for f in 0..FILES {
                let row = (p * SQUARES + r * FILES + f) * k;
                let f_lo = f.saturating_sub(1);
                let f_hi = (f + 1).min(FILES - 1);
                let kx_lo = f_lo + 1 - f;
                let len = (f_hi - f_lo + 1) * c;
                for ky in 0..3 {
                    let rr = r + ky;
                    if rr == 0 || rr > RANKS {
                        continue;
                    }
                    let src = ((rr - 1) * FILES + f_lo) * c;
                    let dst = row + (ky * 3 + kx_lo) * c;
                    col[dst..dst + len].copy_from_slice(&image[src..src + len]);
                }
            }
        }
    }
}
