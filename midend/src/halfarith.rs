//! Lowering of `f16` and `bf16` arithmetic to `f32` (language §3.5): the frontend types values
//! of the half types as such; this lowering, which the frontend runs on every module it
//! builds, retypes them as `f32` and rounds the result of every operation that computes one
//! to the half type (`UnOp::RoundF16`, `UnOp::RoundBf16`). Afterwards only array elements
//! have the half types (the verifier's invariant), and every target computes the same bits.
//!
//! Rounding an `f32` result of `+ - * /` or `sqrt` on half operands gives the correctly
//! rounded half result: `f32`'s 24 bits are at least `2p + 2` for `f16` (p = 11) and `bf16`
//! (p = 8), so the double rounding is innocuous (S. Figueroa, "When is double rounding
//! innocuous?", SIGNUM Newsletter 30(3), 1995). Operations over many elements (`sum`, `@`,
//! scans, factorizations) compute in `f32` and round their results once, as Triton and tensor
//! cores do. Ops that only move, select or compare values (extracts, transposes, `where`,
//! `min`, `max`, negation) need no rounding and get none.
//!
//! A conversion from `f64` to a half type rounds to `f32` with round-to-odd first (the
//! inexact result's last bit set), which makes the second rounding exact (Boldo and
//! Melquiond, "Emulation of FMA and correctly rounded sums: proved algorithms using rounding
//! to odd", IEEE TC 57(4), 2008); integers convert through `f64`.

use crate::ir::*;
use crate::types::{Scalar, Type};
use std::collections::HashMap;

/// Lowers the half-typed values of every function of `m` (see the module docs), and gives
/// scalar kernel parameters declared `f16` or `bf16` the `f32` kind that launches bind.
pub fn lower(m: &mut Module) {
    for f in &mut m.funcs {
        lower_function(f);
    }
    for k in &mut m.kernels {
        for p in &mut k.params {
            if let ParamKind::Scalar(s) = &mut p.kind {
                *s = s.compute();
            }
        }
    }
}

/// The half type of a scalar or tile type, if it has one (arrays keep their element type).
fn half_of(t: &Type) -> Option<Scalar> {
    match t {
        Type::Scalar(s) | Type::Tile { elem: s, .. } if s.is_half() => Some(*s),
        _ => None,
    }
}

/// `t` with `f32` for its half element type.
fn widened(t: &Type) -> Type {
    match t {
        Type::Scalar(s) => Type::Scalar(s.compute()),
        Type::Tile { elem, shape } => Type::Tile { elem: elem.compute(), shape: shape.clone() },
        other => other.clone(),
    }
}

/// The rounding op to the half type `h`.
fn round_op(h: Scalar) -> OpKind {
    OpKind::Un(if h == Scalar::F16 { UnOp::RoundF16 } else { UnOp::RoundBf16 })
}

/// Whether an op with operands rounded to a half type gives results of that type without
/// rounding: it moves, selects, negates or compares values, or (`map`, `for`, `if`, `while`,
/// calls) its results are values that its regions or callee rounded.
fn exact(kind: &OpKind) -> bool {
    matches!(
        kind,
        OpKind::Select
            | OpKind::Bitcast(_)
            | OpKind::Un(UnOp::Neg | UnOp::Abs | UnOp::RoundF16 | UnOp::RoundBf16)
            | OpKind::Bin(BinOp::Min | BinOp::Max)
            | OpKind::Reduce(Reduce::Max | Reduce::Min, _)
            | OpKind::Scan(Reduce::Max | Reduce::Min, _)
            | OpKind::Fill(Fill::Zeros | Fill::Eye | Fill::Full)
            | OpKind::Extract
            | OpKind::Insert
            | OpKind::ExtractLine(_)
            | OpKind::InsertLine(_)
            | OpKind::Transpose
            | OpKind::Broadcast
            | OpKind::ExtractBlock(_)
            | OpKind::InsertBlock(_)
            | OpKind::Reshape
            | OpKind::Flip(_)
            | OpKind::Shuffle
            | OpKind::Map
            | OpKind::For
            | OpKind::If
            | OpKind::While
            | OpKind::Call(_)
    )
}

