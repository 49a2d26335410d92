//! `tilec build`: the flags mapped onto the driver's [`Session::build`], and its artifacts
//! written (one file per GPU instance, one object file for the CPU, text to standard output or
//! `-o`); `--report`: the compile time of each CPU instance, the time and size of each SPIR-V
//! module, or the registers, spills and shared memory of each PTX kernel from `ptxas -v`.

use super::{instance_path, write_out, CpuGen, Emit, Lints, Target};
use crate::driver::{BuildOptions, Emit as Artifact, Session, SessionOptions};
use crate::{Error, SourceSet};
use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use tilec_frontend::GenericArg;

/// A parsed `tilec build` request.
pub(crate) struct BuildRequest<'a> {
    pub(crate) file: &'a Path,
    pub(crate) target: Target,
    pub(crate) emit: Emit,
    pub(crate) o: Option<PathBuf>,
    pub(crate) generics: HashMap<String, GenericArg>,
    pub(crate) dump_after: Option<String>,
    pub(crate) lanes: u32,
    pub(crate) arch: String,
    pub(crate) report: bool,
    pub(crate) backend: Option<CpuGen>,
    pub(crate) cpu: Option<String>,
}

/// `tilec build`.
pub(crate) fn build(
    src: &SourceSet,
    req: BuildRequest<'_>,
    out: &mut dyn Write,
    lints: &mut Lints,
) -> Result<(), Error> {
    match req.emit {
        Emit::Tokens => {
            let lexed = tilec_grammar::lexer::lex(&src.main_src);
            let mut s = String::new();
            for (a, t, b) in &lexed.tokens {
                s.push_str(&format!("{a}..{b} {t}\n"));
            }
            return write_out(&req.o, None, s.as_bytes(), out);
        }
        Emit::Ast => {
            let (parsed, diags) = src.parse();
            if !diags.is_empty() {
                return Err(Error::program(diags));
            }
            return write_out(&req.o, None, format!("{:#?}\n", parsed.main).as_bytes(), out);
        }
        _ => {}
    }
    let (target, emit) = driver_request(&req)?;
    if let crate::Target::Cpu(_) = target {
        target.require_code_generator()?;
    }
    let session = Session::new(
        src.clone(),
        SessionOptions {
            deny_warnings: lints.deny,
            verify: !(req.report && req.target == Target::Cpu),
            lanes: Some(req.lanes),
            ..Default::default()
        },
    );
    let opts = BuildOptions {
        generics: req.generics.clone(),
        lanes: req.lanes,
        arch: req.arch.clone(),
        dump_after: req.dump_after.clone(),
        cpu: req.cpu.clone(),
    };
    let result = if req.report {
        report(src, &session, target, &opts, out)
    } else {
        write(&session, &req, target, &emit, &opts, out)
    };
    lints.found.append(&mut session.take_warnings());
    result
}

/// The driver's target and artifact for the flags, or E0503 for a combination that has none.
fn driver_request(req: &BuildRequest<'_>) -> Result<(crate::Target, Artifact), Error> {
    let cpu = req.backend.map_or(crate::Target::CPU, |g| crate::Target::Cpu(g.into()));
    let stem = req.file.file_stem().map_or("tilec".into(), |s| s.to_string_lossy().into_owned());
    let guard: String =
        stem.chars().map(|c| if c.is_ascii_alphanumeric() { c.to_ascii_uppercase() } else { '_' }).collect();
    Ok(match (req.target, req.emit) {
        (Target::Cpu, Emit::Simt | Emit::SpirvAsm) => {
            return Err(Error::usage("E0503", "`--emit simt` and `--emit spirv-asm` need `--target spirv`"))
        }
        (Target::Cpu, Emit::Obj) => (cpu, Artifact::Object),
        (Target::Cpu, Emit::Tir) => (cpu, Artifact::Tir),
        (Target::Cpu, Emit::Header) => (cpu, Artifact::Header { guard: format!("TILEC_{guard}_H") }),
        (Target::Cpu, Emit::Clif) => (crate::Target::Cpu(tilec_codegen_cpu::CpuBackend::Cranelift), Artifact::Assembly),
        (Target::Cpu, _) => (crate::Target::Cpu(tilec_codegen_cpu::CpuBackend::Llvm), Artifact::Assembly),
        (Target::Spirv, Emit::Obj) => (crate::Target::Vulkan { device: None }, Artifact::Object),
        (Target::Spirv, Emit::SpirvAsm) => (crate::Target::Vulkan { device: None }, Artifact::Assembly),
        (Target::Spirv, Emit::Simt) => (crate::Target::Vulkan { device: None }, Artifact::Simt),
        (Target::Spirv, _) => {
            return Err(Error::usage("E0503", "`--target spirv` emits obj (SPIR-V), spirv-asm or simt"))
        }
        (Target::Ptx, Emit::Obj) => (crate::Target::Cuda { device: None }, Artifact::Object),
        (Target::Ptx, Emit::Simt) => (crate::Target::Cuda { device: None }, Artifact::Simt),
        (Target::Ptx, _) => return Err(Error::usage("E0503", "`--target ptx` emits obj (PTX) or simt")),
        (Target::Vulkan, _) => {
            return Err(Error::usage("E0503", "`build --target vulkan`: use `--target spirv` to build SPIR-V"))
        }
        (Target::Cuda, _) => {
            return Err(Error::usage("E0503", "`build --target cuda`: use `--target ptx` to build PTX"))
        }
    })
}

