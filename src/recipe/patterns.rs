//! A recipe's `pattern` declaration turned into a matchable [`Pattern`].
//!
//! Every capture becomes a node of a [`PatternBuilder`] with predicates for its kind and
//! properties, every edge chain becomes edges, every `where` clause a constraint. Problems are
//! collected (not just the first) and reported at the span of the capture, property, edge or
//! constraint they are about, which is why names are checked here before the builder sees them
//! (the builder reports only its first error, and without spans).
//!
//! **Input sugar.** `add = op Add(mm, _)` says "an input of `add` reads what `mm` writes". The
//! IR connects them through an access node, so each named input adds a hidden access capture
//! (named `mm→add#0`, which no identifier can spell) and the flow `mm → hidden → add`. The
//! builder has no predicate for connector positions, so positions are *not* checked: `_` only
//! pads the list, and `op Add(_, mm)` matches the same nodes as `op Add(mm)`. The hidden
//! captures come after the declared ones, so a match's first nodes are the declared captures in
//! declaration order.

use super::ast::{self, BinaryOp, CaptureKind, Expr, ExprKind};
use super::diag::{Diagnostic, Span};
use super::resolve::{suggest, UNKNOWN_NAME};
use crate::ir::{Attr, DType, DataKind, Schedule};
use crate::pattern::{
    self, Cmp, Measure, MeasureKind, NodeClass, Operand, Pattern, PatternBuilder, PatternError,
    Pred,
};

const BAD: &str = "dmove::recipe::bad_argument";
const DUPLICATE: &str = "dmove::recipe::duplicate";

/// Builds the pattern `decl` declares, or every problem with it.
pub fn build(decl: &ast::PatternDecl) -> Result<Pattern, Vec<Diagnostic>> {
    let mut errors = Vec::new();
    let mut b = PatternBuilder::new(decl.name.name.clone());
    if decl.captures.is_empty() {
        errors.push(
            Diagnostic::error(
                BAD,
                decl.name.span,
                format!("pattern `{}` has no captures", decl.name.name),
            )
            .label("an empty pattern")
            .note("a pattern is a connected set of captures such as `mm = op MatMul`"),
        );
    }
    for (i, c) in decl.captures.iter().enumerate() {
        if let Some(first) = decl.captures[..i]
            .iter()
            .find(|d| d.name.name == c.name.name)
        {
            errors.push(
                Diagnostic::error(
                    DUPLICATE,
                    c.name.span,
                    format!("capture `{}` is declared twice", c.name.name),
                )
                .label("declared again here")
                .also(first.name.span, "first declared here")
                .note("a match binds each capture name to one node"),
            );
            continue;
        }
        match preds(c) {
            Ok(preds) => b = b.node(&c.name.name, preds),
            Err(mut e) => {
                errors.append(&mut e);
                b = b.node(&c.name.name, []);
            }
        }
    }
    let names: Vec<String> = decl.captures.iter().map(|c| c.name.name.clone()).collect();
    let known = |id: &ast::Ident, errors: &mut Vec<Diagnostic>| {
        let ok = names.contains(&id.name);
        if !ok {
            errors.push(unbound(decl, id, &names));
        }
        ok
    };
    for c in &decl.captures {
        for (pos, input) in c.inputs.iter().flatten().enumerate() {
            let Some(from) = input else { continue };
            if known(from, &mut errors) {
                let hidden = format!("{}→{}#{pos}", from.name, c.name.name);
                b = b.node(&hidden, [Pred::Kind(NodeClass::Access)]).flow(
                    &from.name,
                    &hidden,
                    &c.name.name,
                );
            }
        }
    }
    for chain in &decl.edges {
        // Every unknown name is reported, so no short-circuiting `all`.
        let unknown = chain
            .nodes
            .iter()
            .filter(|n| !known(n, &mut errors))
            .count();
        let ok = unknown == 0;
        if ok {
            for pair in chain.nodes.windows(2) {
                b = b.edge(&pair[0].name, &pair[1].name);
            }
        }
    }
    for e in &decl.constraints {
        match constraint(e) {
            Ok(c) => {
                let ok = c.1.iter().filter(|id| !known(id, &mut errors)).count() == 0;
                if ok {
                    b = b.require(c.0);
                }
            }
            Err(d) => errors.push(*d),
        }
    }
    if !errors.is_empty() {
        return Err(errors);
    }
    b.finish().map_err(|e| vec![from_builder(decl, e)])
}

