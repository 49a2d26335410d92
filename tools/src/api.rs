//! Calling tilec kernels from Rust programs: compile a [`Program`] once, then launch its
//! kernels on the CPU, a Vulkan device or a CUDA device with slices of your own memory.
//!
//! ```no_run
//! use tilec::{Args, Program, Target};
//!
//! // Four 3x3 SPD matrices, factored in place (A = L L^T, L in the lower triangle).
//! let mut a: Vec<f32> = (0..4).flat_map(|_| [4.0, 2.0, 0.0, 2.0, 5.0, 1.0, 0.0, 1.0, 3.0]).collect();
//! let linalg = Program::linalg()?;
//! let args = Args::new().array_mut("A", &mut a, &[4, 3, 3]).scalar("eps", 1e-6);
//! linalg.launch("potrf_batched", Target::CPU, args, &[])?;
//! assert_eq!(a[0], 2.0);
//! # Ok::<(), tilec::Error>(())
//! ```
//!
//! A kernel is compiled the first time it is launched with a combination of element types
//! (inferred from the arrays' dtypes), const parameters and target, and cached in the
//! [`Program`]: later launches bind and run only. Arrays are never copied on the CPU: kernels
//! read your slices and write `mut` parameters in place (GPU targets copy to and from device
//! memory; on CUDA, arrays already in device memory, [`Args::device`], are used in place).
//! Every failure is an [`Error`] holding coded diagnostics, as the command line
//! prints them; nothing panics on bad input. A `Program` is `Send + Sync`: several threads may
//! launch its kernels at once.

use crate::{render_diagnostics, CpuRunner, ErrorFormat, SourceSet};
use std::collections::HashMap;
use std::marker::PhantomData;
use std::path::Path;
use std::sync::{Arc, Mutex, OnceLock};
use tilec_codegen_cpu::CpuBackend;
use tilec_frontend::{GenericArg, Instances};
use tilec_grammar::ast;
use tilec_grammar::diag::{Diagnostic, Severity};
use tilec_midend::{Const, Kernel, Module, ParamKind, Scalar};
use tilec_runtime::{bind, convert_scalar, ArgValue, Bound, DeviceArray, HostArray, LaunchValues, RunError};

/// Where a kernel instance runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Target {
    /// The host CPU, with the chosen code generator (Cranelift unless the `ptx` feature's
    /// LLVM backend is asked for); one program per rayon task.
    Cpu(CpuBackend),
    /// A Vulkan device (`None`: the first one), through SPIR-V.
    Vulkan { device: Option<usize> },
    /// A CUDA device (`None`: the device of the launch's device arrays, [`Args::device`], else
    /// device 0), through PTX (needs the `ptx` feature and a driver).
    Cuda { device: Option<usize> },
}

impl Target {
    /// The CPU with the default code generator (Cranelift).
    pub const CPU: Target = Target::Cpu(CpuBackend::Cranelift);
}

/// A failure of compiling or launching: the diagnostics (each with its code, `E0xxx`) and
/// their rendering as `tilec` prints them, with the source lines they point at.
#[derive(Debug, Clone)]
pub struct Error {
    /// The diagnostics, errors first.
    pub diagnostics: Vec<Diagnostic>,
    rendered: String,
}

impl Error {
    fn new(diagnostics: Vec<Diagnostic>, src: &SourceSet) -> Error {
        let rendered = render_diagnostics(&diagnostics, src, ErrorFormat::Human, false);
        Error { diagnostics, rendered }
    }

    fn run(e: RunError, src: &SourceSet) -> Error {
        Error::new(vec![Diagnostic::error(e.code(), e.to_string())], src)
    }

    /// The code of the first error (`E0410`, ...); every `Error` holds at least one.
    pub fn code(&self) -> &str {
        let first = self.diagnostics.iter().find(|d| d.severity == Severity::Error).or(self.diagnostics.first());
        first.map_or("", |d| d.code)
    }

    /// The diagnostics rendered as text, without color.
    pub fn rendered(&self) -> &str {
        &self.rendered
    }

