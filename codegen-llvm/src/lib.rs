//! The LLVM layer that tilec's two LLVM code generators share: the CPU backend's
//! (`tilec-codegen-cpu`, feature `llvm`, `--backend llvm`) and the PTX backend
//! (`tilec-codegen-ptx`, feature `ptx`). Both build LLVM 16 IR through inkwell from Tile IR (the
//! CPU) or its SIMT form (PTX); what does not depend on the target is defined here once, so
//! that the two cannot drift: the LLVM types of scalars and of their storage, constants,
//! calls of intrinsics and library functions, comparison predicates, the `f16`/`bf16`
//! conversions (on scalars and vectors alike), the atomic read-modify-writes, and the target
//! machines and optimisation pipeline (each target initialised once per process).
//!
//! [`Ir`] is a view of a backend's context, module and builder; the backends keep their own
//! generator state and error types ([`LlvmError`] converts into them).
//!
//! Without the feature `llvm` the crate is empty, so that the default build needs no LLVM.

#[cfg(feature = "llvm")]
mod atomics;
#[cfg(feature = "llvm")]
mod half;
#[cfg(feature = "llvm")]
mod ir;
#[cfg(feature = "llvm")]
mod machine;

#[cfg(feature = "llvm")]
pub use ir::{float_predicate, int_predicate, Ir, LlvmError, V};
#[cfg(feature = "llvm")]
pub use machine::{initialize, optimize, target_machine, Arch};

/// The version of the LLVM linked in (`"16.0.6"`), or `None` in a build without the `llvm`
/// feature.
pub fn llvm_version() -> Option<String> {
    #[cfg(feature = "llvm")]
    {
        let (mut major, mut minor, mut patch) = (0, 0, 0);
        // SAFETY: LLVMGetVersion writes three integers through the pointers it is given.
        unsafe { llvm_sys::core::LLVMGetVersion(&mut major, &mut minor, &mut patch) };
        Some(format!("{major}.{minor}.{patch}"))
    }
    #[cfg(not(feature = "llvm"))]
    None
}
