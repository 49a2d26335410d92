//! Atomics on `f16` and `bf16` array elements, the same loop on the CPU and in PTX (LLVM's
//! NVPTX backend turns the 16-bit `cmpxchg` into an `atom.cas.b32` on the enclosing word).

use crate::ir::{Ir, LlvmError, V};
use inkwell::values::{BasicValue, FunctionValue, IntValue, PointerValue};
use inkwell::{AtomicOrdering, IntPredicate};
use tilec_midend::{Rmw, Scalar};

impl<'ctx> Ir<'_, 'ctx> {
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
