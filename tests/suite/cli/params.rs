//! `dmove apply` refuses bad `-t` names and `--param`s before anything runs, saying what is
//! accepted; nothing is written.

use super::support::{assert_clean_failure, dmove, flat, mlp_ir_dir, stderr, stdout};
use std::path::Path;
use std::process::Output;

/// `dmove apply mlp.ir ARGS -o out.ir`, which must fail cleanly and write nothing; returns
/// the flattened diagnostic.
fn refused(dir: &Path, args: &[&str]) -> String {
    let mut all = vec!["apply", "mlp.ir"];
    all.extend_from_slice(args);
    all.extend_from_slice(&["-o", "out.ir"]);
    let o: Output = dmove(&all, dir);
    assert_clean_failure(&o);
    assert!(stdout(&o).is_empty(), "{}", stdout(&o));
    assert!(
        !dir.join("out.ir").exists(),
        "a refused step wrote its output"
    );
    let err = stderr(&o);
    assert!(!err.contains("applied "), "{err}");
    flat(&err)
}

#[test]
fn a_transformation_without_parameters_says_it_takes_none() {
    let dir = mlp_ir_dir();
    let err = refused(
        dir.path(),
        &["-t", "Vectorize", "--at", "n19", "--param", "bogus=3"],
    );
    assert!(err.contains("Vectorize has no parameter `bogus`"), "{err}");
    assert!(err.contains("help: it takes no parameters"), "{err}");
    assert!(!err.contains("did you mean"), "{err}");
}

#[test]
fn an_unknown_key_lists_the_accepted_ones() {
    let dir = mlp_ir_dir();
    let err = refused(
        dir.path(),
        &[
            "-t",
            "StripMining",
            "--at",
            "n19",
            "--param",
            "bogus=3",
            "--param",
            "size=4",
        ],
    );
    assert!(
        err.contains("StripMining has no parameter `bogus`"),
        "{err}"
    );
    assert!(err.contains("accepted: param, size"), "{err}");
}

#[test]
fn a_misspelt_key_suggests_the_declared_one() {
    let dir = mlp_ir_dir();
    let err = refused(
        dir.path(),
        &["-t", "MapTiling", "--at", "n19", "--param", "tile=16"],
    );
    assert!(err.contains("MapTiling has no parameter `tile`"), "{err}");
    assert!(
        err.contains("help: did you mean `tiles`? accepted: tiles"),
        "{err}"
    );
}

#[test]
fn a_value_that_is_not_the_declared_kind_says_what_was_expected() {
    let dir = mlp_ir_dir();
    let err = refused(
        dir.path(),
        &["-t", "MapTiling", "--at", "n19", "--param", "tiles=abc"],
    );
    assert!(
        err.contains(
            "MapTiling: parameter `tiles` expects one integer per map parameter, each in 0.. \
             (e.g. 32,32,0), but `abc` is not one"
        ),
        "{err}"
    );
    assert!(
        err.contains("`dmove transforms` lists every parameter"),
        "{err}"
    );
}

#[test]
fn a_list_of_the_wrong_length_says_how_many_parameters_the_map_has() {
    let dir = mlp_ir_dir();
    for (tiles, shown) in [("16", "16"), ("16,0,0,0", "16,0,0,0")] {
        let param = format!("tiles={tiles}");
        let err = refused(
            dir.path(),
            &["-t", "MapTiling", "--at", "n19", "--param", &param],
        );
        assert!(
            err.contains("MapTiling: parameter `tiles` expects one integer per map parameter"),
            "{err}"
        );
        assert!(err.contains(&format!("found the list {shown} (")), "{err}");
        assert!(
            err.contains("the map has 3 parameters (i0, i1, k)"),
            "{err}"
        );
    }
}

#[test]
fn an_entry_out_of_the_domain_is_named() {
    let dir = mlp_ir_dir();
    let err = refused(
        dir.path(),
        &["-t", "MapTiling", "--at", "n19", "--param", "tiles=16,-1,0"],
    );
    assert!(err.contains("each in 0.."), "{err}");
    assert!(err.contains("(entry -1)"), "{err}");
}

#[test]
fn a_missing_required_parameter_is_named_with_its_kind() {
    let dir = mlp_ir_dir();
    let err = refused(dir.path(), &["-t", "MapTiling", "--at", "n19"]);
    assert!(
        err.contains("MapTiling: parameter `tiles` is required"),
        "{err}"
    );
    assert!(err.contains("one integer per map parameter"), "{err}");
}

#[test]
fn an_unknown_transformation_suggests_the_closest_name() {
    let dir = mlp_ir_dir();
    let err = refused(dir.path(), &["-t", "MapFusio", "--at", "n27,n33"]);
    assert!(
        err.contains("no transformation is named `MapFusio`"),
        "{err}"
    );
    assert!(err.contains("did you mean `MapFusion`?"), "{err}");
    assert!(err.contains("`dmove transforms` lists them all"), "{err}");
}

#[test]
fn a_parameter_without_a_value_is_a_bad_option() {
    let dir = mlp_ir_dir();
    let err = refused(
        dir.path(),
        &["-t", "MapTiling", "--at", "n19", "--param", "tiles"],
    );
    assert!(
        err.contains("`tiles` is not a valid transformation parameter"),
        "{err}"
    );
    assert!(err.contains("write NAME=VALUE"), "{err}");
}
