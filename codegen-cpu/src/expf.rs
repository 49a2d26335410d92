//! `exp` of `f32` on the CPU, tilec's own instead of the C library's `expf` (a call per
//! element that no vector code can make): written once over [`F32Ops`] and emitted by
//! Cranelift (`scalar.rs`, this file) and LLVM (`llvm/scalar.rs`) on scalars and on vectors
//! alike, so that both backends, scalars and tiles give the same bits.
//!
//! Algorithm: Cody & Waite, *Software Manual for the Elementary Functions* (1980), with the
//! polynomial of Cephes' `expf` (S. Moshier): `x` clamped to `[-104, 89]` (beyond, the result
//! is 0 or infinity anyway; NaN stays NaN), `n = round(x log2 e)` (ties to even, by adding and
//! subtracting `1.5 * 2^23`, which also gives `n`'s integer bits), `r = x - n
//! ln 2` with `ln 2` in two parts (`n * C1` is exact), `e^r = 1 + r + r^2 P(r)` on `|r| <= ln 2 /
//! 2` (Horner, degree 5), and `2^n` applied as two exact powers of two, `2^(n >> 1)` and
//! `2^(n - (n >> 1))`, so that subnormal results are rounded once. Only `f32` multiplies and
//! adds (no fused multiply-add, whose availability differs between hosts): the same bits on
//! every x86-64 and AArch64 host. Accuracy, measured against the `f64` exp on 20 million
//! points evenly spaced over `[-104, 89]` and at the edges: at most 0.99 ulp for normal
//! results (the C library's `expf` as NumPy calls it: 2.5), within one unit of the smallest
//! subnormal below them (`tests/tests/tile_ops/elementwise.rs`).

use tilec_midend::UnOp;

/// `log2(e)`.
const LOG2E: f32 = std::f32::consts::LOG2_E;
/// `ln 2 = C1 + C2`, `C1` with 9 significant bits so that `n * C1` is exact for `|n| <= 150`.
const C1: f32 = 0.693_359_4;
const C2: f32 = -2.121_944_4e-4;
/// Cephes' `expf` polynomial, highest power first: `e^r = 1 + r + r^2 P(r)`.
const P: [f32; 6] = [1.987_569_2e-4, 1.398_199_9e-3, 8.333_452e-3, 4.166_579_6e-2, 1.666_666_5e-1, 0.5];
/// `1.5 * 2^23`: `t + MAGIC` is `round(t) + MAGIC` for `|t| < 2^22`, its bits `0x4b40_0000 +
/// round(t)`.
pub(crate) const MAGIC: f32 = 12_582_912.0;
/// The arguments are clamped to `[LO, HI]`: `e^LO` rounds to 0, `e^HI` overflows.
const LO: f32 = -104.0;
const HI: f32 = 89.0;

