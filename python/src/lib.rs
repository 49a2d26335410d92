//! `tilec._tilec`, the extension module of the `tilec` Python package: programs compiled by
//! the Rust API ([`tilec::Program`]) and launches on arrays described by the Python side
//! (`python/tilec/__init__.py` reads NumPy's `__array_interface__`: address, shape, strides,
//! dtype, read-only flag; and hands over CUDA arrays' `__cuda_array_interface__` dicts and
//! DLPack capsules, read here by [`tilec_runtime::interop`]). Arrays are passed to kernels
//! without copies and launches run with the GIL released. Errors are raised as
//! `_tilec.RawError(code, rendered, codes)`, which the Python side turns into
//! `tilec.TileError` subclasses.

use pyo3::exceptions::PyException;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyCapsule, PyCapsuleMethods, PyDict, PyList};
use tilec::{Args, Error, GenericArg, Program as RsProgram, Target};
use tilec_midend::Scalar;
use tilec_runtime::interop::{self, CudaArrayInterface, DLDevice, Memory};
use tilec_runtime::{DeviceArray, RunError};

pyo3::create_exception!(_tilec, RawError, PyException, "A tilec error: (code, rendered text, every code).");

/// The Python exception of a tilec error, its advice in Python's terms (`target="cpu"`, not
/// `--target cpu`).
fn raise(e: Error) -> PyErr {
    let e = e.in_python_terms();
    let codes: Vec<&str> = e.diagnostics.iter().map(|d| d.code).collect();
    RawError::new_err((
        e.code().to_string(),
        e.rendered().to_string(),
        codes.iter().map(|c| c.to_string()).collect::<Vec<_>>(),
    ))
}

fn raise_run(e: RunError) -> PyErr {
    raise(Error::from(e))
}

/// E0501 for an option of a call that has no such value (`T="float33"`).
fn bad_value(what: String) -> PyErr {
    raise(Error::usage("E0501", what))
}

/// The target named by the Python caller ([`Target::from_names`]).
fn target(name: &str, device: Option<usize>, backend: Option<&str>) -> PyResult<Target> {
    Target::from_names(name, device, backend).map_err(raise)
}

/// E0440 for argument `name`, whose CUDA array description (`__cuda_array_interface__` or
/// DLPack capsule) cannot be read: `what` says why.
fn unreadable(name: &str, what: &str) -> PyErr {
    raise_run(RunError::NotContiguous {
        name: name.to_string(),
        detail: format!("describes its CUDA memory wrongly: {what}"),
    })
}

/// The entries of `__cuda_array_interface__` dict `cai` of argument `name`; `stream` stands in
/// for a missing `stream` entry (version 2, PyTorch's, has none: the Python side passes the
/// tensor's current stream), while an entry of `None` means that no ordering is needed.
fn cuda_array_interface(name: &str, cai: &Bound<'_, PyDict>, stream: Option<i64>) -> PyResult<CudaArrayInterface> {
    let bad = |what: String| unreadable(name, &what);
    let entry = |key: &str| cai.get_item(key).map(|v| v.filter(|v| !v.is_none()));
    let required = |key: &str| entry(key)?.ok_or_else(|| bad(format!("__cuda_array_interface__ has no `{key}`")));
    let typed = |key: &str, ty: &str| bad(format!("__cuda_array_interface__ `{key}` is not {ty}"));
    let stream = match cai.get_item("stream")? {
        None => stream,
        Some(s) if s.is_none() => None,
        Some(s) => Some(s.extract().map_err(|_| typed("stream", "an integer or None"))?),
    };
    let strides = match entry("strides")? {
        None => None,
        Some(s) => Some(s.extract().map_err(|_| typed("strides", "a tuple of integers or None"))?),
    };
    Ok(CudaArrayInterface {
        version: required("version")?.extract().map_err(|_| typed("version", "an integer"))?,
        data: required("data")?.extract().map_err(|_| typed("data", "a tuple (address, read-only flag)"))?,
        shape: required("shape")?.extract().map_err(|_| typed("shape", "a tuple of integers"))?,
        typestr: required("typestr")?.extract().map_err(|_| typed("typestr", "a string"))?,
        strides,
        masked: entry("mask")?.is_some(),
        stream,
    })
}

