//! Byte offsets ↔ LSP positions.
//!
//! Recipe spans are byte offsets into UTF-8 text; the protocol counts lines and, within a line,
//! UTF-16 code units (its default position encoding, which every client supports). A
//! [`LineIndex`] holds where each line starts so both directions are a binary search plus a walk
//! over one line. Positions past the end of a line or of the text are clamped, as the protocol
//! asks, so a client that is briefly out of step never makes the server index out of bounds.

use crate::recipe::Span;
use lsp_types::{Position, Range};

/// Line starts of one text.
#[derive(Clone, Debug)]
pub struct LineIndex {
    /// Byte offset of the first character of every line; `starts[0] == 0`.
    starts: Vec<usize>,
    len: usize,
}

impl LineIndex {
    pub fn new(text: &str) -> LineIndex {
        let mut starts = vec![0];
        starts.extend(text.match_indices('\n').map(|(i, _)| i + 1));
        LineIndex {
            starts,
            len: text.len(),
        }
    }

    /// The position of byte `offset` of `text` (the text this index was built from).
    pub fn position(&self, text: &str, offset: usize) -> Position {
        let offset = floor_char_boundary(text, offset.min(self.len));
        let line = self.starts.partition_point(|&s| s <= offset) - 1;
        let start = self.starts[line];
        let character: usize = text[start..offset].chars().map(char::len_utf16).sum();
        Position::new(line as u32, character as u32)
    }

    /// The byte offset of `pos` in `text`, clamped to the end of its line (before the line
    /// break) and to the end of the text.
    pub fn offset(&self, text: &str, pos: Position) -> usize {
        let Some(&start) = self.starts.get(pos.line as usize) else {
            return self.len;
        };
        let end = (self.starts.get(pos.line as usize + 1))
            .map_or(self.len, |&next| next - 1)
            .min(self.len);
        let line = text[start..end].trim_end_matches('\r');
        let mut units = 0usize;
        for (i, c) in line.char_indices() {
            if units >= pos.character as usize {
                return start + i;
            }
            units += c.len_utf16();
        }
        start + line.len()
    }

    /// The range of a span of this text.
    pub fn range(&self, text: &str, span: Span) -> Range {
        Range::new(
            self.position(text, span.start),
            self.position(text, span.end.max(span.start)),
        )
    }
}

/// The largest char boundary of `text` at or before `offset`.
fn floor_char_boundary(text: &str, mut offset: usize) -> usize {
    while !text.is_char_boundary(offset) {
        offset -= 1;
    }
    offset
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn positions_count_utf16_units_per_line() {
        // `é` is two bytes and one unit; `𝄞` is four bytes and two units.
        let text = "ab\né𝄞x\r\nlast";
        let ix = LineIndex::new(text);
        assert_eq!(ix.position(text, 0), Position::new(0, 0));
        assert_eq!(ix.position(text, 3), Position::new(1, 0));
        let x = text.find('x').expect("x");
        assert_eq!(ix.position(text, x), Position::new(1, 3));
        assert_eq!(ix.offset(text, Position::new(1, 3)), x);
        assert_eq!(
            ix.offset(text, Position::new(1, 1)),
            text.find('𝄞').expect("clef")
        );
        let last = text.find("last").expect("last");
        assert_eq!(ix.position(text, last + 2), Position::new(2, 2));
        assert_eq!(ix.offset(text, Position::new(2, 2)), last + 2);
    }

    #[test]
    fn out_of_range_positions_are_clamped() {
        let text = "ab\r\ncd";
        let ix = LineIndex::new(text);
        // Past the end of line 0: before its `\r\n`.
        assert_eq!(ix.offset(text, Position::new(0, 99)), 2);
        assert_eq!(ix.offset(text, Position::new(7, 0)), text.len());
        assert_eq!(ix.position(text, 999), Position::new(1, 2));
        // Inside a multi-byte character: its start.
        let t = "é";
        assert_eq!(LineIndex::new(t).position(t, 1), Position::new(0, 0));
    }
}
