//! Pass `block-rank1` (run by the LLVM CPU backend on its own copy of a kernel): a loop of
//! rank-1 updates whose vectors are read from global or shared arrays at the loop variable,
//!
//! ```text
//! %t = for %lo, %hi, 1, %t0 { ^(%c: i32, %acc)
//!   %u = load[.., +R, .., i, ..] %A, .., %c, ..     // a column or row of A, at %c
//!   %v = load[.., +C, .., i, ..] %B, .., %c, ..
//!   %n = rank1 alpha %acc, %u, %v
//!   yield %n
//! }
//! ```
//!
//! (the potrf idiom `for c in 0..k0 { t -= outer(A[b, i0:i0+16, c], A[b, k0:k0+16, c]) }`;
//! the body may also hold scalar ops that do not depend on `%c`, such as constant indices,
//! which are copied before the new loop), becomes tile products over blocks of [`K`] values of the loop variable, then the original
//! loop for the rest:
//!
//! ```text
//! %mid = lo + max(hi - lo, 0) / K * K                       // in i64, no overflow
//! %t1 = for %lo, %mid, K, %t0 { ^(%cb: i32, %acc)
//!   %U = load[.., +R, .., +K, ..] %A, .., %cb, ..           // transposed to R x K if needed
//!   %V = load[.., +C, .., +K, ..] %B, .., %cb, ..           // transposed to K x C if needed
//!   %n = matmul_acc %acc, alpha * %U, %V                    // alpha = -1: `neg %U`
//!   yield %n
//! }
//! %t = for %mid, %hi, 1, %t1 { the original body }
//! ```
//!
//! The results keep their bits: `rank1` is one fused multiply-add of `alpha*u[i]` (exact for
//! alpha = -1 or 1, the only values `simplify` makes), `v[j]` and `acc[i, j]`, and
//! `matmul_acc` adds `U[i, k] * V[k, j]` to `acc[i, j]` one `k` at a time in the same way, in
//! the loop's order; elements outside an array read as zero in both forms. On the CPU a tile
//! product keeps rows of the accumulator in registers across `K` updates, where a rank-1
//! update reads and writes the whole tile each time (potrf 4096 x 92 f32 with LLVM, this
//! machine: 48.7 -> 36-37 ms). GPU lowerings keep the rank-1 form, their shuffle idiom.

use crate::ir::*;
use crate::types::{Scalar, Type};
use std::collections::HashMap;

/// Values of the loop variable per tile product.
pub const K: u32 = 16;

/// One matched rank-1 loop.
struct Rank1Loop {
    alpha: f64,
    /// Indices in the body of the loads of `u` and `v` (equal when `u` is `v`).
    u: usize,
    v: usize,
}

/// Runs the pass over every function of a module.
pub fn run(m: &mut Module) {
    for f in &mut m.funcs {
        run_function(f);
    }
}

/// Runs the pass over one function.
pub fn run_function(f: &mut Function) {
    let mut consts = HashMap::new();
    collect_consts(&f.body, &mut consts);
    let mut body = std::mem::take(&mut f.body);
    rewrite(&mut body, f, &consts);
    f.body = body;
}

fn collect_consts(r: &Region, out: &mut HashMap<Value, Const>) {
    for op in &r.ops {
        if let OpKind::Const(c) = op.kind {
            out.insert(op.results[0], c);
        }
        for reg in &op.regions {
            collect_consts(reg, out);
        }
    }
}

fn rewrite(r: &mut Region, f: &mut Function, consts: &HashMap<Value, Const>) {
    let mut i = 0;
    while i < r.ops.len() {
        for reg in &mut r.ops[i].regions {
            rewrite(reg, f, consts);
        }
        match matches(&r.ops[i], f, consts) {
            Some(m) => {
                let original = r.ops.remove(i);
                let new = blocked(original, &m, f);
                let n = new.len();
                r.ops.splice(i..i, new);
                i += n;
            }
            None => i += 1,
        }
    }
}

/// The position of the loop variable among a load's indices, which must be an `At` index
/// used nowhere else in the load, and of its one `Slice`.
fn positions(op: &Op, iv: Value) -> Option<(usize, usize)> {
    let OpKind::Load(idx) = &op.kind else { return None };
    if op.args[0] == iv || op.args[1..].iter().filter(|a| **a == iv).count() != 1 {
        return None;
    }
    let p = op.args[1..].iter().position(|a| *a == iv)?;
    let mut slices = idx.iter().enumerate().filter(|(_, d)| matches!(d, Index::Slice(_)));
    let (s, _) = slices.next()?;
    (slices.next().is_none() && idx[p] == Index::At).then_some((p, s))
}