    /// The error with the command line's advice in the terms of a Python caller (the `tilec`
    /// package): `--target cpu` becomes `target="cpu"`, `--backend llvm` `backend="llvm"`,
    /// `--generic BM=16` the keyword argument `BM=16`; the note that says which `build`
    /// command builds an instance is cut to the instance.
    pub fn in_python_terms(mut self) -> Error {
        for d in &mut self.diagnostics {
            d.message = python_terms(&d.message);
            d.help = d.help.as_deref().map(python_terms);
            d.notes.iter_mut().for_each(|n| *n = python_terms(n));
            d.labels.iter_mut().for_each(|l| l.text = python_terms(&l.text));
        }
        self.rendered = python_terms(&self.rendered);
        self
    }
}

/// [`Error::in_python_terms`] of one text.
fn python_terms(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for line in text.split_inclusive('\n') {
        // "in the instance of `k` with T = f32 (`check` and `build` check every instance;
        // `build --generic T=f32` builds this one)": the instance is what a caller needs.
        let line = match (line.find(" (`check` and `build` check every instance"), line.find("builds this one)")) {
            (Some(a), Some(b)) if a < b => format!("{}{}", &line[..a], &line[b + "builds this one)".len()..]),
            _ => line.to_string(),
        };
        let mut rest = line.as_str();
        while let Some(at) = rest.find("--") {
            out.push_str(&rest[..at]);
            let after = &rest[at + 2..];
            let flag_len = after.find(|c: char| !(c.is_ascii_lowercase() || c == '-')).unwrap_or(after.len());
            let (flag, tail) = after.split_at(flag_len);
            let value = tail.strip_prefix(' ');
            let word = |v: &str| v.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).unwrap_or(v.len());
            match (flag, value) {
                ("target" | "backend", Some(v)) if word(v) > 0 => {
                    out.push_str(&format!("{flag}=\"{}\"", &v[..word(v)]));
                    rest = &v[word(v)..];
                }
                ("generic", Some(v)) => rest = v,
                _ => {
                    out.push_str("--");
                    rest = after;
                }
            }
        }
        out.push_str(rest);
    }
    out
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.rendered.trim_end())
    }
}

impl std::error::Error for Error {}

impl From<RunError> for Error {
    /// The coded error of a launch argument or device (E04xx), which points at no source.
    fn from(e: RunError) -> Error {
        Error::run(e, &SourceSet::with_stdlib("", ""))
    }
}

/// An element type of arrays passed to kernels: `f32`, `f64`, `i32`, and the storage types
/// `half::f16` and `half::bf16` (`tilec::half`; kernels compute on them in `f32`).
pub trait Element: Copy + sealed::Sealed {
    /// The `.tile` scalar type.
    const SCALAR: Scalar;
}

mod sealed {
    pub trait Sealed {}
    impl Sealed for f32 {}
    impl Sealed for f64 {}
    impl Sealed for i32 {}
    impl Sealed for half::f16 {}
    impl Sealed for half::bf16 {}
}

impl Element for f32 {
    const SCALAR: Scalar = Scalar::F32;
}
impl Element for f64 {
    const SCALAR: Scalar = Scalar::F64;
}
impl Element for i32 {
    const SCALAR: Scalar = Scalar::I32;
}
impl Element for half::f16 {
    const SCALAR: Scalar = Scalar::F16;
}
impl Element for half::bf16 {
    const SCALAR: Scalar = Scalar::BF16;
}

/// A scalar argument as given by the caller; converted to the parameter's type at launch by
/// [`tilec_runtime::convert_scalar`] (E0414 when it does not fit).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ScalarArg(pub Const);

impl From<f64> for ScalarArg {
    fn from(v: f64) -> ScalarArg {
        ScalarArg(Const::Float(v, Scalar::F64))
    }
}
impl From<f32> for ScalarArg {
    fn from(v: f32) -> ScalarArg {
        ScalarArg(Const::Float(v as f64, Scalar::F32))
    }
}
impl From<i64> for ScalarArg {
    fn from(v: i64) -> ScalarArg {
        ScalarArg(Const::Int(v, Scalar::I64))
    }
}
impl From<i32> for ScalarArg {
    fn from(v: i32) -> ScalarArg {
        ScalarArg(Const::Int(v as i64, Scalar::I32))
    }
}
impl From<bool> for ScalarArg {
    fn from(v: bool) -> ScalarArg {
        ScalarArg(Const::Bool(v))
    }
}

/// The arguments of one launch, by parameter name. Arrays borrow the caller's memory for
/// `'a` (read-only slices for read parameters, mutable slices for `mut` ones); a mistake
/// (a slice whose length is not the shape's element count) is reported by the launch.
#[derive(Default)]
pub struct Args<'a> {
    /// Host and device arrays ([`ArgValue::Array`], [`ArgValue::Device`]).
    arrays: Vec<(String, ArgValue)>,
    scalars: Vec<(String, Const)>,
    error: Option<RunError>,
    _borrow: PhantomData<&'a mut [u8]>,
}

