//! Pairs of adjacent operations that a backend may lower as one, with the same results (and
//! bits) as the two operations one after the other.

use crate::{BinOp, Function, Op, OpKind, Type, Value};
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
