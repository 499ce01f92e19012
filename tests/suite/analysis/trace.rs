//! Traces of IR programs, checked by hand.

use dmove::analysis::trace::IrTrace;
use dmove::analysis::{analyze, AccessSource, Options, Sink};
use dmove::ir::build::{In, Out};
use dmove::ir::{
    BinOp, DType, DataDesc, DataKind, Dim, Program, Range, Schedule, Subset, SymExpr, TExpr, Wcr,
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
    p.inputs = vec!["x".into()].into();
    p.outputs = vec!["s".into()].into();
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

/// `Y[i, d] = t[k, 0]` for i, d < 2, with `k = I[i]` and `t` the window `T[rows, d]` of a 6×2
/// table (rows = start, end, step): an element read at a data-dependent index.
fn lookup(rows: (i64, i64, i64)) -> Program {
    let mut p = Program::new("lookup");
    for (n, dtype, shape, kind) in [
        ("I", DType::I64, vec![2], DataKind::Input),
        ("T", DType::F32, vec![6, 2], DataKind::Input),
        ("Y", DType::F32, vec![2, 2], DataKind::Output),
    ] {
        let shape = shape.into_iter().map(SymExpr::Int).collect();
        p.data.insert(n.into(), DataDesc::new(dtype, shape, kind));
    }
    p.inputs = vec!["I".into(), "T".into()].into();
    p.outputs = vec!["Y".into()].into();
    let s = SymExpr::sym;
    let window = Subset(vec![
        Dim::Range(Range {
            start: rows.0.into(),
            end: rows.1.into(),
            step: rows.2.into(),
        }),
        Dim::Index(s("d")),
    ]);
    p.build(|b| {
        b.map(
            "gather",
            vec![("i", Range::upto(2)), ("d", Range::upto(2))],
            Schedule::Sequential,
            |b| {
                b.tasklet(
                    "pick",
                    vec![
                        In("k", "I", Subset::element([s("i")])),
                        In("t", "T", window),
                    ],
                    vec![Out(
                        "y",
                        "Y",
                        Subset::element([s("i"), s("d")]),
                        None,
                        TExpr::element("t", vec![TExpr::input("k"), TExpr::Const(0.0)]),
                    )],
                );
            },
        );
    });
    p
}

/// The stream of `t` as `{node}{r|w}{array}{index}` strings, and its FLOPs.
fn recorded(t: &IrTrace) -> (Vec<String>, u64) {
    let mut rec = Recorder {
        names: t.arrays().iter().map(|a| a.name.clone()).collect(),
        ..Recorder::default()
    };
    t.stream(&mut rec).expect("streams");
    let short = rec
        .accesses
        .iter()
        .map(|(node, a, i, w)| format!("{node}{}{a}{i}", if *w { "w" } else { "r" }))
        .collect();
    (short, rec.flops)
}

#[test]
fn element_reads_count_one_read_at_the_window_start() {
    // Window rows 1, 3, 5 of column d: the read is counted at T[1, d] = flat 2 + d, after the
    // plain read of I[i] and before the write.
    let (short, flops) = recorded(&IrTrace::new(&lookup((1, 6, 2))).expect("traces"));
    assert_eq!(
        short,
        [
            "0rI0", "0rT2", "0wY0", "0rI0", "0rT3", "0wY1", // i = 0
            "0rI1", "0rT2", "0wY2", "0rI1", "0rT3", "0wY3", // i = 1
        ]
    );
    assert_eq!(flops, 0);
    // An empty window admits no successful read: only the plain reads and the writes remain.
    let (short, _) = recorded(&IrTrace::new(&lookup((6, 6, 1))).expect("traces"));
    assert_eq!(
        short,
        ["0rI0", "0wY0", "0rI0", "0wY1", "0rI1", "0wY2", "0rI1", "0wY3"]
    );
}

#[test]
fn traces_a_lowered_gather() {
    use dmove::ops::TensorType;
    let ty = |dtype, s: &[i64]| {
        Some(TensorType::new(
            dtype,
            s.iter().map(|&d| d.into()).collect(),
        ))
    };
    let p = dmove::check::single_op_program(
        "Gather",
        Default::default(),
        &[ty(DType::F32, &[5, 3]), ty(DType::I64, &[4])],
        &[],
    )
    .expect("program");
    let r = analyze(&IrTrace::new(&p).expect("lowers"), &Options::default()).expect("analyzes");
    // One element read of the data per output element, counted at its window's start (row 0 of
    // column d), and one read of the index.
    let data = r.arrays.iter().find(|a| a.name == "x0").expect("x0");
    let idx = r.arrays.iter().find(|a| a.name == "x1").expect("x1");
    assert_eq!((data.stats.accesses, data.stats.first_accesses), (12, 3));
    assert_eq!((idx.stats.accesses, idx.stats.first_accesses), (12, 4));
}

#[test]
fn streams_in_interpreter_order() {
    let (short, flops) = recorded(&IrTrace::new(&scale_then_sum()).expect("traces"));
    assert_eq!(
        short,
        [
            "0rx0", "0wy0", "0rx1", "0wy1", "0rx2", "0wy2", // scale
            "1ry0", "1rs0", "1ws0", "1ry1", "1rs0", "1ws0", "1ry2", "1rs0", "1ws0", // sum
        ]
    );
    // One multiplication per `mul`, one combination per wcr write.
    assert_eq!(flops, 6);
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
