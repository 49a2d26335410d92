//! Scalar operations: constants, arithmetic (integer division by zero gives 0 instead of
//! trapping), comparisons, casts, math functions, program ids and array extents.

use crate::lower::{cl_type, Lower};
use crate::{err, CodegenError};
use cranelift_codegen::ir::{self, condcodes::FloatCC, condcodes::IntCC, types, InstBuilder, MemFlagsData};
use cranelift_module::Module as ClModule;
use tilec_midend::{BinOp, CmpOp, Const, Op, OpKind, Scalar, UnOp};

impl<M: ClModule> Lower<'_, '_, M> {
    /// A constant of scalar type `s`.
    pub(crate) fn const_val(&mut self, c: Const, s: Scalar) -> ir::Value {
        match s {
            Scalar::F32 => self.b.ins().f32const(c.as_f64() as f32),
            Scalar::F64 => self.b.ins().f64const(c.as_f64()),
            _ => self.b.ins().iconst(cl_type(s), c.as_i64()),
        }
    }

    /// `a op b` on scalars (or vectors of floats for the float ops) of element type `s`.
    pub(crate) fn bin(&mut self, op: BinOp, s: Scalar, a: ir::Value, b: ir::Value) -> ir::Value {
        let i = &mut self.b;
        if s.is_float() {
            return match op {
                BinOp::Add => i.ins().fadd(a, b),
                BinOp::Sub => i.ins().fsub(a, b),
                BinOp::Mul => i.ins().fmul(a, b),
                BinOp::Div => i.ins().fdiv(a, b),
                BinOp::Min => i.ins().fmin(a, b),
                BinOp::Max => i.ins().fmax(a, b),
                BinOp::Rem => {
                    // a - trunc(a / b) * b, as C's fmod for finite operands.
                    let q = i.ins().fdiv(a, b);
                    let t = i.ins().trunc(q);
                    let p = i.ins().fmul(t, b);
                    i.ins().fsub(a, p)
                }
                BinOp::And | BinOp::Or => a,
            };
        }
        let signed = s != Scalar::U32;
        match op {
            BinOp::Add => i.ins().iadd(a, b),
            BinOp::Sub => i.ins().isub(a, b),
            BinOp::Mul => i.ins().imul(a, b),
            BinOp::And => i.ins().band(a, b),
            BinOp::Or => i.ins().bor(a, b),
            BinOp::Min if signed => i.ins().smin(a, b),
            BinOp::Min => i.ins().umin(a, b),
            BinOp::Max if signed => i.ins().smax(a, b),
            BinOp::Max => i.ins().umax(a, b),
            BinOp::Div | BinOp::Rem => {
                // Division by zero gives 0 and MIN / -1 wraps, instead of trapping.
                let ty = cl_type(s);
                let zero = i.ins().iconst(ty, 0);
                let one = i.ins().iconst(ty, 1);
                let is_zero = i.ins().icmp(IntCC::Equal, b, zero);
                let safe = i.ins().select(is_zero, one, b);
                let r = if signed {
                    let m1 = i.ins().iconst(ty, -1);
                    let is_m1 = i.ins().icmp(IntCC::Equal, safe, m1);
                    let safe2 = i.ins().select(is_m1, one, safe);
                    if op == BinOp::Div {
                        let q = i.ins().sdiv(a, safe2);
                        let neg = i.ins().ineg(a);
                        i.ins().select(is_m1, neg, q)
                    } else {
                        let r = i.ins().srem(a, safe2);
                        i.ins().select(is_m1, zero, r)
                    }
                } else if op == BinOp::Div {
                    i.ins().udiv(a, safe)
                } else {
                    i.ins().urem(a, safe)
                };
                i.ins().select(is_zero, zero, r)
            }
        }
    }

    /// A unary operation on a scalar of type `s`.
    /// `-a` for a scalar (or a vector of floats) of `s`: exact; integers wrap.
    pub(crate) fn neg(&mut self, s: Scalar, a: ir::Value) -> ir::Value {
        if s.is_float() {
            self.b.ins().fneg(a)
        } else {
            self.b.ins().ineg(a)
        }
    }

