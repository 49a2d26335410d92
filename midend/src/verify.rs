//! The IR verifier, run after every pass in tests and in debug builds of the driver.
//!
//! Invariants checked:
//! 1. SSA: every value is defined once (as an op result or a region parameter) and every use
//!    is dominated by its definition: earlier in the same region or in an enclosing region.
//! 2. Every value index is inside the function's value arena.
//! 3. Operand counts and types: arithmetic operands agree in element type and tile shape (or
//!    broadcast a scalar); comparisons, selects and conditions take scalars; loads and stores
//!    take one `i32` index per array dimension; `Store` targets a `mut` array; `Cholesky` and
//!    `Trsm` take a square triangular tile; `Outer`, `Rank1`, `Matmul`, `MatmulAcc` shapes compose;
//!    `Map`'s region maps one element to one element of the result's type.
//! 4. Structured control flow: `For` has an `i32`/`i64` induction variable and carried values
//!    whose types match its inits, region parameters and results; `If` and `While` likewise;
//!    every region of a `For`, `If` or `While` ends with `Yield` of the right types, or with
//!    `Return`; `Yield` appears only as the last op of such a region.
//! 5. A function body ends with `Return` whose operands match `Function::ret`.
//! 6. `Call` refers to an existing function with matching parameter and result types.
//! 7. Tile extents are between 1 and 4096 and tiles have rank 1 or 2.

use crate::ir::*;
use crate::types::{Scalar, Type};
use std::fmt;

/// A violated invariant, with the function and op where it was found.
#[derive(Debug, Clone, PartialEq)]
pub struct VerifyError {
    pub func: String,
    pub message: String,
}

impl fmt::Display for VerifyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "IR verifier: in @{}: {}", self.func, self.message)
    }
}

struct V<'a> {
    m: &'a Module,
    f: &'a Function,
    defined: Vec<bool>,
    errors: Vec<String>,
}

