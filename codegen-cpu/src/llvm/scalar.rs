//! Scalar semantics as LLVM instructions, on scalars or on vectors of them (a tile row): the
//! Cranelift backend's rules (integer division by zero gives 0 and `MIN / -1` wraps; float
//! `min`/`max` propagate NaN and order -0 below +0; casts to integers saturate; `%` on floats
//! is `a - trunc(a / b) * b`; transcendental functions are the C library's), and the lowering
//! of the ops whose results are scalars.

use super::{be, err, Gen, V};
use crate::CodegenError;
use inkwell::types::BasicTypeEnum;
use inkwell::values::IntValue;
use inkwell::{FloatPredicate, IntPredicate};
use tilec_midend::{BinOp, CmpOp, Const, Op, OpKind, Reduce, Scalar, UnOp};

/// The intrinsic suffix of a value's type: `f32`, `v16f32`, `i64`.
pub(crate) fn suffix(v: V<'_>) -> String {
    fn one(t: BasicTypeEnum<'_>) -> String {
        match t {
            BasicTypeEnum::FloatType(f) => {
                if f == f.get_context().f64_type() {
                    "f64".into()
                } else {
                    "f32".into()
                }
            }
            BasicTypeEnum::IntType(i) => format!("i{}", i.get_bit_width()),
            BasicTypeEnum::VectorType(v) => format!("v{}{}", v.get_size(), one(v.get_element_type())),
            _ => "?".into(),
        }
    }
    one(v.get_type())
}

