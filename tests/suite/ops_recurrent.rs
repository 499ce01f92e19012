//! The recurrent operators LSTM, GRU and RNN: hand-checked values, shape inference and its
//! errors, and their expansions (sequential time maps) against the reference implementation,
//! in the interpreter and compiled to C, on awkward shapes: odd hidden sizes, batch 1 and 3,
//! sequence 1 and 5, both directions, batch-major layout, every optional input.

use dmove::check::{add_op, compare_outputs, expansion_matches, random_inputs, single_op_program};
use dmove::codegen::Compiled;
use dmove::ir::{Attr, DType, LibraryNode, Program, SymExpr, Tensor};
use dmove::ops::{lookup, TensorType};
use std::collections::BTreeMap;

fn f32t(shape: &[usize]) -> Option<TensorType> {
    Some(TensorType::new(
        DType::F32,
        shape.iter().map(|&d| SymExpr::from(d)).collect(),
    ))
}

fn attrs(list: &[(&str, Attr)]) -> BTreeMap<String, Attr> {
    list.iter()
        .map(|(k, v)| (k.to_string(), v.clone()))
        .collect()
}

fn strs(names: &[&str]) -> Attr {
    Attr::Strs(names.iter().map(|s| s.to_string()).collect())
}

/// One recurrent application: its operator, attributes, input types and constant inputs.
struct Case {
    op: &'static str,
    attrs: BTreeMap<String, Attr>,
    inputs: Vec<Option<TensorType>>,
    consts: Vec<Option<Tensor>>,
}

/// Which optional inputs a case has.
#[derive(Clone, Copy, Default)]
struct Optional {
    bias: bool,
    initial: bool,
    peephole: bool,
    /// Constant sequence lengths, one per batch entry.
    lens: Option<&'static [i32]>,
}

/// `op` over a sequence of `seq` steps, `batch` entries, `input` features and `hidden` units.
#[allow(clippy::too_many_arguments)]
fn case(
    op: &'static str,
    direction: &str,
    (seq, batch, input, hidden): (usize, usize, usize, usize),
    batch_major: bool,
    opt: Optional,
    extra: &[(&str, Attr)],
) -> Case {
    let gates = match op {
        "LSTM" => 4,
        "GRU" => 3,
        _ => 1,
    };
    let dirs = if direction == "bidirectional" { 2 } else { 1 };
    let x = if batch_major {
        [batch, seq, input]
    } else {
        [seq, batch, input]
    };
    let state = if batch_major {
        [batch, dirs, hidden]
    } else {
        [dirs, batch, hidden]
    };
    let mut inputs = vec![
        f32t(&x),
        f32t(&[dirs, gates * hidden, input]),
        f32t(&[dirs, gates * hidden, hidden]),
        opt.bias
            .then(|| f32t(&[dirs, 2 * gates * hidden]))
            .flatten(),
        opt.lens
            .map(|l| TensorType::new(DType::I32, vec![SymExpr::from(l.len())])),
        opt.initial.then(|| f32t(&state)).flatten(),
    ];
    let mut consts: Vec<Option<Tensor>> = vec![None; inputs.len()];
    consts[4] = opt.lens.map(|l| {
        Tensor::from_f64(
            DType::I32,
            vec![l.len()],
            &l.iter().map(|&v| f64::from(v)).collect::<Vec<_>>(),
        )
    });
    if op == "LSTM" {
        inputs.push(opt.initial.then(|| f32t(&state)).flatten());
        inputs.push(opt.peephole.then(|| f32t(&[dirs, 3 * hidden])).flatten());
        consts.extend([None, None]);
    }
    while inputs.last() == Some(&None) {
        inputs.pop();
        consts.pop();
    }
    let mut a = vec![
        ("direction", Attr::Str(direction.into())),
        ("hidden_size", Attr::Int(hidden as i64)),
        ("layout", Attr::Int(i64::from(batch_major))),
    ];
    a.extend(extra.iter().cloned());
    Case {
        op,
        attrs: attrs(&a),
        inputs,
        consts,
    }
}

fn all_optional() -> Optional {
    Optional {
        bias: true,
        initial: true,
        peephole: true,
        lens: None,
    }
}

