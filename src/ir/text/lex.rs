//! The lexical layer shared by printer and parser: when a name may be printed bare, how strings
//! are quoted, and how quoted strings are read back.
//!
//! Names come from model files and may be anything (`a/b:0`, `x; rm -rf /`, unicode, empty), so
//! the printer quotes whatever the grammar's `ident` rule would not read back as the same name.

/// Words with a meaning somewhere in the grammar. A name spelled like one is quoted so a reader
/// never has to know which positions accept which keyword.
const KEYWORDS: [&str; 30] = [
    "program",
    "symbol",
    "data",
    "signature",
    "const",
    "graph",
    "access",
    "library",
    "map",
    "tasklet",
    "wcr",
    "input",
    "output",
    "transient",
    "global",
    "local",
    "register",
    "sequential",
    "parallel",
    "vector",
    "unrolled",
    "nan",
    "inf",
    "true",
    "false",
    "idx",
    "select",
    "ints",
    "floats",
    "values",
];

/// True when `s` matches `[A-Za-z_][A-Za-z0-9_.]*` (the grammar's `ident`).
pub fn is_ident(s: &str) -> bool {
    let mut chars = s.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.')
}

/// A name as printed: bare when it is a non-keyword identifier, otherwise quoted.
pub fn name(s: &str) -> String {
    if is_ident(s) && !KEYWORDS.contains(&s) {
        s.to_string()
    } else {
        quote(s)
    }
}

/// `s` as a double-quoted string literal. Control characters are escaped so every printed
/// string stays on one line.
pub fn quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c.is_control() => out.push_str(&format!("\\u{{{:x}}}", u32::from(c))),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// Why an escape sequence in a string literal is invalid, with its byte offset in the body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BadEscape {
    pub offset: usize,
    pub len: usize,
    pub why: String,
}

/// Decodes the body of a string literal (between the quotes): `\" \\ \n \r \t \0 \u{hex}`.
pub fn unescape(body: &str) -> Result<String, BadEscape> {
    let mut out = String::with_capacity(body.len());
    let mut chars = body.char_indices();
    while let Some((at, c)) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        let bad = |len: usize, why: &str| BadEscape {
            offset: at,
            len,
            why: why.to_string(),
        };
        match chars.next() {
            Some((_, '"')) => out.push('"'),
            Some((_, '\\')) => out.push('\\'),
            Some((_, 'n')) => out.push('\n'),
            Some((_, 'r')) => out.push('\r'),
            Some((_, 't')) => out.push('\t'),
            Some((_, '0')) => out.push('\0'),
            Some((_, 'u')) => {
                let rest = &body[at + 2..];
                let close = rest.find('}').filter(|_| rest.starts_with('{'));
                let Some(close) = close else {
                    return Err(bad(2, "expected `\\u{hex}`"));
                };
                let ch = u32::from_str_radix(&rest[1..close], 16)
                    .ok()
                    .and_then(char::from_u32)
                    .ok_or_else(|| bad(close + 3, "not a unicode scalar value"))?;
                out.push(ch);
                // Skip `{hex}`: `close + 1` bytes, all ASCII.
                for _ in 0..=close {
                    chars.next();
                }
            }
            Some((_, other)) => {
                return Err(bad(
                    1 + other.len_utf8(),
                    &format!("unknown escape `\\{other}`"),
                ))
            }
            None => return Err(bad(1, "dangling backslash")),
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_bare_only_when_unambiguous() {
        assert_eq!(name("X_1.w"), "X_1.w");
        assert_eq!(name("map"), "\"map\"");
        assert_eq!(name("a/b:0"), "\"a/b:0\"");
        assert_eq!(name(""), "\"\"");
        assert_eq!(name("1x"), "\"1x\"");
    }

    #[test]
    fn quoting_round_trips_hostile_strings() {
        for s in [
            "x; system(\"rm -rf /\")",
            "tab\tnl\n\\",
            "\u{7}bell",
            "héllo ✓",
            "",
        ] {
            let q = quote(s);
            assert!(!q.contains('\n'));
            assert_eq!(unescape(&q[1..q.len() - 1]).as_deref(), Ok(s));
        }
        assert_eq!(quote("a\u{1}"), "\"a\\u{1}\"");
    }

    #[test]
    fn bad_escapes_are_located() {
        let e = unescape("ab\\q").unwrap_err();
        assert_eq!((e.offset, e.len), (2, 2));
        assert!(unescape("\\u{d800}").is_err());
        assert!(unescape("\\u12").is_err());
        assert!(unescape("x\\").is_err());
    }
}
