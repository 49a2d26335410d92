//! Atomic read-modify-writes of one array element, the same on the CPU and in PTX:
//! `atomicrmw` where LLVM has the operation, `cmpxchg` for compare-and-swap, `totalOrder`
//! float minima and maxima on the bits, and `f16`/`bf16` elements as a `cmpxchg` loop on their
//! 16 bits (LLVM's NVPTX backend turns the 16-bit `cmpxchg` into an `atom.cas.b32` on the
//! enclosing word).

use crate::ir::{Ir, LlvmError, V};
use inkwell::values::{AsValueRef, BasicValue, BasicValueEnum, FunctionValue, IntValue, PointerValue};
use inkwell::{AtomicOrdering, IntPredicate};
use llvm_sys::LLVMAtomicRMWBinOp as RmwOp;
use tilec_midend::{Rmw, Scalar};

impl<'ctx> Ir<'_, 'ctx> {
    /// `atomicrmw op p, x monotonic` for any operand type LLVM 16 takes (inkwell's builder
    /// takes integers only).
    pub fn atomicrmw(&self, op: RmwOp, p: PointerValue<'ctx>, x: V<'ctx>) -> Result<V<'ctx>, LlvmError> {
        // SAFETY: the builder is positioned in a function; `p` points to an element of `x`'s
        // type.
        let r = unsafe {
            llvm_sys::core::LLVMBuildAtomicRMW(
                self.b.as_mut_ptr(),
                op,
                p.as_value_ref(),
                x.as_value_ref(),
                llvm_sys::LLVMAtomicOrdering::LLVMAtomicOrderingMonotonic,
                0,
            )
        };
        if r.is_null() {
            return Err(LlvmError("LLVM could not build an atomicrmw".into()));
        }
        // SAFETY: `r` is the instruction just built, a value of `x`'s type.
        Ok(unsafe { BasicValueEnum::new(r) })
    }

    /// The atomic update `k` (IR [`Rmw`], the semantics of `tilec_midend::scalar::rmw`) of the
    /// element of `s` at `p` with `x` (and the comparand `cmp` of `Cas`), generated in function
    /// `func`; returns the old value. `atomicrmw` for integer updates and float additions and
    /// exchanges, `cmpxchg` for compare-and-swap (on the bits of floats), float minima and
    /// maxima in IEEE 754 `totalOrder` as integer ones on the bits chosen by the operand's sign,
    /// `f16`/`bf16` elements as [`Ir::rmw_half`]. Monotonic ordering throughout.
    pub fn rmw_at(
        &self,
        func: FunctionValue<'ctx>,
        k: Rmw,
        p: PointerValue<'ctx>,
        x: V<'ctx>,
        cmp: Option<V<'ctx>>,
        s: Scalar,
    ) -> Result<V<'ctx>, LlvmError> {
        if s.is_half() {
            return self.rmw_half(func, k, p, x, cmp, s);
        }
        let it = if s.bytes() == 8 { self.cx.i64_type() } else { self.cx.i32_type() };
        let unsigned = s == Scalar::U32;
        let native = match (k, s.is_float()) {
            (Rmw::Add, false) => Some(RmwOp::LLVMAtomicRMWBinOpAdd),
            (Rmw::Add, true) => Some(RmwOp::LLVMAtomicRMWBinOpFAdd),
            (Rmw::Xchg, _) => Some(RmwOp::LLVMAtomicRMWBinOpXchg),
            (Rmw::Min, false) if unsigned => Some(RmwOp::LLVMAtomicRMWBinOpUMin),
            (Rmw::Min, false) => Some(RmwOp::LLVMAtomicRMWBinOpMin),
            (Rmw::Max, false) if unsigned => Some(RmwOp::LLVMAtomicRMWBinOpUMax),
            (Rmw::Max, false) => Some(RmwOp::LLVMAtomicRMWBinOpMax),
            _ => None,
        };
        if let Some(op) = native {
            return self.atomicrmw(op, p, x);
        }
        let bits = |v: V<'ctx>| -> Result<IntValue<'ctx>, LlvmError> {
            Ok(self.b.build_bit_cast(v, it, "")?.into_int_value())
        };
        let mono = AtomicOrdering::Monotonic;
        if k == Rmw::Cas {
            let c = cmp.ok_or_else(|| LlvmError("compare-and-swap without a comparand".into()))?;
            let (cb, xb) = (bits(c)?, bits(x)?);
            let pair = self.b.build_cmpxchg(p, cb, xb, mono, mono)?;
            let old = self.b.build_extract_value(pair, 0, "")?;
            return Ok(self.b.build_bit_cast(old, self.ty(s), "")?);
        }
        // A float minimum or maximum in totalOrder: a signed min (max) of the bits for an `x`
        // with the sign bit clear, an unsigned max (min) for one with it set.
        let xb = bits(x)?;
        let set = self.b.build_int_compare(IntPredicate::SLT, xb, it.const_zero(), "")?;
        let block = |name| self.cx.append_basic_block(func, name);
        let (pos, neg, join) = (block("pos"), block("neg"), block("minmax"));
        self.b.build_conditional_branch(set, neg, pos)?;
        let mut from = Vec::new();
        for (block, signed) in [(pos, true), (neg, false)] {
            self.b.position_at_end(block);
            let op = match (k == Rmw::Min, signed) {
                (true, true) => RmwOp::LLVMAtomicRMWBinOpMin,
                (true, false) => RmwOp::LLVMAtomicRMWBinOpUMax,
                (false, true) => RmwOp::LLVMAtomicRMWBinOpMax,
                (false, false) => RmwOp::LLVMAtomicRMWBinOpUMin,
            };
            from.push((self.atomicrmw(op, p, xb.into())?, block));
            self.b.build_unconditional_branch(join)?;
        }
        self.b.position_at_end(join);
        let old = self.b.build_phi(it, "")?;
        old.add_incoming(&[(&from[0].0, from[0].1), (&from[1].0, from[1].1)]);
        Ok(self.b.build_bit_cast(old.as_basic_value(), self.ty(s), "")?)
    }

    /// An atomic read-modify-write of the `f16`/`bf16` element at `p` (IR [`Rmw`], the semantics
    /// of `tilec_midend::scalar::rmw`), generated in function `func`: a `cmpxchg` loop on its 16
    /// bits, whose new bits are the operands rounded to the half type and, for `Add`, the `f32`
    /// sum of the old value and the rounded operand, rounded; minima and maxima compare
    /// `totalOrder` keys of the bits; compare-and-swap compares the bits with `cmp`'s. Returns
    /// the old value (`f32`); the builder is left after the loop.
    pub fn rmw_half(
        &self,
        func: FunctionValue<'ctx>,
        k: Rmw,
        p: PointerValue<'ctx>,
        x: V<'ctx>,
        cmp: Option<V<'ctx>>,
        s: Scalar,
    ) -> Result<V<'ctx>, LlvmError> {
        let err = |m: &str| LlvmError(m.to_string());
        let i16t = self.cx.i16_type();
        let bits = |v: V<'ctx>| -> Result<IntValue<'ctx>, LlvmError> {
            let h = self.narrow_half(s, v)?;
            Ok(self.b.build_bit_cast(h, i16t, "")?.into_int_value())
        };
        let value = |b: IntValue<'ctx>| -> Result<V<'ctx>, LlvmError> {
            let h = self.b.build_bit_cast(b, self.mem_ty(s, self.cx.i8_type().into()), "")?;
            self.widen_half(s, h)
        };
        let xb = bits(x)?;
        let cb = cmp.map(bits).transpose()?;
        let mono = AtomicOrdering::Monotonic;
        let first = self.b.build_load(i16t, p, "")?;
        let load = first.as_instruction_value().ok_or_else(|| err("a load"))?;
        load.set_alignment(2).map_err(|e| LlvmError(e.to_string()))?;
        load.set_atomic_ordering(mono).map_err(|e| LlvmError(e.to_string()))?;
        let entry = self.b.get_insert_block().ok_or_else(|| err("no insert block"))?;
        let (retry, done) = (self.cx.append_basic_block(func, "cas"), self.cx.append_basic_block(func, "cased"));
        self.b.build_unconditional_branch(retry)?;
        self.b.position_at_end(retry);
        let cur = self.b.build_phi(i16t, "")?;
        let c = cur.as_basic_value().into_int_value();
        // totalOrder of half bits: a signed comparison of `b ^ 0x7fff` for negative `b`.
        let key = |b: IntValue<'ctx>| -> Result<IntValue<'ctx>, LlvmError> {
            let neg = self.b.build_int_compare(IntPredicate::SLT, b, i16t.const_zero(), "")?;
            let flipped = self.b.build_xor(b, i16t.const_int(0x7fff, false), "")?;
            Ok(self.b.build_select(neg, flipped, b, "")?.into_int_value())
        };
        let new = match k {
            Rmw::Xchg => xb,
            Rmw::Cas => {
                let cb = cb.ok_or_else(|| err("compare-and-swap without a comparand"))?;
                let same = self.b.build_int_compare(IntPredicate::EQ, c, cb, "")?;
                self.b.build_select(same, xb, c, "")?.into_int_value()
            }
            Rmw::Min | Rmw::Max => {
                let (kx, kc) = (key(xb)?, key(c)?);
                let pred = if k == Rmw::Min { IntPredicate::SLT } else { IntPredicate::SGT };
                let pick = self.b.build_int_compare(pred, kx, kc, "")?;
                self.b.build_select(pick, xb, c, "")?.into_int_value()
            }
            Rmw::Add => {
                let (cf, xf) = (value(c)?, value(xb)?);
                let sum = self.b.build_float_add(cf.into_float_value(), xf.into_float_value(), "")?;
                bits(sum.into())?
            }
        };
        let pair = self.b.build_cmpxchg(p, c, new, mono, mono)?;
        let seen = self.b.build_extract_value(pair, 0, "")?;
        let ok = self.b.build_extract_value(pair, 1, "")?.into_int_value();
        let last = self.b.get_insert_block().ok_or_else(|| err("no insert block"))?;
        cur.add_incoming(&[(&first, entry), (&seen, last)]);
        self.b.build_conditional_branch(ok, done, retry)?;
        self.b.position_at_end(done);
        value(c)
    }
}
