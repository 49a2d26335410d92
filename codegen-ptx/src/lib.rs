//! The PTX backend of tilec: PTX text for NVIDIA GPUs (sm_70 to sm_90) from the SIMT form of a
//! kernel, through inkwell and LLVM 16's NVPTX backend. Behind the cargo feature `ptx`, so
//! that the default build needs Rust alone; without it, [`compile`] says how to get it.
//!
//! # Launch ABI
//! The entry point `tilec_main` runs on CUDA blocks of 32 threads, one warp each. A SIMT form
//! of 32 lanes runs one program per block; one of `lanes` = 4, 8 or 16 lanes (tiles of at
//! most that many rows, no shared arrays) runs `programs_per_block = 32 / lanes` programs per
//! block, one per segment of `lanes` threads, so that a 16x16 tile leaves no thread idle:
//! program `(ctaid.x + offset) * programs_per_block + tid.x / lanes` on grid axis 0, and the
//! launcher starts `cdiv(programs, programs_per_block)` blocks on that axis. Its parameters: a pointer to the params buffer (32-bit words, laid out
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
    /// Lanes per program (of the SIMT form): 32, or 4, 8 or 16 with several programs per warp.
    pub lanes: u32,
    /// Programs per block of 32 threads (`32 / lanes`), along grid axis 0.
    pub programs_per_block: u32,
    /// Layout of the params buffer.
    pub params: ParamsLayout,
    /// Bytes of static shared memory per block (every program's copies).
    pub shared_bytes: u32,
    /// The GPU architecture, `sm_80`.
    pub arch: String,
}

/// Whether this build of tilec includes the PTX backend.
pub const AVAILABLE: bool = cfg!(feature = "ptx");

/// The message for builds without the backend.
pub const NOT_BUILT: &str = "this tilec was built without the PTX backend: rebuild with `cargo build --release \
     -p tilec --features llvm` (needs LLVM 16: `apt-get install llvm-16-dev libpolly-16-dev`)";

/// Compiles a kernel in SIMT form to PTX for `arch` (`sm_70` to `sm_90`). The form has 32
/// lanes, or 4, 8 or 16 ([`tilec_midend::simt::lower_for_warp`] chooses);
/// other lane counts are an error.
pub fn compile(k: &SimtKernel, arch: &str) -> Result<PtxKernel, PtxError> {
    if !(arch.starts_with("sm_") && arch[3..].parse::<u32>().is_ok_and(|v| (70..=90).contains(&v))) {
        return Err(PtxError { message: format!("unsupported architecture `{arch}` (sm_70 to sm_90)"), loc: None });
    }
    if !matches!(k.lanes, 4 | 8 | 16 | 32) {
        return Err(PtxError {
            message: format!("CUDA warps have 32 lanes; the kernel was lowered for {} (32, or 4, 8 or 16)", k.lanes),
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
