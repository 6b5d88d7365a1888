//! The backends a process computes with, chosen once and passed down as one value.
//!
//! Why: the device, the arithmetic of the CPU forward pass and the way training computes its
//! gradients used to be read from environment variables deep inside the crates, so two parts
//! of one process could disagree and a run could not say what it ran on. Now the binary parses
//! its flags (with environment fallbacks) once into a [`BackendRequest`], opens it into a
//! [`Backend`] and hands that down: evaluators come from its factory
//! ([`Backend::evaluator`], as lc0's `neural/factory.h` makes backends by name), training
//! takes its [`TrainPath`], and a run records [`Backend::record`].

use std::path::Path;
use std::sync::OnceLock;

use burn::tensor::Device;
use serde::{Deserialize, Serialize};
use thiserror::Error;

use crate::checkpoint::CheckpointError;
use crate::cpu::CpuPath;
use crate::device::{describe_device, is_cpu, select_device, DeviceError, GraphicsApi};
use crate::eval::NetEvaluator;
use crate::net::{Net, NetConfig};

/// How a training step computes the losses and gradients; the optimizer, its state, the
/// checkpoints and everything else are burn's either way, so a run may switch between them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TrainPath {
    /// burn's autodiff on the training device (any backend, GPUs included).
    Burn,
    /// The hand-written forward and backward pass of `crate::cpu::train`: CPU devices only
    /// (its speed against burn's: `docs/experiments.md`).
    Cpu,
}

impl TrainPath {
    /// The path a device trains on when none is asked for: [`TrainPath::Cpu`] on a CPU device,
    /// [`TrainPath::Burn`] elsewhere.
    pub fn auto(device: &Device) -> Self {
        if is_cpu(device) {
            TrainPath::Cpu
        } else {
            TrainPath::Burn
        }
    }

    /// `self` if `device` can run it: the cpu path needs a CPU device.
    pub fn check(self, device: &Device) -> Result<Self, BackendError> {
        if self == TrainPath::Cpu && !is_cpu(device) {
            return Err(BackendError::TrainPathNeedsCpu {
                device: describe_device(device),
            });
        }
        Ok(self)
    }

    /// `"burn"` or `"cpu"`.
    pub fn name(self) -> &'static str {
        match self {
            TrainPath::Burn => "burn",
            TrainPath::Cpu => "cpu",
        }
    }
}

/// Why a [`BackendRequest`] cannot be opened.
#[derive(Clone, Debug, Error)]
pub enum BackendError {
    #[error(transparent)]
    Device(#[from] DeviceError),
    #[error("unknown CPU path {0:?}: expected f32, bf16 or auto")]
    UnknownCpuPath(String),
    #[error("the bf16 CPU path needs AVX-512 BF16, which this CPU lacks (use f32 or auto)")]
    Bf16Unsupported,
    #[error("unknown training path {0:?}: expected burn, cpu or auto")]
    UnknownTrainPath(String),
    #[error("the cpu training path needs a CPU device, the device is {device}")]
    TrainPathNeedsCpu { device: String },
    #[error("the process already runs on another backend: {installed}")]
    AlreadyInstalled { installed: String },
}

/// What a process was asked to compute with, as text from its flags or environment; `None`
/// (or `"auto"`) leaves the choice to [`Backend::open`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BackendRequest {
    /// The burn backend: `flex`, `ndarray`, `wgpu` or `cuda` (default: the CPU).
    pub device: Option<String>,
    /// The graphics API of a wgpu device (wgpu's names: vulkan, metal, dx12, gl, auto).
    pub graphics_api: Option<String>,
    /// The arithmetic of the CPU forward pass: `f32`, `bf16` or `auto` (the fastest this
    /// CPU runs).
    pub cpu_path: Option<String>,
    /// How training computes its gradients: `burn`, `cpu` or `auto` (cpu on a CPU device).
    pub train_path: Option<String>,
}

/// What a run records of the backends it ran on (`summary.json`, per generation).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct BackendRecord {
    /// The device, described (backend and, for a GPU, the adapter).
    pub device: String,
    /// The forward pass of inference: `cpu-f32`, `cpu-bf16`, or `burn` on a non-CPU device.
    pub inference: String,
    /// The training path: `cpu` or `burn`.
    pub training: String,
}

