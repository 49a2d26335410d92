//! Scalar operations of the SIMT form as SPIR-V instructions (GLSL.std.450 for math), and
//! the dispatch of every operation.

use crate::module::{Gen, Held};
use crate::{err, SpirvError};
use rspirv::dr::Operand;
use rspirv::spirv::{GlslStd450Op as GLOp, Word};
use tilec_midend::{BinOp, CmpOp, Const, Op, OpKind, Region, Scalar, UnOp, Value};

/// Maps rspirv's builder errors.
pub(crate) fn be(e: rspirv::dr::Error) -> SpirvError {
    err(e.to_string())
}

impl Gen<'_> {
    /// The id of scalar value `v`.
    pub(crate) fn id(&self, v: Value) -> Result<Word, SpirvError> {
        match self.held.get(&v) {
            Some(Held::Id(w)) => Ok(*w),
            _ => Err(err(format!("%{} has no scalar id", v.0))),
        }
    }

    pub(crate) fn elem(&self, v: Value) -> Scalar {
        self.k.func.ty(v).elem()
    }

    pub(crate) fn glsl(&mut self, s: Scalar, op: GLOp, args: &[Word]) -> Result<Word, SpirvError> {
        let t = self.ty(s);
        let ops = args.iter().map(|a| Operand::IdRef(*a));
        self.b.ext_inst(t, None, self.glsl, op as u32, ops).map_err(be)
    }

    /// Emits the ops of a region; returns true if it ended in a terminator (`return`). A
    /// `yield` is left to the caller (see `region_yield`).
    pub(crate) fn region(&mut self, r: &Region) -> Result<bool, SpirvError> {
        for op in &r.ops {
            let returned = self.op(op).map_err(|e| e.at(op.loc))?;
            if returned {
                return Ok(true);
            }
        }
        Ok(false)
    }

    /// Emits one op; returns true if it was a `return`.
    fn op(&mut self, op: &Op) -> Result<bool, SpirvError> {
        if matches!(op.kind, OpKind::AtomicAdd(_) | OpKind::AtomicRmw(_)) && self.elem(op.args[0]).is_half() {
            let e = self.elem(op.args[0]).name();
            return Err(err(format!(
                "atomics on {e} arrays are not supported on Vulkan (no 16-bit atomics); \
                 run on the CPU or with --target cuda, or update an f32 array"
            )));
        }
        match &op.kind {
            OpKind::For => self.for_loop(op)?,
            OpKind::While => self.while_loop(op)?,
            OpKind::If => self.if_op(op)?,
            OpKind::Return => {
                self.b.ret().map_err(be)?;
                return Ok(true);
            }
            OpKind::Yield => return Err(err("yield outside a structured region")),
            OpKind::Load(_)
            | OpKind::LoadInto(_)
            | OpKind::Store(_)
            | OpKind::AtomicAdd(_)
            | OpKind::AllocShared(_)
            | OpKind::Barrier => self.memory_op(op)?,
            OpKind::AtomicRmw(k) => self.rmw_op(op, *k)?,
            _ => {
                let v = self.scalar_op(op)?;
                self.held.insert(op.results[0], Held::Id(v));
            }
        }
        Ok(false)
    }

    fn scalar_op(&mut self, op: &Op) -> Result<Word, SpirvError> {
        let rs = op.results.first().map(|r| self.elem(*r)).ok_or_else(|| err("op without result"))?;
        let t = self.ty(rs);
        let a = |g: &Self, i: usize| g.id(op.args[i]);
        Ok(match &op.kind {
            OpKind::Const(c) => match c {
                Const::Bool(b) => self.constant_bits(Scalar::Bool, *b as u64),
                Const::Int(v, s) if s.bytes() == 8 => self.constant_bits(*s, *v as u64),
                Const::Int(v, s) => self.constant_bits(*s, *v as u32 as u64),
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
                let (t, x) = (self.ty(*to), a(self, 0)?);
                self.b.bitcast(t, None, x).map_err(be)?
            }
            OpKind::Select => {
                let (c, x, y) = (a(self, 0)?, a(self, 1)?, a(self, 2)?);
                self.b.select(t, None, c, x, y).map_err(be)?
            }
            OpKind::Fma => {
                let (x, y, z) = (a(self, 0)?, a(self, 1)?, a(self, 2)?);
                self.glsl(rs, GLOp::Fma, &[x, y, z])?
            }
            OpKind::ProgramId(ax) => {
                let uvec3 = self.b.type_vector(self.t_u32, 3);
                let w = self.b.load(uvec3, None, self.wg_id, None, []).map_err(be)?;
                let c = self.b.composite_extract(self.t_u32, None, w, [*ax as u32]).map_err(be)?;
                let base = self.param_word(3 + *ax as u32)?;
                let s = self.b.i_add(self.t_u32, None, c, base).map_err(be)?;
                self.b.bitcast(self.t_i32, None, s).map_err(be)?
            }
            OpKind::NumPrograms(ax) => {
                let w = self.param_word(*ax as u32)?;
                self.b.bitcast(self.t_i32, None, w).map_err(be)?
            }
            OpKind::Dim(ax) => self.dim(op.args[0], *ax as u32)?,
            OpKind::LaneId => {
                let l = self.b.load(self.t_u32, None, self.lane_var, None, []).map_err(be)?;
                self.b.bitcast(self.t_i32, None, l).map_err(be)?
            }
            OpKind::Shuffle => {
                let (x, src) = (a(self, 0)?, a(self, 1)?);
                let src = self.b.bitcast(self.t_u32, None, src).map_err(be)?;
                let scope = self.u32c(3);
                self.b.group_non_uniform_shuffle(t, None, scope, x, src).map_err(be)?
            }
            other => return Err(err(format!("`{}` is not in SIMT form", tilec_midend::print::op_name(other)))),
        })
    }

    pub(crate) fn bin(&mut self, k: BinOp, s: Scalar, x: Word, y: Word) -> Result<Word, SpirvError> {
        let t = self.ty(s);
        let b = &mut self.b;
        Ok(if s.is_float() {
            match k {
                BinOp::Add => b.f_add(t, None, x, y),
                BinOp::Sub => b.f_sub(t, None, x, y),
                BinOp::Mul => b.f_mul(t, None, x, y),
                BinOp::Div => b.f_div(t, None, x, y),
                // midend/src/simt/numerics.rs writes these out in compares, selects and `Trunc`.
                BinOp::Rem | BinOp::Min | BinOp::Max => return Err(err(format!("float {k:?} in SIMT form"))),
                BinOp::And | BinOp::Or => return Err(err("logical op on floats")),
            }
            .map_err(be)?
        } else if s == Scalar::Bool {
            match k {
                BinOp::And => b.logical_and(t, None, x, y),
                BinOp::Or => b.logical_or(t, None, x, y),
                _ => return Err(err("arithmetic on bool")),
            }
            .map_err(be)?
        } else {
            let signed = s != Scalar::U32;
            match k {
                BinOp::Add => b.i_add(t, None, x, y).map_err(be)?,
                BinOp::Sub => b.i_sub(t, None, x, y).map_err(be)?,
                BinOp::Mul => b.i_mul(t, None, x, y).map_err(be)?,
                BinOp::And => b.bitwise_and(t, None, x, y).map_err(be)?,
                BinOp::Or => b.bitwise_or(t, None, x, y).map_err(be)?,
                BinOp::Min => return self.glsl(s, if signed { GLOp::SMin } else { GLOp::UMin }, &[x, y]),
                BinOp::Max => return self.glsl(s, if signed { GLOp::SMax } else { GLOp::UMax }, &[x, y]),
                // The SIMT lowering guards divisors (no 0, no MIN / -1): plain division.
                BinOp::Div if signed => self.b.s_div(t, None, x, y).map_err(be)?,
                BinOp::Rem if signed => self.b.s_rem(t, None, x, y).map_err(be)?,
                BinOp::Div => self.b.u_div(t, None, x, y).map_err(be)?,
                BinOp::Rem => self.b.u_mod(t, None, x, y).map_err(be)?,
            }
        })
    }

    fn cmp(&mut self, k: CmpOp, s: Scalar, x: Word, y: Word) -> Result<Word, SpirvError> {
        let t = self.t_bool;
        let b = &mut self.b;
        let r = if s.is_float() {
            match k {
                CmpOp::Eq => b.f_ord_equal(t, None, x, y),
                CmpOp::Ne => b.f_unord_not_equal(t, None, x, y),
                CmpOp::Lt => b.f_ord_less_than(t, None, x, y),
                CmpOp::Le => b.f_ord_less_than_equal(t, None, x, y),
                CmpOp::Gt => b.f_ord_greater_than(t, None, x, y),
                CmpOp::Ge => b.f_ord_greater_than_equal(t, None, x, y),
            }
        } else if s == Scalar::Bool {
            match k {
                CmpOp::Eq => b.logical_equal(t, None, x, y),
                CmpOp::Ne => b.logical_not_equal(t, None, x, y),
                _ => return Err(err("ordering of bools")),
            }
        } else if s == Scalar::U32 {
            match k {
                CmpOp::Eq => b.i_equal(t, None, x, y),
                CmpOp::Ne => b.i_not_equal(t, None, x, y),
                CmpOp::Lt => b.u_less_than(t, None, x, y),
                CmpOp::Le => b.u_less_than_equal(t, None, x, y),
                CmpOp::Gt => b.u_greater_than(t, None, x, y),
                CmpOp::Ge => b.u_greater_than_equal(t, None, x, y),
            }
        } else {
            match k {
                CmpOp::Eq => b.i_equal(t, None, x, y),
                CmpOp::Ne => b.i_not_equal(t, None, x, y),
                CmpOp::Lt => b.s_less_than(t, None, x, y),
                CmpOp::Le => b.s_less_than_equal(t, None, x, y),
                CmpOp::Gt => b.s_greater_than(t, None, x, y),
                CmpOp::Ge => b.s_greater_than_equal(t, None, x, y),
            }
        };
        r.map_err(be)
    }

    fn unary(&mut self, k: UnOp, s: Scalar, x: Word) -> Result<Word, SpirvError> {
        let t = self.ty(s);
        let gl = match k {
            UnOp::Neg if s.is_float() => return self.b.f_negate(t, None, x).map_err(be),
            UnOp::Neg => return self.b.s_negate(t, None, x).map_err(be),
            UnOp::Not => return self.b.logical_not(t, None, x).map_err(be),
            UnOp::Abs if s.is_float() => GLOp::FAbs,
            UnOp::Abs if s == Scalar::U32 => return Ok(x),
            UnOp::Abs => GLOp::SAbs,
            UnOp::Sqrt => GLOp::Sqrt,
            UnOp::Trunc if s.is_float() => GLOp::Trunc,
            UnOp::Trunc => return Ok(x),
            UnOp::RoundF16 | UnOp::RoundBf16 => {
                let h = k.rounds_to().expect("a rounding");
                let bits = self.narrow_stored(h, x)?;
                return self.widen_loaded(h, bits);
            }
            UnOp::Exp => GLOp::Exp,
            UnOp::Log => GLOp::Log,
            UnOp::Sin => GLOp::Sin,
            UnOp::Cos => GLOp::Cos,
            UnOp::Tanh => GLOp::Tanh,
            UnOp::Exp2 => GLOp::Exp2,
            UnOp::Log2 => GLOp::Log2,
        };
        if s == Scalar::F64 && !matches!(gl, GLOp::FAbs | GLOp::Sqrt | GLOp::Trunc) {
            // GLSL.std.450 has these for 16- and 32-bit floats only; the SIMT lowering expands
            // the f64 ones into arithmetic (midend/src/simt/math.rs).
            return Err(err(format!("f64 {k:?} in SIMT form (the SIMT lowering expands it)")));
        }
        self.glsl(s, gl, &[x])
    }

    fn cast(&mut self, from: Scalar, to: Scalar, x: Word) -> Result<Word, SpirvError> {
        let t = self.ty(to);
        if from == to {
            return Ok(x);
        }
        if from == Scalar::Bool {
            let (one, zero) = (self.constant(to, 1.0), self.constant(to, 0.0));
            return self.b.select(t, None, x, one, zero).map_err(be);
        }
        if to == Scalar::Bool {
            let zero = self.constant(from, 0.0);
            return self.cmp(CmpOp::Ne, from, x, zero);
        }
        let b = &mut self.b;
        match (from.is_float(), to.is_float()) {
            (true, true) => b.f_convert(t, None, x),
            (true, false) if to == Scalar::U32 => b.convert_f_to_u(t, None, x),
            (true, false) => b.convert_f_to_s(t, None, x),
            (false, true) if from == Scalar::U32 => b.convert_u_to_f(t, None, x),
            (false, true) => b.convert_s_to_f(t, None, x),
            (false, false) if from.bytes() == to.bytes() => b.bitcast(t, None, x),
            (false, false) if from == Scalar::U32 => b.u_convert(t, None, x),
            (false, false) => b.s_convert(t, None, x),
        }
        .map_err(be)
    }
}
