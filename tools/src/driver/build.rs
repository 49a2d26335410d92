//! What `tilec build` makes of a program: every kernel instance compiled under the target's
//! limits, then the artifact asked for (the target's binary, the Tile IR, the SIMT form, the
//! code generator's text, a C header), generated here so that every entry point gets the
//! same bytes.

use super::{Error, Session, Target};
use std::collections::HashMap;
use std::time::{Duration, Instant};
use tilec_codegen_cpu::CpuBackend;
use tilec_frontend::GenericArg;
use tilec_midend::passes::PipelineOptions;
use tilec_midend::Module;

/// The kind of artifact a build makes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Emit {
    /// The target's binary: one relocatable object file for all the CPU instances (each
    /// exported under its symbol), one SPIR-V module or one PTX file per GPU instance.
    Object,
    /// The Tile IR after the passes (on the CPU, after the chosen code generator's own).
    Tir,
    /// The SIMT form of each instance (GPU targets).
    Simt,
    /// The code generator's text: CLIF (Cranelift), LLVM IR after optimisation (LLVM CPU),
    /// SPIR-V disassembly (Vulkan), PTX (CUDA).
    Assembly,
    /// A C header declaring the instances of the CPU object file, with `guard` as its include
    /// guard.
    Header { guard: String },
}

/// Options of a build besides its target.
#[derive(Debug, Clone)]
pub struct BuildOptions {
    /// Generic parameters fixed by the caller (`T = f32`, `BM = 64`); the others take every
    /// type their bound allows, const parameters their default.
    pub generics: HashMap<String, GenericArg>,
    /// Lanes per subgroup of the Vulkan target's SIMT form (the device's subgroup size; 32
    /// fits NVIDIA and most AMD devices in wave32).
    pub lanes: u32,
    /// The NVIDIA architecture of PTX (`sm_70` to `sm_90`).
    pub arch: String,
    /// Write the Tile IR after this pass into [`Build::dump`].
    pub dump_after: Option<String>,
    /// The CPU model of an LLVM object file (one of `tilec_codegen_cpu::LLVM_CPUS`, e.g.
    /// `x86-64-v3`); `None`: the host's CPU and features.
    pub cpu: Option<String>,
}

impl Default for BuildOptions {
    fn default() -> Self {
        BuildOptions { generics: HashMap::new(), lanes: 32, arch: "sm_80".into(), dump_after: None, cpu: None }
    }
}

/// One artifact: of one kernel instance, or of the whole program.
#[derive(Debug, Clone)]
pub struct Artifact {
    /// The instance's symbol (`potrf_batched__f32`); `None` for one artifact of every instance.
    pub symbol: Option<String>,
    /// The file extension it is written with (`o`, `spv`, `ptx`, `h`, `tir`, ...).
    pub extension: &'static str,
    pub bytes: Vec<u8>,
    /// How long the code generator took for it (lowering included).
    pub time: Duration,
}

/// What [`Session::build`] made: the module of every instance after the passes, the
/// artifacts, and the IR after `dump_after` if asked.
pub struct Build {
    pub module: Module,
    pub artifacts: Vec<Artifact>,
    pub dump: Option<String>,
}

impl Session {
    /// Compiles every kernel instance under `target`'s limits (the IR verifier after every
    /// pass when the session's options ask, as the command line's do) and makes `emit` of them for `target`. Errors: the program's diagnostics; E0501
    /// for an unknown `dump_after` pass or CPU model (or a model without the LLVM backend);
    /// E0503 for an artifact the target has not (a SIMT form on the CPU, a header for a GPU);
    /// E0504/E0505/E0901 from the code generators.
    pub fn build(&self, target: Target, emit: &Emit, opts: &BuildOptions) -> Result<Build, Error> {
        if let Some(cpu) = &opts.cpu {
            let models = tilec_codegen_cpu::LLVM_CPUS;
            if !models.contains(&cpu.as_str()) {
                let e = format!("unknown CPU model `{cpu}` (expected one of {})", models.join(", "));
                return Err(Error::usage("E0501", e));
            }
            if target != Target::Cpu(CpuBackend::Llvm) {
                return Err(Error::usage("E0501", "a CPU model is chosen for the LLVM CPU backend only"));
            }
        }
        let mut compiled = self.compile_all(&opts.generics, target, opts.dump_after.clone())?;
        let mut dump = compiled.dump.take();
        let mut module = compiled.module;
        if let Target::Cpu(backend) = target {
            // The CPU code generators run passes of their own (`guard-select`, and
            // `block-rank1` with LLVM): the Tile IR shown is after them.
            if *emit == Emit::Tir || (dump.is_none() && opts.dump_after.is_some()) {
                let popts =
                    PipelineOptions { verify: true, dump_after: opts.dump_after.clone().filter(|_| dump.is_none()) };
                let mut m = module.clone();
                dump = dump.or(tilec_midend::passes::run_cpu_passes(&mut m, backend == CpuBackend::Llvm, &popts)
                    .map_err(|e| Error::program(vec![crate::verifier_failure(e)]))?);
                if *emit == Emit::Tir {
                    module = m;
                }
            }
        }
        if let (None, Some(p)) = (&dump, &opts.dump_after) {
            return Err(unknown_pass(p));
        }
        let artifacts = artifacts(&module, target, emit, opts)?;
        Ok(Build { module, artifacts, dump })
    }