fn lower_function(f: &mut Function) {
    let old: Vec<Type> = f.values.iter().map(|d| d.ty.clone()).collect();
    if old.iter().all(|t| half_of(t).is_none()) {
        return;
    }
    for d in &mut f.values {
        d.ty = widened(&d.ty);
    }
    f.ret = f.ret.iter().map(widened).collect();
    let mut body = std::mem::take(&mut f.body);
    let mut cx = Cx { f, old: &old, extra: HashMap::new(), subst: HashMap::new() };
    cx.region(&mut body);
    // Scalar kernel parameters come from the host as `f32`: rounded on entry. A `fn`'s
    // parameters are its callers' values, rounded already.
    if cx.f.kind != FuncKind::Fn {
        let mut entry = Vec::new();
        for p in &mut body.params {
            if let Some(h) = half_of(&old[p.0 as usize]) {
                let raw = cx.f.new_value(widened(&old[p.0 as usize]));
                let loc = body.ops.first().map(|o| o.loc).unwrap_or_default();
                entry.push(Op { kind: round_op(h), args: vec![raw], results: vec![*p], regions: vec![], loc });
                *p = raw;
            }
        }
        body.ops.splice(0..0, entry);
    }
    f.body = body;
}

struct Cx<'a> {
    f: &'a mut Function,
    /// The types before lowering, by value.
    old: &'a [Type],
    /// `f32` values that hold values of a half type besides the half-typed ones: loads from
    /// arrays of it, and the elements of such loads in a `map`.
    extra: HashMap<Value, Scalar>,
    /// Results of dropped ops (conversions that change nothing) and the values they equal.
    subst: HashMap<Value, Value>,
}

impl Cx<'_> {
    fn old(&self, v: Value) -> &Type {
        &self.old[v.0 as usize]
    }

    /// The half type whose values `v` holds, if known: every half-typed value is rounded by
    /// construction.
    fn rounded_to(&self, v: Value) -> Option<Scalar> {
        half_of(self.old(v)).or_else(|| self.extra.get(&v).copied())
    }

    fn region(&mut self, r: &mut Region) {
        let ops = std::mem::take(&mut r.ops);
        for mut op in ops {
            for a in &mut op.args {
                if let Some(s) = self.subst.get(a) {
                    *a = *s;
                }
            }
            if op.kind == OpKind::Map {
                for reg in &op.regions {
                    for (p, a) in reg.params.iter().zip(&op.args) {
                        if let Some(h) = self.rounded_to(*a) {
                            self.extra.insert(*p, h);
                        }
                    }
                }
            }
            for reg in &mut op.regions {
                self.region(reg);
            }
            self.op(op, &mut r.ops);
        }
    }

    /// Appends `op`, lowered, to `out`.
    fn op(&mut self, mut op: Op, out: &mut Vec<Op>) {
        let loc = op.loc;
        match op.kind {
            OpKind::Const(Const::Float(v, h)) if h.is_half() => {
                op.kind = OpKind::Const(Const::Float(h.round(v), Scalar::F32));
                out.push(op);
                return;
            }
            OpKind::Bitcast(h) if h.is_half() => op.kind = OpKind::Bitcast(Scalar::F32),
            OpKind::Load(_) => {
                if let Type::Array { elem, .. } = self.old(op.args[0]) {
                    if elem.is_half() {
                        self.extra.insert(op.results[0], *elem);
                    }
                }
            }
            OpKind::Cast(to) => {
                let from = self.old(op.args[0]).elem();
                let same = if to.is_half() { self.rounded_to(op.args[0]) == Some(to) } else { from.is_half() };
                if same && to.compute() == Scalar::F32 {
                    // The value is an `f32` already and a value of `to` (`X[i] as f16` of an
                    // `f16` array, `h as f32`): the conversion changes nothing.
                    self.subst.insert(op.results[0], op.args[0]);
                    return;
                }
                if let Some(h) = Some(to).filter(|t| t.is_half()) {
                    self.cast_to_half(op, from, h, out);
                    return;
                }
            }
            _ => {}
        }
        let mut after = Vec::new();
        if !exact(&op.kind) {
            for r in &mut op.results {
                if let Some(h) = half_of(self.old(*r)) {
                    let raw = self.f.new_value(widened(self.old(*r)));
                    after.push(Op { kind: round_op(h), args: vec![raw], results: vec![*r], regions: vec![], loc });
                    *r = raw;
                }
            }
        }
        out.push(op);
        out.extend(after);
    }

    /// `x as h` from a scalar of type `from` (the frontend casts tiles element by element).
    fn cast_to_half(&mut self, op: Op, from: Scalar, h: Scalar, out: &mut Vec<Op>) {
        let (x, res, loc) = (op.args[0], op.results[0], op.loc);
        let mut e = Emit { f: self.f, out, loc };
        let f32v = match from {
            Scalar::F32 | Scalar::F16 | Scalar::BF16 => x,
            Scalar::F64 => e.odd_f32(x),
            s if s.is_int() => {
                let d = e.op(OpKind::Cast(Scalar::F64), vec![x], Scalar::F64);
                e.odd_f32(d)
            }
            _ => e.op(OpKind::Cast(Scalar::F32), vec![x], Scalar::F32),
        };
        out.push(Op { kind: round_op(h), args: vec![f32v], results: vec![res], regions: vec![], loc });
    }
}

