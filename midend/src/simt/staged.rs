//! Matrix products whose right operand is staged through shared memory.
//!
//! With its right operand in registers, `a @ b` broadcasts every element of `b` with one
//! shuffle (`linalg.rs`): one shuffle per `slots` fused multiply-adds, and a shuffle issues at
//! a quarter of the FMA rate on NVIDIA GPUs. Staged, `b` is written once to the element
//! type's scratch array (the one `Reshape` uses, sized for both; one copy per program), a
//! barrier, and every lane then reads `b` row by row at constant positions: uniform loads,
//! which LLVM's NVPTX backend merges four at a time into one broadcast `ld.shared.v4` (the
//! scratch is 16-byte aligned), then a barrier before the scratch is written again. The
//! right operand is written
//!
//! - by a coalesced copy at its load, when it is a 2-D tile `Load` used only by this product,
//!   with no other product, reshape or structured op between them ([`Rhs::Loaded`]): lane `l`
//!   copies elements `l, l + lanes, ..` of the tile in row-major order, so consecutive lanes
//!   read consecutive addresses, and the tile never occupies registers;
//! - from the registers of `t`, transposed, when it is `transpose(t)` used only by this
//!   product ([`Rhs::Transposed`]): the lane holding row `c` of `t` writes it as column `c`
//!   of `b`, with no butterfly exchange (`transpose.rs`);
//! - from its own registers otherwise ([`Rhs::Regs`]).
//!
//! Every output element accumulates its products in `k` order with the same `fma`s as the
//! shuffle form, so the results are bitwise the same. Products of `f32` or `f64` tiles with a
//! right operand of at least [`MIN_ELEMS`] elements are staged, except `transpose(x) @ B[..]`
//! (see [`staging`]).
//!
//! On an H200 (bench/README.md, 2026-11-27 evening): gemm 4096^3 f32 26.5 -> 17.2 ms with
//! 32 x 32 x 32 blocks and 18.6 -> 9.6 ms with 64 x 64 x 16; potrf_batched 4096 x 92 x 92
//! 0.469 -> 0.416 ms (f32) and 0.884 -> 0.668 ms (f64); potrs 1.91 -> 1.79 ms; but
//! trsm_right_lower_t_batched 1.02 -> 1.22 ms, its registers per lane 128 -> 154 (ptxas
//! spills at 136), 16 -> 12 warps per SM.

use super::lower::{err, Lower, Lv};
use super::SimtError;
use crate::ir::*;
use crate::types::{Scalar, Type};
use std::collections::{HashMap, HashSet};

/// Right operands smaller than this stay in registers (the two barriers cost more than the
/// shuffles they save).
const MIN_ELEMS: u32 = 64;

/// How a staged product's right operand reaches the scratch array.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum Rhs {
    /// Its registers are written at the product.
    Regs,
    /// It is `transpose(t)`: `t`'s registers are written transposed at the product.
    Transposed,
    /// It was copied from memory at its load.
    Loaded,
}

/// The staged products of a function, found before lowering.
#[derive(Debug, Default)]
pub(super) struct Staging {
    /// Product result -> how its right operand is staged.
    pub(super) products: HashMap<Value, Rhs>,
    /// `transpose(t)` results read transposed by their product: lowered to `t` unchanged.
    pub(super) transposes: HashSet<Value>,
    /// 2-D loads copied to the scratch array at the load.
    pub(super) loads: HashSet<Value>,
    /// The largest staged operand of each element type, in elements.
    pub(super) sizes: HashMap<Scalar, u32>,
}

/// The staged products of `f` (see the module docs). A product `transpose(x) @ b` whose `b`
/// is not a transpose too is not staged: staged, ptxas spilled the f64
/// `trsm_left_lower_t_batched` (88 bytes) and `trsm_left_upper_t_batched` (44), which fit in
/// 253 and 251 registers with shuffles.
pub(super) fn staging(f: &Function) -> Staging {
    let mut uses = HashMap::new();
    f.body.count_uses(&mut uses);
    let mut defs = HashMap::new();
    definitions(&f.body, &mut defs);
    let mut st = Staging::default();
    find(f, &f.body, &uses, &defs, &mut st);
    st
}