/// The awkward cases every check runs.
fn cases() -> Vec<Case> {
    let none = Optional::default();
    let full = all_optional();
    let short = Optional {
        bias: true,
        lens: Some(&[5, 2, 0]),
        ..Optional::default()
    };
    let mut v = Vec::new();
    for op in ["LSTM", "GRU", "RNN"] {
        v.push(case(op, "forward", (5, 3, 2, 3), false, none, &[]));
        v.push(case(op, "reverse", (1, 1, 4, 5), false, full, &[]));
        v.push(case(op, "bidirectional", (5, 3, 3, 1), false, full, &[]));
        v.push(case(op, "bidirectional", (5, 1, 2, 3), true, full, &[]));
        v.push(case(op, "forward", (5, 3, 2, 3), true, short, &[]));
        v.push(case(
            op,
            "forward",
            (4, 3, 2, 3),
            false,
            full,
            &[("clip", Attr::Float(0.3))],
        ));
    }
    v.push(case(
        "LSTM",
        "forward",
        (5, 3, 2, 3),
        false,
        full,
        &[("input_forget", Attr::Int(1))],
    ));
    v.push(case(
        "GRU",
        "bidirectional",
        (5, 3, 2, 3),
        true,
        full,
        &[("linear_before_reset", Attr::Int(1))],
    ));
    let acts = [
        (
            "activations",
            strs(&[
                "HardSigmoid",
                "ScaledTanh",
                "Affine",
                "LeakyRelu",
                "Elu",
                "Softsign",
            ]),
        ),
        ("activation_alpha", Attr::Floats(vec![0.3, 0.8, 0.5, 0.2])),
        ("activation_beta", Attr::Floats(vec![0.4, 1.5])),
    ];
    v.push(case(
        "LSTM",
        "bidirectional",
        (3, 3, 2, 3),
        false,
        full,
        &acts,
    ));
    let acts = [
        (
            "activations",
            strs(&["Softplus", "relu", "ThresholdedRelu", "Tanh"]),
        ),
        ("activation_alpha", Attr::Floats(vec![0.1])),
    ];
    v.push(case(
        "GRU",
        "bidirectional",
        (3, 3, 2, 3),
        false,
        full,
        &acts,
    ));
    v.push(case(
        "RNN",
        "forward",
        (3, 3, 2, 3),
        false,
        full,
        &[("activations", strs(&["Relu"]))],
    ));
    v
}

#[test]
fn expansions_match_the_reference_in_the_interpreter() {
    for (k, c) in cases().iter().enumerate() {
        let p = single_op_program(c.op, c.attrs.clone(), &c.inputs, &c.consts)
            .unwrap_or_else(|e| panic!("case {k} ({}): {e}", c.op));
        expansion_matches(&p, 7)
            .unwrap_or_else(|e| panic!("case {k} ({} {:?}): {e}", c.op, c.attrs));
    }
}

#[test]
fn expansions_compiled_to_c_match_the_reference() {
    let mut p = Program::new("recurrent");
    for (k, c) in cases().iter().enumerate() {
        add_op(
            &mut p,
            &format!("c{k}_"),
            c.op,
            c.attrs.clone(),
            &c.inputs,
            &c.consts,
        )
        .unwrap_or_else(|e| panic!("case {k} ({}): {e}", c.op));
    }
    let inputs = random_inputs(&p, 3).expect("inputs");
    let want = dmove::interp::run(&p, &inputs).expect("reference runs");
    let mut lowered = p.clone();
    dmove::ops::expand::expand_all(&mut lowered).expect("expands");
    dmove::ir::validate::validate(&lowered).expect("lowered program is valid");
    let got = Compiled::build(&lowered)
        .expect("compiles")
        .run(&inputs)
        .expect("runs");
    assert_eq!(got.len(), want.len(), "outputs of the C program");
    compare_outputs(&got, &want).expect("C matches the reference for every case");
}

fn node(op: &str, a: &[(&str, Attr)]) -> LibraryNode {
    LibraryNode {
        op: op.to_string(),
        attrs: attrs(a),
    }
}

fn scalar3(v: f32) -> Tensor {
    Tensor::f32(vec![1, 1, 1], vec![v])
}

#[test]
fn one_unit_cells_compute_their_formulas() {
    let (x, w, r) = (scalar3(2.0), scalar3(0.5), scalar3(-1.0));
    let h0 = scalar3(0.25);
    let sig = |v: f64| 1.0 / (1.0 + (-v).exp());
    let run = |op: &str, inputs: &[Option<&Tensor>]| {
        let out = lookup(op).unwrap().eval(&node(op, &[]), inputs).unwrap();
        out.iter().map(|t| t.get_f64(0)).collect::<Vec<_>>()
    };
    // RNN: tanh(x·w + h0·r).
    let rnn = run(
        "RNN",
        &[Some(&x), Some(&w), Some(&r), None, None, Some(&h0)],
    );
    let want = (2.0f64 * 0.5 - 0.25).tanh();
    assert!(
        (rnn[0] - want).abs() < 1e-6 && (rnn[1] - want).abs() < 1e-6,
        "{rnn:?}"
    );
    // GRU: z = r = σ(1 − 0.25); h̃ = tanh(1 + (r·h0)·(−1)); H = (1 − z)·h̃ + z·h0.
    let (w3, r3) = (
        Tensor::f32(vec![1, 3, 1], vec![0.5; 3]),
        Tensor::f32(vec![1, 3, 1], vec![-1.0; 3]),
    );
    let gru = run(
        "GRU",
        &[Some(&x), Some(&w3), Some(&r3), None, None, Some(&h0)],
    );
    let g = sig(0.75);
    let want = (1.0 - g) * (1.0 - g * 0.25).tanh() + g * 0.25;
    assert!((gru[0] - want).abs() < 1e-6, "{gru:?} vs {want}");
    // LSTM with C0 = 1: every gate sees 0.75; C = σ·1 + σ·tanh(0.75); H = σ·tanh(C).
    let (w4, r4) = (
        Tensor::f32(vec![1, 4, 1], vec![0.5; 4]),
        Tensor::f32(vec![1, 4, 1], vec![-1.0; 4]),
    );
    let c0 = scalar3(1.0);
    let lstm = run(
        "LSTM",
        &[
            Some(&x),
            Some(&w4),
            Some(&r4),
            None,
            None,
            Some(&h0),
            Some(&c0),
        ],
    );
    let c = sig(0.75) + sig(0.75) * 0.75f64.tanh();
    assert!((lstm[2] - c).abs() < 1e-6, "{lstm:?}");
    assert!((lstm[1] - sig(0.75) * c.tanh()).abs() < 1e-6, "{lstm:?}");
}