/// Appends scalar ops at one source location.
struct Emit<'a> {
    f: &'a mut Function,
    out: &'a mut Vec<Op>,
    loc: Loc,
}

impl Emit<'_> {
    fn op(&mut self, kind: OpKind, args: Vec<Value>, ty: Scalar) -> Value {
        let v = self.f.new_value(Type::Scalar(ty));
        self.out.push(Op { kind, args, results: vec![v], regions: vec![], loc: self.loc });
        v
    }

    /// The `f64` `x` rounded to `f32` with round-to-odd: truncated toward zero, and the last
    /// bit set when that was inexact. From the nearest `f32` `t`: exact, `t`; `|x| > |t|`, `t`
    /// with its last bit set; else the next `f32` toward zero with its last bit set
    /// (`(t - 1) | 1` on the bits, `t` itself when its last bit is set).
    fn odd_f32(&mut self, x: Value) -> Value {
        use Scalar::{Bool, F32, F64, I32};
        let t = self.op(OpKind::Cast(F32), vec![x], F32);
        let back = self.op(OpKind::Cast(F64), vec![t], F64);
        let inexact = self.op(OpKind::Cmp(CmpOp::Ne), vec![back, x], Bool);
        let ax = self.op(OpKind::Un(UnOp::Abs), vec![x], F64);
        let at = self.op(OpKind::Un(UnOp::Abs), vec![back], F64);
        let away = self.op(OpKind::Cmp(CmpOp::Gt), vec![ax, at], Bool);
        let bits = self.op(OpKind::Bitcast(I32), vec![t], I32);
        let one = self.op(OpKind::Const(Const::Int(1, I32)), vec![], I32);
        let up = self.op(OpKind::Bin(BinOp::Or), vec![bits, one], I32);
        let dec = self.op(OpKind::Bin(BinOp::Sub), vec![bits, one], I32);
        let down = self.op(OpKind::Bin(BinOp::Or), vec![dec, one], I32);
        let odd = self.op(OpKind::Select, vec![away, up, down], I32);
        let r = self.op(OpKind::Select, vec![inexact, odd, bits], I32);
        self.op(OpKind::Bitcast(F32), vec![r], F32)
    }
}
