//! The canonical layout of a recipe (`dmove fmt`): 2-space indentation, one item or statement
//! per line, blocks always opened on their own lines, single spaces around `=` and binary
//! operators, `, ` between arguments, the fewest parentheses that keep the tree. Top-level items
//! of different kinds, and every pattern, rule and `main`, are set apart by a blank line.
//!
//! Comments are kept, in order. A comment on a line of its own goes before the construct that
//! follows it, at that construct's indentation; a comment after code (`stmt  # why`) stays at
//! the end of its statement's line. Comments inside a construct the layout joins onto one line
//! (a call spread over several lines) move to their own lines before what follows them.
//!
//! `format` is idempotent, and `parse(format(x))` has the syntax of `parse(x)` ([`shape`]).

use super::ast::*;
use super::diag::Span;
use super::parse::quote;

/// The canonical text of `file`.
pub fn format(file: &File) -> String {
    let mut f = Formatter {
        out: String::new(),
        comments: &file.comments,
        next: 0,
        indent: 0,
    };
    f.file(file);
    f.out
}

/// The syntax of `file` without positions and comment placement: two files that differ only in
/// layout have the same shape. The round-trip tests and the fuzz target compare shapes.
pub fn shape(file: &File) -> String {
    let debug = format!("{file:?}");
    let mut out = String::with_capacity(debug.len());
    let mut rest = debug.as_str();
    // Every span prints as `Span { file: FileId(N), start: N, end: N }` (a derived `Debug`).
    const SPAN: &str = "Span { file: FileId(";
    while let Some(at) = rest.find(SPAN) {
        out.push_str(&rest[..at]);
        out.push_str("Span");
        rest = &rest[at..];
        rest = rest.find('}').map_or("", |close| &rest[close + 1..]);
    }
    out.push_str(rest);
    out.replace("trailing: true, ", "")
        .replace("trailing: false, ", "")
        .replace("blank_before: true, ", "")
        .replace("blank_before: false, ", "")
}

/// The formatter's laws on one input, for the fuzz target and the corpus replay: `None` when
/// `text` does not parse; otherwise `Ok` when its formatted text parses to the same [`shape`]
/// and formats to itself, and `Err` saying which law broke.
pub fn check_laws(text: &str) -> Option<Result<(), String>> {
    let file = super::parse::parse(Default::default(), text).ok()?;
    let out = format(&file);
    let again = match super::parse::parse(Default::default(), &out) {
        Ok(again) => again,
        Err(d) => {
            return Some(Err(format!(
                "the formatted text does not parse ({d}):\n{out}"
            )))
        }
    };
    if shape(&again) != shape(&file) {
        return Some(Err(format!("formatting changed the syntax:\n{out}")));
    }
    let twice = format(&again);
    if twice != out {
        return Some(Err(format!(
            "formatting is not idempotent:\n{out}\n---\n{twice}"
        )));
    }
    Some(Ok(()))
}

/// Kinds of top-level line groups, for blank lines between groups.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Group {
    Header,
    Use,
    Param,
    Choose,
    /// Patterns, rules and `main`: each is its own group.
    Own,
}

struct Formatter<'a> {
    out: String,
    comments: &'a [Comment],
    /// The first comment not yet written.
    next: usize,
    indent: usize,
}