/// The predicates of one capture: its kind, operator and properties.
fn preds(c: &ast::CaptureDecl) -> Result<Vec<Pred>, Vec<Diagnostic>> {
    let mut preds = match c.kind {
        CaptureKind::Op => vec![Pred::Kind(NodeClass::Library)],
        CaptureKind::Map => vec![Pred::Kind(NodeClass::Map)],
        CaptureKind::Tasklet => vec![Pred::Kind(NodeClass::Tasklet)],
        CaptureKind::Data => vec![Pred::Kind(NodeClass::Access)],
        CaptureKind::Node => Vec::new(),
    };
    if let Some(op) = &c.operator {
        preds.push(Pred::op(op.name.clone()));
    }
    let mut errors = Vec::new();
    for (i, prop) in c.props.iter().enumerate() {
        if let Some(first) = c.props[..i].iter().find(|q| q.key.name == prop.key.name) {
            errors.push(
                Diagnostic::error(
                    DUPLICATE,
                    prop.key.span,
                    format!("property `{}` is given twice", prop.key.name),
                )
                .label("given again here")
                .also(first.key.span, "first given here"),
            );
            continue;
        }
        match property(c.kind, prop) {
            Ok(mut p) => preds.append(&mut p),
            Err(d) => errors.push(*d),
        }
    }
    if let Some(d) = rank_conflict(c, &preds) {
        errors.push(d);
    }
    if c.inputs.is_some() && c.kind == CaptureKind::Data {
        errors.push(
            Diagnostic::error(BAD, c.span, "a data capture has no inputs to list")
                .label("inputs of an access node")
                .note("input sugar `op Add(mm)` is for operators, maps, tasklets and nodes; connect data with an edge `mm -> t`"),
        );
    }
    if errors.is_empty() {
        Ok(preds)
    } else {
        Err(errors)
    }
}

/// Keys accepted by each capture kind, for messages.
fn keys(kind: CaptureKind) -> &'static str {
    match kind {
        CaptureKind::Op => "any attribute of the operator, e.g. `op Conv[group = 1]`",
        CaptureKind::Map => "params, schedule",
        CaptureKind::Data => "name, dtype, rank, shape, kind",
        CaptureKind::Tasklet | CaptureKind::Node => "none",
    }
}

/// The predicates of one `key = value` property.
fn property(kind: CaptureKind, prop: &ast::Prop) -> Result<Vec<Pred>, Box<Diagnostic>> {
    let key = prop.key.name.as_str();
    let v = &prop.value;
    let one = |p: Pred| Ok(vec![p]);
    match (kind, key) {
        (CaptureKind::Op, _) => one(Pred::attr(key, attr(prop)?)),
        (CaptureKind::Map, "params") => one(Pred::Params(count(prop)?)),
        (CaptureKind::Map, "schedule") => {
            let names = ["sequential", "parallel", "vector", "unrolled"];
            one(Pred::Schedule(word(prop, &names, Schedule::from_name)?))
        }
        (CaptureKind::Data, "name") => match &v.kind {
            ExprKind::Str(s) => one(Pred::data(s.clone())),
            _ => Err(bad_value(
                prop,
                "a string, the container's name: `name = \"x\"`",
            )),
        },
        (CaptureKind::Data, "dtype") => {
            let names: Vec<&str> = DType::ALL.iter().map(|d| d.name()).collect();
            one(Pred::DType(word(prop, &names, DType::from_name)?))
        }
        (CaptureKind::Data, "rank") => one(Pred::Rank(count(prop)?)),
        (CaptureKind::Data, "shape") => shape(prop),
        (CaptureKind::Data, "kind") => {
            let names = ["input", "output", "transient", "constant"];
            one(Pred::DataKind(word(prop, &names, DataKind::from_name)?))
        }
        _ => {
            let accepted = match kind {
                CaptureKind::Map => vec!["params", "schedule"],
                CaptureKind::Data => vec!["name", "dtype", "rank", "shape", "kind"],
                _ => Vec::new(),
            };
            let d = Diagnostic::error(
                BAD,
                prop.key.span,
                format!("a {} capture has no property `{key}`", kind.keyword()),
            )
            .label("unknown property")
            .note(format!("accepted: {}", keys(kind)));
            Err(Box::new(match suggest(key, accepted) {
                Some(c) => d.help(format!("did you mean `{c}`?")),
                None => d,
            }))
        }
    }
}