/// The operations tilec's own `f32` functions need (`exp` here, `tanh` in `tanhf.rs`, `sin`
/// and `cos` in `sinf.rs`), on a scalar `f32` or a vector of them (and the `i32` and `f64`
/// values of the same shape).
pub(crate) trait F32Ops {
    type V: Copy;
    type E;
    /// `f64` values with as many elements as a `V` (a vector may take several registers).
    type W;
    /// `c` shaped like `like` (splatted for a vector).
    fn f32c(&mut self, c: f32, like: Self::V) -> Result<Self::V, Self::E>;
    fn fadd(&mut self, a: Self::V, b: Self::V) -> Result<Self::V, Self::E>;
    fn fsub(&mut self, a: Self::V, b: Self::V) -> Result<Self::V, Self::E>;
    fn fmul(&mut self, a: Self::V, b: Self::V) -> Result<Self::V, Self::E>;
    /// `a / b`, rounded once.
    fn fdiv(&mut self, a: Self::V, b: Self::V) -> Result<Self::V, Self::E>;
    /// `|a|` (the sign bit cleared).
    fn fabs(&mut self, a: Self::V) -> Result<Self::V, Self::E>;
    /// `a < b ? x : y`, element by element (false where `a` or `b` is NaN).
    fn select_lt(&mut self, a: Self::V, b: Self::V, x: Self::V, y: Self::V) -> Result<Self::V, Self::E>;
    /// The clamps of the argument: `min(a, b)` and `max(a, b)` for a number `b` (`b` where
    /// `a` is above, resp. below it, else `a`; a NaN `a` stays NaN, its payload as it may).
    /// IEEE 754-2019 `minimum` and `maximum` qualify, and so do a compare and a select.
    fn fmin(&mut self, a: Self::V, b: Self::V) -> Result<Self::V, Self::E>;
    fn fmax(&mut self, a: Self::V, b: Self::V) -> Result<Self::V, Self::E>;
    /// The bits of `a` as an `i32` (a bitcast).
    fn to_bits(&mut self, a: Self::V) -> Result<Self::V, Self::E>;
    /// `a >> 1` on `i32`, arithmetic.
    fn halve(&mut self, a: Self::V) -> Result<Self::V, Self::E>;
    /// `a - b` on `i32`.
    fn isub(&mut self, a: Self::V, b: Self::V) -> Result<Self::V, Self::E>;
    /// `2^n` as an `f32` for an `i32` `n` in `-126..=127`: the bits `(n + 127) << 23`.
    fn pow2(&mut self, n: Self::V) -> Result<Self::V, Self::E>;
    /// `(n & bit) != 0 ? x : y`, element by element, for an `i32` `n`.
    fn select_bit(&mut self, n: Self::V, bit: i32, x: Self::V, y: Self::V) -> Result<Self::V, Self::E>;
    /// `a` as `f64` (exact).
    fn widen(&mut self, a: Self::V) -> Result<Self::W, Self::E>;
    /// `a` rounded to `f32` (to nearest, ties to even).
    fn narrow(&mut self, a: &Self::W) -> Result<Self::V, Self::E>;
    /// `c` shaped like `like`.
    fn dconst(&mut self, c: f64, like: &Self::W) -> Result<Self::W, Self::E>;
    fn dadd(&mut self, a: &Self::W, b: &Self::W) -> Result<Self::W, Self::E>;
    fn dsub(&mut self, a: &Self::W, b: &Self::W) -> Result<Self::W, Self::E>;
    fn dmul(&mut self, a: &Self::W, b: &Self::W) -> Result<Self::W, Self::E>;
    /// `y`, except where `|x| > limit` or `x` is infinite: there the C library's `op` (`sinf`,
    /// `cosf`) of `x`, element by element, behind a branch that is taken only when some
    /// element needs it.
    fn libm_beyond(&mut self, op: UnOp, x: Self::V, y: Self::V, limit: f32) -> Result<Self::V, Self::E>;
}

/// Whether tilec computes `op` on `f32` itself ([`own`]) instead of calling the C library:
/// scalars and vectors alike, so the code generators' element-wise and `map` code keep these
/// in vector form.
pub(crate) fn is_own(op: UnOp) -> bool {
    matches!(op, UnOp::Exp | UnOp::Tanh | UnOp::Sin | UnOp::Cos)
}

/// `op(x)` for an `f32` scalar or vector `x` and an `op` that [`is_own`] accepts.
pub(crate) fn own<B: F32Ops>(b: &mut B, op: UnOp, x: B::V) -> Result<B::V, B::E> {
    match op {
        UnOp::Exp => expf(b, x),
        UnOp::Tanh => crate::tanhf::tanhf(b, x),
        UnOp::Sin | UnOp::Cos => crate::sinf::sincosf(b, op, x),
        _ => unreachable!("{op:?} is not one of tilec's own f32 functions"),
    }
}

/// `p[0] x^(n-1) + .. + p[n-1]` by Horner's rule (`f32` multiplies and adds, in that order).
pub(crate) fn horner<B: F32Ops>(b: &mut B, p: &[f32], x: B::V) -> Result<B::V, B::E> {
    let mut y = b.f32c(p[0], x)?;
    for &c in &p[1..] {
        y = b.fmul(y, x)?;
        let c = b.f32c(c, x)?;
        y = b.fadd(y, c)?;
    }
    Ok(y)
}

