//! Pairs of adjacent operations that a backend may lower as one, with the same results (and
//! bits) as the two operations one after the other.

use crate::{BinOp, Function, Op, OpKind, Region, Type, UnOp, Value};
use std::collections::{HashMap, HashSet};

/// Whether `mm` and the op after it, `sub`, are `p = a @ b; out = t - p` with the product `p`
/// used by that subtraction alone (`uses`: operand counts, `Region::count_uses`), `t` a
/// different matrix tile of the product's type. A backend then forms the product block by
/// block in registers and stores `t - p` directly (the subtraction per element is the same),
/// instead of storing the product tile and reading it back.
pub fn is_matmul_sub(f: &Function, uses: &HashMap<Value, usize>, mm: &Op, sub: &Op) -> bool {
    let (OpKind::Matmul, OpKind::Bin(BinOp::Sub)) = (&mm.kind, &sub.kind) else {
        return false;
    };
    let p = mm.results[0];
    let t = sub.args[0];
    sub.args[1] == p
        && t != p
        && uses.get(&p) == Some(&1)
        && f.ty(t) == f.ty(p)
        && matches!(f.ty(p), Type::Tile { shape, .. } if shape.len() == 2)
}

/// The operands `(a, b)` of a product `a @ b`: a `matmul`, or a `matmul_acc` (`c + a @ b`).
pub fn product_operands(op: &Op) -> Option<(Value, Value)> {
    match op.kind {
        OpKind::Matmul => Some((op.args[0], op.args[1])),
        OpKind::MatmulAcc => Some((op.args[1], op.args[2])),
        _ => None,
    }
}

/// How a product reads its left operand in place (`left_operands`): `a[i, k]` is element
/// `[i, k]` of `source`, or `[k, i]` when `transposed`, negated when `negated`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LeftOperand {
    /// The tile the micro-kernel reads.
    pub source: Value,
    /// `a` is `transpose(source)` (possibly under a `neg`).
    pub transposed: bool,
    /// `a` is `neg(..)` of the source (possibly under a `transpose`).
    pub negated: bool,
}

/// Left operands that a backend may leave unformed: the left operand `a` of a `matmul` or
/// `matmul_acc` (2-D, used once, not also its right operand) made by `transpose` and/or
/// `neg` of another tile, each of these ops' results used once. The micro-kernel then reads
/// `a[i, k]` as element `[k, i]` of the transposed tile, and multiplies by `-a[i, k]`: the
/// same values, so the same bits (negation is exact; `fma(-a, b, c)` is `fma(neg(a), b, c)`),
/// without the transpose's shuffles (`potrs_batched`'s backward products
/// `transpose(L[..]) @ X[..]`) or a pass over the tile to negate it (the products
/// `matmul_acc t, neg(U), V` of `block-rank1`). Returns each such operand's view, and every
/// `transpose`/`neg` result that is then not formed. `uses`: operand counts
/// (`Region::count_uses`).
pub fn left_operands(f: &Function, uses: &HashMap<Value, usize>) -> (HashMap<Value, LeftOperand>, HashSet<Value>) {
    fn walk(r: &Region, makers: &mut HashMap<Value, (bool, Value)>, lefts: &mut Vec<(Value, Value)>) {
        for op in &r.ops {
            match op.kind {
                OpKind::Transpose => {
                    makers.insert(op.results[0], (true, op.args[0]));
                }
                OpKind::Un(UnOp::Neg) => {
                    makers.insert(op.results[0], (false, op.args[0]));
                }
                _ => lefts.extend(product_operands(op)),
            }
            for reg in &op.regions {
                walk(reg, makers, lefts);
            }
        }
    }
    let matrix = |v: Value| matches!(f.ty(v), Type::Tile { shape, .. } if shape.len() == 2);
    let (mut makers, mut lefts) = (HashMap::new(), Vec::new());
    walk(&f.body, &mut makers, &mut lefts);
    let (mut views, mut unformed) = (HashMap::new(), HashSet::new());
    for (a, b) in lefts {
        let mut view = LeftOperand { source: a, transposed: false, negated: false };
        let mut peeled = Vec::new();
        // Peel `transpose` and `neg` (each at most once) while the value is used once.
        while view.source != b && uses.get(&view.source) == Some(&1) && matrix(view.source) {
            let src = match makers.get(&view.source) {
                Some(&(true, src)) if !view.transposed && matrix(src) => {
                    view.transposed = true;
                    src
                }
                Some(&(false, src)) if !view.negated => {
                    view.negated = true;
                    src
                }
                _ => break,
            };
            peeled.push(view.source);
            view.source = src;
        }
        if !peeled.is_empty() {
            unformed.extend(peeled);
            views.insert(a, view);
        }
    }
    (views, unformed)
}

