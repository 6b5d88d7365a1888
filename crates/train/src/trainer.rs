//! The training loop: optimizer steps over the replay window, resumable checkpoints, metrics.
//!
//! # Run-directory layout written here
//!
//! | path | content |
//! |---|---|
//! | `train/state.json` | [`TrainState`]: the step and the names of the two files below; replaced atomically last, so it always names a complete pair |
//! | `train/step-NNNNNNNNNN.ckpt` | weights + metadata in the model crate's checkpoint format |
//! | `train/step-NNNNNNNNNN.optim` | optimizer state (momentum / Adam moments), a burnpack optimizer record |
//! | `train/config.json` | the config of the latest `Trainer::open`, for the record |
//! | `train/shard-index.json` | size, modification time and position count of every shard seen, so a restart reads only the shards inside the window |
//! | `metrics.jsonl` | one [`StepMetrics`] per step, appended |
//!
//! Each file is written to a temporary name and renamed; `state.json` goes last and older
//! pairs are deleted only after it, so a kill at any point leaves a consistent resumable state.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use burn::module::{Module, ModuleVisitor, Param};
use burn::optim::decay::WeightDecayConfig;
use burn::optim::momentum::MomentumConfig;
use burn::optim::{AdamWConfig, GradientsParams, ModuleOptimizer, SgdConfig};
use burn::tensor::activation::log_softmax;
use burn::tensor::{Bytes, Device, Tensor, TensorData};
use indicatif::{ProgressBar, ProgressStyle};
use serde::{Deserialize, Serialize};
use yari_model::checkpoint::{self, Checkpoint, CheckpointMeta};
use yari_model::cpu::train::{loss_and_grads, LossWeights, TrainBatch};
use yari_model::net::{soft_policy_target, SHORT_TERM_VALUE_HORIZONS};
use yari_model::{Backend, Net, NetConfig};
use yari_rules::encoding::{FILES, INPUT_PLANES, POLICY_SIZE, RANKS};

use crate::config::{OptimizerKind, TrainConfig};
use crate::error::TrainError;
use crate::metrics::{MetricsWriter, StepMetrics, METRICS_FILE};
use crate::window::{Batch, Prefetcher, ReplayWindow, WindowSnapshot};

/// Subdirectory of the run directory holding the trainer's resumable state.
pub const TRAIN_DIR: &str = yari_io::layout::TRAIN_DIR;
/// The state pointer file inside [`TRAIN_DIR`].
pub const STATE_FILE: &str = yari_io::layout::TRAIN_STATE_FILE;
/// Position counts of the shards seen, inside [`TRAIN_DIR`] (see [`ReplayWindow::with_index`]).
pub const SHARD_INDEX_FILE: &str = yari_io::layout::SHARD_INDEX_FILE;
const STATE_FORMAT: u32 = 1;

pub use yari_model::TrainPath;

/// The resumable state pointer, `RUN_DIR/train/state.json`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TrainState {
    /// Layout version of this file.
    pub format: u32,
    /// Optimizer steps completed.
    pub step: u64,
    /// Weights checkpoint, a file name inside `train/`.
    pub checkpoint: String,
    /// Optimizer state, a file name inside `train/`.
    pub optimizer_state: String,
    /// Optimizer the state belongs to; resuming with another one is refused.
    pub optimizer: OptimizerKind,
    /// The net's architecture (also in the checkpoint).
    pub net: NetConfig,
    /// Sampler seed the steps so far used; with `step` it is the sampler's whole position.
    pub seed: u64,
    /// Positions trained on so far (sum of batch sizes).
    pub samples_seen: u64,
    /// Where the initial weights came from (a checkpoint path, or `fresh`).
    pub init: String,
    /// When this state was written, seconds since the Unix epoch.
    pub saved_unix_s: u64,
}

/// Mean values over the steps of one [`Trainer::train_steps`] call.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TrainSummary {
    /// Steps run in this call.
    pub steps: u64,
    /// Optimizer steps completed after the call.
    pub last_step: u64,
    /// Mean total loss.
    pub loss: f64,
    /// Mean policy loss (KL divergence from the search targets).
    pub policy_loss: f64,
    /// Mean WDL cross-entropy.
    pub value_loss: f64,
    /// Mean gradient norm before clipping.
    pub grad_norm: f64,
    /// Learning rate of the last step.
    pub lr: f64,
    /// Positions per second over the whole call.
    pub samples_per_s: f64,
    /// Positions in the replay window.
    pub window: usize,
    /// Positions in all shards.
    pub total_positions: usize,
}