    pub(crate) fn unary(&mut self, op: UnOp, s: Scalar, a: ir::Value) -> Result<ir::Value, CodegenError> {
        let f32 = s == Scalar::F32;
        let name = match op {
            UnOp::Neg => return Ok(self.neg(s, a)),
            UnOp::Not => {
                let one = self.b.ins().iconst(types::I8, 1);
                return Ok(self.b.ins().bxor(a, one));
            }
            UnOp::Abs if s.is_float() => return Ok(self.b.ins().fabs(a)),
            UnOp::Abs => {
                if s == Scalar::U32 {
                    return Ok(a);
                }
                let n = self.b.ins().ineg(a);
                return Ok(self.b.ins().smax(a, n));
            }
            UnOp::Sqrt => return Ok(self.b.ins().sqrt(a)),
            UnOp::RoundF16 | UnOp::RoundBf16 => return Ok(self.round_half(op.rounds_to().expect("a rounding"), a)),
            UnOp::Trunc if s.is_float() => return Ok(self.b.ins().trunc(a)),
            UnOp::Trunc => return Ok(a),
            k if f32 && crate::expf::is_own(k) => return crate::expf::own(self, k, a),
            UnOp::Exp => "exp",
            UnOp::Log => {
                if f32 {
                    "logf"
                } else {
                    "log"
                }
            }
            UnOp::Sin => {
                if f32 {
                    "sinf"
                } else {
                    "sin"
                }
            }
            UnOp::Cos => {
                if f32 {
                    "cosf"
                } else {
                    "cos"
                }
            }
            UnOp::Tanh => "tanh",
            UnOp::Exp2 => {
                if f32 {
                    "exp2f"
                } else {
                    "exp2"
                }
            }
            UnOp::Log2 => {
                if f32 {
                    "log2f"
                } else {
                    "log2"
                }
            }
        };
        let f = self.libm(name, cl_type(s))?;
        let call = self.b.ins().call(f, &[a]);
        Ok(self.b.inst_results(call)[0])
    }

    pub(crate) fn cast(&mut self, from: Scalar, to: Scalar, a: ir::Value) -> ir::Value {
        let (ft, tt) = (cl_type(from), cl_type(to));
        let i = &mut self.b;
        if to == Scalar::Bool {
            return if from.is_float() {
                let z = if from == Scalar::F32 { i.ins().f32const(0.0) } else { i.ins().f64const(0.0) };
                i.ins().fcmp(FloatCC::NotEqual, a, z)
            } else {
                i.ins().icmp_imm_s(IntCC::NotEqual, a, 0)
            };
        }
        match (from.is_float(), to.is_float()) {
            (true, true) if ft == tt => a,
            (true, true) if to == Scalar::F64 => i.ins().fpromote(tt, a),
            (true, true) => i.ins().fdemote(tt, a),
            (true, false) if to == Scalar::U32 => i.ins().fcvt_to_uint_sat(tt, a),
            (true, false) => i.ins().fcvt_to_sint_sat(tt, a),
            (false, true) if from == Scalar::U32 || from == Scalar::Bool => i.ins().fcvt_from_uint(tt, a),
            (false, true) => i.ins().fcvt_from_sint(tt, a),
            (false, false) if ft == tt => a,
            (false, false) if ft.bits() > tt.bits() => i.ins().ireduce(tt, a),
            (false, false) if from == Scalar::U32 || from == Scalar::Bool => i.ins().uextend(tt, a),
            (false, false) => i.ins().sextend(tt, a),
        }
    }

