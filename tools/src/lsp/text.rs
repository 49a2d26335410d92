//! Positions in a document: byte offsets (what the compiler's spans hold) to and from LSP
//! positions (line and UTF-16 code unit, what the protocol requires by default).

use lsp_types::{Position, Range};
use tilec_grammar::span::Span;

/// The start offsets of a text's lines, for offset and position conversions.
pub(crate) struct LineIndex<'t> {
    text: &'t str,
    starts: Vec<usize>,
}

impl<'t> LineIndex<'t> {
    pub(crate) fn new(text: &'t str) -> LineIndex<'t> {
        let mut starts = vec![0];
        starts.extend(text.match_indices('\n').map(|(i, _)| i + 1));
        LineIndex { text, starts }
    }

    /// The position of byte `offset` (clamped to the text; a position inside a UTF-8
    /// sequence moves to its start).
    pub(crate) fn position(&self, offset: usize) -> Position {
        let mut offset = offset.min(self.text.len());
        while !self.text.is_char_boundary(offset) {
            offset -= 1;
        }
        let line = self.starts.partition_point(|&s| s <= offset) - 1;
        let col: usize = self.text[self.starts[line]..offset].chars().map(char::len_utf16).sum();
        Position { line: line as u32, character: col as u32 }
    }

    /// The range of a span.
    pub(crate) fn range(&self, span: Span) -> Range {
        Range { start: self.position(span.start as usize), end: self.position(span.end as usize) }
    }

    /// The byte offset of a position (clamped: past the end of a line is its end).
    pub(crate) fn offset(&self, p: Position) -> usize {
        let Some(&start) = self.starts.get(p.line as usize) else {
            return self.text.len();
        };
        let end = self.starts.get(p.line as usize + 1).map_or(self.text.len(), |e| e - 1);
        let mut units = 0u32;
        for (i, c) in self.text[start..end].char_indices() {
            if units >= p.character {
                return start + i;
            }
            units += c.len_utf16() as u32;
        }
        end
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utf16_columns_round_trip() {
        // `é` is 2 bytes and 1 UTF-16 unit; `𝄞` is 4 bytes and 2 units.
        let text = "ab\né𝄞x\n";
        let ix = LineIndex::new(text);
        let x = text.find('x').expect("x");
        assert_eq!(ix.position(x), Position { line: 1, character: 3 });
        assert_eq!(ix.offset(Position { line: 1, character: 3 }), x);
        assert_eq!(ix.offset(Position { line: 0, character: 99 }), 2);
        assert_eq!(ix.position(text.len()), Position { line: 2, character: 0 });
    }
}
