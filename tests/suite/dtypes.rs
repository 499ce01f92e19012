//! The element types beyond f32/f64/i64/i32/bool, end to end: ONNX models built in memory,
//! imported, run by the operators' reference `eval`, by the interpreter on the lowered maps and
//! by the generated C, each compared with values worked out by hand from the storage rules
//! (integers wrap, 4-bit integers clip, narrow floats round to nearest-even, float8 saturates).
//! All cases share one model, so the C compiler runs once.

use dmove::codegen::{BuildConfig, Compiled};
use dmove::interp;
use dmove::ir::text::{parse, print_exact};
use dmove::ir::{Buffer, DType, Program, Tensor};
use dmove::onnx::{import, load_model, AttrValue, ImportOptions, ModelBuilder};
use std::collections::BTreeMap;
use std::path::PathBuf;

/// One case: a node `op(inputs…) -> out` over typed 1-D tensors with the expected output.
struct Case {
    op: &'static str,
    inputs: Vec<Tensor>,
    attrs: Vec<(&'static str, AttrValue)>,
    expected: Tensor,
}

fn t(dtype: DType, values: &[f64]) -> Tensor {
    Tensor::from_f64(dtype, vec![values.len()], values)
}

fn case(op: &'static str, inputs: Vec<Tensor>, expected: Tensor) -> Case {
    Case {
        op,
        inputs,
        attrs: vec![],
        expected,
    }
}

fn cast(x: Tensor, to: i64, saturate: Option<i64>, expected: Tensor) -> Case {
    let mut attrs = vec![("to", AttrValue::Int(to))];
    if let Some(s) = saturate {
        attrs.push(("saturate", AttrValue::Int(s)));
    }
    Case {
        op: "Cast",
        inputs: vec![x],
        attrs,
        expected,
    }
}

fn cases() -> Vec<Case> {
    use DType::*;
    let third = f64::from(1.0f32 / 3.0);
    vec![
        // uint8: 200 + 100 = 300 wraps to 44; 255 + 1 to 0.
        case(
            "Add",
            vec![t(U8, &[200.0, 10.0, 255.0]), t(U8, &[100.0, 20.0, 1.0])],
            t(U8, &[44.0, 30.0, 0.0]),
        ),
        case(
            "Max",
            vec![t(I8, &[-128.0, 5.0, 127.0]), t(I8, &[3.0, -7.0, 100.0])],
            t(I8, &[3.0, 5.0, 127.0]),
        ),
        case(
            "Min",
            vec![t(I8, &[-128.0, 5.0, 127.0]), t(I8, &[3.0, -7.0, 100.0])],
            t(I8, &[-128.0, -7.0, 100.0]),
        ),
        // int16: -32768 - 1 wraps to 32767; integer division truncates toward zero.
        case(
            "Sub",
            vec![t(I16, &[-32768.0, 7.0]), t(I16, &[1.0, 9.0])],
            t(I16, &[32767.0, -2.0]),
        ),
        case(
            "Div",
            vec![t(I16, &[7.0, -7.0]), t(I16, &[2.0, 2.0])],
            t(I16, &[3.0, -3.0]),
        ),
        case(
            "Mul",
            vec![t(U16, &[300.0, 2.0]), t(U16, &[300.0, 3.0])],
            t(U16, &[90000.0 - 65536.0, 6.0]),
        ),
        // uint32: 2^16 · 2^16 wraps to 0; uint64 keeps 3e9 · 3 exactly.
        case(
            "Mul",
            vec![t(U32, &[65536.0, 5.0]), t(U32, &[65536.0, 7.0])],
            t(U32, &[0.0, 35.0]),
        ),
        case(
            "Mul",
            vec![t(U64, &[3e9, 0.0]), t(U64, &[3.0, 1.0])],
            t(U64, &[9e9, 0.0]),
        ),
        // f16: 1/3 rounds to 0x3555 = 0.333251953125; 2048 + 1 ties to even (2048).
        case(
            "Div",
            vec![t(F16, &[1.0, 2049.0]), t(F16, &[3.0, 1.0])],
            t(F16, &[0.333_251_953_125, 2048.0]),
        ),
        case(
            "Add",
            vec![t(F16, &[2048.0, 65504.0]), t(F16, &[1.0, 32.0])],
            t(F16, &[2048.0, f64::INFINITY]),
        ),
        // bf16 keeps 8 significant bits: 1 + 1/256 ties to 1, 1 + 3/256 to 1 + 1/64.
        case(
            "Add",
            vec![t(BF16, &[1.0, 1.0]), t(BF16, &[1.0 / 256.0, 3.0 / 256.0])],
            t(BF16, &[1.0, 1.015_625]),
        ),
        cast(t(F32, &[third]), 10, None, t(F16, &[0.333_251_953_125])),
        cast(
            t(F16, &[0.333_251_953_125]),
            1,
            None,
            t(F32, &[0.333_251_953_125]),
        ),
        cast(t(U8, &[250.0]), 16, None, t(BF16, &[250.0])),
        cast(t(F32, &[300.0, -1.0]), 2, None, t(U8, &[44.0, 255.0])),
        // float8 e4m3fn saturates by default: 1000 and ∞ become 448; -0.3 rounds to -0.3125.
        cast(
            t(F32, &[1000.0, -0.3, f64::INFINITY, f64::NAN]),
            17,
            None,
            t(F8E4M3FN, &[448.0, -0.3125, 448.0, f64::NAN]),
        ),
        // Without saturation e5m2 overflows to infinity and e4m3fnuz to NaN.
        cast(
            t(F32, &[1e6, 3.0]),
            19,
            Some(0),
            t(F8E5M2, &[f64::INFINITY, 3.0]),
        ),
        cast(
            t(F32, &[1e6, -0.0]),
            18,
            Some(0),
            t(F8E4M3FNUZ, &[f64::NAN, 0.0]),
        ),
        cast(t(F32, &[1e6]), 20, None, t(F8E5M2FNUZ, &[57344.0])),
        // Out-of-range floats saturate into i64 (a plain C cast would be undefined); narrower
        // integers then wrap.
        cast(
            t(F32, &[3e19, -3e19, -7.9]),
            7,
            None,
            t(I64, &[i64::MAX as f64, i64::MIN as f64, -7.0]),
        ),
        cast(t(F64, &[300.0, -129.0]), 3, None, t(I8, &[44.0, 127.0])),
        // Min/Max reductions start from the type's extremes (i64's maximum included).
        case(
            "ReduceMin",
            vec![t(I64, &[5.0, -3.0, 9.0])],
            t(I64, &[-3.0]),
        ),
        case(
            "ReduceMax",
            vec![t(U8, &[5.0, 200.0, 9.0])],
            t(U8, &[200.0]),
        ),
        case("ReduceMin", vec![t(I16, &[5.0, 20.0, 9.0])], t(I16, &[5.0])),
        // Mod: Python's floored remainder by default (integers), C's fmod with fmod = 1.
        case(
            "Mod",
            vec![
                t(I8, &[-4.0, 7.0, 5.0, -7.0]),
                t(I8, &[3.0, -3.0, 5.0, -3.0]),
            ],
            t(I8, &[2.0, -2.0, 0.0, -1.0]),
        ),
        Case {
            attrs: vec![("fmod", AttrValue::Int(1))],
            ..case(
                "Mod",
                vec![t(I16, &[-4.0, 7.0]), t(I16, &[3.0, -3.0])],
                t(I16, &[-1.0, 1.0]),
            )
        },
        Case {
            attrs: vec![("fmod", AttrValue::Int(1))],
            ..case(
                "Mod",
                vec![t(F16, &[5.5, -5.5, -7.75]), t(F16, &[-2.0, 2.0, 2.5])],
                t(F16, &[1.5, -1.5, -0.25]),
            )
        },
        // 8-bit max pooling: padding (the -inf start) saturates to the type's minimum.
        Case {
            attrs: vec![
                ("kernel_shape", AttrValue::Ints(vec![3])),
                ("pads", AttrValue::Ints(vec![1, 1])),
            ],
            ..case(
                "MaxPool",
                vec![Tensor::from_f64(U8, vec![1, 1, 4], &[0.0, 3.0, 250.0, 1.0])],
                Tensor::from_f64(U8, vec![1, 1, 4], &[3.0, 250.0, 250.0, 250.0]),
            )
        },
        Case {
            attrs: vec![
                ("kernel_shape", AttrValue::Ints(vec![2])),
                ("strides", AttrValue::Ints(vec![2])),
            ],
            ..case(
                "MaxPool",
                vec![Tensor::from_f64(
                    I8,
                    vec![1, 1, 4],
                    &[-100.0, -7.0, -128.0, -3.0],
                )],
                Tensor::from_f64(I8, vec![1, 1, 2], &[-7.0, -3.0]),
            )
        },
        Case {
            attrs: vec![("keepdims", AttrValue::Int(0))],
            ..case(
                "ReduceMax",
                vec![t(I8, &[-100.0, -7.0, -128.0])],
                Tensor::from_f64(I8, vec![], &[-7.0]),
            )
        },
        // 4-bit integers clip and round half to even.
        cast(
            t(F32, &[9.0, 2.5, -8.6, 3.5]),
            22,
            None,
            t(I4, &[7.0, 2.0, -8.0, 4.0]),
        ),
        cast(t(F32, &[-1.0, 15.4]), 21, None, t(U4, &[0.0, 15.0])),
        cast(
            t(I4, &[-8.0, 7.0, -1.0]),
            1,
            None,
            t(F32, &[-8.0, 7.0, -1.0]),
        ),
    ]
}

fn dims(t: &Tensor) -> Vec<i64> {
    t.shape.iter().map(|&d| d as i64).collect()
}

/// The model: every case's inputs are graph inputs, except 4-bit and float8 ones, which are
/// initializers (exercising the packed `raw_data` path).
fn model(cases: &[Case]) -> (ModelBuilder, BTreeMap<String, Tensor>) {
    let mut m = ModelBuilder::new("dtypes", 21);
    let mut feed = BTreeMap::new();
    for (k, c) in cases.iter().enumerate() {
        let mut names = Vec::new();
        for (i, x) in c.inputs.iter().enumerate() {
            let name = format!("x{k}_{i}");
            if matches!(x.dtype(), DType::I4 | DType::U4) {
                m = m.initializer_tensor(&name, x);
            } else {
                m = m.input_typed(&name, x.dtype(), dims(x));
                feed.insert(name.clone(), x.clone());
            }
            names.push(name);
        }
        let out = format!("y{k}");
        let inputs: Vec<&str> = names.iter().map(String::as_str).collect();
        let attrs = c.attrs.iter().map(|(n, v)| (*n, v.clone())).collect();
        m = m.node(c.op, &inputs, &[&out], attrs).output_typed(
            &out,
            c.expected.dtype(),
            dims(&c.expected),
        );
    }
    (m, feed)
}

/// Exact agreement (NaN matches NaN): every case is specified to the last bit.
fn check(backend: &str, outputs: &BTreeMap<String, Tensor>, cases: &[Case]) {
    for (k, c) in cases.iter().enumerate() {
        let got = &outputs[&format!("y{k}")];
        assert_eq!(
            got.dtype(),
            c.expected.dtype(),
            "{backend}: case {k} ({})",
            c.op
        );
        let (g, e) = (got.to_f64_vec(), c.expected.to_f64_vec());
        let same = g
            .iter()
            .zip(&e)
            .all(|(a, b)| a == b || a.is_nan() && b.is_nan());
        assert!(
            same,
            "{backend}: case {k} ({}) gave {g:?}, expected {e:?}",
            c.op
        );
    }
}

#[test]
fn every_dtype_through_eval_interpreter_and_c() {
    let cases = cases();
    let (m, feed) = model(&cases);
    let model = load_model(&m.encode()).expect("loads");
    let p = import(&model, &ImportOptions::default()).expect("imports");
    check("eval", &interp::run(&p, &feed).expect("evaluates"), &cases);
    let mut lowered = p.clone();
    dmove::ops::expand::expand_all(&mut lowered).expect("expands");
    check(
        "interpreter",
        &interp::run(&lowered, &feed).expect("interprets"),
        &cases,
    );
    let mut config = BuildConfig::from_env();
    config.cache = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("codegen-cache");
    let compiled = Compiled::build_with(&lowered, &config)
        .expect("builds")
        .run(&feed)
        .expect("runs");
    check("C", &compiled, &cases);
}

#[test]
fn new_dtypes_round_trip_through_the_text_form() {
    let mut p = Program::new("consts");
    for (k, d) in DType::ALL.into_iter().enumerate() {
        let values = if d.is_float() {
            vec![0.5, -2.0, f64::NAN, 1.0 / 3.0]
        } else if d == DType::Bool {
            vec![1.0, 0.0, 1.0, 1.0]
        } else {
            let (lo, hi) = d.int_range().unwrap();
            vec![lo, hi, 0.0, 1.0]
        };
        let name = format!("c{k}_{}", d.name());
        p.data.insert(
            name.clone(),
            dmove::ir::DataDesc::new(d, vec![4.into()], dmove::ir::DataKind::Constant),
        );
        p.constants
            .insert(name, Tensor::from_f64(d, vec![4], &values).into());
    }
    let text = print_exact(&p);
    for d in DType::ALL {
        assert!(
            text.contains(&format!(": {}[4]", d.name())),
            "{d} in\n{text}"
        );
    }
    let back = parse(&text).expect("parses").program;
    for (name, c) in &p.constants {
        let b = &back.constants[name];
        assert_eq!(b.dtype(), c.dtype(), "{name}");
        assert_eq!(b.to_le_bytes(), c.to_le_bytes(), "{name}");
    }
    // u64's maximum survives (it is kept as its bit pattern, not as an f64).
    assert!(matches!(
        &back.constants["c10_u64"].data,
        Buffer::Int(DType::U64, v) if v[1] == -1
    ));
    // Out-of-range integers are refused with a typed error.
    let bad = text.replace("[-128, 127, 0, 1]", "[-129, 127, 0, 1]");
    assert_ne!(bad, text);
    assert!(parse(&bad).is_err());
}

/// The typed repeated fields of `TensorProto`: narrow integers and float bit patterns in
/// `int32_data` (4-bit integers packed two per entry), u32/u64 in `uint64_data`; a packed
/// `raw_data` of the wrong length is a typed error.
#[test]
fn onnx_typed_fields_and_packed_int4_decode() {
    use dmove::onnx::proto::TensorProto;
    use dmove::onnx::tensor::decode_tensor;
    let proto = |code: i32, dims: &[i64]| TensorProto {
        name: Some("t".into()),
        dims: dims.to_vec(),
        data_type: Some(code),
        ..TensorProto::default()
    };
    let values = |p: &TensorProto| decode_tensor(p, "t", None).expect("decodes").to_f64_vec();
    let f16 = TensorProto {
        int32_data: vec![0x3c00, 0xc000, 0x3555],
        ..proto(10, &[3])
    };
    assert_eq!(values(&f16), [1.0, -2.0, 0.333_251_953_125]);
    let i8s = TensorProto {
        int32_data: vec![-128, 127],
        ..proto(3, &[2])
    };
    assert_eq!(values(&i8s), [-128.0, 127.0]);
    let u64s = TensorProto {
        uint64_data: vec![u64::MAX, 7],
        ..proto(13, &[2])
    };
    assert_eq!(values(&u64s), [u64::MAX as f64, 7.0]);
    // Three int4 values -1, 7, -8 packed as 0x7f, 0x08 (low nibble first).
    let i4 = TensorProto {
        int32_data: vec![0x7f, 0x08],
        ..proto(22, &[3])
    };
    assert_eq!(values(&i4), [-1.0, 7.0, -8.0]);
    let u4_raw = TensorProto {
        raw_data: Some(vec![0x7f, 0x08]),
        ..proto(21, &[3])
    };
    assert_eq!(values(&u4_raw), [15.0, 7.0, 8.0]);
    let short = TensorProto {
        raw_data: Some(vec![0x7f]),
        ..proto(21, &[3])
    };
    let err = decode_tensor(&short, "t", None).unwrap_err().to_string();
    assert!(
        err.contains("2 bytes") && err.contains("has 1 bytes"),
        "{err}"
    );
    let string = proto(8, &[1]);
    let err = decode_tensor(&string, "t", None).unwrap_err().to_string();
    assert!(
        err.contains("element type STRING") && err.contains("does not support"),
        "{err}"
    );
}

/// Opset 28 defines the floored remainder (`fmod = 0`, Python's `%`) for floats too: the
/// result takes the sign of the divisor.
#[test]
fn float_mod_floors_like_python() {
    let m = ModelBuilder::new("mod", 28)
        .input("a", [4])
        .input("b", [4])
        .node("Mod", &["a", "b"], &["y"], vec![])
        .output("y", [4]);
    let model = load_model(&m.encode()).expect("loads");
    let p = import(&model, &ImportOptions::default()).expect("imports");
    let feeds = BTreeMap::from([
        (
            "a".to_string(),
            Tensor::f32(vec![4], vec![5.5, -5.5, 5.5, -5.5]),
        ),
        (
            "b".to_string(),
            Tensor::f32(vec![4], vec![2.0, 2.0, -2.0, -2.0]),
        ),
    ]);
    let y = interp::run(&p, &feeds).expect("runs")["y"].to_f64_vec();
    assert_eq!(y, [1.5, 0.5, -0.5, -1.5]);
}
