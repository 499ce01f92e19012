//! Traces of IR programs, checked by hand.

use dmove::analysis::trace::IrTrace;
use dmove::analysis::{analyze, AccessSource, Options, Sink};
use dmove::ir::build::{In, Out};
use dmove::ir::{
    BinOp, DType, DataDesc, DataKind, Program, Range, Schedule, Subset, SymExpr, TExpr, Wcr,
};

/// `y[i] = 2·x[i]` for i < 3, then `s[0] += y[i]` (a write with conflict resolution).
pub fn scale_then_sum() -> Program {
    let mut p = Program::new("scale_sum");
    for (n, len, kind) in [
        ("x", 3, DataKind::Input),
        ("y", 3, DataKind::Transient),
        ("s", 1, DataKind::Output),
    ] {
        p.data
            .insert(n.into(), DataDesc::new(DType::F32, vec![len.into()], kind));
    }
    p.inputs = vec!["x".into()];
    p.outputs = vec!["s".into()];
    let i = || Subset::element([SymExpr::sym("i")]);
    p.build(|b| {
        b.map(
            "scale",
            vec![("i", Range::upto(3))],
            Schedule::Sequential,
            |b| {
                b.tasklet(
                    "mul",
                    vec![In("a", "x", i())],
                    vec![Out(
                        "b",
                        "y",
                        i(),
                        None,
                        TExpr::binary(BinOp::Mul, TExpr::input("a"), TExpr::Const(2.0)),
                    )],
                );
            },
        );
        b.map(
            "sum",
            vec![("i", Range::upto(3))],
            Schedule::Sequential,
            |b| {
                b.tasklet(
                    "acc",
                    vec![In("a", "y", i())],
                    vec![Out(
                        "b",
                        "s",
                        Subset::element([SymExpr::Int(0)]),
                        Some(Wcr::Sum),
                        TExpr::input("a"),
                    )],
                );
            },
        );
    });
    p
}

/// Records the raw stream.
#[derive(Default)]
struct Recorder {
    accesses: Vec<(usize, String, u64, bool)>,
    names: Vec<String>,
    flops: u64,
}

impl Sink for Recorder {
    fn access(&mut self, node: usize, array: usize, index: u64, write: bool) {
        self.accesses
            .push((node, self.names[array].clone(), index, write));
    }

    fn flops(&mut self, _node: usize, flops: u64) {
        self.flops += flops;
    }
}

#[test]
fn streams_in_interpreter_order() {
    let t = IrTrace::new(&scale_then_sum()).expect("traces");
    let mut rec = Recorder {
        names: t.arrays().iter().map(|a| a.name.clone()).collect(),
        ..Recorder::default()
    };
    t.stream(&mut rec).expect("streams");
    let short: Vec<String> = rec
        .accesses
        .iter()
        .map(|(node, a, i, w)| format!("{node}{}{a}{i}", if *w { "w" } else { "r" }))
        .collect();
    assert_eq!(
        short,
        [
            "0rx0", "0wy0", "0rx1", "0wy1", "0rx2", "0wy2", // scale
            "1ry0", "1rs0", "1ws0", "1ry1", "1rs0", "1ws0", "1ry2", "1rs0", "1ws0", // sum
        ]
    );
    // One multiplication per `mul`, one combination per wcr write.
    assert_eq!(rec.flops, 6);
}

#[test]
fn dmd_of_a_small_program_by_hand() {
    let r = analyze(
        &IrTrace::new(&scale_then_sum()).expect("traces"),
        &Options::default(),
    )
    .expect("analyzes");
    // First accesses x0 y0 x1 y1 x2 y2 s0 cost sqrt(1..=7). Warm distances: y0 5 (x1 y1 x2 y2
    // since), s0 write 1, y1 5 (x2 y2 y0 s0), s0 read 2, write 1, y2 4 (y0 s0 y1), s0 2, 1.
    let cold: f64 = (1..=7).map(|k| f64::from(k).sqrt()).sum();
    let warm = 2.0 * 5f64.sqrt() + 2.0 * 2f64.sqrt() + 4f64.sqrt() + 3.0;
    assert_eq!(r.total.stats.accesses, 15);
    assert_eq!(r.total.stats.first_accesses, 7);
    assert!((r.total.stats.dmd_cold - cold).abs() < 1e-12);
    assert!((r.total.stats.dmd_warm - warm).abs() < 1e-12);
    let names: Vec<&str> = r.nodes.iter().map(|n| n.name.as_str()).collect();
    assert_eq!(names, ["scale", "sum"]);
    let scale = &r.nodes[0];
    assert_eq!((scale.stats.accesses, scale.stats.first_accesses), (6, 6));
    assert_eq!(scale.flops, Some(3));
    // scale moves x[0:3] and y[0:3]: 24 bytes, 3 FLOPs.
    assert_eq!(scale.bytes_moved, Some(24));
    assert_eq!(scale.intensity, Some(0.125));
    let y = r.arrays.iter().find(|a| a.name == "y").expect("y");
    assert_eq!((y.stats.accesses, y.stats.reads, y.stats.writes), (6, 3, 3));
    // Histogram of warm distances 5 1 5 2 1 4 2 1: bins (≤1) 3, (2) 2, (3..4) 1, (5..8) 2.
    assert_eq!(r.total.stats.histogram, [3, 2, 1, 2]);
    // 8-byte lines: x and y take 2 lines each, s one.
    let lines = analyze(
        &IrTrace::new(&scale_then_sum()).expect("traces"),
        &Options {
            line: Some(8),
            ..Options::default()
        },
    )
    .expect("analyzes");
    assert_eq!(lines.total.stats.first_accesses, 5);
}

#[test]
fn lowers_library_nodes_and_reports_unbound_symbols() {
    use dmove::ops::TensorType;
    let ty = |s: &[i64]| {
        Some(TensorType::new(
            DType::F32,
            s.iter().map(|&d| d.into()).collect(),
        ))
    };
    let p = dmove::check::single_op_program(
        "MatMul",
        Default::default(),
        &[ty(&[4, 5]), ty(&[5, 3])],
        &[],
    )
    .expect("program");
    let r = analyze(&IrTrace::new(&p).expect("lowers"), &Options::default()).expect("analyzes");
    // Whatever the expansion, each of the 4·3·5 products reads both operands.
    let a = r.arrays.iter().find(|a| a.name == "x0").expect("x0");
    let b = r.arrays.iter().find(|a| a.name == "x1").expect("x1");
    assert_eq!((a.stats.accesses, b.stats.accesses), (60, 60));
    assert_eq!((a.stats.first_accesses, b.stats.first_accesses), (20, 15));

    let mut q = scale_then_sum();
    q.symbols.insert("N".into(), None);
    q.data.get_mut("x").expect("x").shape = vec![SymExpr::sym("N")];
    let err = IrTrace::new(&q).err().expect("unbound symbol is an error");
    assert!(err.to_string().contains("`x`"), "{err}");
}
