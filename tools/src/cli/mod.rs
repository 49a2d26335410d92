//! The `tilec` command line: `check`, `build`, `run`, `explain`, `lsp`, `gen-uniform` and
//! `gen-spd`, each compiling and launching through the driver (`crate::driver`). Everything it
//! prints goes to the writers it is given, so tests run it in-process. Exit codes: 0 success,
//! 1 errors in the program, 2 the others (usage, inputs, devices, code generation:
//! [`crate::ErrorKind::exit_code`]).

use crate::driver::{Error, ErrorKind, Session, SessionOptions};
mod build;
mod run;
mod tune;

use crate::{render_diagnostics, ErrorFormat, SourceSet};
use clap::{Parser, Subcommand, ValueEnum};
use run::RunRequest;
use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use tilec_frontend::GenericArg;
use tilec_grammar::diag::{Diagnostic, Severity};
use tilec_midend::Scalar;
use tilec_runtime::{write_npy_atomic, ArgValue, HostArray, RunError};

#[derive(Parser, Debug)]
#[command(name = "tilec", version, about = "Compiler and runner for .tile tile kernels")]
struct Cli {
    /// How diagnostics are printed.
    #[arg(long, value_enum, default_value_t = Format::Human, global = true)]
    error_format: Format,
    /// `--deny warnings`: every warning is an error.
    #[arg(long, value_enum, global = true)]
    deny: Option<Deny>,
    /// The cache folder for tuning records (default: `$TILEC_CACHE_DIR`, else
    /// `$XDG_CACHE_HOME/tilec`, else `~/.cache/tilec`).
    #[arg(long, global = true, value_name = "DIR")]
    cache_dir: Option<PathBuf>,
    /// Compile kernels without their `print`s (which then cost nothing).
    #[arg(long, global = true)]
    quiet_prints: bool,
    /// Compile kernels without their `assert`s (which then cost nothing).
    #[arg(long, global = true)]
    no_asserts: bool,
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
enum Deny {
    Warnings,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
enum Format {
    Human,
    Json,
}

#[derive(Clone, Copy, Debug, ValueEnum, PartialEq)]
enum Target {
    /// Native code through Cranelift (run: JIT; build: an object file).
    Cpu,
    /// SPIR-V compute shaders (build only; `run` uses `vulkan`).
    Spirv,
    /// Run on a Vulkan device (run only; `build` uses `spirv`).
    Vulkan,
    /// PTX for NVIDIA GPUs (build only; `run` uses `cuda`).
    Ptx,
    /// Run on an NVIDIA GPU through the CUDA driver (run only; `build` uses `ptx`).
    Cuda,
}

#[derive(Clone, Copy, Debug, ValueEnum, PartialEq)]
pub(crate) enum Emit {
    Tokens,
    Ast,
    Tir,
    Clif,
    /// The target's binary: an object file (cpu) or SPIR-V modules (spirv).
    Obj,
    /// The SIMT form of each kernel (spirv target).
    Simt,
    /// SPIR-V disassembly (spirv target).
    SpirvAsm,
    /// LLVM IR after optimisation (cpu target with `--backend llvm`).
    Llvm,
    /// A C header declaring the object file's kernels (cpu target).
    Header,
}

/// The code generator of the CPU target.
#[derive(Clone, Copy, Debug, ValueEnum, PartialEq, Default)]
pub(crate) enum CpuGen {
    /// Cranelift: compiles in milliseconds, 128-bit vectors.
    #[default]
    Cranelift,
    /// LLVM 16: the host's full vector width and FMA (builds with the `ptx` feature).
    Llvm,
}

impl From<CpuGen> for tilec_codegen_cpu::CpuBackend {
    fn from(g: CpuGen) -> Self {
        match g {
            CpuGen::Cranelift => tilec_codegen_cpu::CpuBackend::Cranelift,
            CpuGen::Llvm => tilec_codegen_cpu::CpuBackend::Llvm,
        }
    }
}

/// Where `run` and `tune` launch, and with which generic arguments.
#[derive(clap::Args, Debug)]
struct Launching {
    #[arg(long, value_enum, default_value_t = Target::Cpu)]
    target: Target,
    /// Fix a generic parameter: `T=f32`, `BM=64` (for `tune`, a tuned one is then not tuned).
    #[arg(long = "generic", value_name = "NAME=TYPE")]
    generics: Vec<String>,
    /// The device: for `--target vulkan` in the loader's order (default: the first discrete
    /// GPU, else any), for `--target cuda` in the driver's (default: 0).
    #[arg(long)]
    device: Option<usize>,
    /// The code generator for `--target cpu` (default: LLVM where this tilec has it, its
    /// code compiled in the background while Cranelift's runs first; else Cranelift).
    #[arg(long, value_enum)]
    backend: Option<CpuGen>,
}

#[derive(Subcommand, Debug)]
enum Cmd {
    /// Check a program and report every error and warning (`-` reads standard input).
    Check {
        file: PathBuf,
        /// Whose resource limits to check (shared memory per program): cpu (the default),
        /// vulkan/spirv or cuda/ptx.
        #[arg(long, value_enum, default_value_t = Target::Cpu)]
        target: Target,
        /// Print nothing when the program has no errors or warnings.
        #[arg(long, short)]
        quiet: bool,
    },
    /// Print the explanation of an error code from docs/errors.md, e.g. `tilec explain E0201`.
    Explain { code: String },
    /// Run the language server (LSP over standard input and output) for editors.
    Lsp,
    /// Compile a program.
    Build {
        file: PathBuf,
        #[arg(long, value_enum, default_value_t = Target::Cpu)]
        target: Target,
        /// What to write: tokens, ast, tir (Tile IR after passes), clif, obj (the default).
        #[arg(long, value_enum, default_value_t = Emit::Obj)]
        emit: Emit,
        /// Output file (default: stdout for text forms, FILE.o for objects; `-`: stdout).
        #[arg(short, long)]
        o: Option<PathBuf>,
        /// Fix a kernel type parameter, e.g. `T=f32` (default: every allowed type).
        #[arg(long = "generic", value_name = "NAME=TYPE")]
        generics: Vec<String>,
        /// Print the Tile IR after this pass (inline, const-fold, fuse-maps, cse, simplify,
        /// guard-select; with `--backend llvm` also block-rank1).
        #[arg(long)]
        dump_after: Option<String>,
        /// Lanes per subgroup for GPU targets (the device's subgroup size; NVIDIA: 32).
        #[arg(long, default_value_t = 32)]
        lanes: u32,
        /// The NVIDIA architecture for `--target ptx`, `sm_70` to `sm_90`.
        #[arg(long, default_value = "sm_80")]
        arch: String,
        /// With `--target ptx`: report registers, spills, shared memory (ptxas -v) and compile time per kernel;
        /// with `--target spirv`: the lowering time and SPIR-V size of each kernel instance;
        /// with `--target cpu`: the compile time of each kernel instance.
        #[arg(long)]
        report: bool,
        /// The code generator for `--target cpu` (default: LLVM where this tilec has it, else
        /// Cranelift).
        #[arg(long, value_enum)]
        backend: Option<CpuGen>,
        /// The CPU model of the object file with `--backend llvm`: x86-64, x86-64-v2,
        /// x86-64-v3 (AVX2, FMA) or x86-64-v4 (AVX-512) on x86-64 hosts (default: the host's
        /// CPU and features, which other machines may lack).
        #[arg(long)]
        cpu: Option<String>,
    },
    /// Run a kernel on .npy inputs.
    Run {
        file: PathBuf,
        #[arg(long)]
        kernel: String,
        /// `NAME=FILE.npy` for arrays, `NAME=VALUE` for scalars.
        #[arg(long = "arg", value_name = "NAME=VALUE")]
        args: Vec<String>,
        /// `NAME=FILE.npy`: write the `mut` array NAME after the run.
        #[arg(long = "out", value_name = "NAME=FILE")]
        outs: Vec<String>,
        /// Print the `mut` array NAME after the run (all of it up to 16 elements, else its
        /// first and last three, its minimum and its maximum).
        #[arg(long = "print", value_name = "NAME")]
        prints: Vec<String>,
        /// Run the kernel N times and report the median time.
        #[arg(long, default_value_t = 1)]
        repeat: u32,
        #[command(flatten)]
        on: Launching,
    },
    /// Time every configuration of a kernel's tuning candidates (`const BM: i32 = 64 in [32,
    /// 64, 128]`) on .npy inputs, check each against the default's outputs, and record the
    /// fastest for later runs with the same target, dtypes and shapes.
    Tune {
        file: PathBuf,
        #[arg(long)]
        kernel: String,
        /// `NAME=FILE.npy` for arrays, `NAME=VALUE` for scalars.
        #[arg(long = "arg", value_name = "NAME=VALUE")]
        args: Vec<String>,
        /// Timed launches per configuration (the median counts).
        #[arg(long, default_value_t = 5)]
        repeat: u32,
        #[command(flatten)]
        on: Launching,
    },
    /// Write an array of random numbers, uniform in [-1, 1), as .npy.
    GenUniform {
        /// The shape, comma-separated: `512,512`.
        #[arg(long)]
        shape: String,
        #[arg(long, default_value = "f32")]
        dtype: String,
        #[arg(long, default_value_t = 1)]
        seed: u64,
        #[arg(short, long)]
        o: PathBuf,
    },
    /// Write a batch of random symmetric positive definite matrices as .npy.
    GenSpd {
        #[arg(long)]
        batch: usize,
        #[arg(long)]
        n: usize,
        #[arg(long, default_value = "f32")]
        dtype: String,
        #[arg(long, default_value_t = 1)]
        seed: u64,
        #[arg(short, long)]
        o: PathBuf,
    },
}

/// Warnings found while a command compiled, and whether they count as errors.
#[derive(Default)]
pub(crate) struct Lints {
    /// `--deny warnings`.
    pub(crate) deny: bool,
    pub(crate) found: Vec<Diagnostic>,
    /// The cache folder of tuning records (`--cache-dir`, else the user's).
    pub(crate) cache_dir: Option<PathBuf>,
    /// Tiered CPU code (`SessionOptions::tiered`): `run` with no `--backend`.
    pub(crate) tiered: bool,
    /// `--quiet-prints`, `--no-asserts`.
    pub(crate) debug: tilec_midend::debug::DebugOptions,
}

impl Lints {
    /// Every kernel instance of `src` (type parameters not in `fixed` take every type their
    /// bound allows) compiled through a driver session under `target`'s limits, with
    /// `--deny warnings` applied; keeps the warnings to print at the end.
    pub(crate) fn compile(
        &mut self,
        src: &SourceSet,
        fixed: &HashMap<String, GenericArg>,
        verify: bool,
        dump_after: Option<String>,
        target: crate::Target,
    ) -> Result<crate::Compiled, Error> {
        let session = Session::new(
            src.clone(),
            SessionOptions { deny_warnings: self.deny, verify, debug: self.debug, ..Default::default() },
        );
        let c = session.compile_all(fixed, target, dump_after);
        self.found.append(&mut session.take_warnings());
        c
    }
}

/// The coded error of reading, binding or launching, with the help of this command line for a
/// missing argument (`--arg NAME=FILE.npy`).
pub(crate) fn run_error(e: RunError) -> Error {
    let mut d = Diagnostic::error(e.code(), e.to_string());
    if let RunError::MissingArg { name, ty, .. } = &e {
        // How to give it on this command line (the message itself serves the Rust and Python
        // APIs too).
        d.help = Some(if ty.starts_with("mut ") {
            format!("pass it with `--arg {name}=FILE.npy`, or name it with `--out {name}=FILE.npy` to start from zeros")
        } else if ty.contains('[') {
            format!("pass it with `--arg {name}=FILE.npy`")
        } else {
            format!("pass it with `--arg {name}=VALUE`")
        });
    }
    Error::bare(ErrorKind::of_code(e.code()), vec![d])
}

/// Runs the command line `args` (including the program name); returns the exit code.
pub fn main_with(args: Vec<String>, out: &mut dyn Write, err: &mut dyn Write, color: bool) -> i32 {
    use clap::{CommandFactory, FromArgMatches};
    // `--version`: the build (`-V`: the version alone). clap prints the name before it.
    static LONG_VERSION: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    let long_version = LONG_VERSION.get_or_init(|| {
        let info = crate::BuildInfo::get().to_string();
        info.strip_prefix("tilec ").unwrap_or(&info).to_string()
    });
    let parsed = Cli::command().long_version(long_version.as_str()).try_get_matches_from(args);
    let cli = match parsed.and_then(|m| Cli::from_arg_matches(&m)) {
        Ok(c) => c,
        Err(e) => {
            let code = if e.use_stderr() { 2 } else { 0 };
            let text = e.to_string();
            let _ = if code == 0 { write!(out, "{text}") } else { write!(err, "{text}") };
            return code;
        }
    };
    let format = match cli.error_format {
        Format::Human => ErrorFormat::Human,
        Format::Json => ErrorFormat::Json,
    };
    let mut src_for_render: Option<SourceSet> = None;
    let cache_dir = cli.cache_dir.or_else(crate::driver::cache::default_dir);
    let debug = tilec_midend::debug::DebugOptions { prints: !cli.quiet_prints, asserts: !cli.no_asserts };
    let mut lints = Lints { deny: cli.deny.is_some(), found: Vec::new(), cache_dir, tiered: false, debug };
    // Tools reading JSON diagnostics get no summary line from `check`.
    let cmd = match cli.cmd {
        Cmd::Check { file, target, .. } if format == ErrorFormat::Json => Cmd::Check { file, target, quiet: true },
        c => c,
    };
    let result = dispatch(cmd, out, &mut src_for_render, &mut lints);
    let src = src_for_render.unwrap_or_else(|| SourceSet::with_stdlib("<none>", ""));
    let plural = |n: usize| if n == 1 { "" } else { "s" };
    match result {
        Ok(()) => {
            let w = lints.found.len();
            if w > 0 {
                let _ = write!(err, "{}", render_diagnostics(&lints.found, &src, format, color));
                if format == ErrorFormat::Human {
                    let _ = writeln!(err, "warning: {w} warning{} emitted", plural(w));
                }
            }
            0
        }
        Err(f) => {
            let _ = write!(err, "{}", render_diagnostics(&f.diagnostics, &src, format, color));
            if format == ErrorFormat::Human {
                let n = f.diagnostics.iter().filter(|d| d.severity == Severity::Error).count();
                let w = f.diagnostics.len() - n;
                let mut line = format!("error: {n} error{} found", plural(n));
                if w > 0 {
                    line.push_str(&format!(", {w} warning{}", plural(w)));
                }
                let _ = writeln!(err, "{line}");
            }
            f.kind().exit_code()
        }
    }
}

/// Reads the program `file`; `-` is standard input (named `<stdin>` in diagnostics).
/// A program that is not UTF-8 is an error in the program (E0004, exit code 1), shown at its
/// first invalid byte.
fn read_source(file: &Path, slot: &mut Option<SourceSet>) -> Result<SourceSet, Error> {
    let (name, bytes) = if file == Path::new("-") {
        let mut t = Vec::new();
        std::io::Read::read_to_end(&mut std::io::stdin(), &mut t)
            .map_err(|e| Error::usage("E0500", format!("cannot read standard input: {e}")))?;
        ("<stdin>".to_string(), t)
    } else {
        let t =
            std::fs::read(file).map_err(|e| Error::usage("E0500", format!("cannot read `{}`: {e}", file.display())))?;
        (file.display().to_string(), t)
    };
    let (text, bad) = match String::from_utf8(bytes) {
        Ok(t) => (t, None),
        // The valid prefix is the same in the lossy text, so the offset still points there.
        Err(e) => (String::from_utf8_lossy(e.as_bytes()).into_owned(), Some(e.utf8_error().valid_up_to())),
    };
    let s = SourceSet::with_stdlib(name, text);
    *slot = Some(s.clone());
    if let Some(at) = bad {
        let span = tilec_grammar::span::Span::new(at, at + char::REPLACEMENT_CHARACTER.len_utf8());
        let d = Diagnostic::error("E0004", "the source file is not valid UTF-8")
            .label(span, "the first byte that is not UTF-8")
            .help("save the file as UTF-8");
        return Err(Error::program(vec![d]));
    }
    Ok(s)
}

fn parse_generics(list: &[String]) -> Result<HashMap<String, GenericArg>, Error> {
    let mut m = HashMap::new();
    for g in list {
        let Some((n, t)) = g.split_once('=') else {
            return Err(Error::usage(
                "E0501",
                format!("`--generic {g}`: expected NAME=TYPE or NAME=NUMBER, e.g. T=f32"),
            ));
        };
        let v = GenericArg::parse(t.trim()).ok_or_else(|| {
            Error::usage("E0501", format!("`--generic {g}`: `{t}` is neither a scalar type nor a number"))
        })?;
        m.insert(n.trim().to_string(), v);
    }
    Ok(m)
}

fn dispatch(cmd: Cmd, out: &mut dyn Write, slot: &mut Option<SourceSet>, lints: &mut Lints) -> Result<(), Error> {
    match cmd {
        Cmd::Explain { code } => crate::explain::explain(&code, out),
        Cmd::Lsp => crate::lsp::serve_stdio().map_err(|e| Error::usage("E0500", format!("language server: {e}"))),
        Cmd::Check { file, target, quiet } => {
            let src = read_source(&file, slot)?;
            let (run_target, whose) = match target {
                Target::Cpu => (crate::Target::CPU, "the CPU"),
                Target::Spirv | Target::Vulkan => (crate::Target::Vulkan { device: None }, "Vulkan"),
                Target::Ptx | Target::Cuda => (crate::Target::Cuda { device: None }, "CUDA"),
            };
            let m = lints.compile(&src, &HashMap::new(), true, None, run_target)?.module;
            if !quiet && lints.found.is_empty() {
                let mut names: Vec<&str> = m.kernels.iter().map(|k| k.name.as_str()).collect();
                names.sort_unstable();
                names.dedup();
                let plural = |n: usize, w: &str| format!("{n} {w}{}", if n == 1 { "" } else { "s" });
                let _ = writeln!(
                    out,
                    "{}: {} ({}) checked with {whose}'s limits: no errors or warnings",
                    file.display(),
                    plural(names.len(), "kernel"),
                    plural(m.kernels.len(), "instance")
                );
            }
            Ok(())
        }
        Cmd::Run { on: Launching { target: Target::Ptx, .. }, .. } => {
            Err(Error::usage("E0503", "`run --target ptx`: use `--target cuda` to run PTX"))
        }
        Cmd::Run { on: Launching { target: Target::Spirv, .. }, .. } => {
            Err(Error::usage("E0503", "`run --target spirv`: use `--target vulkan` to run SPIR-V"))
        }
        Cmd::Build { file, target, emit, o, generics, dump_after, lanes, arch, report, backend, cpu } => {
            let src = read_source(&file, slot)?;
            let generics = parse_generics(&generics)?;
            let req = build::BuildRequest {
                file: &file,
                target,
                emit,
                o,
                generics,
                dump_after,
                lanes,
                arch,
                report,
                backend,
                cpu,
            };
            build::build(&src, req, out, lints)
        }
        Cmd::Tune { file, kernel, args, repeat, on: Launching { target, generics, device, backend } } => {
            let src = read_source(&file, slot)?;
            let target = run_target(target, device, backend)?;
            tune::tune(&src, &kernel, &args, &parse_generics(&generics)?, target, repeat, out, lints)
        }
        Cmd::Run {
            file,
            kernel,
            args,
            outs,
            prints,
            repeat,
            on: Launching { target, generics, device, backend: cpu },
        } => {
            let src = read_source(&file, slot)?;
            let run_target = run_target(target, device, cpu)?;
            lints.tiered = cpu.is_none();
            let req = RunRequest {
                kernel: &kernel,
                args: &args,
                outs: &outs,
                prints: &prints,
                repeat,
                fixed: &parse_generics(&generics)?,
                target: run_target,
            };
            run::run(&src, &req, out, lints)
        }
        Cmd::GenUniform { shape, dtype, seed, o } => {
            let elem = gen_dtype(&dtype)?;
            let dims: Result<Vec<u64>, _> = shape.split(',').map(|d| d.trim().parse::<u64>()).collect();
            let dims =
                dims.map_err(|_| Error::usage("E0501", format!("`--shape {shape}`: expected extents like 512,512")))?;
            let len = dims.iter().try_fold(1u64, |a, d| a.checked_mul(*d)).filter(|n| *n <= 1 << 32);
            let len = len.ok_or_else(|| Error::usage("E0501", format!("`--shape {shape}`: too many elements")))?;
            let data = tilec_runtime::random_uniform(len as usize, seed);
            let arr = HostArray::from_f64_as(elem, &data, &dims).map_err(run_error)?;
            write_npy_atomic(&o, &arr).map_err(run_error)?;
            let _ = writeln!(out, "wrote a {dtype} array of shape [{shape}] to {}", o.display());
            Ok(())
        }
        Cmd::GenSpd { batch, n, dtype, seed, o } => {
            let elem = gen_dtype(&dtype)?;
            let data = tilec_runtime::random_spd(batch, n, seed);
            let arr = HostArray::from_f64_as(elem, &data, &[batch as u64, n as u64, n as u64]).map_err(run_error)?;
            write_npy_atomic(&o, &arr).map_err(run_error)?;
            let _ = writeln!(out, "wrote {batch} SPD matrices of {n}x{n} {dtype} to {}", o.display());
            Ok(())
        }
    }
}

/// The driver's target of `run` and `tune`: `--target`, `--device` and `--backend` (none:
/// [`crate::Target::CPU`]). Errors: E0503 for a build-only target, E0505 for a CPU backend
/// this build lacks.
fn run_target(target: Target, device: Option<usize>, cpu: Option<CpuGen>) -> Result<crate::Target, Error> {
    Ok(match target {
        Target::Vulkan => crate::Target::Vulkan { device },
        Target::Cuda => crate::Target::Cuda { device },
        Target::Ptx => return Err(Error::usage("E0503", "`--target ptx` builds PTX: use `--target cuda` to run it")),
        Target::Spirv => {
            return Err(Error::usage("E0503", "`--target spirv` builds SPIR-V: use `--target vulkan` to run it"))
        }
        Target::Cpu => match cpu {
            Some(cpu) => {
                cpu_backend_built(cpu)?;
                crate::Target::Cpu(cpu.into())
            }
            None => crate::Target::CPU,
        },
    })
}

fn gen_dtype(dtype: &str) -> Result<Scalar, Error> {
    match dtype {
        "f32" => Ok(Scalar::F32),
        "f64" => Ok(Scalar::F64),
        "f16" => Ok(Scalar::F16),
        "bf16" => Ok(Scalar::BF16),
        _ => Err(Error::usage("E0501", format!("`--dtype {dtype}`: expected f32, f64, f16 or bf16"))),
    }
}

/// Where `build` writes the file of kernel instance `symbol` (extension `ext`): `-o` itself when
/// the program has one instance, else `-o`'s directory (which must exist: E0501, rather than
/// writing somewhere the user did not ask for), else next to `file` as `FILE.SYMBOL.ext`.
pub(crate) fn instance_path(
    o: &Option<PathBuf>,
    several: bool,
    file: &std::path::Path,
    symbol: &str,
    ext: &str,
) -> Result<PathBuf, Error> {
    // An existing directory (or a path written with a trailing `/`) takes one file per instance.
    let dir_like = |p: &PathBuf| p.is_dir() || p.as_os_str().to_string_lossy().ends_with(std::path::MAIN_SEPARATOR);
    match (o, several) {
        (Some(dir), _) if dir_like(dir) => {
            if !dir.is_dir() {
                return Err(Error::usage("E0501", format!("`-o {}`: no such directory", dir.display())));
            }
            Ok(dir.join(format!("{symbol}.{ext}")))
        }
        (Some(p), false) => Ok(p.clone()),
        (Some(p), true) => Err(Error::usage(
            "E0501",
            format!(
                "`-o {}` is not a directory, but `{}` has several kernel instances (one `.{ext}` file \
                 each): give an existing directory, or choose one instance with `--generic`",
                p.display(),
                file.display()
            ),
        )),
        (None, _) => Ok(file.with_extension(format!("{symbol}.{ext}"))),
    }
}

pub(crate) fn write_out(
    path: &Option<PathBuf>,
    default: Option<PathBuf>,
    bytes: &[u8],
    out: &mut dyn Write,
) -> Result<(), Error> {
    // `-o -` is standard output, as for `cc` and most tools (it once wrote a file named `-`).
    let dash = path.as_ref().is_some_and(|p| p.as_os_str() == "-");
    match path.clone().or(default).filter(|_| !dash) {
        Some(p) => {
            let arr_err = |e: std::io::Error| Error::usage("E0400", format!("cannot write `{}`: {e}", p.display()));
            let tmp = p.with_extension("tmp~");
            std::fs::write(&tmp, bytes).map_err(arr_err)?;
            std::fs::rename(&tmp, &p).map_err(arr_err)?;
            Ok(())
        }
        None => out.write_all(bytes).map_err(|e| Error::usage("E0400", format!("cannot write output: {e}"))),
    }
}

/// E0505 when the chosen CPU code generator is not part of this build.
fn cpu_backend_built(g: CpuGen) -> Result<(), Error> {
    if tilec_codegen_cpu::CpuBackend::from(g).available() {
        Ok(())
    } else {
        Err(Error::coded("E0505", tilec_codegen_cpu::LLVM_NOT_BUILT))
    }
}

/// A zero-filled array for a `mut` parameter named only by `--out`, shaped from the shape
/// variables that the other array arguments bind.
pub(crate) fn zeros_for_output(
    kernel: &tilec_midend::Kernel,
    args: &HashMap<String, ArgValue>,
    name: &str,
) -> Result<HostArray, Error> {
    let (elem, shape) = tilec_runtime::output_shape(kernel, args, name).map_err(|e| match e {
        tilec_runtime::RunError::NotAnOutput { .. } => Error::usage(
            "E0418",
            format!("`--out {name}`: `{name}` is not a `mut` array parameter of kernel `{}`", kernel.name),
        ),
        tilec_runtime::RunError::ExtentExpr { expr, unbound: true, .. } => Error::usage(
            "E0502",
            format!(
                "`--out {name}`: the extent `{expr}` is not bound by another argument; pass `--arg {name}=FILE.npy`"
            ),
        ),
        e => run_error(e),
    })?;
    HostArray::zeros(elem, &shape).map_err(run_error)
}

#[cfg(test)]
mod tests {
    use super::instance_path;
    use std::path::{Path, PathBuf};

    #[test]
    fn an_existing_directory_takes_one_file_per_instance_even_for_one_instance() {
        let dir = std::env::temp_dir().join(format!("tilec-o-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        let f = Path::new("prog.tile");
        for several in [false, true] {
            let p = instance_path(&Some(dir.clone()), several, f, "k__f32", "spv").expect("a path");
            assert_eq!(p, dir.join("k__f32.spv"));
        }
        let slash = PathBuf::from(format!("{}/", dir.display()));
        assert_eq!(instance_path(&Some(slash), false, f, "k", "ptx").expect("a path"), dir.join("k.ptx"));
        // A file name with one instance is that file; a missing directory is an error.
        assert_eq!(instance_path(&Some(dir.join("x.spv")), false, f, "k", "spv").ok(), Some(dir.join("x.spv")));
        assert!(instance_path(&Some(dir.join("nope/")), false, f, "k", "spv").is_err());
        std::fs::remove_dir_all(&dir).ok();
    }
}
