//! Matrix products in the LLVM CPU backend: `a @ b`, `c + a @ b` and the fused `t - a @ b`
//! (`tilec_midend::fusion::is_matmul_sub`), with operands read from tiles, through unformed
//! transposed or negated left operands (`tilec_midend::fusion::left_operands`), or straight
//! from arrays (`tilec_midend::fusion::direct_loads`).
//!
//! The micro-kernel keeps a block of [`MR`] (or [`MR_LOOP`]) rows by one 64-byte vector of the
//! result in registers across the `k` loop (the BLIS micro-kernel idea: Van Zee & van de
//! Geijn, ACM TOMS 2015), accumulating `fma(a[i][k], b[k], acc)` in increasing `k` from zero
//! (or from `c`); the blocks run in a loop.

use super::tile::{shape, width};
use super::views::Strided;
use super::{be, err, Gen, V};
use crate::CodegenError;
use inkwell::values::{IntValue, PointerValue};
use inkwell::IntPredicate;
use tilec_midend::fusion::product_operands;
use tilec_midend::{BinOp, Op, Scalar, Type};

/// Rows of the matmul micro-kernel's register block: 6 for products with a `k` loop (6 rows
/// of two 256-bit accumulators, two rows of `b` and a broadcast fill the 16 AVX2 registers:
/// gemm 1024^3 20.8 -> 18.4 ms here; with AVX-512's 32 registers, rows of two 512-bit
/// accumulators: [`Gen::loop_columns`]), 4 for the unrolled 16 x 16 x 16 products of the
/// factorizations (trsm 4096 x 92: 72 ms, against 75 with 6).
const MR_LOOP: u32 = 6;
const MR: u32 = 4;
/// Longest `k` loop that the matmul unrolls.
const UNROLL_K: u32 = 32;

impl<'ctx> Gen<'ctx, '_> {
    /// `a @ b`, or `c + a @ b` (`acc`), with the register-blocked micro-kernel.
    pub(crate) fn matmul(&mut self, op: &Op, s: Scalar, acc: bool) -> Result<(), CodegenError> {
        let dst = self.new_tile(op.results[0])?;
        self.matmul_into(op, s, acc, dst, None)
    }

    /// `t - a @ b` for the `Matmul` op `mm` and the `Sub` op `sub` that alone uses its product
    /// (`tilec_midend::fusion::is_matmul_sub`): each block of the product is subtracted from
    /// `t` as it leaves the registers, the same operations as the two ops.
    pub(crate) fn matmul_sub(&mut self, mm: &Op, sub: &Op) -> Result<(), CodegenError> {
        let s = self.elem(sub.results[0]);
        let t = self.tile(sub.args[0])?;
        let dst = self.new_tile(sub.results[0])?;
        self.matmul_into(mm, s, false, dst, Some(t))
    }

    /// The product of `op` into `dst`: plus `op`'s first operand (`acc`), or subtracted from
    /// the tile `sub_from`. Operands whose loads are pending (`Gen::direct`) are read from
    /// their arrays where their tiles lie inside them, else from copies made by the loads'
    /// bounds rules.
    fn matmul_into(
        &mut self,
        op: &Op,
        s: Scalar,
        acc: bool,
        dst: PointerValue<'ctx>,
        sub_from: Option<PointerValue<'ctx>>,
    ) -> Result<(), CodegenError> {
        let (a_op, b_src) = product_operands(op).ok_or_else(|| err("not a product"))?;
        let (m, k) = shape(self.f.ty(a_op));
        // A vector `b` (`tile<K>`) is a K x 1 matrix; the product is then `tile<M>`.
        let n = match self.f.ty(b_src) {
            Type::Tile { shape: sh, .. } if sh.len() == 2 => sh[1],
            _ => 1,
        };
        // A transposed and/or negated `a` left unformed: a[i, k] is (minus) element [i, k] or
        // [k, i] of the tile it is made from.
        let view = self.left_views.get(&a_op).copied();
        let a_src = view.map_or(a_op, |v| v.source);
        let (a_t, a_neg) = view.map_or((false, false), |v| (v.transposed, v.negated));
        let c = if acc { Some(self.tile(op.args[0])?) } else { None };
        let pa = self.pending_load(a_src)?;
        let pb = self.pending_load(b_src)?;
        // Where a[i, k] is: row-major `m x k`, or `k x m` when transposed; b is `k x n`.
        let a_cols = if a_t { m } else { k };
        let tile_a = |g: &Self, p: PointerValue<'ctx>| Strided::tile(g, p, a_cols, a_t);
        let kernel = MicroKernel { m, k, n, s, a_neg, c, dst, sub_from };
        if pa.is_none() && pb.is_none() {
            let a = tile_a(self, self.tile(a_src)?);
            let b = Strided::tile(self, self.tile(b_src)?, n, false);
            return kernel.emit(self, a, b);
        }
        let mut inside = self.cx.bool_type().const_int(1, false);
        for p in pa.iter().chain(&pb) {
            inside = self.b.build_and(inside, p.inside, "").map_err(be)?;
        }
        // A left operand over `DIRECT_MAX_ELEMS` (`fusion::packed_left_operands`) is read in
        // place only where its rows follow one another in the array: else its copy packs it.
        if let Some(p) = pa.as_ref().filter(|_| m * k > DIRECT_MAX_ELEMS) {
            let width = self.i64c(k as i64);
            let adjacent = self.b.build_int_compare(IntPredicate::EQ, p.row_stride, width, "").map_err(be)?;
            inside = self.b.build_and(inside, adjacent, "").map_err(be)?;
        }
        self.branches(
            inside,
            |g| {
                let a = match &pa {
                    Some(p) => Strided::array(g, p, a_t),
                    None => tile_a(g, g.tile(a_src)?),
                };
                let b = match &pb {
                    Some(p) => Strided::array(g, p, false),
                    None => Strided::tile(g, g.tile(b_src)?, n, false),
                };
                kernel.emit(g, a, b)
            },
            |g| {
                let a = match &pa {
                    Some(p) => g.copy_pending(p)?,
                    None => g.tile(a_src)?,
                };
                let b = match &pb {
                    Some(p) => g.copy_pending(p)?,
                    None => g.tile(b_src)?,
                };
                kernel.emit(g, tile_a(g, a), Strided::tile(g, b, n, false))
            },
        )
    }
}