impl<'a> Args<'a> {
    /// No arguments.
    pub fn new() -> Args<'a> {
        Args::default()
    }

    fn push(self, name: &str, array: Result<HostArray, RunError>) -> Args<'a> {
        self.push_value(name, array.map(ArgValue::Array))
    }

    fn push_value(mut self, name: &str, array: Result<ArgValue, RunError>) -> Args<'a> {
        match array {
            Ok(a) => self.arrays.push((name.to_string(), a)),
            Err(e) => {
                self.error.get_or_insert(e.for_argument(name));
            }
        }
        self
    }

    /// A read-only array argument: `data` in row-major order with extents `shape`. It cannot
    /// be bound to a `mut` parameter (E0437).
    pub fn array<T: Element>(self, name: &str, data: &'a [T], shape: &[usize]) -> Args<'a> {
        let a = checked_len(shape, data.len()).and_then(|shape| {
            // SAFETY: `data` is borrowed (shared) for `'a`, which outlives the array (it lives
            // in `self`); its `len` elements are those of `shape`; it is not writable.
            unsafe { HostArray::from_raw(T::SCALAR, &shape, data.as_ptr() as *mut u8, false) }
        });
        self.push(name, a)
    }

    /// An array argument the kernel may write in place (for a `mut` parameter).
    pub fn array_mut<T: Element>(self, name: &str, data: &'a mut [T], shape: &[usize]) -> Args<'a> {
        let a = checked_len(shape, data.len()).and_then(|shape| {
            // SAFETY: `data` is borrowed exclusively for `'a`, which outlives the array; its
            // `len` elements are those of `shape`.
            unsafe { HostArray::from_raw(T::SCALAR, &shape, data.as_mut_ptr() as *mut u8, true) }
        });
        self.push(name, a)
    }

    /// A read-only ndarray view (feature `ndarray`), which must be in standard (C) layout:
    /// E0440 for a transposed or strided view.
    #[cfg(feature = "ndarray")]
    pub fn view<T: Element, D: ndarray::Dimension>(self, name: &str, a: ndarray::ArrayView<'a, T, D>) -> Args<'a> {
        let shape = a.shape().to_vec();
        match a.to_slice() {
            Some(s) => self.array(name, s, &shape),
            None => self.push(name, Err(not_standard_layout(name))),
        }
    }

    /// A mutable ndarray view (feature `ndarray`) for a `mut` parameter, written in place; in
    /// standard layout (E0440 otherwise).
    #[cfg(feature = "ndarray")]
    pub fn view_mut<T: Element, D: ndarray::Dimension>(
        self,
        name: &str,
        a: ndarray::ArrayViewMut<'a, T, D>,
    ) -> Args<'a> {
        let shape = a.shape().to_vec();
        match a.into_slice() {
            Some(s) => self.array_mut(name, s, &shape),
            None => self.push(name, Err(not_standard_layout(name))),
        }
    }

    /// An owned array argument; after the launch, [`Launched::array`] gives its contents.
    pub fn host(self, name: &str, array: HostArray) -> Args<'a> {
        self.push(name, Ok(array))
    }

    /// An array in memory the caller manages (for bindings to other languages).
    ///
    /// # Safety
    ///
    /// As [`HostArray::from_raw`], for the whole of `'a`.
    pub unsafe fn raw(self, name: &str, elem: Scalar, shape: &[u64], ptr: *mut u8, writable: bool) -> Args<'a> {
        // SAFETY: the caller's contract.
        let a = unsafe { HostArray::from_raw(elem, shape, ptr, writable) };
        self.push(name, a)
    }

    /// An array in CUDA device memory (a PyTorch or CuPy tensor's, described by
    /// [`tilec_runtime::interop`], or memory of your own CUDA code), for a launch on
    /// [`Target::Cuda`]: kernels use it in place, with no copy, on its stream (see
    /// [`tilec_runtime::CudaDevice::launch`]), and the launch returns once that stream has
    /// finished the kernel. With `device: None` the target takes the device arrays' device.
    /// Errors at launch: any other target (E0442); device arrays on different devices, or on
    /// another device than the target's, or memory the driver does not know (E0443).
    pub fn device(self, name: &str, array: DeviceArray) -> Args<'a> {
        self.push_value(name, Ok(ArgValue::Device(array)))
    }

    /// A scalar argument (`f32`, `f64`, `i32`, `i64` or `bool`), converted to the parameter's
    /// type at launch.
    pub fn scalar(mut self, name: &str, value: impl Into<ScalarArg>) -> Args<'a> {
        self.scalars.push((name.to_string(), value.into().0));
        self
    }

    /// The element types of the array arguments, sorted by name (they choose the instance).
    fn dtypes(&self) -> Vec<(String, Scalar)> {
        let mut d: Vec<(String, Scalar)> =
            self.arrays.iter().filter_map(|(n, a)| Some((n.clone(), a.array_type()?.0))).collect();
        d.sort();
        d
    }
}

