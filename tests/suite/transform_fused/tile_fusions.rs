//! PrologueFusion and EpilogueFusion on a register-tiled product with a bias, written as
//! textual IR the way `std::gemm` leaves it: `init` writes the bias into every element of `t`,
//! `kernel` loads each 4-wide tile of `t` into `acc` (`load`), accumulates into it and stores
//! it back (`store`), and `relu` reads the result.

use super::{apply_checked, compiled_matches_interpreter, refused};
use dmove::ir::text::parse;
use dmove::ir::{Graph, MapNode, NodeId, NodeKind, Program};
use dmove::transform::Params;

/// `y = relu(x·w + b)` over `[2, 8]` with a reduction of 3; `init_write` is where `init` writes
/// `t`, `init_range` its range over the columns, `relu_read` where `relu` reads `t`, and
/// `extra` more nodes of the top-level graph.
fn tiled(init_write: &str, init_range: &str, relu_read: &str, extra: &str) -> Program {
    let text = tiled_text(init_write, init_range, relu_read, extra);
    parse(&text).expect("parses").program
}

/// The text of [`tiled`].
fn tiled_text(init_write: &str, init_range: &str, relu_read: &str, extra: &str) -> String {
    format!(
        r#"program "prologue"

data acc: f32[4] transient local
data b: f32[8] input
data t: f32[2, 8] transient
data w: f32[3, 8] input
data x: f32[2, 3] input
data y: f32[2, 8] output
signature (x, w, b) -> (y)

graph {{
  n0 access b
  n1 map "init" [i = 0:2, j = {init_range}] sequential {{
    n2 access b
    n3 tasklet "init" (c) {{ o = c }}
    n4 access t
    n2 -> n3 b[j] -> c
    n3 -> n4 o -> t[{init_write}]
  }}
  n5 access t
  n20 access x
  n21 access w
  n6 map "kernel" [i = 0:2, jt = 0:8:4] parallel {{
    n7 access t
    n8 map "load" [j = jt:jt + 4] sequential {{
      n9 access t
      n10 tasklet "copy" (v) {{ o = v }}
      n11 access acc
      n9 -> n10 t[i, j] -> v
      n10 -> n11 o -> acc[j - jt]
    }}
    n12 access acc
    n22 access x
    n23 access w
    n13 map "sum" [k = 0:3, j = jt:jt + 4] sequential {{
      n24 access x
      n25 access w
      n26 tasklet "mul" (a, c) {{ o = a * c }}
      n27 access acc
      n24 -> n26 x[i, k] -> a
      n25 -> n26 w[k, j] -> c
      n26 -> n27 o -> acc[j - jt] wcr sum
    }}
    n14 access acc
    n15 map "store" [j = jt:jt + 4] sequential {{
      n16 access acc
      n17 tasklet "copy" (v) {{ o = v }}
      n18 access t
      n16 -> n17 acc[j - jt] -> v
      n17 -> n18 o -> t[i, j]
    }}
    n19 access t
    n7 -> n8 t[i, jt:jt + 4]
    n8 -> n12 acc[0:4]
    n22 -> n13 x[i, 0:3]
    n23 -> n13 w[0:3, jt:jt + 4]
    n12 -> n13 acc[0:4]
    n13 -> n14 acc[0:4]
    n14 -> n15 acc[0:4]
    n15 -> n19 t[i, jt:jt + 4]
  }}
  n30 access t
  n31 map "relu" [i = 0:2, j = 0:8] sequential {{
    n32 access t
    n33 tasklet "relu" (a) {{ o = max(a, 0.0) }}
    n34 access y
    n32 -> n33 t[{relu_read}] -> a
    n33 -> n34 o -> y[i, j]
  }}
  n35 access y
  n0 -> n1 b[0:8]
  n1 -> n5 t[0:2, 0:8]
  n5 -> n6 t[0:2, 0:8]
  n20 -> n6 x[0:2, 0:3]
  n21 -> n6 w[0:3, 0:8]
  n6 -> n30 t[0:2, 0:8]
  n30 -> n31 t[0:2, 0:8]
  n31 -> n35 y[0:2, 0:8]
{extra}}}
"#
    )
}

/// The map `id` directly inside `kernel`, which keeps its id through both fusions.
fn in_kernel(p: &Program, id: NodeId) -> &MapNode {
    let kernel = nested(&p.graph, NodeId(6));
    nested(&kernel.body, id)
}

/// The map `id` of scope `g`.
fn nested(g: &Graph, id: NodeId) -> &MapNode {
    match g.index_of(id).map(|i| &g.node(i).kind) {
        Some(NodeKind::Map(m)) => m,
        _ => panic!("{id:?} is a map of its scope"),
    }
}

/// Every container `m`'s body moves, with the subset: `b[j]`.
fn accesses(m: &MapNode) -> Vec<String> {
    (m.body.edges())
        .map(|e| format!("{}{}", e.memlet.data, e.memlet.subset))
        .collect()
}

/// `init` → `kernel`, the site of PrologueFusion.
const SITE: [NodeId; 2] = [NodeId(1), NodeId(6)];
/// `kernel` → `relu`, the site of EpilogueFusion.
const EPILOGUE: [NodeId; 2] = [NodeId(6), NodeId(31)];

#[test]
fn the_bias_is_loaded_into_the_tiles_and_the_initialization_pass_disappears() {
    let mut p = tiled("i, j", "0:8", "i, j", "");
    apply_checked(&mut p, "PrologueFusion", &SITE, &Params::new());
    assert!(p.graph.index_of(NodeId(1)).is_none(), "`init` is gone");
    let reads = accesses(in_kernel(&p, NodeId(8)));
    assert!(reads.iter().any(|m| m == "b[j]"), "{reads:?}");
    assert!(
        !in_kernel(&p, NodeId(8)).body.data_used().contains("t"),
        "the loader no longer reads `t`"
    );
    compiled_matches_interpreter(&p);
}

