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
#[derive(Debug, Error)]
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
}

/// Every backend name [`open_device`] knows, compiled in or not.
const KNOWN: [&str; 4] = ["flex", "ndarray", "wgpu", "cuda"];

/// The device chosen by [`select_device`], with its description.
static SELECTED: OnceLock<(Device, String)> = OnceLock::new();

/// The device [`crate::default_device`] returns: the one [`select_device`] chose, else burn's
/// default (the first compiled backend in burn's order, GPUs first, or `BURN_DEVICE`).
pub(crate) fn selected_or_default() -> Device {
    SELECTED.get().map(|(d, _)| d.clone()).unwrap_or_default()
}

/// Opens the backend `name` (`flex`, `ndarray`, `wgpu`, `cuda`), checking that it can run.
///
/// For wgpu this acquires the adapter now, so a machine without one gets [`DeviceError::NoAdapter`]
/// naming the missing piece instead of a panic at the first tensor.
pub fn open_device(name: &str) -> Result<Device, DeviceError> {
    open_described(name).map(|(d, _)| d)
}

/// Chooses the device of this process: `name`, or burn's default when `None`; later
/// [`crate::default_device`] calls return it. Returns the device and a one-line description
/// (backend and, for a GPU, the adapter).
pub fn select_device(name: Option<&str>) -> Result<(Device, String), DeviceError> {
    let name = name.map_or_else(default_backend_name, str::to_string);
    if let Some((device, description)) = SELECTED.get() {
        let (wanted, _) = open_described(&name)?;
        if wanted != *device {
            return Err(DeviceError::AlreadyChosen {
                chosen: description.clone(),
                name,
            });
        }
        return Ok((device.clone(), description.clone()));
    }
    let chosen = open_described(&name)?;
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

/// The backend burn's `Device::default()` would pick, by the names [`open_device`] takes.
fn default_backend_name() -> String {
    if let Ok(name) = std::env::var("BURN_DEVICE") {
        return name.to_lowercase();
    }
    // burn's order: GPU backends before CPU ones, flex before the deprecated ndarray.
    let order = ["cuda", "wgpu", "flex", "ndarray"];
    let available = crate::available_backends();
    order
        .iter()
        .find(|n| available.contains(n))
        .map_or_else(|| "flex".to_string(), |n| n.to_string())
}

fn open_described(name: &str) -> Result<(Device, String), DeviceError> {
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
        return wgpu_backend::open();
    }
    let device = crate::device_named(name).expect("a compiled backend has a device");
    let description = format!("{name} ({device:?})");
    Ok((device, description))
}

#[cfg(feature = "wgpu")]
mod wgpu_backend {
    use std::path::Path;
    use std::sync::OnceLock;

    use burn::tensor::Device;

    use super::DeviceError;

    /// burn registers a wgpu runtime once per process: the first outcome is the answer.
    static OPENED: OnceLock<Result<(Device, String), (String, String)>> = OnceLock::new();

    pub(super) fn opened() -> Option<(Device, String)> {
        OPENED.get().and_then(|r| r.as_ref().ok().cloned())
    }

    pub(super) fn open() -> Result<(Device, String), DeviceError> {
        OPENED
            .get_or_init(|| match Device::wgpu_options().init_with_setup() {
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
            })
            .clone()
            .map_err(|(detail, hint)| DeviceError::NoAdapter { detail, hint })
    }

    /// What to install, judged from the files the Vulkan loader and its drivers leave.
    fn hint() -> String {
        if !cfg!(target_os = "linux") {
            return "Install or update the GPU driver (Vulkan, Metal or DX12).".to_string();
        }
        let lib_dirs: Vec<String> = std::env::var("LD_LIBRARY_PATH")
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
            .find_map(|v| {
                std::env::var(v)
                    .ok()
                    .filter(|s| !s.is_empty())
                    .map(|s| (v, s))
            });
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