/// The backend the binary chose for the process ([`Backend::install`]).
static PROCESS: OnceLock<Backend> = OnceLock::new();

/// The backends of a process: the device and how inference and training compute on it.
#[derive(Clone, Debug, PartialEq)]
pub struct Backend {
    device: Device,
    description: String,
    cpu_path: CpuPath,
    train_path: TrainPath,
}

/// `text` unless it is empty or `auto` (any case).
fn chosen(text: &Option<String>) -> Option<String> {
    text.as_deref()
        .map(|t| t.trim().to_ascii_lowercase())
        .filter(|t| !t.is_empty() && t != "auto")
}

impl Backend {
    /// Opens what `request` asks for: selects the process's device (a GPU's adapter or
    /// driver is checked now, so a missing piece is an error naming it), and checks that the
    /// CPU path and the training path can run here. A path asked for that cannot run is an
    /// error, never a silent fallback.
    pub fn open(request: &BackendRequest) -> Result<Backend, BackendError> {
        let api = match &request.graphics_api {
            Some(text) => text.parse::<GraphicsApi>()?,
            None => GraphicsApi::default(),
        };
        let cpu_path = match chosen(&request.cpu_path).as_deref() {
            None => CpuPath::best_supported(),
            Some("bf16") if !CpuPath::bf16_supported() => {
                return Err(BackendError::Bf16Unsupported)
            }
            // The names are `CpuPath`'s own.
            Some(name) => name.parse::<CpuPath>().map_err(|_| {
                BackendError::UnknownCpuPath(request.cpu_path.clone().unwrap_or_default())
            })?,
        };
        let train_path = match chosen(&request.train_path).as_deref() {
            None => None,
            Some("burn") => Some(TrainPath::Burn),
            Some("cpu") => Some(TrainPath::Cpu),
            Some(_) => {
                return Err(BackendError::UnknownTrainPath(
                    request.train_path.clone().unwrap_or_default(),
                ))
            }
        };
        let device_name = chosen(&request.device);
        let (device, description) = select_device(device_name.as_deref(), api)?;
        let train_path = match train_path {
            Some(path) => path.check(&device)?,
            None => TrainPath::auto(&device),
        };
        Ok(Backend {
            device,
            description,
            cpu_path,
            train_path,
        })
    }

    /// The CPU backend a process runs on when nothing is asked for (burn's CPU device, the
    /// fastest CPU path, the hand-written training step), without selecting it for the
    /// process: what libraries' tests and examples use.
    pub fn cpu() -> Backend {
        let device = crate::device_named(&crate::device::default_backend()).unwrap_or_default();
        Backend::defaults_on(device)
    }

    /// `device` with the default paths for it.
    fn defaults_on(device: Device) -> Backend {
        Backend {
            description: describe_device(&device),
            train_path: TrainPath::auto(&device),
            device,
            cpu_path: CpuPath::best_supported(),
        }
    }

    /// Makes this the process's backend, the one [`Backend::current`] returns: the binary
    /// calls it once, right after [`Backend::open`]. Errors when another one was installed.
    pub fn install(self) -> Result<Backend, BackendError> {
        let installed = PROCESS.get_or_init(|| self.clone());
        if *installed != self {
            return Err(BackendError::AlreadyInstalled {
                installed: format!("{:?}", installed.record()),
            });
        }
        Ok(self)
    }

    /// The process's backend: the one the binary installed, else the defaults on the
    /// process's device ([`crate::default_device`]). For code reached through text that
    /// names a network (an arena spec such as `model:FILE:SIMS`) rather than through a caller
    /// that holds the backend.
    pub fn current() -> Backend {
        PROCESS
            .get()
            .cloned()
            .unwrap_or_else(|| Backend::defaults_on(crate::default_device()))
    }

    /// The device (without autodiff).
    pub fn device(&self) -> &Device {
        &self.device
    }

    /// The device, described (backend and, for a GPU, the adapter).
    pub fn description(&self) -> &str {
        &self.description
    }