/// Whether `op` is a pure scalar op that a matched body may hold besides its loads (index
/// arithmetic on values from outside the loop; copied out of it by [`blocked`]).
fn is_invariant_scalar(op: &Op, inside: &[Value], f: &Function) -> bool {
    matches!(op.kind, OpKind::Const(_) | OpKind::Bin(_) | OpKind::Cast(_) | OpKind::Cmp(_) | OpKind::Select)
        && op.regions.is_empty()
        && op.results.len() == 1
        && matches!(f.ty(op.results[0]), Type::Scalar(_))
        && op.args.iter().all(|a| !inside.contains(a))
}

fn matches(op: &Op, f: &Function, consts: &HashMap<Value, Const>) -> Option<Rank1Loop> {
    if op.kind != OpKind::For || op.args.len() != 4 || op.results.len() != 1 {
        return None;
    }
    if !matches!(consts.get(&op.args[2]), Some(Const::Int(1, _))) {
        return None;
    }
    let body = op.regions.first()?;
    let [iv, acc] = body.params[..] else { return None };
    let Type::Tile { elem: Scalar::F32 | Scalar::F64, shape } = f.ty(acc) else { return None };
    if shape.len() != 2 || *f.ty(iv) != Type::Scalar(Scalar::I32) {
        return None;
    }
    let n = body.ops.len();
    if n < 3 {
        return None;
    }
    let (upd, y) = (&body.ops[n - 2], &body.ops[n - 1]);
    let OpKind::Rank1(alpha) = upd.kind else { return None };
    if (alpha != 1.0 && alpha != -1.0) || upd.args[0] != acc || y.kind != OpKind::Yield || y.args != upd.results {
        return None;
    }
    // The body's other ops: loads of the loop variable, and scalar ops that do not depend on
    // it (the loads' other indices: `0`, `i0 + 16`).
    // `inside`: the values that vary with the iteration (the invariant ops' results do not,
    // so chains such as `const 1; add %i0, %1` are accepted, and copied in order).
    let mut loads = Vec::new();
    let mut inside = vec![iv, acc];
    for (i, o) in body.ops[..n - 2].iter().enumerate() {
        if positions(o, iv).is_some() {
            loads.push(i);
            inside.extend(&o.results);
        } else if !is_invariant_scalar(o, &inside, f) {
            return None;
        }
    }
    let find = |v: Value| loads.iter().copied().find(|&i| body.ops[i].results == [v]);
    let (u, v) = (find(upd.args[1])?, find(upd.args[2])?);
    // The blocks are tiles of the accumulator's element type.
    if [u, v].iter().any(|&i| f.ty(body.ops[i].results[0]).elem() != f.ty(acc).elem()) {
        return None;
    }
    // No load other than those of u and v.
    let expected = if u == v { 1 } else { 2 };
    (loads.len() == expected).then_some(Rank1Loop { alpha, u, v })
}

/// Appends `op` with one new result of type `ty` to `ops`; returns the result.
fn push(ops: &mut Vec<Op>, f: &mut Function, kind: OpKind, args: Vec<Value>, ty: Type, loc: Loc) -> Value {
    let r = f.new_value(ty);
    ops.push(Op { kind, args, results: vec![r], regions: vec![], loc });
    r
}

