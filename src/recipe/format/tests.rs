//! Unit tests of the formatter: canonical layout, parentheses, literals, comments, and the two
//! laws (idempotence, same syntax after a round trip).

use super::{format, shape};
use crate::recipe::diag::FileId;
use crate::recipe::parse::parse;

/// Formats `src`, checking both laws on the way.
fn fmt(src: &str) -> String {
    let first = parse(FileId(0), src).unwrap_or_else(|d| panic!("`{src}`: {d:?}"));
    let out = format(&first);
    let again = parse(FileId(0), &out).unwrap_or_else(|d| panic!("formatted `{out}`: {d:?}"));
    assert_eq!(
        shape(&again),
        shape(&first),
        "round trip changed the syntax of:\n{out}"
    );
    assert_eq!(format(&again), out, "not idempotent on:\n{out}");
    out
}

/// `src` is already canonical.
fn canonical(src: &str) {
    assert_eq!(fmt(src), src);
}

/// The formatted text of one expression.
fn expr(e: &str) -> String {
    let out = fmt(&format!("main {{\n  let x = {e}\n}}\n"));
    out.trim_start_matches("main {\n  let x = ")
        .trim_end_matches("\n}\n")
        .to_string()
}

#[test]
fn normalizes_spacing_and_layout() {
    let src = "recipe  \"r\"   version \"1\"  requires dmove \">=0.1\"\nuse std::cpu\nuse std::gpu as g\nparam   t :int in pow2( 8 .. 64 )=16\nparam u: int\nchoose t,u by  bench( reps=3 )\npattern p{ a=op Add [ x=1 ]( _ ,b )\n b = data\n b->a\n where uses( a )==1 }\nrule r( m:p ){ X( m.a ,k=[1,2,] ) }\nmain{ apply   r everywhere\n try{ } }\n";
    let want = "recipe \"r\" version \"1\"\nrequires dmove \">=0.1\"\n\nuse std::cpu\nuse std::gpu as g\n\nparam t: int in pow2(8..64) = 16\nparam u: int\n\nchoose t, u by bench(reps = 3)\n\npattern p {\n  a = op Add[x = 1](_, b)\n  b = data\n  b -> a\n  where uses(a) == 1\n}\n\nrule r(m: p) {\n  X(m.a, k = [1, 2])\n}\n\nmain {\n  apply r everywhere\n  try {}\n}\n";
    assert_eq!(fmt(src), want);
}

#[test]
fn canonical_text_is_kept() {
    canonical("param a: float in [0.25, 0.5] = 0.5 where a * 2.0 < 1.5\nparam b: enum(\"x\", \"y\") = \"x\"\nparam c: bool = false\nparam d: int in -4..-1\n\nchoose a fixed\nchoose c by dmd\nchoose d by bench\n");
    canonical("main {\n  for each m in maps(depth = 0) {\n    first {\n      Vectorize(m)\n    } or {\n      Unroll(m)\n    } or {}\n  }\n  repeat (max 10) {\n    apply MapFusion once\n  } until fixpoint\n  if a {\n    X(m)\n  } else if b {\n    Y(m)\n  } else {\n    Z(m)\n  }\n  unsafe(legality, numerics) because \"why\" {\n    apply cpu::main at m.mm\n  }\n  expect dmd() < 0.5 * baseline.dmd, \"halved\"\n  print \"maps:\", len(maps())\n  note \"done\"\n}\n");
}

#[test]
fn minimal_parentheses() {
    assert_eq!(expr("((a + b)) * (c)"), "(a + b) * c");
    assert_eq!(expr("a + (b * c)"), "a + b * c");
    assert_eq!(expr("(a - b) - c"), "a - b - c");
    assert_eq!(expr("a - (b - c)"), "a - (b - c)");
    assert_eq!(expr("a / (b * c)"), "a / (b * c)");
    assert_eq!(expr("(a or b) and c"), "(a or b) and c");
    assert_eq!(expr("not (a == b)"), "not (a == b)");
    assert_eq!(expr("(not a) == b"), "not a == b");
    assert_eq!(expr("(-x).f"), "(-x).f");
    assert_eq!(expr("-(x.f)"), "-x.f");
    assert_eq!(expr("(a + b)[0]"), "(a + b)[0]");
    assert_eq!(expr("(a < b) < c"), "a < b < c");
    assert_eq!(expr("a < (b < c)"), "a < (b < c)");
}