    /// Every kernel instance (with `generics` fixed) JIT-compiled for the CPU with `backend`,
    /// as `tilec run` compiles it: the time of the front end and passes for all of them, then
    /// the code generator's time of each (`tilec build --report`). Errors: the program's
    /// diagnostics, E0901.
    pub fn jit_times(
        &self,
        generics: &HashMap<String, GenericArg>,
        backend: CpuBackend,
    ) -> Result<(Duration, Vec<(String, Duration)>), Error> {
        let t0 = Instant::now();
        let m = self.compile_all(generics, Target::Cpu(backend), None)?.module;
        let front = t0.elapsed();
        let code = Target::Cpu(backend).code_generator().error_code();
        let mut times = Vec::with_capacity(m.kernels.len());
        for k in &m.kernels {
            let t = Instant::now();
            tilec_codegen_cpu::compile_jit_with(&m, k, backend)
                .map_err(|e| Error::codegen(code, &m, k, e.to_string(), e.loc))?;
            times.push((k.symbol.clone(), t.elapsed()));
        }
        Ok((front, times))
    }
}

/// E0501: `--dump-after` names no pass.
fn unknown_pass(p: &str) -> Error {
    let names = |ps: &[tilec_midend::passes::Pass]| ps.iter().map(|p| p.name).collect::<Vec<_>>().join(", ");
    Error::usage(
        "E0501",
        format!(
            "`--dump-after {p}`: no such pass ({}, {}; with `--backend llvm`: {})",
            names(tilec_midend::passes::PASSES),
            names(tilec_midend::passes::CPU_PASSES),
            names(tilec_midend::passes::LLVM_CPU_PASSES)
        ),
    )
}

/// `emit` of every instance of `m` for `target`.
fn artifacts(m: &Module, target: Target, emit: &Emit, opts: &BuildOptions) -> Result<Vec<Artifact>, Error> {
    let whole = |extension, bytes: Vec<u8>, time| Ok(vec![Artifact { symbol: None, extension, bytes, time }]);
    let code = target.code_generator().error_code();
    let t0 = Instant::now();
    match (emit, target) {
        (Emit::Tir, _) => whole("tir", tilec_midend::print::print_module(m).into_bytes(), Duration::ZERO),
        (Emit::Header { guard }, Target::Cpu(_)) => {
            whole("h", super::header::header(m, guard).into_bytes(), Duration::ZERO)
        }
        (Emit::Object, Target::Cpu(backend)) => {
            let bytes =
                tilec_codegen_cpu::compile_object_with(m, backend).map_err(|e| Error::coded(code, e.to_string()))?;
            whole("o", bytes, t0.elapsed())
        }
        (Emit::Assembly, Target::Cpu(backend)) => {
            let (text, ext): (fn(&Module, &tilec_midend::Kernel) -> _, _) = match backend {
                CpuBackend::Cranelift => (tilec_codegen_cpu::emit_clif, "clif"),
                CpuBackend::Llvm => (tilec_codegen_cpu::emit_llvm, "ll"),
            };
            let mut s = String::new();
            for k in &m.kernels {
                s.push_str(&text(m, k).map_err(|e| Error::coded(code, e.to_string()))?);
                s.push('\n');
            }
            whole(ext, s.into_bytes(), t0.elapsed())
        }
        (Emit::Simt, Target::Cpu(_)) => Err(super::target::no_simt_form()),
        (Emit::Header { .. }, _) => {
            Err(Error::usage("E0503", "a C header declares the kernels of a CPU object file: build for the CPU"))
        }
        (_, Target::Vulkan { .. } | Target::Cuda { .. }) => {
            m.kernels.iter().map(|k| gpu_artifact(m, k, target, emit, opts)).collect()
        }
    }
}

/// The artifact `emit` of GPU kernel instance `k` of `m`.
fn gpu_artifact(
    m: &Module,
    k: &tilec_midend::Kernel,
    target: Target,
    emit: &Emit,
    opts: &BuildOptions,
) -> Result<Artifact, Error> {
    let t0 = Instant::now();
    let symbol = Some(k.symbol.clone());
    let artifact =
        |extension, bytes: Vec<u8>| Artifact { symbol: symbol.clone(), extension, bytes, time: t0.elapsed() };
    // The SIMT form needs no code generator: it is made in a build without LLVM too.
    if *emit == Emit::Simt {
        let simt = target.simt(m, k, opts.lanes)?;
        return Ok(artifact("simt", tilec_midend::print::print_function(&simt.func).into_bytes()));
    }
    Ok(match target {
        Target::Vulkan { .. } => {
            let (_, spv) = super::vulkan::spirv_kernel(m, k, opts.lanes, &Default::default())?;
            match emit {
                Emit::Assembly => {
                    let text = format!(
                        "; kernel {} ({} lanes)\n{}\n",
                        k.symbol,
                        opts.lanes,
                        super::vulkan::disassemble(&spv.words)
                    );
                    artifact("spvasm", text.into_bytes())
                }
                _ => artifact("spv", spv.words.iter().flat_map(|w| w.to_le_bytes()).collect()),
            }
        }
        _ => artifact("ptx", super::cuda::ptx_kernel(m, k, &opts.arch)?.text.into_bytes()),
    })
}
