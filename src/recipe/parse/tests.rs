//! Unit tests of the parser: every construct, the spans it records, and the diagnostics of
//! what it refuses.

use super::{parse, SYNTAX};
use crate::recipe::ast::*;
use crate::recipe::diag::{Diagnostic, FileId, Span};

fn ok(src: &str) -> File {
    parse(FileId(3), src).unwrap_or_else(|d| panic!("`{src}` does not parse: {d:?}"))
}

fn err(src: &str) -> Diagnostic {
    let d = parse(FileId(0), src).expect_err(src);
    assert_eq!(d.code, SYNTAX, "{d:?}");
    d
}

/// The text a span covers.
fn at(src: &str, span: Span) -> &str {
    &src[span.start..span.end]
}

/// The statements of the only `main` of `src`.
fn main_stmts(src: &str) -> Vec<Stmt> {
    match ok(src).items.into_iter().next() {
        Some(Item::Main(r)) => r.body.stmts,
        other => panic!("no main: {other:?}"),
    }
}

fn one_stmt(stmt: &str) -> Stmt {
    let mut s = main_stmts(&format!("main {{\n  {stmt}\n}}\n"));
    assert_eq!(s.len(), 1);
    s.remove(0)
}

/// The expression of `let x = EXPR`.
fn expr_of(e: &str) -> Expr {
    match one_stmt(&format!("let x = {e}")) {
        Stmt::Let { value, .. } => value,
        other => panic!("{other:?}"),
    }
}

#[test]
fn header_and_uses() {
    let src = "recipe \"r\" version \"0.1.0\"\nrequires dmove \">=0.1, <0.3\"\nuse std::cpu\nuse std::cpu::x86 as x\nuse \"./common.recipe\" as common\n";
    let f = ok(src);
    let h = f.header.expect("header");
    assert_eq!(
        (h.name.value.as_str(), h.version.value.as_str()),
        ("r", "0.1.0")
    );
    assert_eq!(h.requires.expect("requires").value, ">=0.1, <0.3");
    assert_eq!(f.items.len(), 3);
    let Item::Use(u) = &f.items[1] else { panic!() };
    let UseTarget::Std(p) = &u.target else {
        panic!()
    };
    assert_eq!(p.text(), "std::cpu::x86");
    assert_eq!(at(src, p.segments[2].span), "x86");
    assert_eq!(u.alias.as_ref().map(|a| a.name.as_str()), Some("x"));
    assert_eq!(at(src, u.span), "use std::cpu::x86 as x");
    let Item::Use(u) = &f.items[2] else { panic!() };
    assert!(matches!(&u.target, UseTarget::File(s) if s.value == "./common.recipe"));
    assert_eq!(f.span.file, FileId(3));
}

#[test]
fn a_module_path_starts_with_std() {
    let d = err("use cpu::fuse\n");
    assert!(d.message.contains("not a standard module"), "{d:?}");
}

#[test]
fn params_with_every_domain() {
    let src = "param tile: int in pow2(8..64) = 16\nparam rows: int in [16, 32, 48] = 32\nparam unroll: int in 1..4 = 1\nparam alpha: float in [0.25, 0.5] = 0.5\nparam fuse: bool = true\nparam impl: enum(\"pure\", \"im2col\") = \"pure\"\nparam cols: int in pow2(16..256) = 64 where tile * cols <= 8192\nparam neg: int in -3..3\n";
    let f = ok(src);
    let params: Vec<&Param> = (f.items.iter())
        .map(|i| match i {
            Item::Param(p) => p,
            other => panic!("{other:?}"),
        })
        .collect();
    assert!(
        matches!(&params[0].domain, Some(Domain::Pow2 { lo, .. }) if lo.kind == ExprKind::Int(8))
    );
    let Some(Domain::List(values, span)) = &params[1].domain else {
        panic!()
    };
    assert_eq!((values.len(), at(src, *span)), (3, "[16, 32, 48]"));
    assert!(
        matches!(&params[2].domain, Some(Domain::Range { hi, .. }) if hi.kind == ExprKind::Int(4))
    );
    assert!(matches!(params[3].ty, ParamType::Float(_)));
    assert_eq!(
        params[4].default.as_ref().map(|d| &d.kind),
        Some(&ExprKind::Bool(true))
    );
    let ParamType::Enum(names, span) = &params[5].ty else {
        panic!()
    };
    assert_eq!(
        (names[1].value.as_str(), at(src, *span)),
        ("im2col", "enum(\"pure\", \"im2col\")")
    );
    let c = params[6].constraint.as_ref().expect("constraint");
    assert_eq!(at(src, c.span), "tile * cols <= 8192");
    assert_eq!(
        at(src, params[6].span),
        "param cols: int in pow2(16..256) = 64 where tile * cols <= 8192"
    );
    assert!(
        matches!(&params[7].domain, Some(Domain::Range { lo, .. }) if lo.kind == ExprKind::Int(-3))
    );
}