/// The device array of argument `name` from `desc`: a `__cuda_array_interface__` dict (on
/// CUDA device `device` where the producer says so) or a DLPack capsule of a CUDA tensor
/// (whose producer's `__dlpack__` was given `stream`). `stream` stands in for a missing
/// `stream` entry of the dict. Errors: E0440 for a description that cannot be read, E0442 for
/// a DLPack tensor of a device tilec does not run on, and those of
/// [`DeviceArray::from_raw`].
fn device_array(
    name: &str,
    desc: &Bound<'_, PyAny>,
    device: Option<usize>,
    stream: Option<i64>,
) -> PyResult<DeviceArray> {
    if let Ok(cai) = desc.cast::<PyDict>() {
        let cai = cuda_array_interface(name, cai, stream)?;
        // SAFETY: the producer describes memory it owns, which the Python side keeps alive
        // (it holds the producer) until the launch returns; nothing on the host reads it.
        return unsafe { cai.device_array(name, device) }.map_err(|e| raise_run(e.for_argument(name)));
    }
    let Ok(capsule) = desc.cast::<PyCapsule>() else {
        return Err(unreadable(name, "neither a __cuda_array_interface__ dict nor a DLPack capsule"));
    };
    // SAFETY: the name is used at once, while the capsule lives and no Python code runs (that
    // could rename it).
    let kind = capsule.name().ok().flatten().map(|n| unsafe { n.as_cstr() });
    let ptr = capsule.pointer_checked(kind).map_err(|_| unreadable(name, "an invalid capsule"))?;
    // SAFETY: a valid capsule named `dltensor` or `dltensor_versioned` holds a live tensor of
    // that kind (the DLPack protocol; other names are rejected), alive as long as the capsule,
    // which the caller holds during the launch.
    let (tensor, read_only) =
        unsafe { interop::dlpack_tensor(name, kind.unwrap_or(c""), ptr.as_ptr()) }.map_err(raise_run)?;
    // SAFETY: the tensor's shape and strides hold `ndim` values (DLPack); its memory is alive
    // as long as the capsule, which the caller holds until the launch returns.
    unsafe { interop::dlpack_device_array(name, tensor, read_only, stream) }
        .map_err(|e| raise_run(e.for_argument(name)))
}

/// A scalar from Python: `bool` (and NumPy's), then an integer (anything whose `__index__`
/// works: int, NumPy integers and 0-d integer arrays), then anything with `__float__` (float,
/// NumPy floats, 0-d float arrays). Errors: E0414 naming the argument for an integer beyond
/// `i64`; E0409 for anything else (`"3"`, `None`), saying what was given.
fn scalar(name: &str, v: &Bound<'_, PyAny>) -> PyResult<tilec::ScalarArg> {
    if let Ok(b) = v.cast::<PyBool>() {
        return Ok(b.is_true().into());
    }
    // NumPy's booleans (`numpy.bool_`, named `bool` since NumPy 2), which have `__index__`.
    let ty = v.get_type().name()?;
    if ty == "bool_" || ty == "bool" {
        return Ok(v.is_truthy()?.into());
    }
    // `__index__` exists on every NumPy array but works only for integers.
    if let Ok(i) = v.call_method0("__index__") {
        if let Ok(i) = i.extract::<i64>() {
            return Ok(i.into());
        }
        return Err(raise_run(RunError::BadScalar {
            text: i.str()?.to_string(),
            ty: Scalar::I64,
            reason: "out of range".to_string(),
            arg: Some(name.to_string()),
        }));
    }
    match v.extract::<f64>() {
        Ok(f) => Ok(f.into()),
        Err(_) => {
            let ty = v.get_type().name()?.to_string();
            let given = if v.is_none() {
                "`None`".to_string()
            } else {
                let r = v.repr()?.to_string();
                let r = if r.len() > 40 { format!("{}..", &r[..r.floor_char_boundary(40)]) } else { r };
                format!("a `{ty}` ({r})")
            };
            Err(raise_run(RunError::NotANumber { name: name.to_string(), given }))
        }
    }
}

/// A checked program, compiled per kernel instance for one target on first use.
#[pyclass(frozen, module = "tilec._tilec")]
struct Program {
    inner: RsProgram,
    target: Target,
}

#[pymethods]
impl Program {
    /// `Program(source, name, target="cpu", device=None, backend=None, deny_warnings=False,
    /// prints=True, asserts=True)`: checks the program (every diagnostic raised at once; with
    /// `deny_warnings` warnings are errors, here and in every instance compiled later).
    /// `backend=None` is LLVM where this build has it, its code compiled in the background
    /// while Cranelift's runs the first calls (tiered; the same results), else Cranelift;
    /// `"llvm"` and `"cranelift"` name one. `prints`, `asserts`: compile the kernels' `print`s
    /// and `assert`s (else they cost nothing).
    #[new]
    #[allow(clippy::too_many_arguments)]
    #[pyo3(signature = (source, name, target_name="cpu", device=None, backend=None, deny_warnings=false, prints=true, asserts=true))]
    fn new(
        py: Python<'_>,
        source: &str,
        name: &str,
        target_name: &str,
        device: Option<usize>,
        backend: Option<&str>,
        deny_warnings: bool,
        prints: bool,
        asserts: bool,
    ) -> PyResult<Program> {
        let t = target(target_name, device, backend)?;
        let opts = tilec::SessionOptions {
            deny_warnings,
            cache_dir: tilec::driver::cache::default_dir(),
            tiered: backend.is_none(),
            debug: tilec_midend::debug::DebugOptions { prints, asserts },
            ..Default::default()
        };
        let inner = py.detach(|| RsProgram::with_options(name, source, opts)).map_err(raise)?;
        Ok(Program { inner, target: t })
    }

