//! Vectorize and Unroll: schedule changes the C backend turns into pragmas.

use super::{
    apply_checked, assert_matmul, compiled_matches_interpreter, map, map_id, params, refused,
    rejected,
};
use crate::common;
use dmove::ir::build::{In, Out};
use dmove::ir::{DType, DataKind, NodeKind, Program, Range, Schedule, Subset, SymExpr, TExpr, Wcr};
use dmove::transform::{ParamValue, Params};

/// `C[i, j] = X[i, j] * 2` over a map whose innermost parameter is `i` (column-wise walk).
fn column_walk() -> Program {
    let mut p = Program::new("columns");
    common::declare(&mut p, "X", &[4, 512], DataKind::Input);
    common::declare(&mut p, "C", &[4, 512], DataKind::Output);
    let s = SymExpr::sym;
    p.build(|b| {
        b.map(
            "cols",
            vec![("j", Range::upto(512)), ("i", Range::upto(4))],
            Schedule::Sequential,
            |b| {
                b.tasklet(
                    "scale",
                    vec![In("x", "X", Subset::element([s("i"), s("j")]))],
                    vec![Out(
                        "c",
                        "C",
                        Subset::element([s("i"), s("j")]),
                        None,
                        TExpr::binary(dmove::ir::BinOp::Mul, TExpr::input("x"), TExpr::Const(2.0)),
                    )],
                );
            },
        );
    });
    p
}

#[test]
fn vectorize_marks_a_contiguous_map_and_the_c_uses_omp_simd() {
    let mut p = common::elementwise_chain(6, 37);
    let id = map_id(&p, "double");
    let step = apply_checked(&mut p, "Vectorize", &[id], &Params::new());
    assert_eq!(step.touched, [id]);
    assert_eq!(map(&p, id).schedule, Schedule::Vector);
    let source = compiled_matches_interpreter(&p);
    assert!(source.contains("#pragma omp simd"), "{source}");
}

#[test]
fn vectorize_refuses_a_strided_lane_naming_the_stride() {
    let mut p = column_walk();
    let id = map_id(&p, "cols");
    let why = refused(&mut p, "Vectorize", &[id], &Params::new(), id);
    assert_eq!(
        why, "reads X[i, j] with stride 512 in `i`: not contiguous",
        "the first access checked is the read"
    );
}

/// `C[i, j, 0, 0] = X[i, j, 0, 0] * 2` over [4, 64, 1, 1] tensors (a 1×1 convolution's
/// feature maps): `j` steps through memory with stride 1 although it is not the last dimension.
fn trailing_unit_dimensions() -> Program {
    let mut p = Program::new("pointwise");
    common::declare(&mut p, "X", &[4, 64, 1, 1], DataKind::Input);
    common::declare(&mut p, "C", &[4, 64, 1, 1], DataKind::Output);
    let s = SymExpr::sym;
    let at = || Subset::element([s("i"), s("j"), SymExpr::Int(0), SymExpr::Int(0)]);
    p.build(|b| {
        b.map(
            "rows",
            vec![("i", Range::upto(4)), ("j", Range::upto(64))],
            Schedule::Sequential,
            |b| {
                b.tasklet(
                    "scale",
                    vec![In("x", "X", at())],
                    vec![Out(
                        "c",
                        "C",
                        at(),
                        None,
                        TExpr::binary(dmove::ir::BinOp::Mul, TExpr::input("x"), TExpr::Const(2.0)),
                    )],
                );
            },
        );
    });
    p
}

#[test]
fn vectorize_accepts_a_lane_followed_only_by_dimensions_of_extent_one() {
    let mut p = trailing_unit_dimensions();
    let id = map_id(&p, "rows");
    apply_checked(&mut p, "Vectorize", &[id], &Params::new());
    assert_eq!(map(&p, id).schedule, Schedule::Vector);
    let source = compiled_matches_interpreter(&p);
    assert!(source.contains("#pragma omp simd"), "{source}");
}

