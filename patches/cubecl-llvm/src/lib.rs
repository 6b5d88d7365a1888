//! The part of cubecl-llvm's interface that cubecl-cuda names, without LLVM.
//!
//! cubecl-cuda selects its kernel compiler at build time: with its `cpp` feature (which
//! yari-model turns on) every kernel is CUDA C++ compiled by NVRTC and nothing here is called.
//! The types exist so that cubecl-cuda compiles; [`PlironCompiler::compile`] refuses, naming
//! the reason, should anything ever select the LLVM path.

use core::fmt;

use cubecl_core::ir::amd::GfxArch;
use cubecl_core::ir::nvidia::SmArch;
use cubecl_core::prelude::KernelDefinition;
use cubecl_core::Compiler;
use cubecl_environment::backtrace::BackTrace;
use cubecl_runtime::compiler::CompilationError;
use cubecl_runtime::kernel::BufferIOAttr;

/// Which code the (absent) LLVM compiler would emit.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum LlvmTarget {
    #[default]
    Cpu,
    Nvptx,
}

/// The LLVM compiler's handle; compiling through it always fails here.
#[derive(Clone, Debug, Default)]
pub struct PlironCompiler {
    pub target: LlvmTarget,
}

/// Options of the LLVM compiler, kept field for field as cubecl-cuda fills them in.
#[derive(Clone, Debug, Default)]
pub struct PlironOptions {
    pub cpu_buffer_alignment: Option<u32>,
    pub arch: Option<GfxArch>,
    pub sm_arch: Option<SmArch>,
    pub ptx_version: Option<nvptx::ptx_version::PtxVersion>,
    pub grid_constants: bool,
}

/// A PTX module as the LLVM path would hand it to the driver.
#[derive(Clone, Debug)]
pub struct NvptxModule {
    pub ptx: Vec<core::ffi::c_char>,
    pub entrypoint: String,
    pub ir: String,
    pub shared_memory_size: usize,
    pub io: Vec<BufferIOAttr>,
}

/// What a compilation produces. `Unavailable` is never built: it keeps the match in
/// cubecl-cuda (which expects more than one kind of artifact) meaningful.
#[derive(Clone, Debug)]
pub enum PlironArtifact {
    NvptxCode(NvptxModule),
    Unavailable,
}

impl fmt::Display for PlironArtifact {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PlironArtifact::NvptxCode(module) => f.write_str(&module.ir),
            PlironArtifact::Unavailable => f.write_str("(no LLVM compiler in this build)"),
        }
    }
}

impl Compiler for PlironCompiler {
    type Representation = PlironArtifact;
    type CompilationOptions = PlironOptions;

    fn buffer_io(repr: &Self::Representation) -> Option<Vec<BufferIOAttr>> {
        match repr {
            PlironArtifact::NvptxCode(module) => Some(module.io.clone()),
            PlironArtifact::Unavailable => None,
        }
    }

    fn compile(
        &mut self,
        _kernel: KernelDefinition,
        _options: &Self::CompilationOptions,
    ) -> Result<Self::Representation, CompilationError> {
        Err(CompilationError::Generic {
            reason: "this build has no LLVM kernel compiler (yari replaces cubecl-llvm so that \
                     it builds offline); cubecl-cuda must be built with its `cpp` feature, \
                     which compiles kernels with NVRTC"
                .to_string(),
            backtrace: BackTrace::capture(),
        })
    }

    fn extension(&self) -> &'static str {
        "ll"
    }

    fn lang_tag(&self) -> &'static str {
        "llvm"
    }
}

pub mod nvptx {
    pub mod ptx_version {
        use super::super::fmt;

        /// A PTX ISA version, as cubecl-cuda names it in its kernel cache keys.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub struct PtxVersion(u32);

        impl PtxVersion {
            /// The PTX version the LLVM path would emit for a driver: none, as there is no
            /// LLVM path (cubecl-cuda reads it only when compiling through LLVM).
            pub fn for_driver(_driver: i32) -> Option<Self> {
                None
            }
        }

        impl fmt::Display for PtxVersion {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, "ptx{}", self.0)
            }
        }
    }
}

pub mod shared {
    pub use super::{NvptxModule, PlironArtifact, PlironCompiler, PlironOptions};

    pub mod lowered_features {
        use cubecl_core::ir::DeviceProperties;

        /// The GPU families the LLVM path lowers for.
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        pub enum GpuTarget {
            Nvptx,
        }

        /// Narrows `props` to what the LLVM path lowers. Without that path nothing is
        /// lowered by it, so nothing needs narrowing: cubecl-cuda calls this only when it
        /// compiles through LLVM, which this build never does.
        pub fn restrict_features(_props: &mut DeviceProperties, _target: GpuTarget) {}
    }
}