    /// The arithmetic of the CPU forward pass (used when the device is a CPU one).
    pub fn cpu_path(&self) -> CpuPath {
        self.cpu_path
    }

    /// How training computes its gradients.
    pub fn train_path(&self) -> TrainPath {
        self.train_path
    }

    /// This backend with the CPU forward pass on `path`. Errors: bf16 on a CPU without it.
    pub fn with_cpu_path(mut self, path: CpuPath) -> Result<Backend, BackendError> {
        if path == CpuPath::Bf16 && !CpuPath::bf16_supported() {
            return Err(BackendError::Bf16Unsupported);
        }
        self.cpu_path = path;
        Ok(self)
    }

    /// The factory of evaluators: `net` (on this backend's device) behind the CPU forward
    /// pass on a CPU device, behind burn's elsewhere ([`NetEvaluator::build`]).
    pub fn evaluator(&self, net: Net, config: NetConfig) -> NetEvaluator {
        NetEvaluator::build(net, config, self.device.clone(), self.cpu_path)
    }

    /// Loads a checkpoint of any architecture and makes its evaluator.
    pub fn load_evaluator(&self, path: impl AsRef<Path>) -> Result<NetEvaluator, CheckpointError> {
        NetEvaluator::load(path, self.device.clone(), self.cpu_path)
    }

    /// What a run records of this backend.
    pub fn record(&self) -> BackendRecord {
        BackendRecord {
            device: self.description.clone(),
            inference: if is_cpu(&self.device) {
                format!("cpu-{}", self.cpu_path.name())
            } else {
                "burn".to_string()
            },
            training: self.train_path.name().to_string(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(cpu: Option<&str>, train: Option<&str>) -> BackendRequest {
        BackendRequest {
            cpu_path: cpu.map(str::to_string),
            train_path: train.map(str::to_string),
            ..BackendRequest::default()
        }
    }

    #[test]
    fn nothing_asked_is_the_cpu_with_its_fastest_path_and_the_cpu_training_step() {
        let backend = Backend::open(&BackendRequest::default()).unwrap();
        assert!(is_cpu(backend.device()));
        assert_eq!(backend.cpu_path(), CpuPath::best_supported());
        assert_eq!(backend.train_path(), TrainPath::Cpu);
        let record = backend.record();
        assert_eq!(
            record.inference,
            format!("cpu-{}", CpuPath::best_supported())
        );
        assert_eq!(record.training, "cpu");
    }

    #[test]
    fn paths_asked_for_are_used_and_auto_means_the_default() {
        let b = Backend::open(&request(Some("F32"), Some("burn"))).unwrap();
        assert_eq!(
            (b.cpu_path(), b.train_path()),
            (CpuPath::F32, TrainPath::Burn)
        );
        assert_eq!(b.record().inference, "cpu-f32");
        let b = Backend::open(&request(Some("auto"), Some(" auto "))).unwrap();
        assert_eq!(
            (b.cpu_path(), b.train_path()),
            (CpuPath::best_supported(), TrainPath::Cpu)
        );
    }

    #[test]
    fn unknown_or_impossible_paths_are_errors_that_name_them() {
        let e = Backend::open(&request(Some("fp8"), None))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("\"fp8\"") && e.contains("f32, bf16 or auto"),
            "{e}"
        );
        let e = Backend::open(&request(None, Some("gpu")))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("\"gpu\"") && e.contains("burn, cpu or auto"),
            "{e}"
        );
        if !CpuPath::bf16_supported() {
            let e = Backend::open(&request(Some("bf16"), None)).unwrap_err();
            assert!(matches!(e, BackendError::Bf16Unsupported), "{e}");
        }
    }

    #[test]
    fn the_factory_gives_the_cpu_forward_pass_on_the_chosen_path() {
        let config = NetConfig {
            value_channels: 2,
            value_hidden: 8,
            ..NetConfig::new(1, 8)
        };
        let backend = Backend::cpu().with_cpu_path(CpuPath::F32).unwrap();
        let eval = backend.evaluator(config.init(backend.device()), config);
        assert_eq!(eval.cpu_path(), Some(CpuPath::F32));
        assert!(eval.burn_device().is_none());
    }
}