/// `Y[y] ⊕= X[i, j]` over a `rows` × 16 `X` of `dtype`, combined by `wcr`: a reduction whose
/// innermost parameter `j` is reduced, into element `y` of a `Y` of `outputs` elements.
fn reduction(rows: i64, outputs: i64, y: SymExpr, dtype: DType, wcr: Wcr) -> Program {
    let mut p = Program::new("reduction");
    common::declare(&mut p, "X", &[rows, 16], DataKind::Input);
    common::declare(&mut p, "Y", &[outputs], DataKind::Output);
    for name in ["X", "Y"] {
        p.data.get_mut(name).expect("declared").dtype = dtype;
    }
    let s = SymExpr::sym;
    p.build(|b| {
        b.map(
            "sum",
            vec![("i", Range::upto(rows)), ("j", Range::upto(16))],
            Schedule::Sequential,
            |b| {
                b.tasklet(
                    "add",
                    vec![In("x", "X", Subset::element([s("i"), s("j")]))],
                    vec![Out(
                        "y",
                        "Y",
                        Subset::element([y]),
                        Some(wcr),
                        TExpr::input("x"),
                    )],
                );
            },
        );
    });
    p
}

/// `Y[i] ⊕= X[i, j]` over a 3 × 16 `X`.
fn row_reduction(dtype: DType, wcr: Wcr) -> Program {
    reduction(3, 3, SymExpr::sym("i"), dtype, wcr)
}

#[test]
fn vectorize_runs_a_float_reduction_over_the_lane_as_a_simd_reduction() {
    for (wcr, clause) in [
        (Wcr::Sum, "reduction(+:"),
        (Wcr::Max, "reduction(max:"),
        (Wcr::Min, "reduction(min:"),
    ] {
        let mut p = row_reduction(DType::F32, wcr);
        let id = map_id(&p, "sum");
        apply_checked(&mut p, "Vectorize", &[id], &Params::new());
        let source = compiled_matches_interpreter(&p);
        assert!(
            source.contains(&format!("#pragma omp simd {clause}")),
            "{source}"
        );
    }
}

#[test]
fn a_simd_reduction_under_threads_that_share_its_element_combines_atomically() {
    // Y[0] += X[i, j] over every (i, j): rows in parallel, each row's lanes a SIMD reduction.
    let mut p = reduction(64, 1, SymExpr::Int(0), DType::F32, Wcr::Sum);
    let id = map_id(&p, "sum");
    let split = params(&[("split", ParamValue::Int(1))]);
    apply_checked(&mut p, "MapExpansion", &[id], &split);
    let no_threshold = params(&[("min_work", ParamValue::Int(0))]);
    apply_checked(&mut p, "Parallelize", &[id], &no_threshold);
    let inner = map_id(&p, "sum_inner");
    apply_checked(&mut p, "Vectorize", &[inner], &Params::new());
    let source = compiled_matches_interpreter(&p);
    let combine = source
        .find("#pragma omp atomic")
        .expect("an atomic combine");
    assert!(source[combine..].contains("+= dm_lanes"), "{source}");
}

#[test]
fn vectorize_refuses_an_integer_reduction_over_the_lane() {
    let mut p = row_reduction(DType::I32, Wcr::Sum);
    let id = map_id(&p, "sum");
    let why = refused(&mut p, "Vectorize", &[id], &Params::new(), id);
    assert_eq!(
        why,
        "every lane of `j` writes Y[i]: lanes would collide (a SIMD reduction needs f32 or f64 elements and a body that does not read them)"
    );
}

#[test]
fn vectorize_accepts_a_matmul_once_the_columns_are_innermost() {
    let mut p = common::matmul(4, 8, 5);
    let acc = map_id(&p, "acc");
    let why = refused(&mut p, "Vectorize", &[acc], &Params::new(), acc);
    assert_eq!(why, "reads B[k, j] with stride 5 in `k`: not contiguous");
    apply_checked(
        &mut p,
        "MapInterchange",
        &[acc],
        &params(&[("order", ParamValue::Ints(vec![0, 2, 1]))]),
    );
    apply_checked(&mut p, "Vectorize", &[acc], &Params::new());
    assert_matmul(&p, 4, 8, 5);
    let source = compiled_matches_interpreter(&p);
    assert!(source.contains("#pragma omp simd"), "{source}");
}