#[test]
fn refused_where_the_loads_would_read_values_the_producer_did_not_write() {
    // `init` writes only half of `t`.
    let mut p = tiled("i, j", "0:4", "i, j", "");
    let why = refused(&mut p, "PrologueFusion", &SITE, &Params::new(), NodeId(6));
    assert!(why.contains("does not visit every element"), "{why}");
    // `init` writes a shifted element: its parameters do not index `t` one to one.
    let mut p = tiled("i, 7 - j", "0:8", "i, j", "");
    let why = refused(&mut p, "PrologueFusion", &SITE, &Params::new(), NodeId(6));
    assert!(why.contains("each index must be one parameter"), "{why}");
    // The result is also read by a second map: the version cannot leave.
    let extra = r#"  n40 map "copy" [i = 0:2, j = 0:8] sequential {
    n41 access t
    n42 tasklet "copy" (a) { o = a }
    n43 access y
    n41 -> n42 t[i, j] -> a
    n42 -> n43 o -> y[i, j]
  }
  n44 access y
  n5 -> n40 t[0:2, 0:8]
  n40 -> n44 y[0:2, 0:8]
"#;
    let mut p = tiled("i, j", "0:8", "i, j", extra);
    let why = refused(&mut p, "PrologueFusion", &SITE, &Params::new(), NodeId(6));
    assert!(why.contains("read by this consumer alone"), "{why}");
}

#[test]
fn refused_where_the_producer_is_not_element_wise() {
    // The kernel as producer: it writes `t` from a nested map.
    let mut p = tiled("i, j", "0:8", "i, j", "");
    let why = refused(
        &mut p,
        "PrologueFusion",
        &[NodeId(6), NodeId(31)],
        &Params::new(),
        NodeId(31),
    );
    assert!(why.contains("accessed by a nested map"), "{why}");
}

#[test]
fn the_activation_runs_in_the_tiles_store_and_the_result_array_disappears() {
    let mut p = tiled("i, j", "0:8", "i, j", "");
    apply_checked(&mut p, "EpilogueFusion", &EPILOGUE, &Params::new());
    assert!(p.graph.index_of(NodeId(31)).is_none(), "`relu` is gone");
    let writes = accesses(in_kernel(&p, NodeId(15)));
    assert!(writes.iter().any(|m| m == "y[i, j]"), "{writes:?}");
    assert!(
        !in_kernel(&p, NodeId(15)).body.data_used().contains("t"),
        "the store no longer writes `t`"
    );
    // Both fusions: `t` is neither initialized nor stored, only the tile remains.
    apply_checked(&mut p, "PrologueFusion", &SITE, &Params::new());
    assert!(!p.data.contains_key("t"), "`t` is gone");
    compiled_matches_interpreter(&p);
}

#[test]
fn refused_where_the_consumer_would_miss_elements_or_is_not_element_wise() {
    // The kernel stores only the first tile of each row.
    let mut p = tiled("i, j", "0:8", "i, j", "").clone();
    if let Some(i) = p.graph.index_of(NodeId(6)) {
        if let NodeKind::Map(m) = &mut p.graph.node_mut(i).kind {
            m.params[1].range.end = 4.into();
        }
    }
    let why = refused(
        &mut p,
        "EpilogueFusion",
        &EPILOGUE,
        &Params::new(),
        NodeId(31),
    );
    assert!(why.contains("does not store every element"), "{why}");
    // `relu` reads the columns reversed: not the element its iteration stands for.
    let mut p = tiled("i, j", "0:8", "i, 7 - j", "");
    let why = refused(
        &mut p,
        "EpilogueFusion",
        &EPILOGUE,
        &Params::new(),
        NodeId(31),
    );
    assert!(why.contains("not element-wise"), "{why}");
}

/// The consumer as `MapFusion` leaves an element-wise chain: `relu` then `+ 1` through a
/// register. The register write belongs to the body, not to memory: it neither becomes a write
/// of the producer nor stops the fusion.
#[test]
fn a_consumer_chained_through_a_register_fuses() {
    let text = tiled_text("i, j", "0:8", "i, j", "")
        .replace(
            "data t: f32[2, 8] transient\n",
            "data r: f32[] transient register\ndata t: f32[2, 8] transient\n",
        )
        .replace(
            "    n33 tasklet \"relu\" (a) { o = max(a, 0.0) }\n    n34 access y\n    n32 -> n33 t[i, j] -> a\n    n33 -> n34 o -> y[i, j]\n",
            "    n33 tasklet \"relu\" (a) { o = max(a, 0.0) }\n    n36 access r\n    n37 tasklet \"inc\" (a) { o = a + 1.0 }\n    n34 access y\n    n32 -> n33 t[i, j] -> a\n    n33 -> n36 o -> r[]\n    n36 -> n37 r[] -> a\n    n37 -> n34 o -> y[i, j]\n",
        );
    let mut p = parse(&text).expect("parses").program;
    assert!(p.data.contains_key("r"), "the chain's register is declared");
    apply_checked(&mut p, "EpilogueFusion", &EPILOGUE, &Params::new());
    let kernel = nested(&p.graph, NodeId(6));
    let registers_outside_the_store = (kernel.body.node_indices())
        .filter(|&i| matches!(&kernel.body.node(i).kind, NodeKind::Access(d) if d == "r"))
        .count();
    assert_eq!(registers_outside_the_store, 0);
    compiled_matches_interpreter(&p);
}
