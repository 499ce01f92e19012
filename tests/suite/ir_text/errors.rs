//! Malformed inputs: each error names what is wrong and points at the offending bytes.

use super::s;
use dmove::ir::text::{parse, ErrorKind, ParseError};
use dmove::ir::{BinOp, SymExpr, TExpr};
use std::collections::BTreeMap;

/// Parses `src`, expecting an error whose span covers exactly `at` (its first occurrence
/// after `after`).
fn error_at(src: &str, after: &str, at: &str) -> ParseError {
    let err = match parse(src) {
        Ok(_) => panic!("expected an error in:\n{src}"),
        Err(e) => e,
    };
    let start = src.find(after).expect("anchor")
        + src[src.find(after).expect("anchor")..]
            .find(at)
            .expect("text");
    assert_eq!(
        err.byte_range(),
        start..start + at.len(),
        "{:?}",
        miette::Report::new(err)
    );
    err
}

const HEAD: &str = "program \"p\"\ndata X: f32[4] input\ndata Y: f32[4] output\n";

#[test]
fn edge_to_a_missing_node_points_at_its_id() {
    let src = format!("{HEAD}graph {{\n  n0 access X\n  n0 -> n99 X[0:4]\n}}\n");
    let e = error_at(&src, "->", "n99");
    assert_eq!(e.kind, ErrorKind::UnknownNode("n99".into()));
    assert_eq!(e.to_string(), "edge refers to `n99`, which is not declared");
    let mut rendered = String::new();
    let handler =
        miette::GraphicalReportHandler::new_themed(miette::GraphicalTheme::unicode_nocolor());
    handler.render_report(&mut rendered, &e).expect("renders");
    assert!(
        rendered.contains("n0 -> n99 X[0:4]") && rendered.contains("no node with this id"),
        "{rendered}"
    );
}

#[test]
fn command_line_expressions_parse() {
    let e: SymExpr = "4*k".parse().expect("parses");
    assert_eq!(e, SymExpr::Mul(vec![SymExpr::Int(4), s("k")]));
    assert_eq!(e.eval(&BTreeMap::from([("k".to_string(), 3)])), Ok(12));
    let t: TExpr = "max(a, 0.0) * 2.0".parse().expect("parses");
    assert_eq!(
        t,
        TExpr::binary(
            BinOp::Mul,
            TExpr::binary(BinOp::Max, TExpr::input("a"), TExpr::Const(0.0)),
            TExpr::Const(2.0)
        )
    );
    let err = "4*".parse::<SymExpr>().expect_err("incomplete");
    assert_eq!(err.byte_range(), 2..2);
}

#[test]
fn missing_bracket_points_where_it_was_expected() {
    let src = "program \"p\"\ndata X: f32[1, N input\ngraph {}\n";
    let e = error_at(src, "N ", "i");
    match &e.kind {
        ErrorKind::Syntax { expected } => assert!(
            expected.contains("`]`") && expected.contains("`,`"),
            "{expected}"
        ),
        other => panic!("{other:?}"),
    }
}

#[test]
fn unknown_dtype_schedule_and_wcr_are_named() {
    let e = error_at(
        "program \"p\"\ndata X: f128[4] input\ngraph {}",
        "X:",
        "f128",
    );
    assert_eq!(
        e.kind,
        ErrorKind::Unknown {
            what: "dtype",
            name: "f128".into(),
            expected: "f32, f64, i64, i32, bool, i8, u8, i16, u16, u32, u64, f16, bf16, \
                       f8e4m3fn, f8e4m3fnuz, f8e5m2, f8e5m2fnuz, i4, u4"
                .into()
        }
    );
    let src = format!("{HEAD}graph {{\n  n0 map \"m\" [i = 0:4] simd {{}}\n}}");
    assert!(matches!(
        error_at(&src, "]", "simd").kind,
        ErrorKind::Unknown {
            what: "schedule",
            ..
        }
    ));
    let src =
        format!("{HEAD}graph {{\n  n0 access X\n  n1 access Y\n  n0 -> n1 X[0:4] wcr avg\n}}");
    assert!(matches!(
        error_at(&src, "wcr", "avg").kind,
        ErrorKind::Unknown { what: "wcr", .. }
    ));
}

#[test]
fn duplicate_ids_and_cross_scope_edges_are_located() {
    let src = format!("{HEAD}graph {{\n  n0 access X\n  n1 map \"m\" [i = 0:4] sequential {{\n    n0 access Y\n  }}\n}}");
    let e = error_at(&src, "sequential", "n0");
    assert!(matches!(
        e.kind,
        ErrorKind::Duplicate {
            what: "node id",
            ..
        }
    ));
    let first = src.find("n0").expect("first");
    assert_eq!(e.previous.map(|s| s.offset()), Some(first));

    let src = format!("{HEAD}graph {{\n  n0 access X\n  n1 map \"m\" [i = 0:4] sequential {{\n    n2 access Y\n  }}\n  n0 -> n2 X[0:4]\n}}");
    let e = error_at(&src, "n0 ->", "n2");
    assert_eq!(e.kind, ErrorKind::CrossScope("n2".into()));
}

#[test]
fn malformed_values_are_located() {
    let e = error_at(
        &format!("{HEAD}const X: f32[3] = [1.0, 2.0]\ngraph {{}}"),
        "=",
        "[1.0, 2.0]",
    );
    assert!(matches!(
        e.kind,
        ErrorKind::Invalid {
            what: "constant",
            ..
        }
    ));
    let e = error_at(
        &format!("{HEAD}const X: i64[2] = [1, 2.5]\ngraph {{}}"),
        "=",
        "2.5",
    );
    assert!(matches!(
        e.kind,
        ErrorKind::Invalid {
            what: "i64 value",
            ..
        }
    ));
    let src = format!("{HEAD}graph {{\n  n0 library \"l\" Op {{ a = [1, 2.0] }}\n}}");
    assert!(matches!(
        error_at(&src, "Op", "2.0").kind,
        ErrorKind::Invalid {
            what: "list element",
            ..
        }
    ));
    let e = error_at("program \"bad \\q escape\"\ngraph {}", "bad", "\\q");
    assert!(matches!(
        e.kind,
        ErrorKind::Invalid {
            what: "string escape",
            ..
        }
    ));
    for id in ["n99999999999", "n4294967295"] {
        let e = error_at(&format!("{HEAD}graph {{\n  {id} access X\n}}"), "{", id);
        assert!(matches!(
            e.kind,
            ErrorKind::Invalid {
                what: "node id",
                ..
            }
        ));
    }
}
