//! Binding launch arguments to a kernel's parameters: type, rank and shape checks, shape
//! variables, and parsing scalar arguments from text.

use std::collections::HashMap;

use tilec_midend::dims::DimExpr;
use tilec_midend::{Const, Dim, Kernel, ParamKind, Scalar};

use crate::array::{DeviceArray, HostArray};
use crate::error::RunError;

/// The value of one launch argument.
#[derive(Debug, Clone, PartialEq)]
pub enum ArgValue {
    /// An array in host memory, for an array parameter.
    Array(HostArray),
    /// An array in CUDA device memory, for an array parameter of a kernel that runs on CUDA
    /// (the CPU and Vulkan launchers reject it: E0442).
    Device(DeviceArray),
    /// A scalar, for a scalar parameter; its type must be the parameter's type (see
    /// [`parse_scalar`]).
    Scalar(Const),
}

impl ArgValue {
    /// The element type and extents of an array (in host or device memory); `None` for a
    /// scalar.
    pub fn array_type(&self) -> Option<(Scalar, &[u64])> {
        match self {
            ArgValue::Array(a) => Some((a.elem(), a.shape())),
            ArgValue::Device(d) => Some((d.elem(), d.shape())),
            ArgValue::Scalar(_) => None,
        }
    }

    /// Whether kernels may write the argument: a writable array (host or device).
    pub fn is_writable(&self) -> bool {
        match self {
            ArgValue::Array(a) => a.is_writable(),
            ArgValue::Device(d) => d.is_writable(),
            ArgValue::Scalar(_) => false,
        }
    }
}

/// Launch arguments checked against a kernel's parameters: one value per parameter, in
/// parameter order, and the values of the shape variables.
#[derive(Debug, Clone, PartialEq)]
pub struct Bound {
    symbol: String,
    args: Vec<(String, ArgValue)>,
    vars: Vec<(String, u64)>,
}

impl Bound {
    /// The symbol of the kernel instance the arguments were bound to.
    pub fn kernel_symbol(&self) -> &str {
        &self.symbol
    }

    /// The arguments as `(parameter name, value)`, in parameter order.
    pub fn args(&self) -> &[(String, ArgValue)] {
        &self.args
    }

    /// Mutable access to the argument values, in parameter order.
    pub(crate) fn args_mut(&mut self) -> &mut [(String, ArgValue)] {
        &mut self.args
    }

    /// The argument bound to parameter `name`.
    pub fn get(&self, name: &str) -> Option<&ArgValue> {
        self.args.iter().find(|(n, _)| n == name).map(|(_, v)| v)
    }

    /// The host array bound to parameter `name`, if it is an array parameter given a host
    /// array.
    pub fn array(&self, name: &str) -> Option<&HostArray> {
        match self.get(name)? {
            ArgValue::Array(a) => Some(a),
            ArgValue::Device(_) | ArgValue::Scalar(_) => None,
        }
    }

    /// Error E0442 when an array argument is in CUDA device memory, which the launcher of
    /// `target` (`"cpu"`, `"vulkan"`) cannot read.
    pub fn check_host_memory(&self, target: &'static str) -> Result<(), RunError> {
        for (name, v) in &self.args {
            if let ArgValue::Device(d) = v {
                return Err(d.unreadable_on(name, target));
            }
        }
        Ok(())
    }

    /// The shape variables as `(name, value)`, in the order they were first bound.
    pub fn shape_vars(&self) -> &[(String, u64)] {
        &self.vars
    }

    /// The value of shape variable `name`.
    pub fn shape_var(&self, name: &str) -> Option<u64> {
        self.vars.iter().find(|(n, _)| n == name).map(|&(_, v)| v)
    }

    /// Copies the host arrays of `kernel`'s `mut` parameters from `from` (arguments bound to
    /// the same instance, as this one was before a launch) into this binding's arrays, in
    /// place: what a repeated launch restores before each timed run, without allocating or
    /// copying the read-only arrays.
    pub fn restore_mut_arrays(&mut self, from: &Bound, kernel: &Kernel) {
        for ((name, v), (_, src)) in self.args.iter_mut().zip(&from.args) {
            let is_mut = kernel
                .params
                .iter()
                .any(|p| &p.name == name && matches!(p.kind, ParamKind::Array { mutable: true, .. }));
            if let (true, ArgValue::Array(dst), ArgValue::Array(src)) = (is_mut, v, src) {
                if dst.byte_len() == src.byte_len() {
                    dst.bytes_mut().copy_from_slice(src.bytes());
                }
            }
        }
    }

