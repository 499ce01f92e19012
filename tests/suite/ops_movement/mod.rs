//! Data-movement operators (Concat, Split, Slice, Expand, Tile, Pad, CenterCropPad, Col2Im,
//! Resize, Upsample, DepthToSpace, SpaceToDepth): reference results
//! against hand-computed values, shape-inference errors, expansions against the reference on
//! awkward shapes, and one compiled C program holding every operator.
//! This file holds the shared helpers and the C test; each family has its own module.

mod center_crop_pad;
mod col2im;
mod concat;
mod pad;
mod replicate;
mod resize;
mod slice;
mod space_depth;
mod upsample;

use dmove::check::{compare_outputs, expansion_matches, random_inputs, single_op_program};
use dmove::codegen::Compiled;
use dmove::ir::{Attr, DType, DataDesc, DataKind, LibraryNode, Program, SymExpr, Tensor};
use dmove::ops::{lookup, OpError, TensorType};
use std::collections::BTreeMap;

/// Attributes as written in a test case.
pub type Attrs<'a> = [(&'a str, Attr)];

pub fn attrs(list: &Attrs) -> BTreeMap<String, Attr> {
    list.iter()
        .map(|(k, v)| (k.to_string(), v.clone()))
        .collect()
}

pub fn int_list(v: &[i64]) -> Attr {
    Attr::Ints(v.to_vec())
}

pub fn s(v: &str) -> Attr {
    Attr::Str(v.to_string())
}

/// An f32 tensor type of static shape.
pub fn ty(shape: &[i64]) -> TensorType {
    TensorType::new(DType::F32, shape.iter().map(|&d| SymExpr::Int(d)).collect())
}

/// A tensor type with symbolic dimensions given as names (`"B"`) or numbers (`"4"`).
pub fn sym_ty(shape: &[&str]) -> TensorType {
    let dims = shape
        .iter()
        .map(|d| match d.parse::<i64>() {
            Ok(v) => SymExpr::Int(v),
            Err(_) => SymExpr::sym(*d),
        })
        .collect();
    TensorType::new(DType::F32, dims)
}

pub fn t(shape: &[usize], data: &[f32]) -> Tensor {
    Tensor::f32(shape.to_vec(), data.to_vec())
}

/// `0, 1, 2, …` in `shape` (values that name their own position).
pub fn iota(shape: &[usize]) -> Tensor {
    let n: usize = shape.iter().product();
    Tensor::f32(shape.to_vec(), (0..n).map(|v| v as f32).collect())
}

/// A 1-D i64 tensor.
pub fn ints(values: &[i64]) -> Tensor {
    Tensor::i64(vec![values.len()], values.to_vec())
}

/// A 1-D f32 tensor.
pub fn floats(values: &[f32]) -> Tensor {
    Tensor::f32(vec![values.len()], values.to_vec())
}

/// The type of a concrete tensor.
pub fn type_of(x: &Tensor) -> TensorType {
    TensorType::new(
        x.dtype(),
        x.shape.iter().map(|&d| SymExpr::from(d)).collect(),
    )
}

fn node(op: &str, a: &Attrs) -> LibraryNode {
    LibraryNode {
        op: op.to_string(),
        attrs: attrs(a),
    }
}

/// Runs the reference implementation and returns every output.
pub fn eval_all(op: &str, a: &Attrs, inputs: &[Option<&Tensor>]) -> Result<Vec<Tensor>, OpError> {
    lookup(op)
        .expect("known operator")
        .eval(&node(op, a), inputs)
}

/// Runs the reference implementation of a single-output operator.
pub fn eval(op: &str, a: &Attrs, inputs: &[Option<&Tensor>]) -> Tensor {
    let mut out = eval_all(op, a, inputs).unwrap_or_else(|e| panic!("{op}: {e}"));
    assert_eq!(out.len(), 1);
    out.remove(0)
}

/// Shape inference with input `i` a constant where `consts[i]` is given.
pub fn infer(
    op: &str,
    a: &Attrs,
    inputs: &[Option<TensorType>],
    consts: &[Option<&Tensor>],
) -> Result<Vec<TensorType>, OpError> {
    let mut consts = consts.to_vec();
    consts.resize(inputs.len(), None);
    lookup(op)
        .expect("known operator")
        .infer(&node(op, a), inputs, &consts)
}

