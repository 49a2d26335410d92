//! The CPU backend of tilec: Cranelift code from Tile IR, JIT-compiled for `tilec run` and
//! written as an object file for `tilec build --target cpu`.
//!
//! # C ABI of a compiled kernel
//! ```c
//! void NAME(const uint64_t *args, const int64_t *ids);
//! ```
//! `NAME` is the kernel instance's symbol (`potrf_batched__f32`). `args` holds 8-byte slots,
//! one group per kernel parameter in declaration order: an array parameter takes `1 + rank`
//! slots (the data pointer, then each extent as an `int64_t`), a scalar parameter one slot with
//! its value's bits in the low bytes. `ids` points to six `int64_t`: the program's index along
//! grid axes 0, 1, 2, then the grid's extents. One call runs one program; the caller runs
//! every program of the grid (in any order, in parallel). The arrays must have the shapes the
//! signature declares (extents named alike equal, fixed extents as written) and the ids must lie
//! in the grid: indices that these prove in bounds are not checked (`tilec_midend::bounds`).
//! Transcendental functions call the C
//! library's `exp`, `logf`, `sinf`, ... (link with `-lm`), except the `f32` `exp` and `tanh`,
//! which are tilec's own (`expf.rs`, `tanhf.rs`).
//!
//! Object files also export, for every kernel instance, its launch function:
//! ```c
//! void NAME__grid(const uint64_t *args, int64_t grid[3], double *flops);
//! ```
//! With the same `args`, it writes the grid's extents along axes 0, 1, 2 (from the `grid(..)`
//! clause; integer division by zero gives 0, as in kernels, where `tilec run` reports E0415)
//! and the kernel's flop count (`flops(..)`; NaN without that clause).
//!
//! `tilec build --target cpu --emit header` writes a C header with these declarations for
//! every instance of the object, each argument's slot in a comment, and `NAME_ARGS` (upper
//! case) defined as the number of slots.

mod blocks;
mod chains;
mod expf;
mod factor;
mod half;
mod isa;
mod ix;
mod linalg;
#[cfg(feature = "llvm")]
mod llvm;
mod lower;
mod memory;
mod scalar;
mod sinf;
mod slots;
mod tanhf;
mod tile;
mod vmap;

use cranelift_codegen::ir::{AbiParam, Signature};
use cranelift_codegen::isa::OwnedTargetIsa;
use cranelift_jit::{JITBuilder, JITModule};
use cranelift_module::{default_libcall_names, Linkage, Module as _};
use cranelift_object::{ObjectBuilder, ObjectModule};
use std::fmt;
use tilec_midend::{Kernel, Module};

/// Why code generation failed. These are internal errors or host problems, not user errors:
/// every user error is caught by the frontend.
#[derive(Debug, Clone, PartialEq)]
pub struct CodegenError {
    pub message: String,
    /// The source location of the op that failed, when it has one.
    pub loc: Option<tilec_midend::Loc>,
}

impl CodegenError {
    /// This error, located at `loc` unless it already has a location.
    pub(crate) fn at(mut self, loc: tilec_midend::Loc) -> CodegenError {
        if self.loc.is_none() && loc != tilec_midend::Loc::default() {
            self.loc = Some(loc);
        }
        self
    }
}

impl fmt::Display for CodegenError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "CPU code generation failed: {}", self.message)
    }
}

impl std::error::Error for CodegenError {}

/// A copy of `module` after the CPU backends' own passes (`tilec_midend::passes::for_cpu`;
/// `llvm`: with the LLVM backend's). A verifier failure is a compiler bug, reported as an
/// error.
pub(crate) fn cpu_module(module: &Module, llvm: bool) -> Result<Module, CodegenError> {
    tilec_midend::passes::for_cpu(module, llvm).map_err(|(pass, errs)| {
        err(format!(
            "the IR verifier failed after `{pass}`: {}",
            errs.first().map(|e| e.to_string()).unwrap_or_default()
        ))
    })
}

pub(crate) fn err(e: impl fmt::Display) -> CodegenError {
    CodegenError { message: e.to_string(), loc: None }
}