    /// The kernels: a list of dicts `{name, doc, params: [(name, is_array, is_mut, type as
    /// written)], generics: [(name, is_const, declaration as written)], extents: [(const
    /// parameter, array parameter, axis)]}`.
    fn kernels<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let out = PyList::empty(py);
        for k in self.inner.kernels() {
            let d = PyDict::new(py);
            d.set_item("name", &k.name)?;
            d.set_item("doc", k.doc.as_deref())?;
            let params: Vec<(String, bool, bool, String)> =
                k.params.iter().map(|p| (p.name.clone(), p.array, p.mutable, p.ty.clone())).collect();
            d.set_item("params", params)?;
            let generics: Vec<(String, bool, String)> =
                k.generics.iter().map(|g| (g.name.clone(), g.is_const, g.text.clone())).collect();
            d.set_item("generics", generics)?;
            d.set_item("extents", &k.extent_generics)?;
            out.append(d)?;
        }
        Ok(out)
    }

    /// Launches `kernel` once. `arrays`: `(name, address, shape, strides or None, typestr,
    /// read_only)` from `__array_interface__`; `scalars`: `(name, value)`; `generics`:
    /// `(name, value)` with a type name (`"f64"`) or an integer; `devices`: CUDA arrays,
    /// `(name, description, device or None, stream or None)` with a `__cuda_array_interface__`
    /// dict or a DLPack capsule (see [`device_array`]). The caller keeps the arrays (and
    /// capsules) alive during the call. `autotune`: tune the kernel first where its tuned
    /// parameters are left open and no tuning record decides them. Returns the grid, the
    /// kernel's `print` lines (in program order) and the number of lines dropped.
    // One argument per piece of the Python call, as `tilec/__init__.py` passes them.
    #[allow(clippy::type_complexity, clippy::too_many_arguments)]
    #[pyo3(signature = (kernel, arrays, scalars, generics, devices=Vec::new(), autotune=false))]
    fn launch(
        &self,
        py: Python<'_>,
        kernel: &str,
        arrays: Vec<(String, usize, Vec<u64>, Option<Vec<i64>>, String, bool)>,
        scalars: Vec<(String, Bound<'_, PyAny>)>,
        generics: Vec<(String, Bound<'_, PyAny>)>,
        devices: Vec<(String, Bound<'_, PyAny>, Option<usize>, Option<i64>)>,
        autotune: bool,
    ) -> PyResult<((i64, i64, i64), Vec<String>, u64)> {
        // Names first: a misspelt keyword is E0408, whatever its value.
        if let Some(sig) = self.inner.kernels().iter().find(|k| k.name == kernel) {
            let names =
                scalars.iter().map(|(n, _)| n).chain(arrays.iter().map(|a| &a.0)).chain(devices.iter().map(|d| &d.0));
            sig.check_names(names.map(String::as_str)).map_err(raise_run)?;
        }
        let mut fixed: Vec<(String, GenericArg)> = Vec::new();
        for (n, v) in &generics {
            let g = if let Ok(i) = v.extract::<i64>() {
                GenericArg::Const(i)
            } else if let Ok(x) = v.extract::<f64>() {
                GenericArg::float(x)
            } else {
                let s: String = v.extract().map_err(|_| {
                    bad_value(format!("generic argument `{n}` is neither an element type nor a number"))
                })?;
                GenericArg::parse(&s).ok_or_else(|| {
                    bad_value(format!(
                        "generic argument {n}=\"{s}\" is neither an element type nor a number: pass f32, f64, \
                         f16, bf16, i32, i64 or u32 (or a NumPy dtype, np.float32), or a number"
                    ))
                })?
            };
            fixed.push((n.clone(), g));
        }
        let mut args = Args::new();
        for (n, v) in &scalars {
            args = args.scalar(n, scalar(n, v)?);
        }
        for (n, addr, shape, strides, typestr, read_only) in &arrays {
            let elem = interop::typestr_elem(n, typestr).map_err(raise_run)?;
            interop::check_c_contiguous(n, shape, strides.as_deref(), elem.bytes() as i64, interop::HOST_COPY)
                .map_err(raise_run)?;
            // SAFETY: the Python side passes the data address of a live array of this shape,
            // dtype and C order (checked above), which it keeps alive until this call returns;
            // `read_only` is its writeable flag negated; overlaps between arguments are
            // rejected by the binding (E0438).
            args = unsafe { args.raw(n, elem, shape, *addr as *mut u8, !read_only) };
        }
        for (n, desc, device, stream) in &devices {
            args = args.device(n, device_array(n, desc, *device, *stream)?);
        }
        let generics: Vec<(&str, GenericArg)> = fixed.iter().map(|(n, g)| (n.as_str(), *g)).collect();
        let (inner, t) = (&self.inner, self.target);
        let r = py.detach(move || {
            // `autotune`: tune what the call leaves open, unless a record decides it.
            if autotune {
                let space = inner.tuning_space(kernel)?;
                let open = space.iter().any(|(n, _)| generics.iter().all(|(m, _)| m != n));
                if open && inner.instance(kernel, t, &args, &generics)?.tuned().is_empty() {
                    inner.tune(kernel, t, &args, &generics)?;
                }
            }
            inner.launch(kernel, t, args, &generics).map(|l| (l.values.grid, l.prints))
        });
        let (g, prints) = r.map_err(raise)?;
        Ok(((g[0], g[1], g[2]), prints.lines, prints.dropped))
    }
}

/// Where the memory of DLPack device `(device_type, device_id)` (`__dlpack_device__()`) of
/// argument `name` is: `"host"` (CPU, pinned host memory: read through NumPy) or `"cuda"`.
/// Raises E0442 for a device tilec does not run on.
#[pyfunction]
fn dlpack_memory(name: &str, device_type: i32, device_id: i32) -> PyResult<&'static str> {
    match interop::dlpack_memory(name, DLDevice { device_type, device_id }).map_err(raise_run)? {
        Memory::Host => Ok("host"),
        Memory::Cuda(_) => Ok("cuda"),
    }
}

/// The standard library's source text (`stdlib/linalg.tile`).
#[pyfunction]
fn stdlib_source() -> &'static str {
    tilec::STDLIB.iter().find(|(n, _)| *n == "linalg").map_or("", |(_, t)| t)
}

