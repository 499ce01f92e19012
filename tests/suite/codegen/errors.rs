//! Errors: what cannot be emitted, compiled or run is reported, never a panic.

use super::support::{build, config, matmul, program, symbolic_scale, values};
use dmove::codegen::{emit, CodegenError, Compiled};
use dmove::ir::{DataKind, Schedule, Tensor};
use std::collections::BTreeMap;

#[test]
fn unbound_symbol_is_an_error() {
    match emit(&symbolic_scale()) {
        Err(CodegenError::UnboundSymbols(names)) => assert_eq!(names, vec!["N".to_string()]),
        other => panic!("expected an unbound-symbol error, got {other:?}"),
    }
}

#[test]
fn library_nodes_are_all_listed() {
    let mut p = program(
        "lib",
        &[
            ("X", DataKind::Input, &[2]),
            ("T", DataKind::Transient, &[2]),
            ("Y", DataKind::Output, &[2]),
        ],
    );
    let ids = p.build(|b| {
        let a = b.library("first", "Relu", BTreeMap::new(), &[Some("X")], &["T"]);
        let c = b.library("second", "Sigmoid", BTreeMap::new(), &[Some("T")], &["Y"]);
        (a, c)
    });
    let err = emit(&p).expect_err("library nodes cannot be emitted");
    match &err {
        CodegenError::NotLowered(found) => {
            let got: Vec<_> = found.iter().map(|u| (u.id, u.op.as_str())).collect();
            assert_eq!(got, vec![(ids.0, "Relu"), (ids.1, "Sigmoid")]);
        }
        other => panic!("unexpected {other:?}"),
    }
    let help = miette::Diagnostic::help(&err)
        .map(|h| h.to_string())
        .unwrap_or_default();
    assert!(help.contains("expand first"));
}

#[test]
fn run_checks_inputs() {
    let c = build(&matmul(Schedule::Sequential, Schedule::Sequential));
    let good_b = Tensor::f32(vec![7, 3], values(21, 1));
    let inputs =
        |a: Tensor| BTreeMap::from([("A".to_string(), a), ("B".to_string(), good_b.clone())]);
    match c.run(&inputs(Tensor::f32(vec![7, 5], values(35, 1)))) {
        Err(CodegenError::InputMismatch {
            name,
            expected,
            got,
        }) => {
            assert_eq!(
                (name.as_str(), expected.as_str(), got.as_str()),
                ("A", "f32[5, 7]", "f32[7, 5]")
            );
        }
        other => panic!("expected an input mismatch, got {other:?}"),
    }
    let only_b = BTreeMap::from([("B".to_string(), good_b.clone())]);
    assert!(matches!(c.run(&only_b), Err(CodegenError::MissingInput { name }) if name == "A"));
    let mut extra = inputs(Tensor::f32(vec![5, 7], values(35, 1)));
    extra.insert("Z".into(), good_b.clone());
    assert!(
        matches!(c.run(&extra), Err(CodegenError::UnexpectedInput { name, .. }) if name == "Z")
    );
}

#[test]
fn compiler_failure_is_an_error() {
    let mut cfg = config();
    cfg.compiler = "false".into();
    match Compiled::build_with(&matmul(Schedule::Sequential, Schedule::Sequential), &cfg) {
        Err(CodegenError::Compile {
            compiler,
            source_path,
            ..
        }) => {
            assert_eq!(compiler, "false");
            assert!(source_path.is_file(), "the failing source is kept");
        }
        other => panic!("expected a compile error, got {other:?}"),
    }
}