impl Gen<'_, '_> {
    /// Columns of the micro-kernel's block in products with a `k` loop: one 64-byte vector
    /// (two AVX2 registers per row, twelve accumulators), or two on hosts with AVX-512, whose
    /// 32 vector registers hold 6 rows of two 512-bit accumulators (twelve independent sums,
    /// where one vector per row gave six). NPBench's syrk (64 x 64 blocks, `A @ transpose(A)`)
    /// on one Sapphire Rapids thread: 28.2 -> 24.7 ms, best of 8 alternating runs; gemm
    /// 1024^3 unchanged (20.3 and 20.4 ms).
    pub(crate) fn loop_columns(&self, s: Scalar) -> u32 {
        let features = self.func.get_string_attribute(inkwell::attributes::AttributeLoc::Function, "target-features");
        let avx512 = features.is_some_and(|f| f.get_string_value().to_bytes().windows(8).any(|w| w == b"+avx512f"));
        if avx512 {
            2 * width(s)
        } else {
            width(s)
        }
    }
}

/// Most elements of a product operand read in place from its array (`Gen::direct`): 16 x 16
/// tiles, as the factorizations' products use (potrs 512 x 92 f32 on one Zen 3 thread: see
/// bench/README.md); larger ones (gemm's 64 x 64 blocks) are copied, which packs them.
pub(crate) const DIRECT_MAX_ELEMS: u32 = 256;

/// One `m x k` by `k x n` product: `dst = c + (-)a @ b`, or `dst = sub_from - a @ b`.
#[derive(Clone, Copy)]
struct MicroKernel<'ctx> {
    m: u32,
    k: u32,
    n: u32,
    s: Scalar,
    a_neg: bool,
    c: Option<PointerValue<'ctx>>,
    dst: PointerValue<'ctx>,
    sub_from: Option<PointerValue<'ctx>>,
}

