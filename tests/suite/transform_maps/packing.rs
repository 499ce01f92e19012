//! Pack: storing an operand blocked by the tiles of a map parameter.

use super::{apply_checked, assert_matmul, compiled_matches_interpreter, map_id, params, refused};
use crate::common;
use dmove::ir::{NodeId, Program};
use dmove::transform::{ParamValue, Params};

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
    // 16 rows in tiles of 5: the last tile is clipped, so blocks would not be whole.
    let (mut p, acc) = tiled_matmul(5, 8);
    let why = refused(&mut p, "Pack", &[acc], &pack("A", 0), acc);
    assert!(why.contains("in whole tiles of 5"), "{why}");
    // An untiled map has no tile parameter.
    let mut p = common::matmul(16, 6, 24);
    let acc = map_id(&p, "acc");
    let why = refused(&mut p, "Pack", &[acc], &pack("A", 0), acc);
    assert!(why.contains("is not a tile parameter"), "{why}");
}