#[test]
fn choose_forms() {
    let src = "choose tile, cols by dmd\nchoose unroll by bench(reps = 5)\nchoose a by bench\nchoose impl fixed\nchoose b by estimate\n";
    let f = ok(src);
    let by: Vec<&ChooseBy> = (f.items.iter())
        .map(|i| match i {
            Item::Choose(c) => &c.by,
            other => panic!("{other:?}"),
        })
        .collect();
    assert!(matches!(by[0], ChooseBy::Dmd(s) if at(src, *s) == "dmd"));
    assert!(
        matches!(by[1], ChooseBy::Bench { reps: Some(r), span } if r.kind == ExprKind::Int(5) && at(src, *span) == "bench(reps = 5)")
    );
    assert!(matches!(by[2], ChooseBy::Bench { reps: None, .. }));
    assert!(matches!(by[3], ChooseBy::Fixed(s) if at(src, *s) == "fixed"));
    assert!(matches!(by[4], ChooseBy::Estimate(s) if at(src, *s) == "estimate"));
    let Item::Choose(c) = &f.items[0] else {
        panic!()
    };
    assert_eq!(
        c.params.iter().map(|p| p.name.as_str()).collect::<Vec<_>>(),
        ["tile", "cols"]
    );
}

#[test]
fn patterns_with_captures_edges_and_constraints() {
    let src = "pattern p {\n  mm = op MatMul[transB = 1](a, _)\n  m = map[params = 2, schedule = sequential]\n  t = data[kind = transient, shape = [_, 64]]\n  k = tasklet\n  n = node\n  o = op\n  mm -> t -> k\n  where uses(t) == 1 and params(m) > 1 and rank(t) == 2\n}\n";
    let f = ok(src);
    let Item::Pattern(p) = &f.items[0] else {
        panic!()
    };
    assert_eq!(p.captures.len(), 6);
    let mm = &p.captures[0];
    assert_eq!(
        (mm.kind, mm.operator.as_ref().map(|o| o.name.as_str())),
        (CaptureKind::Op, Some("MatMul"))
    );
    assert_eq!(at(src, mm.span), "mm = op MatMul[transB = 1](a, _)");
    assert_eq!(at(src, mm.props[0].span), "transB = 1");
    let inputs = mm.inputs.as_ref().expect("inputs");
    assert_eq!(
        (
            inputs[0].as_ref().map(|i| i.name.as_str()),
            inputs[1].is_none()
        ),
        (Some("a"), true)
    );
    let shape = &p.captures[2].props[1].value;
    let ExprKind::List(dims) = &shape.kind else {
        panic!()
    };
    assert_eq!(dims[0].kind, ExprKind::Wildcard);
    assert_eq!(p.captures[3].kind, CaptureKind::Tasklet);
    assert_eq!(p.captures[4].kind, CaptureKind::Node);
    assert!(p.captures[5].operator.is_none() && p.captures[5].inputs.is_none());
    assert_eq!(p.edges[0].nodes.len(), 3);
    assert_eq!(at(src, p.edges[0].span), "mm -> t -> k");
    let texts: Vec<&str> = p.constraints.iter().map(|c| at(src, c.span)).collect();
    assert_eq!(texts, ["uses(t) == 1", "params(m) > 1", "rank(t) == 2"]);
}

#[test]
fn an_operator_is_not_the_next_capture() {
    let f = ok("pattern p {\n  a = op\n  b = op Add(a)\n  a -> b\n}\n");
    let Item::Pattern(p) = &f.items[0] else {
        panic!()
    };
    assert!(p.captures[0].operator.is_none());
    assert_eq!(
        p.captures[1].operator.as_ref().map(|o| o.name.as_str()),
        Some("Add")
    );
}

#[test]
fn rules_and_their_parameters() {
    let src =
        "rule fold(m: matmul_add, n: int, o: cpu::pat) {\n  MatMulAddToGemm(m.mm, m.add)\n}\n";
    let f = ok(src);
    let Item::Rule(r) = &f.items[0] else { panic!() };
    assert_eq!(r.params.len(), 3);
    assert_eq!(at(src, r.params[2].span), "o: cpu::pat");
    assert_eq!(r.params[2].ty.text(), "cpu::pat");
    assert_eq!(at(src, r.body.span), "{\n  MatMulAddToGemm(m.mm, m.add)\n}");
    assert_eq!(at(src, r.span), src.trim_end());
}

