//! Choosing a tile size by DMD through the transactional engine.

use crate::common::matmul;
use dmove::analysis::choose::{choose_by_dmd, tile_candidates};
use dmove::analysis::trace::IrTrace;
use dmove::analysis::{analyze, Options};
use dmove::ir::{NodeId, NodeKind, Program};
use dmove::transform::engine::{apply, Checks};
use dmove::transform::find;

fn map_named(p: &Program, label: &str) -> NodeId {
    let mut id = None;
    p.graph.walk(&mut |n| {
        if n.label == label && matches!(n.kind, NodeKind::Map(_)) {
            id = Some(n.id);
        }
    });
    id.expect("map exists")
}

#[test]
fn picks_the_lowest_dmd_and_records_every_score() {
    let p = matmul(24, 24, 24);
    let acc = map_named(&p, "acc");
    let candidates = tile_candidates(&p, acc, &[0, 4, 8, 12, 8]).expect("a map");
    let choice = choose_by_dmd(
        &p,
        "MapTiling",
        &[acc],
        &candidates,
        &Options::default(),
        &Checks::default(),
    )
    .expect("some candidate applies");
    assert_eq!(choice.scores.len(), 5);
    // Tile size 0 everywhere is refused by the engine and recorded as such.
    assert!(choice.scores[0]
        .refused
        .as_deref()
        .is_some_and(|r| r.contains("nothing to tile")));
    // Independently: apply the chosen parameters by hand and analyze.
    let mut q = p.clone();
    apply(
        &mut q,
        find("MapTiling").expect("built in"),
        &[acc],
        &choice.params,
        &Checks::default(),
    )
    .expect("applies");
    let dmd = analyze(&IrTrace::new(&q).expect("traces"), &Options::default())
        .expect("analyzes")
        .total
        .dmd;
    assert_eq!(dmd, choice.dmd);
    let scored: Vec<f64> = choice.scores.iter().filter_map(|s| s.dmd).collect();
    assert!(scored.iter().all(|&d| d >= choice.dmd));
    // Ties go to the earlier candidate: 8 appears twice with the same DMD.
    assert_eq!(choice.scores[2].dmd, choice.scores[4].dmd);
    assert_ne!(choice.chosen, 4);
    // The choice survives a JSON round trip (it is recorded in traces).
    let json = serde_json::to_string(&choice).expect("serializes");
    let back: dmove::analysis::choose::Choice = serde_json::from_str(&json).expect("parses");
    assert_eq!(
        (back.chosen, &back.params, back.scores.len()),
        (choice.chosen, &choice.params, 5)
    );
    assert!((back.dmd - choice.dmd).abs() <= 1e-9 * choice.dmd);
    // The original program is untouched.
    assert_eq!(p, matmul(24, 24, 24));
}

#[test]
fn refuses_non_maps_and_unknown_transformations() {
    let p = matmul(4, 4, 4);
    let acc = map_named(&p, "acc");
    assert!(tile_candidates(&p, NodeId(9999), &[4]).is_err());
    let err = choose_by_dmd(
        &p,
        "NoSuch",
        &[acc],
        &[],
        &Options::default(),
        &Checks::default(),
    )
    .expect_err("unknown transformation");
    assert!(err.to_string().contains("NoSuch"));
    let zero = tile_candidates(&p, acc, &[0]).expect("a map");
    let err = choose_by_dmd(
        &p,
        "MapTiling",
        &[acc],
        &zero,
        &Options::default(),
        &Checks::default(),
    )
    .expect_err("nothing applies");
    assert!(
        err.to_string().contains("none of the 1 candidates"),
        "{err}"
    );
}