    /// The array bound to `name`, checked to be a `mut` array parameter of `kernel` (what an
    /// output file may be written from). Error E0418 otherwise.
    pub fn output(&self, kernel: &Kernel, name: &str) -> Result<&HostArray, RunError> {
        let is_mut =
            kernel.params.iter().any(|p| p.name == name && matches!(p.kind, ParamKind::Array { mutable: true, .. }));
        match self.array(name) {
            Some(a) if is_mut && self.symbol == kernel.symbol => Ok(a),
            _ => Err(RunError::NotAnOutput { kernel: kernel.name.clone(), name: name.to_string() }),
        }
    }
}

/// Writes a declared shape with variable names: `[B, 16, N]`.
pub(crate) fn dims_text(dims: &[Dim]) -> String {
    let parts: Vec<String> = dims.iter().map(Dim::to_string).collect();
    format!("[{}]", parts.join(", "))
}

/// Writes a parameter's declared type: `mut f32[B, N, N]`, `f32`.
pub fn param_type_text(kind: &ParamKind) -> String {
    match kind {
        ParamKind::Array { elem, dims, mutable, optional } => format!(
            "{}{}{}{}",
            if *mutable { "mut " } else { "" },
            elem.name(),
            dims_text(dims),
            if *optional { "?" } else { "" }
        ),
        ParamKind::Scalar(s) => s.name().to_string(),
    }
}

/// Converts a scalar argument given as a number of another type (from a Rust or Python
/// caller) to the parameter's type `ty`: integers to integer types when in range and to float
/// types (rounded to nearest), floats to float types (rounded to nearest; a finite value out of
/// `f32`'s range is an error), booleans to `bool` only. Error E0414 with the reason otherwise.
pub fn convert_scalar(value: Const, ty: Scalar) -> Result<Const, RunError> {
    let ty = ty.compute();
    let text = match value {
        Const::Bool(b) => b.to_string(),
        Const::Int(v, _) => v.to_string(),
        Const::Float(v, _) => format!("{v:?}"),
    };
    let bad = |reason: &str| RunError::BadScalar { text: text.clone(), ty, reason: reason.to_string(), arg: None };
    match (value, ty) {
        (Const::Bool(b), Scalar::Bool) => Ok(Const::Bool(b)),
        (_, Scalar::Bool) => Err(bad("expected `true` or `false`")),
        (Const::Bool(_), _) => Err(bad("expected a number, not a boolean")),
        (Const::Float(..), Scalar::I32 | Scalar::U32 | Scalar::I64) => {
            Err(bad("expected an integer, not a floating-point number"))
        }
        (Const::Int(..), Scalar::I32 | Scalar::U32 | Scalar::I64) => parse_scalar(&text, ty),
        (Const::Int(v, _), _) => Ok(Const::Float(if ty == Scalar::F32 { v as f32 as f64 } else { v as f64 }, ty)),
        (Const::Float(v, _), _) => match ty {
            Scalar::F32 if v.is_finite() && (v as f32).is_infinite() => Err(bad("out of range for f32")),
            Scalar::F32 => Ok(Const::Float(v as f32 as f64, ty)),
            _ => Ok(Const::Float(v, ty)),
        },
    }
}

/// Parses a scalar argument given as text (surrounding whitespace ignored): `true`/`false`
/// (or `1`/`0`) for `bool`, a decimal integer in range for `i32`/`u32`/`i64`, a decimal
/// number (`1e-6`, `inf`, `nan` included) for `f32`/`f64`, rounded to the type.
/// Error E0414 with the reason otherwise.
pub fn parse_scalar(text: &str, ty: Scalar) -> Result<Const, RunError> {
    // Scalars of the storage types are values of their compute type (f32).
    let ty = ty.compute();
    let t = text.trim();
    let bad = |reason: String| RunError::BadScalar { text: text.to_string(), ty, reason, arg: None };
    match ty {
        Scalar::Bool => match t {
            "true" | "1" => Ok(Const::Bool(true)),
            "false" | "0" => Ok(Const::Bool(false)),
            _ => Err(bad("expected `true` or `false`".into())),
        },
        Scalar::I32 | Scalar::U32 | Scalar::I64 => {
            let (lo, hi) = match ty {
                Scalar::I32 => (i32::MIN as i128, i32::MAX as i128),
                Scalar::U32 => (0, u32::MAX as i128),
                _ => (i64::MIN as i128, i64::MAX as i128),
            };
            match t.parse::<i128>() {
                Ok(v) if (lo..=hi).contains(&v) => Ok(Const::Int(v as i64, ty)),
                Ok(_) => Err(bad(format!("out of range ({lo} to {hi})"))),
                Err(_) if t.parse::<f64>().is_ok() => {
                    Err(bad("expected an integer, not a floating-point number".into()))
                }
                Err(_) => Err(bad("expected an integer".into())),
            }
        }
        Scalar::F16 | Scalar::BF16 => unreachable!("compute types are not storage types"),
        Scalar::F32 | Scalar::F64 => {
            let v = if ty == Scalar::F32 { t.parse::<f32>().map(f64::from) } else { t.parse::<f64>() };
            match v {
                Ok(v) if v.is_infinite() && !t.to_ascii_lowercase().contains("inf") => {
                    Err(bad(format!("out of range for {}", ty.name())))
                }
                Ok(v) => Ok(Const::Float(v, ty)),
                Err(_) => Err(bad("expected a number".into())),
            }
        }
    }
}