/// The optimizer with its configured hyper-parameters, built from the config.
fn build_optimizer(config: &TrainConfig) -> ModuleOptimizer {
    match config.optimizer {
        OptimizerKind::Sgd => SgdConfig::new()
            .with_momentum((config.momentum > 0.0).then(|| {
                // burn's default dampening is 0.1; classic SGD momentum has none.
                MomentumConfig::new()
                    .with_momentum(config.momentum)
                    .with_dampening(0.0)
                    .with_nesterov(config.nesterov)
            }))
            .with_weight_decay(
                (config.weight_decay > 0.0)
                    .then(|| WeightDecayConfig::new(config.weight_decay as f32)),
            )
            .init(),
        OptimizerKind::AdamW => AdamWConfig::new()
            .with_beta_1(config.adam_beta1 as f32)
            .with_beta_2(config.adam_beta2 as f32)
            .with_epsilon(config.adam_epsilon as f32)
            .with_weight_decay(config.weight_decay as f32)
            .init(),
    }
}

/// Sums of squares of the gradients of every parameter, as tensors on the device.
struct GradSquares<'a> {
    grads: &'a GradientsParams,
    sums: Vec<Tensor<1>>,
}

impl ModuleVisitor for GradSquares<'_> {
    fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<D>>) {
        if let Some(g) = self.grads.get::<D>(param.id) {
            self.sums.push(g.square().sum());
        }
    }
}

/// Multiplies every gradient by a scalar tensor (global-norm clipping, on the device).
struct ScaleGrads<'a> {
    grads: &'a mut GradientsParams,
    scale: Tensor<1>,
}

impl ModuleVisitor for ScaleGrads<'_> {
    fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<D>>) {
        if let Some(g) = self.grads.remove::<D>(param.id) {
            let s: Tensor<D> = self.scale.clone().unsqueeze();
            self.grads.register(param.id, g * s);
        }
    }
}

/// Sums of every float parameter and buffer (batch-norm statistics included): the total is
/// finite exactly when every weight is (barring an overflow that is divergence anyway).
struct WeightSums {
    sums: Vec<Tensor<1>>,
}

impl ModuleVisitor for WeightSums {
    fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<D>>) {
        self.sums.push(param.val().inner().sum());
    }
}

/// The pure optimisation part, without files: a net on an autodiff device and its optimizer.
/// Shared by [`Trainer`] and [`crate::bench_train`].
pub(crate) struct Stepper {
    pub(crate) config: TrainConfig,
    pub(crate) device: Device,
    /// `None` only while an optimizer step has taken it.
    net: Option<Net>,
    pub(crate) optim: ModuleOptimizer,
    /// Optimizer steps completed.
    pub(crate) step: u64,
    /// How gradients are computed.
    pub(crate) path: TrainPath,
    /// How far the run is, in [0, 1], for the `run_cosine` lr schedule.
    pub(crate) run_progress: f64,
}

/// The numbers of one step, before they become [`StepMetrics`].
pub(crate) struct StepOutcome {
    pub(crate) policy_ce: f64,
    pub(crate) soft_policy_ce: f64,
    pub(crate) short_term_value_ce: f64,
    pub(crate) policy_loss: f64,
    pub(crate) value_loss: f64,
    pub(crate) loss: f64,
    pub(crate) grad_norm: f64,
    pub(crate) lr: f64,
}

impl Stepper {
    pub(crate) fn new(config: TrainConfig, device: Device, net: Net, path: TrainPath) -> Self {
        let optim = build_optimizer(&config);
        Self {
            config,
            device,
            net: Some(net),
            optim,
            step: 0,
            path,
            run_progress: 0.0,
        }
    }

    pub(crate) fn net(&self) -> &Net {
        self.net.as_ref().expect("net present between steps")
    }

