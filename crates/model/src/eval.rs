//! The evaluation interface shared by search and arena, and its two implementations.

use std::path::Path;

use burn::tensor::{Device, Tensor, TensorData};
use yari_rules::encoding::{encode_batch, index_of, FILES, INPUT_PLANES, POLICY_SIZE, RANKS};
use yari_rules::{Move, Position};

use crate::checkpoint::{Checkpoint, CheckpointError};
use crate::cpu::CpuNet;
use crate::net::{Net, NetConfig};

/// What search needs to know about a position.
#[derive(Clone, Debug, PartialEq)]
pub struct Evaluation {
    /// Prior probability of each legal move, in the order of `pos.legal_moves()`; sums to 1
    /// (empty when there is no legal move).
    pub priors: Vec<(Move, f32)>,
    /// Win, draw and loss probabilities from the side to move's view; search uses
    /// `wdl[0] - wdl[2]` as the value.
    pub wdl: [f32; 3],
}

impl Evaluation {
    /// Expected score for the side to move in [-1, 1].
    pub fn value(&self) -> f32 {
        self.wdl[0] - self.wdl[2]
    }
}

/// Evaluates positions in batches.
///
/// Batched because a network pays per call, not per position; the caller (search, arena)
/// decides the batch size. `Send + Sync` so one evaluator can serve several search threads.
pub trait Evaluator: Send + Sync {
    /// One evaluation per position, in the same order.
    fn evaluate(&self, positions: &[&Position]) -> Vec<Evaluation>;
}

/// Uniform priors and a certain draw: the "no knowledge" baseline, and a stand-in for search
/// tests and the very first self-play games, which need no burn at all.
#[derive(Clone, Copy, Debug, Default)]
pub struct UniformEvaluator;

impl Evaluator for UniformEvaluator {
    fn evaluate(&self, positions: &[&Position]) -> Vec<Evaluation> {
        positions
            .iter()
            .map(|pos| {
                let moves = pos.legal_moves();
                let p = 1.0 / moves.len().max(1) as f32;
                Evaluation {
                    priors: moves.iter().map(|&m| (m, p)).collect(),
                    wdl: [0.0, 1.0, 0.0],
                }
            })
            .collect()
    }
}

/// Evaluates with a [`Net`] on any burn device.
///
/// On a CPU device the forward pass is [`CpuNet`]'s (the same function, about twice as fast
/// as burn's CPU backend on the small nets self-play uses); GPU devices run burn's.
#[derive(Debug)]
pub struct NetEvaluator {
    net: Net,
    config: NetConfig,
    device: Device,
    cpu: Option<CpuNet>,
}

/// Whether `device` computes on the CPU, where [`CpuNet`] replaces burn's forward pass.
fn is_cpu(device: &Device) -> bool {
    #[cfg(feature = "flex")]
    if *device == Device::flex() {
        return true;
    }
    #[cfg(feature = "ndarray")]
    #[allow(deprecated)]
    if *device == Device::ndarray() {
        return true;
    }
    let _ = device;
    false
}

impl NetEvaluator {
    /// Wraps a net already on `device`.
    ///
    /// # Panics
    ///
    /// If `config` does not fit this build's encoding (input planes or policy size), since
    /// every evaluation would then misread the net's output.
    pub fn new(net: Net, config: NetConfig, device: Device) -> Self {
        assert_eq!(config.input_planes, INPUT_PLANES, "net input planes");
        assert_eq!(config.policy_size(), POLICY_SIZE, "net policy size");
        // A net that cannot be folded (never seen: it would need a weight of the wrong size)
        // still evaluates, through burn.
        let cpu = if is_cpu(&device) {
            // A bad YARI_CPU_PATH says so rather than silently changing the forward pass.
            CpuNet::from_net(&net, &config)
                .map_err(|e| eprintln!("warning: {e}; evaluating with burn's forward pass"))
                .ok()
        } else {
            None
        };
        Self {
            net,
            config,
            device,
            cpu,
        }
    }

    /// Runs burn's forward pass even on a CPU device (for benchmarks and tests comparing the two).
    pub fn with_burn_forward(mut self) -> Self {
        self.cpu = None;
        self
    }

    /// Whether evaluations go through [`CpuNet`] rather than burn.
    pub fn uses_cpu_forward(&self) -> bool {
        self.cpu.is_some()
    }

    /// The arithmetic of the [`CpuNet`] forward pass, if evaluations use it.
    pub fn cpu_path(&self) -> Option<crate::cpu::CpuPath> {
        self.cpu.as_ref().map(CpuNet::path)
    }

    /// Loads a checkpoint of any architecture onto `device`.
    pub fn from_checkpoint(
        path: impl AsRef<Path>,
        device: Device,
    ) -> Result<Self, CheckpointError> {
        let ckpt = Checkpoint::read(path)?;
        let config = ckpt.meta.config;
        let net = ckpt.into_net_any(&device)?;
        Ok(Self::new(net, config, device))
    }

    /// The wrapped net.
    pub fn net(&self) -> &Net {
        &self.net
    }

    /// The net's architecture.
    pub fn config(&self) -> &NetConfig {
        &self.config
    }

    /// The device the net runs on.
    pub fn device(&self) -> &Device {
        &self.device
    }

    /// Raw network outputs for a batch: policy logits (`n * POLICY_SIZE`, row-major) and
    /// WDL logits (`n * 3`). Exposed so tests and tools can look past the legal-move mask.
    pub fn logits(&self, positions: &[&Position]) -> (Vec<f32>, Vec<f32>) {
        let n = positions.len();
        let input = encode_batch(positions);
        if let Some(cpu) = &self.cpu {
            return cpu.forward(&input, n);
        }
        let x = Tensor::<4>::from_data(
            TensorData::new(input, [n, INPUT_PLANES, RANKS, FILES]),
            &self.device,
        );
        let (policy, wdl) = self.net.forward(x);
        let policy = policy
            .into_data()
            .try_into_vec::<f32>()
            .expect("policy logits are f32");
        let wdl = wdl
            .into_data()
            .try_into_vec::<f32>()
            .expect("wdl logits are f32");
        (policy, wdl)
    }
}

impl Evaluator for NetEvaluator {
    fn evaluate(&self, positions: &[&Position]) -> Vec<Evaluation> {
        if positions.is_empty() {
            return Vec::new();
        }
        let (policy, wdl) = self.logits(positions);
        positions
            .iter()
            .enumerate()
            .map(|(i, pos)| {
                let row = &policy[i * POLICY_SIZE..(i + 1) * POLICY_SIZE];
                let moves = pos.legal_moves();
                let mut priors: Vec<(Move, f32)> =
                    moves.iter().map(|&m| (m, row[index_of(pos, m)])).collect();
                softmax_in_place(priors.iter_mut().map(|(_, p)| p));
                let mut v = [wdl[3 * i], wdl[3 * i + 1], wdl[3 * i + 2]];
                softmax_in_place(v.iter_mut());
                Evaluation { priors, wdl: v }
            })
            .collect()
    }
}

/// Numerically stable softmax over the referenced values.
fn softmax_in_place<'a>(values: impl Iterator<Item = &'a mut f32>) {
    let mut values: Vec<&mut f32> = values.collect();
    let max = values.iter().map(|v| **v).fold(f32::NEG_INFINITY, f32::max);
    let mut sum = 0.0;
    for v in values.iter_mut() {
        **v = (**v - max).exp();
        sum += **v;
    }
    for v in values.iter_mut() {
        **v /= sum;
    }
}