fn bad_value(prop: &ast::Prop, expected: &str) -> Box<Diagnostic> {
    Box::new(
        Diagnostic::error(
            BAD,
            prop.value.span,
            format!("property `{}` expects {expected}", prop.key.name),
        )
        .label("this value"),
    )
}

/// An integer literal (`-3` included).
pub fn int(e: &Expr) -> Option<i64> {
    match &e.kind {
        ExprKind::Int(v) => Some(*v),
        ExprKind::Unary(ast::UnaryOp::Neg, inner) => int(inner).and_then(i64::checked_neg),
        _ => None,
    }
}

/// A float or integer literal.
fn number(e: &Expr) -> Option<f64> {
    match &e.kind {
        ExprKind::Float(v) => Some(*v),
        ExprKind::Unary(ast::UnaryOp::Neg, inner) => number(inner).map(|v| -v),
        _ => int(e).map(|v| v as f64),
    }
}

/// A non-negative integer literal (a count or rank).
fn count(prop: &ast::Prop) -> Result<usize, Box<Diagnostic>> {
    (int(&prop.value).and_then(|v| usize::try_from(v).ok()))
        .ok_or_else(|| bad_value(prop, "a non-negative integer"))
}

/// A bare word among `names` (a schedule, dtype or data kind).
fn word<T>(
    prop: &ast::Prop,
    names: &[&str],
    parse: fn(&str) -> Option<T>,
) -> Result<T, Box<Diagnostic>> {
    let given = match &prop.value.kind {
        ExprKind::Name(path) if path.segments.len() == 1 => Some(path.last().name.as_str()),
        _ => None,
    };
    if let Some(v) = given.and_then(parse) {
        return Ok(v);
    }
    let mut d = bad_value(prop, &format!("one of {}", names.join(", ")));
    if let Some(c) = given.and_then(|g| suggest(g, names.iter().copied())) {
        *d = d.help(format!("did you mean `{c}`?"));
    }
    Err(d)
}

/// An attribute value: an int, float or string, or a list of ints or of numbers.
fn attr(prop: &ast::Prop) -> Result<Attr, Box<Diagnostic>> {
    let v = &prop.value;
    let expected = "an integer, float, string or list of numbers";
    if let Some(i) = int(v) {
        return Ok(Attr::Int(i));
    }
    if let Some(x) = number(v) {
        return Ok(Attr::Float(x));
    }
    match &v.kind {
        ExprKind::Str(s) => Ok(Attr::Str(s.clone())),
        ExprKind::List(items) => {
            if let Some(ints) = items.iter().map(int).collect::<Option<Vec<_>>>() {
                return Ok(Attr::Ints(ints));
            }
            (items.iter().map(number).collect::<Option<Vec<_>>>())
                .map(Attr::Floats)
                .ok_or_else(|| bad_value(prop, expected))
        }
        _ => Err(bad_value(prop, expected)),
    }
}

/// `shape = [_, 64]`: the rank, and each literal extent.
fn shape(prop: &ast::Prop) -> Result<Vec<Pred>, Box<Diagnostic>> {
    let expected = "a list of extents, `_` for any: `shape = [_, 64]`";
    let ExprKind::List(items) = &prop.value.kind else {
        return Err(bad_value(prop, expected));
    };
    let mut preds = vec![Pred::Rank(items.len())];
    for (i, item) in items.iter().enumerate() {
        match (&item.kind, int(item)) {
            (ExprKind::Wildcard, _) => {}
            (_, Some(v)) => preds.push(Pred::Dim(i, v)),
            _ => return Err(bad_value(prop, expected)),
        }
    }
    Ok(preds)
}

