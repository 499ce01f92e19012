//! Script errors, with the position Rhai reports mapped to a byte span in the `.rhai` file.
//!
//! Rhai reports a line and a column (in characters); a recipe diagnostic needs a byte span, so
//! [`ScriptError::span_in`] maps one to the other on the script's own text and widens it over
//! the word there (a function or variable name reads better underlined whole). An error
//! raised inside nested script functions keeps the chain of calls, innermost first, so the
//! diagnostic can say where the failing function was called from.

use super::sandbox::TIME_UP;
use crate::recipe::diag::{Diagnostic, FileId, Span};
use rhai::{EvalAltResult, ParseError, Position};

pub const SYNTAX: &str = "dmove::script::syntax";
pub const RUNTIME: &str = "dmove::script::runtime";
pub const LIMIT: &str = "dmove::script::limit";
pub const DECLARATION: &str = "dmove::script::declaration";

/// A declaration dmove refused, raised as a script error while the top level runs so it
/// stops the load at the `transformation(…)` call.
#[derive(Clone, Debug)]
pub struct Refused(pub String);

/// Which sandbox limit a script hit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Limit {
    Operations,
    CallDepth,
    Time,
    Size,
}

impl Limit {
    fn describe(self) -> &'static str {
        match self {
            Limit::Operations => "the script exceeded its operation limit",
            Limit::CallDepth => "the script exceeded its call-depth limit (runaway recursion?)",
            Limit::Time => "the script exceeded its time limit",
            Limit::Size => "the script built a value larger than its size limit",
        }
    }
}

/// What went wrong in a script.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ErrorKind {
    Syntax,
    Runtime,
    Limit(Limit),
    /// A transformation declaration that dmove cannot accept (checked when the script loads).
    Declaration,
}

/// A script error: what happened, where (1-based line and column, when known) and the chain of
/// script functions it happened in (innermost first, with the line each was called from).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct ScriptError {
    pub kind: ErrorKind,
    pub message: String,
    pub line: Option<usize>,
    pub column: Option<usize>,
    pub calls: Vec<(String, Option<usize>)>,
}

impl ScriptError {
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> ScriptError {
        ScriptError {
            kind,
            message: message.into(),
            line: None,
            column: None,
            calls: Vec::new(),
        }
    }

    fn at(mut self, pos: Position) -> ScriptError {
        self.line = pos.line();
        self.column = pos.position();
        self
    }

    pub fn from_parse(e: &ParseError) -> ScriptError {
        ScriptError::new(ErrorKind::Syntax, e.err_type().to_string()).at(e.position())
    }

    /// The error of a failed call, with the chain of script functions unwound.
    pub fn from_eval(e: EvalAltResult) -> ScriptError {
        let mut calls = Vec::new();
        let mut e = e;
        while let EvalAltResult::ErrorInFunctionCall(name, _, inner, pos) = e {
            calls.push((name, pos.line()));
            e = *inner;
        }
        calls.reverse();
        let kind = match &e {
            EvalAltResult::ErrorParsing(..) => ErrorKind::Syntax,
            EvalAltResult::ErrorRuntime(v, _) if v.is::<Refused>() => ErrorKind::Declaration,
            EvalAltResult::ErrorTooManyOperations(_) => ErrorKind::Limit(Limit::Operations),
            EvalAltResult::ErrorStackOverflow(_) => ErrorKind::Limit(Limit::CallDepth),
            EvalAltResult::ErrorDataTooLarge(..) => ErrorKind::Limit(Limit::Size),
            EvalAltResult::ErrorTerminated(token, _) if token.to_string() == TIME_UP => {
                ErrorKind::Limit(Limit::Time)
            }
            _ => ErrorKind::Runtime,
        };
        // Rhai reports a limit hit inside a function without a position; the sandbox's
        // debugger hook saw the last step the script took.
        let pos = match e.take_position() {
            p if p.is_none() => super::sandbox::last_position(),
            p => p,
        };
        let message = match (&kind, &e) {
            (ErrorKind::Limit(l), _) => l.describe().to_string(),
            (_, EvalAltResult::ErrorRuntime(value, _)) => match value.clone().try_cast::<Refused>()
            {
                Some(Refused(message)) => message,
                None => value.to_string(),
            },
            _ => e.to_string(),
        };
        ScriptError {
            calls,
            ..ScriptError::new(kind, message).at(pos)
        }
    }

