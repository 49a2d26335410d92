//! The host target: Cranelift's native ISA with the speed optimisation level.

use crate::{err, CodegenError};
use cranelift_codegen::isa::OwnedTargetIsa;
use cranelift_codegen::settings::{self, Configurable};

/// The ISA of this machine, with the host's CPU features (SSE4.1, FMA, ...); `pic` for
/// object files (the JIT needs absolute code).
pub(crate) fn host(pic: bool) -> Result<OwnedTargetIsa, CodegenError> {
    let mut flags = settings::builder();
    flags.set("opt_level", "speed").map_err(err)?;
    flags.set("is_pic", if pic { "true" } else { "false" }).map_err(err)?;
    // Tiles live in the stack frame, which can be large: probe it page by page.
    flags.set("enable_probestack", "true").map_err(err)?;
    flags.set("probestack_strategy", "inline").map_err(err)?;
    let builder = cranelift_native::builder().map_err(|e| err(format!("unsupported host: {e}")))?;
    builder.finish(settings::Flags::new(flags)).map_err(err)
}

/// Whether the host has fused multiply-add, so that `fma` compiles to one instruction.
pub(crate) fn host_has_fma() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::is_x86_feature_detected!("fma")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        true
    }
}