#[test]
fn vectorize_refuses_a_map_that_is_not_innermost() {
    let mut p = common::matmul(4, 8, 5);
    let acc = map_id(&p, "acc");
    apply_checked(
        &mut p,
        "MapExpansion",
        &[acc],
        &params(&[("split", ParamValue::Int(2))]),
    );
    let why = refused(&mut p, "Vectorize", &[acc], &Params::new(), acc);
    assert!(why.starts_with("the body contains map n"), "{why}");
    assert!(why.ends_with("only innermost maps are vectorized"), "{why}");
}

#[test]
fn unroll_marks_a_short_inner_loop_and_the_c_keeps_the_results() {
    let mut p = common::matmul(5, 3, 4);
    let acc = map_id(&p, "acc");
    apply_checked(&mut p, "Unroll", &[acc], &Params::new());
    assert_eq!(map(&p, acc).schedule, Schedule::Unrolled);
    assert_matmul(&p, 5, 3, 4);
    let source = compiled_matches_interpreter(&p);
    assert!(source.contains("#pragma GCC unroll"), "{source}");
}

#[test]
fn unroll_counts_a_clipped_tile_by_its_size() {
    let mut p = common::matmul(5, 11, 4);
    let acc = map_id(&p, "acc");
    let tiled = apply_checked(
        &mut p,
        "MapTiling",
        &[acc],
        &params(&[("tiles", ParamValue::Ints(vec![0, 0, 4]))]),
    );
    let inner = tiled.touched[1];
    apply_checked(&mut p, "Unroll", &[inner], &Params::new());
    assert_matmul(&p, 5, 11, 4);
}

#[test]
fn unroll_refuses_long_loops_and_bad_bounds() {
    let mut p = common::matmul(4, 40, 4);
    let acc = map_id(&p, "acc");
    let why = refused(&mut p, "Unroll", &[acc], &Params::new(), acc);
    assert_eq!(why, "`k` runs 40 times, more than max 16");
    let mut p = common::matmul(4, 9, 4);
    let acc = map_id(&p, "acc");
    let why = refused(
        &mut p,
        "Unroll",
        &[acc],
        &params(&[("max", ParamValue::Int(8))]),
        acc,
    );
    assert_eq!(why, "`k` runs 9 times, more than max 8");
    let why = rejected(
        &mut p,
        "Unroll",
        &[acc],
        &params(&[("max", ParamValue::Int(64))]),
    );
    assert_eq!(
        why,
        "Unroll: parameter `max` expects an integer in 1..=16, found the integer 64"
    );
}

#[test]
fn a_reduction_whose_body_reads_its_accumulator_is_refused_and_never_emitted_as_simd() {
    // Y[i] += X[i, j] · Y[i]: each step reads the running value, so lanes holding partial
    // shares would read wrong values. Vectorize refuses; forced to vector lanes by hand, the C
    // backend emits the plain loop, no SIMD reduction.
    let mut p = Program::new("feedback");
    common::declare(&mut p, "X", &[3, 16], DataKind::Input);
    common::declare(&mut p, "Y", &[3], DataKind::Output);
    let s = SymExpr::sym;
    p.build(|b| {
        b.map(
            "sum",
            vec![("i", Range::upto(3)), ("j", Range::upto(16))],
            Schedule::Sequential,
            |b| {
                b.tasklet(
                    "add",
                    vec![
                        In("x", "X", Subset::element([s("i"), s("j")])),
                        In("y0", "Y", Subset::element([s("i")])),
                    ],
                    vec![Out(
                        "y",
                        "Y",
                        Subset::element([s("i")]),
                        Some(Wcr::Sum),
                        TExpr::binary(dmove::ir::BinOp::Mul, TExpr::input("x"), TExpr::input("y0")),
                    )],
                );
            },
        );
    });
    let id = map_id(&p, "sum");
    let why = refused(&mut p, "Vectorize", &[id], &Params::new(), id);
    assert!(
        why.starts_with("every lane of `j` writes Y[i]: lanes would collide"),
        "{why}"
    );
    let forced = {
        let mut q = p.clone();
        let edit = q.edit(id).expect("the map");
        let NodeKind::Map(m) = &mut edit.graph.node_mut(edit.idx).kind else {
            panic!("not a map")
        };
        m.schedule = Schedule::Vector;
        q
    };
    let source = compiled_matches_interpreter(&forced);
    assert!(!source.contains("reduction("), "{source}");
    assert!(source.contains("no omp simd"), "{source}");
}

