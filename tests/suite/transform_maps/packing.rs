//! Pack: storing an operand blocked by the tiles of a map parameter.

use super::{
    apply_checked, assert_matmul, assert_values, compiled_matches_interpreter, map_id,
    matmul_by_hand, params, refused, run, values,
};
use crate::common;
use dmove::ir::build::{In, Out};
use dmove::ir::{
    BinOp, DataKind, NodeId, Program, Range, Schedule, Subset, SymExpr, TExpr, Tensor,
};
use dmove::transform::{lookup, ParamValue, Params};

/// A 16×6·6×24 matmul whose accumulation map is tiled by `rows` × `cols` (k untiled).
fn tiled_matmul(rows: i64, cols: i64) -> (Program, NodeId) {
    let mut p = common::matmul(16, 6, 24);
    let acc = map_id(&p, "acc");
    let tiles = ParamValue::Ints(vec![rows, cols, 0]);
    apply_checked(&mut p, "MapTiling", &[acc], &params(&[("tiles", tiles)]));
    (p, acc)
}

fn pack(data: &str, param: i64) -> Params {
    params(&[
        ("data", ParamValue::Str(data.into())),
        ("param", ParamValue::Int(param)),
    ])
}

fn shape(p: &Program, data: &str) -> Vec<String> {
    p.data[data].shape.iter().map(|d| d.to_string()).collect()
}

/// Whether the top-level map `id` still reads `data` itself.
fn reads(p: &Program, id: NodeId, data: &str) -> bool {
    let idx = p.graph.index_of(id).expect("top-level map");
    p.graph.in_edges(idx).iter().any(|e| e.memlet.data == data)
}

#[test]
fn pack_blocks_both_operands_of_a_tiled_matmul() {
    let (mut p, acc) = tiled_matmul(4, 8);
    let a = apply_checked(&mut p, "Pack", &[acc], &pack("A", 0));
    assert_eq!(a.touched.len(), 2, "the map and the copy map");
    // A[16, 6] by row tiles of 4: [block, k, offset].
    assert_eq!(shape(&p, "A_packed"), ["4", "6", "4"]);
    // B[6, 24] by column tiles of 8: the blocked dimension moves out, its offset innermost.
    apply_checked(&mut p, "Pack", &[acc], &pack("B", 1));
    assert_eq!(shape(&p, "B_packed"), ["3", "6", "8"]);
    assert!(!reads(&p, acc, "A") && !reads(&p, acc, "B"));
    assert!(reads(&p, acc, "A_packed") && reads(&p, acc, "B_packed"));
    assert_matmul(&p, 16, 6, 24);
    let source = compiled_matches_interpreter(&p);
    assert!(source.contains("map A_pack (parallel) */"), "{source}");
    // The sum of products is one fused multiply-add per step.
    assert!(source.contains("= fmaf(c_a, c_b, d_C["), "{source}");
    assert!(
        source.contains("d_B_packed[((dm_floordiv(p_j_tile, 8) * 6 + p_k) * 8 + (p_j"),
        "{source}"
    );
}

#[test]
fn tiles_that_do_not_divide_leave_the_last_block_partly_filled() {
    // 16 rows in tiles of 5 and 24 columns in tiles of 7: the last tiles are clipped
    // (`i_tile:min(i_tile + 5, 16)`), so the last block of each packed operand holds 1 row
    // and 3 columns; the copy fills only those and the kernel reads only those.
    let (mut p, acc) = tiled_matmul(5, 7);
    apply_checked(&mut p, "Pack", &[acc], &pack("A", 0));
    apply_checked(&mut p, "Pack", &[acc], &pack("B", 1));
    assert_eq!(shape(&p, "A_packed"), ["4", "6", "5"]);
    assert_eq!(shape(&p, "B_packed"), ["4", "6", "7"]);
    assert!(!reads(&p, acc, "A") && !reads(&p, acc, "B"));
    assert_matmul(&p, 16, 6, 24);
    let source = compiled_matches_interpreter(&p);
    assert!(
        source.contains("p_c2 < dm_min(5, (((-5) * p_c0) + 16))"),
        "{source}"
    );
    // Whole tiles run apart from clipped ones, tested once per tile outside the loops in it.
    let test = (source.lines())
        .find(|l| l.contains("<= 16") && l.contains("<= 24") && l.contains("&&"))
        .expect("one test of both tiles");
    let (at, reduction) = (source.find(test), source.find("for (int64_t p_k"));
    assert!(at < reduction, "{source}");
}

#[test]
fn pack_refuses_what_it_cannot_rewrite_exactly() {
    let (mut p, acc) = tiled_matmul(4, 8);
    let why = refused(&mut p, "Pack", &[acc], &pack("B", 0), acc);
    assert_eq!(
        why,
        "no access of `B` inside the map depends on `i_tile`: its tiles do not block `B`"
    );
    let why = refused(&mut p, "Pack", &[acc], &pack("C", 0), acc);
    assert_eq!(why, "the map writes `C`; only operands it reads are packed");
    let inner = map_id(&p, "acc_tile");
    let why = refused(&mut p, "Pack", &[inner], &pack("A", 0), inner);
    assert!(why.starts_with("the map is nested"), "{why}");
    // An untiled map has no tile parameter.
    let mut p = common::matmul(16, 6, 24);
    let acc = map_id(&p, "acc");
    let why = refused(&mut p, "Pack", &[acc], &pack("A", 0), acc);
    assert!(why.contains("is not a tile parameter"), "{why}");
}

