//! The residual policy/value network.
//!
//! burn 0.22 tensors carry their backend in their [`Device`] instead of a type parameter, so
//! this single module definition serves every backend (flex, ndarray, wgpu, cuda) and autodiff
//! alike: a net built on `device.autodiff()` trains, the same net on a plain device infers
//! without building a graph.

use burn::module::Module;
use burn::nn::conv::{Conv2d, Conv2dConfig};
use burn::nn::{BatchNorm, BatchNormConfig, Linear, LinearConfig, PaddingConfig2d};
use burn::tensor::activation::relu;
use burn::tensor::{Device, Tensor};
use serde::{Deserialize, Serialize};
use yari_rules::encoding::{FILES, INPUT_PLANES, POLICY_PLANES, RANKS};

/// Squares per plane; every plane is a 9 x 7 board.
pub const SQUARES: usize = RANKS * FILES;

/// The soft policy head's target is the search's policy target to the power 1 / this,
/// normalised: KataGo's value (`docs/KataGoMethods.md`, "auxiliary soft policy target").
pub const SOFT_POLICY_TEMPERATURE: f32 = 4.0;

/// The soft policy head's target for one position: the policy target `t` to the power
/// 1 / [`SOFT_POLICY_TEMPERATURE`], normalised to sum 1, into `out` (the same layout). An
/// all-zero target stays zero.
pub fn soft_policy_target(t: &[f32], out: &mut [f32]) {
    let power = 1.0 / SOFT_POLICY_TEMPERATURE;
    let mut sum = 0.0f64;
    for (o, &v) in out.iter_mut().zip(t) {
        *o = if v > 0.0 { v.powf(power) } else { 0.0 };
        sum += *o as f64;
    }
    if sum > 0.0 {
        let inv = (1.0 / sum) as f32;
        out.iter_mut().for_each(|v| *v *= inv);
    }
}

/// Plies ahead that the short-term value heads predict, one WDL output each: KataGo's
/// horizons (`docs/KataGoMethods.md`, "short-term value and score targets"). Each target is
/// the exponentially weighted average of the later searches' values with `lambda = 1 - 1 / h`
/// (yari-train's `short_term_value`).
pub const SHORT_TERM_VALUE_HORIZONS: [f32; 3] = [6.0, 16.0, 50.0];

/// Outputs of the short-term value head, and values of its target, per position: three WDL
/// logits per horizon, horizon-major.
pub const SHORT_TERM_WDL_SIZE: usize = 3 * SHORT_TERM_VALUE_HORIZONS.len();

/// Architecture of the network: everything that decides the shapes of the weights.
///
/// It is stored in every checkpoint so that a file can only be loaded into a net of the
/// same shape, and so that tools can rebuild the net without being told its size.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct NetConfig {
    /// Residual blocks in the trunk (two 3x3 convolutions each).
    pub blocks: usize,
    /// Channels of every trunk convolution.
    pub channels: usize,
    /// Input planes `C` of the `[C, 9, 7]` position tensor.
    pub input_planes: usize,
    /// Policy planes; the policy is `[policy_planes, 9, 7]` flattened plane-major.
    pub policy_planes: usize,
    /// Channels of the 1x1 convolution that starts the value head.
    pub value_channels: usize,
    /// Width of the hidden fully connected layer of the value head.
    pub value_hidden: usize,
    /// A second policy output, trained on the search's policy target softened to the power
    /// 1/4 (KataGo's auxiliary soft policy): the low-probability moves the main target barely
    /// shows still shape the trunk. Training only: play and export never evaluate it, so it
    /// costs nothing at inference. Absent in files written before it existed.
    #[serde(default)]
    pub soft_policy_head: bool,
    /// WDL outputs beside the value head's, one per [`SHORT_TERM_VALUE_HORIZONS`], trained on
    /// how the searches' values evolve over the next plies (KataGo's short-term value
    /// targets): the trunk learns from the whole game's course, not from its result alone,
    /// while the main value target stays as it is. Training only, like the soft policy head.
    /// Absent in files written before it existed.
    #[serde(default)]
    pub short_term_value_head: bool,
    /// Global pooling in every residual block (KataGo's global pooling bias, average only):
    /// the mean of the block's middle activation over the board goes through a linear layer,
    /// and the result is added to every square's channels before the second convolution. A
    /// 3x3 trunk sees the whole board only after several blocks, and what is global (pieces
    /// in hand, material, how exposed each General is) reaches every square in one block.
    /// No max pooling: empty squares with identical neighbourhoods tie exactly, and which of
    /// them a max routes its gradient to differs between backends. Absent in files written
    /// before it existed.
    #[serde(default)]
    pub global_pooling: bool,
}

