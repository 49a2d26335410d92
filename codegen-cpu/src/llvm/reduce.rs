//! Reductions and scans of tiles with LLVM: whole-tile reductions (`reduce_all`), along an
//! axis (`reduce_axis`) and inclusive scans (`scan`), each in element order where the order
//! changes the result (float sums and products), rows of more than 16 vectors in loops
//! (`reduce_long`).

use super::tile::{long_row, segments, shape, width, LOOP_SEGMENTS};
use super::{be, err, Gen, V};
use crate::CodegenError;
use inkwell::types::VectorType;
use inkwell::values::{IntValue, PointerValue};
use tilec_midend::{Op, Reduce, Scalar, Type};

impl<'ctx> Gen<'ctx, '_> {
    /// Reduces a row segment into `acc` (None: the first element starts it); float sums in
    /// element order.
    fn reduce_vec(
        &self,
        k: Reduce,
        s: Scalar,
        acc: Option<V<'ctx>>,
        v: V<'ctx>,
        len: u32,
    ) -> Result<V<'ctx>, CodegenError> {
        if matches!(k, Reduce::Sum | Reduce::Prod) && s.is_float() {
            // Ordered (no reassociation): the same sums and products as element by element.
            let (neutral, op) = if k == Reduce::Sum { (-0.0, "fadd") } else { (1.0, "fmul") };
            let start = match acc {
                Some(a) => a,
                None => self.constant(s, neutral),
            };
            let name = format!("llvm.vector.reduce.{op}.{}", super::scalar::suffix(v));
            return self.call(&name, self.ty(s), &[start, v]);
        }
        // Integer reductions and float min/max do not depend on the order: one intrinsic, or
        // a tree of halves.
        let r = if s.is_float() {
            let mut v = v;
            let mut n = len;
            while n > 1 {
                let h = n / 2;
                let i32t = self.cx.i32_type();
                let lo: Vec<_> = (0..h).map(|j| i32t.const_int(j as u64, false)).collect();
                let hi: Vec<_> = (0..h).map(|j| i32t.const_int((n - h + j) as u64, false)).collect();
                let vv = v.into_vector_value();
                let a = self.b.build_shuffle_vector(vv, vv, VectorType::const_vector(&lo), "").map_err(be)?;
                let b = self.b.build_shuffle_vector(vv, vv, VectorType::const_vector(&hi), "").map_err(be)?;
                let m = self.reduce_step(k, s, a.into(), b.into())?;
                v = if n % 2 == 1 {
                    // The middle element joins the halves' result.
                    let mid = self.lane(v, h)?;
                    let mid = self.splat(mid, h)?;
                    let ext = self.reduce_step(k, s, m, mid)?;
                    let first = self.lane(ext, 0)?;
                    self.with_lane(m, 0, first)?
                } else {
                    m
                };
                n = h;
            }
            self.lane(v, 0)?
        } else {
            let signed = s != Scalar::U32;
            let name = match (k, signed) {
                (Reduce::Sum, _) => "add",
                (Reduce::Prod, _) => "mul",
                (Reduce::Max, true) => "smax",
                (Reduce::Max, false) => "umax",
                (Reduce::Min, true) => "smin",
                (Reduce::Min, false) => "umin",
            };
            let name = format!("llvm.vector.reduce.{name}.{}", super::scalar::suffix(v));
            self.call(&name, self.ty(s), &[v])?
        };
        match acc {
            Some(a) => self.reduce_step(k, s, a, r),
            None => Ok(r),
        }
    }

    /// A whole-tile reduction to a scalar, in element order.
    pub(crate) fn reduce_all(&mut self, op: &Op, k: Reduce) -> Result<V<'ctx>, CodegenError> {
        let t = self.f.ty(op.args[0]).clone();
        let s = t.elem();
        let src = self.tile(op.args[0])?;
        let (rows, cols) = shape(&t);
        let w = width(s);
        if cols > 64 && cols.is_multiple_of(w) && rows * cols / w > LOOP_SEGMENTS {
            return self.reduce_long(k, s, src, self.i64c(0), rows * cols / w);
        }
        let acc = self.allocas.build_alloca(self.ty(s), "").map_err(be)?;
        let segs = segments(cols, s);
        // Row 0 starts the accumulator; the rest continue it.
        let mut first = None;
        for &(c0, len) in &segs {
            let v = self.load_vec(src, s, self.i64c(c0 as i64), len)?;
            first = Some(self.reduce_vec(k, s, first, v, len)?);
        }
        self.b.build_store(acc, first.ok_or_else(|| err("empty tile"))?).map_err(be)?;
        self.each_row(1, rows, cols, s, |g, row| {
            let mut a = g.b.build_load(g.ty(s), acc, "").map_err(be)?;
            for &(c0, len) in &segs {
                let off = g.add_off(row, c0)?;
                let v = g.load_vec(src, s, off, len)?;
                a = g.reduce_vec(k, s, Some(a), v, len)?;
            }
            g.b.build_store(acc, a).map_err(be)?;
            Ok(())
        })?;
        self.b.build_load(self.ty(s), acc, "").map_err(be)
    }

    /// [`Self::reduce_all`] of the `vecs` whole 64-byte vectors of a tile from element `at`
    /// (a tile or one row of long rows), in a loop over them (unrolled, a 4096-element row took seconds to compile): float sums and
    /// products vector by vector in element order, as unrolled; the order-free reductions
    /// (integers, float min and max) element-wise across the vectors, then once across the
    /// lanes of the result.
    fn reduce_long(
        &mut self,
        k: Reduce,
        s: Scalar,
        src: PointerValue<'ctx>,
        at: IntValue<'ctx>,
        vecs: u32,
    ) -> Result<V<'ctx>, CodegenError> {
        let w = width(s);
        let ordered = matches!(k, Reduce::Sum | Reduce::Prod) && s.is_float();
        let first = self.load_vec(src, s, at, w)?;
        let first = if ordered { self.reduce_vec(k, s, None, first, w)? } else { first };
        let acc = self.allocas.build_alloca(first.get_type(), "").map_err(be)?;
        self.b.build_store(acc, first).map_err(be)?;
        self.dyn_loop(self.i64c(1), self.i64c(vecs as i64), |g, i| {
            let off = g.b.build_int_mul(i, g.i64c(w as i64), "").map_err(be)?;
            let v = g.load_vec(src, s, g.add_dyn(at, off)?, w)?;
            let a = g.b.build_load(first.get_type(), acc, "").map_err(be)?;
            let a = if ordered { g.reduce_vec(k, s, Some(a), v, w)? } else { g.reduce_step(k, s, a, v)? };
            g.b.build_store(acc, a).map_err(be)?;
            Ok(())
        })?;
        let a = self.b.build_load(first.get_type(), acc, "").map_err(be)?;
        if ordered {
            Ok(a)
        } else {
            self.reduce_vec(k, s, None, a, w)
        }
    }

    /// Reduction along axis 0 (down the columns: `tile<C>`) or 1 (along the rows: `tile<R>`).
    pub(super) fn reduce_axis(&mut self, op: &Op, k: Reduce, axis: u8, s: Scalar) -> Result<(), CodegenError> {
        let (rows, cols) = shape(self.f.ty(op.args[0]));
        let src = self.tile(op.args[0])?;
        let dst = self.new_tile(op.results[0])?;
        let segs = segments(cols, s);
        if axis == 1 && long_row(cols, s) {
            return self.each_row(0, rows, cols, s, |g, row| {
                let a = g.reduce_long(k, s, src, row, cols / width(s))?;
                let r = g.b.build_int_unsigned_div(row, g.i64c(cols as i64), "").map_err(be)?;
                g.store_elem(dst, s, r, a)
            });
        }
        if axis == 1 {
            return self.each_row(0, rows, cols, s, |g, row| {
                let mut a = None;
                for &(c0, len) in &segs {
                    let off = g.add_off(row, c0)?;
                    let v = g.load_vec(src, s, off, len)?;
                    a = Some(g.reduce_vec(k, s, a, v, len)?);
                }
                let r = g.b.build_int_unsigned_div(row, g.i64c(cols.max(1) as i64), "").map_err(be)?;
                g.store_elem(dst, s, r, a.ok_or_else(|| err("empty row"))?)
            });
        }
        // Axis 0: the first row, then each row combined element-wise in order; long rows in
        // loops over their vectors.
        if long_row(cols, s) {
            let w = width(s);
            self.copy(dst, src, cols * s.bytes())?;
            return self.each_row(1, rows, cols, s, |g, row| {
                g.segment_loop(cols, s, |g, c0| {
                    let v = g.load_vec(src, s, g.add_dyn(row, c0)?, w)?;
                    let a = g.load_vec(dst, s, c0, w)?;
                    let y = g.reduce_step(k, s, a, v)?;
                    g.store_vec(dst, s, c0, y)
                })
            });
        }
        for &(c0, len) in &segs {
            let v = self.load_vec(src, s, self.i64c(c0 as i64), len)?;
            self.store_vec(dst, s, self.i64c(c0 as i64), v)?;
        }
        self.each_row(1, rows, cols, s, |g, row| {
            for &(c0, len) in &segs {
                let off = g.add_off(row, c0)?;
                let v = g.load_vec(src, s, off, len)?;
                let a = g.load_vec(dst, s, g.i64c(c0 as i64), len)?;
                let y = g.reduce_step(k, s, a, v)?;
                g.store_vec(dst, s, g.i64c(c0 as i64), y)?;
            }
            Ok(())
        })
    }

    /// The inclusive scan of a tile along `axis`: down the columns row by row with vectors, or
    /// along each row (a 1-D tile is one row) element by element, each element combined with
    /// the result before it (so in index order).
    pub(super) fn scan(&mut self, op: &Op, k: Reduce, axis: u8, s: Scalar) -> Result<(), CodegenError> {
        let ty = self.f.ty(op.args[0]).clone();
        let (rows, cols) = shape(&ty);
        let src = self.tile(op.args[0])?;
        let dst = self.new_tile(op.results[0])?;
        let one_d = matches!(&ty, Type::Tile { shape, .. } if shape.len() == 1);
        if axis == 0 && !one_d {
            let segs = segments(cols, s);
            for &(c0, len) in &segs {
                let v = self.load_vec(src, s, self.i64c(c0 as i64), len)?;
                self.store_vec(dst, s, self.i64c(c0 as i64), v)?;
            }
            return self.each_row(1, rows, cols, s, |g, row| {
                for &(c0, len) in &segs {
                    let off = g.add_off(row, c0)?;
                    let prev = g.b.build_int_sub(off, g.i64c(cols as i64), "").map_err(be)?;
                    let v = g.load_vec(src, s, off, len)?;
                    let a = g.load_vec(dst, s, prev, len)?;
                    let y = g.reduce_step(k, s, a, v)?;
                    g.store_vec(dst, s, off, y)?;
                }
                Ok(())
            });
        }
        self.each_row(0, rows, cols, s, |g, row| {
            let x = g.load_at(g.elem_ptr(src, s, row)?, s, 0)?;
            g.store_at(g.elem_ptr(dst, s, row)?, s, x)?;
            let (lo, hi) = (g.i64c(1), g.i64c(cols as i64));
            g.dyn_loop(lo, hi, |g, j| {
                let off = g.b.build_int_add(row, j, "").map_err(be)?;
                let prev = g.b.build_int_sub(off, g.i64c(1), "").map_err(be)?;
                let x = g.load_at(g.elem_ptr(src, s, off)?, s, 0)?;
                let a = g.load_at(g.elem_ptr(dst, s, prev)?, s, 0)?;
                let y = g.reduce_step(k, s, a, x)?;
                g.store_at(g.elem_ptr(dst, s, off)?, s, y)
            })
        })
    }
}
