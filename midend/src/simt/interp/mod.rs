//! Reference interpreter of the SIMT form: runs a whole grid of a [`SimtKernel`] on host
//! buffers, each program as `lanes` lanes in lockstep, to check the lowering against the
//! tile-level backends.
//!
//! Every SSA value holds one scalar per lane (arrays are the same on all lanes). Operations
//! apply lane-wise with the CPU backend's scalar semantics: integers wrap like two's
//! complement of their type, integer division or remainder by zero gives 0 (`MIN / -1`
//! wraps), `f32` arithmetic is rounded to `f32`, float remainder is `a - trunc(a / b) * b`,
//! float `min`/`max` are `f64::min`/`max`, casts from floats to integers saturate (NaN gives
//! 0). Memory ops address row-major arrays with one index per dimension; out-of-bounds loads
//! read 0 (`LoadInto`: the old value) and out-of-bounds stores and atomic adds do nothing.
//! Branch conditions, loop bounds and steps must be the same on all lanes, else the run fails
//! with "divergent control flow".
//!
//! Memory is weakly ordered, as on a GPU, where lanes run independently between barriers: a
//! lane's stores are buffered, seen by that lane's own loads at once but by the other lanes
//! only after a `Barrier` (or when the program ends), which writes the buffers back in the
//! order of the stores. `Shuffle` exchanges registers, not memory. So a lowering that lets one
//! lane load what another stored without a barrier between gives stale values here, as it
//! could on the hardware. Atomic adds update memory at once.

use std::collections::HashMap;
use std::fmt;

use super::SimtKernel;
use crate::ir::{BinOp, Const, Function, Index, Op, OpKind, Region, Value};
use crate::print::op_name;
use crate::scalar;
use crate::types::{Scalar, Type};

/// One argument of a launch: an array as raw little-endian bytes with its extents, or a scalar.
#[derive(Debug)]
pub enum InterpArg<'a> {
    /// A row-major array of `elem` with extents `dims` (outermost first); `data` holds exactly
    /// `dims.product() * elem.bytes()` bytes. `f32` elements are stored as `f32` bytes,
    /// booleans as one byte (0 or 1).
    Array { elem: Scalar, dims: Vec<u64>, data: &'a mut [u8] },
    /// A scalar of the parameter's type.
    Scalar(Const),
}

/// Why a SIMT kernel could not be run: mismatched arguments, an op or type not allowed in
/// SIMT form, divergent control flow, a shuffle from a lane out of range, malformed IR.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InterpError {
    pub message: String,
}

impl fmt::Display for InterpError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "SIMT interpreter: {}", self.message)
    }
}

impl std::error::Error for InterpError {}

fn err<T>(msg: impl Into<String>) -> Result<T, InterpError> {
    Err(InterpError { message: msg.into() })
}

