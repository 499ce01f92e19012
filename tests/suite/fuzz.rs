//! Fuzzing without nightly: a committed regression corpus per fuzz target
//! (`fuzz/fuzz_targets`) is replayed on every `cargo test`, and an ignored test mutates seed
//! inputs for a bounded time through the same entry points, for machines where libFuzzer cannot
//! run:
//!
//! ```text
//! DMOVE_FUZZ_SECS=300 cargo test --release --test suite fuzz::fuzz_for_a_while -- --ignored --nocapture
//! ```
//!
//! The corpus lives in `tests/fixtures/fuzz/<target>/` (about 140 and 120 inputs, under 50 KB):
//! valid models and IR texts, truncations, mutations and hand-made edge cases (`valid-*`,
//! `trunc-*`, `mut-*`, `edge-*`, written by the ignored `write_regression_corpus`), plus the
//! inputs libFuzzer found that add the most coverage beyond those (`libfuzzer-<sha1>`: picked
//! from `cargo +nightly fuzz run <target> NEW_DIR tests/fixtures/fuzz/<target>` with a
//! `-merge=1` control file). The replay asserts a minimum count per target, and that some
//! inputs are accepted and some rejected, so a missing or gutted corpus fails instead of
//! passing on nothing.
//!
//! Inputs that panic are written to `target/fuzz-crashes/<target>/`; fix the panic, minimise the
//! input and add it under `tests/fixtures/fuzz/<target>/`.

use dmove::ir::text::{parse, print_exact};
use dmove::onnx::proto::attribute_proto::AttributeType;
use dmove::onnx::proto::{AttributeProto, GraphProto, ModelProto, OperatorSetIdProto};
use dmove::onnx::{import_bytes, import_file, AttrValue, ImportOptions, ModelBuilder};
use prost::Message;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use sha2::{Digest, Sha256};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// The body of `fuzz/fuzz_targets/import.rs`; true when the input imports.
fn import_target(data: &[u8]) -> bool {
    import_bytes(data, &ImportOptions::default()).is_ok()
}

/// The body of `fuzz/fuzz_targets/ir_text.rs`; true when the input parses.
fn ir_text_target(data: &[u8]) -> bool {
    match std::str::from_utf8(data) {
        Ok(text) => parse(text).is_ok(),
        Err(_) => false,
    }
}

type Target = fn(&[u8]) -> bool;

const TARGETS: [(&str, Target); 2] = [("import", import_target), ("ir_text", ir_text_target)];

/// Fewest committed inputs per target, and fewest of them accepted and rejected: a corpus that
/// is missing, emptied or lost its valid (or its invalid) inputs fails the replay.
const MIN_INPUTS: usize = 100;
const MIN_ACCEPTED: usize = 10;
const MIN_REJECTED: usize = 50;

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

fn corpus_dir(target: &str) -> PathBuf {
    fixtures().join("fuzz").join(target)
}

/// The committed inputs of `target`, sorted by file name.
fn corpus(target: &str) -> Vec<(PathBuf, Vec<u8>)> {
    let dir = corpus_dir(target);
    let entries = std::fs::read_dir(&dir).unwrap_or_else(|e| {
        panic!(
            "the regression corpus of `{target}` is missing ({}: {e})",
            dir.display()
        )
    });
    let mut files: Vec<PathBuf> = entries
        .map(|e| e.expect("readable corpus directory").path())
        .filter(|p| p.is_file())
        .collect();
    files.sort();
    files
        .into_iter()
        .map(|f| {
            let data = std::fs::read(&f).expect("readable corpus input");
            (f, data)
        })
        .collect()
}

#[test]
fn regression_corpus_replays_without_panics() {
    for (name, target) in TARGETS {
        let inputs = corpus(name);
        assert!(
            inputs.len() >= MIN_INPUTS,
            "`{name}` has {} corpus inputs in {}, fewer than {MIN_INPUTS}",
            inputs.len(),
            corpus_dir(name).display()
        );
        let (mut accepted, mut rejected, mut panicked) = (0, 0, Vec::new());
        for (file, data) in &inputs {
            match catch_unwind(AssertUnwindSafe(|| target(data))) {
                Ok(true) => accepted += 1,
                Ok(false) => rejected += 1,
                Err(_) => panicked.push(file.display().to_string()),
            }
        }
        assert!(
            panicked.is_empty(),
            "`{name}` panics again on {panicked:#?}"
        );
        eprintln!(
            "{name}: {} inputs replayed, {accepted} accepted, {rejected} rejected",
            inputs.len()
        );
        assert!(
            accepted >= MIN_ACCEPTED && rejected >= MIN_REJECTED,
            "`{name}`: {accepted} inputs accepted and {rejected} rejected; the corpus needs at \
             least {MIN_ACCEPTED} valid and {MIN_REJECTED} invalid ones"
        );
    }
}

