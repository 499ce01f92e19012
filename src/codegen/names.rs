//! Safe C identifiers and comments derived from model-supplied strings.
//!
//! Data names and labels come from ONNX files, which are untrusted: a tensor named
//! `x; system("rm -rf /")` must not inject code. Every identifier is rebuilt from scratch out of
//! `[A-Za-z0-9_]` behind a fixed prefix per kind (`d_` data, `p_` map parameters, `c_` tasklet
//! connectors; generated helpers use `dm_`), so model names can collide neither with C keywords
//! nor with each other nor with the generated scaffolding.

use std::collections::BTreeSet;

/// Longest model-derived part kept in an identifier; long names only hurt readability.
const MAX_BODY: usize = 40;

/// A set of identifiers already handed out in one C namespace.
#[derive(Default, Debug)]
pub(crate) struct Names {
    used: BTreeSet<String>,
}

impl Names {
    /// A fresh identifier `prefix` + sanitized `raw`, made unique by a numeric suffix.
    pub(crate) fn fresh(&mut self, prefix: &str, raw: &str) -> String {
        let base = format!("{prefix}{}", sanitize(raw));
        let name = if self.used.contains(&base) {
            (2..)
                .map(|k| format!("{base}_{k}"))
                .find(|n| !self.used.contains(n))
                .expect("unbounded suffixes")
        } else {
            base
        };
        self.used.insert(name.clone());
        name
    }
}

/// The identifier-safe body of a model name: ASCII letters, digits and single underscores, at
/// most [`MAX_BODY`] characters, never empty.
fn sanitize(raw: &str) -> String {
    let mut out = String::new();
    for c in raw.chars() {
        let c = if c.is_ascii_alphanumeric() { c } else { '_' };
        if !(c == '_' && out.ends_with('_')) {
            out.push(c);
        }
        if out.len() >= MAX_BODY {
            break;
        }
    }
    let trimmed = out.trim_matches('_');
    if trimmed.is_empty() {
        "x".to_string()
    } else {
        trimmed.to_string()
    }
}

/// Text safe inside a `/* … */` comment: no `*/`, no newlines, no control or non-ASCII
/// characters (anything else becomes `_`), bounded length.
pub(crate) fn comment_text(raw: &str) -> String {
    raw.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, ' ' | '_' | '-' | '.' | ':') {
                c
            } else {
                '_'
            }
        })
        .take(MAX_BODY)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hostile_names_become_plain_identifiers() {
        let mut n = Names::default();
        assert_eq!(n.fresh("d_", "x; system(\"rm -rf /\")"), "d_x_system_rm_rf");
        assert_eq!(n.fresh("d_", "a*/ int evil; /*"), "d_a_int_evil");
        assert_eq!(n.fresh("d_", "名前"), "d_x");
        assert_eq!(n.fresh("d_", "名"), "d_x_2");
        assert_eq!(n.fresh("d_", &"a".repeat(100)).len(), 2 + MAX_BODY);
        assert_eq!(comment_text("a*/ b\n/*"), "a__ b___");
    }
}
