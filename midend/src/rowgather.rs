//! Pass `gather-rows` (run by both CPU backends on their own copy of a module): a gather of
//! whole rows, `A[.., ids, lo:lo+C]` with a 1-D index tile `ids` (language §7.6), which the
//! frontend writes as a `map` that loads one element at a time, becomes a loop that loads one
//! row at a time:
//!
//! ```text
//! %r = broadcast (outer %ids, fill.full 1)      %t0 = fill.full 0.0 : tile<T, R, C>
//! %c = fill.iota(1) : tile<i32, R, C>       =>  %g = for %k in 0..R carrying %t = %t0 {
//! %g = map %r, %c { ^(%p, %q)                     %i = extract %ids, %k
//!   %q2 = add %q, %lo                             %row = load[..,+C] %A, .., %i, %lo
//!   %x = load[..,i,i] %A, .., %p, %q2             yield insert_line.0 %t, %k, %row
//!   yield %x                                    }
//! }
//! ```
//!
//! Each element is the same array element with the same bounds rules (a row out of bounds
//! reads as zeros, as each of its elements does; a slice past the array's edge reads zeros
//! there), so no result changes. On the CPU a row is one contiguous copy instead of a bounds
//! check per element (`examples/embedding.tile`, `bench/README.md`); GPUs hold each element in
//! one lane's register and load it there, so the SIMT lowering does not see this pass.

use crate::ir::*;
use crate::types::{Scalar, Type};
use std::collections::HashMap;

/// A row gather found in a `map`: the array and its positions.
struct RowGather {
    idx: Value,
    array: Value,
    /// The load's positions; `row` and the last are replaced in the loop.
    pos: Vec<Value>,
    row: usize,
    lo: Option<Value>,
    rows: u32,
    cols: u32,
    elem: Scalar,
}

/// Runs the pass over every function of a module.
pub fn run(m: &mut Module) {
    for f in &mut m.funcs {
        let mut defs = HashMap::new();
        collect(&f.body, &mut defs);
        let mut body = std::mem::take(&mut f.body);
        if rewrite(&mut body, &defs, f) {
            // The position tiles the maps read are dead now.
            let mut uses = HashMap::new();
            body.count_uses(&mut uses);
            crate::simplify::dce(&mut body, &mut uses);
        }
        f.body = body;
    }
}

/// The ops that may define a gather's position tiles, by result.
fn collect(r: &Region, defs: &mut HashMap<Value, Op>) {
    for op in &r.ops {
        if matches!(op.kind, OpKind::Const(_) | OpKind::Fill(_) | OpKind::Outer | OpKind::Broadcast) {
            if let Some(v) = op.results.first() {
                defs.insert(*v, op.clone());
            }
        }
        for reg in &op.regions {
            collect(reg, defs);
        }
    }
}

/// Rewrites the row gathers of `r` and its nested regions; whether there was one.
fn rewrite(r: &mut Region, defs: &HashMap<Value, Op>, f: &mut Function) -> bool {
    let mut any = false;
    for op in &mut r.ops {
        for reg in &mut op.regions {
            any |= rewrite(reg, defs, f);
        }
    }
    let mut i = 0;
    while i < r.ops.len() {
        match find(&r.ops[i], defs, f) {
            Some(g) => {
                let new = lower(&r.ops[i], &g, f);
                let n = new.len();
                r.ops.splice(i..i + 1, new);
                i += n;
                any = true;
            }
            None => i += 1,
        }
    }
    any
}

