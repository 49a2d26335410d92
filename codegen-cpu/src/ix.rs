//! Indices that are known either when tilec compiles (a constant) or only when the kernel runs
//! (a Cranelift value), and counted loops over them that are unrolled when both bounds are
//! constants. The factorizations use them so that one description serves small tiles, fully
//! unrolled with constant offsets, and large tiles, as loops.

use crate::lower::Lower;
use cranelift_codegen::ir::{self, types, InstBuilder};
use cranelift_module::Module as ClModule;
use tilec_midend::Scalar;

/// An `i64` index: a constant or a run-time value.
#[derive(Clone, Copy)]
pub(crate) enum Ix {
    C(i64),
    V(ir::Value),
}

impl<M: ClModule> Lower<'_, '_, M> {
    /// The index as a Cranelift `i64` value.
    pub(crate) fn ix_val(&mut self, i: Ix) -> ir::Value {
        match i {
            Ix::C(c) => self.b.ins().iconst(types::I64, c),
            Ix::V(v) => v,
        }
    }

    /// `i * m + d`.
    pub(crate) fn ix_affine(&mut self, i: Ix, m: i64, d: i64) -> Ix {
        match i {
            Ix::C(c) => Ix::C(c * m + d),
            Ix::V(v) => {
                let p = if m == 1 { v } else { self.b.ins().imul_imm_s(v, m) };
                Ix::V(if d == 0 { p } else { self.b.ins().iadd_imm_s(p, d) })
            }
        }
    }

    /// `a + b`.
    pub(crate) fn ix_add(&mut self, a: Ix, b: Ix) -> Ix {
        match (a, b) {
            (Ix::C(x), Ix::C(y)) => Ix::C(x + y),
            (Ix::C(c), Ix::V(v)) | (Ix::V(v), Ix::C(c)) => Ix::V(self.b.ins().iadd_imm_s(v, c)),
            (Ix::V(x), Ix::V(y)) => Ix::V(self.b.ins().iadd(x, y)),
        }
    }

    /// `i / d` for `i >= 0` and `d` a power of two.
    pub(crate) fn ix_div_pow2(&mut self, i: Ix, d: i64) -> Ix {
        debug_assert!(d > 0 && d & (d - 1) == 0);
        match i {
            Ix::C(c) => Ix::C(c / d),
            Ix::V(v) => Ix::V(self.b.ins().sshr_imm_u(v, i64::from(d.trailing_zeros()))),
        }
    }

    /// The address and constant byte offset of element `i` of the tile (or scratch) at `base`.
    pub(crate) fn ix_addr(&mut self, base: ir::Value, i: Ix, s: Scalar) -> (ir::Value, i32) {
        match i {
            Ix::C(c) => (base, (c * s.bytes() as i64) as i32),
            Ix::V(v) => (self.at(base, v, s), 0),
        }
    }

    /// `for i in lo..hi { body(i) }`: unrolled with constant indices when `unroll` is set and
    /// both bounds are constants, else a loop.
    pub(crate) fn ix_loop(&mut self, lo: Ix, hi: Ix, unroll: bool, mut body: impl FnMut(&mut Self, Ix)) {
        match (lo, hi) {
            (Ix::C(a), Ix::C(b)) if unroll => {
                for i in a..b {
                    body(self, Ix::C(i));
                }
            }
            _ => {
                let (lo, hi) = (self.ix_val(lo), self.ix_val(hi));
                self.dyn_loop(lo, hi, |l, i| body(l, Ix::V(i)));
            }
        }
    }
}
