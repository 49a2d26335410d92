//! A `map` over a small tile as straight-line vectors: the region (after `fuse-maps`, a chain
//! of `where`s, comparisons and arithmetic) lowered once per vector of up to 64 bytes, where
//! the general lowering (`control.rs`, `Gen::map`) is a loop over the elements that LLVM
//! vectorizes through the tiles' stack storage. On a 16-lane tile of a batch-interleaved
//! kernel (`getrf_compact_batched`'s pivot search and row swaps: a `where` of `tile<f32, 16>`)
//! that loop became two 8-wide iterations per `where` with the mask stored as bytes between
//! them, several times the work of the arithmetic around it.
//!
//! The region's ops are the scalar lowering's own (`scalar.rs`: the same instructions on
//! vectors, so the same bits); values from outside the region and constants are splatted.
//! Regions with other ops (bitcasts, nested regions, reductions) and tiles whose elements do
//! not lie one after another keep the loop. Longer tiles keep it too, except where the region
//! computes an `f32` `sin` or `cos`, whose branch to the C library for large arguments LLVM
//! does not vectorize: there a loop over 64-byte vectors runs the region on each.

use super::views::Strided;
use super::{Gen, Held, V};
use crate::CodegenError;
use inkwell::values::PointerValue;
use tilec_midend::{Op, OpKind, Scalar};

/// The largest tile, in bytes of its widest element type, lowered as straight-line vectors:
/// four 64-byte vectors.
const MAX_BYTES: u32 = 256;

impl<'ctx> Gen<'ctx, '_> {
    /// Lowers `map` op `op` over `n` elements read from `srcs` (each with its element type)
    /// into `dst` of `de` as straight-line vectors, if its region and sources allow
    /// (`contiguous`: every source's elements lie one after another); returns whether it did.
    pub(super) fn map_vectors(
        &mut self,
        op: &Op,
        srcs: &[(Strided<'ctx>, Scalar)],
        contiguous: bool,
        dst: PointerValue<'ctx>,
        de: Scalar,
        n: u32,
    ) -> Result<bool, CodegenError> {
        let r = &op.regions[0];
        let vector_op = |o: &Op| {
            self.f.is_scalar_op(o)
                && matches!(
                    o.kind,
                    OpKind::Bin(_)
                        | OpKind::Cmp(_)
                        | OpKind::Un(_)
                        | OpKind::Cast(_)
                        | OpKind::Select
                        | OpKind::Fma
                        | OpKind::Const(_)
                        | OpKind::Yield
                )
        };
        let widest = srcs.iter().map(|s| s.1).chain([de]).map(|s| s.bytes().max(1)).max().unwrap_or(1);
        let unit_stride = srcs.iter().all(|(s, _)| s.col.get_zero_extended_constant() == Some(1));
        // `sin` and `cos` of `f32` branch to the C library beyond 2^20 (`sinf.rs`), which
        // keeps LLVM from vectorizing the element loop: longer tiles too are a loop over
        // vectors.
        let branches = r.ops.iter().any(|o| {
            matches!(o.kind, OpKind::Un(k) if crate::sinf::branches_to_libm(k))
                && self.elem(o.results[0]) == Scalar::F32
        });
        if !contiguous || !unit_stride || (n * widest > MAX_BYTES && !branches) || !r.ops.iter().all(vector_op) {
            return Ok(false);
        }
        let per_vector = 64 / widest;
        let zero = self.i64c(0);
        let mut c0 = 0;
        if n * widest > MAX_BYTES {
            let whole = n / per_vector;
            self.dyn_loop(zero, self.i64c(whole as i64), |g, k| {
                let off = g.b.build_int_mul(k, g.i64c(per_vector as i64), "").map_err(super::be)?;
                for ((src, se), p) in srcs.iter().zip(&r.params) {
                    let x = g.load_vec(src.ptr, *se, src.at(g, zero, off)?, per_vector)?;
                    g.held.insert(*p, Held::Val(x));
                }
                let y = g.vector_region(op, per_vector)?;
                g.store_vec(dst, de, off, y)
            })?;
            c0 = whole * per_vector;
        }
        while c0 < n {
            let left = per_vector.min(n - c0);
            let len = 1 << (31 - left.leading_zeros());
            let off = self.i64c(c0 as i64);
            for ((src, se), p) in srcs.iter().zip(&r.params) {
                let x = self.load_vec(src.ptr, *se, src.at(self, zero, off)?, len)?;
                self.held.insert(*p, Held::Val(x));
            }
            let y = self.vector_region(op, len)?;
            self.store_vec(dst, de, off, y)?;
            c0 += len;
        }
        Ok(true)
    }

    /// The value that `op`'s region yields, its ops lowered on vectors of `len` elements.
    fn vector_region(&mut self, op: &Op, len: u32) -> Result<V<'ctx>, CodegenError> {
        let as_vector = |g: &Self, x: V<'ctx>| match x {
            V::VectorValue(_) => Ok(x),
            _ => g.splat(x, len),
        };
        for o in &op.regions[0].ops {
            if let OpKind::Const(_) = o.kind {
                self.scalar_op(o)?;
                continue;
            }
            let a = o.args.iter().map(|v| as_vector(self, self.val(*v)?)).collect::<Result<Vec<_>, _>>()?;
            let y = match &o.kind {
                OpKind::Yield => return Ok(a[0]),
                OpKind::Bin(k) => self.bin(*k, self.elem(o.results[0]), a[0], a[1])?,
                OpKind::Cmp(k) => self.cmp(*k, self.elem(o.args[0]), a[0], a[1])?,
                OpKind::Un(k) => self.unary(*k, self.elem(o.results[0]), a[0])?,
                OpKind::Select => self.select(a[0], a[1], a[2])?,
                OpKind::Fma => self.fma3(self.elem(o.results[0]), a[0], a[1], a[2])?,
                OpKind::Cast(to) => self.cast(self.elem(o.args[0]), *to, a[0])?,
                other => return Err(super::err(format!("{other:?} in a vector map"))),
            };
            self.held.insert(o.results[0], Held::Val(y));
        }
        Err(super::err("`map` region does not yield"))
    }
}