/// Checks `args` against the parameters of `kernel` and binds the shape variables.
///
/// Errors: an argument names no parameter (E0408, the alphabetically first such name); a
/// parameter has no argument (E0407, naming it and its declared type); an array for a scalar
/// parameter or the reverse (E0409); a wrong element or scalar type (E0410); a wrong rank
/// (E0411); extents that differ from literal extents or from shape variables bound by this or
/// an earlier argument (E0412, e.g. `expected shape [B, N, N] = [4096, 92, 92], got [4096,
/// 92, 91]`); an extent above `i32::MAX` (E0413).
pub fn bind(kernel: &Kernel, mut args: HashMap<String, ArgValue>) -> Result<Bound, RunError> {
    let mut unknown: Vec<&String> =
        args.keys().filter(|name| !kernel.params.iter().any(|p| &p.name == *name)).collect();
    unknown.sort();
    if let Some(name) = unknown.first() {
        return Err(RunError::UnknownArg {
            kernel: kernel.name.clone(),
            name: name.to_string(),
            params: kernel.params.iter().map(|p| p.name.clone()).collect(),
        });
    }
    let mut bound = Bound { symbol: kernel.symbol.clone(), args: Vec::new(), vars: Vec::new() };
    for p in &kernel.params {
        let Some(value) = args.remove(&p.name) else {
            if let ParamKind::Array { elem, dims, optional: true, .. } = &p.kind {
                // Omitted: an array with every extent 0, whose accesses are all out of bounds
                // (language §3.3). It binds no shape variable.
                bound.args.push((p.name.clone(), ArgValue::Array(HostArray::zeros(*elem, &vec![0; dims.len()])?)));
                continue;
            }
            return Err(RunError::MissingArg {
                kernel: kernel.name.clone(),
                name: p.name.clone(),
                ty: param_type_text(&p.kind),
            });
        };
        let kind_error =
            |given_array| RunError::ArgKind { name: p.name.clone(), ty: param_type_text(&p.kind), given_array };
        match (&p.kind, &value) {
            (ParamKind::Scalar(s), ArgValue::Scalar(c)) => {
                if c.ty() != *s {
                    return Err(RunError::DtypeMismatch { name: p.name.clone(), expected: *s, actual: c.ty() });
                }
            }
            (ParamKind::Scalar(_), _) => return Err(kind_error(true)),
            (ParamKind::Array { elem, dims, mutable, .. }, _) => {
                let Some((actual, shape)) = value.array_type() else {
                    return Err(kind_error(false));
                };
                if actual != *elem {
                    return Err(RunError::DtypeMismatch { name: p.name.clone(), expected: *elem, actual });
                }
                bind_shape(&p.name, dims, shape, &mut bound.vars)?;
                if *mutable && !value.is_writable() {
                    return Err(RunError::ReadOnlyArg { name: p.name.clone(), ty: param_type_text(&p.kind) });
                }
            }
        }
        bound.args.push((p.name.clone(), value));
    }
    // A shape variable that only omitted arrays mention is 0, as their extents.
    for p in &kernel.params {
        if let ParamKind::Array { dims, .. } = &p.kind {
            for d in dims {
                if let Dim::Var(v) = d {
                    if !bound.vars.iter().any(|(n, _)| n == v) {
                        bound.vars.push((v.clone(), 0));
                    }
                }
            }
        }
    }
    check_extent_exprs(kernel, &bound)?;
    check_overlap(kernel, &bound)?;
    Ok(bound)
}