impl Formatter<'_> {
    // ------------------------------------------------------------------ lines and comments

    fn start_line(&mut self) {
        for _ in 0..self.indent {
            self.out.push_str("  ");
        }
    }

    /// Writes every comment before byte `pos` on a line of its own.
    fn comments_before(&mut self, pos: usize) {
        while let Some(c) = self.comments.get(self.next).filter(|c| c.span.start < pos) {
            let opens_block = self.out.ends_with("{\n");
            if c.blank_before && !self.out.is_empty() && !self.out.ends_with("\n\n") && !opens_block
            {
                self.out.push('\n');
            }
            self.start_line();
            self.out.push('#');
            self.out.push_str(&c.text);
            self.out.push('\n');
            self.next += 1;
        }
    }

    /// Ends the current line, with the next comment after it if that comment followed code on
    /// its line and comes before `limit` (where the next construct starts).
    fn end_line(&mut self, limit: usize) {
        if let Some(c) =
            (self.comments.get(self.next)).filter(|c| c.trailing && c.span.start < limit)
        {
            self.out.push_str("  #");
            self.out.push_str(&c.text);
            self.next += 1;
        }
        self.out.push('\n');
    }

    /// Whether no comment remains before `pos`.
    fn no_comment_before(&self, pos: usize) -> bool {
        self.comments
            .get(self.next)
            .is_none_or(|c| c.span.start >= pos)
    }

    // ------------------------------------------------------------------ file and items

    fn file(&mut self, file: &File) {
        let starts: Vec<usize> = file.items.iter().map(|i| item_span(i).start).collect();
        let mut previous = None;
        if let Some(h) = &file.header {
            self.comments_before(h.span.start);
            self.start_line();
            self.out.push_str(&format!(
                "recipe {} version {}",
                quote(&h.name.value),
                quote(&h.version.value)
            ));
            if let Some(r) = &h.requires {
                self.end_line(r.span.start);
                self.comments_before(r.span.start);
                self.out
                    .push_str(&format!("requires dmove {}", quote(&r.value)));
            }
            self.end_line(starts.first().copied().unwrap_or(usize::MAX));
            previous = Some(Group::Header);
        }
        for (k, item) in file.items.iter().enumerate() {
            let group = group(item);
            if previous.is_some_and(|p| p != group || group == Group::Own) {
                self.out.push('\n');
            }
            previous = Some(group);
            self.comments_before(starts[k]);
            self.item(item, starts.get(k + 1).copied().unwrap_or(usize::MAX));
        }
        self.comments_before(usize::MAX);
    }

    /// One item; `next` is where the following one starts.
    fn item(&mut self, item: &Item, next: usize) {
        self.start_line();
        match item {
            Item::Use(u) => {
                let target = match &u.target {
                    UseTarget::Std(p) => p.text(),
                    UseTarget::File(s) => quote(&s.value),
                };
                self.out.push_str(&format!("use {target}"));
                if let Some(a) = &u.alias {
                    self.out.push_str(&format!(" as {}", a.name));
                }
                self.end_line(next);
            }
            Item::Param(p) => {
                let line = param(p);
                self.out.push_str(&line);
                self.end_line(next);
            }
            Item::Choose(c) => {
                let names: Vec<&str> = c.params.iter().map(|p| p.name.as_str()).collect();
                let by = match &c.by {
                    ChooseBy::Dmd(_) => "by dmd".to_string(),
                    ChooseBy::Estimate(_) => "by estimate".to_string(),
                    ChooseBy::Fixed(_) => "fixed".to_string(),
                    ChooseBy::Bench { reps: None, .. } => "by bench".to_string(),
                    ChooseBy::Bench { reps: Some(r), .. } => {
                        format!("by bench(reps = {})", expr(r))
                    }
                };
                self.out
                    .push_str(&format!("choose {} {by}", names.join(", ")));
                self.end_line(next);
            }
            Item::Pattern(p) => self.pattern(p, next),
            Item::Rule(r) => {
                let params: Vec<String> = (r.params.iter())
                    .map(|p| format!("{}: {}", p.name.name, p.ty.text()))
                    .collect();
                let head = format!("rule {}({}) ", r.name.name, params.join(", "));
                self.braced(&[(head, &r.body)], "", next);
            }
            Item::Main(r) => self.braced(&[("main ".to_string(), &r.body)], "", next),
        }
    }

    fn pattern(&mut self, p: &PatternDecl, next: usize) {
        self.out.push_str(&format!("pattern {} {{", p.name.name));
        let mut lines = pattern_lines(p);
        // Consecutive constraints share one `where` unless a comment stands between them.
        let mut k = 0;
        while k + 1 < lines.len() {
            let mergeable = matches!(
                (&lines[k], &lines[k + 1]),
                (PatLine::Where(_), PatLine::Where(_))
            );
            let (end, start) = (lines[k].end(), lines[k + 1].start());
            let quiet = (self.comments[self.next..].iter())
                .all(|c| c.span.start < end || c.span.start >= start);
            if mergeable && quiet {
                let PatLine::Where(more) = lines.remove(k + 1) else {
                    continue;
                };
                if let PatLine::Where(first) = &mut lines[k] {
                    first.extend(more);
                }
            } else {
                k += 1;
            }
        }
        let close = p.span.end.saturating_sub(1);
        self.end_line(lines.first().map_or(close, PatLine::start));
        self.indent += 1;
        for (k, line) in lines.iter().enumerate() {
            self.comments_before(line.start());
            self.start_line();
            let text = match line {
                PatLine::Capture(c) => capture(c),
                PatLine::Edge(e) => {
                    let names: Vec<&str> = e.nodes.iter().map(|n| n.name.as_str()).collect();
                    names.join(" -> ")
                }
                PatLine::Where(cs) => {
                    let parts: Vec<String> = (cs.iter())
                        .map(|c| operand(c, BinaryOp::And.precedence() + 1))
                        .collect();
                    format!("where {}", parts.join(" and "))
                }
            };
            self.out.push_str(&text);
            self.end_line(lines.get(k + 1).map_or(close, PatLine::start));
        }
        self.comments_before(close);
        self.indent -= 1;
        self.start_line();
        self.out.push('}');
        self.end_line(next);
    }

    // ------------------------------------------------------------------ statements

    /// `HEAD { … } HEAD { … } SUFFIX`, e.g. `if c {`, `} else {`, `}`; `next` is where the
    /// following construct starts. An empty block without comments prints as `{}`.
    fn braced(&mut self, parts: &[(String, &Block)], suffix: &str, next: usize) {
        for (k, (head, block)) in parts.iter().enumerate() {
            if k > 0 {
                self.out.push(' ');
            }
            self.out.push_str(head);
            let close = block.span.end.saturating_sub(1);
            if block.stmts.is_empty() && self.no_comment_before(close) {
                self.out.push_str("{}");
                continue;
            }
            self.out.push('{');
            self.end_line(block.stmts.first().map_or(close, |s| s.span().start));
            self.stmts(block, close);
            self.start_line();
            self.out.push('}');
        }
        self.out.push_str(suffix);
        self.end_line(next);
    }

    /// The statements of a block whose `}` is at `close`, one level in.
    fn stmts(&mut self, block: &Block, close: usize) {
        self.indent += 1;
        for (k, s) in block.stmts.iter().enumerate() {
            self.comments_before(s.span().start);
            let next = block.stmts.get(k + 1).map_or(close, |n| n.span().start);
            self.stmt(s, next);
        }
        self.comments_before(close);
        self.indent -= 1;
    }

    fn stmt(&mut self, s: &Stmt, next: usize) {
        self.start_line();
        let simple = match s {
            Stmt::Call(c) => call(c),
            Stmt::Apply { target, mode, .. } => {
                let mode = match mode {
                    ApplyMode::Everywhere(_) => "everywhere".to_string(),
                    ApplyMode::Once(_) => "once".to_string(),
                    ApplyMode::At(e) => format!("at {}", expr(e)),
                };
                format!("apply {} {mode}", target.text())
            }
            Stmt::Let { name, value, .. } => format!("let {} = {}", name.name, expr(value)),
            Stmt::Expect { cond, message, .. } => match message {
                Some(m) => format!("expect {}, {}", expr(cond), quote(&m.value)),
                None => format!("expect {}", expr(cond)),
            },
            Stmt::Print { args, .. } => format!("print {}", list(args)),
            Stmt::Note { text, .. } => format!("note {}", expr(text)),
            Stmt::ForEach {
                var, iter, body, ..
            } => {
                let head = format!("for each {} in {} ", var.name, expr(iter));
                return self.braced(&[(head, body)], "", next);
            }
            Stmt::Try { body, .. } => return self.braced(&[("try ".into(), body)], "", next),
            Stmt::First { alternatives, .. } => {
                let parts: Vec<(String, &Block)> = (alternatives.iter().enumerate())
                    .map(|(k, b)| (if k == 0 { "first " } else { "or " }.to_string(), b))
                    .collect();
                return self.braced(&parts, "", next);
            }
            Stmt::Repeat { max, body, .. } => {
                let head = format!("repeat (max {}) ", expr(max));
                return self.braced(&[(head, body)], " until fixpoint", next);
            }
            Stmt::If { .. } => return self.braced(&if_parts(s), "", next),
            Stmt::Unsafe {
                layers,
                reason,
                body,
                ..
            } => {
                let names: Vec<&str> = layers.iter().map(|l| l.name.as_str()).collect();
                let head = format!(
                    "unsafe({}) because {} ",
                    names.join(", "),
                    quote(&reason.value)
                );
                return self.braced(&[(head, body)], "", next);
            }
        };
        self.out.push_str(&simple);
        self.end_line(next);
    }
}