impl Default for NetConfig {
    /// The default run's network, `[train.net]` of `configs/default.toml` (a test in
    /// yari-loop holds the two equal; why this size and this head: `docs/experiments.md`).
    fn default() -> Self {
        Self {
            short_term_value_head: true,
            ..Self::new(4, 32)
        }
    }
}

/// A [`NetConfig`] field outside what a net can be built with.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{field} = {value}: must be in 1..={max}")]
pub struct NetConfigError {
    /// The field, as named in configs and checkpoint metadata.
    pub field: &'static str,
    /// The value found.
    pub value: usize,
    /// The largest value allowed.
    pub max: usize,
}

impl NetConfig {
    /// Most residual blocks: 40 x 512 is already some 190 M weights (760 MB); far beyond this
    /// a config or a checkpoint header is a typo or damage, and building it would abort on
    /// allocation instead of failing with a message.
    pub const MAX_BLOCKS: usize = 40;
    /// Most trunk channels, and most value-head channels.
    pub const MAX_CHANNELS: usize = 512;
    /// Most input or policy planes (this build's encoding needs far fewer).
    pub const MAX_PLANES: usize = 1024;
    /// Widest hidden layer of the value head.
    pub const MAX_VALUE_HIDDEN: usize = 4096;

    /// Checks that every size is positive and within the limits above; burn panics on a
    /// zero-sized layer, so this runs before any net is built from a config or a file.
    pub fn validate(&self) -> Result<(), NetConfigError> {
        for (field, value, max) in [
            ("blocks", self.blocks, Self::MAX_BLOCKS),
            ("channels", self.channels, Self::MAX_CHANNELS),
            ("input_planes", self.input_planes, Self::MAX_PLANES),
            ("policy_planes", self.policy_planes, Self::MAX_PLANES),
            ("value_channels", self.value_channels, Self::MAX_CHANNELS),
            ("value_hidden", self.value_hidden, Self::MAX_VALUE_HIDDEN),
        ] {
            if !(1..=max).contains(&value) {
                return Err(NetConfigError { field, value, max });
            }
        }
        Ok(())
    }

    /// A net of the given trunk size, with the encoding's input and policy planes and no
    /// training-only head.
    pub fn new(blocks: usize, channels: usize) -> Self {
        Self {
            blocks,
            channels,
            input_planes: INPUT_PLANES,
            policy_planes: POLICY_PLANES,
            value_channels: 32,
            value_hidden: 128,
            soft_policy_head: false,
            short_term_value_head: false,
            global_pooling: false,
        }
    }

    /// Size of the flat policy output.
    pub fn policy_size(&self) -> usize {
        self.policy_planes * SQUARES
    }