#[cfg(feature = "ndarray")]
fn not_standard_layout(name: &str) -> RunError {
    RunError::NotContiguous {
        name: name.to_string(),
        detail: "is not in standard (C) layout; pass `.as_standard_layout()` of it".to_string(),
    }
}

/// `shape` as `u64` extents, checked to hold `len` elements (E0405 otherwise).
fn checked_len(shape: &[usize], len: usize) -> Result<Vec<u64>, RunError> {
    let dims: Vec<u64> = shape.iter().map(|&d| d as u64).collect();
    let n = dims.iter().try_fold(1u64, |a, &d| a.checked_mul(d));
    if n != Some(len as u64) {
        return Err(RunError::DataLength { shape: dims, expected: n, actual: len as u64 });
    }
    Ok(dims)
}

/// The result of a launch: the grid and flop count, and the arguments as bound (owned arrays
/// passed with [`Args::host`] hold their results).
pub struct Launched {
    /// Programs launched along each grid axis, and the kernel's `flops(..)` if it has one.
    pub values: LaunchValues,
    bound: Bound,
}

impl Launched {
    /// The array bound to parameter `name` after the launch.
    pub fn array(&self, name: &str) -> Option<&HostArray> {
        self.bound.array(name)
    }
}

/// How a kernel is declared: what a caller needs to pass arguments by position or by name.
#[derive(Debug, Clone, PartialEq)]
pub struct KernelSig {
    pub name: String,
    /// The doc comment (`///` lines) of the kernel.
    pub doc: Option<String>,
    pub params: Vec<ParamSig>,
    /// The generic parameters: element types (inferred from dtypes) and const parameters.
    pub generics: Vec<GenericSig>,
    /// `(const parameter, array parameter, axis)` where a const parameter is written as an
    /// extent (`A: T[B, N, N]`): it takes that extent of the argument unless given.
    pub extent_generics: Vec<(String, String, usize)>,
}

impl KernelSig {
    /// Checks that every name in `names` is a parameter or a generic parameter of the kernel:
    /// E0408 for the first one that is not (in the order given), listing both.
    pub fn check_names<'n>(&self, names: impl IntoIterator<Item = &'n str>) -> Result<(), RunError> {
        let known = |n: &str| self.params.iter().any(|p| p.name == n) || self.generics.iter().any(|g| g.name == n);
        match names.into_iter().find(|n| !known(n)) {
            Some(n) => Err(RunError::UnknownArg {
                kernel: self.name.clone(),
                name: n.to_string(),
                params: self
                    .params
                    .iter()
                    .map(|p| &p.name)
                    .chain(self.generics.iter().map(|g| &g.name))
                    .cloned()
                    .collect(),
            }),
            None => Ok(()),
        }
    }
}

/// A kernel parameter as declared.
#[derive(Debug, Clone, PartialEq)]
pub struct ParamSig {
    pub name: String,
    /// Whether it is an array (`T[B, N, N]`), and one the kernel writes (`mut`).
    pub array: bool,
    pub mutable: bool,
    /// The type as written in the source (`mut T[B, N, N]`, `T`).
    pub ty: String,
}

/// A generic parameter of a kernel as declared.
#[derive(Debug, Clone, PartialEq)]
pub struct GenericSig {
    pub name: String,
    /// A `const` parameter (set by the caller; it may have a default) rather than an element
    /// type (inferred from the arrays).
    pub is_const: bool,
    /// The declaration as written: `T: float`, `const BM: i32 = 32`.
    pub text: String,
}

