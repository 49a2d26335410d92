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

use crate::driver::{Instance, InstanceRequest, KernelSig, Session, SessionOptions};
use crate::{Error, SourceSet, Target};
use std::marker::PhantomData;
use std::path::Path;
use std::sync::Arc;
use tilec_frontend::GenericArg;
use tilec_grammar::diag::Diagnostic;
use tilec_midend::{Const, Scalar};
use tilec_runtime::{ArgValue, Bound, DeviceArray, HostArray, LaunchValues, RunError};

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

/// The result of a launch: the grid and flop count, the kernel's `print` lines, and the
/// arguments as bound (owned arrays passed with [`Args::host`] hold their results).
pub struct Launched {
    /// Programs launched along each grid axis, and the kernel's `flops(..)` if it has one.
    pub values: LaunchValues,
    /// What the kernel's `print`s wrote, in program order (the API prints nothing itself: the
    /// command line prints these lines to stdout, the Python package to `sys.stdout`).
    pub prints: crate::driver::Prints,
    bound: Bound,
}

impl Launched {
    /// The array bound to parameter `name` after the launch.
    pub fn array(&self, name: &str) -> Option<&HostArray> {
        self.bound.array(name)
    }
}

/// A program: a `.tile` source (with the standard library importable), checked, whose kernels
/// are compiled on first use and cached; a facade over the driver's [`Session`].
pub struct Program {
    session: Session,
}

impl Program {
    /// Parses and checks `text` (named `name` in diagnostics). Errors: every diagnostic of the
    /// program (syntax, names, types and shapes of every kernel instance), as `tilec check`
    /// reports them, except that a const parameter without a default (E0302 for `check`) is
    /// left to each launch to give, as `tilec run --generic` does. Its sessions use the user's
    /// cache folder and tiered CPU code ([`SessionOptions::tiered`]: on [`Target::CPU`] in a
    /// build with LLVM, an instance's first launch runs Cranelift's code while LLVM compiles).
    pub fn new(name: &str, text: &str) -> Result<Program, Error> {
        let cache_dir = crate::driver::cache::default_dir();
        Program::with_options(name, text, SessionOptions { cache_dir, tiered: true, ..Default::default() })
    }

    /// [`Program::new`] with options: `deny_warnings` makes every warning an error, in the
    /// check and in every instance compiled later (`tilec --deny warnings`); `cache_dir` is
    /// where tuning records are read and written (`Program::new` takes the user's cache
    /// folder, `driver::cache::default_dir`; `None`: none).
    pub fn with_options(name: &str, text: &str, options: SessionOptions) -> Result<Program, Error> {
        let session = Session::new(SourceSet::with_stdlib(name, text), options);
        if let Err(mut e) = session.check(Target::CPU) {
            // A const parameter without a default (E0302) gets its value with each launch, as
            // `tilec run --generic R=..` gives it: the instances launched are checked then.
            e.diagnostics.retain(|d| d.code != "E0302");
            if e.diagnostics.iter().any(|d| d.severity == tilec_grammar::diag::Severity::Error) {
                return Err(e.with_source(session.source()));
            }
        }
        session.take_warnings();
        Ok(Program { session })
    }

    /// Reads and checks the program in file `path`. Errors: E0400 when it cannot be read,
    /// otherwise as [`Program::new`].
    pub fn from_file(path: impl AsRef<Path>) -> Result<Program, Error> {
        let path = path.as_ref();
        let text = std::fs::read(path).map_err(|e| {
            let src = SourceSet::with_stdlib(path.display().to_string(), "");
            Error::run(RunError::Io { path: path.into(), action: "read", message: e.to_string() }).with_source(&src)
        })?;
        let text = String::from_utf8(text).map_err(|_| {
            let src = SourceSet::with_stdlib(path.display().to_string(), "");
            Error::program(vec![Diagnostic::error("E0004", format!("`{}` is not UTF-8 text", path.display()))])
                .with_source(&src)
        })?;
        Program::new(&path.display().to_string(), &text)
    }

    /// The standard library (`stdlib/linalg.tile`, docs/language.md §12): batched Cholesky
    /// (`potrf_batched`, `potrf_compact_batched`), the eight batched triangular solves,
    /// `potrs_batched`, `gemm`, `gemm_batched`, `row_sum`, pivoted LU (`getrf_batched`,
    /// `getrs_batched`), Householder QR and least squares (`geqrf_batched`,
    /// `geqrf_compact_batched`, `orgqr_batched`, `gels_batched`), and the Jacobi symmetric
    /// eigensolver and SVD (`syevj_batched`, `gesvj_batched`). (Its check cannot fail in a
    /// released tilec; the `Result` is for uniformity.)
    pub fn linalg() -> Result<Program, Error> {
        let text = crate::STDLIB.iter().find(|(n, _)| *n == "linalg").map_or("", |(_, t)| t);
        Program::new("stdlib/linalg.tile", text)
    }