#[test]
fn calls_with_positional_and_named_arguments() {
    let Stmt::Call(c) = one_stmt("cpu::MapTiling(m, tiles = [16, 0], in = n)") else {
        panic!()
    };
    assert_eq!(c.callee.text(), "cpu::MapTiling");
    assert_eq!(c.args.len(), 3);
    assert!(c.args[0].name.is_none());
    assert_eq!(
        c.args[1].name.as_ref().map(|n| n.name.as_str()),
        Some("tiles")
    );
    assert_eq!(c.args[2].name.as_ref().map(|n| n.name.as_str()), Some("in"));
}

#[test]
fn apply_modes() {
    let src = "main {\n  apply fold everywhere\n  apply cpu::main once\n  apply s at m.mm\n}\n";
    let s = main_stmts(src);
    assert!(
        matches!(&s[0], Stmt::Apply { mode: ApplyMode::Everywhere(sp), .. } if at(src, *sp) == "everywhere")
    );
    assert!(
        matches!(&s[1], Stmt::Apply { target, mode: ApplyMode::Once(_), .. } if target.text() == "cpu::main")
    );
    assert!(
        matches!(&s[2], Stmt::Apply { mode: ApplyMode::At(e), span, .. } if at(src, e.span) == "m.mm" && at(src, *span) == "apply s at m.mm")
    );
}

#[test]
fn compound_statements() {
    let src = "main {\n  for each m in maps(depth = 0) { schedule(m) }\n  try { X(m) }\n  first { A(m) } or { B(m) } or { C(m) }\n  repeat (max 10) { apply F once } until fixpoint\n  unsafe(legality, numerics) because \"why\" { T(m) }\n}\n";
    let s = main_stmts(src);
    assert!(
        matches!(&s[0], Stmt::ForEach { var, iter, .. } if var.name == "m" && at(src, iter.span) == "maps(depth = 0)")
    );
    assert!(
        matches!(&s[1], Stmt::Try { body, span } if body.stmts.len() == 1 && at(src, *span) == "try { X(m) }")
    );
    assert!(matches!(&s[2], Stmt::First { alternatives, .. } if alternatives.len() == 3));
    assert!(
        matches!(&s[3], Stmt::Repeat { max, span, .. } if max.kind == ExprKind::Int(10) && at(src, *span).ends_with("until fixpoint"))
    );
    let Stmt::Unsafe { layers, reason, .. } = &s[4] else {
        panic!()
    };
    assert_eq!((layers.len(), reason.value.as_str()), (2, "why"));
}

#[test]
fn else_if_nests_an_if_in_the_else_block() {
    let src = "main {\n  if a { X(m) } else if b { Y(m) } else if c { Z(m) } else { W(m) }\n}\n";
    let s = main_stmts(src);
    let Stmt::If {
        otherwise: Some(b),
        span,
        ..
    } = &s[0]
    else {
        panic!()
    };
    assert_eq!(
        at(src, *span),
        src.lines().nth(1).unwrap_or_default().trim()
    );
    let [Stmt::If {
        cond,
        otherwise: Some(b2),
        span: inner,
        ..
    }] = b.stmts.as_slice()
    else {
        panic!("{b:?}")
    };
    assert_eq!(at(src, cond.span), "b");
    assert!(at(src, *inner).starts_with("if b"));
    assert_eq!(b.span, *inner);
    let [Stmt::If {
        otherwise: Some(last),
        ..
    }] = b2.stmts.as_slice()
    else {
        panic!()
    };
    assert!(matches!(last.stmts.as_slice(), [Stmt::Call(c)] if c.callee.text() == "W"));
}

#[test]
fn simple_statements() {
    let src = "main {\n  let t = 16\n  expect len(ops()) == 0, \"lowered\"\n  expect dmd() < 0.5 * baseline.dmd\n  print \"maps:\", len(maps())\n  note \"tiles\"\n}\n";
    let s = main_stmts(src);
    assert!(
        matches!(&s[0], Stmt::Let { name, span, .. } if name.name == "t" && at(src, *span) == "let t = 16")
    );
    assert!(matches!(&s[1], Stmt::Expect { message: Some(m), .. } if m.value == "lowered"));
    assert!(matches!(&s[2], Stmt::Expect { message: None, .. }));
    assert!(matches!(&s[3], Stmt::Print { args, .. } if args.len() == 2));
    assert!(matches!(&s[4], Stmt::Note { text, .. } if text.kind == ExprKind::Str("tiles".into())));
}

