//! The PTX backend of tilec: PTX text for NVIDIA GPUs (sm_70 to sm_90) from the SIMT form of a
//! kernel, through inkwell and LLVM 16's NVPTX backend. Behind the cargo feature `ptx`, so
//! that the default build needs Rust alone; without it, [`compile`] says how to get it.
//!
//! # Launch ABI
//! The entry point `tilec_main` runs one program per CUDA block of exactly `lanes` (32)
//! threads, one warp. Its parameters: a pointer to the params buffer (32-bit words, laid out
//! by [`ParamsLayout`], as for SPIR-V), then one global pointer per array parameter, in
//! declaration order. Shared arrays are static `.shared` memory.

#[cfg(feature = "ptx")]
mod llvm;

use std::fmt;
use tilec_midend::simt::SimtKernel;
pub use tilec_midend::simt::{ParamsLayout, HEADER_WORDS};

/// Why PTX generation failed.
#[derive(Debug, Clone, PartialEq)]
pub struct PtxError {
    pub message: String,
    /// The source location of the op that failed, when it has one.
    pub loc: Option<tilec_midend::Loc>,
}

impl PtxError {
    /// This error, located at `loc` unless it already has a location.
    #[cfg_attr(not(feature = "ptx"), allow(dead_code))]
    pub(crate) fn at(mut self, loc: tilec_midend::Loc) -> PtxError {
        if self.loc.is_none() && loc != tilec_midend::Loc::default() {
            self.loc = Some(loc);
        }
        self
    }
}

impl fmt::Display for PtxError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "PTX generation failed: {}", self.message)
    }
}

impl std::error::Error for PtxError {}

/// A compiled kernel.
#[derive(Debug, Clone)]
pub struct PtxKernel {
    /// PTX assembly text.
    pub text: String,
    /// The entry point's name (`tilec_main`).
    pub entry: String,
    /// Threads per block (= lanes of the SIMT form, one warp).
    pub lanes: u32,
    /// Layout of the params buffer.
    pub params: ParamsLayout,
    /// Bytes of static shared memory.
    pub shared_bytes: u32,
    /// The GPU architecture, `sm_80`.
    pub arch: String,
}

/// Whether this build of tilec includes the PTX backend.
pub const AVAILABLE: bool = cfg!(feature = "ptx");

/// The message for builds without the backend.
pub const NOT_BUILT: &str = "this tilec was built without the PTX backend: rebuild with `cargo build --release \
     -p tilec --features ptx` (needs LLVM 16: `apt-get install llvm-16-dev libpolly-16-dev`)";

/// Compiles a kernel in SIMT form (32 lanes) to PTX for `arch` (`sm_70` to `sm_90`).
pub fn compile(k: &SimtKernel, arch: &str) -> Result<PtxKernel, PtxError> {
    if !(arch.starts_with("sm_") && arch[3..].parse::<u32>().is_ok_and(|v| (70..=90).contains(&v))) {
        return Err(PtxError { message: format!("unsupported architecture `{arch}` (sm_70 to sm_90)"), loc: None });
    }
    if k.lanes != 32 {
        return Err(PtxError {
            message: format!("CUDA warps have 32 lanes; the kernel was lowered for {}", k.lanes),
            loc: None,
        });
    }
    if let Err(es) = tilec_midend::verify::verify_simt(k) {
        return Err(PtxError { message: es[0].to_string(), loc: es[0].loc });
    }
    #[cfg(feature = "ptx")]
    {
        llvm::compile(k, arch)
    }
    #[cfg(not(feature = "ptx"))]
    {
        Err(PtxError { message: NOT_BUILT.to_string(), loc: None })
    }
}