/// Runs every program of `grid` (program ids over `0..grid[axis]`), each as `k.lanes` lanes
/// in lockstep, on `args` (one per kernel parameter, in order). Programs run one after the
/// other, axis 0 fastest.
pub fn run(k: &SimtKernel, args: &mut [InterpArg<'_>], grid: [i64; 3]) -> Result<(), InterpError> {
    let f = &k.func;
    let lanes = k.lanes as usize;
    if lanes == 0 {
        return err("the kernel has 0 lanes");
    }
    check_args(f, args)?;
    for (axis, &g) in grid.iter().enumerate() {
        if !(0..=i32::MAX as i64).contains(&g) {
            return err(format!("grid extent {g} along axis {axis} is out of range"));
        }
    }
    let mut it = Interp {
        f,
        lanes,
        grid,
        pid: [0; 3],
        vals: vec![None; f.values.len()],
        mem: Memory { args, shared: Vec::new(), pending: vec![HashMap::new(); lanes], stores: 0 },
    };
    for z in 0..grid[2] {
        for y in 0..grid[1] {
            for x in 0..grid[0] {
                it.program([x, y, z])
                    .map_err(|e| InterpError { message: format!("program ({x}, {y}, {z}): {}", e.message) })?;
            }
        }
    }
    Ok(())
}

/// Checks that `args` match the parameters of `f` in number, types, ranks and sizes.
fn check_args(f: &Function, args: &[InterpArg<'_>]) -> Result<(), InterpError> {
    let params = f.params();
    if params.len() != args.len() {
        return err(format!("kernel `{}` takes {} arguments, {} given", f.name, params.len(), args.len()));
    }
    for (i, (&p, a)) in params.iter().zip(args.iter()).enumerate() {
        let ty = value_type(f, p)?;
        match (ty, a) {
            (Type::Array { elem, rank, .. }, InterpArg::Array { elem: e, dims, data }) => {
                if e != elem || dims.len() != *rank as usize {
                    return err(format!(
                        "argument {i} is an array of {} with {} dimensions, parameter type is {ty}",
                        e.name(),
                        dims.len()
                    ));
                }
                let size = dims.iter().try_fold(elem.bytes() as u64, |acc, &d| acc.checked_mul(d));
                if size != Some(data.len() as u64) {
                    return err(format!(
                        "argument {i} has {} bytes, its extents {dims:?} of {} need {}",
                        data.len(),
                        elem.name(),
                        size.map_or("too many".to_string(), |s| s.to_string())
                    ));
                }
            }
            (Type::Scalar(s), InterpArg::Scalar(c)) if *s == c.ty() => {}
            (ty, InterpArg::Scalar(c)) => {
                return err(format!("argument {i} ({c:?}) does not match parameter type {ty}"))
            }
            (ty, InterpArg::Array { elem, .. }) => {
                return err(format!("argument {i} (an array of {}) does not match parameter type {ty}", elem.name()))
            }
        }
    }
    Ok(())
}

fn value_type(f: &Function, v: Value) -> Result<&Type, InterpError> {
    match f.values.get(v.0 as usize) {
        Some(d) => Ok(&d.ty),
        None => err(format!("value %{} is not in the function's value table", v.0)),
    }
}

/// A run-time value: one scalar per lane, or an array (the same on every lane).
#[derive(Debug, Clone)]
enum Val {
    Lanes(Vec<Const>),
    Array(Mem),
}

/// An array: a kernel argument or a shared array of the current program.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Mem {
    Param(usize),
    Shared(usize),
}

struct SharedArray {
    elem: Scalar,
    dims: Vec<u64>,
    data: Vec<u8>,
}

struct Memory<'b, 'a> {
    args: &'b mut [InterpArg<'a>],
    shared: Vec<SharedArray>,
    /// Per lane, its stores not yet visible to the other lanes: (array, element) -> (when,
    /// value), `when` counting the stores of the program in their order.
    pending: Vec<HashMap<(Mem, usize), (u64, Const)>>,
    /// Stores issued so far.
    stores: u64,
}

impl Memory<'_, '_> {
    /// Makes every lane's buffered stores visible, in the order they were issued (so where
    /// two lanes stored to one element, the later store wins, as in lockstep).
    fn flush(&mut self) -> Result<(), InterpError> {
        let mut writes: Vec<_> = self.pending.iter_mut().flat_map(std::mem::take).collect();
        writes.sort_by_key(|(_, (when, _))| *when);
        for ((m, off), (_, v)) in writes {
            let (elem, data) = self.data_mut(m)?;
            write(elem, data, off, v)?;
        }
        Ok(())
    }

    /// Element `off` of `m` as lane `lane` sees it: its own buffered store, else memory.
    fn load(&self, lane: usize, m: Mem, off: usize) -> Result<Const, InterpError> {
        if let Some((_, v)) = self.pending[lane].get(&(m, off)) {
            return Ok(*v);
        }
        let (elem, _, data) = self.view(m)?;
        Ok(read(elem, data, off))
    }