impl V<'_> {
    fn err(&mut self, msg: String) {
        self.errors.push(msg);
    }

    fn def(&mut self, v: Value) {
        match self.defined.get_mut(v.0 as usize) {
            Some(d) if !*d => *d = true,
            Some(_) => self.err(format!("%{} is defined twice", v.0)),
            None => self.err(format!("%{} is outside the value arena", v.0)),
        }
    }

    fn ty(&self, v: Value) -> Option<&Type> {
        self.f.values.get(v.0 as usize).map(|d| &d.ty)
    }

    fn check_types(&mut self, op: &Op) {
        let name = crate::print::op_name(&op.kind);
        let t = |i: usize| op.args.get(i).and_then(|v| self.ty(*v)).cloned();
        let r = |i: usize| op.results.get(i).and_then(|v| self.ty(*v)).cloned();
        let bad = |cond: bool, what: &str, errs: &mut Vec<String>| {
            if !cond {
                errs.push(format!("`{name}`: {what}"));
            }
        };
        let mut errs = Vec::new();
        match &op.kind {
            OpKind::Bin(_) => {
                let (a, b, c) = (t(0), t(1), r(0));
                bad(op.args.len() == 2 && op.results.len() == 1, "takes 2 operands and has 1 result", &mut errs);
                if let (Some(a), Some(b), Some(c)) = (a, b, c) {
                    bad(a.elem() == b.elem() && c.elem() == a.elem(), "element types differ", &mut errs);
                    let want = if a.is_tile() { a.clone() } else { b.clone() };
                    bad(!(a.is_tile() && b.is_tile()) || a == b, "tile shapes differ", &mut errs);
                    bad(c == want, "result type is not the operand type", &mut errs);
                }
            }
            OpKind::Cmp(_) => {
                bad(
                    t(0).is_some() && t(0) == t(1) && !t(0).unwrap().is_tile(),
                    "compares two scalars of one type",
                    &mut errs,
                );
                bad(r(0) == Some(Type::Scalar(Scalar::Bool)), "result is bool", &mut errs);
            }
            OpKind::Load(ix) | OpKind::LoadInto(ix) | OpKind::Store(ix) | OpKind::AtomicAdd(ix) => {
                let base = usize::from(matches!(op.kind, OpKind::LoadInto(_)));
                match t(base) {
                    Some(Type::Array { rank, mutable, elem }) => {
                        bad(rank as usize == ix.len(), "one index per array dimension", &mut errs);
                        for i in 0..ix.len() {
                            bad(t(base + 1 + i) == Some(Type::Scalar(Scalar::I32)), "indices are i32", &mut errs);
                        }
                        let slices: Vec<u32> =
                            ix.iter().filter_map(|i| if let Index::Slice(k) = i { Some(*k) } else { None }).collect();
                        let want =
                            if slices.is_empty() { Type::Scalar(elem) } else { Type::Tile { elem, shape: slices } };
                        match op.kind {
                            OpKind::Store(_) | OpKind::AtomicAdd(_) => {
                                bad(mutable, "stores go to a mut array", &mut errs);
                                bad(t(1 + ix.len()) == Some(want), "stored value has the slice's type", &mut errs);
                            }
                            OpKind::LoadInto(_) => bad(
                                r(0) == Some(want.clone()) && t(0) == Some(want),
                                "tile and slice types agree",
                                &mut errs,
                            ),
                            _ => bad(r(0) == Some(want), "result has the slice's type", &mut errs),
                        }
                    }
                    _ => errs.push(format!("`{name}`: operand {base} must be an array")),
                }
            }
            OpKind::Outer => {
                let ok = matches!((t(0), t(1), r(0)), (Some(Type::Tile { shape: a, .. }), Some(Type::Tile { shape: b, .. }), Some(Type::Tile { shape: c, .. }))
                    if a.len() == 1 && b.len() == 1 && c == vec![a[0], b[0]]);
                bad(ok, "u: tile<R>, v: tile<C> -> tile<R, C>", &mut errs);
            }
            OpKind::Rank1(_) => {
                let ok = matches!((t(0), t(1), t(2), r(0)), (Some(Type::Tile { shape: c, .. }), Some(Type::Tile { shape: a, .. }), Some(Type::Tile { shape: b, .. }), Some(res))
                    if a.len() == 1 && b.len() == 1 && c == vec![a[0], b[0]] && Some(res.clone()) == t(0));
                bad(ok, "t: tile<R, C>, u: tile<R>, v: tile<C>", &mut errs);
            }
            OpKind::Cholesky => {
                let ok = matches!(t(0), Some(Type::Tile { ref shape, .. }) if shape.len() == 2 && shape[0] == shape[1])
                    && r(0) == t(0);
                bad(ok, "square tile in and out", &mut errs);
            }
            OpKind::Trsm(k) => {
                let ok = matches!((t(0), t(1)), (Some(Type::Tile { shape: l, .. }), Some(Type::Tile { shape: b, .. }))
                    if l.len() == 2 && l[0] == l[1] && if k.left { b[0] == l[0] } else { b.len() == 2 && b[1] == l[0] })
                    && r(0) == t(1);
                bad(ok, "a: tile<N, N>; b: tile<N, M> (left) or tile<M, N> (right); result as b", &mut errs);
            }
            OpKind::Matmul | OpKind::MatmulAcc => {
                let base = usize::from(op.kind == OpKind::MatmulAcc);
                let ok = matches!((t(base), t(base + 1), r(0)), (Some(Type::Tile { shape: a, .. }), Some(Type::Tile { shape: b, .. }), Some(Type::Tile { shape: c, .. }))
                    if a.len() == 2 && a[1] == b[0] && c[0] == a[0] && (b.len() == 1 || c.get(1) == b.get(1)))
                    && (base == 0 || t(0) == r(0));
                bad(ok, "a: tile<M, K>, b: tile<K, N> or tile<K> -> tile<M, N> or tile<M>", &mut errs);
            }
            OpKind::Call(i) => match self.m.funcs.get(*i as usize) {
                Some(callee) => {
                    let ps: Vec<Option<&Type>> = callee.body.params.iter().map(|p| Some(callee.ty(*p))).collect();
                    let args: Vec<Option<&Type>> = op.args.iter().map(|a| self.ty(*a)).collect();
                    bad(ps == args, "argument types match the callee's parameters", &mut errs);
                    let rs: Vec<Option<Type>> = op.results.iter().map(|v| self.ty(*v).cloned()).collect();
                    let want: Vec<Option<Type>> = callee.ret.iter().cloned().map(Some).collect();
                    bad(rs == want, "result types match the callee's return types", &mut errs);
                }
                None => errs.push(format!("`{name}`: no function @{i}")),
            },
            _ => {}
        }
        for v in op.results.iter().chain(&op.args) {
            if let Some(Type::Tile { shape, .. }) = self.ty(*v) {
                if shape.is_empty() || shape.len() > 2 || shape.iter().any(|&d| d == 0 || d > 4096) {
                    errs.push(format!("%{} has an invalid tile shape", v.0));
                }
            }
        }
        self.errors.extend(errs);
    }

    /// Verifies a region; `yields` are the types its `Yield` must have (`None`: no `Yield`
    /// allowed, a function body).
    fn region(&mut self, r: &Region, yields: Option<&[Type]>, scope: &mut Vec<Value>) {
        let mark = scope.len();
        for p in &r.params {
            self.def(*p);
            scope.push(*p);
        }
        for (i, op) in r.ops.iter().enumerate() {
            for a in &op.args {
                if !scope.contains(a) {
                    self.err(format!(
                        "%{} is used by `{}` where its definition does not dominate",
                        a.0,
                        crate::print::op_name(&op.kind)
                    ));
                }
            }
            let last = i + 1 == r.ops.len();
            match op.kind {
                OpKind::Yield => match yields {
                    Some(want) if last => {
                        let got: Vec<Type> = op.args.iter().filter_map(|a| self.ty(*a).cloned()).collect();
                        if got != want {
                            self.err("`yield` types do not match the enclosing op".into());
                        }
                    }
                    _ => self.err("`yield` is not the last op of a structured region".into()),
                },
                OpKind::Return if !last => self.err("`return` is not the last op of its region".into()),
                _ => {}
            }
            self.check_types(op);
            self.structured(op, scope);
            for res in &op.results {
                self.def(*res);
                scope.push(*res);
            }
        }
        let ends = r.ops.last().map(|o| &o.kind);
        if yields.is_some() && !matches!(ends, Some(OpKind::Yield) | Some(OpKind::Return)) {
            self.err("a structured region does not end with `yield` or `return`".into());
        }
        scope.truncate(mark);
    }

    fn structured(&mut self, op: &Op, scope: &mut Vec<Value>) {
        let tys = |vs: &[Value], s: &Self| -> Vec<Type> { vs.iter().filter_map(|v| s.ty(*v).cloned()).collect() };
        let res = tys(&op.results, self);
        match op.kind {
            OpKind::For => {
                if op.args.len() < 3 || op.regions.len() != 1 {
                    self.err("`for` takes lo, hi, step and one region".into());
                    return;
                }
                let iv = self.ty(op.args[0]).cloned();
                if !matches!(iv, Some(Type::Scalar(Scalar::I32 | Scalar::I64)))
                    || self.ty(op.args[1]).cloned() != iv
                    || self.ty(op.args[2]).cloned() != iv
                {
                    self.err("`for` bounds are one integer type".into());
                }
                let inits = tys(&op.args[3..], self);
                let params = tys(&op.regions[0].params, self);
                if inits != res || params.first().cloned() != iv || params[1..] != res[..] {
                    self.err("`for` carried types differ between inits, params and results".into());
                }
                self.region(&op.regions[0], Some(&res), scope);
            }
            OpKind::If => {
                if op.regions.len() != 2 || self.ty(op.args[0]) != Some(&Type::Scalar(Scalar::Bool)) {
                    self.err("`if` takes a bool and two regions".into());
                    return;
                }
                self.region(&op.regions[0], Some(&res), scope);
                self.region(&op.regions[1], Some(&res), scope);
            }
            OpKind::While => {
                if op.regions.len() != 2 {
                    self.err("`while` has two regions".into());
                    return;
                }
                let inits = tys(&op.args, self);
                if inits != res {
                    self.err("`while` carried types differ".into());
                }
                self.region(&op.regions[0], Some(&[Type::Scalar(Scalar::Bool)]), scope);
                self.region(&op.regions[1], Some(&res), scope);
            }
            OpKind::Map => {
                let ins: Vec<Option<Type>> = op.args.iter().map(|a| self.ty(*a).cloned()).collect();
                let Some(Type::Tile { elem: b, shape: sb }) = res.first().cloned() else {
                    self.err("`map` gives a tile".into());
                    return;
                };
                let mut want = Vec::new();
                for t in &ins {
                    match t {
                        Some(Type::Tile { elem, shape }) if *shape == sb => want.push(Type::Scalar(*elem)),
                        _ => {
                            self.err("`map` takes tiles of its result's shape".into());
                            return;
                        }
                    }
                }
                let params = tys(op.regions.first().map_or(&[][..], |r| &r.params[..]), self);
                if op.regions.len() != 1 || want.is_empty() || params != want {
                    self.err("`map` has one region with one scalar parameter per tile, of its element type".into());
                    return;
                }
                self.region(&op.regions[0], Some(&[Type::Scalar(b)]), scope);
            }
            _ => {
                if !op.regions.is_empty() {
                    self.err(format!("`{}` has regions", crate::print::op_name(&op.kind)));
                }
            }
        }
    }
}

/// Verifies every function of a module. Returns every violated invariant.
pub fn verify(m: &Module) -> Result<(), Vec<VerifyError>> {
    let mut out = Vec::new();
    for f in &m.funcs {
        let mut v = V { m, f, defined: vec![false; f.values.len()], errors: Vec::new() };
        let mut scope = Vec::new();
        v.region(&f.body, None, &mut scope);
        match f.body.ops.last() {
            Some(op) if op.kind == OpKind::Return => {
                let got: Vec<Type> = op.args.iter().filter_map(|a| v.ty(*a).cloned()).collect();
                if got != f.ret && f.kind != FuncKind::Kernel {
                    v.err("`return` operands do not match the function's return types".into());
                }
            }
            _ => v.err("the function body does not end with `return`".into()),
        }
        out.extend(v.errors.into_iter().map(|message| VerifyError { func: f.name.clone(), message }));
    }
    if out.is_empty() {
        Ok(())
    } else {
        Err(out)
    }
}