/// This build ([`tilec::BuildInfo`]): a dict `{version, commit, cpu_backends (the default
/// first), targets, llvm (None without LLVM), text (what `tilec --version` prints)}`.
#[pyfunction]
fn build_info(py: Python<'_>) -> PyResult<Bound<'_, PyDict>> {
    let info = tilec::BuildInfo::get();
    let d = PyDict::new(py);
    d.set_item("version", info.version)?;
    d.set_item("commit", info.commit)?;
    let backends: Vec<String> = info.cpu_backends.iter().map(|b| b.to_string().to_lowercase()).collect();
    d.set_item("cpu_backends", backends)?;
    d.set_item("targets", info.targets.clone())?;
    d.set_item("llvm", info.llvm.clone())?;
    d.set_item("text", info.to_string())?;
    Ok(d)
}

#[pymodule]
fn _tilec(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Program>()?;
    m.add_function(wrap_pyfunction!(build_info, m)?)?;
    m.add_function(wrap_pyfunction!(stdlib_source, m)?)?;
    m.add_function(wrap_pyfunction!(dlpack_memory, m)?)?;
    m.add("RawError", m.py().get_type::<RawError>())?;
    Ok(())
}

/// glibc's `arc4random` (a random 32-bit number), for LLVM, which the `ptx` feature links in
/// statically and which calls it for its random seeds. glibc has it only since 2.36; defined
/// here, the module imports nothing newer than glibc 2.34 and loads on older distributions
/// (Ubuntu 22.04 has 2.35). The bytes come from the kernel (`getrandom`, glibc 2.25), as
/// glibc's own `arc4random` takes them; where that system call fails, from the standard
/// library's per-process random hash keys.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
#[no_mangle]
pub extern "C" fn arc4random() -> u32 {
    extern "C" {
        fn getrandom(buf: *mut std::ffi::c_void, len: usize, flags: u32) -> isize;
    }
    let mut value = 0u32;
    loop {
        // SAFETY: writes at most 4 bytes into `value`.
        let n = unsafe { getrandom((&mut value as *mut u32).cast(), 4, 0) };
        if n == 4 {
            return value;
        }
        if n >= 0 || std::io::Error::last_os_error().kind() != std::io::ErrorKind::Interrupted {
            break;
        }
    }
    use std::hash::{BuildHasher, Hasher};
    std::collections::hash_map::RandomState::new().build_hasher().finish() as u32
}