/// Inputs to mutate: the ONNX fixtures and in-memory models for `import`, their printed IR for
/// `ir_text`, and each target's committed corpus.
fn seeds() -> [(Target, Vec<Vec<u8>>); 2] {
    let mut models: Vec<Vec<u8>> = ["mlp.onnx", "typed_fields.onnx"]
        .iter()
        .map(|f| std::fs::read(fixtures().join(f)).expect("fixture"))
        .collect();
    models.push(
        ModelBuilder::new("shapes", 13)
            .input("x", ["N", "3", "4"])
            .initializer_i64("axes", &[1], vec![0])
            .initializer("w", &[4], vec![0.5; 4])
            .node("Shape", &["x"], &["s"], vec![])
            .node("Identity", &["x"], &["x1"], vec![])
            .node("Dropout", &["x1"], &["x2"], vec![])
            .node("Mul", &["x2", "w"], &["y"], vec![])
            .output("y", ["N", "3", "4"])
            .encode(),
    );
    let mlp = import_file(&fixtures().join("mlp.onnx"), &ImportOptions::default()).expect("mlp");
    let mut texts = vec![print_exact(&mlp).into_bytes()];
    models.extend(corpus("import").into_iter().map(|(_, d)| d));
    texts.extend(corpus("ir_text").into_iter().map(|(_, d)| d));
    [(import_target as Target, models), (ir_text_target, texts)]
}

/// One random edit: flip bits, overwrite with boundary bytes, insert, delete, duplicate or
/// truncate a range, or splice in part of another seed.
fn mutate(input: &mut Vec<u8>, donor: &[u8], rng: &mut ChaCha8Rng) {
    if input.is_empty() {
        input.push(rng.gen());
        return;
    }
    let at = rng.gen_range(0..input.len());
    match rng.gen_range(0..7) {
        0 => input[at] ^= 1 << rng.gen_range(0..8),
        1 => input[at] = [0x00, 0x01, 0x7f, 0x80, 0xff][rng.gen_range(0..5)],
        2 => input.insert(at, rng.gen()),
        3 => {
            let end = (at + rng.gen_range(1..16)).min(input.len());
            input.drain(at..end);
        }
        4 => {
            let end = (at + rng.gen_range(1..32)).min(input.len());
            let chunk = input[at..end].to_vec();
            input.splice(at..at, chunk);
        }
        5 => input.truncate(at.max(1)),
        _ if !donor.is_empty() => {
            let from = rng.gen_range(0..donor.len());
            let end = (from + rng.gen_range(1..64)).min(donor.len());
            input.splice(at..at, donor[from..end].iter().copied());
        }
        _ => input[at] = rng.gen(),
    }
}

