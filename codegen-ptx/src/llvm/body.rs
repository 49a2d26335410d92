//! Scalar operations of the SIMT form as LLVM instructions and NVPTX intrinsics, and the
//! dispatch of every operation.

use super::{be, err, Gen, Held};
use crate::PtxError;
use inkwell::types::BasicTypeEnum;
use inkwell::values::BasicValueEnum;
use inkwell::IntPredicate;
use tilec_midend::{BinOp, CmpOp, Const, Op, OpKind, Region, Scalar, UnOp};

type V<'ctx> = BasicValueEnum<'ctx>;

impl<'ctx> Gen<'ctx, '_> {
    /// Emits a region's ops; true if it ended with `return`. `yield` is left to the caller.
    pub(crate) fn region(&mut self, r: &Region) -> Result<bool, PtxError> {
        for op in &r.ops {
            let returned = self.op(op).map_err(|e| e.at(op.loc))?;
            if returned {
                return Ok(true);
            }
        }
        Ok(false)
    }

    fn op(&mut self, op: &Op) -> Result<bool, PtxError> {
        match &op.kind {
            OpKind::For => self.for_loop(op)?,
            OpKind::While => self.while_loop(op)?,
            OpKind::If => self.if_op(op)?,
            OpKind::Return => {
                self.b.build_return(None).map_err(be)?;
                return Ok(true);
            }
            OpKind::Yield => return Err(err("yield outside a structured region")),
            OpKind::Load(_)
            | OpKind::LoadInto(_)
            | OpKind::Store(_)
            | OpKind::AtomicAdd(_)
            | OpKind::AllocShared(_)
            | OpKind::Barrier => self.memory_op(op)?,
            OpKind::AtomicRmw(k) => {
                let v = self.rmw(op, *k)?;
                self.held.insert(op.results[0], Held::Val(v));
            }
            _ => {
                let v = self.scalar_op(op)?;
                self.held.insert(op.results[0], Held::Val(v));
            }
        }
        Ok(false)
    }

    fn scalar_op(&mut self, op: &Op) -> Result<V<'ctx>, PtxError> {
        let rs = op.results.first().map(|r| self.elem(*r)).ok_or_else(|| err("op without result"))?;
        let a = |g: &Self, i: usize| g.val(op.args[i]);
        let i32t: BasicTypeEnum<'ctx> = self.cx.i32_type().into();
        Ok(match &op.kind {
            OpKind::Const(c) => match c {
                Const::Bool(b) => self.constant(Scalar::Bool, *b as u8 as f64),
                Const::Int(v, s) => match s {
                    Scalar::I64 => self.cx.i64_type().const_int(*v as u64, true).into(),
                    _ => self.cx.i32_type().const_int(*v as u32 as u64, false).into(),
                },
                Const::Float(v, s) => self.constant(*s, *v),
            },
            OpKind::Bin(k) => {
                let (x, y) = (a(self, 0)?, a(self, 1)?);
                self.bin(*k, rs, x, y)?
            }
            OpKind::Cmp(k) => {
                let s = self.elem(op.args[0]);
                let (x, y) = (a(self, 0)?, a(self, 1)?);
                self.cmp(*k, s, x, y)?
            }
            OpKind::Un(k) => {
                let x = a(self, 0)?;
                self.unary(*k, rs, x)?
            }
            OpKind::Cast(to) => {
                let from = self.elem(op.args[0]);
                let x = a(self, 0)?;
                self.cast(from, *to, x)?
            }
            OpKind::Bitcast(to) => {
                let x = a(self, 0)?;
                self.b.build_bit_cast(x, self.ty(*to), "").map_err(be)?
            }
            OpKind::Select => {
                let (c, x, y) = (a(self, 0)?, a(self, 1)?, a(self, 2)?);
                self.b.build_select(c.into_int_value(), x, y, "").map_err(be)?
            }
            OpKind::Fma => {
                let (x, y, z) = (a(self, 0)?, a(self, 1)?, a(self, 2)?);
                let t = self.ty(rs);
                self.call(&format!("llvm.fma.{}", fname(rs)), t, &[x, y, z])?
            }
            OpKind::ProgramId(0) if self.segment.is_some() => self.segment.expect("segment").program.into(),
            OpKind::ProgramId(ax) => {
                let c = self.call(&format!("llvm.nvvm.read.ptx.sreg.ctaid.{}", axis(*ax)), i32t, &[])?;
                let base = self.param_word(3 + *ax as u32)?;
                self.b.build_int_add(c.into_int_value(), base.into_int_value(), "").map_err(be)?.into()
            }
            OpKind::NumPrograms(ax) => self.param_word(*ax as u32)?,
            OpKind::Dim(ax) => self.dim(op.args[0], *ax as u32)?,
            OpKind::LaneId => match self.segment {
                Some(seg) => seg.lane.into(),
                None => self.call("llvm.nvvm.read.ptx.sreg.tid.x", i32t, &[])?,
            },
            OpKind::Shuffle => {
                let (x, src) = (a(self, 0)?, a(self, 1)?);
                self.shuffle(rs, x, src)?
            }
            other => return Err(err(format!("`{}` is not in SIMT form", tilec_midend::print::op_name(other)))),
        })
    }

    /// `shfl.sync.idx` of a 32-bit word within the program's lanes (the whole warp, or its
    /// segment: `segment.rs`); wider values go as two words, bools as one.
    fn shuffle(&mut self, s: Scalar, x: V<'ctx>, src: V<'ctx>) -> Result<V<'ctx>, PtxError> {
        let i32t = self.cx.i32_type();
        let mask: V<'ctx> = match self.segment {
            Some(seg) => seg.mask.into(),
            None => i32t.const_all_ones().into(),
        };
        let clamp = self.i32c(self.shuffle_clamp() as i64);
        let word = |g: &Self, w: V<'ctx>| g.call("llvm.nvvm.shfl.sync.idx.i32", i32t.into(), &[mask, w, src, clamp]);
        match s {
            Scalar::Bool => {
                let w = self.b.build_int_z_extend(x.into_int_value(), i32t, "").map_err(be)?;
                let r = word(self, w.into())?;
                Ok(self.b.build_int_truncate(r.into_int_value(), self.cx.bool_type(), "").map_err(be)?.into())
            }
            Scalar::I32 | Scalar::U32 => word(self, x),
            Scalar::F32 | Scalar::F16 | Scalar::BF16 => {
                let w = self.b.build_bit_cast(x, i32t, "").map_err(be)?;
                let r = word(self, w)?;
                self.b.build_bit_cast(r, self.cx.f32_type(), "").map_err(be)
            }
            Scalar::F64 | Scalar::I64 => {
                let v2 = i32t.vec_type(2);
                let w = self.b.build_bit_cast(x, v2, "").map_err(be)?.into_vector_value();
                let (z, o) = (i32t.const_zero(), i32t.const_int(1, false));
                let lo = self.b.build_extract_element(w, z, "").map_err(be)?;
                let hi = self.b.build_extract_element(w, o, "").map_err(be)?;
                let (lo, hi) = (word(self, lo)?, word(self, hi)?);
                let v = v2.get_undef();
                let v = self.b.build_insert_element(v, lo, z, "").map_err(be)?;
                let v = self.b.build_insert_element(v, hi, o, "").map_err(be)?;
                self.b.build_bit_cast(v, self.ty(s), "").map_err(be)
            }
        }
    }

    pub(crate) fn bin(&mut self, k: BinOp, s: Scalar, x: V<'ctx>, y: V<'ctx>) -> Result<V<'ctx>, PtxError> {
        let b = &self.b;
        if s.is_float() {
            let (x, y) = (x.into_float_value(), y.into_float_value());
            return Ok(match k {
                BinOp::Add => b.build_float_add(x, y, "").map_err(be)?.into(),
                BinOp::Sub => b.build_float_sub(x, y, "").map_err(be)?.into(),
                BinOp::Mul => b.build_float_mul(x, y, "").map_err(be)?.into(),
                BinOp::Div => b.build_float_div(x, y, "").map_err(be)?.into(),
                // midend/src/simt/numerics.rs writes these out in compares, selects and `trunc`.
                BinOp::Rem | BinOp::Min | BinOp::Max => return Err(err(format!("float {k:?} in SIMT form"))),
                BinOp::And | BinOp::Or => return Err(err("logical op on floats")),
            });
        }
        let (x, y) = (x.into_int_value(), y.into_int_value());
        let signed = s != Scalar::U32;
        Ok(match k {
            BinOp::Add => b.build_int_add(x, y, "").map_err(be)?.into(),
            BinOp::Sub => b.build_int_sub(x, y, "").map_err(be)?.into(),
            BinOp::Mul => b.build_int_mul(x, y, "").map_err(be)?.into(),
            BinOp::And => b.build_and(x, y, "").map_err(be)?.into(),
            BinOp::Or => b.build_or(x, y, "").map_err(be)?.into(),
            BinOp::Min | BinOp::Max => {
                let p = match (k, signed) {
                    (BinOp::Min, true) => IntPredicate::SLT,
                    (BinOp::Min, false) => IntPredicate::ULT,
                    (_, true) => IntPredicate::SGT,
                    (_, false) => IntPredicate::UGT,
                };
                let c = b.build_int_compare(p, x, y, "").map_err(be)?;
                b.build_select(c, x, y, "").map_err(be)?
            }
            // The SIMT lowering guards divisors (no 0, no MIN / -1): plain division.
            BinOp::Div if signed => b.build_int_signed_div(x, y, "").map_err(be)?.into(),
            BinOp::Rem if signed => b.build_int_signed_rem(x, y, "").map_err(be)?.into(),
            BinOp::Div => b.build_int_unsigned_div(x, y, "").map_err(be)?.into(),
            BinOp::Rem => b.build_int_unsigned_rem(x, y, "").map_err(be)?.into(),
        })
    }

    fn cmp(&mut self, k: CmpOp, s: Scalar, x: V<'ctx>, y: V<'ctx>) -> Result<V<'ctx>, PtxError> {
        if s.is_float() {
            return Ok(self.ir().fcmp(tilec_codegen_llvm::float_predicate(k), x, y)?);
        }
        Ok(self.ir().icmp(tilec_codegen_llvm::int_predicate(k, s), x, y)?)
    }

    fn unary(&mut self, k: UnOp, s: Scalar, x: V<'ctx>) -> Result<V<'ctx>, PtxError> {
        let t = self.ty(s);
        match k {
            UnOp::Neg if s.is_float() => {
                return Ok(self.b.build_float_neg(x.into_float_value(), "").map_err(be)?.into())
            }
            UnOp::Neg => return Ok(self.b.build_int_neg(x.into_int_value(), "").map_err(be)?.into()),
            UnOp::Not => return Ok(self.b.build_not(x.into_int_value(), "").map_err(be)?.into()),
            UnOp::Abs if s.is_float() => return self.call(&format!("llvm.fabs.{}", fname(s)), t, &[x]),
            UnOp::Abs if s == Scalar::U32 => return Ok(x),
            UnOp::Abs => {
                let n = self.b.build_int_neg(x.into_int_value(), "").map_err(be)?;
                let c = self
                    .b
                    .build_int_compare(
                        IntPredicate::SLT,
                        x.into_int_value(),
                        x.into_int_value().get_type().const_zero(),
                        "",
                    )
                    .map_err(be)?;
                return self.b.build_select(c, n, x.into_int_value(), "").map_err(be);
            }
            UnOp::Sqrt => return self.call(&format!("llvm.sqrt.{}", fname(s)), t, &[x]),
            UnOp::Trunc if s.is_float() => return self.call(&format!("llvm.trunc.{}", fname(s)), t, &[x]),
            UnOp::Trunc => return Ok(x),
            UnOp::RoundF16 | UnOp::RoundBf16 => {
                let h = k.rounds_to().expect("a rounding");
                let bits = self.narrow_mem(h, x)?;
                return self.widen_mem(h, bits);
            }
            _ => {}
        }
        // f32 transcendental functions with the GPU's fast approximations (as GLSL.std.450
        // on Vulkan); the SIMT lowering expands the f64 ones into arithmetic
        // (midend/src/simt/math.rs).
        if s == Scalar::F64 {
            return Err(err(format!("f64 {k:?} in SIMT form (the SIMT lowering expands it)")));
        }
        let f32t = self.cx.f32_type();
        let xf = x.into_float_value();
        let ft: BasicTypeEnum<'ctx> = f32t.into();
        let c = |v: f64| f32t.const_float(v);
        let r = match k {
            UnOp::Exp => {
                let y = self.b.build_float_mul(xf, c(std::f64::consts::LOG2_E), "").map_err(be)?;
                self.call("llvm.nvvm.ex2.approx.f", ft, &[y.into()])?
            }
            UnOp::Log => {
                let l = self.call("llvm.nvvm.lg2.approx.f", ft, &[xf.into()])?;
                self.b.build_float_mul(l.into_float_value(), c(std::f64::consts::LN_2), "").map_err(be)?.into()
            }
            UnOp::Exp2 => self.call("llvm.nvvm.ex2.approx.f", ft, &[xf.into()])?,
            UnOp::Log2 => self.call("llvm.nvvm.lg2.approx.f", ft, &[xf.into()])?,
            UnOp::Sin => self.call("llvm.nvvm.sin.approx.f", ft, &[xf.into()])?,
            UnOp::Cos => self.call("llvm.nvvm.cos.approx.f", ft, &[xf.into()])?,
            _ => {
                // tanh(x) = 1 - 2 / (e^(2x) + 1).
                let y = self.b.build_float_mul(xf, c(2.0 * std::f64::consts::LOG2_E), "").map_err(be)?;
                let e = self.call("llvm.nvvm.ex2.approx.f", ft, &[y.into()])?.into_float_value();
                let d = self.b.build_float_add(e, c(1.0), "").map_err(be)?;
                let q = self.b.build_float_div(c(2.0), d, "").map_err(be)?;
                self.b.build_float_sub(c(1.0), q, "").map_err(be)?.into()
            }
        };
        Ok(r)
    }

    fn cast(&mut self, from: Scalar, to: Scalar, x: V<'ctx>) -> Result<V<'ctx>, PtxError> {
        if from == to {
            return Ok(x);
        }
        let t = self.ty(to);
        let b = &self.b;
        if to == Scalar::Bool {
            let zero = self.constant(from, 0.0);
            return self.cmp(CmpOp::Ne, from, x, zero);
        }
        if from == Scalar::Bool {
            let (one, zero) = (self.constant(to, 1.0), self.constant(to, 0.0));
            return b.build_select(x.into_int_value(), one, zero, "").map_err(be);
        }
        Ok(match (from.is_float(), to.is_float()) {
            (true, true) => b.build_float_cast(x.into_float_value(), t.into_float_type(), "").map_err(be)?.into(),
            (true, false) => {
                let name = format!(
                    "llvm.fpto{}i.sat.{}.{}",
                    if to == Scalar::U32 { "u" } else { "s" },
                    iname(to),
                    fname(from)
                );
                self.call(&name, t, &[x])?
            }
            (false, true) if from == Scalar::U32 => {
                b.build_unsigned_int_to_float(x.into_int_value(), t.into_float_type(), "").map_err(be)?.into()
            }
            (false, true) => {
                b.build_signed_int_to_float(x.into_int_value(), t.into_float_type(), "").map_err(be)?.into()
            }
            (false, false) => b
                .build_int_cast_sign_flag(x.into_int_value(), t.into_int_type(), from != Scalar::U32, "")
                .map_err(be)?
                .into(),
        })
    }
}

fn fname(s: Scalar) -> &'static str {
    if s == Scalar::F64 {
        "f64"
    } else {
        "f32"
    }
}

fn iname(s: Scalar) -> &'static str {
    if s == Scalar::I64 {
        "i64"
    } else {
        "i32"
    }
}

fn axis(a: u8) -> &'static str {
    ["x", "y", "z"][a as usize % 3]
}
