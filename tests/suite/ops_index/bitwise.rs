use super::{check_expansion, eval1, infer_err, run_expanded, ty};
use dmove::ir::{Attr, DType, Tensor};

/// An integer tensor of `dtype` (values must fit).
pub fn ints(dtype: DType, shape: &[usize], values: &[i64]) -> Tensor {
    let v: Vec<f64> = values.iter().map(|&x| x as f64).collect();
    Tensor::from_f64(dtype, shape.to_vec(), &v)
}

fn direction(d: &str) -> Vec<(&'static str, Attr)> {
    vec![("direction", Attr::Str(d.into()))]
}

/// The reference and the expansion (interpreted) both give `want`.
fn both(op: &str, a: &[(&str, Attr)], inputs: &[&Tensor], want: &Tensor) {
    assert_eq!(&eval1(op, a, inputs), want, "{op} reference");
    assert_eq!(&run_expanded(op, a, inputs, &[])[0], want, "{op} expansion");
}

#[test]
fn and_or_xor_not_on_signed_and_unsigned_integers() {
    let a = ints(DType::U8, &[4], &[0b1100, 0b1010, 255, 0]);
    let b = ints(DType::U8, &[4], &[0b1010, 0b0110, 15, 0]);
    both(
        "BitwiseAnd",
        &[],
        &[&a, &b],
        &ints(DType::U8, &[4], &[8, 2, 15, 0]),
    );
    both(
        "BitwiseOr",
        &[],
        &[&a, &b],
        &ints(DType::U8, &[4], &[14, 14, 255, 0]),
    );
    both(
        "BitwiseXor",
        &[],
        &[&a, &b],
        &ints(DType::U8, &[4], &[6, 12, 240, 0]),
    );
    both(
        "BitwiseNot",
        &[],
        &[&a],
        &ints(DType::U8, &[4], &[243, 245, 0, 255]),
    );
    // Two's complement for signed types, with broadcasting.
    let s = ints(DType::I8, &[2, 1], &[-1, -128]);
    let m = ints(DType::I8, &[3], &[5, -6, 127]);
    both(
        "BitwiseAnd",
        &[],
        &[&s, &m],
        &ints(DType::I8, &[2, 3], &[5, -6, 127, 0, -128, 0]),
    );
    both(
        "BitwiseNot",
        &[],
        &[&m],
        &ints(DType::I8, &[3], &[-6, 5, -128]),
    );
    let big = Tensor::i64(vec![2], vec![(1 << 40) + 3, -(1 << 41)]);
    let mask = Tensor::i64(vec![1], vec![(1 << 40) | 1]);
    both(
        "BitwiseXor",
        &[],
        &[&big, &mask],
        &Tensor::i64(vec![2], vec![2, -(1 << 41) ^ ((1 << 40) | 1)]),
    );
    let u = ints(DType::U64, &[2], &[0, 7]);
    let not_u = eval1("BitwiseNot", &[], &[&u]);
    assert_eq!(not_u.get_f64(1), (u64::MAX - 7) as f64);
}

#[test]
fn shifts_follow_opset_28_for_every_amount() {
    let x = ints(DType::U8, &[4], &[16, 4, 1, 255]);
    let y = ints(DType::U8, &[4], &[1, 2, 7, 8]);
    both(
        "BitShift",
        &direction("LEFT"),
        &[&x, &y],
        &ints(DType::U8, &[4], &[32, 16, 128, 0]),
    );
    both(
        "BitShift",
        &direction("RIGHT"),
        &[&x, &y],
        &ints(DType::U8, &[4], &[8, 1, 0, 0]),
    );
    // Signed: arithmetic right shifts, left shifts past the sign bit, out-of-range amounts.
    let s = ints(DType::I8, &[5], &[-5, 100, -100, -3, 7]);
    let n = ints(DType::I8, &[5], &[1, 1, 1, 9, -1]);
    both(
        "BitShift",
        &direction("RIGHT"),
        &[&s, &n],
        &ints(DType::I8, &[5], &[-3, 50, -50, -1, 0]),
    );
    both(
        "BitShift",
        &direction("LEFT"),
        &[&s, &n],
        &ints(DType::I8, &[5], &[-10, -56, 56, 0, 0]),
    );
    // 64-bit: the reduction into the signed range, with amounts up to the width.
    let w = Tensor::i64(vec![3], vec![3, -1, 1]);
    let k = Tensor::i64(vec![3], vec![62, 63, 64]);
    both(
        "BitShift",
        &direction("LEFT"),
        &[&w, &k],
        &Tensor::i64(vec![3], vec![i64::MIN + (1 << 62), i64::MIN, 0]),
    );
    let u = ints(DType::U32, &[2], &[3, 1 << 20]);
    let by = ints(DType::U32, &[1], &[31]);
    both(
        "BitShift",
        &direction("LEFT"),
        &[&u, &by],
        &ints(DType::U32, &[2], &[1 << 31, 0]),
    );
}

#[test]
fn bitwise_operators_check_types_and_attributes() {
    let msg = infer_err(
        "BitwiseAnd",
        &[],
        &[ty(DType::F32, &[2]), ty(DType::F32, &[2])],
        &[],
    );
    assert!(msg.contains("integer"), "{msg}");
    let msg = infer_err(
        "BitwiseOr",
        &[],
        &[ty(DType::I32, &[2]), ty(DType::I64, &[2])],
        &[],
    );
    assert!(msg.contains("input 1 has type"), "{msg}");
    let two = [ty(DType::U8, &[2]), ty(DType::U8, &[2])];
    let msg = infer_err("BitShift", &[], &two, &[]);
    assert!(msg.contains("`direction`: is required"), "{msg}");
    let msg = infer_err("BitShift", &direction("UP"), &two, &[]);
    assert!(msg.contains("\"LEFT\" or \"RIGHT\""), "{msg}");
    let msg = infer_err(
        "BitShift",
        &direction("LEFT"),
        &[ty(DType::F32, &[2]), ty(DType::F32, &[2])],
        &[],
    );
    assert!(msg.contains("integer"), "{msg}");
}

#[test]
fn bitwise_expansions_match_reference_on_awkward_shapes() {
    for d in [
        DType::U8,
        DType::I8,
        DType::U16,
        DType::I32,
        DType::U64,
        DType::I64,
    ] {
        for op in ["BitwiseAnd", "BitwiseOr", "BitwiseXor"] {
            check_expansion(op, &[], &[ty(d, &[3, 1, 2]), ty(d, &[4, 1])], &[]);
        }
        check_expansion("BitwiseNot", &[], &[ty(d, &[2, 1, 3])], &[]);
        for dir in ["LEFT", "RIGHT"] {
            check_expansion(
                "BitShift",
                &direction(dir),
                &[ty(d, &[5]), ty(d, &[1, 1])],
                &[],
            );
        }
    }
}