/// The value of variable `name` of an extent expression: a shape variable, else an integer
/// scalar argument.
fn extent_var(vars: &[(String, u64)], scalars: &dyn Fn(&str) -> Option<Const>, name: &str) -> Option<i64> {
    match vars.iter().find(|(n, _)| n == name) {
        Some(&(_, v)) => Some(v as i64),
        None => match scalars(name)? {
            Const::Int(v, _) => Some(v),
            _ => None,
        },
    }
}

/// The extents that `dims` declare, with shape variables from `vars` and scalar parameters
/// from `scalars`. Error E0441 when an extent expression cannot be evaluated (a variable that
/// no argument bound, division by zero, overflow) or is negative.
pub fn declared_shape(
    name: &str,
    dims: &[Dim],
    vars: &[(String, u64)],
    scalars: &dyn Fn(&str) -> Option<Const>,
) -> Result<Vec<u64>, RunError> {
    let mut out = Vec::with_capacity(dims.len());
    for d in dims {
        let e = match d {
            Dim::Fixed(n) | Dim::Named(_, n) => {
                out.push(*n);
                continue;
            }
            Dim::Var(v) => DimExpr::Var(v.clone()),
            Dim::Expr(e) => e.clone(),
        };
        let value = |n: &str| extent_var(vars, scalars, n);
        let fail = |reason: String| RunError::ExtentExpr {
            name: name.to_string(),
            expr: e.to_string(),
            unbound: e.vars().iter().any(|v| value(v).is_none()),
            reason,
        };
        let v = e.eval(&value).map_err(fail)?;
        out.push(u64::try_from(v).map_err(|_| fail(format!("it is negative ({v})")))?);
    }
    Ok(out)
}

/// The shape of `mut` array parameter `name` of `kernel` from the other arguments in `args`
/// (for output arrays that `tilec run` creates): shape variables from the plain extents of the
/// arrays given, then the one unknown of an extent expression (`Z` of `X: T[Z * H]` once `H`
/// is known), integer scalar parameters, constants. Errors: no such parameter, or not a `mut`
/// array (E0418); an extent that the arguments do not determine (E0441).
pub fn output_shape(
    kernel: &Kernel,
    args: &HashMap<String, ArgValue>,
    name: &str,
) -> Result<(Scalar, Vec<u64>), RunError> {
    let not_output = || RunError::NotAnOutput { kernel: kernel.name.clone(), name: name.to_string() };
    let Some(p) = kernel.params.iter().find(|p| p.name == name) else {
        return Err(not_output());
    };
    let ParamKind::Array { elem, dims, mutable: true, .. } = &p.kind else {
        return Err(not_output());
    };
    let scalars = |n: &str| match args.get(n) {
        Some(ArgValue::Scalar(c)) => Some(*c),
        _ => None,
    };
    let arrays = || {
        kernel.params.iter().filter_map(|p| match (&p.kind, args.get(&p.name).and_then(ArgValue::array_type)) {
            (ParamKind::Array { dims, .. }, Some((_, shape))) => Some((dims, shape)),
            _ => None,
        })
    };
    let mut vars: Vec<(String, u64)> = Vec::new();
    for (dims, shape) in arrays() {
        for (d, &x) in dims.iter().zip(shape) {
            if let Dim::Var(v) = d {
                if !vars.iter().any(|(n, _)| n == v) {
                    vars.push((v.clone(), x));
                }
            }
        }
    }
    // Unknowns of extent expressions, until nothing more is learned.
    loop {
        let mut learned = false;
        for (dims, shape) in arrays() {
            for (d, &x) in dims.iter().zip(shape) {
                let Dim::Expr(e) = d else { continue };
                let known = |n: &str| extent_var(&vars, &scalars, n);
                if let Some((v, value)) = e.solve(x as i64, &known) {
                    if let Ok(value) = u64::try_from(value) {
                        vars.push((v, value));
                        learned = true;
                    }
                }
            }
        }
        if !learned {
            break;
        }
    }
    Ok((*elem, declared_shape(name, dims, &vars, &scalars)?))
}

/// Checks the extents of arrays declared with extent expressions (`T[Z * H, N]`), once every
/// argument is bound: E0412 when an extent differs, E0441 when an expression cannot be
/// evaluated.
fn check_extent_exprs(kernel: &Kernel, bound: &Bound) -> Result<(), RunError> {
    let scalars = |n: &str| match bound.get(n) {
        Some(ArgValue::Scalar(c)) => Some(*c),
        _ => None,
    };
    for (p, (_, v)) in kernel.params.iter().zip(&bound.args) {
        let (ParamKind::Array { dims, optional, .. }, Some((_, shape))) = (&p.kind, v.array_type()) else {
            continue;
        };
        // An omitted optional array (every extent 0) is not checked.
        if !dims.iter().any(|d| matches!(d, Dim::Expr(_))) || (*optional && shape.iter().all(|&x| x == 0)) {
            continue;
        }
        let expected = declared_shape(&p.name, dims, &bound.vars, &scalars)?;
        if expected != shape {
            return Err(RunError::ShapeMismatch {
                name: p.name.clone(),
                expected: dims_text(dims),
                expected_values: expected,
                actual: shape.to_vec(),
            });
        }
    }
    Ok(())
}