/// The entry point of a compiled kernel (see the crate docs for the ABI).
pub type KernelFn = unsafe extern "C" fn(args: *const u64, ids: *const i64);

/// Which code generator compiles CPU kernels.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum CpuBackend {
    /// Cranelift (needs Rust alone; the default of builds without LLVM, see
    /// [`CpuBackend::BEST`]): 128-bit vectors, compiles in milliseconds.
    #[default]
    Cranelift,
    /// LLVM 16 (cargo feature `llvm`): the host's full vector width (AVX2, AVX-512) and FMA,
    /// tiles kept in registers; compiles in tens to hundreds of milliseconds.
    Llvm,
}

impl fmt::Display for CpuBackend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            CpuBackend::Cranelift => "Cranelift",
            CpuBackend::Llvm => "LLVM",
        })
    }
}

impl CpuBackend {
    /// The default: LLVM where this build has it (feature `llvm`), else Cranelift.
    pub const BEST: CpuBackend = if cfg!(feature = "llvm") { CpuBackend::Llvm } else { CpuBackend::Cranelift };

    /// Whether this build of tilec includes the backend.
    pub fn available(self) -> bool {
        self == CpuBackend::Cranelift || cfg!(feature = "llvm")
    }
}

pub use tilec_codegen_llvm::llvm_version;

/// The message for builds without the LLVM backend.
pub const LLVM_NOT_BUILT: &str = "this tilec was built without the LLVM CPU backend: rebuild with `cargo build \
     --release -p tilec --features llvm` (needs LLVM 16: `apt-get install llvm-16-dev libpolly-16-dev`)";

