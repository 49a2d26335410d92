//! Pass `guard-select` (run by both CPU backends on their own copy of a module): a scalar
//! `select %c, %a, %b` whose operand `%a` (or `%b`) is the result of a libm-backed function
//! (`exp` and `tanh` but of `f32`, which are computed inline, `log`, `sin`, `cos`, `exp2`,
//! `log2`) of the same region used by nothing else becomes an `if` that computes it only when it is
//! chosen:
//!
//! ```text
//! %e = exp %t : f32                    %y = if %c : f32 {
//! %y = select %c, %e, %z : f32   =>      %e = exp %t : f32
//!                                        yield %e
//!                                      } else {
//!                                        yield %z
//!                                      }
//! ```
//!
//! In a `map` body this is `where(keep, map(expo, x), 0.0)` after `fuse-maps`: the masked
//! softmax of `examples/attention.tile` in `f64` (causal, 29 of 32 keys) calls `exp` for 435
//! of the 1024 elements of a tile instead of all of them. The chosen value is the same, so no
//! result changes. The `f32` `sin` and `cos` are inline too (`codegen-cpu/src/sinf.rs`), but
//! longer: they stay guarded, and Cranelift's vector `map`s compute both branches of such an
//! `if` on the vector and select (`codegen-cpu/src/vmap.rs`). On the CPU the others are a call
//! per element; GPUs evaluate them with a few instructions on every lane, where a branch would
//! cost more, so the SIMT lowering does not see this pass.

use crate::ir::*;
use std::collections::HashMap;

/// Whether `op` is a scalar function that the CPU backends call the C library for (not the
/// `f32` `exp` and `tanh`, which they compute inline, on vectors in a `map`:
/// `codegen-cpu/src/expf.rs`, `tanhf.rs`).
fn costly(op: &Op, values: &[ValueData]) -> bool {
    let inline = matches!(op.kind, OpKind::Un(UnOp::Exp | UnOp::Tanh))
        && op
            .results
            .first()
            .is_some_and(|r| values[r.0 as usize].ty == crate::types::Type::Scalar(crate::types::Scalar::F32));
    matches!(op.kind, OpKind::Un(UnOp::Exp | UnOp::Log | UnOp::Sin | UnOp::Cos | UnOp::Tanh | UnOp::Exp2 | UnOp::Log2))
        && op.results.len() == 1
        && !inline
}

/// Runs the pass over every function of a module.
pub fn run(m: &mut Module) {
    for f in &mut m.funcs {
        let mut uses = HashMap::new();
        f.body.count_uses(&mut uses);
        let Function { body, values, .. } = f;
        guard(body, &uses, values);
    }
}

fn guard(r: &mut Region, uses: &HashMap<Value, usize>, values: &[ValueData]) {
    for op in &mut r.ops {
        for reg in &mut op.regions {
            guard(reg, uses, values);
        }
    }
    // Where each result of this region's ops is defined.
    let mut def: HashMap<Value, usize> = HashMap::new();
    let mut moved = vec![false; r.ops.len()];
    for i in 0..r.ops.len() {
        if r.ops[i].kind == OpKind::Select && r.ops[i].results.len() == 1 {
            let [c, a, b] = r.ops[i].args[..] else { continue };
            // The arms' costly producers, defined earlier in this region and used only here.
            let arm = |v: Value| {
                def.get(&v)
                    .copied()
                    .filter(|&j| v != c && a != b && uses.get(&v) == Some(&1) && costly(&r.ops[j], values))
            };
            let (ja, jb) = (arm(a), arm(b));
            if ja.is_some() || jb.is_some() {
                let loc = r.ops[i].loc;
                let mut branch = |j: Option<usize>, y: Value, r: &mut Region| -> Region {
                    let mut body = Vec::new();
                    if let Some(j) = j {
                        body.push(r.take_op(j));
                        moved[j] = true;
                    }
                    body.push(Op { kind: OpKind::Yield, args: vec![y], results: vec![], regions: vec![], loc });
                    Region { params: vec![], ops: body }
                };
                let then = branch(ja, a, r);
                let els = branch(jb, b, r);
                let sel = &mut r.ops[i];
                sel.kind = OpKind::If;
                sel.args = vec![c];
                sel.regions = vec![then, els];
            }
        }
        for res in &r.ops[i].results {
            def.insert(*res, i);
        }
    }
    r.remove_ops(&moved);
}
