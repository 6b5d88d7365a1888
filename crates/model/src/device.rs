//! Choosing and opening the burn device a process computes on.
//!
//! burn picks a device lazily and panics deep inside its first kernel when a GPU backend has
//! no adapter; a user who asked for the GPU deserves an error that says what is missing (the
//! Vulkan loader, or a driver) before any work starts. So a device is opened here, once, up
//! front, and every later [`crate::default_device`] call returns the one chosen.

use std::sync::OnceLock;

use burn::tensor::Device;
use thiserror::Error;

/// Why a device could not be opened.
#[derive(Clone, Debug, Error)]
pub enum DeviceError {
    #[error("unknown device {name:?}: this build has {}", .available.join(", "))]
    Unknown {
        name: String,
        available: Vec<&'static str>,
    },
    #[error("device {name:?} is not compiled into this build (it has {}); rebuild with `--features {name}`", .available.join(", "))]
    NotCompiled {
        name: String,
        available: Vec<&'static str>,
    },
    #[error("no wgpu adapter could be opened ({detail}). {hint}")]
    NoAdapter { detail: String, hint: String },
    #[error("a device was already chosen for this process ({chosen}); cannot switch to {name:?}")]
    AlreadyChosen { chosen: String, name: String },
    #[error("the CUDA device cannot be opened: {missing}. {hint}")]
    CudaMissing { missing: String, hint: String },
    #[error("the CUDA device failed its first computation: {detail}")]
    CudaFailed { detail: String },
    #[error("unknown graphics API {value:?}: expected vulkan, metal, dx12, gl or auto")]
    UnknownGraphicsApi { value: String },
}

/// Every backend name [`open_device`] knows, compiled in or not.
const KNOWN: [&str; 4] = ["flex", "ndarray", "wgpu", "cuda"];

/// Whether `device` (with autodiff or without) computes on one of burn's CPU backends: the
/// devices where the hand-written forward pass ([`crate::CpuNet`]) and training step
/// (`crate::cpu::train`) replace burn's.
pub fn is_cpu(device: &Device) -> bool {
    let device = device.clone().without_autodiff();
    #[cfg(feature = "flex")]
    if device == Device::flex() {
        return true;
    }
    #[cfg(feature = "ndarray")]
    #[allow(deprecated)]
    if device == Device::ndarray() {
        return true;
    }
    let _ = device;
    false
}

/// The device chosen by [`select_device`], with its description.
static SELECTED: OnceLock<(Device, String)> = OnceLock::new();

/// The device [`crate::default_device`] returns: the one [`select_device`] chose, else the
/// default backend of [`default_backend`] (a CPU backend in every build that has one).
pub(crate) fn selected_or_default() -> Device {
    if let Some((device, _)) = SELECTED.get() {
        return device.clone();
    }
    crate::device_named(&default_backend()).unwrap_or_default()
}

/// The one place a library crate reads the environment: variables that belong to other
/// software (the dynamic loader's `LD_LIBRARY_PATH`, the Vulkan loader's `VK_DRIVER_FILES`),
/// read only to explain why a device would not open. No choice of yari's is made here: the
/// binary parses those (`--device`, `--cpu-path`, ... with their environment fallbacks) and
/// passes them down as a [`crate::Backend`].
#[cfg_attr(not(feature = "wgpu"), allow(dead_code))]
fn system_var(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|s| !s.is_empty())
}

/// Opens the backend `name` (`flex`, `ndarray`, `wgpu`, `cuda`), checking that it can run.
///
/// For wgpu this acquires the adapter now, so a machine without one gets [`DeviceError::NoAdapter`]
/// naming the missing piece instead of a panic at the first tensor.
pub fn open_device(name: &str) -> Result<Device, DeviceError> {
    open_described(name, GraphicsApi::default()).map(|(d, _)| d)
}

/// The graphics API the wgpu backend is pinned to (wgpu's `WGPU_BACKEND` names them; the
/// binary reads it). Not wgpu's automatic choice on Linux: without a Vulkan driver it falls
/// back to OpenGL on Mesa's llvmpipe, a software device slower than the CPU path that would
/// hide the missing driver.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum GraphicsApi {
    /// Vulkan on Linux, wgpu's own choice elsewhere.
    #[default]
    Platform,
    /// wgpu's own choice everywhere.
    Auto,
    Vulkan,
    Metal,
    Dx12,
    Gl,
}

impl std::str::FromStr for GraphicsApi {
    type Err = DeviceError;