#[test]
#[ignore = "runs for DMOVE_FUZZ_SECS seconds (default 60); see the module docs"]
fn fuzz_for_a_while() {
    let secs: u64 = std::env::var("DMOVE_FUZZ_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(60);
    let out = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/fuzz-crashes");
    let mut rng = ChaCha8Rng::seed_from_u64(secs);
    let mut crashes = Vec::new();
    let all = seeds();
    for ((name, _), (target, corpus)) in TARGETS.iter().zip(all) {
        let deadline = Instant::now() + Duration::from_secs(secs / 2);
        let mut runs = 0u64;
        while Instant::now() < deadline {
            let mut input = corpus[rng.gen_range(0..corpus.len())].clone();
            let donor = &corpus[rng.gen_range(0..corpus.len())];
            for _ in 0..rng.gen_range(1..8) {
                mutate(&mut input, donor, &mut rng);
            }
            runs += 1;
            if catch_unwind(AssertUnwindSafe(|| target(&input))).is_err() {
                let dir = out.join(name);
                std::fs::create_dir_all(&dir).expect("crash directory");
                let file = dir.join(hex::encode(&Sha256::digest(&input)[..8]));
                std::fs::write(&file, &input).expect("crash file");
                crashes.push(file);
            }
        }
        eprintln!("{name}: {runs} inputs in {}s", secs / 2);
    }
    assert!(crashes.is_empty(), "crashing inputs: {crashes:?}");
}

// ---------------------------------------------------------------------------------------------
// The generated part of the regression corpus.

/// Small valid models: every one imports (checked when the corpus is written).
fn valid_models() -> Vec<(&'static str, Vec<u8>)> {
    let int = AttrValue::Int;
    let ints = |v: &[i64]| AttrValue::Ints(v.to_vec());
    vec![
        (
            "relu",
            ModelBuilder::new("relu", 17)
                .input("x", ["N", "3"])
                .node("Relu", &["x"], &["y"], vec![])
                .output("y", ["N", "3"])
                .encode(),
        ),
        (
            "shapes",
            ModelBuilder::new("shapes", 13)
                .input("x", ["N", "3", "4"])
                .initializer_i64("axes", &[1], vec![0])
                .initializer("w", &[4], vec![0.5; 4])
                .node("Shape", &["x"], &["s"], vec![])
                .node("Identity", &["x"], &["x1"], vec![])
                .node("Dropout", &["x1"], &["x2"], vec![])
                .node("Mul", &["x2", "w"], &["y"], vec![])
                .output("y", ["N", "3", "4"])
                .encode(),
        ),
        (
            "gemm",
            ModelBuilder::new("gemm", 17)
                .input("x", [2, 4])
                .initializer("w", &[3, 4], (0..12).map(|i| i as f32 / 8.0).collect())
                .initializer("b", &[3], vec![1.0, -1.0, 0.5])
                .node(
                    "Gemm",
                    &["x", "w", "b"],
                    &["y"],
                    vec![("transB", int(1)), ("alpha", AttrValue::Float(0.5))],
                )
                .output("y", [2, 3])
                .encode(),
        ),
        (
            "conv_pool",
            ModelBuilder::new("conv_pool", 17)
                .input("x", [1, 1, 5, 5])
                .initializer("w", &[2, 1, 3, 3], vec![0.25; 18])
                .node(
                    "Conv",
                    &["x", "w"],
                    &["c"],
                    vec![("pads", ints(&[1, 1, 1, 1]))],
                )
                .node(
                    "MaxPool",
                    &["c"],
                    &["y"],
                    vec![("kernel_shape", ints(&[2, 2])), ("strides", ints(&[2, 2]))],
                )
                .output("y", [1, 2, 2, 2])
                .encode(),
        ),
        (
            "reshape_softmax",
            ModelBuilder::new("reshape_softmax", 17)
                .input("x", [2, 6])
                .constant_i64("shape", &[3], vec![2, 3, -1])
                .node("Reshape", &["x", "shape"], &["r"], vec![])
                .node("Softmax", &["r"], &["y"], vec![("axis", int(-1))])
                .output("y", [2, 3, 2])
                .encode(),
        ),
        (
            "reduce_axes_input",
            ModelBuilder::new("reduce_axes_input", 18)
                .input("x", [3, 4])
                .initializer_i64("axes", &[1], vec![1])
                .node(
                    "ReduceSum",
                    &["x", "axes"],
                    &["y"],
                    vec![("keepdims", int(0))],
                )
                .output("y", [3])
                .encode(),
        ),
        (
            "gather_where",
            ModelBuilder::new("gather_where", 17)
                .input("x", [4, 3])
                .initializer_i64("idx", &[2], vec![3, -1])
                .initializer("zero", &[], vec![0.0])
                .node("Gather", &["x", "idx"], &["g"], vec![("axis", int(0))])
                .node("Greater", &["g", "zero"], &["m"], vec![])
                .node("Where", &["m", "g", "zero"], &["y"], vec![])
                .output("y", [2, 3])
                .encode(),
        ),
        (
            "legacy_opset6_broadcast",
            ModelBuilder::new("legacy", 6)
                .input("x", [2, 3, 4])
                .initializer("b", &[3], vec![1.0, 2.0, 3.0])
                .node(
                    "Add",
                    &["x", "b"],
                    &["y"],
                    vec![("broadcast", int(1)), ("axis", int(1))],
                )
                .output("y", [2, 3, 4])
                .encode(),
        ),
        (
            "typed_fields",
            std::fs::read(fixtures().join("typed_fields.onnx")).expect("fixture"),
        ),
    ]
}

/// Edits a decoded model and encodes it again.
fn edited(bytes: &[u8], edit: impl FnOnce(&mut ModelProto)) -> Vec<u8> {
    let mut m = ModelProto::decode(bytes).expect("a valid model decodes");
    edit(&mut m);
    m.encode_to_vec()
}

fn graph(m: &mut ModelProto) -> &mut GraphProto {
    m.graph.as_mut().expect("graph")
}

/// Hand-made malformed models: bad protobuf framing, then well-framed models with wrong
/// contents (missing parts, impossible shapes and attributes, references to nothing).
fn edge_models() -> Vec<(&'static str, Vec<u8>)> {
    let relu = ModelBuilder::new("relu", 17)
        .input("x", ["N", "3"])
        .node("Relu", &["x"], &["y"], vec![])
        .output("y", ["N", "3"])
        .encode();
    let weighted = ModelBuilder::new("weighted", 17)
        .initializer("w", &[4], vec![1.0, 2.0, 3.0, 4.0])
        .input("x", [4])
        .node("Add", &["x", "w"], &["y"], vec![])
        .output("y", [4])
        .encode();
    let one_op = |op: &str, ins: &[&str], x: &[i64], attrs: Vec<(&str, AttrValue)>| {
        let names: Vec<String> = (0..ins.len()).map(|i| format!("c{i}")).collect();
        let mut b = ModelBuilder::new("edge", 17).input("x", x.to_vec());
        let mut inputs = vec!["x"];
        for (k, v) in ins.iter().enumerate() {
            let values: Vec<i64> = v.split(',').filter_map(|p| p.trim().parse().ok()).collect();
            b = b.initializer_i64(&names[k], &[values.len() as i64], values);
        }
        inputs.extend(names.iter().map(String::as_str));
        b.node(op, &inputs, &["y"], attrs)
            .output("y", ["?"])
            .encode()
    };
    let ints = |v: &[i64]| AttrValue::Ints(v.to_vec());
    let mut nested = GraphProto::default();
    for _ in 0..64 {
        nested = GraphProto {
            node: vec![dmove::onnx::proto::NodeProto {
                op_type: Some("If".into()),
                attribute: vec![AttributeProto {
                    name: Some("then_branch".into()),
                    r#type: Some(AttributeType::Graph as i32),
                    g: Some(nested),
                    ..Default::default()
                }],
                ..Default::default()
            }],
            ..Default::default()
        };
    }
    vec![
        ("empty", vec![]),
        ("zero_byte", vec![0x00]),
        ("ff_byte", vec![0xff]),
        ("field_tag_only", vec![0x08]),
        ("ir_version_only", vec![0x08, 0x07]),
        (
            "text",
            std::fs::read(fixtures().join("not_a_model.onnx")).expect("fixture"),
        ),
        (
            "overlong_varint",
            vec![
                0x08, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01,
            ],
        ),
        (
            "huge_graph_length",
            vec![0x08, 0x07, 0x3a, 0xff, 0xff, 0xff, 0xff, 0x0f, 0x0a],
        ),
        ("wrong_wire_type", vec![0x0a, 0x02, 0x07, 0x07]),
        ("zero_field_number", vec![0x00, 0x01, 0x08, 0x07]),
        ("group_wire_type", vec![0x0b, 0x08, 0x07, 0x0c]),
        ("no_graph", edited(&relu, |m| m.graph = None)),
        ("no_opset", edited(&relu, |m| m.opset_import.clear())),
        (
            "opset_far_future",
            edited(&relu, |m| {
                m.opset_import = vec![OperatorSetIdProto {
                    domain: Some(String::new()),
                    version: Some(1_000_000),
                }]
            }),
        ),
        (
            "opset_negative",
            edited(&relu, |m| m.opset_import[0].version = Some(-1)),
        ),
        ("ir_version_zero", edited(&relu, |m| m.ir_version = Some(0))),
        (
            "unknown_op",
            edited(&relu, |m| {
                graph(m).node[0].op_type = Some("NoSuchOp".into())
            }),
        ),
        (
            "empty_op_type",
            edited(&relu, |m| graph(m).node[0].op_type = None),
        ),
        (
            "dangling_input",
            edited(&relu, |m| graph(m).node[0].input = vec!["nowhere".into()]),
        ),
        (
            "no_node_outputs",
            edited(&relu, |m| graph(m).node[0].output.clear()),
        ),
        (
            "self_cycle",
            edited(&relu, |m| graph(m).node[0].input = vec!["y".into()]),
        ),
        (
            "duplicate_node",
            edited(&relu, |m| {
                let n = graph(m).node[0].clone();
                graph(m).node.push(n);
            }),
        ),
        (
            "initializer_huge_dims",
            edited(&weighted, |m| {
                graph(m).initializer[0].dims = vec![1 << 40, 1 << 40]
            }),
        ),
        (
            "initializer_negative_dims",
            edited(&weighted, |m| graph(m).initializer[0].dims = vec![-4]),
        ),
        (
            "initializer_short_data",
            edited(&weighted, |m| {
                let raw = graph(m).initializer[0].raw_data.as_mut().expect("raw");
                raw.truncate(5);
            }),
        ),
        (
            "initializer_unknown_dtype",
            edited(&weighted, |m| graph(m).initializer[0].data_type = Some(999)),
        ),
        (
            "initializer_string_dtype",
            edited(&weighted, |m| graph(m).initializer[0].data_type = Some(8)),
        ),
        (
            "input_negative_dim",
            edited(&weighted, |m| {
                use dmove::onnx::proto::tensor_shape_proto::dimension::Value;
                use dmove::onnx::proto::type_proto::Value as Ty;
                let input = &mut graph(m).input[0];
                if let Some(Ty::TensorType(t)) =
                    input.r#type.as_mut().and_then(|t| t.value.as_mut())
                {
                    if let Some(d) = t.shape.as_mut().and_then(|s| s.dim.first_mut()) {
                        d.value = Some(Value::DimValue(-3));
                    }
                }
            }),
        ),
        (
            "nested_subgraphs",
            edited(&relu, |m| {
                graph(m).node[0].attribute = nested.node[0].attribute.clone()
            }),
        ),
        (
            "reshape_two_minus_ones",
            one_op("Reshape", &["-1, -1"], &[2, 6], vec![]),
        ),
        (
            "reshape_zero_volume",
            one_op("Reshape", &["0, 5"], &[2, 6], vec![]),
        ),
        (
            "slice_step_zero",
            one_op("Slice", &["0", "2", "0", "0"], &[4], vec![]),
        ),
        (
            "slice_huge_bounds",
            one_op(
                "Slice",
                &["-9223372036854775808", "9223372036854775807"],
                &[4],
                vec![],
            ),
        ),
        (
            "transpose_bad_perm",
            one_op("Transpose", &[], &[2, 3], vec![("perm", ints(&[0, 0]))]),
        ),
        (
            "concat_axis_out_of_range",
            one_op("Concat", &[], &[2, 3], vec![("axis", AttrValue::Int(7))]),
        ),
        (
            "flatten_axis_out_of_range",
            one_op("Flatten", &[], &[2, 3], vec![("axis", AttrValue::Int(-9))]),
        ),
        (
            "split_sizes_wrong",
            one_op("Split", &["1, 1"], &[5], vec![]),
        ),
        (
            "gather_index_out_of_range",
            one_op("Gather", &["17"], &[4], vec![]),
        ),
        (
            "expand_bad_shape",
            one_op("Expand", &["3, 0, -2"], &[2], vec![]),
        ),
        (
            "tile_negative_repeats",
            one_op("Tile", &["-2"], &[3], vec![]),
        ),
        ("pad_negative", one_op("Pad", &["-3, -3"], &[4], vec![])),
        (
            "unsqueeze_duplicate_axes",
            one_op("Unsqueeze", &["0, 0"], &[4], vec![]),
        ),
        ("squeeze_non_unit", one_op("Squeeze", &["0"], &[4], vec![])),
        (
            "reduce_axis_out_of_range",
            one_op("ReduceSum", &["5"], &[2, 3], vec![]),
        ),
        (
            "conv_kernel_larger_than_input",
            ModelBuilder::new("conv", 17)
                .input("x", [1, 1, 2, 2])
                .initializer("w", &[1, 1, 5, 5], vec![1.0; 25])
                .node("Conv", &["x", "w"], &["y"], vec![])
                .output("y", ["?"])
                .encode(),
        ),
        (
            "conv_zero_stride",
            ModelBuilder::new("conv", 17)
                .input("x", [1, 1, 4, 4])
                .initializer("w", &[1, 1, 2, 2], vec![1.0; 4])
                .node(
                    "Conv",
                    &["x", "w"],
                    &["y"],
                    vec![("strides", ints(&[0, 0]))],
                )
                .output("y", ["?"])
                .encode(),
        ),
        (
            "maxpool_no_kernel",
            ModelBuilder::new("pool", 17)
                .input("x", [1, 1, 4, 4])
                .node("MaxPool", &["x"], &["y"], vec![])
                .output("y", ["?"])
                .encode(),
        ),
        (
            "gemm_string_alpha",
            ModelBuilder::new("gemm", 17)
                .input("a", [2, 3])
                .input("b", [3, 2])
                .node(
                    "Gemm",
                    &["a", "b"],
                    &["y"],
                    vec![("alpha", AttrValue::Str("big".into()))],
                )
                .output("y", [2, 2])
                .encode(),
        ),
        (
            "matmul_mismatch",
            ModelBuilder::new("matmul", 17)
                .input("a", [2, 3])
                .input("b", [4, 2])
                .node("MatMul", &["a", "b"], &["y"], vec![])
                .output("y", [2, 2])
                .encode(),
        ),
        (
            "range_zero_delta",
            ModelBuilder::new("range", 17)
                .initializer("start", &[], vec![0.0])
                .initializer("limit", &[], vec![10.0])
                .initializer("delta", &[], vec![0.0])
                .node("Range", &["start", "limit", "delta"], &["y"], vec![])
                .output("y", ["?"])
                .encode(),
        ),
        (
            "constant_without_value",
            ModelBuilder::new("c", 17)
                .node("Constant", &[], &["y"], vec![])
                .output("y", ["?"])
                .encode(),
        ),
    ]
}

/// Small valid IR texts: imported library-level programs, their full expansions (maps and
/// tasklets) and the matmul fixture under each schedule.
fn valid_texts() -> Vec<(String, Vec<u8>)> {
    use dmove::ir::{Schedule, SymExpr};
    let mut out = Vec::new();
    for (name, bytes) in valid_models() {
        if !["relu", "gemm", "reduce_axes_input", "gather_where"].contains(&name) {
            continue;
        }
        let p = import_bytes(&bytes, &ImportOptions::default()).expect("imports");
        out.push((format!("{name}_library"), print_exact(&p).into_bytes()));
        let mut lowered = p;
        dmove::ops::expand::expand_all(&mut lowered).expect("expands");
        out.push((
            format!("{name}_expanded"),
            print_exact(&lowered).into_bytes(),
        ));
    }
    let schedules = [
        ("sequential", Schedule::Sequential),
        ("parallel", Schedule::Parallel),
        ("vector", Schedule::Vector),
        ("unrolled", Schedule::Unrolled),
    ];
    for (name, schedule) in schedules {
        let p = dmove::check::fixtures::matmul(
            SymExpr::sym("M"),
            SymExpr::Int(3),
            SymExpr::sym("N"),
            schedule,
        );
        out.push((format!("matmul_{name}"), print_exact(&p).into_bytes()));
    }
    out
}

/// Hand-made malformed and odd IR texts, around a small valid one.
fn edge_texts(small: &str) -> Vec<(&'static str, Vec<u8>)> {
    let head = "program \"p\"\ndata X: f32[4] input\ndata Y: f32[4] output\n";
    let with = |body: &str| format!("{head}{body}").into_bytes();
    let deep = format!("{}N{}", "(".repeat(100), ")".repeat(100));
    vec![
        ("empty", vec![]),
        ("whitespace", b" \n\t\r\n ".to_vec()),
        ("keyword_only", b"program".to_vec()),
        ("name_only", b"program \"p\"\n".to_vec()),
        ("unterminated_string", b"program \"p".to_vec()),
        ("invalid_utf8", b"program \"\xff\xfe\"\n".to_vec()),
        ("nul_bytes", b"program \"p\0\"\ngraph {\0}\n".to_vec()),
        ("bom", [b"\xef\xbb\xbf".as_slice(), small.as_bytes()].concat()),
        ("crlf", small.replace('\n', "\r\n").into_bytes()),
        ("tabs", small.replace("  ", "\t").into_bytes()),
        ("unbalanced_open", with("graph {\n  n0 access X\n")),
        ("unbalanced_close", with("graph {\n}\n}\n}\n")),
        ("edge_to_missing_node", with("graph {\n  n0 access X\n  n0 -> n99 X[0:4]\n}\n")),
        ("duplicate_node_id", with("graph {\n  n0 access X\n  n0 access Y\n}\n")),
        ("unknown_dtype", b"program \"p\"\ndata X: f128[4] input\ngraph {}\n".to_vec()),
        ("missing_bracket", b"program \"p\"\ndata X: f32[1, N input\ngraph {}\n".to_vec()),
        (
            "huge_integer",
            b"program \"p\"\ndata X: f32[99999999999999999999999999] input\ngraph {}\n".to_vec(),
        ),
        (
            "i64_extremes",
            b"program \"p\"\ndata X: f32[-9223372036854775808, 9223372036854775807] input\ngraph {}\n"
                .to_vec(),
        ),
        ("zero_and_negative_dims", b"program \"p\"\ndata X: f32[0, -1] input\ngraph {}\n".to_vec()),
        (
            "division_by_zero",
            b"program \"p\"\ndata X: f32[N/0, N%0] input\ngraph {}\n".to_vec(),
        ),
        (
            "deep_parentheses",
            format!("program \"p\"\ndata X: f32[{deep}] input\ngraph {{}}\n").into_bytes(),
        ),
        ("unicode_names", "program \"π\"\ndata Ψ: f32[4] input\ngraph {}\n".as_bytes().to_vec()),
        ("subset_reversed", with("graph {\n  n0 access X\n  n1 access Y\n  n0 -> n1 X[4:0]\n}\n")),
        ("subset_out_of_bounds", with("graph {\n  n0 access X\n  n1 access Y\n  n0 -> n1 X[0:400]\n}\n")),
        ("comment_only", b"# nothing here\n".to_vec()),
    ]
}

/// Cuts of `data` at a few places (at character boundaries when it is text).
fn truncations(data: &[u8]) -> Vec<Vec<u8>> {
    let n = data.len();
    let mut cuts = vec![1, n / 4, n / 2, n - 1];
    cuts.dedup();
    cuts.into_iter()
        .filter(|&c| c > 0 && c < n)
        .map(|mut c| {
            if let Ok(text) = std::str::from_utf8(data) {
                while !text.is_char_boundary(c) {
                    c -= 1;
                }
            }
            data[..c].to_vec()
        })
        .collect()
}

/// Regenerates the hand-made part of the regression corpus (idempotent: same names, same bytes;
/// files libFuzzer added stay). Run after changing the generators and commit the result:
///
/// ```text
/// cargo test --test suite fuzz::write_regression_corpus -- --ignored
/// ```
#[test]
#[ignore = "writes tests/fixtures/fuzz; see its doc comment"]
fn write_regression_corpus() {
    let write = |target: &str, name: &str, data: &[u8]| {
        let dir = corpus_dir(target);
        std::fs::create_dir_all(&dir).expect("corpus directory");
        std::fs::write(dir.join(name), data).expect("corpus file");
    };
    let mut rng = ChaCha8Rng::seed_from_u64(2024);

    let models = valid_models();
    for (name, bytes) in &models {
        assert!(import_target(bytes), "valid model `{name}` does not import");
        write("import", &format!("valid-{name}.onnx"), bytes);
    }
    for (name, bytes) in edge_models() {
        write("import", &format!("edge-{name}.onnx"), &bytes);
    }
    for (name, bytes) in models.iter().take(4) {
        for (k, cut) in truncations(bytes).into_iter().enumerate() {
            write("import", &format!("trunc-{name}-{k}.onnx"), &cut);
        }
    }
    for k in 0..16 {
        let (_, seed) = &models[k % models.len()];
        let (_, donor) = &models[(k * 7 + 3) % models.len()];
        let mut input = seed.clone();
        for _ in 0..rng.gen_range(1..5) {
            mutate(&mut input, donor, &mut rng);
        }
        write("import", &format!("mut-{k:02}.onnx"), &input);
    }

    let texts = valid_texts();
    for (name, text) in &texts {
        assert!(ir_text_target(text), "valid text `{name}` does not parse");
        write("ir_text", &format!("valid-{name}.ir"), text);
    }
    let small = std::str::from_utf8(&texts[0].1).expect("text").to_string();
    for (name, text) in edge_texts(&small) {
        write("ir_text", &format!("edge-{name}.ir"), &text);
    }
    for (name, text) in texts.iter().step_by(3) {
        for (k, cut) in truncations(text).into_iter().enumerate() {
            write("ir_text", &format!("trunc-{name}-{k}.ir"), &cut);
        }
    }
    for k in 0..16 {
        let (_, seed) = &texts[k % texts.len()];
        let (_, donor) = &texts[(k * 5 + 1) % texts.len()];
        let mut input = seed.clone();
        for _ in 0..rng.gen_range(1..5) {
            mutate(&mut input, donor, &mut rng);
        }
        write("ir_text", &format!("mut-{k:02}.ir"), &input);
    }
}

// ---------------------------------------------------------------------------------------------
// The recipe language (`fuzz/fuzz_targets/recipe.rs`), replayed and mutated on its own so the
// corpus thresholds above stay those of the other targets.

/// The body of `fuzz/fuzz_targets/recipe.rs`: true when the input parses, in which case the
/// formatter's laws must hold (a broken law panics, like a crash); every input is also loaded
/// and checked.
fn recipe_target(data: &[u8]) -> bool {
    let Ok(text) = std::str::from_utf8(data) else {
        return false;
    };
    match dmove::recipe::fuzz_one(text) {
        None => false,
        Some(Ok(())) => true,
        Some(Err(broken)) => panic!("{broken}"),
    }
}

/// Runs the recipe target on every input, returning (accepted, rejected, panicking files).
fn replay_recipe(inputs: &[(PathBuf, Vec<u8>)]) -> (usize, usize, Vec<String>) {
    let (mut accepted, mut rejected, mut panicked) = (0, 0, Vec::new());
    for (file, data) in inputs {
        match catch_unwind(AssertUnwindSafe(|| recipe_target(data))) {
            Ok(true) => accepted += 1,
            Ok(false) => rejected += 1,
            Err(_) => panicked.push(file.display().to_string()),
        }
    }
    (accepted, rejected, panicked)
}

#[test]
fn recipe_corpus_replays_and_keeps_the_formatter_laws() {
    let inputs = corpus("recipe");
    assert!(
        inputs.len() >= 80,
        "`recipe` has {} corpus inputs",
        inputs.len()
    );
    let (accepted, rejected, panicked) = replay_recipe(&inputs);
    assert!(
        panicked.is_empty(),
        "`recipe` panics again on {panicked:#?}"
    );
    eprintln!(
        "recipe: {} inputs replayed, {accepted} accepted, {rejected} rejected",
        inputs.len()
    );
    assert!(
        accepted >= 20 && rejected >= 30,
        "`recipe`: {accepted} accepted and {rejected} rejected; the corpus needs both kinds"
    );
}

#[test]
#[ignore = "runs for DMOVE_FUZZ_SECS seconds (default 60); see the module docs"]
fn fuzz_recipe_for_a_while() {
    let secs: u64 = std::env::var("DMOVE_FUZZ_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(60);
    let seeds: Vec<Vec<u8>> = corpus("recipe").into_iter().map(|(_, d)| d).collect();
    let mut rng = ChaCha8Rng::seed_from_u64(secs);
    let deadline = Instant::now() + Duration::from_secs(secs);
    let (mut runs, mut crashes) = (0u64, Vec::new());
    while Instant::now() < deadline {
        let mut input = seeds[rng.gen_range(0..seeds.len())].clone();
        let donor = &seeds[rng.gen_range(0..seeds.len())];
        for _ in 0..rng.gen_range(1..8) {
            mutate(&mut input, donor, &mut rng);
        }
        runs += 1;
        if catch_unwind(AssertUnwindSafe(|| recipe_target(&input))).is_err() {
            let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/fuzz-crashes/recipe");
            std::fs::create_dir_all(&dir).expect("crash directory");
            let file = dir.join(hex::encode(&Sha256::digest(&input)[..8]));
            std::fs::write(&file, &input).expect("crash file");
            crashes.push(file);
        }
    }
    eprintln!("recipe: {runs} inputs in {secs}s");
    assert!(crashes.is_empty(), "crashing inputs: {crashes:?}");
}
