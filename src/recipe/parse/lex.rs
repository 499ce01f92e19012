//! The lexical work done outside pest: comments, string escapes and the nesting limit. Each
//! walks the raw text knowing only that `#` outside a string starts a comment and `"` outside a
//! comment starts a string, which is all the grammar lets those characters mean.

use super::{fail, SYNTAX};
use crate::recipe::ast::Comment;
use crate::recipe::diag::{Diagnostic, FileId, Span};

/// Deepest nesting of `(`, `[` and `{` accepted. Far beyond any real recipe, and low enough
/// that pest's recursive descent and the recursive tree walk stay well inside a test thread's
/// stack even in debug builds.
pub const MAX_NESTING: usize = 32;

/// What a byte of the text is part of.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    Code,
    Str,
    Comment,
}

/// Walks the text once, calling `visit(offset, byte, mode)` for every byte with what it is part
/// of: a string's quotes belong to the string, a comment's `#` to the comment, the newline that
/// ends a comment to the code.
fn scan(text: &str, mut visit: impl FnMut(usize, u8, Mode)) {
    let bytes = text.as_bytes();
    let mut mode = Mode::Code;
    let mut i = 0;
    while let Some(&b) = bytes.get(i) {
        match mode {
            Mode::Code => {
                mode = match b {
                    b'"' => Mode::Str,
                    b'#' => Mode::Comment,
                    _ => Mode::Code,
                };
                visit(i, b, mode);
            }
            Mode::Str => {
                visit(i, b, mode);
                if b == b'\\' {
                    i += 1;
                    if let Some(&escaped) = bytes.get(i) {
                        visit(i, escaped, mode);
                    }
                } else if b == b'"' || b == b'\n' {
                    mode = Mode::Code;
                }
            }
            Mode::Comment => {
                if b == b'\n' {
                    mode = Mode::Code;
                }
                visit(i, b, mode);
            }
        }
        i += 1;
    }
}

/// The end of the code in `text[start..end]`, before any trailing whitespace and comments.
///
/// Pest's span of a rule that ends in a repetition or an option takes in the whitespace (and
/// comments) the rule skipped while trying one more; node spans must not.
pub fn code_end(text: &str, start: usize, end: usize) -> usize {
    let Some(slice) = text.get(start..end) else {
        return end;
    };
    let ends_in_code = slice
        .bytes()
        .last()
        .is_some_and(|b| !b.is_ascii_whitespace());
    if ends_in_code && !slice.contains('#') {
        return end;
    }
    let mut last = 0;
    scan(slice, |i, b, mode| {
        if mode == Mode::Str || (mode == Mode::Code && !b.is_ascii_whitespace()) {
            last = i + 1;
        }
    });
    start + last
}

/// How many brackets (`(`, `[`, `{`) are still open at the end of `text`, outside strings and
/// comments: an interactive session keeps reading lines while this is positive.
pub fn open_brackets(text: &str) -> usize {
    let mut depth = 0usize;
    scan(text, |_, b, mode| match (mode, b) {
        (Mode::Code, b'(' | b'[' | b'{') => depth += 1,
        (Mode::Code, b')' | b']' | b'}') => depth = depth.saturating_sub(1),
        _ => {}
    });
    depth
}

/// Refuses brackets nested deeper than [`MAX_NESTING`], at the first bracket too deep.
pub fn check_nesting(file: FileId, text: &str) -> Result<(), Box<Diagnostic>> {
    let mut depth = 0usize;
    let mut too_deep = None;
    scan(text, |i, b, mode| {
        if mode != Mode::Code || too_deep.is_some() {
            return;
        }
        match b {
            b'(' | b'[' | b'{' => {
                depth += 1;
                if depth > MAX_NESTING {
                    too_deep = Some(i);
                }
            }
            b')' | b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    });
    match too_deep {
        None => Ok(()),
        Some(at) => fail(
            Diagnostic::error(
                SYNTAX,
                Span::new(file, at, at + 1),
                format!("brackets nested deeper than {MAX_NESTING} levels"),
            )
            .label("too deeply nested")
            .help("split the expression with `let`, or the block into rules"),
        ),
    }
}

/// Every `#` comment of a text that parsed, in source order, without trailing whitespace.
pub fn comments(file: FileId, text: &str) -> Vec<Comment> {
    let mut found = Vec::new();
    let mut push = |(start, trailing, blank_before): (usize, bool, bool), end: usize| {
        let body = text.get(start + 1..end).unwrap_or("").trim_end();
        found.push(Comment {
            text: body.to_string(),
            trailing,
            blank_before,
            span: Span::new(file, start, start + 1 + body.len()),
        });
    };
    // The open comment: where its `#` is, whether code precedes it on its line, and whether a
    // blank line precedes its line.
    let mut open: Option<(usize, bool, bool)> = None;
    let mut code_on_line = false;
    let mut line_empty = true;
    let mut previous_blank = false;
    scan(text, |i, b, mode| {
        if mode == Mode::Comment {
            let blank_before = !code_on_line && previous_blank && i > 0;
            open.get_or_insert((i, code_on_line, blank_before));
            line_empty = false;
            return;
        }
        if let Some(comment) = open.take() {
            push(comment, i);
        }
        if b == b'\n' {
            previous_blank = line_empty;
            code_on_line = false;
            line_empty = true;
        } else if mode == Mode::Str || !b.is_ascii_whitespace() {
            code_on_line = true;
            line_empty = false;
        }
    });
    if let Some(comment) = open {
        push(comment, text.len());
    }
    found
}

// String literals share the textual IR's escapes (`\" \\ \n \r \t \0 \u{hex}`), so a name
// is written the same way in a recipe and in IR text.
pub use crate::ir::text::lex::{quote, unescape};