/// What owns a JIT-compiled kernel's code.
enum CodeOwner {
    Cranelift(#[allow(dead_code)] Box<JITModule>),
    #[cfg(feature = "llvm")]
    Llvm(#[allow(dead_code)] llvm::LlvmJit),
    /// Code loaded from an object file ([`load_jit_object`]).
    #[cfg(feature = "llvm")]
    Orc(#[allow(dead_code)] llvm::orc::OrcJit),
}

/// A JIT-compiled kernel; the code lives as long as this value.
pub struct JitKernel {
    _code: CodeOwner,
    entry: KernelFn,
}

// SAFETY: a shared `JitKernel` only hands out its entry point (a copy of a function pointer);
// the code owner is never touched through `&self` after compilation, and the finalized code is
// immutable, so threads may call the entry point concurrently (programs of a launch do).
unsafe impl Sync for JitKernel {}

// SAFETY: the code owner is a Cranelift JIT module (Send) or an LLVM execution engine with its
// own context, used by no other thread: LLVM allows a context to move between threads when it
// is not used concurrently, and a `JitKernel` only uses it to free it on drop.
unsafe impl Send for JitKernel {}

impl JitKernel {
    /// The entry point. It stays valid while `self` lives.
    pub fn entry(&self) -> KernelFn {
        self.entry
    }
}

fn kernel_signature(isa: &OwnedTargetIsa) -> Signature {
    pointers_signature(isa, 2)
}

/// A signature of `n` pointer parameters and no result.
fn pointers_signature(isa: &OwnedTargetIsa, n: usize) -> Signature {
    let mut sig = Signature::new(isa.default_call_conv());
    for _ in 0..n {
        sig.params.push(AbiParam::new(cranelift_codegen::ir::types::I64));
    }
    sig
}

/// A JIT module for the host and the lowered (not yet compiled) function of `kernel`.
fn jit_function(module: &Module, kernel: &Kernel) -> Result<(JITModule, cranelift_codegen::Context), CodegenError> {
    let module = &cpu_module(module, false)?;
    let isa = isa::host(false)?;
    let sig = kernel_signature(&isa);
    let mut jit = JITModule::new(JITBuilder::with_isa(isa, default_libcall_names()));
    let mut ctx = jit.make_context();
    ctx.func.signature = sig;
    lower::lower_function(&mut jit, &mut ctx.func, &module.funcs[kernel.body], kernel, &module.funcs[kernel.launch])?;
    Ok((jit, ctx))
}

/// JIT-compiles one kernel instance of a module that has been through the pass pipeline.
pub fn compile_jit(module: &Module, kernel: &Kernel) -> Result<JitKernel, CodegenError> {
    let (mut jit, mut ctx) = jit_function(module, kernel)?;
    let id = jit.declare_function(&kernel.symbol, Linkage::Export, &ctx.func.signature).map_err(err)?;
    jit.define_function(id, &mut ctx).map_err(|e| err(format!("{e:?}")))?;
    jit.finalize_definitions().map_err(err)?;
    let ptr = jit.get_finalized_function(id);
    // SAFETY: the function was compiled with the signature of `KernelFn`.
    let entry = unsafe { std::mem::transmute::<*const u8, KernelFn>(ptr) };
    Ok(JitKernel { _code: CodeOwner::Cranelift(Box::new(jit)), entry })
}

/// JIT-compiles one kernel instance with the chosen backend (see [`compile_jit`]).
///
/// # Errors
/// [`LLVM_NOT_BUILT`] for [`CpuBackend::Llvm`] in builds without the `llvm` feature.
pub fn compile_jit_with(module: &Module, kernel: &Kernel, backend: CpuBackend) -> Result<JitKernel, CodegenError> {
    match backend {
        CpuBackend::Cranelift => compile_jit(module, kernel),
        #[cfg(feature = "llvm")]
        CpuBackend::Llvm => {
            let (code, entry) = llvm::compile_jit(module, kernel)?;
            Ok(JitKernel { _code: CodeOwner::Llvm(code), entry })
        }
        #[cfg(not(feature = "llvm"))]
        CpuBackend::Llvm => Err(err(LLVM_NOT_BUILT)),
    }
}

/// The object code of one kernel instance for this host's JIT, from the LLVM backend (the
/// kernel function alone, position-independent, for the host's CPU and features): what a
/// persistent compile cache keeps, to load with [`load_jit_object`]. Errors: code generation;
/// [`LLVM_NOT_BUILT`] without the `llvm` feature.
pub fn compile_jit_object(module: &Module, kernel: &Kernel) -> Result<Vec<u8>, CodegenError> {
    #[cfg(feature = "llvm")]
    {
        llvm::compile_jit_object(module, kernel)
    }
    #[cfg(not(feature = "llvm"))]
    {
        let _ = (module, kernel);
        Err(err(LLVM_NOT_BUILT))
    }
}

/// Links an object of [`compile_jit_object`] into the process (LLVM's ORC LLJIT) and returns
/// the kernel. Errors: LLVM's (a malformed object, a missing symbol); [`LLVM_NOT_BUILT`]
/// without the `llvm` feature.
///
/// # Safety
///
/// `object` must be what [`compile_jit_object`] returned for `kernel` (or its module) on a
/// host with the same CPU and features ([`llvm_host`]) and the same tilec: its code is run as
/// the kernel. A cache must check that its bytes are those it stored.
pub unsafe fn load_jit_object(object: &[u8], kernel: &Kernel) -> Result<JitKernel, CodegenError> {
    #[cfg(feature = "llvm")]
    {
        let (code, entry) = llvm::orc::load(object, &kernel.symbol)?;
        Ok(JitKernel { _code: CodeOwner::Orc(code), entry })
    }
    #[cfg(not(feature = "llvm"))]
    {
        let _ = (object, kernel);
        Err(err(LLVM_NOT_BUILT))
    }
}

/// The host as the LLVM backend compiles for it: its CPU name and features (empty without the
/// `llvm` feature). Part of a compile cache's key.
pub fn llvm_host() -> String {
    #[cfg(feature = "llvm")]
    {
        use inkwell::targets::TargetMachine;
        format!("{} {}", TargetMachine::get_host_cpu_name(), TargetMachine::get_host_cpu_features())
    }
    #[cfg(not(feature = "llvm"))]
    {
        String::new()
    }
}

/// The optimised LLVM IR of one kernel instance (the LLVM backend's `--emit llvm`).
pub fn emit_llvm(module: &Module, kernel: &Kernel) -> Result<String, CodegenError> {
    #[cfg(feature = "llvm")]
    {
        llvm::emit_llvm(module, kernel)
    }
    #[cfg(not(feature = "llvm"))]
    {
        let _ = (module, kernel);
        Err(err(LLVM_NOT_BUILT))
    }
}

/// An object file of every kernel instance with the chosen backend (see [`compile_object`]).
pub fn compile_object_with(module: &Module, backend: CpuBackend) -> Result<Vec<u8>, CodegenError> {
    compile_object_for(module, backend, None)
}

/// The CPU models an LLVM object file can be built for besides the host's own
/// ([`compile_object_for`]): the x86-64 micro-architecture levels (psABI: v2 SSE4.2, v3 AVX2
/// and FMA, v4 AVX-512) on x86-64 hosts, a generic core and Neoverse cores on AArch64 hosts.
pub const LLVM_CPUS: &[&str] = if cfg!(target_arch = "aarch64") {
    &["generic", "neoverse-n1", "neoverse-v1", "neoverse-v2"]
} else {
    &["x86-64", "x86-64-v2", "x86-64-v3", "x86-64-v4"]
};

/// [`compile_object_with`] for CPU model `cpu` (one of [`LLVM_CPUS`]; `None`: the host's CPU
/// and features), so that an object file can be built for machines other than the one
/// building it. Errors: a model with Cranelift, or one not in [`LLVM_CPUS`].
pub fn compile_object_for(module: &Module, backend: CpuBackend, cpu: Option<&str>) -> Result<Vec<u8>, CodegenError> {
    if let Some(c) = cpu.filter(|c| !LLVM_CPUS.contains(c)) {
        return Err(err(format!("unknown CPU model `{c}` (expected one of {})", LLVM_CPUS.join(", "))));
    }
    match backend {
        CpuBackend::Cranelift if cpu.is_some() => {
            Err(err("a CPU model is chosen for the LLVM backend only: Cranelift builds for the host"))
        }
        CpuBackend::Cranelift => compile_object(module),
        #[cfg(feature = "llvm")]
        CpuBackend::Llvm => llvm::compile_object(module, cpu),
        #[cfg(not(feature = "llvm"))]
        CpuBackend::Llvm => Err(err(LLVM_NOT_BUILT)),
    }
}

/// The Cranelift IR (CLIF text) of one kernel instance, before Cranelift's own optimisation.
pub fn emit_clif(module: &Module, kernel: &Kernel) -> Result<String, CodegenError> {
    let (_, ctx) = jit_function(module, kernel)?;
    Ok(ctx.func.display().to_string())
}

/// Compiles every kernel instance of the module into one relocatable object file for the host,
/// each exported under its symbol with the C ABI above, with its launch function `SYMBOL__grid`.
pub fn compile_object(module: &Module) -> Result<Vec<u8>, CodegenError> {
    let module = &cpu_module(module, false)?;
    let isa = isa::host(true)?;
    let sig = kernel_signature(&isa);
    let launch_sig = pointers_signature(&isa, 3);
    let builder = ObjectBuilder::new(isa, "tilec", default_libcall_names()).map_err(err)?;
    let mut obj = ObjectModule::new(builder);
    for k in &module.kernels {
        let id = obj.declare_function(&k.symbol, Linkage::Export, &sig).map_err(err)?;
        let mut ctx = obj.make_context();
        ctx.func.signature = sig.clone();
        lower::lower_function(&mut obj, &mut ctx.func, &module.funcs[k.body], k, &module.funcs[k.launch])?;
        obj.define_function(id, &mut ctx).map_err(|e| err(format!("{e:?}")))?;
        let id = obj.declare_function(&format!("{}__grid", k.symbol), Linkage::Export, &launch_sig).map_err(err)?;
        let mut ctx = obj.make_context();
        ctx.func.signature = launch_sig.clone();
        lower::lower_function(&mut obj, &mut ctx.func, &module.funcs[k.launch], k, &module.funcs[k.launch])?;
        obj.define_function(id, &mut ctx).map_err(|e| err(format!("{e:?}")))?;
    }
    obj.finish().emit().map_err(err)
}