    /// The kernels of the program: the main file's in source order, then those of the modules
    /// it imports.
    pub fn kernels(&self) -> &[KernelSig] {
        self.session.kernels()
    }

    /// The tuning space of `kernel`: its const parameters declared with candidates
    /// (`const BM: i32 = 64 in [32, 64, 128]`) and their values. Errors: no such kernel
    /// (E0107).
    pub fn tuning_space(&self, kernel: &str) -> Result<crate::driver::Space, Error> {
        self.session.tuning_space(kernel)
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
        self.instance_for(kernel, target, args, generics, false).map_err(|e| e.with_source(self.session.source()))
    }

    /// [`Program::instance`]; for a launch of `args` (`launch`), unknown argument names
    /// (E0408) and a read-only array for a `mut` parameter (E0437) are also reported before
    /// anything is compiled or a device opened (`bind` checks them again).
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
            return Err(Error::run(e.clone()));
        }
        let target = launch_target(target, args)?;
        let sig = self.session.kernels().iter().find(|k| k.name == kernel);
        if let Some(sig) = sig.filter(|_| launch) {
            let names = args.arrays.iter().map(|(n, _)| n).chain(args.scalars.iter().map(|(n, _)| n));
            sig.check_names(names.map(String::as_str))?;
        }
        for p in sig.iter().flat_map(|k| &k.params).filter(|p| launch && p.mutable) {
            if args.arrays.iter().any(|(n, a)| *n == p.name && !a.is_writable()) {
                return Err(Error::run(RunError::ReadOnlyArg { name: p.name.clone(), ty: p.ty.clone() }));
            }
        }
        let arrays = args.arrays.iter().map(|(n, a)| (n, a));
        let request = InstanceRequest::of_arrays(arrays, generics.iter().map(|(n, g)| (n.to_string(), *g)));
        self.session.instance(kernel, target, &request)
    }

    /// Tunes `kernel` on `target` for `args` (copies of them: the caller's arrays are not
    /// written) and `generics` (tuned parameters given there are not tuned): every
    /// configuration of its tuning candidates timed, checked against the default's outputs
    /// and the fastest recorded in the cache folder, which later launches with the same
    /// target, dtypes and extents (rounded up to powers of two) then use (`Session::tune`).
    /// Errors: the default configuration's, E0444 for a kernel with nothing to tune or
    /// arguments in device memory.
    pub fn tune(
        &self,
        kernel: &str,
        target: Target,
        args: &Args<'_>,
        generics: &[(&str, GenericArg)],
    ) -> Result<crate::driver::Tuning, Error> {
        let run = || {
            if let Some(e) = &args.error {
                return Err(Error::run(e.clone()));
            }
            let target = launch_target(target, args)?;
            let mut values: std::collections::HashMap<String, ArgValue> = args.arrays.iter().cloned().collect();
            values.extend(args.scalars.iter().map(|(n, c)| (n.clone(), ArgValue::Scalar(*c))));
            let fixed = generics.iter().map(|(n, g)| (n.to_string(), *g)).collect();
            self.session.tune(kernel, target, &values, &fixed, &crate::driver::TuneOptions::default(), &mut |_, _| {})
        };
        run().map_err(|e| e.with_source(self.session.source()))
    }

    /// Launches `kernel` once on `args` ([`Program::instance`], then [`Program::run`]; their
    /// errors, with unknown names, E0408, and a read-only array for a `mut` parameter, E0437,
    /// reported before anything is compiled or a device opened).
    pub fn launch(
        &self,
        kernel: &str,
        target: Target,
        args: Args<'_>,
        generics: &[(&str, GenericArg)],
    ) -> Result<Launched, Error> {
        let inst = self.instance_for(kernel, target, &args, generics, true);
        let inst = inst.map_err(|e| e.with_source(self.session.source()))?;
        self.run(&inst, args)
    }

    /// Binds `args` to the instance's parameters (dtypes, ranks, shapes, `mut` arrays writable
    /// and not overlapping other arguments, scalars converted to the parameters' types) and
    /// launches it once. On the CPU `mut` arrays are written in place; on a GPU they are
    /// copied to the device and back, except device arrays on CUDA ([`Args::device`]), which
    /// are used and written in place. Errors: the E04xx codes of `tilec run`.
    pub fn run(&self, inst: &Instance, args: Args<'_>) -> Result<Launched, Error> {
        self.run_here(inst, args).map_err(|e| e.with_source(self.session.source()))
    }

    fn run_here(&self, inst: &Instance, args: Args<'_>) -> Result<Launched, Error> {
        if let Some(e) = args.error {
            return Err(Error::run(e));
        }
        let values = args.arrays.into_iter().chain(args.scalars.into_iter().map(|(n, c)| (n, ArgValue::Scalar(c))));
        // One launch: an API call needs no warm-up run for timing.
        let (launch, bound) = self.session.run(inst, values, 0)?;
        Ok(Launched { values: launch.values, prints: launch.prints, bound })
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