/// Shape inference where every input is a constant with the given value (the usual case for
/// the parameter inputs of these operators), and the data input `x` is of type `x`.
pub fn infer_const(
    op: &str,
    a: &Attrs,
    x: TensorType,
    params: &[Option<&Tensor>],
) -> Result<Vec<TensorType>, OpError> {
    let mut types = vec![Some(x)];
    types.extend(params.iter().map(|p| p.map(type_of)));
    let mut consts = vec![None];
    consts.extend_from_slice(params);
    infer(op, a, &types, &consts)
}

/// Asserts the shape and every element (to 1e-5) of a result.
pub fn assert_close(got: &Tensor, shape: &[usize], want: &[f64]) {
    assert_eq!(got.shape, shape, "shape");
    let got = got.to_f64_vec();
    assert_eq!(got.len(), want.len(), "element count");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!((g - w).abs() < 1e-5, "element {i}: got {g}, want {w}");
    }
}

/// Asserts an error of the given kind whose text mentions `needle`.
pub fn assert_err<T: std::fmt::Debug>(r: Result<T, OpError>, kind: &str, needle: &str) {
    let e = r.expect_err("an error");
    let k = match &e {
        OpError::Shape { .. } => "shape",
        OpError::Attr { .. } => "attr",
        OpError::Unsupported { .. } => "unsupported",
        OpError::SymbolicExtent { .. } => "symbolic",
        OpError::Arity { .. } => "arity",
        OpError::NoSuchExpansion { .. } => "expansion",
    };
    assert_eq!(k, kind, "{e}");
    assert!(e.to_string().contains(needle), "`{e}` lacks `{needle}`");
}

/// Expands a single application of `op` and compares it with the reference on random inputs.
/// `inputs[i]` is the type of input `i` (absent when `None`); `consts[i]` makes it a constant.
pub fn agrees(op: &str, a: &Attrs, inputs: &[Option<TensorType>], consts: &[Option<Tensor>]) {
    let p = single_op_program(op, attrs(a), inputs, consts)
        .unwrap_or_else(|e| panic!("{op} {a:?}: {e}"));
    for seed in [1, 2] {
        if let Err(e) = expansion_matches(&p, seed) {
            panic!("{op} {a:?} on {inputs:?}: {e}");
        }
    }
}

/// [`agrees`] for a data input of static shape `x` followed by constant parameter inputs
/// (`None`: absent).
pub fn agrees_const(op: &str, a: &Attrs, x: &[i64], params: &[Option<Tensor>]) {
    let mut types = vec![Some(ty(x))];
    types.extend(params.iter().map(|p| p.as_ref().map(type_of)));
    let mut consts = vec![None];
    consts.extend_from_slice(params);
    agrees(op, a, &types, &consts);
}

/// One library node of the C test: operator, attributes, inputs (type and constant value).
struct Case<'a> {
    op: &'a str,
    attrs: Vec<(&'a str, Attr)>,
    inputs: Vec<(TensorType, Option<Tensor>)>,
}

fn case<'a>(op: &'a str, a: &Attrs<'a>, x: &[i64], params: &[Tensor]) -> Case<'a> {
    let mut inputs = vec![(ty(x), None)];
    inputs.extend(params.iter().map(|p| (type_of(p), Some(p.clone()))));
    Case {
        op,
        attrs: a.to_vec(),
        inputs,
    }
}