    fn from_str(value: &str) -> Result<Self, DeviceError> {
        Ok(match value.trim().to_ascii_lowercase().as_str() {
            "" => GraphicsApi::Platform,
            "auto" => GraphicsApi::Auto,
            "vulkan" => GraphicsApi::Vulkan,
            "metal" => GraphicsApi::Metal,
            "dx12" => GraphicsApi::Dx12,
            "gl" | "opengl" => GraphicsApi::Gl,
            _ => {
                return Err(DeviceError::UnknownGraphicsApi {
                    value: value.to_string(),
                })
            }
        })
    }
}

/// Chooses the device of this process: `name`, or when `None` the default backend (the CPU:
/// wgpu would as readily open a software device), a wgpu device on graphics API `api`;
/// later [`crate::default_device`] calls return it. Returns the device and a one-line
/// description (backend and, for a GPU, the adapter).
pub fn select_device(
    name: Option<&str>,
    api: GraphicsApi,
) -> Result<(Device, String), DeviceError> {
    let name = name.map_or_else(default_backend, str::to_string);
    if let Some((device, description)) = SELECTED.get() {
        let (wanted, _) = open_described(&name, api)?;
        if wanted != *device {
            return Err(DeviceError::AlreadyChosen {
                chosen: description.clone(),
                name,
            });
        }
        return Ok((device.clone(), description.clone()));
    }
    let chosen = open_described(&name, api)?;
    Ok(SELECTED.get_or_init(|| chosen).clone())
}

/// A one-line description of `device`: its backend and, for wgpu, the adapter (name, graphics
/// API, driver) it runs on.
pub fn describe_device(device: &Device) -> String {
    #[cfg(feature = "wgpu")]
    if let Some((wgpu_device, description)) = wgpu_backend::opened() {
        if device.clone().without_autodiff() == wgpu_device {
            return description;
        }
    }
    format!("{device:?}")
}

/// The backend used when none is asked for, by the names [`open_device`] takes: the CPU
/// (flex, then the deprecated ndarray), a GPU backend only in a build without one.
///
/// burn's own default puts GPU backends first. That is the wrong default here: wgpu opens
/// Mesa's software device (lavapipe) as readily as a real GPU, and on a machine without one
/// that runs the net tens of times slower than the CPU path; and the CI build has `wgpu`
/// compiled in, where every test that does not ask for a device must still run on the CPU.
/// A GPU is used when asked for: `yari --device wgpu`, `YARI_DEVICE`, or `BURN_DEVICE`.
pub fn default_backend() -> String {
    default_backend_from(&crate::available_backends())
}

/// [`default_backend`] among the compiled backends `available`.
fn default_backend_from(available: &[&str]) -> String {
    let order = ["flex", "ndarray", "cuda", "wgpu"];
    order
        .iter()
        .find(|n| available.contains(n))
        .map_or_else(|| "flex".to_string(), |n| n.to_string())
}

fn open_described(name: &str, api: GraphicsApi) -> Result<(Device, String), DeviceError> {
    let available = crate::available_backends();
    if !KNOWN.contains(&name) {
        return Err(DeviceError::Unknown {
            name: name.to_string(),
            available,
        });
    }
    if !available.contains(&name) {
        return Err(DeviceError::NotCompiled {
            name: name.to_string(),
            available,
        });
    }
    #[cfg(feature = "wgpu")]
    if name == "wgpu" {
        return wgpu_backend::open(api);
    }
    #[cfg(feature = "cuda")]
    if name == "cuda" {
        return cuda_backend::open();
    }
    let _ = api;
    let device = crate::device_named(name).expect("a compiled backend has a device");
    let description = format!("{name} (burn's CPU backend)");
    Ok((device, description))
}

#[cfg(feature = "wgpu")]
mod wgpu_backend {
    use std::path::Path;
    use std::sync::OnceLock;

    use burn::tensor::wgpu::WgpuBackend;
    use burn::tensor::Device;

    use super::{system_var, DeviceError, GraphicsApi};

    /// burn registers a wgpu runtime once per process: the first outcome is the answer.
    static OPENED: OnceLock<Result<(Device, String), (String, String)>> = OnceLock::new();

    pub(super) fn opened() -> Option<(Device, String)> {
        OPENED.get().and_then(|r| r.as_ref().ok().cloned())
    }

    fn wgpu_api(api: GraphicsApi) -> WgpuBackend {
        match api {
            GraphicsApi::Platform if cfg!(target_os = "linux") => WgpuBackend::Vulkan,
            GraphicsApi::Platform | GraphicsApi::Auto => WgpuBackend::Auto,
            GraphicsApi::Vulkan => WgpuBackend::Vulkan,
            GraphicsApi::Metal => WgpuBackend::Metal,
            GraphicsApi::Dx12 => WgpuBackend::Dx12,
            GraphicsApi::Gl => WgpuBackend::Gl,
        }
    }