/// Error E0438 when the memory of a `mut` array argument overlaps that of another array
/// argument in the same memory, host or device (only borrowed host arrays can: owned ones
/// never share memory).
fn check_overlap(kernel: &Kernel, bound: &Bound) -> Result<(), RunError> {
    // (name, mutable, in device memory, address range)
    let arrays: Vec<(&str, bool, bool, std::ops::Range<u64>)> = kernel
        .params
        .iter()
        .zip(&bound.args)
        .filter_map(|(p, (n, v))| {
            let ParamKind::Array { mutable, .. } = p.kind else { return None };
            match v {
                ArgValue::Array(a) if a.is_borrowed() => {
                    let r = a.address_range();
                    Some((n.as_str(), mutable, false, r.start as u64..r.end as u64))
                }
                ArgValue::Device(d) => Some((n.as_str(), mutable, true, d.address_range())),
                _ => None,
            }
        })
        .collect();
    for (i, &(name, mutable, device, ref x)) in arrays.iter().enumerate() {
        for &(other, other_mut, other_device, ref y) in &arrays[i + 1..] {
            if device == other_device && (mutable || other_mut) && x.start < y.end && y.start < x.end {
                let (name, other) = if mutable { (name, other) } else { (other, name) };
                return Err(RunError::Overlap { name: name.to_string(), other: other.to_string() });
            }
        }
    }
    Ok(())
}

