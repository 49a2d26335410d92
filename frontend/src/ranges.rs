//! Ranges of register tiles: `t[2:6, :]`, `t[:, a:b]`, `t[a:b, c:d]`, `u[a:]`, as values and
//! assignment targets. With compile-time bounds (an omitted bound is 0 or the extent) a range
//! is a block at static offsets: the IR ops `ExtractBlock` (a read) and `InsertBlock` (a
//! write), which every target lowers (a copy of the runs on the CPU; register choices and
//! shuffles in the SIMT form). A range may also start at a run-time position when its extent
//! is a constant (`u[j:j+4]`, as for array slices): it is read and written element by element
//! (`Extract`/`Insert` at run-time indices), elements outside the tile reading as 0 and writes
//! to them doing nothing, as for single elements.

use crate::builder::FnBuilder;
use crate::consteval::NotConst;
use crate::errors;
use tilec_grammar::ast::{Expr, IndexItem};
use tilec_grammar::span::Span;
use tilec_midend::{BinOp, Const, Fill, OpKind, Scalar, Type, Value};

/// A block of a tile: its offset and extent in every dimension; `start[d]` is the run-time
/// offset of a dimension whose range starts at a run-time position (`at[d]` is then 0).
pub(crate) struct Block {
    pub(crate) at: Vec<u32>,
    pub(crate) shape: Vec<u32>,
    pub(crate) start: Vec<Option<Value>>,
}

/// Whether an index item is a range (`a:b`, `a:`, `:b`).
fn is_range(i: &IndexItem) -> bool {
    matches!(i, IndexItem::Range(..) | IndexItem::RangeFrom(_) | IndexItem::RangeTo(_))
}

impl FnBuilder<'_, '_> {
    /// Whether `items` name a range of the tile `t`: one range or `:` per dimension (all `:`
    /// is the whole tile).
    pub(crate) fn is_block(&self, t: Value, items: &[IndexItem]) -> bool {
        matches!(self.ty(t), Type::Tile { ref shape, .. } if shape.len() == items.len())
            && items.iter().all(|i| is_range(i) || matches!(i, IndexItem::Full(_)))
    }

    /// A constant bound of a tile range (`None` after reporting why not).
    fn range_bound(&mut self, e: &Expr) -> Option<i64> {
        match self.const_eval(e) {
            Ok(Const::Int(v, _)) => Some(v),
            Ok(_) => {
                self.error(errors::range_bound_not_const(e.span));
                None
            }
            Err(NotConst::Error(d)) => {
                self.error(d);
                None
            }
            Err(NotConst::Runtime(_)) => {
                self.error(errors::range_bound_not_const(e.span));
                None
            }
        }
    }

    /// The block that `items` (for which [`Self::is_block`] holds) name in `t`, after
    /// checking the bounds (E0229).
    pub(crate) fn tile_block(&mut self, t: Value, items: &[IndexItem]) -> Option<Block> {
        let Type::Tile { shape, .. } = self.ty(t) else { return None };
        let mut block = Block { at: Vec::new(), shape: Vec::new(), start: Vec::new() };
        let mut ok = true;
        for (item, &n) in items.iter().zip(&shape) {
            // A run-time start with a constant extent (`j:j+4`).
            if let IndexItem::Range(a, b) = item {
                if matches!(self.const_eval(a), Err(NotConst::Runtime(_))) {
                    let (k, v) = (self.slice_extent(a, b), self.index(a));
                    match (k, v) {
                        (Some(k), Some(v)) if k <= n => {
                            block.at.push(0);
                            block.shape.push(k);
                            block.start.push(Some(v));
                        }
                        (Some(k), Some(_)) => {
                            self.error(errors::long_tile_range(a.span.to(b.span), k, n));
                            ok = false;
                        }
                        _ => ok = false,
                    }
                    continue;
                }
            }
            let (lo, hi, span) = match item {
                IndexItem::Full(_) => (Some(0), Some(n as i64), None),
                IndexItem::Range(a, b) => {
                    let lo = self.range_bound(a);
                    let hi = if lo.is_some() { self.range_bound(b) } else { None };
                    (lo, hi, Some(a.span.to(b.span)))
                }
                IndexItem::RangeFrom(a) => (self.range_bound(a), Some(n as i64), Some(a.span)),
                IndexItem::RangeTo(b) => (Some(0), self.range_bound(b), Some(b.span)),
                IndexItem::At(_) => (None, None, None),
            };
            let (Some(lo), Some(hi)) = (lo, hi) else {
                ok = false;
                continue;
            };
            if lo < 0 || hi > n as i64 || lo >= hi {
                self.error(errors::bad_tile_range(span.unwrap_or_default(), lo, hi, n));
                ok = false;
                continue;
            }
            block.at.push(lo as u32);
            block.shape.push((hi - lo) as u32);
            block.start.push(None);
        }
        ok.then_some(block)
    }