#[test]
fn shapes_follow_direction_and_layout() {
    let c = case(
        "LSTM",
        "bidirectional",
        (5, 3, 2, 7),
        true,
        all_optional(),
        &[],
    );
    let consts: Vec<Option<&Tensor>> = c.consts.iter().map(Option::as_ref).collect();
    let out = lookup("LSTM")
        .unwrap()
        .infer(
            &LibraryNode {
                op: "LSTM".into(),
                attrs: c.attrs.clone(),
            },
            &c.inputs,
            &consts,
        )
        .unwrap();
    let dims: Vec<Vec<i64>> = out
        .iter()
        .map(|t| t.shape.iter().map(|d| d.as_int().unwrap()).collect())
        .collect();
    assert_eq!(dims, vec![vec![3, 5, 2, 7], vec![3, 2, 7], vec![3, 2, 7]]);
}

fn infer_error(c: &Case) -> String {
    let consts: Vec<Option<&Tensor>> = c.consts.iter().map(Option::as_ref).collect();
    let n = LibraryNode {
        op: c.op.into(),
        attrs: c.attrs.clone(),
    };
    match lookup(c.op).unwrap().infer(&n, &c.inputs, &consts) {
        Ok(t) => panic!("expected an error, got {t:?}"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn bad_attributes_and_shapes_are_named() {
    let none = Optional::default();
    let mut c = case(
        "GRU",
        "forward",
        (2, 1, 2, 3),
        false,
        none,
        &[("activations", strs(&["Sigmoid", "Swish"]))],
    );
    assert!(
        infer_error(&c).contains("unknown activation `Swish`"),
        "{}",
        infer_error(&c)
    );
    c.attrs.insert("activations".into(), strs(&["Tanh"]));
    assert!(
        infer_error(&c).contains("expected 2 names"),
        "{}",
        infer_error(&c)
    );
    let c = case("RNN", "sideways", (2, 1, 2, 3), false, none, &[]);
    assert!(infer_error(&c).contains("direction"), "{}", infer_error(&c));
    let mut c = case("LSTM", "forward", (2, 1, 2, 3), false, none, &[]);
    c.inputs[1] = f32t(&[1, 11, 2]);
    assert!(
        infer_error(&c).contains("W must have shape [1, 12, 2]"),
        "{}",
        infer_error(&c)
    );
    let c = case(
        "RNN",
        "forward",
        (2, 1, 2, 3),
        false,
        none,
        &[("hidden_size", Attr::Int(4))],
    );
    assert!(
        infer_error(&c).contains("hidden_size"),
        "{}",
        infer_error(&c)
    );
}

#[test]
fn sequence_lengths_known_only_at_run_time_are_refused_by_name() {
    // The expansion of `op` walking `direction` with sequence lengths `lens` (a constant when
    // `constant`).
    let expand = |op: &'static str, direction: &str, lens: &'static [i32], constant: bool| {
        let opt = Optional {
            lens: Some(lens),
            ..Optional::default()
        };
        let mut c = case(op, direction, (4, 2, 2, 3), false, opt, &[]);
        if !constant {
            c.consts[4] = None;
        }
        let p = single_op_program(c.op, c.attrs.clone(), &c.inputs, &c.consts).unwrap();
        expansion_matches(&p, 1)
            .map(|_| ())
            .map_err(|e| e.to_string())
    };
    let err = expand("RNN", "forward", &[4, 1], false).expect_err("a data-dependent length");
    assert!(
        err.contains("input 4 (sequence_lens) must be a constant"),
        "{err}"
    );
    // Short entries of a reverse walk are refused too; full-length entries change nothing.
    let err = expand("RNN", "reverse", &[4, 1], true).expect_err("reverse with short entries");
    assert!(err.contains("sequence_lens"), "{err}");
    expand("GRU", "reverse", &[4, 4], true).expect("full lengths expand");
}