/// `e^x` for the `f32` scalar or vector `x` (the module docs).
pub(crate) fn expf<B: F32Ops>(b: &mut B, x: B::V) -> Result<B::V, B::E> {
    let (lo, hi) = (b.f32c(LO, x)?, b.f32c(HI, x)?);
    let x = b.fmax(x, lo)?;
    let x = b.fmin(x, hi)?;
    let l2e = b.f32c(LOG2E, x)?;
    let t = b.fmul(x, l2e)?;
    // n = round(t), ties to even, as a float and as an integer: `t + 1.5 * 2^23` lies in
    // [2^23, 2^24), where the spacing is 1, so the addition rounds `t` to an integer (in the
    // default rounding mode, ties to even) held in the low bits of the sum's significand;
    // subtracting the constant again is exact. No rounding or conversion instruction (a
    // conversion with Cranelift's saturating semantics is seven instructions on x86).
    let magic = b.f32c(MAGIC, x)?;
    let tm = b.fadd(t, magic)?;
    let n = b.fsub(tm, magic)?;
    let (c1, c2) = (b.f32c(C1, x)?, b.f32c(C2, x)?);
    let p = b.fmul(n, c1)?;
    let r = b.fsub(x, p)?;
    let p = b.fmul(n, c2)?;
    let r = b.fsub(r, p)?;
    let z = b.fmul(r, r)?;
    let mut y = horner(b, &P, r)?;
    y = b.fmul(y, z)?;
    y = b.fadd(y, r)?;
    let one = b.f32c(1.0, x)?;
    y = b.fadd(y, one)?;
    let (tb, mb) = (b.to_bits(tm)?, b.to_bits(magic)?);
    let ni = b.isub(tb, mb)?;
    let n1 = b.halve(ni)?;
    let n2 = b.isub(ni, n1)?;
    let (s1, s2) = (b.pow2(n1)?, b.pow2(n2)?);
    let y = b.fmul(y, s1)?;
    b.fmul(y, s2)
}

use cranelift_codegen::ir::{
    condcodes::FloatCC, condcodes::IntCC, types, Endianness, InstBuilder, MemFlagsData, Value,
};

/// Little-endian flags for the bitcasts between vector types.
fn le() -> MemFlagsData {
    MemFlagsData::new().with_endianness(Endianness::Little)
}

/// Cranelift's `f64` counterpart of an `f32` value: a scalar, or a vector of four `f32` as two
/// `f64x2` halves (elements 0-1 and 2-3).
#[derive(Clone, Copy)]
pub(crate) enum Wide {
    Scalar(Value),
    Halves(Value, Value),
}

impl<M: cranelift_module::Module> crate::lower::Lower<'_, '_, M> {
    fn wide2(&mut self, a: &Wide, b: &Wide, f: fn(&mut Self, Value, Value) -> Value) -> Wide {
        match (*a, *b) {
            (Wide::Scalar(a), Wide::Scalar(b)) => Wide::Scalar(f(self, a, b)),
            (Wide::Halves(a0, a1), Wide::Halves(b0, b1)) => Wide::Halves(f(self, a0, b0), f(self, a1, b1)),
            _ => unreachable!("a scalar and a vector of f64"),
        }
    }
}

impl<M: cranelift_module::Module> F32Ops for crate::lower::Lower<'_, '_, M> {
    type V = Value;
    type E = crate::CodegenError;
    type W = Wide;

    fn f32c(&mut self, c: f32, like: Self::V) -> Result<Self::V, Self::E> {
        let k = self.b.ins().f32const(c);
        let ty = self.b.func.dfg.value_type(like);
        Ok(if ty.is_vector() { self.b.ins().splat(ty, k) } else { k })
    }

    fn fadd(&mut self, a: Self::V, b: Self::V) -> Result<Self::V, Self::E> {
        Ok(self.b.ins().fadd(a, b))
    }

    fn fsub(&mut self, a: Self::V, b: Self::V) -> Result<Self::V, Self::E> {
        Ok(self.b.ins().fsub(a, b))
    }