    /// Multiply-accumulates of one forward pass for one position.
    ///
    /// Counted analytically so benchmarks can report GFLOP/s (2 x MACs) without a profiler;
    /// batch norm, ReLU and softmax are elementwise and left out.
    pub fn macs_per_position(&self) -> u64 {
        let c = self.channels as u64;
        let sq = SQUARES as u64;
        let conv3 = |cin: u64, cout: u64| cin * cout * 9 * sq;
        let stem = conv3(self.input_planes as u64, c);
        let pooling = if self.global_pooling { c * c } else { 0 };
        let trunk = self.blocks as u64 * (2 * conv3(c, c) + pooling);
        let policy = conv3(c, c) + c * self.policy_planes as u64 * sq;
        let vc = self.value_channels as u64;
        let value = c * vc * sq + vc * sq * self.value_hidden as u64 + self.value_hidden as u64 * 3;
        stem + trunk + policy + value
    }

    /// Floating-point operations of one forward pass for one position (2 x MACs).
    pub fn flops_per_position(&self) -> u64 {
        2 * self.macs_per_position()
    }

    /// Builds a freshly initialised net on `device`.
    pub fn init(&self, device: &Device) -> Net {
        let c = self.channels;
        let blocks = (0..self.blocks)
            .map(|_| ResBlock {
                conv1: conv3x3(c, c, device),
                bn1: BatchNormConfig::new(c).init(device),
                conv2: conv3x3(c, c, device),
                bn2: BatchNormConfig::new(c).init(device),
                pool: self
                    .global_pooling
                    .then(|| LinearConfig::new(c, c).init(device)),
            })
            .collect();
        let vc = self.value_channels;
        Net {
            stem: conv3x3(self.input_planes, c, device),
            stem_bn: BatchNormConfig::new(c).init(device),
            blocks,
            policy_conv: conv3x3(c, c, device),
            policy_bn: BatchNormConfig::new(c).init(device),
            policy_out: Conv2dConfig::new([c, self.policy_planes], [1, 1]).init(device),
            soft_policy_out: self
                .soft_policy_head
                .then(|| Conv2dConfig::new([c, self.policy_planes], [1, 1]).init(device)),
            value_conv: Conv2dConfig::new([c, vc], [1, 1])
                .with_bias(false)
                .init(device),
            value_bn: BatchNormConfig::new(vc).init(device),
            value_fc: LinearConfig::new(vc * SQUARES, self.value_hidden).init(device),
            value_out: LinearConfig::new(self.value_hidden, 3).init(device),
            short_term_value_out: self
                .short_term_value_head
                .then(|| LinearConfig::new(self.value_hidden, SHORT_TERM_WDL_SIZE).init(device)),
        }
    }
}

/// A 3x3 same-padded convolution without bias: the batch norm that follows supplies the shift.
fn conv3x3(cin: usize, cout: usize, device: &Device) -> Conv2d {
    Conv2dConfig::new([cin, cout], [3, 3])
        .with_padding(PaddingConfig2d::Same)
        .with_bias(false)
        .init(device)
}

/// One residual block: conv-bn-relu-conv-bn, plus the skip connection, then relu; with
/// [`NetConfig::global_pooling`], the board mean of the first relu's output, through `pool`,
/// is added to every square before the second convolution.
#[derive(Module, Debug)]
pub struct ResBlock {
    pub(crate) conv1: Conv2d,
    pub(crate) bn1: BatchNorm,
    pub(crate) conv2: Conv2d,
    pub(crate) bn2: BatchNorm,
    /// `[channels, channels]` with bias. Last, so that the other parameters keep their
    /// visit order.
    pub(crate) pool: Option<Linear>,
}

impl ResBlock {
    fn forward(&self, x: Tensor<4>) -> Tensor<4> {
        let y = relu(self.bn1.forward(self.conv1.forward(x.clone())));
        let y = match &self.pool {
            Some(pool) => {
                let [batch, channels, ranks, files] = y.dims();
                let mean = y
                    .clone()
                    .reshape([batch, channels, ranks * files])
                    .mean_dim(2)
                    .reshape([batch, channels]);
                let bias = pool
                    .forward(mean)
                    .reshape([batch, channels, 1, 1])
                    .expand([batch, channels, ranks, files]);
                y + bias
            }
            None => y,
        };
        let y = self.bn2.forward(self.conv2.forward(y));
        relu(y + x)
    }
}