/// `if c { … } else if d { … } else { … }` as heads and blocks: an `else` block holding just
/// an `if` is written `else if`.
fn if_parts(s: &Stmt) -> Vec<(String, &Block)> {
    let mut parts = Vec::new();
    let mut current = s;
    let mut head = "if";
    while let Stmt::If {
        cond,
        then,
        otherwise,
        ..
    } = current
    {
        parts.push((format!("{head} {} ", expr(cond)), then));
        match otherwise.as_ref().map(|b| (b, b.stmts.as_slice())) {
            Some((_, [nested @ Stmt::If { .. }])) => {
                current = nested;
                head = "else if";
            }
            Some((b, _)) => {
                parts.push(("else ".to_string(), b));
                break;
            }
            None => break,
        }
    }
    parts
}

fn group(item: &Item) -> Group {
    match item {
        Item::Use(_) => Group::Use,
        Item::Param(_) => Group::Param,
        Item::Choose(_) => Group::Choose,
        Item::Pattern(_) | Item::Rule(_) | Item::Main(_) => Group::Own,
    }
}

/// Where an item is in the source (a `main` item's block starts at its `{`).
fn item_span(item: &Item) -> Span {
    match item {
        Item::Use(u) => u.span,
        Item::Param(p) => p.span,
        Item::Choose(c) => c.span,
        Item::Pattern(p) => p.span,
        Item::Rule(r) => r.span,
        Item::Main(r) => r.span,
    }
}