    pub(super) fn open(api: GraphicsApi) -> Result<(Device, String), DeviceError> {
        let api = wgpu_api(api);
        OPENED
            .get_or_init(
                || match Device::wgpu_options().graphics_api(api).init_with_setup() {
                    Ok((device, setup)) => {
                        let info = setup.adapter.get_info();
                        let driver = if info.driver_info.is_empty() {
                            info.driver.clone()
                        } else {
                            format!("{} {}", info.driver, info.driver_info)
                        };
                        let description = format!(
                            "wgpu: {} ({:?}, {:?}, driver {driver})",
                            info.name, info.backend, info.device_type
                        );
                        Ok((device, description))
                    }
                    Err(e) => Err((e.to_string(), hint())),
                },
            )
            .clone()
            .map_err(|(detail, hint)| DeviceError::NoAdapter { detail, hint })
    }

    /// What to install, judged from the files the Vulkan loader and its drivers leave.
    fn hint() -> String {
        if !cfg!(target_os = "linux") {
            return "Install or update the GPU driver (Vulkan, Metal or DX12).".to_string();
        }
        let lib_dirs: Vec<String> = system_var("LD_LIBRARY_PATH")
            .unwrap_or_default()
            .split(':')
            .filter(|d| !d.is_empty())
            .map(str::to_string)
            .chain(
                [
                    "/usr/lib/x86_64-linux-gnu",
                    "/usr/lib/aarch64-linux-gnu",
                    "/usr/lib64",
                    "/usr/lib",
                    "/lib/x86_64-linux-gnu",
                    "/lib/aarch64-linux-gnu",
                    "/lib64",
                    "/lib",
                    "/usr/local/lib",
                ]
                .map(str::to_string),
            )
            .collect();
        let loader = lib_dirs
            .iter()
            .any(|d| Path::new(d).join("libvulkan.so.1").exists());
        if !loader {
            return "The Vulkan loader (libvulkan.so.1) is missing: install it (Debian/Ubuntu: \
                    `apt-get install libvulkan1`) and a Vulkan driver (the GPU vendor's, or \
                    `mesa-vulkan-drivers` for the software device lavapipe)."
                .to_string();
        }
        let from_env = ["VK_DRIVER_FILES", "VK_ICD_FILENAMES"]
            .iter()
            .find_map(|v| system_var(v).map(|s| (v, s)));
        if let Some((var, files)) = from_env {
            return format!(
                "The Vulkan loader is installed, but {var}={files} limits it to those driver \
                 manifests and none of them gave an adapter: unset {var} or point it at a \
                 driver's manifest (e.g. /usr/share/vulkan/icd.d/lvp_icd.x86_64.json)."
            );
        }
        let icd_dirs = [
            "/usr/share/vulkan/icd.d",
            "/etc/vulkan/icd.d",
            "/usr/local/share/vulkan/icd.d",
        ];
        let drivers: Vec<String> = icd_dirs
            .iter()
            .filter_map(|d| std::fs::read_dir(d).ok())
            .flatten()
            .filter_map(|e| e.ok())
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.ends_with(".json"))
            .collect();
        if drivers.is_empty() {
            "The Vulkan loader is installed but no Vulkan driver is (no manifest in \
             /usr/share/vulkan/icd.d): install the GPU vendor's driver, or \
             `mesa-vulkan-drivers` for the software device lavapipe."
                .to_string()
        } else {
            format!(
                "The Vulkan loader and driver manifests ({}) are installed, but no driver \
                 reported a usable device: check the GPU driver (`vulkaninfo --summary`).",
                drivers.join(", ")
            )
        }
    }
}

/// burn's CUDA backend loads the NVIDIA driver and NVRTC with `dlopen` when its first kernel
/// runs, and compiles every kernel with NVRTC against the CUDA headers; each missing piece is
/// a panic deep inside cubecl. They are checked here, in that order, so that the error names
/// the missing piece and where it is looked for; a first computation then proves the rest.
#[cfg(feature = "cuda")]
mod cuda_backend {
    use std::path::PathBuf;
    use std::sync::OnceLock;

    use burn::tensor::{Device, Tensor, TensorData};

    use super::DeviceError;

    static OPENED: OnceLock<Result<(Device, String), DeviceError>> = OnceLock::new();

    const NVRTC_HINT: &str = "NVRTC (libnvrtc.so, CUDA 13) comes with the CUDA toolkit; \
        without one, `scripts/cuda-runtime.sh` unpacks it and the CUDA headers from NVIDIA's \
        PyPI wheels into .cuda/ (then `source .cuda/env.sh`); or put the folder holding \
        libnvrtc.so on LD_LIBRARY_PATH";