/// The ops that replace the matched loop `op`: the bound of the blocks, the loop of tile
/// products, and `op` itself over the rest.
fn blocked(mut op: Op, m: &Rank1Loop, f: &mut Function) -> Vec<Op> {
    let loc = op.loc;
    let (lo, hi, init) = (op.args[0], op.args[1], op.args[3]);
    let (i32t, i64t) = (Type::Scalar(Scalar::I32), Type::Scalar(Scalar::I64));
    let acc_ty = f.ty(op.results[0]).clone();
    let elem = acc_ty.elem();
    let mut ops = Vec::new();
    // mid = lo + max(hi - lo, 0) / K * K, computed in i64: lo <= mid <= max(lo, hi).
    let lo64 = push(&mut ops, f, OpKind::Cast(Scalar::I64), vec![lo], i64t.clone(), loc);
    let hi64 = push(&mut ops, f, OpKind::Cast(Scalar::I64), vec![hi], i64t.clone(), loc);
    let top = push(&mut ops, f, OpKind::Bin(BinOp::Max), vec![hi64, lo64], i64t.clone(), loc);
    let len = push(&mut ops, f, OpKind::Bin(BinOp::Sub), vec![top, lo64], i64t.clone(), loc);
    let k64 = push(&mut ops, f, OpKind::Const(Const::Int(K as i64, Scalar::I64)), vec![], i64t.clone(), loc);
    let blocks = push(&mut ops, f, OpKind::Bin(BinOp::Div), vec![len, k64], i64t.clone(), loc);
    let span = push(&mut ops, f, OpKind::Bin(BinOp::Mul), vec![blocks, k64], i64t.clone(), loc);
    let mid64 = push(&mut ops, f, OpKind::Bin(BinOp::Add), vec![lo64, span], i64t, loc);
    let mid = push(&mut ops, f, OpKind::Cast(Scalar::I32), vec![mid64], i32t.clone(), loc);
    let step = push(&mut ops, f, OpKind::Const(Const::Int(K as i64, Scalar::I32)), vec![], i32t.clone(), loc);

    // The loop of tile products. The body's scalar ops (loop-invariant) are copied before it.
    let body = &op.regions[0];
    let iv = body.params[0];
    let mut renamed: HashMap<Value, Value> = HashMap::new();
    for (i, o) in body.ops[..body.ops.len() - 2].iter().enumerate() {
        if i != m.u && i != m.v {
            let ty = f.ty(o.results[0]).clone();
            let args = o.args.iter().map(|a| *renamed.get(a).unwrap_or(a)).collect();
            let r = push(&mut ops, f, o.kind.clone(), args, ty, o.loc);
            renamed.insert(o.results[0], r);
        }
    }
    let (cb, acc) = (f.new_value(i32t), f.new_value(acc_ty.clone()));
    let mut inner = Vec::new();
    // Each load as a block of K positions: (value, its rows are the vector's elements).
    let block = |which: usize, f: &mut Function, inner: &mut Vec<Op>| -> (Value, bool) {
        let l = &body.ops[which];
        let (p, s) = positions(l, iv).expect("matched");
        let OpKind::Load(idx) = &l.kind else { unreachable!("matched a load") };
        let mut idx = idx.clone();
        idx[p] = Index::Slice(K);
        let args: Vec<Value> =
            l.args.iter().map(|a| if *a == iv { cb } else { *renamed.get(a).unwrap_or(a) }).collect();
        let e = f.ty(l.results[0]).rows_cols().0;
        let shape = if s < p { vec![e, K] } else { vec![K, e] };
        let t = push(inner, f, OpKind::Load(idx), args, Type::Tile { elem, shape }, l.loc);
        (t, s < p)
    };
    let (ub, u_rows) = block(m.u, f, &mut inner);
    let (vb, v_rows) = if m.v == m.u { (ub, u_rows) } else { block(m.v, f, &mut inner) };
    let (r, c) = acc_ty.rows_cols();
    let tile = |shape: Vec<u32>| Type::Tile { elem, shape };
    let mut a = if u_rows { ub } else { push(&mut inner, f, OpKind::Transpose, vec![ub], tile(vec![r, K]), loc) };
    if m.alpha < 0.0 {
        a = push(&mut inner, f, OpKind::Un(UnOp::Neg), vec![a], tile(vec![r, K]), loc);
    }
    let b = if v_rows { push(&mut inner, f, OpKind::Transpose, vec![vb], tile(vec![K, c]), loc) } else { vb };
    let n = push(&mut inner, f, OpKind::MatmulAcc, vec![acc, a, b], acc_ty.clone(), loc);
    inner.push(Op { kind: OpKind::Yield, args: vec![n], results: vec![], regions: vec![], loc });
    let t1 = f.new_value(acc_ty);
    ops.push(Op {
        kind: OpKind::For,
        args: vec![lo, mid, step, init],
        results: vec![t1],
        regions: vec![Region { params: vec![cb, acc], ops: inner }],
        loc,
    });
    // The original loop over the rest.
    op.args[0] = mid;
    op.args[3] = t1;
    ops.push(op);
    ops
}