/// `rank = 2` with `shape = [_, _, _]` can never match: say so.
fn rank_conflict(c: &ast::CaptureDecl, preds: &[Pred]) -> Option<Diagnostic> {
    let ranks: Vec<usize> = (preds.iter())
        .filter_map(|p| match p {
            Pred::Rank(r) => Some(*r),
            _ => None,
        })
        .collect();
    let conflict = ranks.windows(2).any(|w| w[0] != w[1]);
    conflict.then(|| {
        Diagnostic::error(
            BAD,
            c.span,
            format!("capture `{}` asks for two different ranks", c.name.name),
        )
        .label("rank and shape disagree")
        .note("`shape = [...]` implies the rank; no container has two")
    })
}

/// A `where` clause: the constraint and the captures it names.
fn constraint(e: &Expr) -> Result<(pattern::Constraint, Vec<&ast::Ident>), Box<Diagnostic>> {
    let wrong = || {
        Box::new(
            Diagnostic::error(BAD, e.span, "a pattern constraint compares uses(x), params(x) or rank(x) with an integer or another of them")
                .label("not a constraint the matcher can check")
                .note("e.g. `where uses(t) == 1` or `where params(a) == params(b)`"),
        )
    };
    let ExprKind::Binary(op, lhs, rhs) = &e.kind else {
        return Err(wrong());
    };
    let cmp = comparison(*op).ok_or_else(wrong)?;
    match (measure(lhs), measure(rhs)) {
        (Some((l, li)), Some((r, ri))) => Ok((l.compare(cmp, r), vec![li, ri])),
        (Some((l, li)), None) => {
            let v = int(rhs).ok_or_else(wrong)?;
            Ok((l.compare(cmp, Operand::Const(v)), vec![li]))
        }
        (None, Some((r, ri))) => {
            let v = int(lhs).ok_or_else(wrong)?;
            Ok((r.compare(flip(cmp), Operand::Const(v)), vec![ri]))
        }
        (None, None) => Err(wrong()),
    }
}

fn comparison(op: BinaryOp) -> Option<Cmp> {
    Some(match op {
        BinaryOp::Eq => Cmp::Eq,
        BinaryOp::Ne => Cmp::Ne,
        BinaryOp::Lt => Cmp::Lt,
        BinaryOp::Le => Cmp::Le,
        BinaryOp::Gt => Cmp::Gt,
        BinaryOp::Ge => Cmp::Ge,
        _ => return None,
    })
}

/// `3 < uses(x)` is `uses(x) > 3`.
fn flip(c: Cmp) -> Cmp {
    match c {
        Cmp::Lt => Cmp::Gt,
        Cmp::Le => Cmp::Ge,
        Cmp::Gt => Cmp::Lt,
        Cmp::Ge => Cmp::Le,
        same => same,
    }
}

/// `uses(x)`, `params(x)`, `rank(x)` with `x` a bare name.
fn measure(e: &Expr) -> Option<(Measure, &ast::Ident)> {
    let ExprKind::Call(call) = &e.kind else {
        return None;
    };
    let kind = match call.callee.text().as_str() {
        "uses" => MeasureKind::Uses,
        "params" => MeasureKind::Params,
        "rank" => MeasureKind::Rank,
        _ => return None,
    };
    let [arg] = call.args.as_slice() else {
        return None;
    };
    match &arg.value.kind {
        ExprKind::Name(p) if p.segments.len() == 1 && arg.name.is_none() => {
            let id = p.last();
            let m = match kind {
                MeasureKind::Uses => pattern::uses(&id.name),
                MeasureKind::Params => pattern::params(&id.name),
                MeasureKind::Rank => pattern::rank(&id.name),
            };
            Some((m, id))
        }
        _ => None,
    }
}

/// `unknown_name` for a capture the pattern does not declare.
fn unbound(decl: &ast::PatternDecl, id: &ast::Ident, names: &[String]) -> Diagnostic {
    let d = Diagnostic::error(
        UNKNOWN_NAME,
        id.span,
        format!("pattern `{}` has no capture `{}`", decl.name.name, id.name),
    )
    .label("not a capture of this pattern")
    .note(format!("its captures: {}", names.join(", ")));
    match suggest(&id.name, names.iter().map(String::as_str)) {
        Some(c) => d.help(format!("did you mean `{c}`?")),
        None => d.help(format!("declare it: `{} = node`", id.name)),
    }
}