    /// One optimizer step on `batch`.
    ///
    /// Loss: policy cross-entropy of the logits over the whole policy space against the dense
    /// search target, plus `value_loss_weight` times the WDL cross-entropy against the game
    /// result, plus `soft_policy_weight` times the soft policy head's cross-entropy against
    /// the softened target (a net with that head), plus `short_term_value_weight` times the
    /// short-term value head's WDL cross-entropy, averaged over its horizons, against the
    /// later searches' values (a net with that head). Illegal moves are not masked out of the
    /// softmax: their target is zero, so the loss teaches the net to give them no mass, search
    /// only ever reads legal moves' logits, and no per-position mask has to be built and
    /// uploaded. The gradient is clipped to the configured global norm on the device, and a
    /// single read-back at the end brings the losses, the norm and a finiteness probe of the
    /// updated weights to the host.
    pub(crate) fn step(&mut self, batch: &Batch) -> Result<StepOutcome, TrainError> {
        let lr = self.config.lr.lr_at(self.step, self.run_progress);
        let net = self.net.take().expect("net present between steps");
        let (net, grads, losses) = match self.path {
            TrainPath::Burn => self.burn_grads(net, batch),
            TrainPath::Cpu => self.cpu_grads(net, batch),
        };
        let (net, grads, [policy_ce, value_ce, soft_ce, short_ce, norm]) = match (grads, losses) {
            (Ok(g), l) => (net, g, l),
            (Err(e), _) => {
                self.net = Some(net);
                return Err(e);
            }
        };
        let net = self.optim.step(lr, net, grads);
        let mut weights = WeightSums { sums: Vec::new() };
        net.visit(&mut weights);
        let weight_sum = Tensor::cat(weights.sums, 0).sum();
        self.net = Some(net);
        self.step += 1;

        let probe = Tensor::cat(
            vec![
                policy_ce.reshape([1]),
                value_ce.reshape([1]),
                soft_ce.reshape([1]),
                short_ce.reshape([1]),
                norm.reshape([1]),
                weight_sum.reshape([1]),
            ],
            0,
        );
        let v = probe
            .into_data()
            .convert::<f32>()
            .try_into_vec::<f32>()
            .expect("f32 probe");
        let (policy_ce, value_loss, soft_policy_ce, short_term_value_ce, grad_norm, weight_sum) = (
            v[0] as f64,
            v[1] as f64,
            v[2] as f64,
            v[3] as f64,
            v[4] as f64,
            v[5],
        );
        let aux_terms = self.config.soft_policy_weight * soft_policy_ce
            + self.config.short_term_value_weight * short_term_value_ce;
        let loss = policy_ce + self.config.value_loss_weight * value_loss + aux_terms;
        let what = if !loss.is_finite() {
            Some("loss")
        } else if !grad_norm.is_finite() {
            Some("gradient norm")
        } else if !weight_sum.is_finite() {
            Some("weights after the update")
        } else {
            None
        };
        if let Some(what) = what {
            return Err(TrainError::NonFinite {
                step: self.step,
                what: what.into(),
                lr,
                last_checkpoint_step: 0,
            });
        }
        let policy_loss = policy_ce - batch.policy_entropy as f64;
        Ok(StepOutcome {
            policy_ce,
            soft_policy_ce,
            short_term_value_ce,
            policy_loss,
            value_loss,
            loss: policy_loss + self.config.value_loss_weight * value_loss + aux_terms,
            grad_norm,
            lr,
        })
    }

