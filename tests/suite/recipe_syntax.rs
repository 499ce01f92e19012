//! The recipe syntax end to end: every `.recipe` file in the repository and a set of inline
//! sources covering every construct (comments included) parse, format canonically and round
//! trip; the reference's examples parse; syntax errors render as snapshots.

use dmove::recipe::format::{check_laws, format};
use dmove::recipe::{parse, FileId, Sources};
use std::path::{Path, PathBuf};

/// Every construct of docs/recipe-language.md at least once, with comments in every place
/// the formatter keeps them.
const SOURCES: &[(&str, &str)] = &[
    (
        "header_and_items",
        r#"# A recipe with every kind of item.
recipe "mlp" version "0.2.0"   # the header
requires dmove ">=0.1, <0.3"
use std::cpu
use std::cpu::x86 as x86
use "./common.recipe" as common
param tile: int in pow2(8..64) = 16            # 8, 16, 32, 64
param rows: int in [16, 32, 48] = 32
param unroll: int in 1..4 = 1
param alpha: float in [0.25, 0.5] = 0.5
param fuse: bool = true
param impl: enum("pure", "im2col") = "pure"
param cols: int in pow2(16..256) = 64 where tile * cols <= 8192
choose tile, cols by dmd
choose unroll by bench(reps = 5)
choose rows by bench
choose impl fixed
"#,
    ),
    (
        "patterns",
        r#"pattern matmul_add {
  mm  = op MatMul
  t   = data[kind = transient, shape = [_, 64], dtype = f32, name = "t"]
  add = op Add(mm, _)
  m = map[params = 2, schedule = sequential]
  k = tasklet
  n = node
  mm -> t -> add   # a chain
  # the constraints
  where uses(t) == 1 and rank(t) >= 2
  where params(m) != 0
}
"#,
    ),
    (
        "rules_and_main",
        r#"rule fold_bias(m: matmul_add) {
  MatMulAddToGemm(m.mm, m.add)
}

rule schedule(m: map, depth: int) {
  try { Parallelize(m) }
}

main {
  let t = 16   # a tile
  apply fold_bias everywhere
  apply cpu::main once
  apply schedule at m
  for each m in maps(depth = 0, in = n) { schedule(m) }
  try { MapTiling(m, tiles = [t, 0]) }
  first { Vectorize(m) } or { Unroll(m) } or {}
  repeat (max 10) { apply MapFusion once } until fixpoint
  if params(m) > 1 { MapExpansion(m, split = 1) } else if exists(m) { X(m) } else { Parallelize(m) }
  expect len(ops()) == 0, "every operator is lowered"
  expect dmd() < 0.5 * baseline.dmd and not (time() >= 0.8 * baseline.time)
  unsafe(legality, numerics) because "reassociation is fine" { MapTiling(m, tiles = [8, 0]) }
  print "maps:", len(maps()), -1, -(2), x[0].y % 3
  note "tiles chosen for \"AVX-512\"\n"
  # the end
}
"#,
    ),
    (
        "multiline",
        "main {\n  MapTiling(\n    m,   # the map\n    tiles = [\n      16,\n      0,\n    ],\n  )\n  let y = a +\n    b * (c\n      - d)\n}\n",
    ),
];

/// Formats `text`, checking that the result parses to the same syntax and is a fixpoint.
fn round_trip(name: &str, text: &str) -> String {
    if let Some(Err(broken)) = check_laws(text) {
        panic!("{name}: {broken}");
    }
    let file = parse(FileId(0), text).unwrap_or_else(|d| {
        let mut sources = Sources::default();
        sources.add(name, text);
        panic!("{}", sources.render_plain(&[d]))
    });
    format(&file)
}

/// Every `*.recipe` under the directories recipes live in (absent ones are skipped).
fn recipe_files() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut found = Vec::new();
    let mut dirs: Vec<PathBuf> = ["stdlib", "recipes", "tests/recipes"]
        .iter()
        .map(|d| root.join(d))
        .collect();
    while let Some(dir) = dirs.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "recipe") {
                found.push(path);
            }
        }
    }
    found.sort();
    found
}

#[test]
fn every_recipe_file_round_trips() {
    for path in recipe_files() {
        let text = std::fs::read_to_string(&path).expect("readable recipe");
        // Files that are meant not to parse (syntax-error fixtures) say so in their name.
        if path.to_string_lossy().contains("syntax_error") {
            continue;
        }
        round_trip(&path.display().to_string(), &text);
    }
}

#[test]
fn inline_sources_round_trip_and_keep_every_comment() {
    for (name, text) in SOURCES {
        let out = round_trip(name, text);
        let before = parse(FileId(0), text).expect("parses").comments;
        let after = parse(FileId(0), &out).expect("parses").comments;
        let texts = |c: &[dmove::recipe::ast::Comment]| {
            c.iter().map(|c| c.text.clone()).collect::<Vec<_>>()
        };
        assert_eq!(
            texts(&after),
            texts(&before),
            "{name}: comments changed:\n{out}"
        );
    }
}

#[test]
fn inline_sources_format_canonically() {
    let out = round_trip("rules_and_main", SOURCES[2].1);
    insta::assert_snapshot!("formatted_rules_and_main", out);
    let out = round_trip("patterns", SOURCES[1].1);
    insta::assert_snapshot!("formatted_patterns", out);
}

/// The fenced examples of the reference, as whole files: the statement examples are the body of
/// a `main`, and the file-structure outline (whose `…` are placeholders) keeps its real lines.
#[test]
fn the_reference_examples_parse() {
    let doc = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/recipe-language.md"),
    )
    .expect("the reference");
    let blocks: Vec<&str> = doc.split("```").skip(1).step_by(2).collect();
    assert!(
        blocks.len() >= 6,
        "the reference has {} examples",
        blocks.len()
    );
    for block in blocks {
        let body = block.trim_start_matches(|c: char| c != '\n');
        let text = if body.contains('…') {
            body.lines()
                .filter(|l| !l.contains('…'))
                .collect::<Vec<_>>()
                .join("\n")
        } else if body.trim_start().starts_with(char::is_uppercase) {
            format!("main {{\n{body}}}\n")
        } else {
            body.to_string()
        };
        round_trip("docs/recipe-language.md", &text);
    }
}

/// A syntax error rendered like rustc's.
fn rendered(name: &str, text: &str) -> String {
    let mut sources = Sources::default();
    let id = sources.add(name, text);
    let d = parse(id, text).expect_err("a syntax error");
    assert_eq!(d.code, "dmove::recipe::syntax");
    sources.render_plain(&[d])
}

#[test]
fn syntax_errors_render() {
    insta::assert_snapshot!(
        "missing_brace",
        rendered(
            "missing_brace.recipe",
            "main {\n  apply MapFusion everywhere\n"
        )
    );
    insta::assert_snapshot!(
        "misspelt_keyword",
        rendered(
            "misspelt.recipe",
            "main {\n  aply MapFusion everywhere\n}\n"
        )
    );
    insta::assert_snapshot!(
        "apply_somewhere",
        rendered(
            "somewhere.recipe",
            "main {\n  apply MapFusion somewhere\n}\n"
        )
    );
    insta::assert_snapshot!(
        "two_statements_on_a_line",
        rendered("line.recipe", "main {\n  Parallelize(m) Unroll(m)\n}\n")
    );
    insta::assert_snapshot!(
        "bad_escape",
        rendered("escape.recipe", "main {\n  note \"odd\\qescape\"\n}\n")
    );
    insta::assert_snapshot!(
        "integer_overflow",
        rendered("int.recipe", "param tile: int = 99999999999999999999\n")
    );
}
