//! Pass `simplify`: fuses `t - outer(u, v)` and `t + outer(u, v)` into one `rank1` update
//! and `c + a @ b` into one `matmul_acc` (no temporary tiles), and removes operations whose results are unused and that have no
//! effect (dead code).

use crate::ir::*;
use std::collections::HashMap;

fn fuse_rank1(r: &mut Region, uses: &HashMap<Value, usize>, vals: &[ValueData]) {
    let mut outers: HashMap<Value, (Value, Value)> = HashMap::new();
    let mut matmuls: HashMap<Value, (Value, Value)> = HashMap::new();
    for op in &mut r.ops {
        for reg in &mut op.regions {
            fuse_rank1(reg, uses, vals);
        }
        match op.kind {
            OpKind::Outer => {
                outers.insert(op.results[0], (op.args[0], op.args[1]));
            }
            OpKind::Matmul => {
                matmuls.insert(op.results[0], (op.args[0], op.args[1]));
            }
            OpKind::Bin(BinOp::Add) if fusable(&matmuls, uses, vals, op.args[1], op.args[0]) => {
                let (a, b) = matmuls[&op.args[1]];
                op.kind = OpKind::MatmulAcc;
                op.args = vec![op.args[0], a, b];
            }
            OpKind::Bin(BinOp::Add) if fusable(&matmuls, uses, vals, op.args[0], op.args[1]) => {
                let (a, b) = matmuls[&op.args[0]];
                op.kind = OpKind::MatmulAcc;
                op.args = vec![op.args[1], a, b];
            }
            OpKind::Bin(b @ (BinOp::Sub | BinOp::Add)) => {
                let (t, o) = (op.args[0], op.args[1]);
                if let Some((u, v)) = outers.get(&o) {
                    if uses.get(&o) == Some(&1) && t != o && vals[t.0 as usize].ty == vals[o.0 as usize].ty {
                        let alpha = if b == BinOp::Sub { -1.0 } else { 1.0 };
                        op.kind = OpKind::Rank1(alpha);
                        op.args = vec![t, *u, *v];
                    }
                }
            }
            _ => {}
        }
    }
}

/// Whether `m` is a matmul result used only here, added to the tile `c` of its type.
fn fusable(
    matmuls: &HashMap<Value, (Value, Value)>,
    uses: &HashMap<Value, usize>,
    vals: &[ValueData],
    m: Value,
    c: Value,
) -> bool {
    matmuls.contains_key(&m) && uses.get(&m) == Some(&1) && m != c && vals[c.0 as usize].ty == vals[m.0 as usize].ty
}

fn has_effect(op: &Op) -> bool {
    matches!(
        op.kind,
        OpKind::Store(_)
            | OpKind::AtomicAdd(_)
            | OpKind::Barrier
            | OpKind::Return
            | OpKind::Yield
            | OpKind::Call(_)
            | OpKind::For
            | OpKind::If
            | OpKind::While
    )
}

/// Removes unused pure ops; returns whether anything changed.
fn dce(r: &mut Region, uses: &HashMap<Value, usize>) -> bool {
    let before = r.ops.len();
    let mut changed = false;
    for op in &mut r.ops {
        for reg in &mut op.regions {
            changed |= dce(reg, uses);
        }
    }
    r.ops.retain(|op| has_effect(op) || op.results.iter().any(|v| uses.get(v).copied().unwrap_or(0) > 0));
    changed || r.ops.len() != before
}

/// Runs the pass over a module.
pub fn run(m: &mut Module) {
    for f in &mut m.funcs {
        let mut uses = HashMap::new();
        f.body.count_uses(&mut uses);
        fuse_rank1(&mut f.body, &uses, &f.values);
        loop {
            let mut uses = HashMap::new();
            f.body.count_uses(&mut uses);
            if !dce(&mut f.body, &uses) {
                break;
            }
        }
    }
}