fn param(p: &Param) -> String {
    let ty = match &p.ty {
        ParamType::Int(_) => "int".to_string(),
        ParamType::Float(_) => "float".to_string(),
        ParamType::Bool(_) => "bool".to_string(),
        ParamType::Enum(names, _) => {
            let names: Vec<String> = names.iter().map(|n| quote(&n.value)).collect();
            format!("enum({})", names.join(", "))
        }
    };
    let mut line = format!("param {}: {ty}", p.name.name);
    match &p.domain {
        Some(Domain::List(values, _)) => line.push_str(&format!(" in [{}]", list(values))),
        Some(Domain::Range { lo, hi, .. }) => {
            line.push_str(&format!(" in {}..{}", expr(lo), expr(hi)))
        }
        Some(Domain::Pow2 { lo, hi, .. }) => {
            line.push_str(&format!(" in pow2({}..{})", expr(lo), expr(hi)))
        }
        None => {}
    }
    if let Some(d) = &p.default {
        line.push_str(&format!(" = {}", expr(d)));
    }
    if let Some(c) = &p.constraint {
        line.push_str(&format!(" where {}", expr(c)));
    }
    line
}

/// One line of a pattern body, in source order.
enum PatLine<'a> {
    Capture(&'a CaptureDecl),
    Edge(&'a EdgeChain),
    Where(Vec<&'a Expr>),
}

impl PatLine<'_> {
    fn start(&self) -> usize {
        match self {
            PatLine::Capture(c) => c.span.start,
            PatLine::Edge(e) => e.span.start,
            PatLine::Where(cs) => cs.first().map_or(0, |c| c.span.start),
        }
    }

    fn end(&self) -> usize {
        match self {
            PatLine::Capture(c) => c.span.end,
            PatLine::Edge(e) => e.span.end,
            PatLine::Where(cs) => cs.last().map_or(0, |c| c.span.end),
        }
    }
}

/// Captures, edges and constraints interleaved as written (stable for equal positions).
fn pattern_lines(p: &PatternDecl) -> Vec<PatLine<'_>> {
    let mut lines: Vec<PatLine> = (p.captures.iter().map(PatLine::Capture))
        .chain(p.edges.iter().map(PatLine::Edge))
        .chain(p.constraints.iter().map(|c| PatLine::Where(vec![c])))
        .collect();
    lines.sort_by_key(PatLine::start);
    lines
}

