//! One-call CPU launches: compile a kernel instance for the argument dtypes, JIT it, bind
//! arguments and run every program of the grid in parallel.

use crate::SourceSet;
use std::collections::HashMap;
use tilec_codegen_cpu::{compile_jit_with, CpuBackend, JitKernel};
use tilec_frontend::GenericArg;
use tilec_grammar::diag::Diagnostic;
use tilec_midend::{Kernel, Module, Scalar};
use tilec_runtime::{bind, run_cpu, ArgValue, Bound, LaunchValues, RunError};

/// A kernel instance compiled for the CPU, ready to launch any number of times.
pub struct CpuRunner {
    pub module: Module,
    pub kernel: Kernel,
    jit: JitKernel,
    /// The code generator that made `jit`.
    backend: CpuBackend,
}

/// What one launch did: the grid and the flop count from the launch function.
pub type RunOutcome = LaunchValues;

/// The shapes of the array arguments, for [`infer_generics`].
pub fn shapes_of(args: &HashMap<String, ArgValue>) -> HashMap<String, Vec<u64>> {
    args.iter().filter_map(|(n, a)| a.array_type().map(|(_, shape)| (n.clone(), shape.to_vec()))).collect()
}

/// The dtypes of the array arguments, for [`infer_generics`].
pub fn dtypes_of(args: &HashMap<String, ArgValue>) -> HashMap<String, Scalar> {
    args.iter().filter_map(|(n, a)| a.array_type().map(|(elem, _)| (n.clone(), elem))).collect()
}

impl CpuRunner {
    /// Compiles `kernel` with its element types inferred from the dtypes of `args` (or fixed
    /// by `fixed`, `T -> f64`), with the default (Cranelift) code generator.
    pub fn new(
        src: &SourceSet,
        kernel: &str,
        args: &HashMap<String, ArgValue>,
        fixed: &HashMap<String, GenericArg>,
    ) -> Result<CpuRunner, Vec<Diagnostic>> {
        Self::with_backend(src, kernel, args, fixed, CpuBackend::Cranelift)
    }

    /// As [`CpuRunner::new`], with the chosen code generator. Errors: the program's
    /// diagnostics; E0901 when code generation fails (or the backend is not built).
    pub fn with_backend(
        src: &SourceSet,
        kernel: &str,
        args: &HashMap<String, ArgValue>,
        fixed: &HashMap<String, GenericArg>,
        backend: CpuBackend,
    ) -> Result<CpuRunner, Vec<Diagnostic>> {
        // Through a session, as every launch: the same inference and checks.
        let session = super::Session::new(src.clone(), super::SessionOptions::default());
        let request = super::InstanceRequest::of_args(args, fixed);
        let inst = session.instance(kernel, super::Target::Cpu(backend), &request).map_err(|e| e.diagnostics)?;
        drop(session);
        Ok(super::session::into_cpu_runner(inst))
    }

    /// JIT-compiles the first kernel instance of an already compiled `module` (as
    /// [`crate::compile`] returns for one instance). Errors: E0107 when the module has no
    /// kernel, E0901 when code generation fails (or the backend is not built).
    pub fn from_module(module: Module, backend: CpuBackend) -> Result<CpuRunner, Vec<Diagnostic>> {
        Self::from_module_cached(module, backend, None)
    }

    /// [`CpuRunner::from_module`]; with the LLVM backend and a cache folder, the object code
    /// comes from the persistent compile cache there when it holds it, and is put there when
    /// not (`driver/objects.rs`).
    pub(crate) fn from_module_cached(
        module: Module,
        backend: CpuBackend,
        cache: Option<&std::path::Path>,
    ) -> Result<CpuRunner, Vec<Diagnostic>> {
        let Some(k) = module.kernels.first().cloned() else {
            return Err(vec![Diagnostic::error("E0107", "the module has no kernel instance")]);
        };
        let jit = match cache {
            Some(dir) if backend == CpuBackend::Llvm && backend.available() => {
                super::objects::llvm_jit(dir, &module, &k)
            }
            _ => compile_jit_with(&module, &k, backend),
        };
        let jit = jit.map_err(|e| crate::Error::codegen("E0901", &module, &k, e.to_string(), e.loc).diagnostics)?;
        Ok(CpuRunner { module, kernel: k, jit, backend })
    }

    /// The runner of code `jit` that LLVM compiled for the first kernel of `module`.
    pub(crate) fn from_llvm_jit(module: Module, jit: JitKernel) -> Option<CpuRunner> {
        let kernel = module.kernels.first().cloned()?;
        Some(CpuRunner { module, kernel, jit, backend: CpuBackend::Llvm })
    }

    /// The code generator that compiled it.
    pub fn backend(&self) -> CpuBackend {
        self.backend
    }

    /// Binds `args` (checking dtypes and shapes) and runs the kernel once.
    pub fn run(&self, args: HashMap<String, ArgValue>) -> Result<(Bound, RunOutcome), RunError> {
        let mut bound = bind(&self.kernel, args)?;
        let out = self.run_bound(&mut bound)?;
        Ok((bound, out))
    }

    /// Runs the kernel once on already bound arguments (updated in place).
    pub fn run_bound(&self, bound: &mut Bound) -> Result<RunOutcome, RunError> {
        // SAFETY: the function was compiled from this kernel, so it implements the packed
        // argument ABI for exactly the parameters `bind` checked; programs of a launch write
        // disjoint elements by the kernel's contract.
        unsafe { run_cpu(self.jit.entry(), &self.module, &self.kernel, bound) }
    }
}
