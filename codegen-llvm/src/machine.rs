//! Target machines and the optimisation pipeline, set up once for both LLVM backends: LLVM's
//! target registry is global, so each target is initialised once per process and never from
//! several threads at once (tests, Python threads and library users compile in parallel).

use crate::ir::LlvmError;
use inkwell::module::Module;
use inkwell::passes::PassBuilderOptions;
use inkwell::targets::{CodeModel, InitializationConfig, RelocMode, Target, TargetMachine, TargetTriple};
use inkwell::OptimizationLevel;

/// The LLVM targets tilec generates code for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Arch {
    /// The host CPU (the LLVM CPU backend).
    Host,
    /// NVIDIA GPUs (the PTX backend).
    Nvptx,
}

/// Initialises `arch`'s LLVM target, once per process. Errors: the host is not a target this
/// LLVM was built for.
pub fn initialize(arch: Arch) -> Result<(), LlvmError> {
    static HOST: std::sync::OnceLock<Result<(), String>> = std::sync::OnceLock::new();
    static NVPTX: std::sync::OnceLock<()> = std::sync::OnceLock::new();
    match arch {
        Arch::Host => {
            HOST.get_or_init(|| Target::initialize_native(&InitializationConfig::default())).clone().map_err(LlvmError)
        }
        Arch::Nvptx => {
            NVPTX.get_or_init(|| Target::initialize_nvptx(&InitializationConfig::default()));
            Ok(())
        }
    }
}

/// A target machine of `arch` for `triple`, `cpu` (an LLVM CPU name: `znver2`, `sm_80`) and
/// `features`, optimising aggressively (O3). Errors: LLVM has no such target or machine.
pub fn target_machine(
    arch: Arch,
    triple: &TargetTriple,
    cpu: &str,
    features: &str,
    reloc: RelocMode,
    code_model: CodeModel,
) -> Result<TargetMachine, LlvmError> {
    initialize(arch)?;
    let target = Target::from_triple(triple).map_err(|e| LlvmError(e.to_string()))?;
    target.create_target_machine(triple, cpu, features, OptimizationLevel::Aggressive, reloc, code_model).ok_or_else(
        || LlvmError(format!("LLVM has no target machine for {cpu} ({})", triple.as_str().to_string_lossy())),
    )
}

/// Runs LLVM's `default<O3>` pipeline on `m` for `tm`; with `unroll` false, without LLVM's
/// loop unrolling (the CPU backend unrolls what it wants itself).
pub fn optimize(m: &Module<'_>, tm: &TargetMachine, unroll: bool) -> Result<(), LlvmError> {
    let opts = PassBuilderOptions::create();
    if !unroll {
        opts.set_loop_unrolling(false);
    }
    m.run_passes("default<O3>", tm, opts).map_err(|e| LlvmError(e.to_string()))
}