    fn fmul(&mut self, a: Self::V, b: Self::V) -> Result<Self::V, Self::E> {
        Ok(self.b.ins().fmul(a, b))
    }

    fn fdiv(&mut self, a: Self::V, b: Self::V) -> Result<Self::V, Self::E> {
        Ok(self.b.ins().fdiv(a, b))
    }

    fn fabs(&mut self, a: Self::V) -> Result<Self::V, Self::E> {
        Ok(self.b.ins().fabs(a))
    }

    fn select_lt(&mut self, a: Self::V, b: Self::V, x: Self::V, y: Self::V) -> Result<Self::V, Self::E> {
        let c = self.b.ins().fcmp(FloatCC::LessThan, a, b);
        Ok(if self.b.func.dfg.value_type(a).is_vector() {
            let c = self.b.ins().bitcast(types::F32X4, le(), c);
            self.b.ins().bitselect(c, x, y)
        } else {
            self.b.ins().select(c, x, y)
        })
    }

    // The clamps as `b < a ? b : a` and `a < b ? b : a`: on x86 vectors, one `minps b, a` /
    // `maxps b, a` (which return `a` where it is NaN), where `fmin`/`fmax` (IEEE minimum and
    // maximum) take seven instructions.
    fn fmin(&mut self, a: Self::V, b: Self::V) -> Result<Self::V, Self::E> {
        self.select_lt(b, a, b, a)
    }

    fn fmax(&mut self, a: Self::V, b: Self::V) -> Result<Self::V, Self::E> {
        self.select_lt(a, b, b, a)
    }

    fn to_bits(&mut self, a: Self::V) -> Result<Self::V, Self::E> {
        let ty = self.b.func.dfg.value_type(a);
        let it = if ty.is_vector() { types::I32X4 } else { types::I32 };
        Ok(self.b.ins().bitcast(it, le(), a))
    }

    fn halve(&mut self, a: Self::V) -> Result<Self::V, Self::E> {
        Ok(self.b.ins().sshr_imm_s(a, 1))
    }

    fn isub(&mut self, a: Self::V, b: Self::V) -> Result<Self::V, Self::E> {
        Ok(self.b.ins().isub(a, b))
    }

    fn pow2(&mut self, n: Self::V) -> Result<Self::V, Self::E> {
        let ty = self.b.func.dfg.value_type(n);
        let bias = self.b.ins().iconst(types::I32, 127);
        let bias = if ty.is_vector() { self.b.ins().splat(ty, bias) } else { bias };
        let e = self.b.ins().iadd(n, bias);
        let bits = self.b.ins().ishl_imm_s(e, 23);
        let ft = if ty.is_vector() { types::F32X4 } else { types::F32 };
        Ok(self.b.ins().bitcast(ft, le(), bits))
    }

    fn select_bit(&mut self, n: Value, bit: i32, x: Value, y: Value) -> Result<Value, Self::E> {
        let ty = self.b.func.dfg.value_type(n);
        if !ty.is_vector() {
            let m = self.b.ins().band_imm_s(n, bit as i64);
            let c = self.b.ins().icmp_imm_s(IntCC::NotEqual, m, 0);
            return Ok(self.b.ins().select(c, x, y));
        }
        let k = self.b.ins().iconst(types::I32, bit as i64);
        let k = self.b.ins().splat(ty, k);
        let m = self.b.ins().band(n, k);
        let z = self.b.ins().iconst(types::I32, 0);
        let z = self.b.ins().splat(ty, z);
        let c = self.b.ins().icmp(IntCC::NotEqual, m, z);
        let c = self.b.ins().bitcast(types::F32X4, le(), c);
        Ok(self.b.ins().bitselect(c, x, y))
    }