fn definitions<'a>(r: &'a Region, out: &mut HashMap<Value, &'a Op>) {
    for op in &r.ops {
        for v in &op.results {
            out.insert(*v, op);
        }
        for reg in &op.regions {
            definitions(reg, out);
        }
    }
}

/// Whether an op between a staged load and its product could write the scratch array.
fn touches_scratch(op: &Op) -> bool {
    !op.regions.is_empty() || matches!(op.kind, OpKind::Matmul | OpKind::MatmulAcc | OpKind::Reshape)
}

fn find(f: &Function, r: &Region, uses: &HashMap<Value, usize>, defs: &HashMap<Value, &Op>, st: &mut Staging) {
    for (i, op) in r.ops.iter().enumerate() {
        for reg in &op.regions {
            find(f, reg, uses, defs, st);
        }
        if !matches!(op.kind, OpKind::Matmul | OpKind::MatmulAcc) {
            continue;
        }
        let b = op.args[usize::from(op.kind == OpKind::MatmulAcc) + 1];
        let Type::Tile { elem, shape } = f.ty(b) else { continue };
        if !matches!(elem, Scalar::F32 | Scalar::F64) || shape.len() != 2 || shape[0] * shape[1] < MIN_ELEMS {
            continue;
        }
        let single = |v: Value| uses.get(&v) == Some(&1);
        // A 2-D load of `v` used only here, in this region before the product, with nothing
        // between that writes the scratch array: copied at the load.
        let copied = |v: Value| {
            let is_load = defs.get(&v).is_some_and(|d| {
                matches!(&d.kind, OpKind::Load(kinds) if kinds.iter().filter(|k| matches!(k, Index::Slice(_))).count() == 2)
            });
            let at = r.ops[..i].iter().rposition(|o| o.results.first() == Some(&v));
            is_load && single(v) && at.is_some_and(|j| !r.ops[j + 1..i].iter().any(touches_scratch))
        };
        let a = op.args[usize::from(op.kind == OpKind::MatmulAcc)];
        let a_transposed = defs.get(&a).is_some_and(|d| d.kind == OpKind::Transpose);
        let rhs = match defs.get(&b) {
            Some(d) if d.kind == OpKind::Transpose && single(b) && f.ty(d.args[0]).is_tile() => {
                st.transposes.insert(b);
                Rhs::Transposed
            }
            // `transpose(x) @ B[..]` keeps its shuffles (see above).
            _ if a_transposed => continue,
            _ if copied(b) => {
                st.loads.insert(b);
                Rhs::Loaded
            }
            _ => Rhs::Regs,
        };
        st.products.insert(op.results[0], rhs);
        let n = st.sizes.entry(*elem).or_insert(0);
        *n = (*n).max(shape[0] * shape[1]);
    }
}

