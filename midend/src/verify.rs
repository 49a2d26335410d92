//! The IR verifier, run after every pass in tests and in debug builds of the driver.
//!
//! Invariants checked:
//! 1. SSA: every value is defined once (as an op result or a region parameter) and every use
//!    is dominated by its definition: earlier in the same region or in an enclosing region.
//! 2. Every value index is inside the function's value arena.
//! 3. Operand counts and types: arithmetic operands agree in element type and tile shape (or
//!    broadcast a scalar); comparisons, selects and conditions take scalars; loads and stores
//!    take one `i32` index per array dimension; `Store` targets a `mut` array; `Cholesky`, `Lu` and
//!    `Trsm` take a square (triangular) tile; `Outer`, `Rank1`, `Matmul`, `MatmulAcc` shapes compose;
//!    the block of `ExtractBlock` and `InsertBlock` lies inside the tile, of its rank and type;
//!    `Broadcast`'s operand dimensions are the result's last ones, or 1;
//!    `Map`'s region maps one element to one element of the result's type; `Print` and
//!    `Assert` name a debug site of the module and have its operand types (a `bool` for
//!    `Assert`).
//! 4. Structured control flow: `For` has an `i32`/`i64` induction variable and carried values
//!    whose types match its inits, region parameters and results; `If` and `While` likewise;
//!    every region of a `For`, `If` or `While` ends with `Yield` of the right types, or with
//!    `Return`; `Yield` appears only as the last op of such a region.
//! 5. A function body ends with `Return` whose operands match `Function::ret`.
//! 6. `Call` refers to an existing function defined before the caller (so `inline` can inline
//!    callees first), with matching parameter and result types (a `mut` array may be passed
//!    for a read-only array parameter).
//! 7. Tile extents are between 1 and 4096 and tiles have rank 1 or 2. No value has a
//!    small-matrix type and no op is `MatBuild` or `MatPart`: the frontend's `mats::lower`
//!    has replaced them by their entries.
//!
//! [`verify_simt`] checks a kernel in SIMT form: these invariants and those of the SIMT form
//! (8-11 in its docs). Every error carries the location of the op where it was found.

use crate::ir::*;
use crate::types::{Scalar, Type};
use std::fmt;

/// A violated invariant, with the function where it was found and the source location of
/// the op (`None` for the function as a whole, or an op the frontend gave no location).
#[derive(Debug, Clone, PartialEq)]
pub struct VerifyError {
    pub func: String,
    pub message: String,
    pub loc: Option<Loc>,
}

impl fmt::Display for VerifyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "IR verifier: in @{}: {}", self.func, self.message)?;
        if let Some(l) = self.loc {
            write!(f, " (source bytes {}..{})", l.start, l.end)?;
        }
        Ok(())
    }
}

struct V<'a> {
    /// The module, for `Call`s (`None` for a SIMT kernel, which has none).
    m: Option<&'a Module>,
    /// The function's index in the module: a callee must come earlier (`inline` relies on it).
    index: usize,
    f: &'a Function,
    defined: Vec<bool>,
    errors: Vec<(String, Option<Loc>)>,
    /// The location of the op being checked.
    at: Option<Loc>,
}

