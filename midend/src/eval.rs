//! Scalar evaluator of launch functions (grid and flop count).
//!
//! A launch function ([`FuncKind::Launch`]) is straight-line scalar code over the kernel's
//! parameters: `Const`, `Bin`, `Cmp`, `Un`, `Cast`, `Select`, `Fma`, `Dim` and `If`, ending in
//! one `Return` of `[grid0, grid1, grid2, flops]`. [`eval_launch`] runs it on concrete array
//! extents and scalar arguments. Integer operations wrap like two's complement of their type;
//! `f32` operations are computed in `f64` and rounded to `f32`.

use std::fmt;

use crate::ir::{BinOp, Const, FuncKind, Function, Op, OpKind, Region, UnOp, Value};
use crate::scalar::{self, cast, cmp, fma};
use crate::types::{Scalar, Type};

/// One launch argument, matching one parameter of the launch function, in order.
#[derive(Debug, Clone, PartialEq)]
pub enum LaunchArg {
    /// An array argument: its extents, outermost first (one per dimension of the parameter).
    Array { dims: Vec<u64> },
    /// A scalar argument; its type must be the parameter's type.
    Scalar(Const),
}

/// The results of a launch function.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LaunchValues {
    /// Number of programs along each grid axis (unused axes are normally 1).
    pub grid: [i64; 3],
    /// Floating-point operations of one launch, if the kernel declares them.
    pub flops: Option<f64>,
}

/// Why a launch function could not be evaluated (a malformed function, a division by zero,
/// an unsupported operation or a mismatched argument).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EvalError(pub String);

impl fmt::Display for EvalError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

impl std::error::Error for EvalError {}

fn err<T>(msg: impl Into<String>) -> Result<T, EvalError> {
    Err(EvalError(msg.into()))
}

/// A run-time value: a scalar or an array's extents.
#[derive(Debug, Clone)]
enum Val {
    Scalar(Const),
    Array(Vec<u64>),
}

/// Evaluates the launch function `f` on `args` (one per parameter of `f`, in order).
///
/// Returns the grid extents and the flop count (`None` when the function returns NaN).
/// Errors: `f` is not a launch function, the arguments do not match its parameters, an
/// operation other than the scalar ones listed in the module documentation, an integer
/// division or remainder by zero, or a missing or malformed `Return`.
pub fn eval_launch(f: &Function, args: &[LaunchArg]) -> Result<LaunchValues, EvalError> {
    if f.kind != FuncKind::Launch {
        return err(format!("function `{}` is not a launch function", f.name));
    }
    let params = f.params();
    if params.len() != args.len() {
        return err(format!("launch function `{}` takes {} arguments, {} given", f.name, params.len(), args.len()));
    }
    let mut ev = Evaluator { f, vals: vec![None; f.values.len()] };
    for (i, (&p, a)) in params.iter().zip(args).enumerate() {
        let v = match (value_type(f, p)?, a) {
            (Type::Array { rank, .. }, LaunchArg::Array { dims }) if *rank as usize == dims.len() => {
                Val::Array(dims.clone())
            }
            (Type::Scalar(s), LaunchArg::Scalar(c)) if *s == c.ty() => Val::Scalar(*c),
            (ty, a) => return err(format!("launch argument {i} ({a:?}) does not match parameter type {ty}")),
        };
        ev.set(p, v)?;
    }
    match ev.region(&f.body)? {
        Flow::Return(vals) => finish(&vals),
        Flow::Yield(_) => err("launch function ends in `yield` instead of `return`"),
        Flow::End => err("launch function has no `return`"),
    }
}

/// Converts the returned `[g0, g1, g2, flops]` into [`LaunchValues`].
fn finish(vals: &[Const]) -> Result<LaunchValues, EvalError> {
    let [g0, g1, g2, flops] = vals else {
        return err(format!("launch function returns {} values, expected 4", vals.len()));
    };
    let mut grid = [0i64; 3];
    for (slot, g) in grid.iter_mut().zip([g0, g1, g2]) {
        match g {
            Const::Int(v, _) => *slot = *v,
            other => return err(format!("grid extent {other:?} is not an integer")),
        }
    }
    let flops = match flops {
        Const::Float(v, _) if v.is_nan() => None,
        Const::Float(v, _) => Some(*v),
        other => return err(format!("flop count {other:?} is not a float")),
    };
    Ok(LaunchValues { grid, flops })
}