/// `tiled_matmul` with B a constant, as a network's weight is.
fn tiled_matmul_with_weight(rows: i64, cols: i64) -> (Program, NodeId, Vec<f32>) {
    let (mut p, acc) = tiled_matmul(rows, cols);
    let b = values(6 * 24, 2);
    p.data.get_mut("B").expect("declared").kind = DataKind::Constant;
    (p.constants).insert("B".into(), Tensor::f32(vec![6, 24], b.clone()).into());
    p.inputs.retain(|n| n != "B");
    (p, acc, b)
}

#[test]
fn a_packed_weight_is_packed_once_at_build_time() {
    let (mut p, acc, b) = tiled_matmul_with_weight(4, 8);
    let step = apply_checked(&mut p, "Pack", &[acc], &pack("B", 1));
    let copy = *step
        .touched
        .iter()
        .find(|id| **id != acc)
        .expect("the copy map");
    let fold = lookup("ConstantMapFolding").expect("registered");
    assert_eq!(
        fold.candidates(&p),
        [vec![copy]],
        "only the copy of the weight folds"
    );
    apply_checked(&mut p, "ConstantMapFolding", &[copy], &Params::new());
    assert!(p.node(copy).is_none(), "the copy map is gone");
    assert_eq!(p.data["B_packed"].kind, DataKind::Constant);
    assert!(
        !p.data.contains_key("B"),
        "the weight only the copy read is gone"
    );
    // B[6, 24] by column blocks of 8: B_packed[blk, k, r] = B[k, 8·blk + r].
    let packed = p.constants["B_packed"].tensor().to_f64_vec();
    for (blk, k, r) in [(0, 0, 0), (1, 2, 3), (2, 5, 7)] {
        let want = f64::from(b[k * 24 + 8 * blk + r]);
        assert_eq!(
            packed[(blk * 6 + k) * 8 + r],
            want,
            "B_packed[{blk}, {k}, {r}]"
        );
    }
    let a = values(16 * 6, 1);
    let out = run(&p, &[("A", Tensor::f32(vec![16, 6], a.clone()))]);
    assert_values(&out["C"], &matmul_by_hand(&a, &b, 16, 6, 24));
    let source = compiled_matches_interpreter(&p);
    assert!(!source.contains("B_pack (parallel)"), "{source}");
}

#[test]
fn constant_map_folding_refuses_maps_that_read_inputs_are_nested_or_grow_their_constants() {
    let (mut p, acc, _) = tiled_matmul_with_weight(4, 8);
    apply_checked(&mut p, "Pack", &[acc], &pack("A", 0));
    let copy_of_a = map_id(&p, "A_pack");
    for (site, input) in [(acc, "A_packed"), (copy_of_a, "A")] {
        let why = refused(&mut p, "ConstantMapFolding", &[site], &Params::new(), site);
        assert_eq!(
            why,
            format!("it reads `{input}`, which is not a constant with a value")
        );
    }
    let inner = map_id(&p, "acc_tile");
    let why = refused(
        &mut p,
        "ConstantMapFolding",
        &[inner],
        &Params::new(),
        inner,
    );
    assert!(why.contains("only top-level maps are folded"), "{why}");
    // Y = X + bias broadcast through a transient: the broadcast reads 24 constant elements and
    // writes 16 × 24, which costs more to read than to compute.
    let mut p = broadcast_bias();
    let broadcast = map_id(&p, "broadcast");
    let why = refused(
        &mut p,
        "ConstantMapFolding",
        &[broadcast],
        &Params::new(),
        broadcast,
    );
    assert_eq!(
        why,
        "it writes 384 elements from 24 constant elements, more than max_growth = 1 times"
    );
    let grow = params(&[("max_growth", ParamValue::Int(16))]);
    apply_checked(&mut p, "ConstantMapFolding", &[broadcast], &grow);
    assert_eq!(p.data["T"].kind, DataKind::Constant);
}

/// `Y = X + T` where the transient `T[16, 24]` is a constant bias `[24]` broadcast by a map.
fn broadcast_bias() -> Program {
    let mut p = Program::new("broadcast");
    common::declare(&mut p, "X", &[16, 24], DataKind::Input);
    common::declare(&mut p, "bias", &[24], DataKind::Constant);
    common::declare(&mut p, "T", &[16, 24], DataKind::Transient);
    common::declare(&mut p, "Y", &[16, 24], DataKind::Output);
    (p.constants).insert("bias".into(), Tensor::f32(vec![24], values(24, 3)).into());
    let ij = || Subset::element([SymExpr::sym("i"), SymExpr::sym("j")]);
    let params = || vec![("i", Range::upto(16)), ("j", Range::upto(24))];
    p.build(|b| {
        b.map("broadcast", params(), Schedule::Sequential, |b| {
            let j = Subset::element([SymExpr::sym("j")]);
            let copy = Out("t", "T", ij(), None, TExpr::input("b"));
            b.tasklet("copy", vec![In("b", "bias", j)], vec![copy]);
        });
        b.map("add", params(), Schedule::Sequential, |b| {
            let sum = TExpr::binary(BinOp::Add, TExpr::input("x"), TExpr::input("t"));
            let ins = vec![In("x", "X", ij()), In("t", "T", ij())];
            b.tasklet("add", ins, vec![Out("y", "Y", ij(), None, sum)]);
        });
    });
    p
}