impl<'ctx> MicroKernel<'ctx> {
    fn emit(self, g: &mut Gen<'ctx, '_>, a: Strided<'ctx>, b: Strided<'ctx>) -> Result<(), CodegenError> {
        let MicroKernel { m, k, n, s, a_neg, c, dst, sub_from } = self;
        let w = if k > UNROLL_K { g.loop_columns(s) } else { width(s) };
        let chunks: Vec<(u32, u32)> =
            if n <= w { vec![(0, n)] } else { (0..n).step_by(w as usize).map(|c| (c, w.min(n - c))).collect() };
        // One block of `rows` rows from row `i0` (an `i64`), each chunk of columns in turn.
        let block = |g: &mut Gen<'ctx, '_>, i0: IntValue<'ctx>, rows: u32| -> Result<(), CodegenError> {
            for &(c0, len) in &chunks {
                // Offset of element [i0 + r, c0] of the `n`-column result tiles.
                let out_off = |g: &Gen<'ctx, '_>, r: u32| -> Result<IntValue<'ctx>, CodegenError> {
                    let i = g.add_off(i0, r)?;
                    let o = g.b.build_int_mul(i, g.i64c(n as i64), "").map_err(be)?;
                    g.add_off(o, c0)
                };
                let mut accs = Vec::new();
                for r in 0..rows {
                    accs.push(match c {
                        Some(c) => g.load_vec(c, s, out_off(g, r)?, len)?,
                        None => g.splat(g.constant(s, 0.0), len)?,
                    });
                }
                let zero = g.i64c(0);
                let a_rows: Vec<IntValue<'ctx>> =
                    (0..rows).map(|r| a.at(g, g.add_off(i0, r)?, zero)).collect::<Result<_, _>>()?;
                let step = |g: &mut Gen<'ctx, '_>, kk: IntValue<'ctx>, accs: &mut Vec<V<'ctx>>| {
                    let boff = b.at(g, kk, zero)?;
                    let bk = g.load_vec(b.ptr, s, g.add_off(boff, c0)?, len)?;
                    let ak = g.b.build_int_mul(kk, a.col, "").map_err(be)?;
                    for (acc, ar) in accs.iter_mut().zip(&a_rows) {
                        let aoff = g.b.build_int_add(ak, *ar, "").map_err(be)?;
                        let aik = g.load_elem(a.ptr, s, aoff)?;
                        let aik = g.splat(aik, len)?;
                        // Negated as a vector, which x86 folds into the FMA (`vfnmadd`).
                        let aik = if a_neg { g.unary(tilec_midend::UnOp::Neg, s, aik)? } else { aik };
                        *acc = g.fma3(s, aik, bk, *acc)?;
                    }
                    Ok::<(), CodegenError>(())
                };
                if k <= UNROLL_K {
                    for kk in 0..k {
                        let kk = g.i64c(kk as i64);
                        step(g, kk, &mut accs)?;
                    }
                } else {
                    // The accumulators in stack slots that LLVM promotes to registers (phis).
                    let slots: Vec<PointerValue<'ctx>> =
                        accs.iter().map(|_| g.alloca(s, len)).collect::<Result<_, _>>()?;
                    for (p, x) in slots.iter().zip(&accs) {
                        g.store_vec(*p, s, g.i64c(0), *x)?;
                    }
                    let (lo, hi) = (g.i64c(0), g.i64c(k as i64));
                    g.dyn_loop(lo, hi, |g, kk| {
                        let mut cur =
                            slots.iter().map(|p| g.load_vec(*p, s, g.i64c(0), len)).collect::<Result<Vec<_>, _>>()?;
                        step(g, kk, &mut cur)?;
                        for (p, x) in slots.iter().zip(&cur) {
                            g.store_vec(*p, s, g.i64c(0), *x)?;
                        }
                        Ok(())
                    })?;
                    accs = slots.iter().map(|p| g.load_vec(*p, s, g.i64c(0), len)).collect::<Result<_, _>>()?;
                }
                for (r, x) in accs.iter().enumerate() {
                    let off = out_off(g, r as u32)?;
                    let y = match sub_from {
                        Some(t) => {
                            let tr = g.load_vec(t, s, off, len)?;
                            g.bin(BinOp::Sub, s, tr, *x)?
                        }
                        None => *x,
                    };
                    g.store_vec(dst, s, off, y)?;
                }
            }
            Ok(())
        };
        // Full blocks in a loop (which LLVM does not unroll: each block's accumulators stay in
        // registers, instead of the scheduler interleaving all blocks), then the last rows.
        let mr = if k > UNROLL_K { MR_LOOP } else { MR };
        let full = m / mr;
        if full > 1 {
            let (lo, hi) = (g.i64c(0), g.i64c(full as i64));
            g.dyn_loop(lo, hi, |g, ib| {
                let i0 = g.b.build_int_mul(ib, g.i64c(mr as i64), "").map_err(be)?;
                block(g, i0, mr)
            })?;
        } else if full == 1 {
            block(g, g.i64c(0), mr)?;
        }
        if m % mr != 0 {
            block(g, g.i64c((full * mr) as i64), m % mr)?;
        }
        Ok(())
    }
}