/// Checks the extents `actual` of argument `name` against the declared `dims`, binding new
/// shape variables into `vars` (only when the whole shape matches).
fn bind_shape(name: &str, dims: &[Dim], actual: &[u64], vars: &mut Vec<(String, u64)>) -> Result<(), RunError> {
    if dims.len() != actual.len() {
        return Err(RunError::RankMismatch {
            name: name.to_string(),
            expected: dims_text(dims),
            rank: dims.len(),
            actual: actual.to_vec(),
        });
    }
    let mut new_vars: Vec<(String, u64)> = Vec::new();
    let mut expected = Vec::with_capacity(dims.len());
    for (d, &x) in dims.iter().zip(actual) {
        expected.push(match d {
            Dim::Fixed(n) | Dim::Named(_, n) => *n,
            // Checked once every argument is bound (`check_extent_exprs`).
            Dim::Expr(_) => x,
            Dim::Var(v) => match vars.iter().chain(&new_vars).find(|(n, _)| n == v) {
                Some(&(_, val)) => val,
                None => {
                    new_vars.push((v.clone(), x));
                    x
                }
            },
        });
    }
    if expected != actual {
        return Err(RunError::ShapeMismatch {
            name: name.to_string(),
            expected: dims_text(dims),
            expected_values: expected,
            actual: actual.to_vec(),
        });
    }
    if let Some((axis, &extent)) = actual.iter().enumerate().find(|(_, &x)| x > i32::MAX as u64) {
        return Err(RunError::ExtentTooLarge { name: name.to_string(), axis, extent });
    }
    vars.extend(new_vars);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use tilec_midend::KernelParam;

    fn var(s: &str) -> Dim {
        Dim::Var(s.to_string())
    }

    /// `potrf(A: mut f32[B, N, N], eps: f32, idx: i32[B, 2])`
    fn kernel() -> Kernel {
        Kernel {
            name: "potrf".into(),
            symbol: "potrf__f32".into(),
            params: vec![
                KernelParam {
                    name: "A".into(),
                    kind: ParamKind::Array {
                        elem: Scalar::F32,
                        dims: vec![var("B"), var("N"), var("N")],
                        mutable: true,
                        optional: false,
                    },
                },
                KernelParam { name: "eps".into(), kind: ParamKind::Scalar(Scalar::F32) },
                KernelParam {
                    name: "idx".into(),
                    kind: ParamKind::Array {
                        elem: Scalar::I32,
                        dims: vec![var("B"), Dim::Fixed(2)],
                        mutable: false,
                        optional: false,
                    },
                },
            ],
            body: tilec_midend::FuncId(0),
            launch: tilec_midend::FuncId(1),
            grid_rank: 1,
            block: Some(16),
            has_flops: false,
            doc: None,
            loc: Default::default(),
        }
    }

    fn args(a_shape: &[u64], idx_shape: &[u64]) -> HashMap<String, ArgValue> {
        let a = HostArray::zeros(Scalar::F32, a_shape).unwrap();
        let idx = HostArray::zeros(Scalar::I32, idx_shape).unwrap();
        HashMap::from([
            ("A".to_string(), ArgValue::Array(a)),
            ("eps".to_string(), ArgValue::Scalar(parse_scalar("1e-6", Scalar::F32).unwrap())),
            ("idx".to_string(), ArgValue::Array(idx)),
        ])
    }

    #[test]
    fn binds_and_records_shape_vars() {
        let k = kernel();
        let b = bind(&k, args(&[4, 3, 3], &[4, 2])).unwrap();
        assert_eq!(b.shape_vars(), &[("B".to_string(), 4), ("N".to_string(), 3)]);
        assert_eq!(b.args().iter().map(|(n, _)| n.as_str()).collect::<Vec<_>>(), ["A", "eps", "idx"]);
        assert_eq!(b.get("eps"), Some(&ArgValue::Scalar(Const::Float(1e-6f32 as f64, Scalar::F32))));
        assert!(b.output(&k, "A").is_ok());
        assert_eq!(b.output(&k, "idx").unwrap_err().code(), "E0418");
        assert_eq!(b.output(&k, "eps").unwrap_err().code(), "E0418");
    }

    #[test]
    fn borrowed_arrays_read_only_and_overlap() {
        let k = kernel();
        let mut a = vec![0f32; 4 * 9];
        let mut idx = vec![0i32; 8 + 8];
        // SAFETY (all `from_raw` below): the vectors outlive the arrays and are not otherwise
        // used while they live.
        let raw = |p: *mut u8, elem, shape: &[u64], w| unsafe { HostArray::from_raw(elem, shape, p, w).unwrap() };
        let bind_with = |a: HostArray, idx: HostArray| {
            let mut m = args(&[1, 1, 1], &[1, 2]);
            m.insert("A".into(), ArgValue::Array(a));
            m.insert("idx".into(), ArgValue::Array(idx));
            bind(&k, m)
        };
        let (pa, pi) = (a.as_mut_ptr() as *mut u8, idx.as_mut_ptr() as *mut u8);
        // Read-only memory for `mut A`.
        let e = bind_with(raw(pa, Scalar::F32, &[4, 3, 3], false), raw(pi, Scalar::I32, &[4, 2], false)).unwrap_err();
        assert_eq!(e.code(), "E0437");
        assert_eq!(
            e.to_string(),
            "argument `A` is read-only, but the parameter is `A: mut f32[B, N, N]`, which the kernel writes"
        );
        // `idx` (read) inside `A` (written): i32 and f32 share the buffer's bytes.
        let e = bind_with(raw(pa, Scalar::F32, &[4, 3, 3], true), raw(pa.wrapping_add(8), Scalar::I32, &[4, 2], false))
            .unwrap_err();
        assert_eq!((e.code(), e.to_string().contains("`A`")), ("E0438", true));
        // Disjoint halves of one buffer are fine, and the kernel pointer is the caller's.
        let b =
            bind_with(raw(pa, Scalar::F32, &[4, 3, 3], true), raw(pi.wrapping_add(32), Scalar::I32, &[4, 2], false))
                .unwrap();
        assert_eq!(b.array("A").unwrap().as_ptr(), pa as *const u8);
        // Misaligned memory.
        let e = unsafe { HostArray::from_raw(Scalar::F32, &[2], pa.wrapping_add(2), true) }.unwrap_err();
        assert_eq!(e.code(), "E0439");
    }

    #[test]
    fn device_arrays_bind_like_host_arrays() {
        let k = kernel();
        // SAFETY (all `from_raw` below): nothing is launched; the addresses are never read.
        let dev = |elem, shape: &[u64], ptr, w| unsafe {
            ArgValue::Device(DeviceArray::from_raw(elem, shape, ptr, Some(0), None, w).unwrap())
        };
        let bind_with = |a: ArgValue, idx: ArgValue| {
            let mut m = args(&[1, 1, 1], &[1, 2]);
            m.insert("A".into(), a);
            m.insert("idx".into(), idx);
            bind(&k, m)
        };
        let b =
            bind_with(dev(Scalar::F32, &[4, 3, 3], 0x10000, true), dev(Scalar::I32, &[4, 2], 0x20000, false)).unwrap();
        assert_eq!(b.shape_vars(), &[("B".to_string(), 4), ("N".to_string(), 3)]);
        assert!(b.array("A").is_none(), "no host array to read");
        let e = b.check_host_memory("vulkan").unwrap_err();
        assert_eq!(e.code(), "E0442");
        assert!(e.to_string().starts_with("argument `A` is in CUDA device memory (device 0), which the vulkan target"));
        // Dtype, shape, read-only and overlap checks, as for host arrays.
        let e = bind_with(dev(Scalar::F64, &[4, 3, 3], 0x10000, true), dev(Scalar::I32, &[4, 2], 0x20000, false));
        assert_eq!(e.unwrap_err().code(), "E0410");
        let e = bind_with(dev(Scalar::F32, &[4, 3, 3], 0x10000, true), dev(Scalar::I32, &[5, 2], 0x20000, false));
        assert_eq!(e.unwrap_err().code(), "E0412");
        let e = bind_with(dev(Scalar::F32, &[4, 3, 3], 0x10000, false), dev(Scalar::I32, &[4, 2], 0x20000, false));
        assert_eq!(e.unwrap_err().code(), "E0437");
        let e = bind_with(dev(Scalar::F32, &[4, 3, 3], 0x10000, true), dev(Scalar::I32, &[4, 2], 0x10040, false));
        assert_eq!(e.unwrap_err().code(), "E0438");
        // Host memory is never compared with device memory.
        let host = ArgValue::Array(HostArray::zeros(Scalar::I32, &[4, 2]).unwrap());
        assert!(bind_with(dev(Scalar::F32, &[4, 3, 3], 0x10000, true), host).is_ok());
        // A device array for a scalar parameter.
        let mut m = args(&[4, 3, 3], &[4, 2]);
        m.insert("eps".into(), dev(Scalar::F32, &[1], 0x30000, false));
        assert_eq!(bind(&k, m).unwrap_err().code(), "E0409");
    }

    #[test]
    fn read_only_borrowed_arrays_are_never_written() {
        let mut v = [1.0f64, 2.0];
        // SAFETY: `v` outlives `a` and is not used while `a` lives.
        let mut a = unsafe { HostArray::from_raw(Scalar::F64, &[2], v.as_mut_ptr() as *mut u8, false) }.unwrap();
        assert!(a.is_borrowed() && !a.is_writable());
        a.as_f64_mut().unwrap()[0] = 5.0;
        assert!(!a.is_borrowed() && a.is_writable());
        assert_eq!(a.as_f64(), Some(&[5.0, 2.0][..]));
        let c = a.clone();
        drop(a);
        assert_eq!(v, [1.0, 2.0]);
        assert_eq!(c.as_f64(), Some(&[5.0, 2.0][..]));
    }

    #[test]
    fn scalars_from_numbers() {
        let f = |v: f64| Const::Float(v, Scalar::F64);
        let i = |v: i64| Const::Int(v, Scalar::I64);
        assert_eq!(convert_scalar(f(0.1), Scalar::F32).unwrap(), Const::Float(0.1f32 as f64, Scalar::F32));
        assert_eq!(convert_scalar(i(3), Scalar::F64).unwrap(), f(3.0));
        assert_eq!(convert_scalar(i(-7), Scalar::I32).unwrap(), Const::Int(-7, Scalar::I32));
        assert_eq!(convert_scalar(f(f64::NAN), Scalar::F32).unwrap().ty(), Scalar::F32);
        for (v, ty, reason) in [
            (i(1 << 40), Scalar::I32, "out of range"),
            (f(2.0), Scalar::I32, "not a floating-point number"),
            (f(1e300), Scalar::F32, "out of range for f32"),
            (Const::Bool(true), Scalar::F32, "not a boolean"),
            (i(1), Scalar::Bool, "`true` or `false`"),
        ] {
            let e = convert_scalar(v, ty).unwrap_err();
            assert_eq!(e.code(), "E0414");
            assert!(e.to_string().contains(reason), "{e}");
        }
    }

    #[test]
    fn missing_and_unknown() {
        let k = kernel();
        let mut a = args(&[4, 3, 3], &[4, 2]);
        a.remove("A");
        let e = bind(&k, a).unwrap_err();
        assert_eq!(e.code(), "E0407");
        assert_eq!(e.to_string(), "missing argument `A: mut f32[B, N, N]` of kernel `potrf`");
        let mut a = args(&[4, 3, 3], &[4, 2]);
        a.insert("a".into(), ArgValue::Scalar(Const::Bool(true)));
        let e = bind(&k, a).unwrap_err();
        assert_eq!(e.code(), "E0408");
        assert_eq!(e.to_string(), "kernel `potrf` has no parameter `a` (its parameters: A, eps, idx)");
    }

    #[test]
    fn shape_mismatch_names_argument() {
        let k = kernel();
        let e = bind(&k, args(&[4096, 92, 91], &[4096, 2])).unwrap_err();
        assert_eq!(e.code(), "E0412");
        assert_eq!(e.to_string(), "argument `A`: expected shape [B, N, N] = [4096, 92, 92], got [4096, 92, 91]");
        let e = bind(&k, args(&[4, 3, 3], &[5, 2])).unwrap_err();
        assert_eq!(e.to_string(), "argument `idx`: expected shape [B, 2] = [4, 2], got [5, 2]");
        let e = bind(&k, args(&[4, 3, 3], &[4, 3])).unwrap_err();
        assert_eq!(e.to_string(), "argument `idx`: expected shape [B, 2] = [4, 2], got [4, 3]");
        let e = bind(&k, args(&[4, 3], &[4, 2])).unwrap_err();
        assert_eq!(e.code(), "E0411");
        assert_eq!(e.to_string(), "argument `A`: expected an array of rank 3 [B, N, N], got rank 2 [4, 3]");
        let e = bind(&k, args(&[1 << 31, 0, 0], &[0, 2])).unwrap_err();
        assert_eq!(e.code(), "E0413");
    }

    #[test]
    fn dtype_and_kind_mismatch() {
        let k = kernel();
        let mut a = args(&[4, 3, 3], &[4, 2]);
        a.insert("A".into(), ArgValue::Array(HostArray::zeros(Scalar::F64, &[4, 3, 3]).unwrap()));
        let e = bind(&k, a).unwrap_err();
        assert_eq!(e.code(), "E0410");
        assert_eq!(e.to_string(), "argument `A`: expected dtype f32, got f64");
        let mut a = args(&[4, 3, 3], &[4, 2]);
        a.insert("eps".into(), ArgValue::Scalar(Const::Float(1.0, Scalar::F64)));
        assert_eq!(bind(&k, a).unwrap_err().code(), "E0410");
        let mut a = args(&[4, 3, 3], &[4, 2]);
        a.insert("eps".into(), ArgValue::Array(HostArray::zeros(Scalar::F32, &[1]).unwrap()));
        assert_eq!(bind(&k, a).unwrap_err().code(), "E0409");
        let mut a = args(&[4, 3, 3], &[4, 2]);
        a.insert("A".into(), ArgValue::Scalar(Const::Float(1.0, Scalar::F32)));
        let e = bind(&k, a).unwrap_err();
        assert_eq!(e.to_string(), "argument `A` is a scalar, but the parameter is an array `mut f32[B, N, N]`");
    }

    #[test]
    fn scalars_from_text() {
        assert_eq!(parse_scalar(" 42 ", Scalar::I32).unwrap(), Const::Int(42, Scalar::I32));
        assert_eq!(parse_scalar("4294967295", Scalar::U32).unwrap(), Const::Int(u32::MAX as i64, Scalar::U32));
        assert_eq!(parse_scalar("-1", Scalar::U32).unwrap_err().code(), "E0414");
        assert_eq!(parse_scalar("2147483648", Scalar::I32).unwrap_err().code(), "E0414");
        let e = parse_scalar("1.5", Scalar::I64).unwrap_err();
        assert_eq!(e.to_string(), "`1.5` is not a valid i64: expected an integer, not a floating-point number");
        assert_eq!(parse_scalar("0.1", Scalar::F32).unwrap(), Const::Float(0.1f32 as f64, Scalar::F32));
        assert_eq!(parse_scalar("0.1", Scalar::F64).unwrap(), Const::Float(0.1, Scalar::F64));
        assert_eq!(parse_scalar("1e40", Scalar::F32).unwrap_err().code(), "E0414");
        assert!(parse_scalar("-inf", Scalar::F32).is_ok());
        assert_eq!(
            parse_scalar("abc", Scalar::F64).unwrap_err().to_string(),
            "`abc` is not a valid f64: expected a number"
        );
        assert_eq!(parse_scalar("true", Scalar::Bool).unwrap(), Const::Bool(true));
        assert_eq!(parse_scalar("yes", Scalar::Bool).unwrap_err().code(), "E0414");
    }
}