    /// burn's autodiff: the gradients, clipped, and `[policy ce, value ce, soft policy ce,
    /// short-term value ce, norm]` as one-element tensors on the inner device (read back
    /// once, with the weights' probe).
    fn burn_grads(
        &self,
        net: Net,
        batch: &Batch,
    ) -> (Net, Result<GradientsParams, TrainError>, [Tensor<1>; 5]) {
        let n = batch.size;
        let device = &self.device;
        let x = Tensor::<4>::from_data(
            TensorData::new(batch.inputs.clone(), [n, INPUT_PLANES, RANKS, FILES]),
            device,
        );
        let policy_target = Tensor::<2>::from_data(
            TensorData::new(batch.policy.clone(), [n, POLICY_SIZE]),
            device,
        );
        let wdl_target = Tensor::<2>::from_data(TensorData::new(batch.wdl.clone(), [n, 3]), device);

        let heads = net.forward_heads(x, true);
        let policy_ce = (log_softmax(heads.policy, 1) * policy_target)
            .sum_dim(1)
            .mean()
            .neg();
        let value_ce = (log_softmax(heads.wdl, 1) * wdl_target)
            .sum_dim(1)
            .mean()
            .neg();
        let mut total =
            policy_ce.clone() + value_ce.clone().mul_scalar(self.config.value_loss_weight);
        let soft_ce = heads.soft_policy.map(|logits| {
            let mut soft = vec![0.0f32; batch.policy.len()];
            for (t, out) in batch
                .policy
                .chunks_exact(POLICY_SIZE)
                .zip(soft.chunks_exact_mut(POLICY_SIZE))
            {
                soft_policy_target(t, out);
            }
            let target = Tensor::<2>::from_data(TensorData::new(soft, [n, POLICY_SIZE]), device);
            (log_softmax(logits, 1) * target).sum_dim(1).mean().neg()
        });
        if let Some(ce) = &soft_ce {
            total = total + ce.clone().mul_scalar(self.config.soft_policy_weight);
        }
        // Each horizon's three logits as a row of their own: one mean over positions and
        // horizons.
        let short_ce = heads.short_term_wdl.map(|logits| {
            let rows = n * SHORT_TERM_VALUE_HORIZONS.len();
            let target = Tensor::<2>::from_data(
                TensorData::new(batch.short_term_wdl.clone(), [rows, 3]),
                device,
            );
            (log_softmax(logits.reshape([rows, 3]), 1) * target)
                .sum_dim(1)
                .mean()
                .neg()
        });
        if let Some(ce) = &short_ce {
            total = total + ce.clone().mul_scalar(self.config.short_term_value_weight);
        }
        let mut grads = GradientsParams::from_grads(total.backward(), &net);
        let (pce, vce) = (policy_ce.inner(), value_ce.inner());
        let zero = || pce.clone().mul_scalar(0.0);
        let sce = soft_ce.map_or_else(zero, |ce| ce.inner());
        let tce = short_ce.map_or_else(zero, |ce| ce.inner());

        let mut squares = GradSquares {
            grads: &grads,
            sums: Vec::new(),
        };
        net.visit(&mut squares);
        if squares.sums.is_empty() {
            let zero = pce.clone();
            return (
                net,
                Err(TrainError::NoGradients),
                [pce, vce, sce, tce, zero],
            );
        }
        let norm = Tensor::cat(squares.sums, 0).sum().sqrt();
        if let Some(max_norm) = self.config.grad_clip_norm {
            let scale = norm
                .clone()
                .add_scalar(1e-6)
                .recip()
                .mul_scalar(max_norm)
                .clamp_max(1.0);
            let mut scaler = ScaleGrads {
                grads: &mut grads,
                scale,
            };
            net.visit(&mut scaler);
        }
        (net, Ok(grads), [pce, vce, sce, tce, norm.inner()])
    }

    /// The hand-written CPU pass (`yari_model::cpu::train`), clipped the way
    /// [`Stepper::burn_grads`] clips: `min(1, max_norm / (norm + 1e-6))`.
    fn cpu_grads(
        &self,
        net: Net,
        batch: &Batch,
    ) -> (Net, Result<GradientsParams, TrainError>, [Tensor<1>; 5]) {
        let inner = self.device.clone().without_autodiff();
        let scalar = |v: f64| Tensor::<1>::from_data(TensorData::new(vec![v as f32], [1]), &inner);
        let cpu_batch = TrainBatch {
            n: batch.size,
            inputs: &batch.inputs,
            policy: &batch.policy,
            wdl: &batch.wdl,
            short_term_wdl: &batch.short_term_wdl,
        };
        let out = match loss_and_grads(
            &net,
            &self.config.net,
            &cpu_batch,
            LossWeights {
                value: self.config.value_loss_weight as f32,
                soft_policy: self.config.soft_policy_weight as f32,
                short_term_value: self.config.short_term_value_weight as f32,
            },
        ) {
            Ok(out) => out,
            Err(e) => {
                let nan = || scalar(f64::NAN);
                return (
                    net,
                    Err(TrainError::Kernel(e)),
                    [nan(), nan(), nan(), nan(), nan()],
                );
            }
        };
        let norm = out.squared_norm().sqrt() as f32;
        let scale = match self.config.grad_clip_norm {
            Some(max_norm) => ((max_norm as f32) / (norm + 1e-6)).min(1.0),
            None => 1.0,
        };
        let losses = [
            scalar(out.policy_ce),
            scalar(out.value_ce),
            scalar(out.soft_policy_ce),
            scalar(out.short_term_value_ce),
            scalar(norm as f64),
        ];
        if out.grads.is_empty() {
            return (net, Err(TrainError::NoGradients), losses);
        }
        let grads = out.into_gradients_params(scale, &inner);
        (net, Ok(grads), losses)
    }
}

/// Trains a run's network: opens or resumes the state in a run directory, runs optimizer
/// steps on batches from the replay window, and writes checkpoints and metrics.
///
/// ```no_run
/// # fn main() -> Result<(), yari_train::TrainError> {
/// use yari_train::{TrainConfig, Trainer};
/// let run = std::path::Path::new("runs/first");
/// let mut trainer = Trainer::open(run, TrainConfig::default())?;
/// let summary = trainer.train_steps(500, true)?;
/// println!("loss {:.3}", summary.loss);
/// trainer.save_checkpoint(&run.join("models/gen-0001.yari"), 1, Some("gen-0000".into()))?;
/// # Ok(()) }
/// ```
pub struct Trainer {
    run_dir: PathBuf,
    train_dir: PathBuf,
    stepper: Stepper,
    window: ReplayWindow,
    metrics: MetricsWriter,
    samples_seen: u64,
    init: String,
    last_checkpoint_step: u64,
    poisoned: bool,
}