/// Tile loads that a product or a triangular solve may read straight from the array instead
/// of a copy: the result of a `load` or `load_into` of a 2-D tile of `f32` or `f64` with
/// contiguous rows (its last index a slice), used once, as the right operand `b` of a
/// `matmul` or `matmul_acc`, or as the source of its left operand `a` (directly or through
/// the `transpose`/`neg` of `views`, from `left_operands`), or as the triangular tile of a
/// `trsm`, or as the operand of a `transpose` that is formed (not in `unformed`, the second
/// result of `left_operands`: an unformed one is read through its product), in the same
/// region as that reader, with no op with an effect between the two (`Op::has_effect`:
/// stores, atomic adds, barriers, calls, loops, ifs), and with at most `max_elems` elements.
/// The backend then reads the tile's elements from the array where the whole tile lies
/// inside it (a `load_into`'s old values then play no part), and falls back to the load's
/// copy (with its bounds rules) where it does not: the same values, so the same bits.
/// `max_elems` keeps large operands copied (a copy is a packing: a 64 x 64 tile read in
/// place from a wide matrix strides through few cache sets). `uses`: operand counts
/// (`Region::count_uses`).
pub fn direct_loads(
    f: &Function,
    uses: &HashMap<Value, usize>,
    views: &HashMap<Value, LeftOperand>,
    unformed: &HashSet<Value>,
    max_elems: u32,
) -> HashSet<Value> {
    let candidate = |op: &Op| {
        let Some((2, elem)) = in_place_load(f, uses, op) else { return false };
        matches!(elem, crate::Scalar::F32 | crate::Scalar::F64) && f.ty(op.results[0]).tile_len() <= max_elems
    };
    let reads = |_: Option<&Op>, op: &Op| match (product_operands(op), &op.kind) {
        (Some((a, b)), _) => vec![views.get(&a).map_or(a, |v| v.source), b],
        (None, OpKind::Trsm(_)) => vec![op.args[0]],
        (None, OpKind::Transpose) if !unformed.contains(&op.results[0]) => vec![op.args[0]],
        _ => vec![],
    };
    loads_read_by(&f.body, &candidate, &reads)
}

/// The loads of left operands of products, read as they are (not through a `transpose` or
/// `neg` of `views`), that [`direct_loads`] allows at any size: a backend reads them from the
/// array where the whole tile lies inside it with its rows one after another there (the row
/// stride equals the tile's width, a run-time check: the walker's `W[i0:i0+256, 0:8]` of a
/// `T[N, 8]`), at the tile's own layout, so that nothing is packed by a copy; else from the
/// load's copy. The walker's 256 x 8 operand had been copied to the stack first, a pass over
/// 8 KB per program that waited on memory with nothing else to do (Cranelift 5.35 -> 3.31 ms
/// with the other session 40 changes). `uses`: operand counts.
pub fn packed_left_operands(
    f: &Function,
    uses: &HashMap<Value, usize>,
    views: &HashMap<Value, LeftOperand>,
    unformed: &HashSet<Value>,
) -> HashSet<Value> {
    fn walk(r: &Region, views: &HashMap<Value, LeftOperand>, out: &mut HashSet<Value>) {
        for op in &r.ops {
            if let Some((a, _)) = product_operands(op) {
                if !views.contains_key(&a) {
                    out.insert(a);
                }
            }
            for reg in &op.regions {
                walk(reg, views, out);
            }
        }
    }
    let mut lefts = HashSet::new();
    walk(&f.body, views, &mut lefts);
    let direct = direct_loads(f, uses, views, unformed, u32::MAX);
    lefts.retain(|a| direct.contains(a));
    lefts
}