fn capture(c: &CaptureDecl) -> String {
    let mut s = format!("{} = {}", c.name.name, c.kind.keyword());
    if let Some(op) = &c.operator {
        s.push_str(&format!(" {}", op.name));
    }
    if !c.props.is_empty() {
        let props: Vec<String> = (c.props.iter())
            .map(|p| format!("{} = {}", p.key.name, expr(&p.value)))
            .collect();
        s.push_str(&format!("[{}]", props.join(", ")));
    }
    if let Some(inputs) = &c.inputs {
        let names: Vec<&str> = (inputs.iter())
            .map(|i| i.as_ref().map_or("_", |n| n.name.as_str()))
            .collect();
        s.push_str(&format!("({})", names.join(", ")));
    }
    s
}

// ---------------------------------------------------------------------- expressions

/// Binding strength of what an expression prints as: binary operators 1–5, prefixes 6,
/// postfixes 7, atoms 8.
fn strength(e: &Expr) -> u8 {
    match &e.kind {
        ExprKind::Binary(op, ..) => op.precedence(),
        ExprKind::Unary(..) => 6,
        ExprKind::Field(..) | ExprKind::Index(..) | ExprKind::Call(_) => 7,
        _ => 8,
    }
}

/// `e` in a position that needs at least binding strength `min`, in parentheses if weaker.
fn operand(e: &Expr, min: u8) -> String {
    if strength(e) < min {
        format!("({})", expr(e))
    } else {
        expr(e)
    }
}

/// The canonical text of an expression.
pub fn expr(e: &Expr) -> String {
    match &e.kind {
        ExprKind::Int(n) => n.to_string(),
        // `Debug` writes the shortest text that reads back exactly, always with `.` or `e`.
        ExprKind::Float(x) => format!("{x:?}"),
        ExprKind::Bool(b) => b.to_string(),
        ExprKind::Str(s) => quote(s),
        ExprKind::List(items) => format!("[{}]", list(items)),
        ExprKind::Name(p) => p.text(),
        ExprKind::Wildcard => "_".to_string(),
        ExprKind::Field(x, f) => format!("{}.{}", operand(x, 7), f.name),
        ExprKind::Index(x, i) => format!("{}[{}]", operand(x, 7), expr(i)),
        ExprKind::Call(c) => call(c),
        ExprKind::Unary(op, x) => {
            let inner = operand(x, 6);
            match op {
                // `-(3)` is not the literal `-3`: keep the parentheses before a digit.
                UnaryOp::Neg if inner.starts_with(|c: char| c.is_ascii_digit()) => {
                    format!("-({inner})")
                }
                UnaryOp::Neg => format!("-{inner}"),
                UnaryOp::Not => format!("not {inner}"),
            }
        }
        ExprKind::Binary(op, l, r) => {
            let p = op.precedence();
            // Left-associative: the right operand of the same strength needs parentheses.
            format!("{} {} {}", operand(l, p), op.symbol(), operand(r, p + 1))
        }
    }
}

fn list(items: &[Expr]) -> String {
    items.iter().map(expr).collect::<Vec<_>>().join(", ")
}

fn call(c: &Call) -> String {
    let args: Vec<String> = (c.args.iter())
        .map(|a| match &a.name {
            Some(n) => format!("{} = {}", n.name, expr(&a.value)),
            None => expr(&a.value),
        })
        .collect();
    format!("{}({})", c.callee.text(), args.join(", "))
}

#[cfg(test)]
mod tests;
