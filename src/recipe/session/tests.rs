use super::Session;
use crate::check::fixtures::matmul;
use crate::ir::{Schedule, SymExpr};
use crate::recipe::run::RunOptions;
use crate::transform::engine::program_hash;

fn session() -> Session {
    let p = matmul(
        SymExpr::int(8),
        SymExpr::int(4),
        SymExpr::int(8),
        Schedule::Sequential,
    );
    Session::new(p, None, RunOptions::default())
}

fn ok(s: &mut Session, text: &str) -> super::Done {
    s.input(text)
        .unwrap_or_else(|d| panic!("{text}: {}", s.sources().render_plain(&d)))
}

#[test]
fn let_persists_between_inputs_and_steps_are_recorded() {
    let mut s = session();
    ok(&mut s, "let m = maps()[1]");
    let done = ok(&mut s, "MapTiling(m, tiles = [4, 0, 0])");
    assert_eq!(done.steps.len(), 1);
    assert_eq!(done.steps[0].step.transformation, "MapTiling");
    assert_eq!(s.frame().steps().len(), 1);
    assert_eq!(s.frame().hash, program_hash(s.program()));
}

#[test]
fn undo_and_redo_return_to_the_exact_hashes() {
    let mut s = session();
    let start = s.frame().hash.clone();
    ok(&mut s, "MapTiling(maps()[1], tiles = [4, 0, 0])");
    let once = s.frame().hash.clone();
    ok(&mut s, "MapTiling(maps()[2], tiles = [2, 0, 0])");
    let twice = s.frame().hash.clone();
    assert!(start != once && once != twice);
    assert_eq!(s.undo(5), 2, "only two inputs to undo");
    assert_eq!(program_hash(s.program()), start);
    assert_eq!(s.redo(1), 1);
    assert_eq!(program_hash(s.program()), once);
    assert_eq!(s.redo(1), 1);
    assert_eq!(program_hash(s.program()), twice);
    // A new input after an undo drops what could be redone.
    s.undo(1);
    ok(&mut s, "print 1");
    assert_eq!(s.redoable(), 0);
}

#[test]
fn declarations_typed_live_are_usable_afterwards() {
    let mut s = session();
    ok(&mut s, "pattern acc {\n  m = map[params = 3]\n}");
    ok(&mut s, "param n: int = 2");
    let done = ok(&mut s, "print len(matches(acc)) + n");
    assert_eq!(done.printed, vec!["3".to_string()]);
    assert!(s.pattern("acc").expect("builds").is_some());
    assert!(s.pattern("nothing").expect("no error").is_none());
}

#[test]
fn a_failing_input_leaves_the_session_unchanged() {
    let mut s = session();
    ok(&mut s, "let m = maps()[1]");
    let before = (s.frame().hash.clone(), s.history().len());
    // Refused by the engine (the init map has two parameters), after a step that applied.
    let e = s
        .input("MapTiling(m, tiles = [4, 0, 0])\nMapTiling(maps()[0], tiles = [0, 0])")
        .expect_err("the second call does not apply");
    assert!(e[0].message.contains("does not apply"), "{}", e[0].message);
    assert_eq!((s.frame().hash.clone(), s.history().len()), before);
    // Rejected by the checker: nothing runs.
    let e = s.input("MapTilling(m)").expect_err("unknown name");
    assert_eq!(e[0].code, "dmove::recipe::unknown_name");
    // A syntax error is rendered in the input's own file, line 1.
    let e = s.input("let = 3").expect_err("syntax");
    assert_eq!(s.sources().line_col(e[0].span).0, 1);
    assert_eq!((s.frame().hash.clone(), s.history().len()), before);
}

#[test]
fn the_saved_recipe_replays_to_the_session_hash() {
    let mut s = session();
    ok(&mut s, "let m = maps()[1]");
    ok(&mut s, "MapTiling(m, tiles = [4, 0, 0])");
    ok(&mut s, "MapTiling(maps()[2], tiles = [2, 0, 0])");
    s.undo(1);
    let text = s.recipe("saved");
    assert!(
        text.starts_with("recipe \"saved\" version \"0.1.0\""),
        "{text}"
    );
    assert!(
        !text.contains("[2, 0, 0]"),
        "the undone input is not saved:\n{text}"
    );
    let l = crate::recipe::load_source("saved.recipe", &text, None);
    assert!(crate::recipe::check(&l).iter().all(|d| !d.is_error()));
    let mut p = s.start().clone();
    crate::recipe::run::run(&l, &mut p, &RunOptions::default()).expect("replays");
    assert_eq!(program_hash(&p), s.frame().hash);
}

#[test]
fn evaluating_changes_nothing() {
    let mut s = session();
    ok(&mut s, "let m = maps()[1]");
    assert_eq!(s.evaluate("params(m)").expect("evaluates"), "3");
    assert_eq!(s.history().len(), 1);
    assert!(s.evaluate("params(").is_err());
}

#[test]
fn main_is_refused_as_an_input() {
    let mut s = session();
    let e = s.input("main {\n  print 1\n}").expect_err("main");
    assert_eq!(e[0].code, super::SESSION);
}