    fn view(&self, m: Mem) -> Result<(Scalar, &[u64], &[u8]), InterpError> {
        match m {
            Mem::Param(i) => match self.args.get(i) {
                Some(InterpArg::Array { elem, dims, data }) => Ok((*elem, dims, data)),
                _ => err(format!("argument {i} is not an array")),
            },
            Mem::Shared(i) => match self.shared.get(i) {
                Some(s) => Ok((s.elem, &s.dims, &s.data)),
                None => err(format!("no shared array {i}")),
            },
        }
    }

    fn data_mut(&mut self, m: Mem) -> Result<(Scalar, &mut [u8]), InterpError> {
        match m {
            Mem::Param(i) => match self.args.get_mut(i) {
                Some(InterpArg::Array { elem, data, .. }) => Ok((*elem, data)),
                _ => err(format!("argument {i} is not an array")),
            },
            Mem::Shared(i) => match self.shared.get_mut(i) {
                Some(s) => Ok((s.elem, &mut s.data)),
                None => err(format!("no shared array {i}")),
            },
        }
    }
}

/// Reads element `off` (in elements) of a little-endian array of `elem`, as a value of
/// `elem`'s compute type (`f16` and `bf16` widen to `f32`).
fn read(elem: Scalar, data: &[u8], off: usize) -> Const {
    let n = elem.bytes() as usize;
    let b = &data[off * n..off * n + n];
    let b4 = || -> [u8; 4] { b.try_into().expect("4 bytes") };
    let b8 = || -> [u8; 8] { b.try_into().expect("8 bytes") };
    match elem {
        Scalar::Bool => Const::Bool(b[0] != 0),
        Scalar::I32 => Const::Int(i32::from_le_bytes(b4()) as i64, elem),
        Scalar::U32 => Const::Int(u32::from_le_bytes(b4()) as i64, elem),
        Scalar::I64 => Const::Int(i64::from_le_bytes(b8()), elem),
        Scalar::F32 => Const::Float(f32::from_le_bytes(b4()) as f64, elem),
        Scalar::F64 => Const::Float(f64::from_le_bytes(b8()), elem),
        Scalar::F16 | Scalar::BF16 => {
            Const::Float(crate::half::widen(elem, u16::from_le_bytes([b[0], b[1]])), Scalar::F32)
        }
    }
}

/// Writes `c` (of `elem`'s compute type) as element `off` of a little-endian array of `elem`
/// (`f16` and `bf16` rounded to nearest, ties to even).
fn write(elem: Scalar, data: &mut [u8], off: usize, c: Const) -> Result<(), InterpError> {
    if c.ty() != elem.compute() {
        return err(format!("a {} value stored into an array of {}", c.ty().name(), elem.name()));
    }
    let n = elem.bytes() as usize;
    let dst = &mut data[off * n..off * n + n];
    match elem {
        Scalar::Bool => dst[0] = (c.as_i64() != 0) as u8,
        Scalar::I32 => dst.copy_from_slice(&(c.as_i64() as i32).to_le_bytes()),
        Scalar::U32 => dst.copy_from_slice(&(c.as_i64() as u32).to_le_bytes()),
        Scalar::I64 => dst.copy_from_slice(&c.as_i64().to_le_bytes()),
        Scalar::F32 => dst.copy_from_slice(&(c.as_f64() as f32).to_le_bytes()),
        Scalar::F64 => dst.copy_from_slice(&c.as_f64().to_le_bytes()),
        Scalar::F16 | Scalar::BF16 => dst.copy_from_slice(&crate::half::narrow(elem, c.as_f64() as f32).to_le_bytes()),
    }
    Ok(())
}

/// `a op b` with result type `ty` ([`crate::scalar::bin`]: integer division by zero gives 0).
fn bin(op: BinOp, a: Const, b: Const, ty: Scalar) -> Result<Const, InterpError> {
    scalar::bin(op, a, b, ty).map_err(|e| InterpError { message: e.to_string() })
}

/// How a region ended.
enum Flow {
    /// A `Return`: the program is over.
    Return,
    Yield(Vec<Val>),
    /// The region ran off its end (no terminator).
    End,
}

