//! Pairs of adjacent operations that a backend may lower as one, with the same results (and
//! bits) as the two operations one after the other.

use crate::{BinOp, Function, Op, OpKind, Region, Type, Value};
use std::collections::HashMap;

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

/// The `transpose` results that a backend may leave unformed: each is a 2-D tile used once, as
/// the left operand `a` of a `matmul` or `matmul_acc` (and not as its right operand), whose
/// micro-kernel then reads `a[i, k]` as element `[k, i]` of the transposed tile: the same
/// values, so the same bits, without the transpose's shuffles (`potrs_batched`'s backward
/// products `transpose(L[..]) @ X[..]`). Maps each such result to the tile it transposes.
/// `uses`: operand counts (`Region::count_uses`).
pub fn transposed_left_operands(f: &Function, uses: &HashMap<Value, usize>) -> HashMap<Value, Value> {
    fn walk(r: &Region, transposes: &mut HashMap<Value, Value>, lefts: &mut Vec<(Value, Value)>) {
        for op in &r.ops {
            match op.kind {
                OpKind::Transpose => {
                    transposes.insert(op.results[0], op.args[0]);
                }
                OpKind::Matmul => lefts.push((op.args[0], op.args[1])),
                OpKind::MatmulAcc => lefts.push((op.args[1], op.args[2])),
                _ => {}
            }
            for reg in &op.regions {
                walk(reg, transposes, lefts);
            }
        }
    }
    let (mut transposes, mut lefts) = (HashMap::new(), Vec::new());
    walk(&f.body, &mut transposes, &mut lefts);
    lefts
        .into_iter()
        .filter(|(a, b)| a != b && uses.get(a) == Some(&1))
        .filter_map(|(a, _)| {
            let src = *transposes.get(&a)?;
            matches!(f.ty(a), Type::Tile { shape, .. } if shape.len() == 2).then_some((a, src))
        })
        .collect()
}
