//! MapFusion where the linking array keeps an index that no parameter runs over (a batch of
//! one: the maps iterate `[c, h]` and access `T[0, c, h]`), as every imported network's
//! element-wise chain does once `MapSqueeze` dropped the batch parameter.

use super::{apply_checked, refused};
use dmove::ir::text::parse;
use dmove::ir::{NodeId, Program};
use dmove::transform::Params;

/// `y = relu(x + 1)` over `[1, 4, 6]` as two maps linked by `t`; `write` is how the first map
/// indexes `t`.
fn chain(write: &str) -> Program {
    let text = format!(
        r#"program "chain"

data t: f32[1, 4, 6] transient
data x: f32[1, 4, 6] input
data y: f32[1, 4, 6] output
signature (x) -> (y)

graph {{
  n0 access x
  n1 map "add" [c = 0:4, h = 0:6] sequential {{
    n2 access x
    n3 tasklet "add" (a) {{ b = a + 1.0 }}
    n4 access t
    n2 -> n3 x[0, c, h] -> a
    n3 -> n4 b -> t[{write}]
  }}
  n5 access t
  n6 map "relu" [i = 0:4, j = 0:6] sequential {{
    n7 access t
    n8 tasklet "relu" (a) {{ b = max(a, 0.0) }}
    n9 access y
    n7 -> n8 t[0, i, j] -> a
    n8 -> n9 b -> y[0, i, j]
  }}
  n10 access y
  n0 -> n1 x[0, 0:4, 0:6]
  n1 -> n5 t[0, 0:4, 0:6]
  n5 -> n6 t[0, 0:4, 0:6]
  n6 -> n10 y[0, 0:4, 0:6]
}}
"#
    );
    parse(&text).expect("parses").program
}

#[test]
fn a_constant_batch_index_fuses_and_the_link_becomes_a_register() {
    let mut p = chain("0, c, h");
    apply_checked(&mut p, "MapFusion", &[NodeId(1), NodeId(6)], &Params::new());
    assert!(!p.data.contains_key("t"), "the linking array is gone");
}

#[test]
fn a_write_that_no_parameter_distinguishes_is_refused() {
    // Every `h` writes the same element: the consumer's iterations read values the producer's
    // other iterations overwrote, so no register can stand for `t`.
    let mut p = chain("0, c, 0");
    let why = refused(
        &mut p,
        "MapFusion",
        &[NodeId(1), NodeId(6)],
        &Params::new(),
        NodeId(6),
    );
    assert!(why.contains("not every parameter indexes it"), "{why}");
}
