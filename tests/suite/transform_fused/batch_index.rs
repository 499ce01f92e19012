//! MapFusion where the linking array keeps an index that no parameter runs over (a batch of
//! one: the maps iterate `[c, h]` and access `T[0, c, h]`), as every imported network's
//! element-wise chain does once `MapSqueeze` dropped the batch parameter.

use super::{apply_checked, refused};
use dmove::ir::text::parse;
use dmove::ir::{NodeId, Program};
use dmove::transform::Params;

/// `y = relu(x + 1)` over `[1, 4, 4]` as two maps linked by `t`; `write` and `read` are how the
/// first map writes `t` and the second reads it.
fn chain(write: &str, read: &str) -> Program {
    let text = format!(
        r#"program "chain"

data t: f32[1, 4, 4] transient
data x: f32[1, 4, 4] input
data y: f32[1, 4, 4] output
signature (x) -> (y)

graph {{
  n0 access x
  n1 map "add" [c = 0:4, h = 0:4] sequential {{
    n2 access x
    n3 tasklet "add" (a) {{ b = a + 1.0 }}
    n4 access t
    n2 -> n3 x[0, c, h] -> a
    n3 -> n4 b -> t[{write}]
  }}
  n5 access t
  n6 map "relu" [i = 0:4, j = 0:4] sequential {{
    n7 access t
    n8 tasklet "relu" (a) {{ b = max(a, 0.0) }}
    n9 access y
    n7 -> n8 t[{read}] -> a
    n8 -> n9 b -> y[0, i, j]
  }}
  n10 access y
  n0 -> n1 x[0, 0:4, 0:4]
  n1 -> n5 t[0, 0:4, 0:4]
  n5 -> n6 t[0, 0:4, 0:4]
  n6 -> n10 y[0, 0:4, 0:4]
}}
"#
    );
    parse(&text).expect("parses").program
}

/// Why MapFusion refuses `chain(write, read)` (at the consumer, the program left as it was).
fn fusion_refused(write: &str, read: &str) -> String {
    let mut p = chain(write, read);
    let site = [NodeId(1), NodeId(6)];
    refused(&mut p, "MapFusion", &site, &Params::new(), NodeId(6))
}

#[test]
fn a_constant_batch_index_fuses_and_the_link_becomes_a_register() {
    let mut p = chain("0, c, h", "0, i, j");
    apply_checked(&mut p, "MapFusion", &[NodeId(1), NodeId(6)], &Params::new());
    assert!(!p.data.contains_key("t"), "the linking array is gone");
}

#[test]
fn a_write_that_no_parameter_distinguishes_is_refused() {
    // Every `h` writes the same element: the consumer's iterations read values the producer's
    // other iterations overwrote, so no register can stand for `t`.
    let why = fusion_refused("0, c, 0", "0, i, j");
    assert!(why.contains("not every parameter indexes it"), "{why}");
}

#[test]
fn a_read_of_another_element_is_refused() {
    // The consumer reads the transpose: iteration (i, j) needs what producer iteration (j, i)
    // wrote, which no register of iteration (i, j) holds.
    let why = fusion_refused("0, c, h", "0, j, i");
    assert!(
        why.contains("consumer: accesses t[0, j, i] instead of t[0, i, j]"),
        "{why}"
    );
}