impl<'ctx> Gen<'ctx, '_> {
    /// `x` as a vector of `n` copies (`n` = 0: `x` itself).
    pub(crate) fn splat(&self, x: V<'ctx>, n: u32) -> Result<V<'ctx>, CodegenError> {
        Ok(self.ir().splat(x, n)?)
    }

    /// A constant of type `s` shaped like `like` (a scalar or a vector).
    pub(crate) fn const_like(&self, s: Scalar, v: f64, like: V<'ctx>) -> Result<V<'ctx>, CodegenError> {
        let c = self.constant(s, v);
        match like {
            V::VectorValue(x) => self.splat(c, x.get_type().get_size()),
            _ => Ok(c),
        }
    }

    pub(super) fn op2(
        &self,
        op: inkwell::values::InstructionOpcode,
        a: V<'ctx>,
        b: V<'ctx>,
    ) -> Result<V<'ctx>, CodegenError> {
        Ok(self.ir().op2(op, a, b)?)
    }

    pub(super) fn select(&self, c: V<'ctx>, a: V<'ctx>, b: V<'ctx>) -> Result<V<'ctx>, CodegenError> {
        Ok(self.ir().select(c, a, b)?)
    }

    fn icmp(&self, p: IntPredicate, a: V<'ctx>, b: V<'ctx>) -> Result<V<'ctx>, CodegenError> {
        Ok(self.ir().icmp(p, a, b)?)
    }

    pub(super) fn fcmp(&self, p: FloatPredicate, a: V<'ctx>, b: V<'ctx>) -> Result<V<'ctx>, CodegenError> {
        Ok(self.ir().fcmp(p, a, b)?)
    }

    /// `a op b` for element type `s`.
    pub(crate) fn bin(&self, k: BinOp, s: Scalar, a: V<'ctx>, b: V<'ctx>) -> Result<V<'ctx>, CodegenError> {
        use inkwell::values::InstructionOpcode as I;
        if s.is_float() {
            return match k {
                BinOp::Add => self.op2(I::FAdd, a, b),
                BinOp::Sub => self.op2(I::FSub, a, b),
                BinOp::Mul => self.op2(I::FMul, a, b),
                BinOp::Div => self.op2(I::FDiv, a, b),
                BinOp::Rem => {
                    let q = self.op2(I::FDiv, a, b)?;
                    let t = self.call(&format!("llvm.trunc.{}", suffix(q)), q.get_type(), &[q])?;
                    let p = self.op2(I::FMul, t, b)?;
                    self.op2(I::FSub, a, p)
                }
                BinOp::Min | BinOp::Max => self.fminmax(k == BinOp::Max, s, a, b),
                BinOp::And | BinOp::Or => Ok(a),
            };
        }
        let signed = s != Scalar::U32;
        match k {
            BinOp::Add => self.op2(I::Add, a, b),
            BinOp::Sub => self.op2(I::Sub, a, b),
            BinOp::Mul => self.op2(I::Mul, a, b),
            BinOp::And => self.op2(I::And, a, b),
            BinOp::Or => self.op2(I::Or, a, b),
            BinOp::Min | BinOp::Max => {
                let p = match (k == BinOp::Min, signed) {
                    (true, true) => IntPredicate::SLT,
                    (true, false) => IntPredicate::ULT,
                    (false, true) => IntPredicate::SGT,
                    (false, false) => IntPredicate::UGT,
                };
                let c = self.icmp(p, a, b)?;
                self.select(c, a, b)
            }
            BinOp::Div | BinOp::Rem => {
                // Division by zero gives 0 and MIN / -1 wraps, instead of trapping.
                let (zero, one) = (self.const_like(s, 0.0, a)?, self.const_like(s, 1.0, a)?);
                let is_zero = self.icmp(IntPredicate::EQ, b, zero)?;
                let safe = self.select(is_zero, one, b)?;
                let r = if signed {
                    let m1 = self.const_like(s, -1.0, a)?;
                    let is_m1 = self.icmp(IntPredicate::EQ, safe, m1)?;
                    let safe2 = self.select(is_m1, one, safe)?;
                    if k == BinOp::Div {
                        let q = self.op2(I::SDiv, a, safe2)?;
                        let neg = self.op2(I::Sub, zero, a)?;
                        self.select(is_m1, neg, q)?
                    } else {
                        let r = self.op2(I::SRem, a, safe2)?;
                        self.select(is_m1, zero, r)?
                    }
                } else if k == BinOp::Div {
                    self.op2(I::UDiv, a, safe)?
                } else {
                    self.op2(I::URem, a, safe)?
                };
                self.select(is_zero, zero, r)
            }
        }
    }

    /// Float `max` (`max`: true) or `min`: NaN if either operand is NaN, -0 below +0.
    fn fminmax(&self, max: bool, s: Scalar, a: V<'ctx>, b: V<'ctx>) -> Result<V<'ctx>, CodegenError> {
        use inkwell::values::InstructionOpcode as I;
        let uno = self.fcmp(FloatPredicate::UNO, a, b)?;
        let nan = self.op2(I::FAdd, a, b)?;
        let (first, second) =
            if max { (FloatPredicate::OGT, FloatPredicate::OLT) } else { (FloatPredicate::OLT, FloatPredicate::OGT) };
        let a_wins = self.fcmp(first, a, b)?;
        let b_wins = self.fcmp(second, a, b)?;
        // Equal operands: +0 and -0 differ in the sign bit only; max takes the common bits
        // (`and`), min the union (`or`).
        let ity: BasicTypeEnum<'ctx> = match a {
            V::VectorValue(v) => {
                self.vty(if s == Scalar::F64 { Scalar::I64 } else { Scalar::I32 }, v.get_type().get_size()).into()
            }
            _ => self.ty(if s == Scalar::F64 { Scalar::I64 } else { Scalar::I32 }),
        };
        let (ai, bi) = (self.b.build_bit_cast(a, ity, "").map_err(be)?, self.b.build_bit_cast(b, ity, "").map_err(be)?);
        let bits = self.op2(if max { I::And } else { I::Or }, ai, bi)?;
        let eq = self.b.build_bit_cast(bits, a.get_type(), "").map_err(be)?;
        let r = self.select(b_wins, b, eq)?;
        let r = self.select(a_wins, a, r)?;
        self.select(uno, nan, r)
    }

    /// `a * b + c`: fused where the host has FMA (as the Cranelift backend), integers plain.
    pub(crate) fn fma3(&self, s: Scalar, a: V<'ctx>, b: V<'ctx>, c: V<'ctx>) -> Result<V<'ctx>, CodegenError> {
        if !s.is_float() {
            let p = self.bin(BinOp::Mul, s, a, b)?;
            return self.bin(BinOp::Add, s, p, c);
        }
        if self.fma {
            self.call(&format!("llvm.fma.{}", suffix(a)), a.get_type(), &[a, b, c])
        } else {
            let p = self.bin(BinOp::Mul, s, a, b)?;
            self.bin(BinOp::Add, s, p, c)
        }
    }

    pub(crate) fn cmp(&self, k: CmpOp, s: Scalar, a: V<'ctx>, b: V<'ctx>) -> Result<V<'ctx>, CodegenError> {
        if s.is_float() {
            return self.fcmp(tilec_codegen_llvm::float_predicate(k), a, b);
        }
        self.icmp(tilec_codegen_llvm::int_predicate(k, s), a, b)
    }

    /// A unary operation on a scalar or a vector of `s`.
    pub(crate) fn unary(&self, k: UnOp, s: Scalar, a: V<'ctx>) -> Result<V<'ctx>, CodegenError> {
        use inkwell::values::InstructionOpcode as I;
        let f32 = s == Scalar::F32;
        match k {
            UnOp::Neg if s.is_float() => Ok(match a {
                V::FloatValue(x) => self.b.build_float_neg(x, "").map_err(be)?.into(),
                V::VectorValue(x) => self.b.build_float_neg(x, "").map_err(be)?.into(),
                _ => return Err(err("negation operand")),
            }),
            UnOp::Neg => {
                let z = self.const_like(s, 0.0, a)?;
                self.op2(I::Sub, z, a)
            }
            UnOp::Not => {
                let one = self.const_like(Scalar::Bool, 1.0, a)?;
                self.op2(I::Xor, a, one)
            }
            UnOp::Abs if s.is_float() => self.call(&format!("llvm.fabs.{}", suffix(a)), a.get_type(), &[a]),
            UnOp::Abs if s == Scalar::U32 => Ok(a),
            UnOp::Abs => {
                let n = self.unary(UnOp::Neg, s, a)?;
                self.bin(BinOp::Max, s, a, n)
            }
            UnOp::Sqrt => self.call(&format!("llvm.sqrt.{}", suffix(a)), a.get_type(), &[a]),
            UnOp::RoundF16 | UnOp::RoundBf16 => {
                let h = k.rounds_to().expect("a rounding");
                let bits = self.narrow_half(h, a)?;
                self.widen_half(h, bits)
            }
            UnOp::Trunc if s.is_float() => self.call(&format!("llvm.trunc.{}", suffix(a)), a.get_type(), &[a]),
            UnOp::Trunc => Ok(a),
            k if f32 && crate::expf::is_own(k) => crate::expf::own(&mut F32On(self), k, a),
            k => self.unary_libm(k, s, a),
        }
    }

    /// `k a` by the C library's function (`exp`, `sinf`, ..), element by element.
    fn unary_libm(&self, k: UnOp, s: Scalar, a: V<'ctx>) -> Result<V<'ctx>, CodegenError> {
        let f32 = s == Scalar::F32;
        let name = match k {
            UnOp::Exp => "exp",
            UnOp::Log => ["log", "logf"][f32 as usize],
            UnOp::Sin => ["sin", "sinf"][f32 as usize],
            UnOp::Cos => ["cos", "cosf"][f32 as usize],
            UnOp::Tanh => "tanh",
            UnOp::Exp2 => ["exp2", "exp2f"][f32 as usize],
            UnOp::Log2 => ["log2", "log2f"][f32 as usize],
            other => return Err(err(format!("no C library function for {other:?}"))),
        };
        match a {
            V::VectorValue(v) => {
                let mut out = v.get_type().get_undef();
                for i in 0..v.get_type().get_size() {
                    let x = self.b.build_extract_element(v, self.i32c(i as i64), "").map_err(be)?;
                    let y = self.call(name, self.ty(s), &[x])?;
                    out = self.b.build_insert_element(out, y, self.i32c(i as i64), "").map_err(be)?;
                }
                Ok(out.into())
            }
            _ => self.call(name, self.ty(s), &[a]),
        }
    }

    /// A saturating float-to-integer conversion (NaN to 0, out of range to the nearest end):
    /// out-of-range and NaN inputs replaced by an in-range value, a plain `fptosi`/`fptoui`,
    /// then the top end selected. The same values as `llvm.fpto*i.sat`, which LLVM 16 lowers
    /// element by element on x86 vectors (a vectorized map's casts ran as 16 scalar
    /// conversions with compares and branches-free selects each).
    fn float_to_int(&self, from: Scalar, to: Scalar, x: V<'ctx>) -> Result<V<'ctx>, CodegenError> {
        use inkwell::values::InstructionOpcode as I;
        let t = self.ty(to);
        let (lo, hi): (f64, f64) = match to {
            Scalar::U32 => (0.0, 4294967296.0),
            Scalar::I64 => (-9223372036854775808.0, 9223372036854775808.0),
            _ => (-2147483648.0, 2147483648.0),
        };
        // Both ends are powers of two (or 0), exact in `f32` and `f64`.
        let (lo_c, hi_c) = (self.const_like(from, lo, x)?, self.const_like(from, hi, x)?);
        let below = self.fcmp(FloatPredicate::OLT, x, lo_c)?;
        let above = self.fcmp(FloatPredicate::UGE, x, hi_c)?; // NaN too
        let y = self.select(below, lo_c, x)?;
        let zero = self.const_like(from, 0.0, x)?;
        let y = self.select(above, zero, y)?;
        let (vt, op) = match x {
            V::VectorValue(v) => {
                let n = v.get_type().get_size();
                (self.vty(to, n).into(), if to == Scalar::U32 { I::FPToUI } else { I::FPToSI })
            }
            _ => (t, if to == Scalar::U32 { I::FPToUI } else { I::FPToSI }),
        };
        let r: V<'ctx> = self.b.build_cast(op, y, vt, "").map_err(be)?;
        // The top end where `x` is above the range (not NaN).
        let max = match to {
            Scalar::U32 => u32::MAX as f64,
            Scalar::I64 => i64::MAX as f64,
            _ => i32::MAX as f64,
        };
        let top = self.fcmp(FloatPredicate::OGE, x, hi_c)?;
        let max_c = self.const_like(to, max, r)?;
        self.select(top, max_c, r)
    }

    /// A conversion of a scalar, or of a vector of them element by element (a `map`'s casts on
    /// vectors, `vmap.rs`; the language converts scalars only).
    pub(crate) fn cast(&self, from: Scalar, to: Scalar, x: V<'ctx>) -> Result<V<'ctx>, CodegenError> {
        use inkwell::values::InstructionOpcode as I;
        if from == to {
            return Ok(x);
        }
        let t: BasicTypeEnum<'ctx> = match x {
            V::VectorValue(v) => self.vty(to, v.get_type().get_size()).into(),
            _ => self.ty(to),
        };
        if to == Scalar::Bool {
            let zero = self.const_like(from, 0.0, x)?;
            return self.cmp(CmpOp::Ne, from, x, zero);
        }
        let op = match (from.is_float(), to.is_float()) {
            (true, true) if to == Scalar::F64 => I::FPExt,
            (true, true) => I::FPTrunc,
            (true, false) => return self.float_to_int(from, to, x),
            (false, true) if from == Scalar::U32 || from == Scalar::Bool => I::UIToFP,
            (false, true) => I::SIToFP,
            (false, false) => {
                let (fb, tb) = (bits(from), bits(to));
                if fb == tb {
                    return Ok(x);
                } else if fb > tb {
                    I::Trunc
                } else if from == Scalar::U32 || from == Scalar::Bool {
                    I::ZExt
                } else {
                    I::SExt
                }
            }
        };
        self.b.build_cast(op, x, t, "").map_err(be)
    }

    /// Lowers an operation whose result is a scalar (or that has none: never here).
    pub(crate) fn scalar_op(&mut self, op: &Op) -> Result<(), CodegenError> {
        let rs = op.results.first().map(|r| self.elem(*r)).ok_or_else(|| err("scalar op without result"))?;
        let a = |g: &Self, i: usize| g.val(op.args[i]);
        let v = match &op.kind {
            OpKind::Const(c) => {
                if let Const::Int(i, _) = c {
                    self.consts.insert(op.results[0], *i);
                }
                match c {
                    Const::Bool(b) => self.constant(Scalar::Bool, *b as u8 as f64),
                    Const::Int(v, s) => match s {
                        Scalar::I64 => self.cx.i64_type().const_int(*v as u64, true).into(),
                        _ => self.cx.i32_type().const_int(*v as u32 as u64, false).into(),
                    },
                    Const::Float(v, s) => self.constant(*s, *v),
                }
            }
            OpKind::Bin(k) => self.bin(*k, rs, a(self, 0)?, a(self, 1)?)?,
            OpKind::Cmp(k) => self.cmp(*k, self.elem(op.args[0]), a(self, 0)?, a(self, 1)?)?,
            OpKind::Un(k) => self.unary(*k, rs, a(self, 0)?)?,
            OpKind::Cast(to) => self.cast(self.elem(op.args[0]), *to, a(self, 0)?)?,
            OpKind::Bitcast(to) => self.b.build_bit_cast(a(self, 0)?, self.ty(*to), "").map_err(be)?,
            OpKind::Select => self.select(a(self, 0)?, a(self, 1)?, a(self, 2)?)?,
            OpKind::Fma => self.fma3(rs, a(self, 0)?, a(self, 1)?, a(self, 2)?)?,
            OpKind::ProgramId(ax) => self.id(0, *ax)?,
            OpKind::NumPrograms(ax) => self.id(3, *ax)?,
            OpKind::Dim(ax) => {
                let d = self.array(op.args[0])?.1[*ax as usize];
                self.b.build_int_truncate(d, self.cx.i32_type(), "").map_err(be)?.into()
            }
            OpKind::Extract => self.extract(op)?,
            OpKind::Reduce(k, None) => self.reduce_all(op, *k)?,
            other => return Err(err(format!("unsupported scalar op {other:?}"))),
        };
        self.held.insert(op.results[0], super::Held::Val(v));
        Ok(())
    }

    /// One step of a reduction: `acc op x`.
    pub(crate) fn reduce_step(&self, k: Reduce, s: Scalar, acc: V<'ctx>, x: V<'ctx>) -> Result<V<'ctx>, CodegenError> {
        let op = match k {
            Reduce::Sum => BinOp::Add,
            Reduce::Max => BinOp::Max,
            Reduce::Min => BinOp::Min,
            Reduce::Prod => BinOp::Mul,
        };
        self.bin(op, s, acc, x)
    }

    /// `i` as an `i64`, sign-extended.
    pub(crate) fn wide(&self, i: V<'ctx>) -> Result<IntValue<'ctx>, CodegenError> {
        let i = i.into_int_value();
        if i.get_type().get_bit_width() == 64 {
            return Ok(i);
        }
        self.b.build_int_s_extend(i, self.cx.i64_type(), "").map_err(be)
    }
}

fn bits(s: Scalar) -> u32 {
    match s {
        Scalar::Bool => 1,
        Scalar::I64 | Scalar::F64 => 64,
        _ => 32,
    }
}

/// [`Gen`] for `crate::expf` and `crate::tanhf` (whose operations take `&mut self`; these
/// need only `&self`).
struct F32On<'g, 'ctx, 'f>(&'g Gen<'ctx, 'f>);

impl<'ctx> crate::expf::F32Ops for F32On<'_, 'ctx, '_> {
    type V = V<'ctx>;
    type E = CodegenError;
    type W = V<'ctx>;

    fn f32c(&mut self, c: f32, like: V<'ctx>) -> Result<V<'ctx>, CodegenError> {
        self.0.const_like(Scalar::F32, c as f64, like)
    }

    fn fadd(&mut self, a: V<'ctx>, b: V<'ctx>) -> Result<V<'ctx>, CodegenError> {
        self.0.bin(BinOp::Add, Scalar::F32, a, b)
    }

    fn fsub(&mut self, a: V<'ctx>, b: V<'ctx>) -> Result<V<'ctx>, CodegenError> {
        self.0.bin(BinOp::Sub, Scalar::F32, a, b)
    }

    fn fmul(&mut self, a: V<'ctx>, b: V<'ctx>) -> Result<V<'ctx>, CodegenError> {
        self.0.bin(BinOp::Mul, Scalar::F32, a, b)
    }

    fn fdiv(&mut self, a: V<'ctx>, b: V<'ctx>) -> Result<V<'ctx>, CodegenError> {
        self.0.bin(BinOp::Div, Scalar::F32, a, b)
    }

    fn fabs(&mut self, a: V<'ctx>) -> Result<V<'ctx>, CodegenError> {
        self.0.unary(UnOp::Abs, Scalar::F32, a)
    }

    fn select_lt(&mut self, a: V<'ctx>, b: V<'ctx>, x: V<'ctx>, y: V<'ctx>) -> Result<V<'ctx>, CodegenError> {
        let c = self.0.fcmp(FloatPredicate::OLT, a, b)?;
        self.0.select(c, x, y)
    }

    // The clamps as a compare and a select (`b` is a number): two instructions, where the
    // IEEE minimum and maximum take eight on x86.
    fn fmin(&mut self, a: V<'ctx>, b: V<'ctx>) -> Result<V<'ctx>, CodegenError> {
        let above = self.0.fcmp(FloatPredicate::OGT, a, b)?;
        self.0.select(above, b, a)
    }

    fn fmax(&mut self, a: V<'ctx>, b: V<'ctx>) -> Result<V<'ctx>, CodegenError> {
        let below = self.0.fcmp(FloatPredicate::OLT, a, b)?;
        self.0.select(below, b, a)
    }

    fn to_bits(&mut self, a: V<'ctx>) -> Result<V<'ctx>, CodegenError> {
        let ty = self.0.like(a, self.0.cx.i32_type().into());
        self.0.b.build_bit_cast(a, ty, "").map_err(be)
    }

    fn halve(&mut self, a: V<'ctx>) -> Result<V<'ctx>, CodegenError> {
        let one = self.0.int_like(a, 1)?;
        self.0.op2(inkwell::values::InstructionOpcode::AShr, a, one)
    }

    fn isub(&mut self, a: V<'ctx>, b: V<'ctx>) -> Result<V<'ctx>, CodegenError> {
        self.0.op2(inkwell::values::InstructionOpcode::Sub, a, b)
    }

    fn pow2(&mut self, n: V<'ctx>) -> Result<V<'ctx>, CodegenError> {
        use inkwell::values::InstructionOpcode as I;
        let e = self.0.op2(I::Add, n, self.0.int_like(n, 127)?)?;
        let bits = self.0.op2(I::Shl, e, self.0.int_like(n, 23)?)?;
        let f = self.0.like(bits, self.0.cx.f32_type().into());
        self.0.b.build_bit_cast(bits, f, "").map_err(be)
    }

    fn select_bit(&mut self, n: V<'ctx>, bit: i32, x: V<'ctx>, y: V<'ctx>) -> Result<V<'ctx>, CodegenError> {
        use inkwell::values::InstructionOpcode as I;
        let m = self.0.op2(I::And, n, self.0.int_like(n, bit as u64)?)?;
        let set = self.0.icmp(IntPredicate::NE, m, self.0.int_like(n, 0)?)?;
        self.0.select(set, x, y)
    }

    fn widen(&mut self, a: V<'ctx>) -> Result<V<'ctx>, CodegenError> {
        let ty = self.0.like(a, self.0.cx.f64_type().into());
        self.0.b.build_cast(inkwell::values::InstructionOpcode::FPExt, a, ty, "").map_err(be)
    }

    fn narrow(&mut self, a: &V<'ctx>) -> Result<V<'ctx>, CodegenError> {
        let ty = self.0.like(*a, self.0.cx.f32_type().into());
        self.0.b.build_cast(inkwell::values::InstructionOpcode::FPTrunc, *a, ty, "").map_err(be)
    }

    fn dconst(&mut self, c: f64, like: &V<'ctx>) -> Result<V<'ctx>, CodegenError> {
        self.0.const_like(Scalar::F64, c, *like)
    }

    fn dadd(&mut self, a: &V<'ctx>, b: &V<'ctx>) -> Result<V<'ctx>, CodegenError> {
        self.0.bin(BinOp::Add, Scalar::F64, *a, *b)
    }

    fn dsub(&mut self, a: &V<'ctx>, b: &V<'ctx>) -> Result<V<'ctx>, CodegenError> {
        self.0.bin(BinOp::Sub, Scalar::F64, *a, *b)
    }

    fn dmul(&mut self, a: &V<'ctx>, b: &V<'ctx>) -> Result<V<'ctx>, CodegenError> {
        self.0.bin(BinOp::Mul, Scalar::F64, *a, *b)
    }

    fn libm_beyond(&mut self, op: UnOp, x: V<'ctx>, y: V<'ctx>, limit: f32) -> Result<V<'ctx>, CodegenError> {
        let g = self.0;
        let a = g.unary(UnOp::Abs, Scalar::F32, x)?;
        let beyond = g.fcmp(FloatPredicate::OGT, a, g.const_like(Scalar::F32, limit as f64, x)?)?;
        // Some element beyond: the mask's bits as one integer, not zero.
        let any = match beyond {
            V::VectorValue(m) => {
                let width = std::num::NonZeroU32::new(m.get_type().get_size()).expect("a vector has elements");
                let bits = g.cx.custom_width_int_type(width).map_err(err)?;
                let m = g.b.build_bit_cast(m, bits, "").map_err(be)?.into_int_value();
                g.b.build_int_compare(IntPredicate::NE, m, bits.const_zero(), "").map_err(be)?
            }
            b => b.into_int_value(),
        };
        let from = g.b.get_insert_block().expect("a block");
        let (slow, join) = (g.block(), g.block());
        g.b.build_conditional_branch(any, slow, join).map_err(be)?;
        g.b.position_at_end(slow);
        let z = g.unary_libm(op, Scalar::F32, x)?;
        let z = g.select(beyond, z, y)?;
        let slow_end = g.b.get_insert_block().expect("a block");
        g.b.build_unconditional_branch(join).map_err(be)?;
        g.b.position_at_end(join);
        let phi = g.b.build_phi(y.get_type(), "").map_err(be)?;
        phi.add_incoming(&[(&y, from), (&z, slow_end)]);
        Ok(phi.as_basic_value())
    }
}
