//! NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss: hand-computed losses under every
//! reduction, weights and ignored targets (inside and outside the classes), shape and attribute
//! errors, and expansions on awkward shapes (random targets in [0, 4)).

use super::{check_expansion, eval, eval1, f32s, i64s, infer_err, run_expanded, ty};
use dmove::ir::{Attr, DType};

const NLL: &str = "NegativeLogLikelihoodLoss";
const SCE: &str = "SoftmaxCrossEntropyLoss";

fn reduction(r: &str) -> (&'static str, Attr) {
    ("reduction", Attr::Str(r.to_string()))
}

fn close(got: &[f64], want: &[f64]) {
    assert_eq!(got.len(), want.len(), "{got:?} vs {want:?}");
    for (g, w) in got.iter().zip(want) {
        assert!((g - w).abs() < 1e-6, "{got:?} vs {want:?}");
    }
}

#[test]
fn nll_weighs_ignores_and_reduces_like_onnx() {
    let logp = f32s(&[2, 3], &[-1.0, -2.0, -3.0, -0.5, -1.5, -2.5]);
    let target = i64s(&[2], &[2, 0]);
    let weight = f32s(&[3], &[1.0, 2.0, 3.0]);
    let none = eval1(NLL, &[reduction("none")], &[&logp, &target, &weight]);
    assert_eq!(none.shape, vec![2]);
    close(&none.to_f64_vec(), &[9.0, 0.5]);
    let sum = eval1(NLL, &[reduction("sum")], &[&logp, &target, &weight]);
    assert!(sum.shape.is_empty());
    close(&sum.to_f64_vec(), &[9.5]);
    // The mean divides by the weights picked: 9.5 / (3 + 1).
    close(
        &eval1(NLL, &[], &[&logp, &target, &weight]).to_f64_vec(),
        &[2.375],
    );
    // Unweighted, the mean is over the targets not ignored.
    close(&eval1(NLL, &[], &[&logp, &target]).to_f64_vec(), &[1.75]);
    let ii = ("ignore_index", Attr::Int(2));
    close(
        &eval1(NLL, std::slice::from_ref(&ii), &[&logp, &target]).to_f64_vec(),
        &[0.5],
    );
    let y = eval1(NLL, &[ii, reduction("none")], &[&logp, &target, &weight]);
    close(&y.to_f64_vec(), &[0.0, 0.5]);
    // An ignored class outside [0, C) is never read, in the expansion either.
    let outside = i64s(&[2], &[-7, 1]);
    let a = [("ignore_index", Attr::Int(-7)), reduction("none")];
    close(
        &eval1(NLL, &a, &[&logp, &outside]).to_f64_vec(),
        &[0.0, 1.5],
    );
    let got = run_expanded(NLL, &a, &[&logp], &[None, Some(outside)]);
    close(&got[0].to_f64_vec(), &[0.0, 1.5]);
    let e = eval(NLL, &[], &[&logp, &i64s(&[2], &[3, 0])]).unwrap_err();
    assert!(e.to_string().contains("target 3"), "{e}");
}

#[test]
fn softmax_cross_entropy_is_the_loss_of_log_softmax() {
    let scores = f32s(&[2, 2], &[0.0, 0.0, 1.0, 3.0]);
    let target = i64s(&[2], &[1, 0]);
    let out = eval(SCE, &[reduction("none")], &[&scores, &target]).expect("runs");
    let ln2 = std::f64::consts::LN_2;
    let second = (1.0 + 2f64.exp()).ln();
    close(&out[0].to_f64_vec(), &[ln2, second]);
    close(&out[1].to_f64_vec(), &[-ln2, -ln2, -second, 2.0 - second]);
    let mean = eval1(SCE, &[], &[&scores, &target]);
    close(&mean.to_f64_vec(), &[(ln2 + second) / 2.0]);
}

#[test]
fn losses_check_their_operands() {
    let (f, i) = (DType::F32, DType::I64);
    let msg = infer_err(NLL, &[], &[ty(f, &[2, 3, 4]), ty(i, &[2])], &[]);
    assert!(msg.contains("rank 1"), "{msg}");
    let msg = infer_err(NLL, &[], &[ty(f, &[2, 3, 4]), ty(i, &[2, 5])], &[]);
    assert!(msg.contains("dimension 1"), "{msg}");
    let msg = infer_err(SCE, &[], &[ty(f, &[2, 3]), ty(f, &[2])], &[]);
    assert!(msg.contains("int32 or int64"), "{msg}");
    let msg = infer_err(NLL, &[], &[ty(f, &[2, 3]), ty(i, &[2]), ty(f, &[4])], &[]);
    assert!(msg.contains("weight"), "{msg}");
    let msg = infer_err(
        SCE,
        &[reduction("avg")],
        &[ty(f, &[2, 3]), ty(i, &[2])],
        &[],
    );
    assert!(msg.contains("reduction"), "{msg}");
    let msg = infer_err(NLL, &[], &[ty(f, &[3]), ty(i, &[])], &[]);
    assert!(msg.contains("rank at least 2"), "{msg}");
}

#[test]
fn loss_expansions_match_the_reference() {
    let (f, i) = (DType::F32, DType::I64);
    let ii = ("ignore_index", Attr::Int(1));
    for r in ["none", "sum", "mean"] {
        for op in [NLL, SCE] {
            check_expansion(op, &[reduction(r)], &[ty(f, &[3, 5]), ty(i, &[3])], &[]);
            check_expansion(
                op,
                &[reduction(r), ii.clone()],
                &[ty(f, &[2, 4, 3, 1]), ty(i, &[2, 3, 1]), ty(f, &[4])],
                &[],
            );
        }
    }
    check_expansion(
        SCE,
        &[],
        &[ty(DType::F64, &[1, 6, 2]), ty(DType::I32, &[1, 2])],
        &[],
    );
}
