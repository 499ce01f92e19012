//! An independent source: ONNX Runtime computes the demo model, and the reference interpreter
//! must agree with it. With `DMOVE_REQUIRE_PEER=1` (set by CI, which installs onnxruntime) a
//! missing peer fails the test; otherwise the skip is printed and tallied and nothing else is
//! checked (see `support::skip`).

use crate::support::peer::run_peer;
use dmove::demo::model::{encoder_model, EncoderConfig, INPUT, OUTPUT};
use dmove::onnx::{import, load_model, ImportOptions};
use rand::SeedableRng;
use std::collections::BTreeMap;

#[test]
fn interpreter_agrees_with_onnxruntime_on_the_encoder_layer() {
    let cfg = EncoderConfig {
        seq: 12,
        hidden: 32,
        heads: 4,
        ffn: 48,
    };
    let bytes = encoder_model(&cfg, 5);
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(9);
    let x = dmove::check::random_tensor(&[1, 12, 32], &mut rng);
    let feeds = [(INPUT.to_string(), x.clone())];
    let Some(peer) = run_peer("the encoder layer", &bytes, &feeds) else {
        return;
    };
    let program = import(
        &load_model(&bytes).expect("loads"),
        &ImportOptions::default(),
    )
    .expect("imports");
    let ours =
        dmove::interp::run(&program, &BTreeMap::from([(INPUT.to_string(), x)])).expect("runs");
    assert_eq!(
        peer.outputs.keys().collect::<Vec<_>>(),
        ours.keys().collect::<Vec<_>>(),
        "onnxruntime and the interpreter name the same outputs"
    );
    let c = dmove::numerics::compare(&ours[OUTPUT], &peer.outputs[OUTPUT]);
    assert!(
        c.within_tolerance,
        "max abs error {} vs onnxruntime",
        c.max_abs_error
    );
}
