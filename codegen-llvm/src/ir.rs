//! [`Ir`]: types, constants, calls and predicates on a backend's builder.

use inkwell::builder::Builder;
use inkwell::context::Context;
use inkwell::module::Module;
use inkwell::types::{BasicType, BasicTypeEnum, VectorType};
use inkwell::values::{BasicValueEnum, FunctionValue, InstructionOpcode as I};
use inkwell::{FloatPredicate, IntPredicate};
use tilec_midend::{CmpOp, Scalar};

/// A value of the generated code.
pub type V<'ctx> = BasicValueEnum<'ctx>;

/// A failure of building IR (inkwell's builder errors, a call of a function without result):
/// an internal error, which each backend turns into its own error type.
#[derive(Debug, Clone, PartialEq)]
pub struct LlvmError(pub String);

impl std::fmt::Display for LlvmError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl From<inkwell::builder::BuilderError> for LlvmError {
    fn from(e: inkwell::builder::BuilderError) -> LlvmError {
        LlvmError(format!("LLVM builder: {e}"))
    }
}

/// A backend's LLVM context, module and builder, positioned where code is being generated.
#[derive(Clone, Copy)]
pub struct Ir<'a, 'ctx> {
    pub cx: &'ctx Context,
    pub m: &'a Module<'ctx>,
    pub b: &'a Builder<'ctx>,
}

impl<'ctx> Ir<'_, 'ctx> {
    /// The LLVM type of a scalar value (`bool` is `i1`; the storage types `f16` and `bf16` are
    /// computed in `f32`).
    pub fn ty(&self, s: Scalar) -> BasicTypeEnum<'ctx> {
        match s {
            Scalar::Bool => self.cx.bool_type().into(),
            Scalar::I32 | Scalar::U32 => self.cx.i32_type().into(),
            Scalar::I64 => self.cx.i64_type().into(),
            Scalar::F32 | Scalar::F16 | Scalar::BF16 => self.cx.f32_type().into(),
            Scalar::F64 => self.cx.f64_type().into(),
        }
    }

    /// `<n x s>`.
    pub fn vty(&self, s: Scalar, n: u32) -> VectorType<'ctx> {
        match self.ty(s) {
            BasicTypeEnum::FloatType(t) => t.vec_type(n),
            BasicTypeEnum::IntType(t) => t.vec_type(n),
            _ => unreachable!("scalar types are ints or floats"),
        }
    }

    /// The type of an array element of `s` in memory: `f16` is `half`, `bf16` its 16 bits
    /// (`i16`); `bool` is `bool_mem` (a byte on the CPU, as the Cranelift backend stores it).
    pub fn mem_ty(&self, s: Scalar, bool_mem: BasicTypeEnum<'ctx>) -> BasicTypeEnum<'ctx> {
        match s {
            Scalar::Bool => bool_mem,
            Scalar::F16 => self.cx.f16_type().into(),
            Scalar::BF16 => self.cx.i16_type().into(),
            _ => self.ty(s),
        }
    }

    /// A constant of type `s` from `v`: floats rounded to the type, integers truncated toward
    /// zero and wrapped to their width (a negative `u32` wraps, as on the Cranelift backend and
    /// in `tilec_midend::scalar`).
    pub fn constant(&self, s: Scalar, v: f64) -> V<'ctx> {
        match s {
            Scalar::Bool => self.cx.bool_type().const_int((v != 0.0) as u64, false).into(),
            Scalar::I32 => self.cx.i32_type().const_int(v as i64 as u64, true).into(),
            Scalar::U32 => self.cx.i32_type().const_int(v as i64 as u32 as u64, false).into(),
            Scalar::I64 => self.cx.i64_type().const_int(v as i64 as u64, true).into(),
            Scalar::F32 | Scalar::F16 | Scalar::BF16 => self.cx.f32_type().const_float(v as f32 as f64).into(),
            Scalar::F64 => self.cx.f64_type().const_float(v).into(),
        }
    }

    /// The function `name` of the module (an intrinsic or a library function), declared with
    /// result `ret` (`None`: `void`) and parameters `args` on first use.
    pub fn declared(
        &self,
        name: &str,
        ret: Option<BasicTypeEnum<'ctx>>,
        args: &[BasicTypeEnum<'ctx>],
    ) -> FunctionValue<'ctx> {
        if let Some(f) = self.m.get_function(name) {
            return f;
        }
        let a: Vec<_> = args.iter().map(|t| (*t).into()).collect();
        let fty = match ret {
            Some(r) => r.fn_type(&a, false),
            None => self.cx.void_type().fn_type(&a, false),
        };
        self.m.add_function(name, fty, None)
    }

    /// A call of `name` returning a value of type `ret`.
    pub fn call(&self, name: &str, ret: BasicTypeEnum<'ctx>, args: &[V<'ctx>]) -> Result<V<'ctx>, LlvmError> {
        let tys: Vec<_> = args.iter().map(|a| a.get_type()).collect();
        let f = self.declared(name, Some(ret), &tys);
        let a: Vec<_> = args.iter().map(|v| (*v).into()).collect();
        let c = self.b.build_call(f, &a, "")?;
        c.try_as_basic_value().basic().ok_or_else(|| LlvmError(format!("{name} returns nothing")))
    }

    /// A call of `name` without result.
    pub fn call_void(&self, name: &str, args: &[V<'ctx>]) -> Result<(), LlvmError> {
        let tys: Vec<_> = args.iter().map(|a| a.get_type()).collect();
        let f = self.declared(name, None, &tys);
        let a: Vec<_> = args.iter().map(|v| (*v).into()).collect();
        self.b.build_call(f, &a, "")?;
        Ok(())
    }

    /// `x`'s type with the element type `elem` (scalar, or a vector of `x`'s length).
    pub fn like(&self, x: V<'ctx>, elem: BasicTypeEnum<'ctx>) -> BasicTypeEnum<'ctx> {
        match x {
            V::VectorValue(v) => {
                let n = v.get_type().get_size();
                match elem {
                    BasicTypeEnum::FloatType(t) => t.vec_type(n).into(),
                    t => t.into_int_type().vec_type(n).into(),
                }
            }
            _ => elem,
        }
    }

    /// `x` repeated in every lane of an `n`-lane vector (`x` itself for `n` 0).
    pub fn splat(&self, x: V<'ctx>, n: u32) -> Result<V<'ctx>, LlvmError> {
        if n == 0 {
            return Ok(x);
        }
        let vt = match x.get_type() {
            BasicTypeEnum::FloatType(t) => t.vec_type(n),
            BasicTypeEnum::IntType(t) => t.vec_type(n),
            _ => return Err(LlvmError("splat of a non-scalar".into())),
        };
        let zero = self.cx.i32_type().const_zero();
        let v = self.b.build_insert_element(vt.get_undef(), x, zero, "")?;
        let mask = self.cx.i32_type().vec_type(n).const_zero();
        Ok(self.b.build_shuffle_vector(v, vt.get_undef(), mask, "")?.into())
    }

    /// An `i32` constant of `x`'s shape (splatted for vectors).
    pub fn int_like(&self, x: V<'ctx>, v: u64) -> Result<V<'ctx>, LlvmError> {
        let c: V<'ctx> = self.cx.i32_type().const_int(v, false).into();
        match x {
            V::VectorValue(t) => self.splat(c, t.get_type().get_size()),
            _ => Ok(c),
        }
    }

    /// A binary instruction `op` on scalars or vectors.
    pub fn op2(&self, op: I, a: V<'ctx>, b: V<'ctx>) -> Result<V<'ctx>, LlvmError> {
        Ok(self.b.build_binop(op, a, b, "")?)
    }

    /// `c ? a : b`, element by element for vectors.
    pub fn select(&self, c: V<'ctx>, a: V<'ctx>, b: V<'ctx>) -> Result<V<'ctx>, LlvmError> {
        match c {
            V::IntValue(c) => Ok(self.b.build_select(c, a, b, "")?),
            V::VectorValue(c) => Ok(self.b.build_select(c, a, b, "")?),
            _ => Err(LlvmError("select condition".into())),
        }
    }

    /// An integer comparison of scalars or vectors.
    pub fn icmp(&self, p: IntPredicate, a: V<'ctx>, b: V<'ctx>) -> Result<V<'ctx>, LlvmError> {
        Ok(match (a, b) {
            (V::IntValue(a), V::IntValue(b)) => self.b.build_int_compare(p, a, b, "")?.into(),
            (V::VectorValue(a), V::VectorValue(b)) => self.b.build_int_compare(p, a, b, "")?.into(),
            _ => return Err(LlvmError("integer compare operands".into())),
        })
    }

    /// A float comparison of scalars or vectors.
    pub fn fcmp(&self, p: FloatPredicate, a: V<'ctx>, b: V<'ctx>) -> Result<V<'ctx>, LlvmError> {
        Ok(match (a, b) {
            (V::FloatValue(a), V::FloatValue(b)) => self.b.build_float_compare(p, a, b, "")?.into(),
            (V::VectorValue(a), V::VectorValue(b)) => self.b.build_float_compare(p, a, b, "")?.into(),
            _ => return Err(LlvmError("float compare operands".into())),
        })
    }
}

