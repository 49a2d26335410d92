//! Pass `const-fold`: evaluates scalar operations whose operands are constants
//! (arithmetic, comparisons, negation, casts) and turns them into `Const` ops.

use crate::ir::*;
use crate::types::{Scalar, Type};
use std::collections::HashMap;

/// Folds one op with constant operands, if it is foldable.
fn fold(kind: &OpKind, args: &[Const], out: &Type) -> Option<Const> {
    let Type::Scalar(s) = out else { return None };
    let s = *s;
    Some(match (kind, args) {
        (OpKind::Bin(op), [Const::Int(a, _), Const::Int(b, _)]) => {
            let (a, b) = (*a, *b);
            let v = match op {
                BinOp::Add => a.wrapping_add(b),
                BinOp::Sub => a.wrapping_sub(b),
                BinOp::Mul => a.wrapping_mul(b),
                BinOp::Div if b != 0 => a.wrapping_div(b),
                BinOp::Rem if b != 0 => a.wrapping_rem(b),
                BinOp::Min => a.min(b),
                BinOp::Max => a.max(b),
                _ => return None,
            };
            Const::Int(s.wrap(v), s)
        }
        (OpKind::Bin(op), [Const::Float(a, _), Const::Float(b, _)]) => {
            let v = match op {
                BinOp::Add => a + b,
                BinOp::Sub => a - b,
                BinOp::Mul => a * b,
                BinOp::Div => a / b,
                BinOp::Min => a.min(*b),
                BinOp::Max => a.max(*b),
                _ => return None,
            };
            Const::Float(s.round(v), s)
        }
        (OpKind::Bin(BinOp::And), [Const::Bool(a), Const::Bool(b)]) => Const::Bool(*a && *b),
        (OpKind::Bin(BinOp::Or), [Const::Bool(a), Const::Bool(b)]) => Const::Bool(*a || *b),
        (OpKind::Cmp(op), [a, b]) if a.ty() == b.ty() && a.ty() != Scalar::Bool => {
            let (x, y) = (a.as_f64(), b.as_f64());
            Const::Bool(match op {
                CmpOp::Eq => x == y,
                CmpOp::Ne => x != y,
                CmpOp::Lt => x < y,
                CmpOp::Le => x <= y,
                CmpOp::Gt => x > y,
                CmpOp::Ge => x >= y,
            })
        }
        (OpKind::Un(UnOp::Neg), [Const::Int(a, _)]) => Const::Int(s.wrap(a.wrapping_neg()), s),
        (OpKind::Un(UnOp::Neg), [Const::Float(a, _)]) => Const::Float(-a, s),
        (OpKind::Un(UnOp::Not), [Const::Bool(a)]) => Const::Bool(!a),
        (OpKind::Cast(to), [c]) if *to == s => match (c, to.is_float()) {
            (Const::Bool(_), _) => return None,
            (_, true) => Const::Float(s.round(c.as_f64()), s),
            (Const::Int(v, _), false) => Const::Int(s.wrap(*v), s),
            (Const::Float(v, _), false) if v.is_finite() => Const::Int(s.wrap(*v as i64), s),
            _ => return None,
        },
        _ => return None,
    })
}

fn run_region(f_values: &[ValueData], r: &mut Region, consts: &mut HashMap<Value, Const>) {
    for op in &mut r.ops {
        for reg in &mut op.regions {
            run_region(f_values, reg, consts);
        }
        if let OpKind::Const(c) = op.kind {
            consts.insert(op.results[0], c);
            continue;
        }
        if op.results.len() != 1 || !op.regions.is_empty() || op.args.is_empty() {
            continue;
        }
        let args: Option<Vec<Const>> = op.args.iter().map(|a| consts.get(a).copied()).collect();
        let Some(args) = args else { continue };
        if let Some(c) = fold(&op.kind, &args, &f_values[op.results[0].0 as usize].ty) {
            op.kind = OpKind::Const(c);
            op.args.clear();
            consts.insert(op.results[0], c);
        }
    }
}

/// Runs the pass over a module.
pub fn run(m: &mut Module) {
    for f in &mut m.funcs {
        let mut consts = HashMap::new();
        let mut body = std::mem::take(&mut f.body);
        run_region(&f.values, &mut body, &mut consts);
        f.body = body;
    }
}
