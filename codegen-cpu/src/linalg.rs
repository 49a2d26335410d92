//! Matrix products of register tiles in the CPU backend, with a register-blocked
//! micro-kernel (the factorizations are in `factor.rs`). A left operand made by `transpose`
//! and/or `neg` of another tile and used only there is read in place from that tile
//! (`tilec_midend::fusion::left_operands`, as the LLVM backend does): the same values, so the
//! same bits, without forming the transpose (potrs and the transposed left trsm kernels: about
//! 3% fewer instructions per launch).
//!
//! Algorithm: the micro-kernel keeps a 4 x (2 vectors) block of the result in registers
//! across the whole `k` loop (the BLIS micro-kernel idea: Van Zee & van de Geijn, "BLIS: A
//! Framework for Rapidly Instantiating BLAS Functionality", ACM TOMS 2015).

use crate::lower::{cl_type, Lower};
use crate::memory::flags;
use crate::tile::vec_ty;
use crate::CodegenError;
use cranelift_codegen::ir::{self, types, InstBuilder};
use cranelift_frontend::Variable;
use cranelift_module::Module as ClModule;
use tilec_midend::{BinOp, Op, Scalar, Type};

/// How a product reads its left operand `a`: element `[i, kk]` at `a + i * ai + kk * ak`
/// (elements; `ai = 1, ak = m` for a transpose read in place), negated when `neg`.
#[derive(Clone, Copy)]
struct AView {
    a: ir::Value,
    ai: u32,
    ak: u32,
    neg: bool,
}

/// Rows of the result block kept in registers by the matmul micro-kernel.
const MR: u32 = 4;
/// Vectors per row of that block.
const NR: u32 = 2;
/// Steps of the micro-kernel's `k` loop per iteration. Cranelift's x86 fused multiply-add
/// overwrites a multiplicand, not the accumulator, so one step per iteration moved every
/// accumulator back to its register on the loop's back edge (8 moves per 8 FMAs); with two,
/// half of the chains end where they started (4 per 16). Four measured slower.
const K_UNROLL: u32 = 2;
/// Vectors of rows (of one column) kept in registers by `column_block`.
const COL_BLOCK: u32 = 4;

/// The flags of the micro-kernel's operand loads inside its `k` loop: besides `notrap`,
/// `readonly` and `can_move`, which make them pure for Cranelift's e-graph, so that each is
/// placed next to the fused multiply-adds that use it. As ordinary (side-effecting) loads they
/// all stayed at the top of the loop body, before the arithmetic, which Cranelift places at its
/// first use; with the loop unrolled by two the loaded values no longer fitted in the 16 vector
/// registers and the accumulators spilled. Sound though the operand tiles are written elsewhere in
/// the function: each such load's address depends on the loop's counter, so the only loads
/// Cranelift could merge (same address value) or move are within one iteration of that loop,
/// where nothing is stored. Straight-line steps after the loop keep `flags()`: their constant
/// addresses would let a load move out of an enclosing loop, above the stores that fill its tile.
fn loop_operand_flags() -> ir::MemFlagsData {
    flags().with_readonly().with_can_move()
}

impl<M: ClModule> Lower<'_, '_, M> {
    /// `a @ b` (`acc`: `c + a @ b` with `c` the first operand), into the result tile.
    pub(crate) fn matmul(&mut self, op: &Op, s: Scalar, acc: bool) -> Result<(), CodegenError> {
        let c = self.tile_addr(op.results[0]);
        self.matmul_into(op, s, acc, c, None)
    }

    /// `t - a @ b` for the `Matmul` op `mm` and the `Sub` op `sub` that alone uses its product
    /// (`t` is `sub`'s first operand): the product is formed in registers as for `a @ b` and
    /// subtracted from `t` as it is stored into `sub`'s result, the same operations (and bits)
    /// as the product tile followed by the subtraction, without storing and reloading the
    /// product. The caller checks that `sub`'s result does not share a slot with `a` or `b`.
    pub(crate) fn matmul_sub(&mut self, mm: &Op, sub: &Op, s: Scalar) -> Result<(), CodegenError> {
        let t = self.tile_addr(sub.args[0]);
        let out = self.tile_addr(sub.results[0]);
        self.matmul_into(mm, s, false, out, Some(t))
    }