#[test]
fn precedence_and_associativity() {
    let e = expr_of("a or b and c == 1 + 2 * -x.f[0]");
    let ExprKind::Binary(BinaryOp::Or, _, r) = &e.kind else {
        panic!("{e:?}")
    };
    let ExprKind::Binary(BinaryOp::And, _, r) = &r.kind else {
        panic!()
    };
    let ExprKind::Binary(BinaryOp::Eq, _, r) = &r.kind else {
        panic!()
    };
    let ExprKind::Binary(BinaryOp::Add, _, r) = &r.kind else {
        panic!()
    };
    let ExprKind::Binary(BinaryOp::Mul, _, r) = &r.kind else {
        panic!()
    };
    let ExprKind::Unary(UnaryOp::Neg, r) = &r.kind else {
        panic!()
    };
    assert!(matches!(&r.kind, ExprKind::Index(x, _) if matches!(x.kind, ExprKind::Field(..))));
    let e = expr_of("a - b - c");
    let ExprKind::Binary(BinaryOp::Sub, l, _) = &e.kind else {
        panic!()
    };
    assert!(matches!(l.kind, ExprKind::Binary(BinaryOp::Sub, ..)));
    // `not` binds tighter than comparisons.
    assert!(matches!(
        expr_of("not a == b").kind,
        ExprKind::Binary(BinaryOp::Eq, ..)
    ));
}

