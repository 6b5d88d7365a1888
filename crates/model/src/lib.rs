//! The Yari Shogi policy/value network, its checkpoints, and the evaluation interface that
//! search and arena share.
//!
//! The backend is chosen by Cargo features (`flex`, the default; `ndarray`; `wgpu`; `cuda`)
//! and, at run time, by the [`Device`] a net is built on: burn 0.22 tensors carry their
//! backend in their device, so there is one code path for all of them, with or without
//! autodiff. Inference on a CPU device goes through [`CpuNet`] instead, a forward pass of the
//! same net about twice as fast as burn's CPU backend at self-play's sizes.
//!
//! A tiny untrained net on the CPU, saved as a checkpoint, loaded back and asked (through
//! search's [`yari_search::Evaluator`] interface) about the
//! start position (a real net comes from [`Checkpoint::read`] of a `.yari` file):
//!
//! ```
//! use yari_model::{checkpoint, default_device, Checkpoint, CheckpointMeta};
//! use yari_search::Evaluator;
//! use yari_model::{NetConfig, NetEvaluator};
//! use yari_rules::Position;
//!
//! let device = default_device();
//! let config = NetConfig { value_channels: 2, value_hidden: 8, ..NetConfig::new(1, 8) };
//! let meta = CheckpointMeta::new(config.clone());
//! let bytes = checkpoint::to_bytes(&config.init(&device), &meta)?;
//! let net = Checkpoint::from_bytes(&bytes)?.into_net(&config, &device)?;
//!
//! let evaluator = NetEvaluator::new(net, config, device);
//! let pos = Position::startpos();
//! let eval = &evaluator.evaluate(&[&pos])[0];
//! assert_eq!(eval.priors.len(), pos.legal_moves().len());
//! assert!((eval.priors.iter().map(|(_, p)| p).sum::<f32>() - 1.0).abs() < 1e-4);
//! assert!((-1.0..=1.0).contains(&eval.value()));
//! # Ok::<(), yari_model::CheckpointError>(())
//! ```

pub mod average;
pub mod backend;
pub mod bench;
pub mod checkpoint;
pub mod cpu;
pub mod device;
pub mod eval;
pub mod net;
pub mod onnx;

pub use backend::{Backend, BackendError, BackendRecord, BackendRequest, TrainPath};
pub use burn::tensor::Device;
pub use checkpoint::{Checkpoint, CheckpointError, CheckpointMeta};
pub use cpu::CpuNet;
pub use device::{describe_device, is_cpu, open_device, select_device, DeviceError};
pub use eval::{BurnEvaluator, CpuEvaluator, NetEvaluator};
pub use net::{Heads, Net, NetConfig, NetConfigError};

/// The device a plain run should use: the one [`select_device`] chose for this process, else
/// the CPU (flex) even in a build with a GPU backend: a GPU is used when asked for (see
/// [`select_device`]).
pub fn default_device() -> Device {
    device::selected_or_default()
}

/// Backends compiled into this build, by the names [`device_named`] accepts.
pub fn available_backends() -> Vec<&'static str> {
    let mut names = Vec::new();
    if cfg!(feature = "flex") {
        names.push("flex");
    }
    if cfg!(feature = "ndarray") {
        names.push("ndarray");
    }
    if cfg!(feature = "wgpu") {
        names.push("wgpu");
    }
    if cfg!(feature = "cuda") {
        names.push("cuda");
    }
    names
}

/// A device of the named backend, if that backend is compiled in; lets benchmarks and tools
/// compare backends within one binary.
pub fn device_named(name: &str) -> Option<Device> {
    match name {
        #[cfg(feature = "flex")]
        "flex" => Some(Device::flex()),
        #[cfg(feature = "ndarray")]
        #[allow(deprecated)] // measured against flex on purpose
        "ndarray" => Some(Device::ndarray()),
        #[cfg(feature = "wgpu")]
        "wgpu" => Some(Device::wgpu(burn::tensor::DeviceKind::DefaultDevice)),
        #[cfg(feature = "cuda")]
        "cuda" => Some(Device::cuda(0)),
        _ => None,
    }
}
