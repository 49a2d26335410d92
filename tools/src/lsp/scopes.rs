//! Where a definition is visible, from the syntax tree: a `let` until the end of its block, a
//! loop variable in its loop's body, parameters and generic parameters in their whole item.
//! Used by completion, which must offer only the names that would resolve at the cursor.

use tilec_frontend::semantic::{Def, DefKind};
use tilec_grammar::ast::{Block, ElseBranch, File, IfStmt, Item, Stmt};
use tilec_grammar::span::Span;

/// The blocks and loops of a file: block spans, and `(loop variable, body)` spans.
#[derive(Default)]
pub(crate) struct Scopes {
    items: Vec<Span>,
    blocks: Vec<Span>,
    loops: Vec<(Span, Span)>,
}

impl Scopes {
    pub(crate) fn new(file: &File) -> Scopes {
        let mut s = Scopes::default();
        for i in &file.items {
            match i {
                Item::Fn(f) => {
                    s.items.push(f.span);
                    s.block(&f.body);
                }
                Item::Kernel(k) => {
                    s.items.push(k.span);
                    s.block(&k.body);
                }
                _ => {}
            }
        }
        s
    }

    fn block(&mut self, b: &Block) {
        self.blocks.push(b.span);
        for st in &b.stmts {
            match st {
                Stmt::For { var, body, .. } => {
                    self.loops.push((var.span, body.span));
                    self.block(body);
                }
                Stmt::While { body, .. } => self.block(body),
                Stmt::If(i) => self.if_stmt(i),
                _ => {}
            }
        }
    }

    fn if_stmt(&mut self, i: &IfStmt) {
        self.block(&i.then);
        match i.els.as_deref() {
            Some(ElseBranch::If(e)) => self.if_stmt(e),
            Some(ElseBranch::Block(b)) => self.block(b),
            None => {}
        }
    }

    /// The span in which `d` (of the main file) is visible; `None` for items (visible
    /// everywhere) and for definitions outside any body.
    pub(crate) fn scope(&self, d: &Def) -> Option<Span> {
        let at = d.at.span;
        let inside = |s: &Span| s.start <= at.start && at.end <= s.end;
        match d.kind {
            DefKind::Const | DefKind::Fn | DefKind::Kernel => None,
            DefKind::LoopVar => self.loops.iter().find(|(v, _)| *v == at).map(|(_, b)| *b),
            DefKind::Local => self.blocks.iter().filter(|b| inside(b)).min_by_key(|b| b.end - b.start).copied(),
            DefKind::Param | DefKind::ShapeVar | DefKind::TypeParam | DefKind::ConstParam => {
                self.items.iter().find(|s| inside(s)).copied()
            }
        }
    }

    /// Whether the main-file definition `d` is visible at byte `off`.
    pub(crate) fn visible(&self, d: &Def, off: usize) -> bool {
        if matches!(d.kind, DefKind::Const | DefKind::Fn | DefKind::Kernel) {
            return true;
        }
        if d.at.source.is_some() || (d.at.span.end as usize) > off && d.kind == DefKind::Local {
            return false;
        }
        self.scope(d).is_some_and(|s| (s.start as usize) <= off && off <= s.end as usize)
    }
}