/// Tile loads that an element-wise op (a `map`, a binary or unary op but `neg`) may read straight from
/// the array instead of a copy: the result
/// of a `load` or `load_into` of a 1-D or 2-D tile with contiguous rows (its last index a
/// slice, one slice per tile axis), stored as it is computed (not `bool`, `f16` or `bf16`),
/// used once, as an operand of such an op in the same region with no op with an effect between
/// the two (as [`direct_loads`]), of any size. The backend then reads each element from the
/// array where the whole tile lies inside it, and from the load's copy (with its bounds
/// rules) where it does not: the same values, so the same bits, without a pass that copies
/// the tile before the map reads it (a 1024-wide row streamed into an accumulator,
/// `acc += A[i, j0:j0+1024] * y`, was copied, then read). `uses`: operand counts.
pub fn map_loads(f: &Function, uses: &HashMap<Value, usize>) -> HashSet<Value> {
    let candidate = |op: &Op| in_place_load(f, uses, op).is_some_and(|(_, e)| e != crate::Scalar::Bool && !e.is_half());
    let reads = |prev: Option<&Op>, op: &Op| match op.kind {
        // Not the `t - p` that a backend lowers with its product (`is_matmul_sub`, reading
        // `t` as a tile), nor a `neg`, which a product may read in place (`left_operands`).
        OpKind::Bin(_) if prev.is_some_and(|mm| is_matmul_sub(f, uses, mm, op)) => vec![],
        OpKind::Map | OpKind::Bin(_) => op.args.clone(),
        OpKind::Un(k) if k != UnOp::Neg => op.args.clone(),
        _ => vec![],
    };
    loads_read_by(&f.body, &candidate, &reads)
}

/// For a `load` or `load_into` whose tile a backend could read from the array in place:
/// its slices (one per tile axis, at most two, the last index a slice, so rows are
/// contiguous) and element type (the array's own), when its result is used once.
fn in_place_load(f: &Function, uses: &HashMap<Value, usize>, op: &Op) -> Option<(usize, crate::Scalar)> {
    let (kinds, array) = match &op.kind {
        OpKind::Load(kinds) => (kinds, op.args[0]),
        OpKind::LoadInto(kinds) => (kinds, op.args[1]),
        _ => return None,
    };
    let slices = kinds.iter().filter(|k| matches!(k, crate::Index::Slice(_))).count();
    let Type::Tile { elem, shape } = f.ty(op.results[0]) else { return None };
    let fits = (1..=2).contains(&slices)
        && shape.len() == slices
        && matches!(kinds.last(), Some(crate::Index::Slice(_)))
        && f.ty(array).elem() == *elem
        && uses.get(&op.results[0]) == Some(&1);
    fits.then_some((slices, *elem))
}

/// The values an op would read in place, given the op before it in its region.
type Reads<'a> = &'a dyn Fn(Option<&Op>, &Op) -> Vec<Value>;

/// The loads (`candidate`) that an op of the same region reads (`reads`) with no op with an
/// effect between the load and that reader.
fn loads_read_by(r: &Region, candidate: &dyn Fn(&Op) -> bool, reads: Reads) -> HashSet<Value> {
    fn walk(r: &Region, candidate: &dyn Fn(&Op) -> bool, reads: Reads, out: &mut HashSet<Value>) {
        // Candidate loads of this region (result -> position), and the last op with an effect.
        let mut loads: HashMap<Value, usize> = HashMap::new();
        let mut last_effect = None;
        for (i, op) in r.ops.iter().enumerate() {
            if candidate(op) {
                loads.insert(op.results[0], i);
            }
            for v in reads(i.checked_sub(1).map(|j| &r.ops[j]), op) {
                // Loaded after the last op with an effect (if any) before the reader.
                if loads.get(&v).is_some_and(|&at| last_effect.is_none_or(|w| w < at)) {
                    out.insert(v);
                }
            }
            if op.has_effect() {
                last_effect = Some(i);
            }
            for reg in &op.regions {
                walk(reg, candidate, reads, out);
            }
        }
    }
    let mut out = HashSet::new();
    walk(r, candidate, reads, &mut out);
    out
}