/// The cache key of a compiled instance.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct InstanceKey {
    kernel: String,
    target: Target,
    dtypes: Vec<(String, Scalar)>,
    /// Given generic arguments, then const parameters taken from the arguments' extents.
    generics: Vec<(String, GenericArg)>,
}

/// A kernel compiled for one target and one set of generic arguments.
pub struct Instance {
    module: Module,
    kernel: Kernel,
    exec: Exec,
}

enum Exec {
    Cpu(Box<CpuRunner>),
    /// The device and the instance's shaders, generated on first use.
    Vulkan(Arc<tilec_runtime::VulkanDevice>, crate::gpu::ShaderCache),
    Cuda(Arc<tilec_runtime::CudaDevice>),
}

impl Instance {
    /// The kernel instance (its symbol, parameters with their types after instantiation).
    pub fn kernel(&self) -> &Kernel {
        &self.kernel
    }
}

/// A program: a `.tile` source (with the standard library importable), checked, whose kernels
/// are compiled on first use and cached.
pub struct Program {
    src: SourceSet,
    sigs: Vec<KernelSig>,
    cache: Mutex<HashMap<InstanceKey, Arc<Instance>>>,
}

impl Program {
    /// Parses and checks `text` (named `name` in diagnostics). Errors: every diagnostic of the
    /// program (syntax, names, types and shapes of every kernel instance), as `tilec check`
    /// reports them.
    pub fn new(name: &str, text: &str) -> Result<Program, Error> {
        let src = SourceSet::with_stdlib(name, text);
        let checked = crate::compile(&src, &Instances::All { fixed: HashMap::new() }, &Default::default());
        if let Err(diags) = checked {
            return Err(Error::new(diags, &src));
        }
        let (parsed, _) = src.parse();
        // The main file's kernels, then those of the modules it imports (transitively), which
        // can be launched by name too (docs/language.md §2.1).
        let mut files: Vec<(&ast::File, &str)> = vec![(&parsed.main, text)];
        let mut i = 0;
        while i < files.len() {
            for item in &files[i].0.items {
                let ast::Item::Import(m) = item else { continue };
                let found = parsed.modules.iter().zip(&src.modules).find(|((n, _), _)| *n == m.name);
                if let Some(((_, f), (_, t))) = found {
                    if !files.iter().any(|(g, _)| std::ptr::eq(*g, f)) {
                        files.push((f, t));
                    }
                }
            }
            i += 1;
        }
        let sigs = files.iter().flat_map(|(f, t)| {
            f.items.iter().filter_map(move |i| if let ast::Item::Kernel(k) = i { Some(sig(k, t)) } else { None })
        });
        let sigs = sigs.collect();
        Ok(Program { sigs, src, cache: Mutex::new(HashMap::new()) })
    }

    /// Reads and checks the program in file `path`. Errors: E0400 when it cannot be read,
    /// otherwise as [`Program::new`].
    pub fn from_file(path: impl AsRef<Path>) -> Result<Program, Error> {
        let path = path.as_ref();
        let text = std::fs::read(path).map_err(|e| {
            let src = SourceSet::with_stdlib(path.display().to_string(), "");
            Error::run(RunError::Io { path: path.into(), action: "read", message: e.to_string() }, &src)
        })?;
        let text = String::from_utf8(text).map_err(|_| {
            let src = SourceSet::with_stdlib(path.display().to_string(), "");
            Error::new(vec![Diagnostic::error("E0004", format!("`{}` is not UTF-8 text", path.display()))], &src)
        })?;
        Program::new(&path.display().to_string(), &text)
    }

    /// The standard library (`stdlib/linalg.tile`): batched Cholesky (`potrf_batched`), the
    /// eight batched triangular solves, `potrs_batched`, `gemm`, `gemm_batched`, `row_sum`.
    /// (Its check cannot fail in a released tilec; the `Result` is for uniformity.)
    pub fn linalg() -> Result<Program, Error> {
        let text = crate::STDLIB.iter().find(|(n, _)| *n == "linalg").map_or("", |(_, t)| t);
        Program::new("stdlib/linalg.tile", text)
    }

    /// The kernels of the program, in source order.
    pub fn kernels(&self) -> &[KernelSig] {
        &self.sigs
    }