    /// Lowers an operation whose results are scalars.
    pub(crate) fn scalar_op(&mut self, op: &Op) -> Result<(), CodegenError> {
        let res_ty = op.results.first().map(|r| self.f.ty(*r).elem());
        let v = match &op.kind {
            OpKind::Const(c) => self.const_val(*c, c.ty()),
            OpKind::Bin(k) => {
                let (a, b) = (self.val(op.args[0]), self.val(op.args[1]));
                self.bin(*k, res_ty.expect("result"), a, b)
            }
            OpKind::Cmp(k) => {
                let s = self.f.ty(op.args[0]).elem();
                let (a, b) = (self.val(op.args[0]), self.val(op.args[1]));
                self.compare(*k, s, a, b)
            }
            OpKind::Un(k) => {
                let a = self.val(op.args[0]);
                self.unary(*k, res_ty.expect("result"), a)?
            }
            OpKind::Cast(to) => {
                let from = self.f.ty(op.args[0]).elem();
                let a = self.val(op.args[0]);
                self.cast(from, *to, a)
            }
            OpKind::Bitcast(to) => {
                let a = self.val(op.args[0]);
                self.b.ins().bitcast(cl_type(*to), ir::MemFlagsData::new(), a)
            }
            OpKind::Select => {
                let (c, a, b) = (self.val(op.args[0]), self.val(op.args[1]), self.val(op.args[2]));
                self.b.ins().select(c, a, b)
            }
            OpKind::Fma => {
                let (a, b, c) = (self.val(op.args[0]), self.val(op.args[1]), self.val(op.args[2]));
                self.fma(a, b, c)
            }
            OpKind::ProgramId(a) | OpKind::NumPrograms(a) => {
                let off = if matches!(op.kind, OpKind::ProgramId(_)) { 0 } else { 3 };
                let ids = self.ids_ptr();
                let v = self.b.ins().load(types::I64, MemFlagsData::trusted(), ids, 8 * (off + *a as i32));
                self.b.ins().ireduce(types::I32, v)
            }
            OpKind::Dim(a) => {
                let (_, dims) = self.array(op.args[0]);
                self.b.ins().ireduce(types::I32, dims[*a as usize])
            }
            OpKind::Load(kinds) => self.load_scalar(op, kinds)?,
            OpKind::AtomicRmw(k) => self.rmw_scalar(op, *k)?,
            OpKind::Extract => self.extract(op)?,
            OpKind::Reduce(k, None) => self.reduce_all(op, *k)?,
            other => return Err(err(format!("unsupported scalar op {other:?}"))),
        };
        self.bind(op.results[0], v);
        Ok(())
    }

    /// `a k b` for operands of element type `s`: a `bool` for scalars, the mask of the lanes
    /// where it holds for vectors (`vmap.rs`).
    pub(crate) fn compare(&mut self, k: CmpOp, s: Scalar, a: ir::Value, b: ir::Value) -> ir::Value {
        if s.is_float() {
            let cc = match k {
                CmpOp::Eq => FloatCC::Equal,
                CmpOp::Ne => FloatCC::NotEqual,
                CmpOp::Lt => FloatCC::LessThan,
                CmpOp::Le => FloatCC::LessThanOrEqual,
                CmpOp::Gt => FloatCC::GreaterThan,
                CmpOp::Ge => FloatCC::GreaterThanOrEqual,
            };
            return self.b.ins().fcmp(cc, a, b);
        }
        let u = s == Scalar::U32 || s == Scalar::Bool;
        let cc = match (k, u) {
            (CmpOp::Eq, _) => IntCC::Equal,
            (CmpOp::Ne, _) => IntCC::NotEqual,
            (CmpOp::Lt, false) => IntCC::SignedLessThan,
            (CmpOp::Le, false) => IntCC::SignedLessThanOrEqual,
            (CmpOp::Gt, false) => IntCC::SignedGreaterThan,
            (CmpOp::Ge, false) => IntCC::SignedGreaterThanOrEqual,
            (CmpOp::Lt, true) => IntCC::UnsignedLessThan,
            (CmpOp::Le, true) => IntCC::UnsignedLessThanOrEqual,
            (CmpOp::Gt, true) => IntCC::UnsignedGreaterThan,
            (CmpOp::Ge, true) => IntCC::UnsignedGreaterThanOrEqual,
        };
        self.b.ins().icmp(cc, a, b)
    }

    /// `a * b + c`, fused where the host has FMA (as on the GPU targets).
    pub(crate) fn fma(&mut self, a: ir::Value, b: ir::Value, c: ir::Value) -> ir::Value {
        if self.b.func.dfg.value_type(a).lane_type().is_int() {
            let p = self.b.ins().imul(a, b);
            return self.b.ins().iadd(p, c);
        }
        if self.fma {
            self.b.ins().fma(a, b, c)
        } else {
            let p = self.b.ins().fmul(a, b);
            self.b.ins().fadd(p, c)
        }
    }
}