/// The predicate of comparison `k` of floats: ordered (false with a NaN) except `!=`, which is
/// true with a NaN, as IEEE 754 and `tilec_midend::scalar` define them.
pub fn float_predicate(k: CmpOp) -> FloatPredicate {
    match k {
        CmpOp::Eq => FloatPredicate::OEQ,
        CmpOp::Ne => FloatPredicate::UNE,
        CmpOp::Lt => FloatPredicate::OLT,
        CmpOp::Le => FloatPredicate::OLE,
        CmpOp::Gt => FloatPredicate::OGT,
        CmpOp::Ge => FloatPredicate::OGE,
    }
}

/// The predicate of comparison `k` of integers of type `s` (`u32` and `bool` unsigned).
pub fn int_predicate(k: CmpOp, s: Scalar) -> IntPredicate {
    let unsigned = s == Scalar::U32 || s == Scalar::Bool;
    match (k, unsigned) {
        (CmpOp::Eq, _) => IntPredicate::EQ,
        (CmpOp::Ne, _) => IntPredicate::NE,
        (CmpOp::Lt, false) => IntPredicate::SLT,
        (CmpOp::Le, false) => IntPredicate::SLE,
        (CmpOp::Gt, false) => IntPredicate::SGT,
        (CmpOp::Ge, false) => IntPredicate::SGE,
        (CmpOp::Lt, true) => IntPredicate::ULT,
        (CmpOp::Le, true) => IntPredicate::ULE,
        (CmpOp::Gt, true) => IntPredicate::UGT,
        (CmpOp::Ge, true) => IntPredicate::UGE,
    }
}
