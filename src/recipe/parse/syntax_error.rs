//! Pest's "expected …" errors in the reader's words: the headline names the construct that was
//! expected ("expected a statement"), the label keeps pest's full list of what would have been
//! accepted, as tokens ("expected one of `apply`, `let`, …").

use super::{Rule, SYNTAX};
use crate::recipe::diag::{Diagnostic, FileId, Span};
use pest::error::{Error, ErrorVariant, InputLocation};
use std::collections::BTreeSet;

/// The syntax error at the position pest gave up.
pub fn from_pest(file: FileId, text: &str, e: &Error<Rule>) -> Diagnostic {
    let (start, end) = match e.location {
        InputLocation::Pos(p) => {
            // The character that could not be consumed (nothing at the end of the input).
            let len = text
                .get(p..)
                .and_then(|s| s.chars().next())
                .map_or(0, char::len_utf8);
            (p, p + len)
        }
        InputLocation::Span(s) => s,
    };
    // At the end of the input, point just after the last code: a span past the last line
    // would not be shown.
    let (start, end) = if start >= text.len() {
        let at = super::lex::code_end(text, 0, text.len());
        (at, at)
    } else {
        (start, end)
    };
    let here = e.parse_attempts().map(|a| a.max_position) == Some(span_start(e));
    let span = Span::new(file, start, end);
    let (positives, negatives) = match &e.variant {
        ErrorVariant::ParsingError {
            positives,
            negatives,
        } => (positives.as_slice(), negatives.as_slice()),
        ErrorVariant::CustomError { message } => {
            return Diagnostic::error(SYNTAX, span, message.clone())
        }
    };
    let mut phrases = headline(positives);
    // A closing bracket that would have ended the construct is worth the headline too.
    if here {
        let closing = (e
            .parse_attempts()
            .map(|a| a.expected_tokens())
            .unwrap_or_default())
        .into_iter()
        .map(|t| t.to_string())
        .filter(|t| ["}", ")", "]"].contains(&t.as_str()));
        phrases.extend(closing.map(|t| format!("`{t}`")));
    }
    let found = match text.get(start..end) {
        Some("") | None => "the end of the file".to_string(),
        Some("\n") => "the end of the line".to_string(),
        Some(s) => format!("`{}`", s.escape_debug()),
    };
    let message = if phrases.is_empty() && !negatives.is_empty() {
        format!("unexpected {}", describe_all(negatives).join(" or "))
    } else if phrases.is_empty() {
        format!("unexpected {found}")
    } else {
        format!("expected {}", join_or(&phrases))
    };
    let tokens = tokens(e, positives, here);
    let label = match tokens.len() {
        0 => format!("found {found}"),
        1 => format!("expected {}", tokens[0]),
        _ => format!("expected one of {}", tokens.join(", ")),
    };
    Diagnostic::error(SYNTAX, span, message).label(label)
}

/// Where pest says the error is.
fn span_start(e: &Error<Rule>) -> usize {
    match e.location {
        InputLocation::Pos(p) => p,
        InputLocation::Span((s, _)) => s,
    }
}

/// The constructs pest expected, most telling first, without repeats.
fn headline(positives: &[Rule]) -> Vec<String> {
    let mut seen = BTreeSet::new();
    let mut ranked: Vec<(u8, String)> = (positives.iter())
        .map(|r| (rank(*r), describe(*r)))
        .filter(|(_, d)| seen.insert(d.clone()))
        .collect();
    ranked.sort_by_key(|(r, _)| *r);
    ranked.into_iter().map(|(_, d)| d).take(4).collect()
}

/// Concepts before tokens, so "expected a statement or `}`" reads in that order.
fn rank(rule: Rule) -> u8 {
    if keyword(rule).is_some() {
        2
    } else {
        1
    }
}

fn describe_all(rules: &[Rule]) -> Vec<String> {
    rules.iter().map(|r| describe(*r)).collect()
}

/// `a`, `a or b`, `a, b or c`.
fn join_or(words: &[String]) -> String {
    match words {
        [] => String::new(),
        [one] => one.clone(),
        [init @ .., last] => format!("{} or {last}", init.join(", ")),
    }
}

/// What would have been accepted, as tokens and token classes, sorted. Pest's literal tokens are
/// used when they were tried where the error is (they can be further on, after a name that
/// might have been a call); constructs are spelled out by their first tokens.
fn tokens(e: &Error<Rule>, positives: &[Rule], here: bool) -> Vec<String> {
    let mut words = BTreeSet::new();
    if let Some(attempts) = e.parse_attempts().filter(|_| here) {
        for t in attempts.expected_tokens().iter().map(ToString::to_string) {
            // Character ranges (`a..z`, `0..9`), `_` and `"` are parts of names, numbers and
            // strings, which the rules' classes name.
            let range = t.chars().count() == 4 && t.chars().skip(1).take(2).all(|c| c == '.');
            let part = ["BUILTIN_RULE", "#", "_", "\""].contains(&t.as_str());
            if !range && !part && !t.trim().is_empty() {
                words.insert(format!("`{t}`"));
            }
        }
    }
    for r in positives {
        if let Some(first) = first_tokens(*r) {
            words.extend(first.iter().map(|t| t.to_string()));
        } else if let Some(class) = class(*r) {
            words.insert(class.to_string());
        } else if let Some(kw) = keyword(*r) {
            words.insert(format!("`{kw}`"));
        }
    }
    words.into_iter().collect()
}