fn now_unix_s() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}

/// The device training runs on: the model crate's default device (a GPU when the model crate
/// is built with a GPU backend, else its CPU backend) with autodiff.
pub fn training_device() -> Device {
    yari_model::default_device().autodiff()
}

impl Trainer {
    /// Opens the trainer of the run in `run_dir` on the process's device
    /// ([`training_device`]) with that device's default [`TrainPath`]: resumes from
    /// `train/state.json` when it exists, else starts from freshly initialised weights
    /// (seeded by `config.seed`).
    pub fn open(run_dir: &Path, config: TrainConfig) -> Result<Self, TrainError> {
        Self::open_with(run_dir, config, None)
    }

    /// Like [`Trainer::open_with`], on `backend`'s device and training path (the binary's
    /// choice, passed down).
    pub fn open_on(
        run_dir: &Path,
        config: TrainConfig,
        init: Option<&Path>,
        backend: &Backend,
    ) -> Result<Self, TrainError> {
        let device = backend.device().clone().autodiff();
        Self::open_inner(run_dir, config, init, device, backend.train_path())
    }

    /// Like [`Trainer::open`], but a run without state starts from the weights of `init` (e.g.
    /// the run's current best net) instead of fresh ones. The step count starts at 0 either
    /// way, so the lr warm-up applies. Ignored when there is state to resume.
    ///
    /// A new state (step 0) is written at once, so a run is resumable from its first step.
    /// Errors: an invalid config; a checkpoint (to resume or `init`) whose architecture is not
    /// `config.net`; a state written with another optimizer.
    pub fn open_with(
        run_dir: &Path,
        config: TrainConfig,
        init: Option<&Path>,
    ) -> Result<Self, TrainError> {
        let device = training_device();
        let path = TrainPath::auto(&device);
        Self::open_inner(run_dir, config, init, device, path)
    }

    fn open_inner(
        run_dir: &Path,
        config: TrainConfig,
        init: Option<&Path>,
        device: Device,
        path: TrainPath,
    ) -> Result<Self, TrainError> {
        config.validate()?;
        let path = path
            .check(&device)
            .map_err(|e| TrainError::Config(e.to_string()))?;
        let train_dir = run_dir.join(TRAIN_DIR);
        std::fs::create_dir_all(&train_dir).map_err(|e| TrainError::io(&train_dir, e))?;
        let state_path = train_dir.join(STATE_FILE);
        let window = ReplayWindow::new(config.games_dir_in(run_dir), config.window.clone())
            .with_index(train_dir.join(SHARD_INDEX_FILE));
        let metrics = MetricsWriter::open(&run_dir.join(METRICS_FILE))?;
        yari_io::write_atomic(
            &train_dir.join(yari_io::layout::TRAIN_CONFIG_FILE),
            &serde_json::to_vec_pretty(&config).expect("config serialises"),
        )?;

        let trainer = if state_path.exists() {
            let text = yari_io::read_regular_file(&state_path, yari_io::MAX_LOG_BYTES)
                .map_err(|e| TrainError::io(&state_path, e))?;
            let state: TrainState =
                serde_json::from_slice(&text).map_err(|e| TrainError::State {
                    path: state_path.clone(),
                    what: format!("unreadable: {e}"),
                })?;
            if state.format != STATE_FORMAT {
                return Err(TrainError::State {
                    path: state_path,
                    what: format!("format {} (this build reads {STATE_FORMAT})", state.format),
                });
            }
            if state.optimizer != config.optimizer {
                return Err(TrainError::State {
                    path: state_path,
                    what: format!(
                        "was trained with optimizer {:?}, config asks for {:?}; start a new run (or a new run directory initialised from the checkpoint) to switch",
                        state.optimizer, config.optimizer
                    ),
                });
            }
            let ckpt_path = train_dir.join(&state.checkpoint);
            let net = Checkpoint::read(&ckpt_path)
                .and_then(|c| c.into_net(&config.net, &device))
                .map_err(|e| TrainError::checkpoint(&ckpt_path, e))?;
            let mut stepper = Stepper::new(config, device, net, path);
            let optim_path = train_dir.join(&state.optimizer_state);
            let bytes = std::fs::read(&optim_path).map_err(|e| TrainError::io(&optim_path, e))?;
            let optim = std::mem::replace(&mut stepper.optim, build_optimizer(&stepper.config));
            stepper.optim = optim
                .from_bytes(Bytes::from_bytes_vec(bytes))
                .map_err(|e| TrainError::OptimizerState {
                    path: optim_path,
                    what: e.to_string(),
                })?;
            stepper.step = state.step;
            Trainer {
                run_dir: run_dir.to_path_buf(),
                train_dir,
                stepper,
                window,
                metrics,
                samples_seen: state.samples_seen,
                init: state.init,
                last_checkpoint_step: state.step,
                poisoned: false,
            }
        } else {
            let (net, init_name) = match init {
                Some(path) => {
                    let net = Checkpoint::read(path)
                        .and_then(|c| c.into_net(&config.net, &device))
                        .map_err(|e| TrainError::checkpoint(path, e))?;
                    (net, path.display().to_string())
                }
                None => {
                    device.seed(config.seed);
                    (config.net.init(&device), "fresh".to_string())
                }
            };
            let mut trainer = Trainer {
                run_dir: run_dir.to_path_buf(),
                train_dir,
                stepper: Stepper::new(config, device, net, path),
                window,
                metrics,
                samples_seen: 0,
                init: init_name,
                last_checkpoint_step: 0,
                poisoned: false,
            };
            trainer.save_state()?;
            trainer
        };
        Ok(trainer)
    }