impl Lower<'_> {
    /// The staged 2-D `Load` `op` (of `kinds`): a coalesced copy of the tile into the scratch
    /// array, then a barrier. Lane `l` copies the row-major elements `l + j * lanes`; the
    /// tile's out-of-bounds elements are copied as 0, as a load gives them. The result holds
    /// no registers: only its product reads it, from the scratch array.
    pub(super) fn staged_load(&mut self, kinds: &[Index], op: &Op) -> Result<Lv, SimtError> {
        let super::ops::LoadOperands { array, idx, elem, slices } = self.load_operands(kinds, op, 0)?;
        let ((d1, rows), (d2, cols)) = (slices[0], slices[1]);
        let a = self.scratch_of(elem)?;
        let total = rows * cols;
        let lanes = self.lanes;
        let colsc = self.i32c(cols as i64);
        // This lane's row and column within each group of `lanes` consecutive elements, when
        // the groups start at the same column; otherwise each position's own.
        let within = if cols.is_multiple_of(lanes) {
            Some((self.i32c(0), self.lane))
        } else if lanes.is_multiple_of(cols) {
            let r = self.bin(BinOp::Div, self.lane, colsc, Scalar::I32);
            Some((r, self.bin(BinOp::Rem, self.lane, colsc, Scalar::I32)))
        } else {
            None
        };
        for j in 0..total.div_ceil(lanes) {
            let first = j * lanes;
            let jc = self.i32c(first as i64);
            let pos = self.bin(BinOp::Add, jc, self.lane, Scalar::I32);
            let (r, c) = match within {
                Some((lr, lc)) => {
                    let (r0, c0) = (self.i32c((first / cols) as i64), self.i32c((first % cols) as i64));
                    (self.bin(BinOp::Add, r0, lr, Scalar::I32), self.bin(BinOp::Add, c0, lc, Scalar::I32))
                }
                None => (self.bin(BinOp::Div, pos, colsc, Scalar::I32), self.bin(BinOp::Rem, pos, colsc, Scalar::I32)),
            };
            let mut ix = idx.clone();
            ix[d1] = self.bin(BinOp::Add, idx[d1], r, Scalar::I32);
            ix[d2] = self.bin(BinOp::Add, idx[d2], c, Scalar::I32);
            let mut args = vec![array];
            args.extend(ix);
            let x = self.emit1(OpKind::Load(vec![Index::At; args.len() - 1]), args, Type::Scalar(elem));
            let at = if first + lanes > total {
                let tc = self.i32c(total as i64);
                let real = self.cmp(CmpOp::Lt, pos, tc);
                self.masked(real, pos)
            } else {
                pos
            };
            self.put(a, at, x);
        }
        self.emit(OpKind::Barrier, vec![], vec![]);
        Ok(Lv::Mat { rows, cols, elem, regs: Vec::new() })
    }

    /// The scratch array of `elem` (allocated at entry).
    pub(super) fn scratch_of(&self, elem: Scalar) -> Result<Value, SimtError> {
        self.scratch.get(&elem).copied().ok_or_else(|| err("a staged operand without its scratch array"))
    }

    /// `out[s][c] = fma(ra[s][kk], b[kk][c], out[s][c])` for every `kk` in order, with `b`
    /// (`k x n`) staged as `how` (its registers `b` when not yet in the scratch array).
    #[allow(clippy::too_many_arguments)]
    pub(super) fn staged_product(
        &mut self,
        how: Rhs,
        b: &Lv,
        ra: &[Value],
        out: &mut [Value],
        (k, n): (u32, u32),
        slots: u32,
        elem: Scalar,
    ) -> Result<(), SimtError> {
        let a = self.scratch_of(elem)?;
        match how {
            Rhs::Regs => self.spill(a, b),
            Rhs::Transposed => self.spill_transposed(a, b),
            Rhs::Loaded => {}
        }
        if how != Rhs::Loaded {
            self.emit(OpKind::Barrier, vec![], vec![]);
        }
        // Row by row of `b`, each row's consecutive elements in consecutive loads.
        for kk in 0..k {
            for c in 0..n {
                let pc = self.i32c((kk * n + c) as i64);
                let bkc = self.get_at(a, pc, elem);
                for s in 0..slots {
                    let i = (s * n + c) as usize;
                    out[i] = self.fma(ra[(s * k + kk) as usize], bkc, out[i], elem);
                }
            }
        }
        self.emit(OpKind::Barrier, vec![], vec![]);
        Ok(())
    }

    /// Writes the registers of `t` (`n x k`) to `a` as `transpose(t)` in row-major order:
    /// element `[c][kk]` at `kk * n + c`.
    fn spill_transposed(&mut self, a: Value, t: &Lv) {
        let Lv::Mat { rows, cols, regs, .. } = t else { return };
        let positions = self.mat_positions(*rows, *cols, true);
        for (at, x) in positions.into_iter().zip(regs) {
            self.put(a, at, *x);
        }
    }
}