/// How the constructs whose names make the headline can begin.
fn first_tokens(rule: Rule) -> Option<&'static [&'static str]> {
    use Rule::*;
    Some(match rule {
        stmt => &[
            "`apply`",
            "`expect`",
            "`first`",
            "`for`",
            "`if`",
            "`let`",
            "`note`",
            "`print`",
            "`repeat`",
            "`try`",
            "`unsafe`",
            "a transformation or rule call",
        ],
        expr | or_expr | and_expr | cmp_expr | sum_expr | term_expr | unary_expr | postfix_expr => {
            &[
                "a name", "a number", "a string", "`true`", "`false`", "`[`", "`(`", "`-`", "`not`",
            ]
        }
        _ => return None,
    })
}

/// Keyword-like rules: their spelling is the description.
fn keyword(rule: Rule) -> Option<&'static str> {
    use Rule::*;
    Some(match rule {
        by_fixed => "fixed",
        by_dmd => "dmd",
        by_estimate => "estimate",
        mode_everywhere => "everywhere",
        mode_once => "once",
        ty_int => "int",
        ty_float => "float",
        ty_bool => "bool",
        kind_op => "op",
        kind_map => "map",
        kind_tasklet => "tasklet",
        kind_data => "data",
        kind_node => "node",
        op_not => "not",
        op_neg => "-",
        op_or => "or",
        op_and => "and",
        assign => "=",
        boolean => "true",
        wildcard => "_",
        _ => return keyword_rule(rule),
    })
}

/// `kw_let` → `let`: every `kw_*` rule is its word (and is skipped by the tree builder).
pub(super) fn keyword_rule(rule: Rule) -> Option<&'static str> {
    use Rule::*;
    Some(match rule {
        kw_recipe => "recipe",
        kw_version => "version",
        kw_requires => "requires",
        kw_dmove => "dmove",
        kw_use => "use",
        kw_as => "as",
        kw_param => "param",
        kw_in => "in",
        kw_pow2 => "pow2",
        kw_where => "where",
        kw_enum => "enum",
        kw_choose => "choose",
        kw_by => "by",
        kw_bench => "bench",
        kw_reps => "reps",
        kw_pattern => "pattern",
        kw_rule => "rule",
        kw_main => "main",
        kw_apply => "apply",
        kw_at => "at",
        kw_for => "for",
        kw_each => "each",
        kw_try => "try",
        kw_first => "first",
        kw_or => "or",
        kw_repeat => "repeat",
        kw_max => "max",
        kw_until => "until",
        kw_fixpoint => "fixpoint",
        kw_if => "if",
        kw_else => "else",
        kw_let => "let",
        kw_expect => "expect",
        kw_unsafe => "unsafe",
        kw_because => "because",
        kw_print => "print",
        kw_note => "note",
        _ => return None,
    })
}

/// Token classes: rules that stand for an open set of spellings.
fn class(rule: Rule) -> Option<&'static str> {
    use Rule::*;
    Some(match rule {
        EOI => "end of file",
        ident | word | arg_name => "a name",
        path => "a name or path",
        callee => "a transformation or rule name",
        string | string_body => "a string",
        int => "an integer",
        float => "a number",
        op_cmp => "a comparison",
        op_sum => "`+` or `-`",
        op_term => "`*`, `/` or `%`",
        _ => return None,
    })
}

/// What a rule stands for, as the object of "expected".
fn describe(rule: Rule) -> String {
    use Rule::*;
    if let Some(c) = class(rule) {
        return c.to_string();
    }
    if let Some(k) = keyword(rule) {
        return format!("`{k}`");
    }
    let s = match rule {
        header => "a `recipe \"NAME\" version \"X.Y.Z\"` header",
        requires => "`requires dmove \"RANGE\"`",
        file => "an item",
        use_item | use_std | use_file => "`use`",
        param_item => "`param`",
        choose_item => "`choose`",
        pattern_item => "`pattern`",
        rule_item => "`rule`",
        main_item => "`main`",
        ty_enum => "a parameter type (`int`, `float`, `bool` or `enum(…)`)",
        domain_pow2 | domain_range | domain_list => "a domain",
        param_default => "a default `= …`",
        param_where => "a constraint `where …`",
        by_bench => "`bench`",
        capture => "a capture `NAME = KIND …`",
        operator => "an operator name",
        props => "properties `[…]`",
        prop => "a property `NAME = VALUE`",
        inputs => "inputs `(…)`",
        input => "an input capture or `_`",
        edge_chain => "an edge `a -> b`",
        pattern_where => "a constraint `where …`",
        rule_param => "a parameter `NAME: TYPE`",
        block => "`{`",
        stmt => "a statement",
        call => "a transformation or rule call",
        apply_stmt => "`apply`",
        mode_at => "`at`",
        for_stmt => "`for each`",
        try_stmt => "`try`",
        first_stmt => "`first`",
        repeat_stmt => "`repeat`",
        if_stmt => "`if`",
        else_if | else_block => "`else`",
        let_stmt => "`let`",
        expect_stmt => "`expect`",
        unsafe_stmt => "`unsafe`",
        print_stmt => "`print`",
        note_stmt => "`note`",
        arg => "an argument",
        expr | or_expr | and_expr | cmp_expr | sum_expr | term_expr | unary_expr | postfix_expr
        | paren | list => "an expression",
        field => "a field `.name`",
        index => "an index `[…]`",
        call_args => "arguments `(…)`",
        other => return format!("{other:?}").replace('_', " "),
    };
    s.to_string()
}