    /// The product of `op` into the tile at `c`: added to `c`'s value (`acc`), or, with
    /// `sub_from: Some(t)`, started at zero and stored as `t - product`.
    fn matmul_into(
        &mut self,
        op: &Op,
        s: Scalar,
        acc: bool,
        c: ir::Value,
        sub_from: Option<ir::Value>,
    ) -> Result<(), CodegenError> {
        let base = usize::from(acc);
        let (ta, tb) = (self.f.ty(op.args[base]).clone(), self.f.ty(op.args[base + 1]).clone());
        let (m, k) = ta.rows_cols();
        let n = match &tb {
            Type::Tile { shape, .. } if shape.len() == 2 => shape[1],
            _ => 1,
        };
        if acc {
            self.copy_tile_to_result(op.args[0], op.results[0]);
        } else if sub_from.is_none() {
            self.zero_bytes(c, m * n * s.bytes());
        }
        // The left operand, or the tile it is read from in place (`left_views`): `a[i, kk]`
        // is at `a + (i * ai + kk * ak)` elements, negated when `neg`.
        let view = self.left_views.get(&op.args[base]).copied();
        let a = match view {
            Some(v) => self.tile_addr(v.source),
            None => self.slot_layout_operand(op.args[base]),
        };
        let (ai, ak) = if view.is_some_and(|v| v.transposed) { (1, m) } else { (k, 1) };
        let av = AView { a, ai, ak, neg: view.is_some_and(|v| v.negated) };
        let b = self.tile_addr(op.args[base + 1]);
        let lanes = 16 / s.bytes();
        let nv = n / lanes;
        // Vector columns in blocks of NR vectors (the last block may be narrower).
        let mut j = 0;
        let esz = s.bytes();
        while j < nv {
            let w = NR.min(nv - j);
            let mut i = 0;
            // Whole blocks of MR rows in a loop: one copy of the micro-kernel's code per block
            // of columns instead of one per block of the result (a 64 x 64 f32 product was 128
            // copies, 67 KB of code that did not stay in the instruction cache). Same blocks, same
            // order, so the same bits.
            let blocks = m / MR;
            if blocks >= 2 {
                self.unrolled_loop(blocks, 1, |l, ib, _| {
                    let row = l.b.ins().imul_imm_s(ib, (MR * esz) as i64);
                    let at = |l: &mut Self, p: ir::Value, stride: u32| {
                        let o = l.b.ins().imul_imm_s(row, stride as i64);
                        l.b.ins().iadd(p, o)
                    };
                    let av = AView { a: at(l, av.a, av.ai), ..av };
                    let (c, t) = (at(l, c, n), sub_from.map(|t| at(l, t, n)));
                    l.micro_kernel(s, (av, b, c, t), (n, k), (0, j * lanes), (MR, w));
                });
                i = blocks * MR;
            }
            while i < m {
                let h = MR.min(m - i);
                self.micro_kernel(s, (av, b, c, sub_from), (n, k), (i, j * lanes), (h, w));
                i += h;
            }
            j += w;
        }
        // Columns past the last whole vector (all of a matrix-vector product's): `lanes` rows
        // at a time in one vector (`column_block`), the rows left over one by one.
        let full_rows = m / lanes * lanes;
        for col in nv * lanes..n {
            let mut i = 0;
            while i < full_rows {
                let h = COL_BLOCK.min((full_rows - i) / lanes);
                self.column_block(s, (av, b, c, sub_from), (n, k), (i, col), h);
                i += h * lanes;
            }
            for row in full_rows..m {
                let cell = ((row * n + col) * s.bytes()) as i32;
                let init = match sub_from {
                    Some(_) => self.zero(s),
                    None => self.ld(s, c, cell),
                };
                let var = self.b.declare_var(cl_type(s));
                self.b.def_var(var, init);
                let (lo, hi) = (self.b.ins().iconst(types::I64, 0), self.b.ins().iconst(types::I64, k as i64));
                self.dyn_loop(lo, hi, |l, kk| {
                    let ix = l.b.ins().imul_imm_s(kk, av.ak as i64);
                    let ix = l.b.ins().iadd_imm_s(ix, (row * av.ai) as i64);
                    let bi = l.b.ins().imul_imm_s(kk, n as i64);
                    let bi = l.b.ins().iadd_imm_s(bi, col as i64);
                    let (aa, ba) = (l.at(a, ix, s), l.at(b, bi, s));
                    let (x, y) = (l.ld(s, aa, 0), l.ld(s, ba, 0));
                    let x = if av.neg { l.neg(s, x) } else { x };
                    let acc = l.b.use_var(var);
                    let nx = l.fma(x, y, acc);
                    l.b.def_var(var, nx);
                });
                let mut sum = self.b.use_var(var);
                if let Some(t) = sub_from {
                    let tv = self.ld(s, t, cell);
                    sum = self.bin(BinOp::Sub, s, tv, sum);
                }
                self.st(sum, c, cell);
            }
        }
        Ok(())
    }