    /// The instance of `kernel` for `target`, the element types of `args`' arrays and the
    /// const parameters in `generics` (`("BM", GenericArg::Const(64))`; element types may be
    /// fixed there too), compiled on first use and cached. Errors: no such kernel (E0107),
    /// element types that do not fit the kernel, code generation (E0901 on the CPU, E0504 for
    /// GPUs), no device (E0420/E0422 for Vulkan, E0430/E0432 for CUDA), device arrays for
    /// another target than CUDA (E0442) or on other devices (E0443).
    pub fn instance(
        &self,
        kernel: &str,
        target: Target,
        args: &Args<'_>,
        generics: &[(&str, GenericArg)],
    ) -> Result<Arc<Instance>, Error> {
        self.instance_for(kernel, target, args, generics, false)
    }

    /// [`Program::instance`]; for a launch of `args` (`launch`), a read-only array for a `mut`
    /// parameter (E0437) is also reported before anything is compiled or a device opened
    /// (`bind` checks it again).
    fn instance_for(
        &self,
        kernel: &str,
        target: Target,
        args: &Args<'_>,
        generics: &[(&str, GenericArg)],
        launch: bool,
    ) -> Result<Arc<Instance>, Error> {
        // A malformed array argument is reported as such, not as a type it failed to give.
        if let Some(e) = &args.error {
            return Err(Error::run(e.clone(), &self.src));
        }
        let target = launch_target(target, args).map_err(|e| Error::run(e, &self.src))?;
        let sig = self.sigs.iter().find(|k| k.name == kernel);
        if let Some(sig) = sig.filter(|_| launch) {
            let names = args.arrays.iter().map(|(n, _)| n).chain(args.scalars.iter().map(|(n, _)| n));
            sig.check_names(names.map(String::as_str)).map_err(|e| Error::run(e, &self.src))?;
        }
        for p in sig.iter().flat_map(|k| &k.params).filter(|p| launch && p.mutable) {
            if args.arrays.iter().any(|(n, a)| *n == p.name && !a.is_writable()) {
                let e = RunError::ReadOnlyArg { name: p.name.clone(), ty: p.ty.clone() };
                return Err(Error::run(e, &self.src));
            }
        }
        let mut fixed: Vec<(String, GenericArg)> = generics.iter().map(|(n, g)| (n.to_string(), *g)).collect();
        if let Some(sig) = sig {
            for (g, param, axis) in &sig.extent_generics {
                if fixed.iter().any(|(n, _)| n == g) {
                    continue;
                }
                let extent =
                    args.arrays.iter().find(|(n, _)| n == param).and_then(|(_, a)| a.array_type()?.1.get(*axis));
                if let Some(&x) = extent {
                    fixed.push((g.clone(), GenericArg::Const(x as i64)));
                }
            }
        }
        fixed.sort_by(|a, b| a.0.cmp(&b.0));
        let key = InstanceKey { kernel: kernel.to_string(), target, dtypes: args.dtypes(), generics: fixed };
        let cache = |c: &Mutex<HashMap<InstanceKey, Arc<Instance>>>| {
            c.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).get(&key).cloned()
        };
        if let Some(inst) = cache(&self.cache) {
            return Ok(inst);
        }
        let inst = Arc::new(self.compile(&key)?);
        let mut c = self.cache.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        Ok(c.entry(key).or_insert(inst).clone())
    }

    fn compile(&self, key: &InstanceKey) -> Result<Instance, Error> {
        if !self.sigs.iter().any(|k| k.name == key.kernel) {
            let names: Vec<&str> = self.sigs.iter().map(|k| k.name.as_str()).collect();
            let d = Diagnostic::error("E0107", format!("no kernel named `{}`", key.kernel))
                .note(format!("the program's kernels: {}", names.join(", ")));
            return Err(Error::new(vec![d], &self.src));
        }
        let fail = |d| Error::new(d, &self.src);
        let run = |e| Error::run(e, &self.src);
        let dtypes: HashMap<String, Scalar> = key.dtypes.iter().cloned().collect();
        let fixed: HashMap<String, GenericArg> = key.generics.iter().cloned().collect();
        let generics = crate::infer_generics(&self.src, &key.kernel, &dtypes, &HashMap::new(), &fixed).map_err(fail)?;
        let limits = match key.target {
            Target::Cpu(_) => tilec_frontend::TargetLimits::CPU,
            Target::Vulkan { .. } => tilec_frontend::TargetLimits::VULKAN,
            Target::Cuda { .. } => tilec_frontend::TargetLimits::CUDA,
        };
        let opts = crate::CompileOptions { limits: Some(limits), ..Default::default() };
        let inst = Instances::One { kernel: key.kernel.clone(), generics };
        let module = crate::compile(&self.src, &inst, &opts).map_err(fail)?.module;
        let Some(kernel) = module.kernels.first().cloned() else {
            return Err(fail(vec![Diagnostic::error("E0107", format!("no kernel named `{}`", key.kernel))]));
        };
        let exec = match key.target {
            Target::Cpu(backend) => Exec::Cpu(Box::new(CpuRunner::from_module(module.clone(), backend).map_err(fail)?)),
            Target::Vulkan { device } => {
                static DEVICES: Devices<tilec_runtime::VulkanDevice> = OnceLock::new();
                let dev = open_cached(&DEVICES, device, tilec_runtime::VulkanDevice::open).map_err(run)?;
                Exec::Vulkan(dev, Default::default())
            }
            Target::Cuda { device } => {
                static DEVICES: Devices<tilec_runtime::CudaDevice> = OnceLock::new();
                Exec::Cuda(open_cached(&DEVICES, device, tilec_runtime::CudaDevice::open).map_err(run)?)
            }
        };
        Ok(Instance { module, kernel, exec })
    }

    /// Launches `kernel` once on `args` ([`Program::instance`], then [`Program::run`]; their
    /// errors, with a read-only array for a `mut` parameter, E0437, reported before anything
    /// is compiled or a device opened).
    pub fn launch(
        &self,
        kernel: &str,
        target: Target,
        args: Args<'_>,
        generics: &[(&str, GenericArg)],
    ) -> Result<Launched, Error> {
        let inst = self.instance_for(kernel, target, &args, generics, true)?;
        self.run(&inst, args)
    }

    /// Binds `args` to the instance's parameters (dtypes, ranks, shapes, `mut` arrays writable
    /// and not overlapping other arguments, scalars converted to the parameters' types) and
    /// launches it once. On the CPU `mut` arrays are written in place; on a GPU they are
    /// copied to the device and back, except device arrays on CUDA ([`Args::device`]), which
    /// are used and written in place. Errors: the E04xx codes of `tilec run`.
    pub fn run(&self, inst: &Instance, args: Args<'_>) -> Result<Launched, Error> {
        let fail = |e| Error::run(e, &self.src);
        if let Some(e) = args.error {
            return Err(fail(e));
        }
        let mut values: HashMap<String, ArgValue> = HashMap::with_capacity(args.arrays.len() + args.scalars.len());
        for (n, a) in args.arrays {
            if values.insert(n.clone(), a).is_some() {
                return Err(fail(RunError::Mismatch { detail: format!("argument `{n}` is given twice") }));
            }
        }
        for (n, c) in args.scalars {
            let ty = inst.kernel.params.iter().find(|p| p.name == n).map(|p| &p.kind);
            let c = match ty {
                Some(ParamKind::Scalar(ty)) => convert_scalar(c, *ty).map_err(|e| fail(e.for_argument(&n)))?,
                _ => c,
            };
            if values.insert(n.clone(), ArgValue::Scalar(c)).is_some() {
                return Err(fail(RunError::Mismatch { detail: format!("argument `{n}` is given twice") }));
            }
        }
        let mut bound = bind(&inst.kernel, values).map_err(fail)?;
        let values = match &inst.exec {
            Exec::Cpu(runner) => runner.run_bound(&mut bound).map_err(fail)?,
            Exec::Vulkan(dev, shaders) => {
                crate::gpu::vulkan_launch_cached(dev, &inst.module, &inst.kernel, &mut bound, 1, shaders)
                    .map_err(|d| Error::new(d, &self.src))?
                    .0
            }
            Exec::Cuda(dev) => {
                crate::cuda_launch(dev, &inst.module, &inst.kernel, &mut bound, 1)
                    .map_err(|d| Error::new(d, &self.src))?
                    .0
            }
        };
        Ok(Launched { values, bound })
    }
}