    // A vector's upper half moves down as one 64-bit lane (`fvpromote_low` widens the lower two
    // elements; `fvdemote` narrows into them and zeroes the upper two).
    fn widen(&mut self, a: Value) -> Result<Wide, Self::E> {
        if !self.b.func.dfg.value_type(a).is_vector() {
            return Ok(Wide::Scalar(self.b.ins().fpromote(types::F64, a)));
        }
        let lo = self.b.ins().fvpromote_low(a);
        let bits = self.b.ins().bitcast(types::I64X2, le(), a);
        let upper = self.b.ins().extractlane(bits, 1);
        let upper = self.b.ins().scalar_to_vector(types::I64X2, upper);
        let upper = self.b.ins().bitcast(types::F32X4, le(), upper);
        let hi = self.b.ins().fvpromote_low(upper);
        Ok(Wide::Halves(lo, hi))
    }

    fn narrow(&mut self, a: &Wide) -> Result<Value, Self::E> {
        Ok(match *a {
            Wide::Scalar(v) => self.b.ins().fdemote(types::F32, v),
            Wide::Halves(lo, hi) => {
                let lo = self.b.ins().fvdemote(lo);
                let hi = self.b.ins().fvdemote(hi);
                let lo = self.b.ins().bitcast(types::I64X2, le(), lo);
                let hi = self.b.ins().bitcast(types::I64X2, le(), hi);
                let upper = self.b.ins().extractlane(hi, 0);
                let both = self.b.ins().insertlane(lo, upper, 1);
                self.b.ins().bitcast(types::F32X4, le(), both)
            }
        })
    }

    fn dconst(&mut self, c: f64, like: &Wide) -> Result<Wide, Self::E> {
        let k = self.b.ins().f64const(c);
        Ok(match like {
            Wide::Scalar(_) => Wide::Scalar(k),
            Wide::Halves(..) => {
                let v = self.b.ins().splat(types::F64X2, k);
                Wide::Halves(v, v)
            }
        })
    }

    fn dadd(&mut self, a: &Wide, b: &Wide) -> Result<Wide, Self::E> {
        Ok(self.wide2(a, b, |l, a, b| l.b.ins().fadd(a, b)))
    }

    fn dsub(&mut self, a: &Wide, b: &Wide) -> Result<Wide, Self::E> {
        Ok(self.wide2(a, b, |l, a, b| l.b.ins().fsub(a, b)))
    }

    fn dmul(&mut self, a: &Wide, b: &Wide) -> Result<Wide, Self::E> {
        Ok(self.wide2(a, b, |l, a, b| l.b.ins().fmul(a, b)))
    }

    fn libm_beyond(&mut self, op: UnOp, x: Value, y: Value, limit: f32) -> Result<Value, Self::E> {
        let name = match op {
            UnOp::Sin => "sinf",
            UnOp::Cos => "cosf",
            _ => unreachable!("{op:?} has no C library fallback"),
        };
        let f = self.libm(name, types::F32)?;
        let ty = self.b.func.dfg.value_type(x);
        let a = self.b.ins().fabs(x);
        let lim = self.b.ins().f32const(limit);
        let lim = if ty.is_vector() { self.b.ins().splat(ty, lim) } else { lim };
        let beyond = self.b.ins().fcmp(FloatCC::GreaterThan, a, lim);
        let any = if ty.is_vector() { self.b.ins().vany_true(beyond) } else { beyond };
        let (slow, join) = (self.b.create_block(), self.b.create_block());
        let out = self.b.append_block_param(join, ty);
        self.b.set_cold_block(slow);
        self.b.ins().brif(any, slow, &[], join, &[y.into()]);
        self.b.switch_to_block(slow);
        let z = if ty.is_vector() {
            let mut v = y;
            for i in 0..ty.lane_count() as u8 {
                let xi = self.b.ins().extractlane(x, i);
                let call = self.b.ins().call(f, &[xi]);
                let zi = self.b.inst_results(call)[0];
                v = self.b.ins().insertlane(v, zi, i);
            }
            let m = self.b.ins().bitcast(types::F32X4, le(), beyond);
            self.b.ins().bitselect(m, v, y)
        } else {
            let call = self.b.ins().call(f, &[x]);
            self.b.inst_results(call)[0]
        };
        self.b.ins().jump(join, &[z.into()]);
        self.b.switch_to_block(join);
        Ok(out)
    }
}