    /// A vector variable holding part of a product's result across its `k` loop: zero when the
    /// product is subtracted at the end (`from_zero`), else `init`'s vector (the result's
    /// elements there).
    fn block_acc(
        &mut self,
        s: Scalar,
        vt: ir::Type,
        from_zero: bool,
        init: impl FnOnce(&mut Self) -> ir::Value,
    ) -> Variable {
        let var = self.b.declare_var(vt);
        let x = if from_zero {
            let z = self.zero(s);
            self.b.ins().splat(vt, z)
        } else {
            init(self)
        };
        self.b.def_var(var, x);
        var
    }

    /// Column `col` of `C[i0..i0 + h*lanes, :] += A[i0.., :] @ B[:, col]` with each vector of
    /// `lanes` rows in a register across the loop over `k` (with `t: Some(..)`, from zero, and
    /// `C = T - block` stored): `A`'s column as one vector load where its rows are adjacent in
    /// memory (`ai == 1`, a transpose read in place), else `lanes` loads into the lanes;
    /// `B[kk, col]` splatted. Each lane does the scalar loop's operations in its order (one
    /// fused multiply-add per `kk`), so the bits are the scalar loop's; a matrix-vector product
    /// (`n == 1`) needs this alone.
    fn column_block(
        &mut self,
        s: Scalar,
        (av, b, c, t): (AView, ir::Value, ir::Value, Option<ir::Value>),
        (n, k): (u32, u32),
        (i0, col): (u32, u32),
        h: u32,
    ) {
        let vt = vec_ty(s).unwrap_or(types::F32X4);
        let esz = s.bytes();
        let lanes = 16 / esz;
        // C's (or T's) elements [i0 + v*lanes + r, col], r in 0..lanes: one vector load where
        // they are adjacent (`n == 1`), else one load per lane.
        let cell = |v: u32, r: u32| ((i0 + v * lanes + r) * n + col) * esz;
        let gather = |l: &mut Self, base: ir::Value, v: u32| l.strided_vector(s, base, cell(v, 0), n * esz);
        let accs: Vec<Variable> = (0..h).map(|v| self.block_acc(s, vt, t.is_some(), |l| gather(l, c, v))).collect();
        if (av.ai, av.ak) == (k, 1) && k % lanes == 0 {
            self.column_block_by_rows(s, (av, b), (n, k), (i0, col), &accs);
        } else {
            let lo = self.b.ins().iconst(types::I64, 0);
            let hi = self.b.ins().iconst(types::I64, k as i64);
            self.dyn_loop(lo, hi, |l, kk| {
                let brow = l.b.ins().imul_imm_s(kk, (n * esz) as i64);
                let brow = l.b.ins().iadd(b, brow);
                let y = l.ld(s, brow, (col * esz) as i32);
                let ys = l.b.ins().splat(vt, y);
                let acol = l.b.ins().imul_imm_s(kk, (av.ak * esz) as i64);
                let acol = l.b.ins().iadd(av.a, acol);
                for (v, var) in accs.iter().enumerate() {
                    let row = i0 + v as u32 * lanes;
                    let x = l.strided_vector(s, acol, row * av.ai * esz, av.ai * esz);
                    let x = if av.neg { l.neg(s, x) } else { x };
                    let cur = l.b.use_var(*var);
                    let nxt = l.fma(x, ys, cur);
                    l.b.def_var(*var, nxt);
                }
            });
        }
        for v in 0..h {
            let mut x = self.b.use_var(accs[v as usize]);
            if let Some(t) = t {
                let tv = gather(self, t, v);
                x = self.bin(BinOp::Sub, s, tv, x);
            }
            if n == 1 {
                self.b.ins().store(flags(), x, c, cell(v, 0) as i32);
            } else {
                for r in 0..lanes {
                    let e = self.b.ins().extractlane(x, r as u8);
                    self.st(e, c, cell(v, r) as i32);
                }
            }
        }
    }