#[test]
fn literals() {
    assert_eq!(expr_of("-3").kind, ExprKind::Int(-3));
    assert!(matches!(
        expr_of("-(3)").kind,
        ExprKind::Unary(UnaryOp::Neg, _)
    ));
    assert_eq!(
        expr_of("-9223372036854775808").kind,
        ExprKind::Int(i64::MIN)
    );
    assert_eq!(expr_of("1e-3").kind, ExprKind::Float(1e-3));
    assert_eq!(expr_of("0.5").kind, ExprKind::Float(0.5));
    assert_eq!(expr_of("false").kind, ExprKind::Bool(false));
    assert_eq!(
        expr_of(r#""a\"b\\c\nd""#).kind,
        ExprKind::Str("a\"b\\c\nd".into())
    );
    assert!(matches!(expr_of("[]").kind, ExprKind::List(v) if v.is_empty()));
    assert!(matches!(expr_of("[1, [2, 3],]").kind, ExprKind::List(v) if v.len() == 2));
    assert_eq!(expr_of("_").kind, ExprKind::Wildcard);
}

#[test]
fn expression_spans() {
    let src = "main {\n  let x = (a + b) * f(c)[1].y  # c\n}\n";
    let Stmt::Let { value, span, .. } = &main_stmts(src)[0] else {
        panic!()
    };
    assert_eq!(at(src, *span), "let x = (a + b) * f(c)[1].y");
    assert_eq!(at(src, value.span), "(a + b) * f(c)[1].y");
    let ExprKind::Binary(_, l, r) = &value.kind else {
        panic!()
    };
    assert_eq!(at(src, l.span), "(a + b)");
    assert_eq!(at(src, r.span), "f(c)[1].y");
    let ExprKind::Field(x, f) = &r.kind else {
        panic!()
    };
    assert_eq!((at(src, x.span), at(src, f.span)), ("f(c)[1]", "y"));
    let ExprKind::Index(call, _) = &x.kind else {
        panic!()
    };
    assert!(
        matches!(&call.kind, ExprKind::Call(c) if at(src, c.span) == "f(c)" && at(src, c.args[0].span) == "c")
    );
}

#[test]
fn keywords_are_words_only_when_whole() {
    let s = main_stmts("main {\n  apply_all(m)\n  let index = max(a, b)\n  letter(m)\n  note_it(x = cpu::main)\n}\n");
    assert!(matches!(&s[0], Stmt::Call(c) if c.callee.text() == "apply_all"));
    assert!(
        matches!(&s[1], Stmt::Let { name, value, .. } if name.name == "index" && matches!(&value.kind, ExprKind::Call(c) if c.callee.text() == "max"))
    );
    assert!(matches!(&s[2], Stmt::Call(c) if c.callee.text() == "letter"));
    // A reserved word is not a name.
    err("main {\n  let apply = 1\n}\n");
    err("main {\n  let x = if\n}\n");
}

#[test]
fn statements_span_lines_inside_brackets() {
    let s = main_stmts("main {\n  MapTiling(\n    m,  # the map\n    tiles = [\n      16,\n      0,\n    ],\n  )\n  let y = a +\n    b\n}\n");
    assert_eq!(s.len(), 2);
}

#[test]
fn comments_are_collected_with_their_placement() {
    let src = "# top\nmain {  # open\n  X(m)  # \"not a string\n  let s = \"# not a comment\"\n  # own\n}\n# end";
    let f = ok(src);
    let texts: Vec<(&str, bool)> = f
        .comments
        .iter()
        .map(|c| (c.text.as_str(), c.trailing))
        .collect();
    assert_eq!(
        texts,
        [
            (" top", false),
            (" open", true),
            (" \"not a string", true),
            (" own", false),
            (" end", false)
        ]
    );
    assert_eq!(at(src, f.comments[1].span), "# open");
    assert_eq!(at(src, f.comments[4].span), "# end");
}

#[test]
fn two_statements_on_a_line_are_refused() {
    let d = err("main {\n  X(m) Y(m)\n}\n");
    assert!(d.message.contains("new line"), "{d:?}");
    assert_eq!((d.span.start, d.span.end), (14, 18));
    err("param a: int = 1 param b: int = 2\n");
    err("pattern p {\n  a = op b = op\n}\n");
}

#[test]
fn literal_errors_are_diagnostics() {
    let d = err("main {\n  let x = 9223372036854775808\n}\n");
    assert!(d.message.contains("out of range"), "{d:?}");
    let d = err("main {\n  let x = 1e400\n}\n");
    assert!(d.message.contains("float"), "{d:?}");
    let src = "main {\n  note \"a\\qb\"\n}\n";
    let d = err(src);
    assert_eq!(&src[d.span.start..d.span.end], "\\q");
    err("main {\n  note \"unterminated\n}\n");
    let d = err("main {\n  let x = (a)(b)\n}\n");
    assert!(d.message.contains("only a name"), "{d:?}");
}

#[test]
fn syntax_errors_name_what_was_expected() {
    let d = err("main {\n  apply X somewhere\n}\n");
    assert_eq!(d.message, "expected `at`, `everywhere` or `once`");
    assert!(d.label.contains("`everywhere`"), "{d:?}");
    let d = err("main {\n  apply X everywhere\n");
    assert_eq!(d.message, "expected a statement or `}`");
    let d = err("main {\n  aply X everywhere\n}\n");
    assert_eq!(d.message, "expected a statement");
    assert!(d.label.contains("`apply`"), "{d:?}");
    let d = err("main {\n  apply 3 once\n}\n");
    assert_eq!(d.message, "expected a transformation or rule name");
    let d = err("main {\n  let x =\n}\n");
    assert_eq!(d.message, "expected an expression");
    let d = err("main {\n  try X(m)\n}\n");
    assert_eq!(d.message, "expected `{`");
}

#[test]
fn deep_nesting_is_refused_not_overflowed() {
    let deep = format!(
        "main {{\n  let x = {}1{}\n}}\n",
        "(".repeat(5000),
        ")".repeat(5000)
    );
    assert!(err(&deep).message.contains("nested deeper"));
    let long = format!("main {{\n  let x = 1{}\n}}\n", " + 1".repeat(5000));
    assert!(err(&long).message.contains("nested deeper"));
    let prefixes = format!("main {{\n  let x = {}1\n}}\n", "- ".repeat(5000));
    assert!(err(&prefixes).message.contains("nested deeper"));
    let chain = format!("main {{\n  if a {{}}{}\n}}\n", " else if a {}".repeat(500));
    assert!(err(&chain).message.contains("else if"));
    // Within the limits, deep is fine.
    ok(&format!(
        "main {{\n  let x = {}1{}\n}}\n",
        "(".repeat(30),
        ")".repeat(30)
    ));
}

#[test]
fn odd_inputs_do_not_panic() {
    for src in [
        "",
        "\n",
        "#",
        "\"",
        "main {",
        "}",
        "main { \"\\",
        "é",
        "main {\n  let x = \"é\\é\"\n}",
        "\u{feff}main {}",
        "pattern p { a = op X[",
        "param x: int in pow2(",
        "recipe \"a\" version",
    ] {
        let _ = parse(FileId(0), src);
    }
    assert!(ok("").items.is_empty());
    assert_eq!(ok("# only a comment").comments.len(), 1);
}