/// The target that a launch of `args` on `target` runs on: `target`, where a CUDA target that
/// names no device takes the device of the device arrays that say theirs. Errors: a device
/// array for a CPU or Vulkan target (E0442); device arrays on different CUDA devices, or on
/// another device than the one `target` names (E0443). (The launcher checks each device
/// array's memory with the driver too.)
fn launch_target(target: Target, args: &Args<'_>) -> Result<Target, RunError> {
    let mut first: Option<(&str, usize)> = None;
    for (name, v) in &args.arrays {
        let ArgValue::Device(d) = v else { continue };
        match target {
            Target::Cpu(_) => return Err(d.unreadable_on(name, "cpu")),
            Target::Vulkan { .. } => return Err(d.unreadable_on(name, "vulkan")),
            Target::Cuda { .. } => {}
        }
        let Some(device) = d.device() else { continue };
        match first {
            Some((other, at)) if at != device => {
                return Err(RunError::CudaMemory {
                    name: name.clone(),
                    detail: format!(
                        "is on CUDA device {device}, but argument `{other}` is on CUDA device {at}; pass \
                         arrays of one device"
                    ),
                })
            }
            Some(_) => {}
            None => first = Some((name, device)),
        }
    }
    match (target, first) {
        (Target::Cuda { device: Some(t) }, Some((name, device))) if t != device => {
            Err(DeviceArray::on_other_device(name, device, t))
        }
        (Target::Cuda { device: None }, Some((_, device))) => Ok(Target::Cuda { device: Some(device) }),
        _ => Ok(target),
    }
}