    pub fn code(&self) -> &'static str {
        match self.kind {
            ErrorKind::Syntax => SYNTAX,
            ErrorKind::Runtime => RUNTIME,
            ErrorKind::Limit(_) => LIMIT,
            ErrorKind::Declaration => DECLARATION,
        }
    }

    /// The byte span of the error's position in `text` (the whole word there), or the start of
    /// the file when Rhai gave no position.
    pub fn span_in(&self, file: FileId, text: &str) -> Span {
        let start = byte_offset(text, self.line, self.column);
        let word = text[start..]
            .char_indices()
            .find(|(_, c)| !(c.is_alphanumeric() || *c == '_'))
            .map_or(text.len() - start, |(i, _)| i);
        let len = if word > 0 {
            word
        } else {
            text[start..].chars().next().map_or(0, char::len_utf8)
        };
        Span::new(file, start, start + len)
    }

    /// The error as a recipe diagnostic on the script `file` (whose text is `text`).
    pub fn diagnostic(&self, file: FileId, text: &str) -> Diagnostic {
        let mut d = Diagnostic::error(self.code(), self.span_in(file, text), &self.message);
        d = d.label(match self.kind {
            ErrorKind::Syntax => "here",
            ErrorKind::Limit(_) => "stopped here",
            ErrorKind::Runtime | ErrorKind::Declaration => "failed here",
        });
        let mut notes: Vec<String> = (self.calls.iter())
            .map(|(name, line)| match line {
                Some(l) => format!("in the script function `{name}`, called at line {l}"),
                None => format!("in the script function `{name}`"),
            })
            .collect();
        if let ErrorKind::Limit(l) = self.kind {
            notes.push(match l {
                Limit::Time | Limit::Operations => {
                    "every call into a script runs under operation and time limits, so a runaway loop cannot hang dmove"
                }
                Limit::CallDepth => "every call into a script runs under a call-depth limit",
                Limit::Size => "strings, arrays and maps a script builds have size limits",
            }.to_string());
        }
        if !notes.is_empty() {
            d = d.note(notes.join("; "));
        }
        d
    }
}

/// The byte offset of 1-based `line` and `column` (in characters) in `text`, clamped to it.
fn byte_offset(text: &str, line: Option<usize>, column: Option<usize>) -> usize {
    let Some(line) = line else { return 0 };
    let line_start = (text.split_inclusive('\n'))
        .take(line.saturating_sub(1))
        .map(str::len)
        .sum::<usize>()
        .min(text.len());
    let column = column.unwrap_or(1).saturating_sub(1);
    text[line_start..]
        .char_indices()
        .take_while(|(_, c)| *c != '\n')
        .nth(column)
        .map_or_else(
            || {
                let rest = &text[line_start..];
                line_start + rest.find('\n').unwrap_or(rest.len())
            },
            |(i, _)| line_start + i,
        )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn positions_map_to_byte_spans_over_the_word() {
        let text = "let x = 1;\nlet été = foo(x);\n";
        let e = ScriptError {
            line: Some(2),
            column: Some(11),
            ..ScriptError::new(ErrorKind::Runtime, "no foo")
        };
        let span = e.span_in(FileId(0), text);
        assert_eq!(&text[span.start..span.end], "foo");
        let nowhere = ScriptError::new(ErrorKind::Runtime, "x");
        assert_eq!(nowhere.span_in(FileId(0), text).start, 0);
        let past_end = ScriptError {
            line: Some(9),
            column: Some(40),
            ..ScriptError::new(ErrorKind::Runtime, "x")
        };
        assert!(past_end.span_in(FileId(0), text).end <= text.len());
    }
}