    /// The `k` loop of `column_block` for a row-major left operand (`ak == 1`) whose rows hold
    /// a whole number of vectors: `lanes` columns of A at a time, each `lanes x lanes` block of
    /// it loaded by rows (vector loads) and transposed in registers (`transpose_block`), instead
    /// of a load per lane of each column. Each accumulator's lanes get the same fused
    /// multiply-adds in the same order (`kk` ascending), so the bits are `column_block`'s. The
    /// walker's 256 x 8 by 8 x 1 product gathered each column element by element.
    fn column_block_by_rows(
        &mut self,
        s: Scalar,
        (av, b): (AView, ir::Value),
        (n, k): (u32, u32),
        (i0, col): (u32, u32),
        accs: &[Variable],
    ) {
        let vt = vec_ty(s).unwrap_or(types::F32X4);
        let esz = s.bytes();
        let lanes = 16 / esz;
        let lo = self.b.ins().iconst(types::I64, 0);
        let hi = self.b.ins().iconst(types::I64, (k / lanes) as i64);
        self.dyn_loop(lo, hi, |l, q| {
            // B[q*lanes + u, col] for u in 0..lanes, and A's columns q*lanes.. of row 0.
            let brow = l.b.ins().imul_imm_s(q, (lanes * n * esz) as i64);
            let brow = l.b.ins().iadd(b, brow);
            let ys: Vec<ir::Value> = (0..lanes)
                .map(|u| {
                    let y = l.ld(s, brow, ((u * n + col) * esz) as i32);
                    l.b.ins().splat(vt, y)
                })
                .collect();
            let acol = l.b.ins().imul_imm_s(q, (lanes * esz) as i64);
            let acol = l.b.ins().iadd(av.a, acol);
            for (v, var) in accs.iter().enumerate() {
                let row = i0 + v as u32 * lanes;
                let rows: Vec<ir::Value> = (0..lanes)
                    .map(|r| l.b.ins().load(types::I8X16, flags(), acol, ((row + r) * av.ai * esz) as i32))
                    .collect();
                let cols = l.transpose_block(&rows);
                let mut cur = l.b.use_var(*var);
                for (u, cv) in cols.into_iter().enumerate() {
                    let x = l.b.ins().bitcast(vt, ir::MemFlagsData::new().with_endianness(ir::Endianness::Little), cv);
                    let x = if av.neg { l.neg(s, x) } else { x };
                    cur = l.fma(x, ys[u], cur);
                }
                l.b.def_var(*var, cur);
            }
        });
    }

    /// `C[i0..i0+h, j0..j0+w*lanes] += A[i0..i0+h, :] @ B[:, j0..j0+w*lanes]` with the block of C
    /// in `h * w` vector registers across a loop over `k` (with `t: Some(..)`, the block starts
    /// at zero and `C = T - block` is stored).
    fn micro_kernel(
        &mut self,
        s: Scalar,
        (av, b, c, t): (AView, ir::Value, ir::Value, Option<ir::Value>),
        (n, k): (u32, u32),
        (i0, j0): (u32, u32),
        (h, w): (u32, u32),
    ) {
        // Products of booleans are rejected by the frontend.
        let vt = vec_ty(s).unwrap_or(types::F32X4);
        let esz = s.bytes();
        let lanes = 16 / esz;
        let coff = |r: u32, v: u32| (((i0 + r) * n + j0 + v * lanes) * esz) as i32;
        let mut accs: Vec<Variable> = Vec::new();
        for r in 0..h {
            for v in 0..w {
                accs.push(self.block_acc(s, vt, t.is_some(), |l| l.b.ins().load(vt, flags(), c, coff(r, v))));
            }
        }
        self.unrolled_loop(k, K_UNROLL, |l, kk, in_loop| {
            let fl = if in_loop { loop_operand_flags() } else { flags() };
            // B[k, j0 + v*lanes] and A[i0 + r, k].
            let brow = l.b.ins().imul_imm_s(kk, (n * esz) as i64);
            let brow = l.b.ins().iadd(b, brow);
            let bs: Vec<ir::Value> =
                (0..w).map(|v| l.b.ins().load(vt, fl, brow, ((j0 + v * lanes) * esz) as i32)).collect();
            let acol = l.b.ins().imul_imm_s(kk, (av.ak * esz) as i64);
            let acol = l.b.ins().iadd(av.a, acol);
            for r in 0..h {
                let x = l.b.ins().load(cl_type(s), fl, acol, ((i0 + r) * av.ai * esz) as i32);
                let x = if av.neg { l.neg(s, x) } else { x };
                let xs = l.b.ins().splat(vt, x);
                for (v, bv) in bs.iter().enumerate() {
                    let var = accs[(r * w) as usize + v];
                    let cur = l.b.use_var(var);
                    let nxt = l.fma(xs, *bv, cur);
                    l.b.def_var(var, nxt);
                }
            }
        });
        for r in 0..h {
            for v in 0..w {
                let mut x = self.b.use_var(accs[(r * w + v) as usize]);
                if let Some(t) = t {
                    let tv = self.b.ins().load(vt, flags(), t, coff(r, v));
                    x = self.bin(BinOp::Sub, s, tv, x);
                }
                self.b.ins().store(flags(), x, c, coff(r, v));
            }
        }
    }
}