    pub(super) fn open() -> Result<(Device, String), DeviceError> {
        OPENED.get_or_init(open_once).clone()
    }

    fn open_once() -> Result<(Device, String), DeviceError> {
        // SAFETY: each call only tries `dlopen` on the candidate names of one library and
        // drops what it opened; no symbol of it is called.
        let (driver, nvrtc) = unsafe {
            (
                cudarc::driver::sys::is_culib_present(),
                cudarc::nvrtc::sys::is_culib_present(),
            )
        };
        if !driver {
            return Err(DeviceError::CudaMissing {
                missing: "the NVIDIA driver library libcuda.so.1 could not be loaded".into(),
                hint: "Install the NVIDIA driver (it provides libcuda.so.1; a CUDA toolkit \
                       alone does not), or put its folder on LD_LIBRARY_PATH."
                    .into(),
            });
        }
        if !nvrtc {
            return Err(DeviceError::CudaMissing {
                missing: "the CUDA runtime compiler NVRTC (libnvrtc.so) could not be loaded".into(),
                hint: format!("{NVRTC_HINT}."),
            });
        }
        let headers = headers_dir()?;
        let device = Device::cuda(0);
        let detail = first_computation(&device)?;
        let description = format!("cuda: {detail} (headers from {})", headers.display());
        Ok((device, description))
    }

    /// The CUDA headers NVRTC compiles against, where cubecl-cuda looks for them.
    fn headers_dir() -> Result<PathBuf, DeviceError> {
        let Some(root) = cubecl_cuda::install::cuda_path() else {
            return Err(DeviceError::CudaMissing {
                missing: "no CUDA headers: CUDA_PATH is not set and none of /usr/local/cuda, \
                          /opt/cuda exists"
                    .into(),
                hint: format!(
                    "Set CUDA_PATH to a CUDA install (its include/ is used). {NVRTC_HINT}."
                ),
            });
        };
        let include = root.join("include");
        let probe = include.join("cuda_fp16.h");
        if !probe.is_file() {
            return Err(DeviceError::CudaMissing {
                missing: format!("no CUDA headers: {} does not exist", probe.display()),
                hint: format!(
                    "CUDA_PATH (or the default install it was taken from) must hold the CUDA \
                     headers in include/. {NVRTC_HINT}."
                ),
            });
        }
        Ok(include)
    }

    /// Runs one small kernel and reads its result back; a panic inside burn/cubecl (no GPU,
    /// a driver older than the CUDA 13.0 the build binds, an NVRTC error) becomes an error.
    fn first_computation(device: &Device) -> Result<String, DeviceError> {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(|_| {}));
        let outcome = std::panic::catch_unwind(|| {
            let x = Tensor::<1>::from_data(TensorData::new(vec![1.0f32, 2.0, 3.0], [3]), device);
            (x * 2.0).into_data().try_into_vec::<f32>()
        });
        std::panic::set_hook(previous);
        match outcome {
            Ok(Ok(values)) if values == [2.0, 4.0, 6.0] => Ok(format!("{device:?}")),
            Ok(Ok(values)) => Err(DeviceError::CudaFailed {
                detail: format!("2 * [1, 2, 3] gave {values:?}"),
            }),
            Ok(Err(e)) => Err(DeviceError::CudaFailed {
                detail: format!("{e:?}"),
            }),
            Err(panic) => {
                let message = panic
                    .downcast_ref::<String>()
                    .cloned()
                    .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                    .unwrap_or_else(|| "a panic without a message".into());
                Err(DeviceError::CudaFailed { detail: message })
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{default_backend_from, GraphicsApi};

    #[test]
    fn the_default_is_the_cpu_even_with_a_gpu_backend_compiled_in() {
        let gpu_build = ["flex", "wgpu", "cuda"];
        assert_eq!(default_backend_from(&gpu_build), "flex");
        assert_eq!(default_backend_from(&["ndarray", "wgpu"]), "ndarray");
        assert_eq!(default_backend_from(&["wgpu"]), "wgpu");
    }

    #[test]
    fn graphics_apis_parse_by_name_and_an_unknown_one_is_refused() {
        assert_eq!("".parse::<GraphicsApi>().unwrap(), GraphicsApi::Platform);
        assert_eq!(
            " Vulkan".parse::<GraphicsApi>().unwrap(),
            GraphicsApi::Vulkan
        );
        assert_eq!("opengl".parse::<GraphicsApi>().unwrap(), GraphicsApi::Gl);
        let e = "directx".parse::<GraphicsApi>().unwrap_err().to_string();
        assert!(e.contains("\"directx\"") && e.contains("vulkan"), "{e}");
    }
}