#[test]
fn negative_literals_and_negations_stay_apart() {
    assert_eq!(expr("-3"), "-3");
    assert_eq!(expr("-(3)"), "-(3)");
    assert_eq!(expr("- -3"), "--3");
    assert_eq!(expr("-(-3)"), "--3");
    assert_eq!(expr("-(3.5)"), "-(3.5)");
    assert_eq!(expr("-(3[0])"), "-(3[0])");
    assert_eq!(expr("a - -3"), "a - -3");
    assert_eq!(expr("a-3"), "a - 3");
    assert_eq!(expr("- x"), "-x");
    assert_eq!(expr("not not x"), "not not x");
}

#[test]
fn literals_print_back_exactly() {
    assert_eq!(expr("1e-3"), "0.001");
    assert_eq!(expr("1e300"), "1e300");
    assert_eq!(expr("2.50"), "2.5");
    assert_eq!(expr("1.0"), "1.0");
    assert_eq!(expr(r#""a\"b\\c\nd""#), r#""a\"b\\c\nd""#);
    // A raw tab is printed as the escape, like the textual IR does.
    assert_eq!(expr("\"tab\there\""), "\"tab\\there\"");
    assert_eq!(expr("[ ]"), "[]");
    assert_eq!(expr("[_, 64]"), "[_, 64]");
}

#[test]
fn comments_keep_their_place() {
    canonical("# about the file\nrecipe \"r\" version \"1\"  # the header\n\n# the parameters\nparam t: int = 1  # t\n\nmain {  # entry\n  # before\n  X(m)  # after\n  try {\n    Y(m)\n    # end of try\n  }  # after try\n  first {\n    A(m)\n  } or {  # second\n    B(m)\n  }\n  # end of main\n}\n# end of file\n");
    canonical("pattern p {  # open\n  # a capture\n  a = op X  # trailing\n  b = op Y(a)\n  a -> b\n  where uses(a) == 1  # one reader\n  where rank(b) == 2\n  # last\n}\n");
}

#[test]
fn comments_inside_joined_lines_move_before_what_follows() {
    let out = fmt("main {\n  X(m,  # the map\n    k = 1)  # done\n  Y(m)\n}\n");
    assert_eq!(
        out,
        "main {\n  X(m, k = 1)  # the map\n  # done\n  Y(m)\n}\n"
    );
}

#[test]
fn pattern_elements_keep_their_order_and_constraints_join() {
    let out = fmt("pattern p {\n  a = op X\n  where uses(a) == 1\n  where params(a) > 0 or rank(a) == 1\n  b = op Y\n  a -> b\n}\n");
    assert_eq!(out, "pattern p {\n  a = op X\n  where uses(a) == 1 and (params(a) > 0 or rank(a) == 1)\n  b = op Y\n  a -> b\n}\n");
}

#[test]
fn blank_lines_only_between_groups() {
    let out = fmt("use std::a\nuse std::b\nparam x: int = 1\nparam y: int = 2\npattern p {\n  a = op\n}\npattern q {\n  a = op\n}\nmain {\n}\n");
    assert_eq!(out, "use std::a\nuse std::b\n\nparam x: int = 1\nparam y: int = 2\n\npattern p {\n  a = op\n}\n\npattern q {\n  a = op\n}\n\nmain {}\n");
}

#[test]
fn empty_and_comment_only_files() {
    assert_eq!(fmt(""), "");
    // Comment paragraphs keep one blank line between them, however many there were.
    assert_eq!(
        fmt("# just this\n\n\n# and this"),
        "# just this\n\n# and this\n"
    );
    assert_eq!(fmt("# one\n# two"), "# one\n# two\n");
}
