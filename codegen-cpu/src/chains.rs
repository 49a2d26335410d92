//! Element-wise chains on Cranelift. A `Bin` or `Un` on tiles, a `broadcast` of one row to
//! every row of a tile, or a row of a tile at a run-time index (`extract_line.0`, `t[i, :]`),
//! whose result is read only by a later element-wise op of the same region (no op with an
//! effect between the two) is not formed: that reader computes it per vector from its operands
//! (`Lower::elementwise_op`), reading a broadcast row or a tile's row where it lies.
//! `acc += A[i0:i0+8, j0:j0+32] * X[j0:j0+32]` is then one pass over the accumulator and the
//! block (read in place from `A`) instead of four: the broadcast, the product stored, and the
//! product read back by the sum. Every element is computed by the same operations on the same
//! operands, so no result changes.
//!
//! Only ops of one element type with a vector form are chained (a scalar op in a chain would
//! make the whole chain scalar). The LLVM backend has no need of this: its optimizer keeps
//! such chains in registers.

use crate::tile::vec_ty;
use std::collections::{HashMap, HashSet};
use tilec_midend::{BinOp, Function, Op, OpKind, Region, Type, UnOp, Value};

/// The ops whose results their element-wise reader computes itself.
#[derive(Default)]
pub(crate) struct Chains {
    /// Each unformed result's op.
    pub(crate) ops: HashMap<Value, Op>,
    /// Each unformed result's reader (the result of the op that reads it).
    reader: HashMap<Value, Value>,
}

impl Chains {
    /// The unformed value that the root of `v`'s chain (the formed op that computes it) reads.
    pub(crate) fn top(&self, mut v: Value) -> Value {
        while let Some(r) = self.reader.get(&v).filter(|r| self.ops.contains_key(r)) {
            v = *r;
        }
        v
    }

    /// The tile values that element-wise op `op` reads when it is lowered, through the
    /// unformed ops of its chain, at the positions of the elements it computes (not the
    /// sources of broadcasts and rows: their elements lie elsewhere).
    pub(crate) fn leaves(&self, f: &Function, op: &Op, out: &mut Vec<Value>) {
        for a in &op.args {
            match self.ops.get(a) {
                Some(p) if matches!(p.kind, OpKind::Bin(_) | OpKind::Un(_)) => self.leaves(f, p, out),
                Some(_) => {}
                None if f.ty(*a).is_tile() => out.push(*a),
                None => {}
            }
        }
    }
}

/// Whether `op` is a `Bin` or `Un` on tiles that `Lower::elementwise` computes a vector at a
/// time (the conditions of `tile_op`).
pub(crate) fn vector_elementwise(f: &Function, op: &Op) -> bool {
    let Some(Type::Tile { elem: s, .. }) = op.results.first().map(|r| f.ty(*r)) else { return false };
    let s = *s;
    vec_ty(s).is_some()
        && match op.kind {
            OpKind::Bin(k) if s.is_float() => k != BinOp::Rem,
            OpKind::Bin(k) => matches!(k, BinOp::Add | BinOp::Sub | BinOp::Mul),
            OpKind::Un(k) if s.is_float() => crate::vmap::vector_un(k, s),
            OpKind::Un(k) => k == UnOp::Neg,
            _ => false,
        }
}

/// Whether `op` broadcasts one row (a 1-D tile or a `[1, C]` tile) to every row of a matrix
/// tile of `C` columns, or takes one row of a matrix tile (`extract_line.0`).
fn row_source(f: &Function, op: &Op) -> bool {
    if !matches!(op.kind, OpKind::Broadcast | OpKind::ExtractLine(0)) {
        return false;
    }
    let (Type::Tile { shape: from, .. }, Some(Type::Tile { shape: to, .. })) =
        (f.ty(op.args[0]), op.results.first().map(|r| f.ty(*r)))
    else {
        return false;
    };
    if op.kind == OpKind::ExtractLine(0) {
        return from.len() == 2;
    }
    let cols = match from.as_slice() {
        [c] | [1, c] => *c,
        _ => return false,
    };
    to.len() == 2 && to[1] == cols
}

/// The chains of `f`. `uses`: operand counts (`Region::count_uses`); `unformed`: results
/// that a product reads in place (`left_operands`), which are not lowered at all.
pub(crate) fn find(f: &Function, uses: &HashMap<Value, usize>, unformed: &HashSet<Value>) -> Chains {
    let mut c = Chains::default();
    walk(f, &f.body, uses, unformed, &mut c);
    c
}

fn walk(f: &Function, r: &Region, uses: &HashMap<Value, usize>, unformed: &HashSet<Value>, c: &mut Chains) {
    // Producers since the last op with an effect: result -> position.
    let mut open: HashMap<Value, usize> = HashMap::new();
    for (i, op) in r.ops.iter().enumerate() {
        for reg in &op.regions {
            walk(f, reg, uses, unformed, c);
        }
        let root = vector_elementwise(f, op)
            && !unformed.contains(&op.results[0])
            && !(i > 0 && tilec_midend::fusion::is_matmul_sub(f, uses, &r.ops[i - 1], op));
        if root {
            let ty = f.ty(op.results[0]);
            for a in &op.args {
                // A producer of the reader's own type (a row of it, a broadcast to it).
                if let Some(j) = open.get(a).copied().filter(|_| f.ty(*a) == ty) {
                    open.remove(a);
                    c.ops.insert(*a, r.ops[j].clone());
                    c.reader.insert(*a, op.results[0]);
                }
            }
        }
        if op.has_effect() {
            open.clear();
        }
        let producer = (root || row_source(f, op)) && uses.get(&op.results[0]) == Some(&1);
        if producer {
            open.insert(op.results[0], i);
        }
    }
}
