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

/// Removes unused pure ops in one backward sweep: ops are visited last to first (nested
/// regions before the op that holds them), and removing an op releases the uses of its
/// operands, so a whole chain of dead ops goes at once (SSA: every use of a value comes after
/// its definition). Linear in the number of ops.
pub(crate) fn dce(r: &mut Region, uses: &mut HashMap<Value, usize>) {
    let mut removed = vec![false; r.ops.len()];
    for (i, op) in r.ops.iter_mut().enumerate().rev() {
        if op.has_effect() || op.results.iter().any(|v| uses.get(v).copied().unwrap_or(0) > 0) {
            for reg in &mut op.regions {
                dce(reg, uses);
            }
        } else {
            removed[i] = true;
            release(op, uses);
        }
    }
    r.remove_ops(&removed);
}

/// Drops the uses that a removed op (and the ops of its regions) made of its operands.
fn release(op: &Op, uses: &mut HashMap<Value, usize>) {
    for a in &op.args {
        if let Some(n) = uses.get_mut(a) {
            *n = n.saturating_sub(1);
        }
    }
    for reg in &op.regions {
        for o in &reg.ops {
            release(o, uses);
        }
    }
}

/// Runs the pass over a module.
pub fn run(m: &mut Module) {
    for f in &mut m.funcs {
        let mut uses = HashMap::new();
        f.body.count_uses(&mut uses);
        fuse_rank1(&mut f.body, &uses, &f.values);
        let mut uses = HashMap::new();
        f.body.count_uses(&mut uses);
        dce(&mut f.body, &mut uses);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::{Const, FuncKind, Function, Loc, Module};
    use crate::types::{Scalar, Type};

    fn op(kind: OpKind, args: Vec<Value>, results: Vec<Value>, regions: Vec<Region>) -> Op {
        Op { kind, args, results, regions, loc: Loc::default() }
    }

    /// A dead chain `x1 = x0 + x0, x2 = x1 + x1, ...` inside a loop body, and one live value
    /// stored: one run removes the whole chain (in one sweep, not one op per sweep) and
    /// keeps what the store needs.
    #[test]
    fn dead_chains_go_in_one_run() {
        let mut f = Function::new("k", FuncKind::Kernel);
        let arr = f.new_value(Type::Array { elem: Scalar::I32, rank: 1, mutable: true });
        f.body.params.push(arr);
        let c = f.new_value(Type::Scalar(Scalar::I32));
        let live = f.new_value(Type::Scalar(Scalar::I32));
        let mut body = vec![
            op(OpKind::Const(Const::Int(1, Scalar::I32)), vec![], vec![c], vec![]),
            op(OpKind::Bin(crate::ir::BinOp::Add), vec![c, c], vec![live], vec![]),
        ];
        let mut prev = c;
        for _ in 0..2000 {
            let x = f.new_value(Type::Scalar(Scalar::I32));
            body.push(op(OpKind::Bin(crate::ir::BinOp::Mul), vec![prev, prev], vec![x], vec![]));
            prev = x;
        }
        let iv = f.new_value(Type::Scalar(Scalar::I32));
        body.push(op(OpKind::Store(vec![crate::ir::Index::At]), vec![arr, iv, live], vec![], vec![]));
        body.push(op(OpKind::Yield, vec![], vec![], vec![]));
        let lo = f.new_value(Type::Scalar(Scalar::I32));
        f.body.ops.push(op(OpKind::Const(Const::Int(0, Scalar::I32)), vec![], vec![lo], vec![]));
        f.body.ops.push(op(OpKind::For, vec![lo, lo, lo], vec![], vec![Region { params: vec![iv], ops: body }]));
        f.body.ops.push(op(OpKind::Return, vec![], vec![], vec![]));
        let mut m = Module { funcs: vec![f], ..Default::default() };
        run(&mut m);
        let ops = &m.funcs[0].body.ops[1].regions[0].ops;
        let kinds: Vec<String> = ops.iter().map(|o| crate::print::op_name(&o.kind)).collect();
        assert_eq!(kinds, ["const 1", "add", "store[i]", "yield"]);
    }
}