/// How a region ended.
enum Flow {
    Return(Vec<Const>),
    Yield(Vec<Const>),
    End,
}

struct Evaluator<'f> {
    f: &'f Function,
    vals: Vec<Option<Val>>,
}

impl Evaluator<'_> {
    fn set(&mut self, v: Value, val: Val) -> Result<(), EvalError> {
        match self.vals.get_mut(v.0 as usize) {
            Some(slot) => {
                *slot = Some(val);
                Ok(())
            }
            None => err(format!("value %{} is not in the function's value table", v.0)),
        }
    }

    fn get(&self, v: Value) -> Result<&Val, EvalError> {
        match self.vals.get(v.0 as usize) {
            Some(Some(val)) => Ok(val),
            _ => err(format!("value %{} is used before it is defined", v.0)),
        }
    }

    fn scalar(&self, v: Value) -> Result<Const, EvalError> {
        match self.get(v)? {
            Val::Scalar(c) => Ok(*c),
            Val::Array(_) => err(format!("value %{} is an array, expected a scalar", v.0)),
        }
    }

    fn region(&mut self, r: &Region) -> Result<Flow, EvalError> {
        for op in &r.ops {
            match &op.kind {
                OpKind::Return => return Ok(Flow::Return(self.scalars(&op.args)?)),
                OpKind::Yield => return Ok(Flow::Yield(self.scalars(&op.args)?)),
                _ => self.op(op)?,
            }
        }
        Ok(Flow::End)
    }

    fn scalars(&self, vs: &[Value]) -> Result<Vec<Const>, EvalError> {
        vs.iter().map(|&v| self.scalar(v)).collect()
    }

    fn arg(&self, op: &Op, i: usize) -> Result<Const, EvalError> {
        match op.args.get(i) {
            Some(&v) => self.scalar(v),
            None => err(format!("{:?} has too few operands", op.kind)),
        }
    }

    /// The single result of `op` and its scalar type.
    fn result(&self, op: &Op) -> Result<(Value, Scalar), EvalError> {
        let [r] = op.results[..] else {
            return err(format!("{:?} must have one result", op.kind));
        };
        match value_type(self.f, r)? {
            Type::Scalar(s) => Ok((r, *s)),
            ty => err(format!("{:?} has result type {ty}, expected a scalar", op.kind)),
        }
    }

    fn op(&mut self, op: &Op) -> Result<(), EvalError> {
        if let OpKind::If = op.kind {
            return self.if_op(op);
        }
        let (r, ty) = self.result(op)?;
        let c = match &op.kind {
            OpKind::Const(c) => *c,
            OpKind::Bin(b) => bin(*b, self.arg(op, 0)?, self.arg(op, 1)?, ty)?,
            OpKind::Cmp(c) => Const::Bool(cmp(*c, self.arg(op, 0)?, self.arg(op, 1)?)),
            OpKind::Un(u) => un(*u, self.arg(op, 0)?, ty)?,
            OpKind::Cast(s) => cast(self.arg(op, 0)?, *s),
            OpKind::Bitcast(s) => bitcast(self.arg(op, 0)?, *s)?,
            OpKind::Select => match self.arg(op, 0)? {
                Const::Bool(true) => self.arg(op, 1)?,
                Const::Bool(false) => self.arg(op, 2)?,
                c => return err(format!("select condition {c:?} is not a bool")),
            },
            OpKind::Fma => fma(self.arg(op, 0)?, self.arg(op, 1)?, self.arg(op, 2)?, ty),
            OpKind::Dim(axis) => self.dim(op, *axis)?,
            other => return err(format!("unsupported op in launch function: {other:?}")),
        };
        self.set(r, Val::Scalar(c))
    }

    fn dim(&self, op: &Op, axis: u8) -> Result<Const, EvalError> {
        let Some(&a) = op.args.first() else {
            return err("dim has no operand");
        };
        let Val::Array(dims) = self.get(a)? else {
            return err(format!("dim of %{}, which is not an array", a.0));
        };
        let Some(&d) = dims.get(axis as usize) else {
            return err(format!("dim({axis}) of an array of rank {}", dims.len()));
        };
        match i32::try_from(d) {
            Ok(d) => Ok(Const::Int(d as i64, Scalar::I32)),
            Err(_) => err(format!("array extent {d} along axis {axis} does not fit in i32")),
        }
    }

    fn if_op(&mut self, op: &Op) -> Result<(), EvalError> {
        let taken = match self.arg(op, 0)? {
            Const::Bool(true) => 0,
            Const::Bool(false) => 1,
            c => return err(format!("if condition {c:?} is not a bool")),
        };
        let Some(region) = op.regions.get(taken) else {
            return err("if op is missing a region");
        };
        let ys = match self.region(region)? {
            Flow::Yield(ys) => ys,
            Flow::Return(_) => return err("`return` inside an if region of a launch function"),
            Flow::End => return err("if region does not end in `yield`"),
        };
        if ys.len() != op.results.len() {
            return err(format!("if region yields {} values for {} results", ys.len(), op.results.len()));
        }
        for (&r, y) in op.results.iter().zip(ys) {
            self.set(r, Val::Scalar(y))?;
        }
        Ok(())
    }
}