/// The policy/value network.
///
/// Batch norm follows the device: on an autodiff device it uses batch statistics and updates
/// its running averages (training), elsewhere it uses the running averages (inference).
#[derive(Module, Debug)]
pub struct Net {
    pub(crate) stem: Conv2d,
    pub(crate) stem_bn: BatchNorm,
    pub(crate) blocks: Vec<ResBlock>,
    pub(crate) policy_conv: Conv2d,
    pub(crate) policy_bn: BatchNorm,
    pub(crate) policy_out: Conv2d,
    pub(crate) value_conv: Conv2d,
    pub(crate) value_bn: BatchNorm,
    pub(crate) value_fc: Linear,
    pub(crate) value_out: Linear,
    /// [`NetConfig::soft_policy_head`]: a 1x1 convolution beside `policy_out`, on the same
    /// policy features. Last, so that the other parameters keep their visit order.
    pub(crate) soft_policy_out: Option<Conv2d>,
    /// [`NetConfig::short_term_value_head`]: a linear layer beside `value_out`, on the same
    /// hidden layer, with three logits per horizon. After `soft_policy_out` for the same reason.
    pub(crate) short_term_value_out: Option<Linear>,
}

impl Net {
    /// Runs the net on a batch of encoded positions `[batch, C, 9, 7]`.
    ///
    /// Returns the policy logits `[batch, policy_size]` (plane-major, matching
    /// `yari_rules::encoding::index_of`) and the win/draw/loss logits `[batch, 3]` from the
    /// side to move's view. Logits rather than probabilities, because training wants
    /// log-softmax and search softmaxes over legal moves only.
    pub fn forward(&self, input: Tensor<4>) -> (Tensor<2>, Tensor<2>) {
        let out = self.forward_heads(input, false);
        (out.policy, out.wdl)
    }

    /// [`Net::forward`], plus the training-only heads the net has when `aux` is set: the soft
    /// policy logits and the short-term WDL logits.
    pub fn forward_heads(&self, input: Tensor<4>, aux: bool) -> Heads {
        let mut x = relu(self.stem_bn.forward(self.stem.forward(input)));
        for block in &self.blocks {
            x = block.forward(x);
        }
        let p = relu(self.policy_bn.forward(self.policy_conv.forward(x.clone())));
        let soft_policy = match (&self.soft_policy_out, aux) {
            (Some(head), true) => Some(head.forward(p.clone()).flatten::<2>(1, 3)),
            _ => None,
        };
        let policy = self.policy_out.forward(p).flatten::<2>(1, 3);
        let v = relu(self.value_bn.forward(self.value_conv.forward(x)));
        let v = relu(self.value_fc.forward(v.flatten::<2>(1, 3)));
        let short_term_wdl = match (&self.short_term_value_out, aux) {
            (Some(head), true) => Some(head.forward(v.clone())),
            _ => None,
        };
        let wdl = self.value_out.forward(v);
        Heads {
            policy,
            wdl,
            soft_policy,
            short_term_wdl,
        }
    }
}

/// The outputs of [`Net::forward_heads`].
#[derive(Debug)]
pub struct Heads {
    /// Policy logits `[batch, policy_size]`.
    pub policy: Tensor<2>,
    /// Win/draw/loss logits `[batch, 3]`.
    pub wdl: Tensor<2>,
    /// Soft policy logits `[batch, policy_size]`, when asked for and present.
    pub soft_policy: Option<Tensor<2>>,
    /// Short-term WDL logits `[batch, 3 * horizons]` (horizon-major: the three logits of
    /// [`SHORT_TERM_VALUE_HORIZONS`]`[h]` at `3 h..3 h + 3`), when asked for and present.
    pub short_term_wdl: Option<Tensor<2>>,
}