    /// Optimizer steps completed.
    pub fn step(&self) -> u64 {
        self.stepper.step
    }

    /// Tells the trainer how far its run is (0 at the start, 1 at the end): the `run_cosine`
    /// lr schedule reads it; the step-based schedules do not. A trainer opened outside a run
    /// stays at 0. Errors: a value outside [0, 1].
    pub fn set_run_progress(&mut self, progress: f64) -> Result<(), TrainError> {
        if !(0.0..=1.0).contains(&progress) {
            return Err(TrainError::Config(format!(
                "run progress must be in [0, 1], got {progress}"
            )));
        }
        self.stepper.run_progress = progress;
        Ok(())
    }

    /// How the steps compute their gradients.
    pub fn train_path(&self) -> TrainPath {
        self.stepper.path
    }

    /// Switches how later steps compute their gradients. Nothing else changes: weights,
    /// optimizer state and checkpoints are the same for both paths.
    pub fn set_train_path(&mut self, path: TrainPath) -> Result<(), TrainError> {
        self.stepper.path = path
            .check(&self.stepper.device)
            .map_err(|e| TrainError::Config(e.to_string()))?;
        Ok(())
    }

    /// The configuration in use.
    pub fn config(&self) -> &TrainConfig {
        &self.stepper.config
    }

    /// The run directory.
    pub fn run_dir(&self) -> &Path {
        &self.run_dir
    }

    /// The current weights as an inference net (no autodiff; batch norm uses its running
    /// statistics), e.g. to evaluate or to hand to self-play.
    pub fn inference_net(&self) -> Net {
        self.stepper.net().valid()
    }

    /// Rescans the games directory and returns the window batches will be drawn from.
    pub fn refresh_window(&mut self) -> Result<WindowSnapshot, TrainError> {
        self.window.refresh()
    }

    /// Shards the replay window left out since the last call because they could not be read
    /// (damaged or truncated), with why; the caller reports them and may set them aside.
    pub fn take_skipped_shards(&mut self) -> Vec<(PathBuf, String)> {
        self.window.take_skipped()
    }

    /// Runs `n` optimizer steps on the current replay window (rescanned first, so shards
    /// written since the last call are included), appending one metrics line per step and
    /// writing a resumable checkpoint every `checkpoint_interval` steps and at the end.
    ///
    /// With `progress`, an indicatif bar shows the step, loss and throughput on stderr.
    ///
    /// On a non-finite loss or weights the call stops with [`TrainError::NonFinite`] naming
    /// the step; nothing is written for it, so the last checkpoint stays the last good state,
    /// and the trainer refuses further work ([`TrainError::Poisoned`]) until reopened.
    pub fn train_steps(&mut self, n: u64, progress: bool) -> Result<TrainSummary, TrainError> {
        if self.poisoned {
            return Err(TrainError::Poisoned);
        }
        let result = self.train_steps_inner(n, progress);
        if result.is_err() {
            self.poisoned = true;
        }
        result
    }

