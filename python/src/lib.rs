//! `tilec._tilec`, the extension module of the `tilec` Python package: programs compiled by
//! the Rust API ([`tilec::Program`]) and launches on arrays described by the Python side
//! (`python/tilec/__init__.py` reads NumPy's `__array_interface__`: address, shape, strides,
//! dtype, read-only flag). Arrays are passed to kernels without copies and launches run with
//! the GIL released. Errors are raised as `_tilec.RawError(code, rendered, codes)`, which the
//! Python side turns into `tilec.TileError` subclasses.

use pyo3::exceptions::PyException;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyList};
use tilec::{Args, CpuBackend, Error, GenericArg, Program as RsProgram, Target};
use tilec_midend::Scalar;
use tilec_runtime::RunError;

pyo3::create_exception!(_tilec, RawError, PyException, "A tilec error: (code, rendered text, every code).");

/// The Python exception of a tilec error.
fn raise(e: Error) -> PyErr {
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

/// The target named by the Python caller: `cpu` (with `backend` `cranelift` or `llvm`),
/// `vulkan` or `cuda`, with an optional device index.
fn target(name: &str, device: Option<usize>, backend: &str) -> PyResult<Target> {
    let bad = |what: String| raise_run(RunError::Mismatch { detail: what });
    Ok(match name {
        "cpu" => Target::Cpu(match backend {
            "cranelift" => CpuBackend::Cranelift,
            "llvm" => CpuBackend::Llvm,
            _ => return Err(bad(format!("unknown CPU backend `{backend}` (expected `cranelift` or `llvm`)"))),
        }),
        "vulkan" => Target::Vulkan { device },
        "cuda" => Target::Cuda { device },
        _ => return Err(bad(format!("unknown target `{name}` (expected `cpu`, `vulkan` or `cuda`)"))),
    })
}

/// The element type of NumPy's array-interface type string (`<f4`, `<f8`, `<i4`, ...).
fn elem_of(name: &str, typestr: &str) -> Result<Scalar, RunError> {
    match typestr {
        "<f4" | "=f4" => Ok(Scalar::F32),
        "<f8" | "=f8" => Ok(Scalar::F64),
        "<i4" | "=i4" => Ok(Scalar::I32),
        "<i8" | "=i8" => Ok(Scalar::I64),
        "<u4" | "=u4" => Ok(Scalar::U32),
        "|b1" => Ok(Scalar::Bool),
        "<f2" | "=f2" => Ok(Scalar::F16),
        // `ml_dtypes.bfloat16`, which NumPy sees as a 2-byte void.
        "<V2" | "|V2" => Ok(Scalar::BF16),
        _ => Err(RunError::NotContiguous {
            name: name.to_string(),
            detail: format!("has dtype `{typestr}`, which kernels cannot take (supported: float32, float64, int32, float16, ml_dtypes.bfloat16)"),
        }),
    }
}

/// Error E0440 unless `strides` (bytes, `None` meaning C order) are those of a C-contiguous
/// array of `shape` with `itemsize`-byte elements (extents of 1 may have any stride).
fn check_contiguous(name: &str, shape: &[u64], strides: Option<&[i64]>, itemsize: i64) -> Result<(), RunError> {
    let Some(strides) = strides else { return Ok(()) };
    if shape.contains(&0) {
        return Ok(());
    }
    let mut want = itemsize;
    for (&d, &s) in shape.iter().zip(strides).rev() {
        if d != 1 && s != want {
            return Err(RunError::NotContiguous {
                name: name.to_string(),
                detail: format!(
                    "is not C-contiguous (strides {strides:?} bytes for shape {shape:?}); \
                     pass numpy.ascontiguousarray(...) of it"
                ),
            });
        }
        want *= d as i64;
    }
    Ok(())
}

/// A scalar from Python: `bool`, then anything with `__index__` (int, numpy integers), then
/// anything with `__float__`.
fn scalar(name: &str, v: &Bound<'_, PyAny>) -> PyResult<tilec::ScalarArg> {
    if let Ok(b) = v.cast::<PyBool>() {
        return Ok(b.is_true().into());
    }
    if v.hasattr("__index__")? {
        if let Ok(i) = v.extract::<i64>() {
            return Ok(i.into());
        }
        return Err(raise_run(RunError::BadScalar {
            text: v.str()?.to_string(),
            ty: Scalar::I64,
            reason: format!("argument `{name}` is out of range"),
        }));
    }
    match v.extract::<f64>() {
        Ok(f) => Ok(f.into()),
        Err(_) => {
            Err(raise_run(RunError::ArgKind { name: name.to_string(), ty: "a number".into(), given_array: false }))
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
    /// `Program(source, name, target="cpu", device=None, backend="cranelift")`: checks the
    /// program (every diagnostic raised at once).
    #[new]
    #[pyo3(signature = (source, name, target_name="cpu", device=None, backend="cranelift"))]
    fn new(
        py: Python<'_>,
        source: &str,
        name: &str,
        target_name: &str,
        device: Option<usize>,
        backend: &str,
    ) -> PyResult<Program> {
        let t = target(target_name, device, backend)?;
        let inner = py.detach(|| RsProgram::new(name, source)).map_err(raise)?;
        Ok(Program { inner, target: t })
    }

    /// The kernels: a list of dicts `{name, doc, params: [(name, is_array, is_mut)],
    /// generics: [(name, is_const)]}`.
    fn kernels<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let out = PyList::empty(py);
        for k in self.inner.kernels() {
            let d = PyDict::new(py);
            d.set_item("name", &k.name)?;
            d.set_item("doc", k.doc.as_deref())?;
            let params: Vec<(String, bool, bool)> =
                k.params.iter().map(|p| (p.name.clone(), p.array, p.mutable)).collect();
            d.set_item("params", params)?;
            let generics: Vec<(String, bool)> = k.generics.iter().map(|g| (g.name.clone(), g.is_const)).collect();
            d.set_item("generics", generics)?;
            out.append(d)?;
        }
        Ok(out)
    }

    /// Launches `kernel` once. `arrays`: `(name, address, shape, strides or None, typestr,
    /// read_only)` from `__array_interface__`; `scalars`: `(name, value)`; `generics`:
    /// `(name, value)` with a type name (`"f64"`) or an integer. The caller keeps the arrays
    /// alive during the call. Returns the grid.
    #[allow(clippy::type_complexity)]
    fn launch(
        &self,
        py: Python<'_>,
        kernel: &str,
        arrays: Vec<(String, usize, Vec<u64>, Option<Vec<i64>>, String, bool)>,
        scalars: Vec<(String, Bound<'_, PyAny>)>,
        generics: Vec<(String, Bound<'_, PyAny>)>,
    ) -> PyResult<(i64, i64, i64)> {
        let mut fixed: Vec<(String, GenericArg)> = Vec::new();
        for (n, v) in &generics {
            let g = if let Ok(i) = v.extract::<i64>() {
                GenericArg::Const(i)
            } else {
                let s: String = v.extract()?;
                GenericArg::parse(&s).ok_or_else(|| {
                    raise_run(RunError::Mismatch {
                        detail: format!("generic argument `{n}={s}` is neither a type nor an integer"),
                    })
                })?
            };
            fixed.push((n.clone(), g));
        }
        let mut args = Args::new();
        for (n, v) in &scalars {
            args = args.scalar(n, scalar(n, v)?);
        }
        for (n, addr, shape, strides, typestr, read_only) in &arrays {
            let elem = elem_of(n, typestr).map_err(raise_run)?;
            check_contiguous(n, shape, strides.as_deref(), elem.bytes() as i64).map_err(raise_run)?;
            // SAFETY: the Python side passes the data address of a live array of this shape,
            // dtype and C order (checked above), which it keeps alive until this call returns;
            // `read_only` is its writeable flag negated; overlaps between arguments are
            // rejected by the binding (E0438).
            args = unsafe { args.raw(n, elem, shape, *addr as *mut u8, !read_only) };
        }
        let generics: Vec<(&str, GenericArg)> = fixed.iter().map(|(n, g)| (n.as_str(), *g)).collect();
        let (inner, t) = (&self.inner, self.target);
        let r = py.detach(move || inner.launch(kernel, t, args, &generics).map(|l| l.values.grid));
        let g = r.map_err(raise)?;
        Ok((g[0], g[1], g[2]))
    }
}

/// The standard library's source text (`stdlib/linalg.tile`).
#[pyfunction]
fn stdlib_source() -> &'static str {
    tilec::STDLIB.iter().find(|(n, _)| *n == "linalg").map_or("", |(_, t)| t)
}

#[pymodule]
fn _tilec(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Program>()?;
    m.add_function(wrap_pyfunction!(stdlib_source, m)?)?;
    m.add("RawError", m.py().get_type::<RawError>())?;
    Ok(())
}
