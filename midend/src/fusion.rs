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
                OpKind::Matmul => lefts.push((op.args[0], op.args[1])),
                OpKind::MatmulAcc => lefts.push((op.args[1], op.args[2])),
                _ => {}
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