fn value_type(f: &Function, v: Value) -> Result<&Type, EvalError> {
    match f.values.get(v.0 as usize) {
        Some(d) => Ok(&d.ty),
        None => err(format!("value %{} is not in the function's value table", v.0)),
    }
}

/// `a op b` with result type `ty` ([`crate::scalar::bin`]); an integer division by zero is an
/// error here (a launch grid that divides by zero is E0415), not 0 as in kernels.
fn bin(op: BinOp, a: Const, b: Const, ty: Scalar) -> Result<Const, EvalError> {
    if scalar::divides_by_zero(op, b, ty) {
        let what = if op == BinOp::Div { "division" } else { "remainder" };
        return err(format!("integer {what} by zero in launch function ({} / 0)", ty.wrap(a.as_i64())));
    }
    scalar::bin(op, a, b, ty).map_err(|e| EvalError(format!("{e} in launch function")))
}

fn un(op: UnOp, a: Const, ty: Scalar) -> Result<Const, EvalError> {
    scalar::un(op, a, ty).map_err(|e| EvalError(format!("{e} in launch function")))
}

fn bitcast(a: Const, to: Scalar) -> Result<Const, EvalError> {
    scalar::bitcast(a, to).map_err(|e| EvalError(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::{CmpOp, Loc};

    /// Builds launch functions by hand.
    struct B {
        f: Function,
    }

    impl B {
        fn new(params: &[Type]) -> B {
            let mut f = Function::new("launch", FuncKind::Launch);
            for t in params {
                let v = f.new_value(t.clone());
                f.body.params.push(v);
            }
            B { f }
        }

        fn p(&self, i: usize) -> Value {
            self.f.params()[i]
        }

        fn push(&mut self, kind: OpKind, args: &[Value], ty: Option<Scalar>) -> Value {
            let results: Vec<Value> = ty.map(|s| self.f.new_value(Type::Scalar(s))).into_iter().collect();
            let r = results.first().copied().unwrap_or(Value(u32::MAX));
            self.f.body.ops.push(Op { kind, args: args.to_vec(), results, regions: vec![], loc: Loc::default() });
            r
        }

        fn c(&mut self, c: Const) -> Value {
            self.push(OpKind::Const(c), &[], Some(c.ty()))
        }

        fn i64(&mut self, v: i64) -> Value {
            self.c(Const::Int(v, Scalar::I64))
        }

        fn ret(mut self, g: [Value; 3], flops: Value) -> Function {
            self.push(OpKind::Return, &[g[0], g[1], g[2], flops], None);
            self.f
        }

        fn nan(&mut self) -> Value {
            self.c(Const::Float(f64::NAN, Scalar::F64))
        }
    }

    fn arr(rank: u8) -> Type {
        Type::Array { elem: Scalar::F32, rank, mutable: true }
    }

    /// grid(cdiv(N, 16)) for an array `[B, N]`, with flops = 2.0 * B as f64.
    #[test]
    fn grid_from_dims() {
        let mut b = B::new(&[arr(2)]);
        let a = b.p(0);
        let bb = b.push(OpKind::Dim(0), &[a], Some(Scalar::I32));
        let n = b.push(OpKind::Dim(1), &[a], Some(Scalar::I32));
        let c15 = b.c(Const::Int(15, Scalar::I32));
        let c16 = b.c(Const::Int(16, Scalar::I32));
        let s = b.push(OpKind::Bin(BinOp::Add), &[n, c15], Some(Scalar::I32));
        let q = b.push(OpKind::Bin(BinOp::Div), &[s, c16], Some(Scalar::I32));
        let g0 = b.push(OpKind::Cast(Scalar::I64), &[q], Some(Scalar::I64));
        let one = b.i64(1);
        let bf = b.push(OpKind::Cast(Scalar::F64), &[bb], Some(Scalar::F64));
        let two = b.c(Const::Float(2.0, Scalar::F64));
        let fl = b.push(OpKind::Bin(BinOp::Mul), &[two, bf], Some(Scalar::F64));
        let f = b.ret([g0, one, one], fl);
        let v = eval_launch(&f, &[LaunchArg::Array { dims: vec![7, 92] }]).unwrap();
        assert_eq!(v, LaunchValues { grid: [6, 1, 1], flops: Some(14.0) });
    }

    #[test]
    fn nan_flops_is_none_and_scalars_pass_through() {
        let mut b = B::new(&[Type::Scalar(Scalar::I64)]);
        let n = b.p(0);
        let one = b.i64(1);
        let nan = b.nan();
        let f = b.ret([n, one, one], nan);
        let v = eval_launch(&f, &[LaunchArg::Scalar(Const::Int(5, Scalar::I64))]).unwrap();
        assert_eq!(v, LaunchValues { grid: [5, 1, 1], flops: None });
    }

    fn eval_i32_bin(op: BinOp, x: i64, y: i64, ty: Scalar) -> Result<i64, EvalError> {
        let mut b = B::new(&[]);
        let a = b.c(Const::Int(x, ty));
        let c = b.c(Const::Int(y, ty));
        let r = b.push(OpKind::Bin(op), &[a, c], Some(ty));
        let g = b.push(OpKind::Cast(Scalar::I64), &[r], Some(Scalar::I64));
        let one = b.i64(1);
        let nan = b.nan();
        let f = b.ret([g, one, one], nan);
        eval_launch(&f, &[]).map(|v| v.grid[0])
    }

    #[test]
    fn integer_ops_wrap() {
        assert_eq!(eval_i32_bin(BinOp::Add, i32::MAX as i64, 1, Scalar::I32).unwrap(), i32::MIN as i64);
        assert_eq!(eval_i32_bin(BinOp::Div, i32::MIN as i64, -1, Scalar::I32).unwrap(), i32::MIN as i64);
        assert_eq!(eval_i32_bin(BinOp::Sub, 0, 1, Scalar::U32).unwrap(), u32::MAX as i64);
        assert_eq!(eval_i32_bin(BinOp::Rem, -7, 3, Scalar::I32).unwrap(), -1);
        assert_eq!(eval_i32_bin(BinOp::Min, -7, 3, Scalar::I32).unwrap(), -7);
        assert_eq!(eval_i32_bin(BinOp::Max, -7, 3, Scalar::I64).unwrap(), 3);
        assert_eq!(eval_i32_bin(BinOp::Mul, 1 << 40, 1 << 30, Scalar::I64).unwrap(), 0);
    }

    #[test]
    fn division_by_zero_is_an_error() {
        let e = eval_i32_bin(BinOp::Div, 5, 0, Scalar::I32).unwrap_err();
        assert!(e.to_string().contains("division by zero"), "{e}");
        let e = eval_i32_bin(BinOp::Rem, 5, 0, Scalar::I64).unwrap_err();
        assert!(e.to_string().contains("remainder by zero"), "{e}");
    }

    #[test]
    fn f32_rounds() {
        let mut b = B::new(&[]);
        let x = b.c(Const::Float(1.0, Scalar::F32));
        let y = b.c(Const::Float(1e-10, Scalar::F32));
        let s = b.push(OpKind::Bin(BinOp::Add), &[x, y], Some(Scalar::F32));
        let fl = b.push(OpKind::Cast(Scalar::F64), &[s], Some(Scalar::F64));
        let one = b.i64(1);
        let f = b.ret([one, one, one], fl);
        assert_eq!(eval_launch(&f, &[]).unwrap().flops, Some(1.0));
    }

    #[test]
    fn if_select_cmp_and_fma() {
        // grid0 = if n > 10 { fma(n, 2, 1) } else { select(n == 3, 100, 200) }
        let mut b = B::new(&[Type::Scalar(Scalar::I64)]);
        let n = b.p(0);
        let ten = b.i64(10);
        let cond = b.push(OpKind::Cmp(CmpOp::Gt), &[n, ten], Some(Scalar::Bool));
        let r = b.f.new_value(Type::Scalar(Scalar::I64));
        let start = b.f.body.ops.len();
        let two = b.i64(2);
        let one = b.i64(1);
        let m = b.push(OpKind::Fma, &[n, two, one], Some(Scalar::I64));
        b.push(OpKind::Yield, &[m], None);
        let then_ops: Vec<Op> = b.f.body.ops.drain(start..).collect();
        let three = b.i64(3);
        let h = b.i64(100);
        let t = b.i64(200);
        let eq = b.push(OpKind::Cmp(CmpOp::Eq), &[n, three], Some(Scalar::Bool));
        let sel = b.push(OpKind::Select, &[eq, h, t], Some(Scalar::I64));
        b.push(OpKind::Yield, &[sel], None);
        let else_ops: Vec<Op> = b.f.body.ops.drain(start..).collect();
        b.f.body.ops.push(Op {
            kind: OpKind::If,
            args: vec![cond],
            results: vec![r],
            regions: vec![Region { params: vec![], ops: then_ops }, Region { params: vec![], ops: else_ops }],
            loc: Loc::default(),
        });
        let one = b.i64(1);
        let nan = b.nan();
        let f = b.ret([r, one, one], nan);
        let run = |v: i64| eval_launch(&f, &[LaunchArg::Scalar(Const::Int(v, Scalar::I64))]).unwrap().grid[0];
        assert_eq!(run(20), 41);
        assert_eq!(run(3), 100);
        assert_eq!(run(4), 200);
    }

    #[test]
    fn unsupported_op_and_bad_args() {
        let mut b = B::new(&[]);
        let g = b.push(OpKind::ProgramId(0), &[], Some(Scalar::I32));
        let one = b.i64(1);
        let nan = b.nan();
        let f = b.ret([g, one, one], nan);
        let e = eval_launch(&f, &[]).unwrap_err();
        assert!(e.to_string().starts_with("unsupported op in launch function"), "{e}");
        let e = eval_launch(&f, &[LaunchArg::Array { dims: vec![] }]).unwrap_err();
        assert!(e.to_string().contains("takes 0 arguments"), "{e}");
    }

    #[test]
    fn bitcasts() {
        let one = Const::Float(1.0, Scalar::F64);
        assert_eq!(bitcast(one, Scalar::I64), Ok(Const::Int(0x3ff0_0000_0000_0000, Scalar::I64)));
        assert_eq!(bitcast(Const::Int(0x3ff0_0000_0000_0000, Scalar::I64), Scalar::F64), Ok(one));
        assert_eq!(bitcast(Const::Float(-2.0, Scalar::F32), Scalar::I32), Ok(Const::Int(-0x4000_0000, Scalar::I32)));
        assert!(bitcast(one, Scalar::I32).is_err());
    }

    #[test]
    fn casts() {
        assert_eq!(cast(Const::Int(-1, Scalar::I32), Scalar::U32), Const::Int(u32::MAX as i64, Scalar::U32));
        assert_eq!(cast(Const::Int(1 << 32, Scalar::I64), Scalar::I32), Const::Int(0, Scalar::I32));
        assert_eq!(cast(Const::Float(-2.7, Scalar::F64), Scalar::I32), Const::Int(-2, Scalar::I32));
        assert_eq!(cast(Const::Float(f64::NAN, Scalar::F64), Scalar::I64), Const::Int(0, Scalar::I64));
        assert_eq!(cast(Const::Int(3, Scalar::I32), Scalar::Bool), Const::Bool(true));
        assert_eq!(cast(Const::Bool(true), Scalar::F32), Const::Float(1.0, Scalar::F32));
    }
}