/// A builder error (after the checks above, only a disconnected capture) at its capture.
fn from_builder(decl: &ast::PatternDecl, e: PatternError) -> Diagnostic {
    let capture = match &e {
        PatternError::Disconnected { capture, .. }
        | PatternError::DuplicateCapture { capture, .. }
        | PatternError::UnboundCapture { capture, .. } => Some(capture.as_str()),
        PatternError::Unknown { .. } | PatternError::Empty { .. } => None,
    };
    let span: Span = (capture.and_then(|c| decl.captures.iter().find(|d| d.name.name == c)))
        .map_or(decl.name.span, |c| c.name.span);
    let d = Diagnostic::error(BAD, span, e.to_string()).label("this capture");
    match e {
        PatternError::Disconnected { .. } => d
            .note("a pattern matches one connected piece of a scope, found from its first capture")
            .help("add an edge (`a -> b`) or an input (`op Add(a)`) that reaches it"),
        _ => d,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::recipe::ast::Item;
    use crate::recipe::diag::FileId;

    /// The first pattern of `body` wrapped in a file.
    fn decl(body: &str) -> ast::PatternDecl {
        let src = format!("pattern p {{\n{body}\n}}\n");
        let file = crate::recipe::parse(FileId(0), &src).expect("parses");
        match file.items.into_iter().next() {
            Some(Item::Pattern(p)) => p,
            _ => panic!("a pattern"),
        }
    }

    #[test]
    fn captures_edges_and_constraints_build_a_pattern() {
        let p = build(&decl("mm = op MatMul\nt = data[kind = transient, shape = [_, 64]]\nadd = op Add[alpha = 1.5]\nmm -> t -> add\nwhere uses(t) == 1 and 3 > rank(t)")).expect("builds");
        assert_eq!(p.captures(), ["mm", "t", "add"]);
        let t = p.capture_preds("t").expect("t");
        assert!(t.contains(&Pred::Rank(2)) && t.contains(&Pred::Dim(1, 64)));
        assert!(!t.iter().any(|q| matches!(q, Pred::Dim(0, _))));
        assert!(p
            .capture_preds("add")
            .expect("add")
            .contains(&Pred::attr("alpha", Attr::Float(1.5))));
        let shown = p.to_string();
        assert!(shown.contains("require uses(t) == 1"), "{shown}");
        assert!(shown.contains("require rank(t) < 3"), "{shown}");
    }

    #[test]
    fn input_sugar_adds_hidden_access_captures() {
        let p = build(&decl("mm = op MatMul\nadd = op Add(_, mm)")).expect("builds");
        assert_eq!(p.captures(), ["mm", "add", "mm→add#1"]);
        assert_eq!(
            p.capture_preds("mm→add#1"),
            Some(&[Pred::Kind(NodeClass::Access)][..])
        );
    }

    #[test]
    fn map_properties_become_predicates() {
        let p = build(&decl("m = map[params = 2, schedule = parallel]")).expect("builds");
        let preds = p.capture_preds("m").expect("m");
        assert!(
            preds.contains(&Pred::Params(2)) && preds.contains(&Pred::Schedule(Schedule::Parallel))
        );
    }

    #[test]
    fn every_problem_is_reported_at_its_span() {
        let errors = build(&decl(
            "a = map[schedule = paralel, size = 2]\nb = tasklet[x = 1]\na -> c\nwhere uses(a)",
        ))
        .expect_err("fails");
        let messages: Vec<&str> = errors.iter().map(|d| d.message.as_str()).collect();
        assert_eq!(
            messages,
            [
                "property `schedule` expects one of sequential, parallel, vector, unrolled",
                "a map capture has no property `size`",
                "a tasklet capture has no property `x`",
                "pattern `p` has no capture `c`",
                "a pattern constraint compares uses(x), params(x) or rank(x) with an integer or another of them",
            ]
        );
        assert_eq!(errors[0].help.as_deref(), Some("did you mean `parallel`?"));
    }

    #[test]
    fn rank_and_shape_must_agree() {
        let errors = build(&decl("t = data[rank = 3, shape = [1, 2]]")).expect_err("fails");
        assert_eq!(
            errors[0].message,
            "capture `t` asks for two different ranks"
        );
    }
}