    fn train_steps_inner(&mut self, n: u64, progress: bool) -> Result<TrainSummary, TrainError> {
        let snapshot = Arc::new(self.window.refresh()?);
        let need = self.stepper.config.window.min_positions.max(1);
        if snapshot.len() < need {
            return Err(TrainError::NotEnoughData {
                have: snapshot.len(),
                need,
                dir: self.window.games_dir().to_path_buf(),
            });
        }
        let config = self.stepper.config.clone();
        let bar = if progress {
            let bar = ProgressBar::new(n);
            bar.set_style(
                ProgressStyle::with_template(
                    "{elapsed_precise} [{bar:30}] {pos}/{len} steps ({eta} left)  {msg}",
                )
                .expect("valid template")
                .progress_chars("=> "),
            );
            bar
        } else {
            ProgressBar::hidden()
        };
        let mut producer = Prefetcher::spawn(
            snapshot.clone(),
            config.seed,
            config.batch_size,
            self.stepper.step,
            n,
            config.prefetch_batches,
        );
        let start = Instant::now();
        let mut sums = [0.0f64; 4];
        let mut last_lr = config
            .lr
            .lr_at(self.stepper.step, self.stepper.run_progress);
        for _ in 0..n {
            let t = Instant::now();
            let batch = producer.next_batch()?;
            debug_assert_eq!(batch.step, self.stepper.step);
            let last_checkpoint_step = self.last_checkpoint_step;
            let out = self.stepper.step(&batch).map_err(|e| match e {
                TrainError::NonFinite { step, what, lr, .. } => TrainError::NonFinite {
                    step,
                    what,
                    lr,
                    last_checkpoint_step,
                },
                e => e,
            })?;
            self.samples_seen += batch.size as u64;
            let secs = t.elapsed().as_secs_f64().max(1e-9);
            let m = StepMetrics {
                step: self.stepper.step,
                time_unix_s: now_unix_s(),
                loss: out.loss,
                policy_loss: out.policy_loss,
                policy_ce: out.policy_ce,
                soft_policy_ce: out.soft_policy_ce,
                short_term_value_ce: out.short_term_value_ce,
                value_loss: out.value_loss,
                lr: out.lr,
                grad_norm: out.grad_norm,
                samples_per_s: batch.size as f64 / secs,
                batch_size: batch.size,
                window: snapshot.len(),
            };
            self.metrics.append(&m)?;
            sums[0] += out.loss;
            sums[1] += out.policy_loss;
            sums[2] += out.value_loss;
            sums[3] += out.grad_norm;
            last_lr = out.lr;
            bar.set_message(format!(
                "loss {:.3} (p {:.3} v {:.3}) lr {:.2e} {:.0} pos/s",
                out.loss, out.policy_loss, out.value_loss, out.lr, m.samples_per_s
            ));
            bar.inc(1);
            if self.stepper.step.is_multiple_of(config.checkpoint_interval) {
                self.save_state()?;
            }
        }
        drop(producer);
        if self.last_checkpoint_step != self.stepper.step {
            self.save_state()?;
        }
        bar.finish_and_clear();
        let k = n.max(1) as f64;
        Ok(TrainSummary {
            steps: n,
            last_step: self.stepper.step,
            loss: sums[0] / k,
            policy_loss: sums[1] / k,
            value_loss: sums[2] / k,
            grad_norm: sums[3] / k,
            lr: last_lr,
            samples_per_s: (n as usize * config.batch_size) as f64
                / start.elapsed().as_secs_f64().max(1e-9),
            window: snapshot.len(),
            total_positions: snapshot.total_positions(),
        })
    }

    /// Checkpoint metadata for the current weights.
    fn meta(&self, generation: u32, parent: Option<String>) -> CheckpointMeta {
        let mut meta = CheckpointMeta::new(self.stepper.config.net);
        meta.step = self.stepper.step;
        meta.generation = generation;
        meta.parent = parent;
        meta
    }

    /// Writes the current weights to `path` (atomically, in the model crate's checkpoint
    /// format) with the given generation and parent in the metadata: how the `yari run` loop
    /// publishes a candidate net. Independent of the resumable state in `train/`.
    pub fn save_checkpoint(
        &self,
        path: &Path,
        generation: u32,
        parent: Option<String>,
    ) -> Result<(), TrainError> {
        self.save_net(&self.inference_net(), path, generation, parent)
    }