/// The loop order of `Y[i, j] = b[b_index]` over a 256 × 256 `Y`, `b` of `b_shape`.
fn copy_order(b_shape: &[i64], b_index: &[&str]) -> Vec<usize> {
    let mut p = Program::new("copy");
    common::declare(&mut p, "b", b_shape, DataKind::Input);
    common::declare(&mut p, "Y", &[256, 256], DataKind::Output);
    let s = SymExpr::sym;
    let read = Subset::element(b_index.iter().map(|n| SymExpr::sym(*n)));
    p.build(|b| {
        b.map(
            "init",
            vec![("i", Range::upto(256)), ("j", Range::upto(256))],
            Schedule::Sequential,
            |b| {
                b.tasklet(
                    "copy",
                    vec![In("b", "b", read)],
                    vec![Out(
                        "y",
                        "Y",
                        Subset::element([s("i"), s("j")]),
                        None,
                        TExpr::input("b"),
                    )],
                );
            },
        );
    });
    let NodeKind::Map(m) = &p.node(map_id(&p, "init")).expect("exists").kind else {
        panic!("not a map")
    };
    dmove::transform::queries::loop_order(m, &p).order
}

#[test]
fn a_small_broadcast_operand_does_not_decide_the_loop_order() {
    // b[i] is 256 times smaller than Y and stays in cache, so Y's contiguous j goes innermost
    // although b is read (reads otherwise count double).
    assert_eq!(copy_order(&[256], &["i"]), [0, 1]);
    // A read as large as Y, indexed [j, i], decides: i innermost.
    assert_eq!(copy_order(&[256, 256], &["j", "i"]), [1, 0]);
}

#[test]
fn a_vector_map_over_a_clipped_tile_runs_whole_tiles_with_a_constant_trip_count() {
    // 37 columns in tiles of 16: two whole tiles and a clipped one of 5.
    let mut p = common::elementwise_chain(6, 37);
    let id = map_id(&p, "double");
    let tiles = ParamValue::Ints(vec![0, 16]);
    apply_checked(&mut p, "MapTiling", &[id], &params(&[("tiles", tiles)]));
    let inner = map_id(&p, "double_tile");
    apply_checked(&mut p, "Vectorize", &[inner], &Params::new());
    let source = compiled_matches_interpreter(&p);
    let whole = source.find("+ 16) <= 37) {").expect("the whole-tile test");
    let clipped = source[whole..]
        .find("dm_min(")
        .expect("the clipped tile after it");
    let pragmas = source[whole..whole + clipped]
        .matches("#pragma omp simd")
        .count();
    assert_eq!(pragmas, 2, "both branches run as SIMD lanes:\n{source}");
}

#[test]
fn a_reduction_shorter_than_a_vector_does_not_take_the_lanes_from_an_output() {
    // A depthwise 3×3 over 8 channels of 8×8: the window's `k1` and the output's `o1` both
    // index the padded input's last dimension, and the small weight array votes for `k1`.
    // Three taps would fill 3 of 16 lanes and be summed per output; `o1` runs innermost.
    let bytes = dmove::demo::suite::conv(8, 8, 8, 8, 5);
    let mut p = dmove::onnx::import_bytes(&bytes, &Default::default()).expect("imports");
    let conv = (p.graph.nodes())
        .find(|n| matches!(&n.kind, NodeKind::Library(l) if l.op == "Conv"))
        .map(|n| n.id)
        .expect("a Conv node");
    let padded = params(&[("impl", ParamValue::Str("padded".into()))]);
    apply_checked(&mut p, "Expand", &[conv], &padded);
    let acc = map_id(&p, "conv_0_acc");
    let NodeKind::Map(m) = &p.node(acc).expect("exists").kind else {
        panic!("not a map")
    };
    let order = dmove::transform::queries::loop_order(m, &p);
    let names: Vec<&str> = (order.order.iter())
        .map(|&k| m.params[k].name.as_str())
        .collect();
    assert_eq!(names[names.len() - 3..], ["k0", "k1", "o1"], "{names:?}");
    assert_eq!(
        order.outputs, 4,
        "n, g, m and o0 outside the taps: {names:?}"
    );
}