/// One program holding independent applications of every operator of this family.
fn every_operator() -> Program {
    let cases = [
        case("Concat", &[("axis", Attr::Int(-2))], &[2, 3, 2], &[]),
        Case {
            op: "Concat",
            attrs: vec![("axis", Attr::Int(1))],
            inputs: vec![(ty(&[2, 1, 3]), None), (ty(&[2, 4, 3]), None)],
        },
        case(
            "Split",
            &[("axis", Attr::Int(1))],
            &[2, 7],
            &[ints(&[3, 0, 4])],
        ),
        case("Split", &[("num_outputs", Attr::Int(3))], &[5, 2], &[]),
        case(
            "Slice",
            &[],
            &[4, 5],
            &[
                ints(&[-1, 1]),
                ints(&[-5, 100]),
                ints(&[0, 1]),
                ints(&[-2, 3]),
            ],
        ),
        case("Slice", &[], &[4, 5], &[ints(&[3]), ints(&[1]), ints(&[1])]),
        case("Expand", &[], &[3, 1], &[ints(&[2, 1, 4])]),
        case("Tile", &[], &[1, 3, 2], &[ints(&[2, 1, 3])]),
        case(
            "Pad",
            &[("mode", s("reflect"))],
            &[2, 3],
            &[ints(&[1, 4, 0, -1])],
        ),
        case("Pad", &[("mode", s("edge"))], &[3], &[ints(&[2, 1])]),
        case(
            "Pad",
            &[("mode", s("wrap"))],
            &[2, 3],
            &[ints(&[3, -1, 1, 4])],
        ),
        Case {
            op: "Pad",
            attrs: Vec::new(),
            inputs: vec![
                (ty(&[2, 3]), None),
                (type_of(&ints(&[1, 0, 0, 2])), Some(ints(&[1, 0, 0, 2]))),
                (ty(&[]), None),
            ],
        },
        case(
            "Resize",
            &[
                ("mode", s("nearest")),
                ("nearest_mode", s("round_prefer_ceil")),
            ],
            &[1, 2, 3, 4],
            &[floats(&[]), floats(&[]), ints(&[1, 2, 5, 3])],
        ),
        case(
            "Resize",
            &[
                ("mode", s("linear")),
                ("coordinate_transformation_mode", s("align_corners")),
            ],
            &[1, 1, 3, 5],
            &[floats(&[]), floats(&[1.0, 1.0, 1.5, 0.6])],
        ),
        case(
            "Resize",
            &[("mode", s("cubic")), ("exclude_outside", Attr::Int(1))],
            &[1, 2, 3, 4],
            &[floats(&[]), floats(&[]), ints(&[1, 2, 5, 3])],
        ),
        case(
            "Resize",
            &[("mode", s("linear")), ("antialias", Attr::Int(1))],
            &[1, 1, 7, 6],
            &[floats(&[]), floats(&[]), ints(&[1, 1, 3, 4])],
        ),
        case(
            "Upsample",
            &[("mode", s("linear"))],
            &[1, 2, 3, 2],
            &[floats(&[1.0, 1.0, 2.5, 2.0])],
        ),
        case(
            "Upsample",
            &[("scales", Attr::Floats(vec![1.0, 3.0, 2.0]))],
            &[2, 3, 2],
            &[],
        ),
    ];
    let mut p = Program::new("movement");
    let mut nodes = Vec::new();
    for (k, c) in cases.iter().enumerate() {
        let mut ins = Vec::new();
        for (i, (t, value)) in c.inputs.iter().enumerate() {
            let name = format!("n{k}_x{i}");
            let kind = if value.is_some() {
                DataKind::Constant
            } else {
                DataKind::Input
            };
            p.data
                .insert(name.clone(), DataDesc::new(t.dtype, t.shape.clone(), kind));
            match value {
                Some(v) => {
                    p.constants.insert(name.clone(), v.clone().into());
                }
                None => p.inputs.push(name.clone()),
            }
            ins.push(name);
        }
        let types: Vec<Option<TensorType>> =
            c.inputs.iter().map(|(t, _)| Some(t.clone())).collect();
        let consts: Vec<Option<&Tensor>> = c.inputs.iter().map(|(_, v)| v.as_ref()).collect();
        let outs = infer(c.op, &c.attrs, &types, &consts).unwrap_or_else(|e| panic!("{e}"));
        let mut out_names = Vec::new();
        for (j, t) in outs.iter().enumerate() {
            let name = format!("n{k}_y{j}");
            p.data.insert(
                name.clone(),
                DataDesc::new(t.dtype, t.shape.clone(), DataKind::Output),
            );
            p.outputs.push(name.clone());
            out_names.push(name);
        }
        nodes.push((
            format!("{}_{k}", c.op),
            c.op,
            attrs(&c.attrs),
            ins,
            out_names,
        ));
    }
    p.build(|b| {
        for (label, op, a, ins, outs) in &nodes {
            let ins: Vec<Option<&str>> = ins.iter().map(|n| Some(n.as_str())).collect();
            let outs: Vec<&str> = outs.iter().map(String::as_str).collect();
            b.library(label, op, a.clone(), &ins, &outs);
        }
    });
    p
}

/// Every operator of the family in one C program, compiled once, against the interpreter
/// running the reference implementations.
#[test]
fn one_c_program_matches_the_reference() {
    let p = every_operator();
    dmove::ir::validate::validate(&p).expect("valid program");
    let mut lowered = p.clone();
    dmove::ops::expand::expand_all(&mut lowered).expect("expands");
    dmove::ir::validate::validate(&lowered).expect("valid expansion");
    let compiled = Compiled::build(&lowered).expect("compiles");
    for seed in [3, 4] {
        let inputs = random_inputs(&p, seed).expect("inputs");
        let got = compiled.run(&inputs).expect("runs");
        let want = dmove::interp::run(&p, &inputs).expect("interprets");
        assert_eq!(got.len(), p.outputs.len());
        compare_outputs(&got, &want).unwrap_or_else(|e| panic!("{e}"));
    }
}