/// Builds `emit` and writes it: binaries of GPU instances one file each, the CPU's object
/// file and header next to the source unless `-o` says, text to `-o` or standard output;
/// the IR of `--dump-after` first, to standard output.
fn write(
    session: &Session,
    req: &BuildRequest<'_>,
    target: crate::Target,
    emit: &Artifact,
    opts: &BuildOptions,
    out: &mut dyn Write,
) -> Result<(), Error> {
    let build = session.build(target, emit, opts)?;
    if let Some(d) = &build.dump {
        write_out(&None, None, d.as_bytes(), out)?;
    }
    let several = build.artifacts.len() > 1;
    let mut text = Vec::new();
    for a in &build.artifacts {
        match (emit, &a.symbol) {
            (Artifact::Object, Some(symbol)) => {
                let path = instance_path(&req.o, several, req.file, symbol, a.extension)?;
                write_out(&Some(path), None, &a.bytes, out)?;
            }
            (Artifact::Object | Artifact::Header { .. }, None) => {
                write_out(&req.o, Some(req.file.with_extension(a.extension)), &a.bytes, out)?
            }
            _ => text.extend_from_slice(&a.bytes),
        }
    }
    if !text.is_empty() {
        write_out(&req.o, None, &text, out)?;
    }
    Ok(())
}

/// `--report`: one line per kernel instance.
fn report(
    src: &SourceSet,
    session: &Session,
    target: crate::Target,
    opts: &BuildOptions,
    out: &mut dyn Write,
) -> Result<(), Error> {
    let plural = |n: usize| if n == 1 { "" } else { "s" };
    match target {
        crate::Target::Cpu(backend) => {
            let (front, times) = session.jit_times(&opts.generics, backend)?;
            for (symbol, t) in &times {
                let _ = writeln!(out, "{symbol}: {:.1} ms ({backend})", t.as_secs_f64() * 1e3);
            }
            let n = times.len();
            let _ = writeln!(
                out,
                "front end and passes: {:.1} ms for {n} instance{}",
                front.as_secs_f64() * 1e3,
                plural(n)
            );
        }
        crate::Target::Vulkan { .. } => {
            for a in session.build(target, &Artifact::Object, opts)?.artifacts {
                let words: Vec<u32> =
                    a.bytes.chunks_exact(4).map(|w| u32::from_le_bytes([w[0], w[1], w[2], w[3]])).collect();
                let lines = crate::driver::vulkan::disassemble(&words).lines().count();
                let _ = writeln!(
                    out,
                    "{}: {:.1} ms, {} words, {lines} lines ({} lanes)",
                    a.symbol.unwrap_or_default(),
                    a.time.as_secs_f64() * 1e3,
                    words.len(),
                    opts.lanes
                );
            }
        }
        crate::Target::Cuda { .. } => {
            let build = session.build(target, &Artifact::Object, opts)?;
            let tool = crate::driver::find_ptxas().ok_or_else(|| {
                Error::usage(
                    "E0506",
                    "`--report` needs ptxas: set TILEC_PTXAS, put it on the PATH, or `pip install nvidia-cuda-nvcc-cu12`",
                )
            })?;
            for (a, k) in build.artifacts.iter().zip(&build.module.kernels) {
                let text = String::from_utf8_lossy(&a.bytes);
                let r = crate::driver::ptxas(&tool, &text, &opts.arch)
                    .map_err(|e| Error::usage("E0506", format!("ptxas rejected `{}`:\n{e}", k.symbol)))?;
                let (file, text) = src.text_of(build.module.source_of(k.loc).as_deref());
                let line =
                    text.as_bytes()[..(k.loc.start as usize).min(text.len())].iter().filter(|&&c| c == b'\n').count()
                        + 1;
                let _ = writeln!(
                    out,
                    "{file}:{line}: kernel {} ({}): {} registers per lane, {} bytes spill stores, {} bytes spill loads, {} bytes shared, {:.1} ms to compile",
                    k.symbol, opts.arch, r.registers, r.spill_stores, r.spill_loads, r.shared_bytes, a.time.as_secs_f64() * 1e3
                );
            }
        }
    }
    Ok(())
}