    /// Writes `net` (derived from this trainer's weights, e.g. their moving average) to
    /// `path` with this trainer's metadata, as [`Trainer::save_checkpoint`] writes the
    /// current weights.
    pub fn save_net(
        &self,
        net: &Net,
        path: &Path,
        generation: u32,
        parent: Option<String>,
    ) -> Result<(), TrainError> {
        if self.poisoned {
            return Err(TrainError::Poisoned);
        }
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|e| TrainError::io(dir, e))?;
        }
        checkpoint::save(path, net, &self.meta(generation, parent))
            .map_err(|e| TrainError::checkpoint(path, e))
    }

    /// Writes the resumable state: weights, optimizer state, then the pointer, then removes
    /// the files of older states.
    fn save_state(&mut self) -> Result<(), TrainError> {
        let step = self.stepper.step;
        let stem = format!("step-{step:010}");
        let ckpt_name = format!("{stem}.ckpt");
        let optim_name = format!("{stem}.optim");
        let ckpt_path = self.train_dir.join(&ckpt_name);
        checkpoint::save(
            &ckpt_path,
            &self.inference_net(),
            &self.meta(0, Some(self.init.clone())),
        )
        .map_err(|e| TrainError::checkpoint(&ckpt_path, e))?;
        let optim_path = self.train_dir.join(&optim_name);
        let bytes = self
            .stepper
            .optim
            .into_bytes()
            .map_err(|e| TrainError::OptimizerState {
                path: optim_path.clone(),
                what: e.to_string(),
            })?;
        yari_io::write_atomic(&optim_path, &bytes)?;
        let state = TrainState {
            format: STATE_FORMAT,
            step,
            checkpoint: ckpt_name.clone(),
            optimizer_state: optim_name.clone(),
            optimizer: self.stepper.config.optimizer,
            net: self.stepper.config.net,
            seed: self.stepper.config.seed,
            samples_seen: self.samples_seen,
            init: self.init.clone(),
            saved_unix_s: now_unix_s() as u64,
        };
        let state_path = self.train_dir.join(STATE_FILE);
        yari_io::write_atomic(
            &state_path,
            &serde_json::to_vec_pretty(&state).expect("state serialises"),
        )?;
        self.last_checkpoint_step = step;
        // Older pairs are garbage once the pointer names the new one.
        if let Ok(entries) = std::fs::read_dir(&self.train_dir) {
            for entry in entries.flatten() {
                let name = entry.file_name().to_string_lossy().into_owned();
                let old = name.starts_with("step-")
                    && (name.ends_with(".ckpt") || name.ends_with(".optim"))
                    && name != ckpt_name
                    && name != optim_name;
                if old {
                    let _ = std::fs::remove_file(entry.path());
                }
            }
        }
        Ok(())
    }

    /// The state file of the run in `run_dir`, if it has one.
    pub fn read_state(run_dir: &Path) -> Result<Option<TrainState>, TrainError> {
        let path = run_dir.join(TRAIN_DIR).join(STATE_FILE);
        match yari_io::read_regular_file(&path, yari_io::MAX_LOG_BYTES) {
            Ok(bytes) => serde_json::from_slice(&bytes)
                .map(Some)
                .map_err(|e| TrainError::State {
                    path,
                    what: format!("unreadable: {e}"),
                }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(TrainError::io(&path, e)),
        }
    }

    /// Path of the weights checkpoint of the current resumable state.
    pub fn latest_checkpoint_path(&self) -> PathBuf {
        self.train_dir
            .join(format!("step-{:010}.ckpt", self.last_checkpoint_step))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A batch the hand-written step cannot take is that step's failure, named as such, not
    /// "invalid training config"; the net stays for the next step.
    #[test]
    fn a_cpu_kernel_failure_is_not_reported_as_a_config_error() {
        let config = TrainConfig {
            net: NetConfig::new(1, 8),
            ..TrainConfig::default()
        };
        let device = yari_model::Backend::cpu().device().clone().autodiff();
        let net = config.net.init(&device);
        let mut stepper = Stepper::new(config, device, net, TrainPath::Cpu);
        let batch = Batch {
            step: 0,
            size: 1,
            inputs: Vec::new(),
            policy: Vec::new(),
            wdl: Vec::new(),
            short_term_wdl: Vec::new(),
            policy_entropy: 0.0,
        };
        let Err(err) = stepper.step(&batch) else {
            panic!("a batch without inputs trained");
        };
        assert!(matches!(err, TrainError::Kernel(_)), "{err:?}");
        let text = err.to_string();
        assert!(text.starts_with("the CPU training step failed"), "{text}");
        assert!(!text.contains("config"), "{text}");
        assert!(stepper.net.is_some());
    }
}