impl V<'_> {
    fn err(&mut self, msg: String) {
        self.errors.push((msg, self.at));
    }

    fn def(&mut self, v: Value) {
        match self.defined.get_mut(v.0 as usize) {
            Some(d) if !*d => *d = true,
            Some(_) => self.err(format!("%{} is defined twice", v.0)),
            None => self.err(format!("%{} is outside the value arena", v.0)),
        }
        if let Some(t @ Type::Mat { .. }) = self.ty(v) {
            let msg = format!("%{} has the small-matrix type {t}, which `mats::lower` removes", v.0);
            self.err(msg);
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
        // `f16` and `bf16` are storage types: only arrays have them.
        for v in &op.results {
            if matches!(self.ty(*v), Some(Type::Scalar(s) | Type::Tile { elem: s, .. }) if s.is_half()) {
                errs.push(format!("`{name}`: only arrays have the storage types f16 and bf16"));
            }
        }
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
            OpKind::Un(UnOp::RoundF16 | UnOp::RoundBf16) => {
                bad(op.args.len() == 1 && t(0) == r(0), "takes 1 operand of the result's type", &mut errs);
                bad(t(0).is_some_and(|t| t.elem() == Scalar::F32), "rounds f32 values", &mut errs);
            }
            OpKind::AtomicRmw(k) => match t(0) {
                Some(Type::Array { rank, mutable, elem }) => {
                    let n = rank as usize;
                    let vals = if *k == Rmw::Cas { 2 } else { 1 };
                    bad(mutable, "atomics go to a mut array", &mut errs);
                    bad(
                        elem.is_float() || elem.is_half() || elem.is_int(),
                        "atomics on float and integer arrays",
                        &mut errs,
                    );
                    bad(
                        op.args.len() == 1 + n + vals,
                        "takes the array, one index per dimension and the operands",
                        &mut errs,
                    );
                    for i in 0..n {
                        bad(t(1 + i) == Some(Type::Scalar(Scalar::I32)), "indices are i32", &mut errs);
                    }
                    for j in 0..vals {
                        bad(
                            t(1 + n + j) == Some(Type::Scalar(elem.compute())),
                            "operands have the element's compute type",
                            &mut errs,
                        );
                    }
                    bad(
                        r(0) == Some(Type::Scalar(elem.compute())) && op.results.len() == 1,
                        "result is the old element",
                        &mut errs,
                    );
                }
                _ => errs.push(format!("`{name}`: operand 0 must be an array")),
            },
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
                        // Storage types load and store as their compute type.
                        let c = elem.compute();
                        let want =
                            if slices.is_empty() { Type::Scalar(c) } else { Type::Tile { elem: c, shape: slices } };
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
            OpKind::Reshape => {
                let ok = match (t(0), r(0)) {
                    (Some(Type::Tile { elem: a, shape: sa }), Some(Type::Tile { elem: b, shape: sb })) => {
                        a == b && sa.iter().product::<u32>() == sb.iter().product::<u32>()
                    }
                    _ => false,
                };
                bad(ok, "a tile in, a tile of its element type and count out", &mut errs);
            }
            OpKind::Scan(_, axis) | OpKind::Flip(axis) => {
                let ok = matches!(t(0), Some(Type::Tile { ref shape, .. }) if (*axis as usize) < shape.len())
                    && r(0) == t(0);
                bad(ok, "a tile in, the same type out, an axis below its rank", &mut errs);
            }
            OpKind::StoreMasked(ix) => match t(0) {
                Some(Type::Array { rank, mutable, elem }) => {
                    let n = ix.len();
                    bad(
                        rank as usize == n && op.args.len() == n + 3,
                        "array, one index per dimension, value, mask",
                        &mut errs,
                    );
                    bad(mutable, "stores go to a mut array", &mut errs);
                    let slices: Vec<u32> =
                        ix.iter().filter_map(|i| if let Index::Slice(k) = i { Some(*k) } else { None }).collect();
                    let want = Type::Tile { elem: elem.compute(), shape: slices.clone() };
                    bad(
                        !slices.is_empty() && t(1 + n) == Some(want),
                        "stored value has the slice's tile type",
                        &mut errs,
                    );
                    bad(
                        t(2 + n) == Some(Type::Tile { elem: Scalar::Bool, shape: slices }),
                        "the mask is a bool tile of the value's shape",
                        &mut errs,
                    );
                }
                _ => errs.push(format!("`{name}`: operand 0 must be an array")),
            },
            OpKind::ExtractBlock(at) | OpKind::InsertBlock(at) => {
                let insert = matches!(op.kind, OpKind::InsertBlock(_));
                let block = if insert { t(1) } else { r(0) };
                let ok = matches!((t(0), block), (Some(Type::Tile { elem: e, shape: s }), Some(Type::Tile { elem: be, shape: b }))
                    if e == be && s.len() == b.len() && at.len() == s.len()
                        && at.iter().zip(&b).zip(&s).all(|((o, k), n)| o.checked_add(*k).is_some_and(|e| e <= *n)))
                    && (!insert || r(0) == t(0))
                    && op.args.len() == 1 + usize::from(insert);
                bad(
                    ok,
                    "a block of the tile's rank and element type, inside it, at one offset per dimension",
                    &mut errs,
                );
            }
            OpKind::ExtractLine(d) | OpKind::InsertLine(d) => {
                let insert = matches!(op.kind, OpKind::InsertLine(_));
                let line = if insert { t(2) } else { r(0) };
                let ok = matches!((t(0), line), (Some(Type::Tile { elem: e, shape: s }), Some(Type::Tile { elem: le, shape: l }))
                    if e == le && s.len() == 2 && *d < 2 && l == vec![s[1 - *d as usize]])
                    && t(1) == Some(Type::Scalar(Scalar::I32))
                    && (!insert || r(0) == t(0))
                    && op.args.len() == 2 + usize::from(insert);
                bad(ok, "a matrix tile, an i32 index and a line of the tile's element type and length", &mut errs);
            }
            OpKind::Broadcast => {
                let ok = matches!((t(0), r(0)), (Some(Type::Tile { elem: e, shape: s }), Some(Type::Tile { elem: re, shape: rs }))
                    if e == re && s.len() <= rs.len() && op.args.len() == 1
                        && s.iter().rev().zip(rs.iter().rev()).all(|(a, b)| a == b || *a == 1));
                bad(ok, "a tile whose dimensions are the result's last ones, or 1", &mut errs);
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
            OpKind::Lu => {
                let ok = matches!(t(0), Some(Type::Tile { ref shape, .. }) if shape.len() == 2 && shape[0] == shape[1])
                    && r(0) == t(0)
                    && op.args.len() == 1;
                bad(ok, "square tile in and out", &mut errs);
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
            OpKind::MatBuild | OpKind::MatPart(_) => {
                errs.push(format!("`{name}` is frontend-only (`mats::lower` removes it)"));
            }
            OpKind::Print(i) | OpKind::Assert(i) => {
                let site = self.m.and_then(|m| m.debug.get(*i as usize));
                bad(op.results.is_empty(), "has no result", &mut errs);
                match (&op.kind, site) {
                    (_, None) if self.m.is_some_and(|m| !m.debug.is_empty()) => {
                        errs.push(format!("`{name}`: no debug site {i}"))
                    }
                    (OpKind::Assert(_), _) => {
                        bad(t(0) == Some(Type::Scalar(Scalar::Bool)) && op.args.len() == 1, "takes a bool", &mut errs)
                    }
                    (_, Some(site)) => {
                        let tys: Vec<Option<Type>> = (0..op.args.len()).map(t).collect();
                        let want: Vec<Option<Type>> = site.values.iter().cloned().map(Some).collect();
                        bad(tys == want, "operands have the site's types", &mut errs);
                    }
                    _ => {}
                }
            }
            OpKind::Call(i) => match self.m.and_then(|m| m.funcs.get(i.index())) {
                Some(_) if i.index() >= self.index => {
                    errs.push(format!("`{name}`: @{i} is not defined before the caller @{}", self.index))
                }
                Some(callee) => {
                    let ps: Vec<&Type> = callee.body.params.iter().map(|p| callee.ty(*p)).collect();
                    let args: Vec<Option<&Type>> = op.args.iter().map(|a| self.ty(*a)).collect();
                    let fits =
                        ps.len() == args.len() && ps.iter().zip(&args).all(|(p, a)| a.is_some_and(|a| a.passes_as(p)));
                    bad(fits, "argument types match the callee's parameters", &mut errs);
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
                if shape.is_empty() || shape.len() > 2 || shape.iter().any(|&d| d == 0 || d > crate::MAX_TILE_EXTENT) {
                    errs.push(format!("%{} has an invalid tile shape", v.0));
                }
            }
        }
        let at = self.at;
        self.errors.extend(errs.into_iter().map(|e| (e, at)));
    }

    /// Verifies a region; `yields` are the types its `Yield` must have (`None`: no `Yield`
    /// allowed, a function body).
    fn region(&mut self, r: &Region, yields: Option<&[Type]>, scope: &mut Scope) {
        let mark = scope.len();
        for p in &r.params {
            self.def(*p);
            scope.push(*p);
        }
        for (i, op) in r.ops.iter().enumerate() {
            self.at = (op.loc != Loc::default()).then_some(op.loc);
            for a in &op.args {
                if !scope.contains(*a) {
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
            self.at = (op.loc != Loc::default()).then_some(op.loc);
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

    fn structured(&mut self, op: &Op, scope: &mut Scope) {
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

/// The values in scope at an op: a stack (regions pop what they pushed) with a count per
/// value, so that checking an operand is O(1) (SIMT kernels have 10^5-10^6 values); a count,
/// not a flag, so that a value defined twice (an error reported elsewhere) stays in scope
/// until its outer definition's region ends, as with a search of the stack.
struct Scope {
    stack: Vec<Value>,
    live: Vec<u32>,
}

impl Scope {
    fn push(&mut self, v: Value) {
        self.stack.push(v);
        if let Some(l) = self.live.get_mut(v.0 as usize) {
            *l += 1;
        }
    }

    fn contains(&self, v: Value) -> bool {
        self.live.get(v.0 as usize).is_some_and(|&n| n > 0)
    }

    fn len(&self) -> usize {
        self.stack.len()
    }

    fn truncate(&mut self, mark: usize) {
        for v in self.stack.drain(mark..) {
            if let Some(l) = self.live.get_mut(v.0 as usize) {
                *l -= 1;
            }
        }
    }
}

/// Verifies one function (`m` resolves its calls).
fn verify_function(m: Option<&Module>, index: usize, f: &Function) -> Vec<VerifyError> {
    let mut v = V { m, index, f, defined: vec![false; f.values.len()], errors: Vec::new(), at: None };
    let mut scope = Scope { stack: Vec::new(), live: vec![0; f.values.len()] };
    v.region(&f.body, None, &mut scope);
    v.at = None;
    match f.body.ops.last() {
        Some(op) if op.kind == OpKind::Return => {
            let got: Vec<Type> = op.args.iter().filter_map(|a| v.ty(*a).cloned()).collect();
            if got != f.ret && f.kind != FuncKind::Kernel {
                v.err("`return` operands do not match the function's return types".into());
            }
        }
        _ => v.err("the function body does not end with `return`".into()),
    }
    v.errors.into_iter().map(|(message, loc)| VerifyError { func: f.name.clone(), message, loc }).collect()
}

/// Verifies every function of a module. Returns every violated invariant.
pub fn verify(m: &Module) -> Result<(), Vec<VerifyError>> {
    let out: Vec<VerifyError> = m.funcs.iter().enumerate().flat_map(|(i, f)| verify_function(Some(m), i, f)).collect();
    if out.is_empty() {
        Ok(())
    } else {
        Err(out)
    }
}

/// Verifies a kernel in SIMT form (`crate::simt`), as both GPU backends expect it: the
/// invariants of [`verify`] (SSA, operand types, structured control flow), and
///
/// 8. no tile types: every value is a per-lane scalar or an array;
/// 9. only the ops of the SIMT form (`crate::simt` module docs): scalar arithmetic, `LaneId`,
///    `Shuffle`, memory ops with one `Index::At` per dimension, shared arrays, barriers and
///    structured control flow; no float `Min`/`Max`/`Rem` (`simt/numerics.rs` writes them
///    out) and no `f64` transcendental `Un` (`simt/math.rs` expands them);
/// 10. `LaneId` gives an `i32`; `Shuffle(x, src)` takes a scalar and an `i32` lane and gives
///     `x`'s type;
/// 11. the function's parameters are the kernel's, in order and of its types.
pub fn verify_simt(k: &crate::simt::SimtKernel) -> Result<(), Vec<VerifyError>> {
    let f = &k.func;
    let mut out = verify_function(None, 0, f);
    let mut push = |message: String, loc: Loc| {
        out.push(VerifyError { func: f.name.clone(), message, loc: (loc != Loc::default()).then_some(loc) })
    };
    let params = f.params();
    if params.len() != k.kernel.params.len()
        || params.iter().zip(&k.kernel.params).any(|(v, p)| match (&p.kind, f.ty(*v)) {
            (ParamKind::Array { elem, dims, mutable, .. }, Type::Array { elem: e, rank, mutable: m }) => {
                (elem, dims.len(), mutable) != (e, *rank as usize, m)
            }
            (ParamKind::Scalar(s), Type::Scalar(t)) => s != t,
            _ => true,
        })
    {
        push("the parameters are not the kernel's".into(), Loc::default());
    }
    for (i, d) in f.values.iter().enumerate() {
        if d.ty.is_tile() {
            push(format!("%{i} has tile type {}: not allowed in SIMT form", d.ty), Loc::default());
        }
    }
    fn walk(f: &Function, r: &Region, push: &mut dyn FnMut(String, Loc)) {
        for op in &r.ops {
            let name = crate::print::op_name(&op.kind);
            let elem = |v: &Value| match f.ty(*v) {
                Type::Scalar(s) => Some(*s),
                _ => None,
            };
            let res = op.results.first().and_then(elem);
            let ok = match &op.kind {
                OpKind::Const(_)
                | OpKind::Cmp(_)
                | OpKind::Cast(_)
                | OpKind::Bitcast(_)
                | OpKind::Select
                | OpKind::Fma
                | OpKind::ProgramId(_)
                | OpKind::NumPrograms(_)
                | OpKind::Dim(_)
                | OpKind::AllocShared(_)
                | OpKind::Barrier
                | OpKind::For
                | OpKind::If
                | OpKind::While
                | OpKind::Yield
                | OpKind::Return => Ok(()),
                OpKind::Bin(BinOp::Min | BinOp::Max | BinOp::Rem) if res.is_some_and(|s| s.is_float()) => {
                    Err("float `min`, `max` and `rem` are written out before SIMT form (simt/numerics.rs)".to_string())
                }
                OpKind::Bin(_) => Ok(()),
                OpKind::Un(UnOp::Exp | UnOp::Log | UnOp::Sin | UnOp::Cos | UnOp::Tanh | UnOp::Exp2 | UnOp::Log2)
                    if res == Some(Scalar::F64) =>
                {
                    Err("`f64` transcendental functions are expanded before SIMT form (simt/math.rs)".to_string())
                }
                OpKind::Un(_) => Ok(()),
                OpKind::LaneId if op.args.is_empty() && res == Some(Scalar::I32) => Ok(()),
                OpKind::LaneId => Err("takes nothing and gives an `i32`".to_string()),
                OpKind::Shuffle
                    if op.args.len() == 2
                        && res.is_some()
                        && res == elem(&op.args[0])
                        && elem(&op.args[1]) == Some(Scalar::I32) =>
                {
                    Ok(())
                }
                OpKind::Shuffle => Err("takes a scalar and an `i32` lane, and gives the scalar's type".to_string()),
                OpKind::AtomicRmw(_) => Ok(()),
                OpKind::Load(ix) | OpKind::LoadInto(ix) | OpKind::Store(ix) | OpKind::AtomicAdd(ix) => {
                    if ix.iter().all(|i| matches!(i, Index::At)) {
                        Ok(())
                    } else {
                        Err("memory ops take one scalar index per dimension (no slices)".to_string())
                    }
                }
                other => Err(format!("`{}` is not an op of the SIMT form", crate::print::op_name(other))),
            };
            if let Err(why) = ok {
                push(format!("`{name}`: {why}"), op.loc);
            }
            for reg in &op.regions {
                walk(f, reg, push);
            }
        }
    }
    walk(f, &f.body, &mut push);
    if out.is_empty() {
        Ok(())
    } else {
        Err(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::simt::SimtKernel;

    /// Builds a SIMT kernel `k(O: mut f32[N])` by hand; op `i` gets location `10 i .. 10 i + 5`.
    struct B {
        f: Function,
    }

    impl B {
        fn new() -> B {
            let mut f = Function::new("k__simt4", FuncKind::Kernel);
            let o = f.new_value(Type::Array { elem: Scalar::F32, rank: 1, mutable: true });
            f.body.params.push(o);
            B { f }
        }

        fn op(&mut self, kind: OpKind, args: &[Value], ty: Option<Type>) -> Value {
            let at = 10 * self.f.body.ops.len() as u32;
            let results: Vec<Value> = ty.map(|t| self.f.new_value(t)).into_iter().collect();
            let r = results.first().copied().unwrap_or(Value(u32::MAX));
            self.f.body.ops.push(Op {
                kind,
                args: args.to_vec(),
                results,
                regions: vec![],
                loc: Loc { start: at, end: at + 5, file: 0 },
            });
            r
        }

        fn scalar(&mut self, kind: OpKind, args: &[Value], s: Scalar) -> Value {
            self.op(kind, args, Some(Type::Scalar(s)))
        }

        /// `lane = lane_id; x = shuffle(1.5, lane); O[lane] = x`, then `extra`, then `return`.
        fn kernel(mut self, extra: impl FnOnce(&mut B)) -> SimtKernel {
            let o = self.f.params()[0];
            let lane = self.scalar(OpKind::LaneId, &[], Scalar::I32);
            let c = self.scalar(OpKind::Const(Const::Float(1.5, Scalar::F32)), &[], Scalar::F32);
            let x = self.scalar(OpKind::Shuffle, &[c, lane], Scalar::F32);
            self.op(OpKind::Store(vec![Index::At]), &[o, lane, x], None);
            extra(&mut self);
            self.op(OpKind::Return, &[], None);
            let params = vec![KernelParam {
                name: "O".into(),
                kind: ParamKind::Array {
                    elem: Scalar::F32,
                    dims: vec![Dim::Var("N".into())],
                    mutable: true,
                    optional: false,
                },
            }];
            SimtKernel {
                kernel: Kernel {
                    name: "k".into(),
                    symbol: "k".into(),
                    params,
                    body: FuncId(0),
                    launch: FuncId(0),
                    grid_rank: 1,
                    block: None,
                    has_flops: false,
                    doc: None,
                    loc: Loc::default(),
                },
                func: self.f,
                lanes: 4,
                shared_bytes: 0,
            }
        }
    }

    /// The first error of `k`, which must fail verification.
    fn first_error(k: &SimtKernel) -> VerifyError {
        verify_simt(k).expect_err("the verifier accepts a broken kernel").remove(0)
    }

    fn f32c(b: &mut B, v: f64) -> Value {
        b.scalar(OpKind::Const(Const::Float(v, Scalar::F32)), &[], Scalar::F32)
    }

    #[test]
    fn a_well_formed_simt_kernel_passes() {
        assert_eq!(verify_simt(&B::new().kernel(|_| {})), Ok(()));
    }

    #[test]
    fn a_shuffle_from_a_float_lane_is_rejected_at_its_location() {
        let k = B::new().kernel(|b| {
            let x = f32c(b, 2.0);
            b.scalar(OpKind::Shuffle, &[x, x], Scalar::F32);
        });
        let e = first_error(&k);
        assert!(e.message.contains("`shuffle`") && e.message.contains("i32"), "{e}");
        assert_eq!(e.loc, Some(Loc { start: 50, end: 55, file: 0 }), "{e}");
    }

    #[test]
    fn float_min_and_f64_exp_are_not_simt_form() {
        let k = B::new().kernel(|b| {
            let x = f32c(b, 2.0);
            b.scalar(OpKind::Bin(BinOp::Min), &[x, x], Scalar::F32);
        });
        assert!(first_error(&k).message.contains("written out"), "{}", first_error(&k));
        let k = B::new().kernel(|b| {
            let x = b.scalar(OpKind::Const(Const::Float(1.0, Scalar::F64)), &[], Scalar::F64);
            b.scalar(OpKind::Un(UnOp::Exp), &[x], Scalar::F64);
        });
        let e = first_error(&k);
        assert!(e.message.contains("expanded"), "{e}");
        assert_eq!(e.loc, Some(Loc { start: 50, end: 55, file: 0 }));
    }

    #[test]
    fn tiles_slices_and_tile_ops_are_rejected() {
        let k = B::new().kernel(|b| {
            b.op(OpKind::Fill(Fill::Zeros), &[], Some(Type::Tile { elem: Scalar::F32, shape: vec![4] }));
        });
        let errs = verify_simt(&k).unwrap_err();
        assert!(errs.iter().any(|e| e.message.contains("tile type")), "{errs:?}");
        assert!(errs.iter().any(|e| e.message.contains("not an op of the SIMT form") && e.loc.is_some()), "{errs:?}");
        let k = B::new().kernel(|b| {
            let o = b.f.params()[0];
            let z = b.scalar(OpKind::Const(Const::Int(0, Scalar::I32)), &[], Scalar::I32);
            b.op(OpKind::Load(vec![Index::Slice(4)]), &[o, z], Some(Type::Tile { elem: Scalar::F32, shape: vec![4] }));
        });
        let errs = verify_simt(&k).unwrap_err();
        assert!(
            errs.iter().any(|e| e.message.contains("no slices") && e.loc == Some(Loc { start: 50, end: 55, file: 0 })),
            "{errs:?}"
        );
    }

    #[test]
    fn a_use_before_its_definition_is_rejected_with_the_user_s_location() {
        let k = B::new().kernel(|b| {
            let later = Value(b.f.values.len() as u32 + 1);
            b.scalar(OpKind::Un(UnOp::Neg), &[later], Scalar::F32);
            f32c(b, 1.0);
        });
        let e = first_error(&k);
        assert!(e.message.contains("does not dominate"), "{e}");
        assert_eq!(e.loc, Some(Loc { start: 40, end: 45, file: 0 }));
    }

    #[test]
    fn parameters_must_be_the_kernel_s() {
        let mut k = B::new().kernel(|_| {});
        k.kernel.params[0].kind = ParamKind::Scalar(Scalar::F32);
        assert!(first_error(&k).message.contains("parameters"));
    }

    #[test]
    fn a_call_of_a_later_function_is_rejected() {
        let m = crate::parse::parse_module(
            "kernel @k(%0: f32) {\n  %1 = call @1 %0 : f32\n  return\n}\nfn @f(%0: f32) -> (f32) {\n  return %0\n}\n",
        )
        .expect("parses");
        let e = verify(&m).unwrap_err();
        assert!(e[0].message.contains("not defined before the caller"), "{e:?}");
    }
}