/// Devices opened by this process, by index: each is opened once and shared by all programs.
type Devices<D> = OnceLock<Mutex<HashMap<Option<usize>, Arc<D>>>>;

/// The device `index` from `devices`, opened with `open` on first use.
fn open_cached<D>(
    devices: &Devices<D>,
    index: Option<usize>,
    open: fn(Option<usize>) -> Result<D, RunError>,
) -> Result<Arc<D>, RunError> {
    let mut map = devices.get_or_init(Default::default).lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    if let Some(d) = map.get(&index) {
        return Ok(d.clone());
    }
    let d = Arc::new(open(index)?);
    map.insert(index, d.clone());
    Ok(d)
}

/// A generic parameter's declaration as written in `text` (`T: float`, `const BM: i32 = 32`).
fn generic_text(g: &ast::GenericParam, text: &str) -> String {
    let src = |s: tilec_grammar::span::Span| text.get(s.start as usize..s.end as usize).unwrap_or_default();
    match g {
        ast::GenericParam::Type { name, bound: Some(b) } => format!("{}: {}", name.name, b.name),
        ast::GenericParam::Type { name, bound: None } => name.name.clone(),
        ast::GenericParam::Const { name, ty, default } => {
            let mut s = format!("const {}: {}", name.name, src(ty.span()));
            if let Some(d) = default {
                s.push_str(&format!(" = {}", src(d.span)));
            }
            s
        }
    }
}

/// The signature of kernel `k`, whose source is `text`.
fn sig(k: &ast::KernelItem, text: &str) -> KernelSig {
    KernelSig {
        name: k.name.name.clone(),
        doc: k.doc.clone(),
        params: k
            .params
            .iter()
            .map(|p| {
                let (array, mutable) = match &p.ty {
                    ast::TypeExpr::Array { mutable, .. } => (true, *mutable),
                    _ => (false, false),
                };
                let span = p.ty.span();
                let ty = text.get(span.start as usize..span.end as usize).unwrap_or_default().to_string();
                ParamSig { name: p.name.name.clone(), array, mutable, ty }
            })
            .collect(),
        generics: k
            .generics
            .iter()
            .map(|g| GenericSig {
                name: g.name().name.clone(),
                is_const: matches!(g, ast::GenericParam::Const { .. }),
                text: generic_text(g, text),
            })
            .collect(),
        extent_generics: k
            .generics
            .iter()
            .filter(|g| matches!(g, ast::GenericParam::Const { .. }))
            .flat_map(|g| {
                let name = g.name().name.as_str();
                tilec_frontend::extent_positions(k, name).map(move |(p, axis)| (name.to_string(), p.to_string(), axis))
            })
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn python_terms() {
        let t = super::python_terms;
        assert_eq!(t("use --target cpu or --target vulkan, or"), "use target=\"cpu\" or target=\"vulkan\", or");
        assert_eq!(t("help: pass `--generic BM=16`"), "help: pass `BM=16`");
        assert_eq!(t("with --backend llvm."), "with backend=\"llvm\".");
        assert_eq!(
            t("note: in the instance of `k` with T = f32 (`check` and `build` check every instance; `build --generic T=f32` builds this one)\n"),
            "note: in the instance of `k` with T = f32\n"
        );
        assert_eq!(t("x -- y --deny warnings"), "x -- y --deny warnings");
    }
}
