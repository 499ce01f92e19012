//! The textual IR end to end: round trips, the printed format, and located parse errors.

mod errors;
mod props;

use dmove::ir::build::{In, Out};
use dmove::ir::text::{parse, print, print_exact};
use dmove::ir::{
    Attr, BinOp, DType, DataDesc, DataKind, NodeKind, Program, Range, Schedule, Storage, Subset,
    SymExpr, TExpr, Tensor, UnOp, Wcr,
};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;

fn s(n: &str) -> SymExpr {
    SymExpr::sym(n)
}

/// A matmul over a symbolic row count with a small and a large constant, a local accumulator,
/// a library node with every attribute kind and a strided map.
fn sample() -> Program {
    let mut p = Program::new("mm");
    p.symbols.insert("N".into(), Some(8));
    p.symbols.insert("K".into(), None);
    let decl = |dims: Vec<SymExpr>, kind| DataDesc::new(DType::F32, dims, kind);
    p.data
        .insert("A".into(), decl(vec![s("N"), 8.into()], DataKind::Input));
    p.data.insert(
        "B".into(),
        decl(vec![8.into(), 8.into()], DataKind::Constant),
    );
    p.data
        .insert("bias".into(), decl(vec![4.into()], DataKind::Constant));
    p.data
        .insert("C".into(), decl(vec![s("N"), 8.into()], DataKind::Output));
    p.data
        .insert("D".into(), decl(vec![s("N"), 8.into()], DataKind::Output));
    let mut acc = decl(vec![], DataKind::Transient);
    acc.storage = Storage::Register;
    p.data.insert("acc".into(), acc);
    p.inputs = vec!["A".into()].into();
    p.outputs = vec!["C".into(), "D".into()].into();
    p.constants.insert(
        "B".into(),
        Tensor::f32(vec![8, 8], (0..64).map(|i| i as f32 * 0.5).collect()).into(),
    );
    p.constants.insert(
        "bias".into(),
        Tensor::f32(vec![4], vec![0.1, -2.0, f32::NAN, f32::INFINITY]).into(),
    );
    p.build(|b| {
        b.map(
            "acc",
            vec![
                ("i", Range::upto(s("N"))),
                ("j", Range::upto(8)),
                ("k", Range::upto(8)),
            ],
            Schedule::Parallel,
            |b| {
                b.tasklet(
                    "fma",
                    vec![
                        In("a", "A", Subset::element([s("i"), s("k")])),
                        In("b", "B", Subset::element([s("k"), s("j")])),
                    ],
                    vec![Out(
                        "c",
                        "C",
                        Subset::element([s("i"), s("j")]),
                        Some(Wcr::Sum),
                        TExpr::binary(BinOp::Mul, TExpr::input("a"), TExpr::input("b")),
                    )],
                );
            },
        );
        let attrs: BTreeMap<String, Attr> = [
            ("alpha", Attr::Float(1.0)),
            ("axis", Attr::Int(-1)),
            ("mode", Attr::Str("constant".into())),
            ("perm", Attr::Ints(vec![0, 2, 1])),
            ("scales", Attr::Floats(vec![0.5, f64::NEG_INFINITY])),
            ("empty", Attr::Ints(vec![])),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect();
        b.library(
            "Gemm_0",
            "Gemm",
            attrs,
            &[Some("C"), None, Some("bias")],
            &["D"],
        );
        let mut strided = Range::new(1, s("N"));
        strided.step = 2.into();
        b.map("odd", vec![("i", strided)], Schedule::Sequential, |b| {
            b.tasklet(
                "neg",
                vec![In("x", "D", Subset::element([s("i"), 0.into()]))],
                vec![Out(
                    "y",
                    "acc",
                    Subset::element([]),
                    None,
                    TExpr::select(
                        TExpr::binary(BinOp::Gt, TExpr::input("x"), TExpr::Const(0.0)),
                        TExpr::unary(UnOp::Neg, TExpr::input("x")),
                        TExpr::unary(UnOp::Exp, TExpr::Index(s("i") * 2)),
                    ),
                )],
            );
        });
    });
    p
}

/// Everything but constants compares structurally; constants compare bit for bit (NaN ≠ NaN).
fn assert_same_program(a: &Program, b: &Program) {
    assert_eq!(a.name, b.name);
    assert_eq!(a.symbols, b.symbols);
    assert_eq!(a.data, b.data);
    assert_eq!((&a.inputs, &a.outputs), (&b.inputs, &b.outputs));
    assert_eq!(a.graph, b.graph);
    assert_eq!(a.next_id(), b.next_id());
    let bits = |p: &Program| -> BTreeMap<String, (Vec<usize>, DType, Vec<u8>)> {
        p.constants
            .iter()
            .map(|(k, t)| (k.clone(), (t.shape.clone(), t.dtype(), t.to_le_bytes())))
            .collect()
    };
    assert_eq!(bits(a), bits(b));
}

/// Both round-trip identities of the brief, plus structural identity of the exact form.
fn assert_round_trips(p: &Program) {
    let exact = print_exact(p);
    let parsed = parse(&exact).unwrap_or_else(|e| panic!("{:?}\n{exact}", miette::Report::new(e)));
    assert!(parsed.elided.is_empty());
    assert_same_program(&parsed.program, p);
    assert_eq!(print_exact(&parsed.program), exact);
    assert_eq!(print(&parsed.program), print(p));
}

#[test]
fn sample_round_trips_exactly() {
    assert_round_trips(&sample());
}

#[test]
fn a_parallel_maps_min_work_prints_and_round_trips() {
    let mut p = sample();
    for n in p.graph.nodes_mut() {
        if let NodeKind::Map(m) = &mut n.kind {
            m.min_work = 4096;
        }
    }
    assert!(print(&p).contains(r#"map "acc" [i = 0:N, j = 0:8, k = 0:8] parallel min_work 4096 {"#));
    assert_round_trips(&p);
    let text = print_exact(&p).replace("min_work 4096", "min_work 99999999999999999999999");
    let err = parse(&text).expect_err("does not fit");
    assert!(format!("{err:?}").contains("min_work"), "{err:?}");
}

#[test]
fn human_form_elides_large_constants_by_digest() {
    let p = sample();
    let text = print(&p);
    // sha256 of the 64 little-endian f32 values 0.0, 0.5, 1.0, …, computed here independently.
    let bytes: Vec<u8> = (0..64)
        .flat_map(|i| (i as f32 * 0.5).to_le_bytes())
        .collect();
    let digest = hex::encode(Sha256::digest(&bytes));
    assert!(
        text.contains(&format!(
            "const B: f32[8, 8] = sha256:{digest} (64 values)\n"
        )),
        "{text}"
    );
    assert!(
        text.contains("const bias: f32[4] = [0.1, -2.0, nan, inf]\n"),
        "{text}"
    );
    let parsed = parse(&text).expect("human form parses");
    assert_eq!(parsed.elided, BTreeMap::from([("B".to_string(), digest)]));
    assert!(!parsed.program.constants.contains_key("B"));
    assert_eq!(parsed.program.graph, p.graph);
}

#[test]
fn fresh_ids_after_parsing_do_not_collide() {
    let mut parsed = parse(&print_exact(&sample())).expect("parses").program;
    let fresh = parsed.fresh_id();
    let mut ids = Vec::new();
    parsed.graph.walk(&mut |n| ids.push(n.id));
    assert!(ids.iter().all(|id| *id < fresh), "{fresh} among {ids:?}");
}

/// The format as a reader sees it, for a small program written out by hand.
#[test]
fn prints_the_documented_format() {
    let mut p = Program::new("scale");
    p.symbols.insert("N".into(), Some(4));
    p.data.insert(
        "X".into(),
        DataDesc::new(DType::F32, vec![s("N")], DataKind::Input),
    );
    p.data.insert(
        "w".into(),
        DataDesc::new(DType::F32, vec![2.into()], DataKind::Constant),
    );
    p.data.insert(
        "Y".into(),
        DataDesc::new(DType::F32, vec![s("N")], DataKind::Output),
    );
    p.inputs = vec!["X".into()].into();
    p.outputs = vec!["Y".into()].into();
    p.constants
        .insert("w".into(), Tensor::f32(vec![2], vec![0.5, -1.25]).into());
    p.build(|b| {
        b.map(
            "scale",
            vec![("i", Range::upto(s("N")))],
            Schedule::Vector,
            |b| {
                b.tasklet(
                    "mul",
                    vec![
                        In("x", "X", Subset::element([s("i")])),
                        In("k", "w", Subset::element([s("i").modulo(2.into())])),
                    ],
                    vec![Out(
                        "y",
                        "Y",
                        Subset::element([s("i")]),
                        None,
                        TExpr::binary(BinOp::Mul, TExpr::input("x"), TExpr::input("k")),
                    )],
                );
            },
        );
    });
    let expected = r#"program "scale"

symbol N = 4

data X: f32[N] input
data Y: f32[N] output
data w: f32[2] const

signature (X) -> (Y)

const w: f32[2] = [0.5, -1.25]

graph {
  n5 access X
  n6 access w
  n4 map "scale" [i = 0:N] vector {
    n1 access X
    n2 access w
    n0 tasklet "mul" (x, k) { y = x * k }
    n3 access Y
    n1 -> n0 X[i] -> x
    n2 -> n0 w[i % 2] -> k
    n0 -> n3 y -> Y[i]
  }
  n7 access Y
  n5 -> n4 X[0:N]
  n6 -> n4 w[0:2]
  n4 -> n7 Y[0:N]
}
"#;
    assert_eq!(print(&p), expected);
    assert_round_trips(&p);
}

#[test]
fn constants_of_every_dtype_round_trip() {
    let mut p = Program::new("consts");
    let weird_nan = f32::from_bits(0x7fc0_0001);
    let tensors = [
        (
            "f32_small",
            Tensor::f32(vec![2, 2], vec![weird_nan, -0.0, 1e-45, f32::MAX]),
        ),
        (
            "f32_big",
            Tensor::f32(vec![17], (0..17).map(|i| 1.0 / (i as f32 + 3.0)).collect()),
        ),
        (
            "f64",
            Tensor {
                shape: vec![3],
                data: dmove::ir::Buffer::F64(vec![0.1, f64::MIN_POSITIVE, -1e300]),
            },
        ),
        ("i64", Tensor::i64(vec![3], vec![i64::MIN, 0, i64::MAX])),
        (
            "i32_big",
            Tensor {
                shape: vec![20],
                data: dmove::ir::Buffer::I32((-10..10).collect()),
            },
        ),
        (
            "bool",
            Tensor {
                shape: vec![2],
                data: dmove::ir::Buffer::Bool(vec![true, false]),
            },
        ),
        ("scalar", Tensor::f32(vec![], vec![2.5])),
        ("empty", Tensor::f32(vec![0, 3], vec![])),
    ];
    for (name, t) in tensors {
        let shape = t.shape.iter().map(|d| SymExpr::from(*d)).collect();
        p.data.insert(
            name.into(),
            DataDesc::new(t.dtype(), shape, DataKind::Constant),
        );
        p.constants.insert(name.into(), t.into());
    }
    assert_round_trips(&p);
    let exact = print_exact(&p);
    // A NaN with a payload cannot be written as `nan`, so the exact form falls back to bytes.
    assert!(
        exact.contains("const f32_small: f32[2, 2] = hex:0100c07f00000080"),
        "{exact}"
    );
    assert!(
        exact.contains("const i64: i64[3] = [-9223372036854775808, 0, 9223372036854775807]"),
        "{exact}"
    );
    assert!(
        exact.contains("const bool: bool[2] = [true, false]"),
        "{exact}"
    );
    assert!(exact.contains("const scalar: f32[] = [2.5]"), "{exact}");
    assert!(print(&p).contains("const f32_small: f32[2, 2] = [nan, -0.0, 1e-45, 3.4028235e38]"));
}

/// Names straight from hostile model files: quoted where needed, read back unchanged.
#[test]
fn hostile_names_round_trip() {
    let evil = "x; system(\"rm -rf /\")";
    let names = [
        evil,
        "a/b:0",
        "données✓",
        "map",
        "",
        "tab\there\nnewline",
        "back\\slash",
    ];
    let mut p = Program::new("model \"v2\"\n");
    for n in names {
        p.data.insert(
            n.into(),
            DataDesc::new(DType::F32, vec![2.into()], DataKind::Transient),
        );
    }
    p.inputs = vec![evil.into()].into();
    p.outputs = vec!["a/b:0".into()].into();
    let attrs = BTreeMap::from([("odd key".to_string(), Attr::Str("\"}] wcr sum".into()))]);
    p.build(|b| {
        b.library(
            "label\n\"two\"",
            "com.vendor/Op v1",
            attrs,
            &[Some(evil), Some("")],
            &["données✓", "map"],
        );
        b.library(
            "",
            "Relu",
            BTreeMap::new(),
            &[Some("tab\there\nnewline")],
            &["back\\slash"],
        );
    });
    let text = print_exact(&p);
    assert!(
        text.contains("data \"x; system(\\\"rm -rf /\\\")\": f32[2] transient"),
        "{text}"
    );
    assert!(
        !text.contains("data données✓"),
        "a name that is not an ASCII identifier is quoted: {text}"
    );
    assert!(
        text.contains("data \"données✓\": f32[2] transient"),
        "{text}"
    );
    assert!(text.contains("data \"map\": f32[2] transient"), "{text}");
    assert!(text.contains("library \"label\\n\\\"two\\\"\" \"com.vendor/Op v1\" { \"odd key\" = \"\\\"}] wcr sum\" }"), "{text}");
    assert_round_trips(&p);
}

#[test]
fn every_node_kind_and_attr_survives_parsing() {
    let parsed = parse(&print_exact(&sample())).expect("parses").program;
    let mut kinds = Vec::new();
    parsed.graph.walk(&mut |n| kinds.push(n.kind.kind_name()));
    for k in ["access", "library", "map", "tasklet"] {
        assert!(kinds.contains(&k), "{k} missing from {kinds:?}");
    }
    let mut attrs = None;
    parsed.graph.walk(&mut |n| {
        if let NodeKind::Library(l) = &n.kind {
            attrs = Some(l.attrs.clone());
        }
    });
    let attrs = attrs.expect("a library node");
    assert_eq!(attrs["axis"], Attr::Int(-1));
    assert_eq!(attrs["empty"], Attr::Ints(vec![]));
    assert_eq!(attrs["scales"], Attr::Floats(vec![0.5, f64::NEG_INFINITY]));
    assert_eq!(attrs["mode"], Attr::Str("constant".into()));
}
