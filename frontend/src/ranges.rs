//! Ranges of register tiles: `t[2:6, :]`, `t[:, a:b]`, `t[a:b, c:d]`, `u[a:]`, as values and
//! assignment targets. The bounds are compile-time constants (an omitted bound is 0 or the
//! extent), so a range is a block at static offsets: the IR ops `ExtractBlock` (a read) and
//! `InsertBlock` (a write), which every target lowers (a copy of the runs on the CPU; register
//! choices and shuffles in the SIMT form).

use crate::builder::FnBuilder;
use crate::consteval::NotConst;
use crate::errors;
use tilec_grammar::ast::{Expr, IndexItem};
use tilec_grammar::span::Span;
use tilec_midend::{Const, Fill, OpKind, Type, Value};

/// A block of a tile: its offset and extent in every dimension.
pub(crate) struct Block {
    pub(crate) at: Vec<u32>,
    pub(crate) shape: Vec<u32>,
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
        let mut block = Block { at: Vec::new(), shape: Vec::new() };
        let mut ok = true;
        for (item, &n) in items.iter().zip(&shape) {
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
        }
        ok.then_some(block)
    }

    /// The tile `t[block]` (`t` itself when the block is the whole tile).
    pub(crate) fn read_block(&mut self, t: Value, b: &Block, span: Span) -> Value {
        let elem = self.ty(t).elem();
        let ty = Type::Tile { elem, shape: b.shape.clone() };
        if ty == self.ty(t) {
            return t;
        }
        self.emit1(OpKind::ExtractBlock(b.at.clone()), vec![t], ty, span)
    }

    /// `t` with `t[block]` replaced by `v`: a tile of the block's type, or a scalar of the
    /// element type, which fills the block.
    pub(crate) fn write_block(&mut self, t: Value, b: &Block, v: Value, span: Span) -> Value {
        let elem = self.ty(t).elem();
        let ty = Type::Tile { elem, shape: b.shape.clone() };
        let v = if self.ty(v).is_tile() { v } else { self.emit1(OpKind::Fill(Fill::Full), vec![v], ty.clone(), span) };
        if ty == self.ty(t) {
            return v;
        }
        self.emit1(OpKind::InsertBlock(b.at.clone()), vec![t, v], self.ty(t), span)
    }
}