/// The row gather that `op` is, if it is one.
fn find(op: &Op, defs: &HashMap<Value, Op>, f: &Function) -> Option<RowGather> {
    if op.kind != OpKind::Map || op.results.len() != 1 || op.args.len() != 2 {
        return None;
    }
    let Type::Tile { elem, shape } = f.ty(op.results[0]) else { return None };
    let [rows, cols] = shape[..] else { return None };
    let body = op.regions.first()?;
    let params = &body.params;
    let n = body.ops.len();
    if !(2..=3).contains(&n) {
        return None;
    }
    let (load, yld) = (&body.ops[n - 2], &body.ops[n - 1]);
    let OpKind::Load(kinds) = &load.kind else { return None };
    if yld.kind != OpKind::Yield || yld.args[..] != load.results[..] || kinds.iter().any(|k| *k != Index::At) {
        return None;
    }
    let rank = kinds.len();
    let pos = &load.args[1..];
    let inside = |v: &Value| params.contains(v) || body.ops.iter().any(|o| o.results.contains(v));
    // The column: the last position, a parameter or a parameter plus a scalar from outside.
    let (col, lo) = if n == 3 {
        let add = &body.ops[0];
        if add.kind != OpKind::Bin(BinOp::Add) || add.results[..] != [pos[rank - 1]] {
            return None;
        }
        match add.args[..] {
            [p, lo] | [lo, p] if params.contains(&p) && !inside(&lo) => (p, Some(lo)),
            _ => return None,
        }
    } else {
        (pos[rank - 1], None)
    };
    let ci = params.iter().position(|p| *p == col)?;
    let ri = 1 - ci;
    let row = pos.iter().position(|p| *p == params[ri])?;
    if row + 1 >= rank || pos.iter().enumerate().any(|(d, p)| d != row && d != rank - 1 && inside(p)) {
        return None;
    }
    // The operands: `fill.iota(1)` for the column, `broadcast (outer ids, fill.full 1)` for
    // the row.
    let def = |v: Value| defs.get(&v);
    if !matches!(def(op.args[ci]).map(|o| &o.kind), Some(OpKind::Fill(Fill::Iota(1)))) {
        return None;
    }
    let b = def(op.args[ri]).filter(|o| o.kind == OpKind::Broadcast)?;
    let outer = def(b.args[0]).filter(|o| o.kind == OpKind::Outer)?;
    let ones = def(outer.args[1]).filter(|o| o.kind == OpKind::Fill(Fill::Full))?;
    let one = def(ones.args[0]).map(|o| &o.kind);
    let idx = outer.args[0];
    if !matches!(one, Some(OpKind::Const(Const::Int(1, Scalar::I32))))
        || *f.ty(idx) != (Type::Tile { elem: Scalar::I32, shape: vec![rows] })
        || *f.ty(ones.results[0]) != (Type::Tile { elem: Scalar::I32, shape: vec![1] })
    {
        return None;
    }
    Some(RowGather { idx, array: load.args[0], pos: pos.to_vec(), row, lo, rows, cols, elem: *elem })
}

/// The ops that replace the map `op`: constants, the zero tile and the loop over the rows
/// (whose result is the map's).
fn lower(op: &Op, g: &RowGather, f: &mut Function) -> Vec<Op> {
    let loc = op.loc;
    let mut out = Vec::new();
    let emit = |f: &mut Function, kind: OpKind, args: Vec<Value>, ty: Type, out: &mut Vec<Op>| -> Value {
        let v = f.new_value(ty);
        out.push(Op { kind, args, results: vec![v], regions: vec![], loc });
        v
    };
    let i32t = Type::Scalar(Scalar::I32);
    let tile = Type::Tile { elem: g.elem, shape: vec![g.rows, g.cols] };
    let zero = if g.elem.is_float() { Const::Float(0.0, g.elem) } else { Const::Int(0, g.elem) };
    let c0 = emit(f, OpKind::Const(Const::Int(0, Scalar::I32)), vec![], i32t.clone(), &mut out);
    let cr = emit(f, OpKind::Const(Const::Int(g.rows as i64, Scalar::I32)), vec![], i32t.clone(), &mut out);
    let c1 = emit(f, OpKind::Const(Const::Int(1, Scalar::I32)), vec![], i32t.clone(), &mut out);
    let z = emit(f, OpKind::Const(zero), vec![], Type::Scalar(g.elem), &mut out);
    let t0 = emit(f, OpKind::Fill(Fill::Full), vec![z], tile.clone(), &mut out);
    let (k, t) = (f.new_value(i32t.clone()), f.new_value(tile.clone()));
    let mut body = Vec::new();
    let i = emit(f, OpKind::Extract, vec![g.idx, k], i32t, &mut body);
    let rank = g.pos.len();
    let mut kinds = vec![Index::At; rank];
    kinds[rank - 1] = Index::Slice(g.cols);
    let mut args = vec![g.array];
    args.extend(g.pos.iter().enumerate().map(|(d, p)| match d {
        d if d == g.row => i,
        d if d == rank - 1 => g.lo.unwrap_or(c0),
        _ => *p,
    }));
    let row_ty = Type::Tile { elem: g.elem, shape: vec![g.cols] };
    let row = emit(f, OpKind::Load(kinds), args, row_ty, &mut body);
    let t2 = emit(f, OpKind::InsertLine(0), vec![t, k, row], tile, &mut body);
    body.push(Op { kind: OpKind::Yield, args: vec![t2], results: vec![], regions: vec![], loc });
    out.push(Op {
        kind: OpKind::For,
        args: vec![c0, cr, c1, t0],
        results: op.results.clone(),
        regions: vec![Region { params: vec![k, t], ops: body }],
        loc,
    });
    out
}