    /// The tile `t[block]` (`t` itself when the block is the whole tile).
    pub(crate) fn read_block(&mut self, t: Value, b: &Block, span: Span) -> Value {
        let elem = self.ty(t).elem();
        let ty = Type::Tile { elem, shape: b.shape.clone() };
        if b.start.iter().any(Option::is_some) {
            // Element by element: out-of-range elements read as 0.
            let mut out = self.emit1(OpKind::Fill(Fill::Zeros), vec![], ty.clone(), span);
            for p in positions(&b.shape) {
                let src = self.block_index(b, &p, span);
                let mut args = vec![t];
                args.extend(src);
                let x = self.emit1(OpKind::Extract, args, Type::Scalar(elem), span);
                let mut args = vec![out];
                args.extend(p.iter().map(|&i| self.constant(Const::Int(i as i64, Scalar::I32), span)));
                args.push(x);
                out = self.emit1(OpKind::Insert, args, ty.clone(), span);
            }
            return out;
        }
        if ty == self.ty(t) {
            return t;
        }
        self.emit1(OpKind::ExtractBlock(b.at.clone()), vec![t], ty, span)
    }

    /// The indices into the tile of position `p` of block `b`: `start + p` or `at + p` per
    /// dimension.
    fn block_index(&mut self, b: &Block, p: &[u32], span: Span) -> Vec<Value> {
        let mut idx = Vec::new();
        for (d, &i) in p.iter().enumerate() {
            let v = match b.start[d] {
                Some(s) => {
                    let off = self.constant(Const::Int(i as i64, Scalar::I32), span);
                    self.emit1(OpKind::Bin(BinOp::Add), vec![s, off], Type::Scalar(Scalar::I32), span)
                }
                None => self.constant(Const::Int((b.at[d] + i) as i64, Scalar::I32), span),
            };
            idx.push(v);
        }
        idx
    }

    /// `t` with `t[block]` replaced by `v`: a tile of the block's type, or a scalar of the
    /// element type, which fills the block.
    pub(crate) fn write_block(&mut self, t: Value, b: &Block, v: Value, span: Span) -> Value {
        let elem = self.ty(t).elem();
        let ty = Type::Tile { elem, shape: b.shape.clone() };
        let v = if self.ty(v).is_tile() { v } else { self.emit1(OpKind::Fill(Fill::Full), vec![v], ty.clone(), span) };
        if b.start.iter().any(Option::is_some) {
            // Element by element: writes outside the tile do nothing.
            let tt = self.ty(t);
            let mut out = t;
            for p in positions(&b.shape) {
                let mut args = vec![v];
                args.extend(p.iter().map(|&i| self.constant(Const::Int(i as i64, Scalar::I32), span)));
                let x = self.emit1(OpKind::Extract, args, Type::Scalar(elem), span);
                let dst = self.block_index(b, &p, span);
                let mut args = vec![out];
                args.extend(dst);
                args.push(x);
                out = self.emit1(OpKind::Insert, args, tt.clone(), span);
            }
            return out;
        }
        if ty == self.ty(t) {
            return v;
        }
        self.emit1(OpKind::InsertBlock(b.at.clone()), vec![t, v], self.ty(t), span)
    }
}

/// Every position of a block of `shape` (rank 1 or 2), in row-major order.
fn positions(shape: &[u32]) -> Vec<Vec<u32>> {
    match shape {
        [n] => (0..*n).map(|i| vec![i]).collect(),
        [r, c] => (0..*r).flat_map(|i| (0..*c).map(move |j| vec![i, j])).collect(),
        _ => Vec::new(),
    }
}
