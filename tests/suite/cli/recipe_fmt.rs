//! `dmove fmt`: `--check` lists unformatted files and changes nothing; without it files are
//! rewritten; a file that does not parse is reported and left untouched.

use super::recipe_support::recipe;
use super::support::{assert_clean_failure, assert_success, dmove, flat, stderr, stdout};

#[test]
fn check_detects_an_unformatted_file_and_leaves_it_untouched() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();
    let messy = "recipe   \"tiny\"   version \"0.1.0\"\n\
                 param tile: int in pow2(2..8)   =  2\n\
                 main {\napply Expand   everywhere\n}\n";
    std::fs::write(d.join("messy.recipe"), messy).expect("write");
    let o = dmove(&["fmt", "--check", "messy.recipe"], d);
    assert_clean_failure(&o);
    assert_eq!(stdout(&o), "messy.recipe\n");
    assert!(
        flat(&stderr(&o)).contains("1 file(s) are not formatted"),
        "{}",
        stderr(&o)
    );
    assert_eq!(
        std::fs::read_to_string(d.join("messy.recipe")).expect("read"),
        messy
    );
    assert_success(&dmove(&["fmt", "messy.recipe"], d));
    let formatted = std::fs::read_to_string(d.join("messy.recipe")).expect("read");
    assert_ne!(formatted, messy);
    assert!(formatted.contains("apply Expand everywhere"), "{formatted}");
    assert_success(&dmove(&["fmt", "--check", "messy.recipe"], d));
}

#[test]
fn a_formatted_file_passes_and_a_broken_one_is_left_alone() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();
    std::fs::write(d.join("ok.recipe"), recipe(2)).expect("write");
    // The test recipe is written in canonical form; format it once in case it is not.
    assert_success(&dmove(&["fmt", "ok.recipe"], d));
    let ok = std::fs::read_to_string(d.join("ok.recipe")).expect("read");
    assert_success(&dmove(&["fmt", "--check", "ok.recipe"], d));
    let broken = "recipe \"b\" version \"0.1.0\"\nmain {\n  apply (\n}\n";
    std::fs::write(d.join("broken.recipe"), broken).expect("write");
    let o = dmove(&["fmt", "broken.recipe", "ok.recipe"], d);
    assert_clean_failure(&o);
    let err = flat(&stderr(&o));
    assert!(err.contains("dmove::recipe::syntax"), "{err}");
    assert!(
        err.contains("could not be formatted: broken.recipe"),
        "{err}"
    );
    assert_eq!(
        std::fs::read_to_string(d.join("broken.recipe")).expect("read"),
        broken
    );
    assert_eq!(
        std::fs::read_to_string(d.join("ok.recipe")).expect("read"),
        ok
    );
}