struct Interp<'f, 'b, 'a> {
    f: &'f Function,
    lanes: usize,
    grid: [i64; 3],
    pid: [i64; 3],
    vals: Vec<Option<Val>>,
    mem: Memory<'b, 'a>,
}

impl Interp<'_, '_, '_> {
    /// Runs one program.
    fn program(&mut self, pid: [i64; 3]) -> Result<(), InterpError> {
        self.pid = pid;
        self.vals.iter_mut().for_each(|v| *v = None);
        self.mem.shared.clear();
        self.mem.pending.iter_mut().for_each(HashMap::clear);
        let f = self.f;
        for (i, &p) in f.params().iter().enumerate() {
            let v = match &self.mem.args[i] {
                InterpArg::Array { .. } => Val::Array(Mem::Param(i)),
                InterpArg::Scalar(c) => Val::Lanes(vec![*c; self.lanes]),
            };
            self.set(p, v)?;
        }
        let flow = self.region(&f.body)?;
        // The end of a program makes its stores visible (before its shared arrays go).
        self.mem.flush()?;
        match flow {
            Flow::Yield(_) => err("the kernel body ends in `yield`"),
            Flow::Return | Flow::End => Ok(()),
        }
    }

    /// Binds `v`, checking that its type is allowed in SIMT form and matches `val`.
    fn set(&mut self, v: Value, val: Val) -> Result<(), InterpError> {
        let ty = value_type(self.f, v)?;
        match (ty, &val) {
            (Type::Scalar(s), Val::Lanes(cs)) => {
                if let Some(c) = cs.iter().find(|c| c.ty() != *s) {
                    return err(format!("value %{} of type {ty} is given {c:?}", v.0));
                }
            }
            (Type::Array { .. }, Val::Array(_)) => {}
            (Type::Tile { .. }, _) => {
                return err(format!("value %{} has tile type {ty}, not allowed in SIMT form", v.0))
            }
            (ty, val) => {
                return err(format!("value %{} of type {ty} is given {val:?}", v.0));
            }
        }
        self.vals[v.0 as usize] = Some(val);
        Ok(())
    }

    fn get(&self, v: Value) -> Result<&Val, InterpError> {
        match self.vals.get(v.0 as usize) {
            Some(Some(val)) => Ok(val),
            _ => err(format!("value %{} is used before it is defined", v.0)),
        }
    }

    /// The per-lane scalars of `v`.
    fn scalars(&self, v: Value) -> Result<&[Const], InterpError> {
        match self.get(v)? {
            Val::Lanes(cs) => Ok(cs),
            Val::Array(_) => err(format!("value %{} is an array, expected a scalar", v.0)),
        }
    }

    fn array(&self, v: Value) -> Result<Mem, InterpError> {
        match self.get(v)? {
            Val::Array(m) => Ok(*m),
            Val::Lanes(_) => err(format!("value %{} is a scalar, expected an array", v.0)),
        }
    }

    /// The value of a scalar that must be the same on every lane.
    fn uniform(&self, val: &Val, what: &str) -> Result<Const, InterpError> {
        let Val::Lanes(cs) = val else {
            return err(format!("{what} is an array"));
        };
        let c0 = cs[0];
        if let Some((l, c)) = cs.iter().enumerate().find(|(_, c)| **c != c0) {
            return err(format!("divergent control flow: {what} is {c0:?} on lane 0 but {c:?} on lane {l}"));
        }
        Ok(c0)
    }

    fn uniform_bool(&self, val: &Val, what: &str) -> Result<bool, InterpError> {
        match self.uniform(val, what)? {
            Const::Bool(b) => Ok(b),
            c => err(format!("{what} {c:?} is not a bool")),
        }
    }

    fn vals_of(&self, vs: &[Value]) -> Result<Vec<Val>, InterpError> {
        vs.iter().map(|&v| self.get(v).cloned()).collect()
    }

    fn bind(&mut self, to: &[Value], vals: Vec<Val>, what: &str) -> Result<(), InterpError> {
        if to.len() != vals.len() {
            return err(format!("{what}: {} values for {} slots", vals.len(), to.len()));
        }
        for (&v, val) in to.iter().zip(vals) {
            self.set(v, val)?;
        }
        Ok(())
    }

    fn region(&mut self, r: &Region) -> Result<Flow, InterpError> {
        for op in &r.ops {
            match op.kind {
                OpKind::Return => return Ok(Flow::Return),
                OpKind::Yield => return Ok(Flow::Yield(self.vals_of(&op.args)?)),
                _ => {
                    if self.op(op)? {
                        return Ok(Flow::Return);
                    }
                }
            }
        }
        Ok(Flow::End)
    }

    /// Runs a region of a structured op that must yield `n` values (or return). `None`: the
    /// program returned.
    fn sub_region(&mut self, op: &Op, i: usize, n: usize) -> Result<Option<Vec<Val>>, InterpError> {
        let Some(r) = op.regions.get(i) else {
            return err(format!("`{}` has no region {i}", op_name(&op.kind)));
        };
        match self.region(r)? {
            Flow::Return => Ok(None),
            Flow::Yield(ys) if ys.len() == n => Ok(Some(ys)),
            Flow::End if n == 0 => Ok(Some(Vec::new())),
            Flow::Yield(ys) => {
                err(format!("region {i} of `{}` yields {} values, expected {n}", op_name(&op.kind), ys.len()))
            }
            Flow::End => err(format!("region {i} of `{}` does not end in `yield`", op_name(&op.kind))),
        }
    }

    /// Runs one op other than `Yield` and `Return`; `true` when the program returned.
    fn op(&mut self, op: &Op) -> Result<bool, InterpError> {
        match op.kind {
            OpKind::For => self.for_op(op),
            OpKind::If => self.if_op(op),
            OpKind::While => self.while_op(op),
            _ => {
                self.leaf(op).map_err(|e| {
                    if e.message.starts_with("op `") {
                        e
                    } else {
                        InterpError { message: format!("`{}`: {}", op_name(&op.kind), e.message) }
                    }
                })?;
                Ok(false)
            }
        }
    }

    fn for_op(&mut self, op: &Op) -> Result<bool, InterpError> {
        if op.args.len() < 3 {
            return err("`for` has fewer than 3 operands");
        }
        let lo = self.uniform(self.get(op.args[0])?, "the lower bound of a `for`")?;
        let hi = self.uniform(self.get(op.args[1])?, "the upper bound of a `for`")?;
        let step = self.uniform(self.get(op.args[2])?, "the step of a `for`")?;
        let (Const::Int(mut iv, ty), Const::Int(hi, _), Const::Int(step, _)) = (lo, hi, step) else {
            return err(format!("`for` bounds {lo:?}, {hi:?}, {step:?} are not integers"));
        };
        if step <= 0 && iv < hi {
            return err(format!("`for` from {iv} to {hi} with step {step} does not terminate"));
        }
        let Some(r) = op.regions.first() else {
            return err("`for` has no region");
        };
        let Some((&iv_param, carried_params)) = r.params.split_first() else {
            return err("`for` region has no induction variable");
        };
        let mut carried = self.vals_of(&op.args[3..])?;
        while iv < hi {
            self.set(iv_param, Val::Lanes(vec![Const::Int(iv, ty); self.lanes]))?;
            self.bind(carried_params, carried, "`for` region parameters")?;
            match self.sub_region(op, 0, op.results.len())? {
                Some(ys) => carried = ys,
                None => return Ok(true),
            }
            iv = ty.wrap(iv.wrapping_add(step));
        }
        self.bind(&op.results, carried, "`for` results")?;
        Ok(false)
    }

    fn if_op(&mut self, op: &Op) -> Result<bool, InterpError> {
        let Some(&c) = op.args.first() else {
            return err("`if` has no condition");
        };
        let cond = self.uniform_bool(self.get(c)?, "the condition of an `if`")?;
        match self.sub_region(op, if cond { 0 } else { 1 }, op.results.len())? {
            Some(ys) => {
                self.bind(&op.results, ys, "`if` results")?;
                Ok(false)
            }
            None => Ok(true),
        }
    }

    fn while_op(&mut self, op: &Op) -> Result<bool, InterpError> {
        if op.regions.len() != 2 {
            return err("`while` must have two regions");
        }
        let mut carried = self.vals_of(&op.args)?;
        loop {
            self.bind(&op.regions[0].params, carried.clone(), "`while` before-region parameters")?;
            let Some(ys) = self.sub_region(op, 0, 1)? else {
                return Ok(true);
            };
            if !self.uniform_bool(&ys[0], "the condition of a `while`")? {
                break;
            }
            self.bind(&op.regions[1].params, carried, "`while` body parameters")?;
            match self.sub_region(op, 1, op.results.len())? {
                Some(ys) => carried = ys,
                None => return Ok(true),
            }
        }
        self.bind(&op.results, carried, "`while` results")?;
        Ok(false)
    }

    /// The single result of `op` and its scalar type.
    fn result(&self, op: &Op) -> Result<(Value, Scalar), InterpError> {
        let [r] = op.results[..] else {
            return err(format!("{} results, expected one", op.results.len()));
        };
        match value_type(self.f, r)? {
            Type::Scalar(s) => Ok((r, *s)),
            ty => err(format!("result %{} has type {ty}, expected a scalar", r.0)),
        }
    }

    /// Applies `f` lane by lane to the `N` scalar operands of `op`.
    fn lanewise<const N: usize>(
        &self,
        op: &Op,
        f: impl Fn([Const; N]) -> Result<Const, InterpError>,
    ) -> Result<Vec<Const>, InterpError> {
        if op.args.len() != N {
            return err(format!("{} operands, expected {N}", op.args.len()));
        }
        let mut xs: [&[Const]; N] = [&[]; N];
        for (x, &a) in xs.iter_mut().zip(&op.args) {
            *x = self.scalars(a)?;
        }
        (0..self.lanes).map(|l| f(std::array::from_fn(|i| xs[i][l]))).collect()
    }

    /// The same `c` on every lane.
    fn splat(&self, c: Const) -> Vec<Const> {
        vec![c; self.lanes]
    }

    /// The array operand at `pos` of a memory op and, per lane, the element offset addressed
    /// by the index operands after it, or `None` when out of bounds.
    fn address(
        &self,
        op: &Op,
        kinds: &[Index],
        pos: usize,
        extra: usize,
    ) -> Result<(Mem, Vec<Option<usize>>), InterpError> {
        if op.args.len() != pos + 1 + kinds.len() + extra {
            return err(format!("{} operands, expected {}", op.args.len(), pos + 1 + kinds.len() + extra));
        }
        if let Some(k) = kinds.iter().find(|k| **k != Index::At) {
            return err(format!("index {k:?} is not allowed in SIMT form"));
        }
        let m = self.array(op.args[pos])?;
        let (_, dims, _) = self.mem.view(m)?;
        if dims.len() != kinds.len() {
            return err(format!("{} indices into an array of rank {}", kinds.len(), dims.len()));
        }
        let mut offs: Vec<Option<usize>> = vec![Some(0); self.lanes];
        for (d, &extent) in dims.iter().enumerate() {
            let idx = self.scalars(op.args[pos + 1 + d])?;
            for (off, c) in offs.iter_mut().zip(idx) {
                let Const::Int(i, _) = *c else {
                    return err(format!("index {c:?} is not an integer"));
                };
                *off = match *off {
                    Some(o) if i >= 0 && (i as u64) < extent => Some(o * extent as usize + i as usize),
                    _ => None,
                };
            }
        }
        Ok((m, offs))
    }

    /// Runs an op without regions.
    fn leaf(&mut self, op: &Op) -> Result<(), InterpError> {
        let lanes = self.lanes;
        let vals: Vec<Const> = match &op.kind {
            OpKind::Store(kinds) | OpKind::AtomicAdd(kinds) => {
                let atomic = matches!(op.kind, OpKind::AtomicAdd(_));
                if !op.results.is_empty() {
                    return err("a store has no results");
                }
                let (m, offs) = self.address(op, kinds, 0, 1)?;
                let src = self.scalars(op.args[op.args.len() - 1])?.to_vec();
                for (lane, (off, &v)) in offs.iter().zip(&src).enumerate() {
                    let Some(off) = *off else { continue };
                    if atomic {
                        let (elem, data) = self.mem.data_mut(m)?;
                        let v = scalar::rmw(crate::Rmw::Add, read(elem, data, off), v, None, elem)
                            .map_err(|e| InterpError { message: e.to_string() })?;
                        write(elem, data, off, v)?;
                    } else {
                        let (elem, _, _) = self.mem.view(m)?;
                        if v.ty() != elem.compute() {
                            return err(format!("a {} value stored into an array of {}", v.ty().name(), elem.name()));
                        }
                        // A lane reads its own buffered store as memory will hold it.
                        let v = if elem.is_half() {
                            let bits = crate::half::narrow(elem, v.as_f64() as f32);
                            Const::Float(crate::half::widen(elem, bits), Scalar::F32)
                        } else {
                            v
                        };
                        self.mem.stores += 1;
                        let when = self.mem.stores;
                        self.mem.pending[lane].insert((m, off), (when, v));
                    }
                }
                return Ok(());
            }
            OpKind::AtomicRmw(k) => {
                // Lane by lane, in lane order (hardware picks some order).
                let m = self.array(op.args[0])?;
                let rank = self.mem.view(m)?.1.len();
                let cas = usize::from(*k == crate::Rmw::Cas);
                let (m, offs) = self.address(op, &vec![Index::At; rank], 0, 1 + cas)?;
                let n = op.args.len();
                let v = self.scalars(op.args[n - 1])?.to_vec();
                let cmp = if cas == 1 { Some(self.scalars(op.args[n - 2])?.to_vec()) } else { None };
                let mut out = Vec::with_capacity(lanes);
                for (lane, off) in offs.iter().enumerate() {
                    let (elem, data) = self.mem.data_mut(m)?;
                    let Some(off) = *off else {
                        let c = elem.compute();
                        out.push(if c.is_float() { Const::Float(0.0, c) } else { Const::Int(0, c) });
                        continue;
                    };
                    let old = read(elem, data, off);
                    let c = cmp.as_ref().map(|c| c[lane]);
                    let new =
                        scalar::rmw(*k, old, v[lane], c, elem).map_err(|e| InterpError { message: e.to_string() })?;
                    write(elem, data, off, new)?;
                    out.push(old);
                }
                out
            }
            OpKind::Barrier => return self.mem.flush(),
            OpKind::AllocShared(shape) => {
                let [r] = op.results[..] else {
                    return err("expected one result");
                };
                let Type::Array { elem, rank, .. } = value_type(self.f, r)? else {
                    return err(format!("result type {} is not an array", self.f.ty(r)));
                };
                if *rank as usize != shape.len() {
                    return err(format!("shape {shape:?} for an array of rank {rank}"));
                }
                let dims: Vec<u64> = shape.iter().map(|&d| d as u64).collect();
                let n = dims.iter().product::<u64>() as usize * elem.bytes() as usize;
                self.mem.shared.push(SharedArray { elem: *elem, dims, data: vec![0; n] });
                let m = Mem::Shared(self.mem.shared.len() - 1);
                return self.set(r, Val::Array(m));
            }
            OpKind::Load(kinds) => {
                let (m, offs) = self.address(op, kinds, 0, 0)?;
                let elem = self.mem.view(m)?.0.compute();
                offs.iter()
                    .enumerate()
                    .map(|(lane, o)| match o {
                        Some(o) => self.mem.load(lane, m, *o),
                        None if elem.is_float() => Ok(Const::Float(0.0, elem)),
                        None if elem == Scalar::Bool => Ok(Const::Bool(false)),
                        None => Ok(Const::Int(0, elem)),
                    })
                    .collect::<Result<_, _>>()?
            }
            OpKind::LoadInto(kinds) => {
                let (m, offs) = self.address(op, kinds, 1, 0)?;
                let old = self.scalars(op.args[0])?;
                offs.iter()
                    .zip(old)
                    .enumerate()
                    .map(|(lane, (o, &old))| match o {
                        Some(o) => self.mem.load(lane, m, *o),
                        None => Ok(old),
                    })
                    .collect::<Result<_, _>>()?
            }
            OpKind::Const(c) => self.splat(*c),
            OpKind::LaneId => (0..lanes).map(|l| Const::Int(l as i64, Scalar::I32)).collect(),
            OpKind::ProgramId(a) | OpKind::NumPrograms(a) => {
                let ids = if matches!(op.kind, OpKind::ProgramId(_)) { self.pid } else { self.grid };
                let Some(&v) = ids.get(*a as usize) else {
                    return err(format!("grid axis {a} is out of range"));
                };
                self.splat(Const::Int(v, Scalar::I32))
            }
            OpKind::Dim(a) => {
                let [arr] = op.args[..] else {
                    return err("expected one operand");
                };
                let (_, dims, _) = self.mem.view(self.array(arr)?)?;
                let Some(&d) = dims.get(*a as usize) else {
                    return err(format!("axis {a} of an array of rank {}", dims.len()));
                };
                let Ok(d) = i32::try_from(d) else {
                    return err(format!("array extent {d} along axis {a} does not fit in i32"));
                };
                self.splat(Const::Int(d as i64, Scalar::I32))
            }
            OpKind::Shuffle => {
                let [x, src] = op.args[..] else {
                    return err("expected two operands");
                };
                let (x, src) = (self.scalars(x)?, self.scalars(src)?);
                src.iter()
                    .enumerate()
                    .map(|(l, s)| match *s {
                        Const::Int(s, _) if (0..lanes as i64).contains(&s) => Ok(x[s as usize]),
                        s => err(format!("lane {l} reads lane {s:?}, outside 0..{lanes}")),
                    })
                    .collect::<Result<_, _>>()?
            }
            OpKind::Bin(b) => {
                let (_, ty) = self.result(op)?;
                self.lanewise(op, |[x, y]| bin(*b, x, y, ty))?
            }
            OpKind::Cmp(c) => self.lanewise(op, |[x, y]| Ok(Const::Bool(scalar::cmp(*c, x, y))))?,
            OpKind::Un(u) => {
                let (_, ty) = self.result(op)?;
                self.lanewise(op, |[x]| scalar::un(*u, x, ty).map_err(|e| InterpError { message: e.to_string() }))?
            }
            OpKind::Cast(s) => self.lanewise(op, |[x]| Ok(scalar::cast(x, *s)))?,
            OpKind::Bitcast(s) => {
                self.lanewise(op, |[x]| scalar::bitcast(x, *s).map_err(|e| InterpError { message: e.to_string() }))?
            }
            OpKind::Select => self.lanewise(op, |[c, a, b]| match c {
                Const::Bool(c) => Ok(if c { a } else { b }),
                c => err(format!("condition {c:?} is not a bool")),
            })?,
            OpKind::Fma => {
                let (_, ty) = self.result(op)?;
                self.lanewise(op, |[a, b, c]| Ok(scalar::fma(a, b, c, ty)))?
            }
            other => return err(format!("op `{}` is not allowed in SIMT form", op_name(other))),
        };
        let (r, _) = self.result(op)?;
        self.set(r, Val::Lanes(vals))
    }
}

#[cfg(test)]
mod tests;
