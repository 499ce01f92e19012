//! The static checker: one case per diagnostic kind (code, message and the exact source text
//! the span covers), several errors reported together, modules loaded from files (cycles,
//! missing files, duplicate aliases), and a recipe using every construct that reports nothing.

use dmove::recipe::{check, load_file, load_source, Diagnostic, Loaded, Severity};
use std::path::Path;

const HEADER: &str = "recipe \"t\" version \"0.1.0\"\n";

/// The checker's findings on a recipe given as text.
fn diags(src: &str) -> Vec<Diagnostic> {
    check(&load_source("t.recipe", src, None))
}

/// `body` inside a header, the given items, and `main { body }`.
fn recipe(items: &str, body: &str) -> String {
    format!("{HEADER}{items}\nmain {{\n{body}\n}}\n")
}

/// The only diagnostic with `code`, and the text its span covers.
fn only(src: &str, code: &str) -> (Diagnostic, String) {
    let all = diags(src);
    let with: Vec<&Diagnostic> = all.iter().filter(|d| d.code == code).collect();
    assert_eq!(
        with.len(),
        1,
        "expected one {code} in:\n{src}\ngot: {all:#?}"
    );
    let d = with[0].clone();
    let text = src[d.span.start..d.span.end].to_string();
    (d, text)
}

fn assert_clean(src: &str) {
    let all = diags(src);
    assert!(
        all.is_empty(),
        "expected no diagnostics in:\n{src}\ngot: {all:#?}"
    );
}

/// Patterns and a rule the call cases share.
const COMMON: &str = r#"
pattern matmul_add {
  mm  = op MatMul
  t   = data[kind = transient]
  add = op Add
  mm -> t -> add
  where uses(t) == 1
}
rule fold_bias(m: matmul_add) {
  MatMulAddToGemm(m.mm, m.add)
}
"#;

/// A main body in which `m` is a map and `x` a match of `matmul_add`.
fn with_m(stmt: &str) -> String {
    recipe(
        COMMON,
        &format!("apply fold_bias everywhere\nfor each x in matches(matmul_add) {{\nfor each m in maps() {{\n{stmt}\n}}\n}}"),
    )
}

// ------------------------------------------------------------------- header

#[test]
fn a_recipe_needs_a_header_and_main() {
    let src = "param tile: int = 4\n";
    let all = diags(src);
    let msgs: Vec<&str> = all.iter().map(|d| d.message.as_str()).collect();
    assert!(msgs.contains(&"this recipe has no header"), "{msgs:?}");
    assert!(
        msgs.contains(&"this recipe has no `main` block"),
        "{msgs:?}"
    );
    assert!(all
        .iter()
        .all(|d| d.code == "dmove::recipe::syntax" || d.code == "dmove::recipe::unused"));
}

#[test]
fn version_must_be_semver() {
    let src = "recipe \"t\" version \"1.0\"\nmain {\n}\n";
    let (d, text) = only(src, "dmove::recipe::version");
    assert_eq!(d.message, "`1.0` is not a semantic version");
    assert_eq!(text, "\"1.0\"");
}

#[test]
fn requires_range_must_parse_and_admit_this_dmove() {
    let bad = "recipe \"t\" version \"1.0.0\"\nrequires dmove \"~~1\"\nmain {\n}\n";
    let (d, text) = only(bad, "dmove::recipe::version");
    assert_eq!(d.message, "`~~1` is not a version range");
    assert_eq!(text, "\"~~1\"");
    let future = "recipe \"t\" version \"1.0.0\"\nrequires dmove \">=9.0\"\nmain {\n}\n";
    let (d, text) = only(future, "dmove::recipe::version");
    let running = env!("CARGO_PKG_VERSION");
    assert_eq!(
        d.message,
        format!("this recipe requires dmove >=9.0, but this is dmove {running}")
    );
    assert_eq!(text, "\">=9.0\"");
    assert_clean("recipe \"t\" version \"1.0.0\"\nrequires dmove \">=0.1, <1\"\nmain {\n}\n");
}

// --------------------------------------------------------------- duplicates

#[test]
fn duplicate_items_are_errors() {
    let src = recipe(
        "param a: int = 1\nrule a(m: map) {\n}\n",
        "a(m = maps()[0])",
    );
    let (d, text) = only(&src, "dmove::recipe::duplicate");
    assert_eq!(d.message, "`a` is declared twice");
    assert_eq!(text, "a");
    assert!(d.span.start > src.find("rule").unwrap());
    assert_eq!(d.secondary.len(), 1);
}

#[test]
fn a_rule_may_not_take_a_transformation_or_builtin_name() {
    let src = recipe("rule MapTiling(m: map) {\n}\n", "MapTiling(maps()[0])");
    let (d, text) = only(&src, "dmove::recipe::duplicate");
    assert_eq!(
        d.message,
        "rule `MapTiling` has the name of a transformation of the registry"
    );
    assert_eq!(text, "MapTiling");
    let src = recipe("rule len(m: map) {\n}\n", "len(maps()[0])");
    let (d, _) = only(&src, "dmove::recipe::duplicate");
    assert_eq!(d.message, "rule `len` has the name of a built-in function");
}

#[test]
fn rule_parameters_and_captures_are_declared_once() {
    let src = recipe("rule r(m: map, m: map) {\n}\n", "apply r everywhere");
    let (d, text) = only(&src, "dmove::recipe::duplicate");
    assert_eq!(d.message, "rule `r` has two parameters named `m`");
    assert_eq!(text, "m");
    let src = recipe(
        "pattern p {\n  a = op MatMul\n  a = op Add\n}\n",
        "print len(matches(p))",
    );
    let (d, text) = only(&src, "dmove::recipe::duplicate");
    assert_eq!(d.message, "capture `a` is declared twice");
    assert_eq!(text, "a");
}

#[test]
fn main_and_choose_are_not_repeated() {
    let src = format!("{HEADER}main {{\n}}\nmain {{\n}}\n");
    let (d, _) = only(&src, "dmove::recipe::duplicate");
    assert_eq!(d.message, "a second `main` block");
    let src = recipe(
        "param t: int in [1, 2] = 1\nchoose t by dmd\nchoose t fixed\n",
        "print t",
    );
    let (d, text) = only(&src, "dmove::recipe::duplicate");
    assert_eq!(d.message, "parameter `t` is chosen twice");
    assert_eq!(text, "t");
}

// -------------------------------------------------------------------- names

#[test]
fn misspelt_transformation_suggests_the_registry_name() {
    let src = recipe(
        "",
        "for each m in maps() {\n  MapTilling(m, tiles = [4])\n}",
    );
    let (d, text) = only(&src, "dmove::recipe::unknown_name");
    assert_eq!(
        d.message,
        "no rule, transformation or function is named `MapTilling`"
    );
    assert_eq!(text, "MapTilling");
    assert_eq!(d.help.as_deref(), Some("did you mean `MapTiling`?"));
}

#[test]
fn misspelt_parameter_suggests_the_schema_name() {
    let (d, text) = only(
        &with_m("MapTiling(m, tile = [4])"),
        "dmove::recipe::unknown_name",
    );
    assert_eq!(d.message, "MapTiling has no role or parameter `tile`");
    assert_eq!(text, "tile");
    assert_eq!(d.help.as_deref(), Some("did you mean `tiles`?"));
    // The required parameter is also missing: both are reported.
    assert!(diags(&with_m("MapTiling(m, tile = [4])"))
        .iter()
        .any(|d| d.message == "MapTiling needs parameter `tiles`"));
}

#[test]
fn misspelt_capture_suggests_the_pattern_capture() {
    let src = recipe(
        COMMON,
        "apply fold_bias everywhere\nfor each x in matches(matmul_add) {\n  print name(x.mma)\n}",
    );
    let (d, text) = only(&src, "dmove::recipe::unknown_name");
    assert_eq!(d.message, "pattern `matmul_add` has no capture `mma`");
    assert_eq!(text, "mma");
    assert_eq!(d.help.as_deref(), Some("did you mean `mm`?"));
}

#[test]
fn misspelt_rule_suggests_the_rule() {
    let src = recipe(COMMON, "apply fold_bais everywhere\napply fold_bias once");
    let (d, text) = only(&src, "dmove::recipe::unknown_name");
    assert_eq!(text, "fold_bais");
    assert_eq!(d.help.as_deref(), Some("did you mean `fold_bias`?"));
}

#[test]
fn unknown_variables_and_modules() {
    let src = recipe("param tile: int = 4\n", "let size = tile\nprint siz");
    let (d, text) = only(&src, "dmove::recipe::unknown_name");
    assert_eq!(d.message, "no variable or parameter is named `siz`");
    assert_eq!(text, "siz");
    assert_eq!(d.help.as_deref(), Some("did you mean `size`?"));
    let src = recipe("", "for each m in maps() {\n  cpu::schedule(m)\n}");
    let (d, text) = only(&src, "dmove::recipe::unknown_name");
    assert_eq!(d.message, "no module is used as `cpu`");
    assert_eq!(text, "cpu");
}

#[test]
fn a_let_is_visible_only_after_it_and_inside_its_block() {
    let src = recipe(
        "",
        "print n\nlet n = 1\nif n > 0 {\n  let k = n\n}\nprint k",
    );
    let all: Vec<String> = diags(&src)
        .iter()
        .map(|d| src[d.span.start..d.span.end].to_string())
        .collect();
    assert_eq!(all, ["n", "k"]);
}

#[test]
fn expression_calls_are_builtins_or_script_functions() {
    let (d, text) = only(&recipe("", "print gelu(1)"), "dmove::recipe::unknown_name");
    assert_eq!(
        d.message,
        "no rule, transformation or function is named `gelu`"
    );
    assert_eq!(text, "gelu");
    assert!(d.note.as_deref().unwrap().contains("a built-in function"));
    let (d, text) = only(
        &with_m("let v = Parallelize(m)"),
        "dmove::recipe::bad_argument",
    );
    assert_eq!(
        d.message,
        "`Parallelize` is a transformation, which has no value"
    );
    assert_eq!(text, "Parallelize");
}

#[test]
fn statement_calls_are_rules_or_transformations() {
    let (d, text) = only(&recipe("", "len(maps())"), "dmove::recipe::bad_argument");
    assert_eq!(
        d.message,
        "`len` is a built-in function, not a rule or transformation"
    );
    assert_eq!(text, "len");
}

// -------------------------------------------------------------------- apply

#[test]
fn apply_targets_are_checked() {
    let src = recipe("rule two(a: map, b: map) {\n}\n", "apply two everywhere");
    let (d, text) = only(&src, "dmove::recipe::bad_argument");
    assert!(
        d.message
            .starts_with("`apply` needs a rule with one node- or pattern-typed parameter"),
        "{}",
        d.message
    );
    assert_eq!(text, "two");
    let (d, text) = only(
        &recipe("", "apply MapTiling everywhere"),
        "dmove::recipe::bad_argument",
    );
    assert_eq!(
        d.message,
        "`apply` cannot give MapTiling its required parameter `tiles`"
    );
    assert_eq!(text, "MapTiling");
    let (d, text) = only(
        &recipe(COMMON, "apply matmul_add everywhere\napply fold_bias once"),
        "dmove::recipe::unknown_name",
    );
    assert_eq!(text, "matmul_add");
    assert!(d
        .help
        .unwrap()
        .contains("apply a rule whose parameter has type `matmul_add`"));
    let (d, text) = only(
        &recipe("rule s(m: map) {\n}\n", "apply s at 3"),
        "dmove::recipe::bad_argument",
    );
    assert_eq!(d.message, "`apply s at` needs a map, found an integer");
    assert_eq!(text, "3");
}

// ----------------------------------------------------- transformation calls

#[test]
fn positional_arguments_fill_roles() {
    let (d, text) = only(&with_m("Parallelize(m, m)"), "dmove::recipe::bad_argument");
    assert_eq!(
        d.message,
        "Parallelize takes 1 positional argument(s), one per site role"
    );
    assert_eq!(text, "m");
    let (d, text) = only(
        &with_m("MapFusion(m, consumer = m, producer = m)"),
        "dmove::recipe::bad_argument",
    );
    assert!(
        d.message.contains("role of MapFusion is given twice"),
        "{}",
        d.message
    );
    assert_eq!(text, "producer = m");
}

#[test]
fn missing_roles_and_parameters_are_reported_with_their_doc() {
    let (d, text) = only(&with_m("MapFusion(m)"), "dmove::recipe::bad_argument");
    assert_eq!(d.message, "MapFusion needs its `consumer` role");
    assert_eq!(text, "MapFusion(m)");
    assert!(d.note.unwrap().starts_with("`consumer`: "));
    let (d, _) = only(&with_m("MapTiling(m)"), "dmove::recipe::bad_argument");
    assert_eq!(d.message, "MapTiling needs parameter `tiles`");
    assert_eq!(
        d.note.as_deref(),
        Some("`tiles`: tile size per map parameter, in order; 0 leaves that parameter untiled")
    );
}

#[test]
fn literal_parameter_values_fit_their_kind() {
    let (d, text) = only(
        &with_m("MapTiling(m, tiles = 16)"),
        "dmove::recipe::bad_argument",
    );
    assert!(
        d.message
            .starts_with("parameter `tiles` of MapTiling expects one integer per map parameter"),
        "{}",
        d.message
    );
    assert!(d.message.ends_with("found an integer"));
    assert_eq!(text, "16");
    let (d, text) = only(
        &with_m("Unroll(m, max = true)"),
        "dmove::recipe::bad_argument",
    );
    assert!(d.message.ends_with("found a boolean"), "{}", d.message);
    assert_eq!(text, "true");
    let (d, text) = only(
        &with_m("Unroll(m, max = 100)"),
        "dmove::recipe::bad_argument",
    );
    assert_eq!(
        d.message,
        "parameter `max` of Unroll expects an integer in 1..=16, found 100"
    );
    assert_eq!(text, "100");
    let (d, text) = only(
        &with_m("LayoutTransform(x.t, to = \"nhwk\")"),
        "dmove::recipe::bad_argument",
    );
    assert!(d.message.ends_with("found \"nhwk\""), "{}", d.message);
    assert_eq!(text, "\"nhwk\"");
    assert_eq!(d.help.as_deref(), Some("did you mean `nhwc`?"));
    let (_, text) = only(
        &with_m("MapTiling(m, tiles = [4, -1])"),
        "dmove::recipe::bad_argument",
    );
    assert_eq!(text, "[4, -1]");
}

#[test]
fn role_arguments_are_nodes_of_the_role_class() {
    let (d, text) = only(&with_m("Parallelize(3)"), "dmove::recipe::bad_argument");
    assert_eq!(
        d.message,
        "the `map` role of Parallelize needs a map, found an integer"
    );
    assert_eq!(text, "3");
    let (d, text) = only(&with_m("Parallelize(x.mm)"), "dmove::recipe::bad_argument");
    assert_eq!(
        d.message,
        "the `map` role of Parallelize needs a map, found an operator node (MatMul)"
    );
    assert_eq!(text, "x.mm");
    let (d, text) = only(
        &with_m("MatMulAddToGemm(x.add, x.add)"),
        "dmove::recipe::bad_argument",
    );
    assert!(d.message.starts_with("the `matmul` role"), "{}", d.message);
    assert_eq!(&text, "x.add");
    let (d, _) = only(&with_m("Parallelize(x)"), "dmove::recipe::bad_argument");
    assert_eq!(
        d.help.as_deref(),
        Some("pass one of the match's captures, e.g. `x.mm`")
    );
}

// ------------------------------------------------ rule and builtin calls

#[test]
fn rule_calls_check_arity_and_types() {
    let items = "rule tile_it(m: map, size: int) {\n  MapTiling(m, tiles = [size])\n}\n";
    let src = recipe(items, "for each m in maps() {\n  tile_it(m)\n}");
    let (d, text) = only(&src, "dmove::recipe::bad_argument");
    assert_eq!(d.message, "rule `tile_it` needs `size`");
    assert_eq!(text, "tile_it(m)");
    let src = recipe(items, "for each m in maps() {\n  tile_it(m, \"big\")\n}");
    let (d, text) = only(&src, "dmove::recipe::bad_argument");
    assert_eq!(
        d.message,
        "parameter `size` of rule `tile_it` needs an integer, found a string"
    );
    assert_eq!(text, "\"big\"");
}

#[test]
fn builtin_calls_check_arity_and_filters() {
    let (d, text) = only(&recipe("", "print len()"), "dmove::recipe::bad_argument");
    assert_eq!(
        d.message,
        "`len` takes 1 argument(s) (list), but 0 are given"
    );
    assert_eq!(text, "len()");
    let (d, text) = only(
        &recipe("", "print maps(dept = 0)"),
        "dmove::recipe::unknown_name",
    );
    assert_eq!(d.message, "`maps` has no filter `dept`");
    assert_eq!(text, "dept");
    assert_eq!(d.help.as_deref(), Some("did you mean `depth`?"));
    let (d, text) = only(
        &recipe("", "print maps(schedule = paralel)"),
        "dmove::recipe::bad_argument",
    );
    assert_eq!(d.message, "`paralel` is not a schedule");
    assert_eq!(text, "paralel");
}

#[test]
fn types_are_checked_where_known() {
    let (d, text) = only(
        &recipe("", "if len(maps()) { print 1 }"),
        "dmove::recipe::bad_argument",
    );
    assert_eq!(d.message, "`if` needs a boolean, found an integer");
    assert_eq!(text, "len(maps())");
    let (d, text) = only(
        &recipe("", "for each m in 3 { print m }"),
        "dmove::recipe::bad_argument",
    );
    assert_eq!(d.message, "`for each` needs a list, found an integer");
    assert_eq!(text, "3");
    let (d, text) = only(
        &recipe("", "expect dmd() < \"a\""),
        "dmove::recipe::bad_argument",
    );
    assert_eq!(d.message, "`<` needs a number, found a string");
    assert_eq!(text, "\"a\"");
    let (d, text) = only(
        &recipe("", "print baseline.dmdd"),
        "dmove::recipe::unknown_name",
    );
    assert_eq!(d.message, "`baseline` has no field `dmdd`");
    assert_eq!(text, "dmdd");
}

// ----------------------------------------------------- unsafe and choose

#[test]
fn unsafe_lowers_legality_or_numerics_only() {
    let src = recipe("", "unsafe(structural) because \"x\" {\n}");
    let (d, text) = only(&src, "dmove::recipe::bad_argument");
    assert_eq!(d.message, "structural invariants cannot be lowered");
    assert_eq!(text, "structural");
    let src = recipe("", "unsafe(legalty) because \"x\" {\n}");
    let (d, _) = only(&src, "dmove::recipe::bad_argument");
    assert_eq!(d.help.as_deref(), Some("did you mean `legality`?"));
}

#[test]
fn choose_names_existing_params_with_domains() {
    let src = recipe("param tile: int = 4\nchoose tiles by dmd\n", "print tile");
    let (d, text) = only(&src, "dmove::recipe::unknown_name");
    assert_eq!(text, "tiles");
    assert_eq!(d.help.as_deref(), Some("did you mean `tile`?"));
    let src = recipe("param tile: int = 4\nchoose tile by dmd\n", "print tile");
    let (d, text) = only(&src, "dmove::recipe::param");
    assert_eq!(d.message, "parameter `tile` has no domain to search");
    assert_eq!(text, "tile");
    let src = recipe(
        "param a: int in 1..100 = 1\nparam b: int in 1..100 = 1\nchoose a, b by dmd\n",
        "print a + b",
    );
    let (d, _) = only(&src, "dmove::recipe::param");
    assert_eq!(
        d.message,
        "this search tries 10000 combinations, more than 256"
    );
}

#[test]
fn param_defaults_fit_their_type() {
    let src = recipe(
        "param impl: enum(\"pure\", \"im2col\") = \"puer\"\nparam t: int = 1.5\n",
        "print impl, t",
    );
    let all = diags(&src);
    let texts: Vec<&str> = all.iter().map(|d| &src[d.span.start..d.span.end]).collect();
    assert_eq!(texts, ["\"puer\"", "1.5"]);
}

// ---------------------------------------------------------------- warnings

#[test]
fn unused_params_and_rules_are_warnings() {
    let src = recipe(
        "param tile: int = 4\nparam used: int = 2\nrule lonely(m: map) {\n  lonely(m)\n}\n",
        "print used",
    );
    let all = diags(&src);
    assert!(all
        .iter()
        .all(|d| d.severity == Severity::Warning && d.code == "dmove::recipe::unused"));
    let texts: Vec<&str> = all.iter().map(|d| &src[d.span.start..d.span.end]).collect();
    assert_eq!(texts, ["tile", "lonely"]);
    assert_eq!(all[0].message, "parameter `tile` is never used");
    assert_eq!(all[1].message, "rule `lonely` is never used");
}

// ----------------------------------------------------------------- patterns

#[test]
fn pattern_properties_and_constraints_are_checked() {
    let items = "pattern p {\n  a = data[dtype = f33, colour = 1]\n  b = op Add(a, zz)\n  a -> b\n  where uses(a) + 1\n}\nrule r(m: p) {\n}\n";
    let src = recipe(items, "apply r everywhere");
    let all = diags(&src);
    let found: Vec<(&str, &str)> = all
        .iter()
        .map(|d| (d.code, &src[d.span.start..d.span.end]))
        .collect();
    assert_eq!(
        found,
        [
            ("dmove::recipe::bad_argument", "f33"),
            ("dmove::recipe::bad_argument", "colour"),
            ("dmove::recipe::unknown_name", "zz"),
            ("dmove::recipe::bad_argument", "uses(a) + 1"),
        ]
    );
    assert_eq!(all[0].help.as_deref(), Some("did you mean `f32`?"));
    assert_eq!(all[3].message, "a pattern constraint compares uses(x), params(x) or rank(x) with an integer or another of them");
}

#[test]
fn a_disconnected_capture_is_reported_at_its_name() {
    let src = recipe(
        "pattern p {\n  a = op MatMul\n  b = op Add\n}\nrule r(m: p) {\n}\n",
        "apply r everywhere",
    );
    let (d, text) = only(&src, "dmove::recipe::bad_argument");
    assert!(
        d.message.contains("capture `b` is not connected"),
        "{}",
        d.message
    );
    assert_eq!(text, "b");
}

// ---------------------------------------------------------- many at once

#[test]
fn several_errors_are_all_reported_in_order() {
    let src = recipe(COMMON, "MapTilling(x)\nprint nope\napply fold_bias everywhere\nunsafe(structural) because \"r\" {\n}\nprint len(1, 2)");
    let all = diags(&src);
    let texts: Vec<&str> = all.iter().map(|d| &src[d.span.start..d.span.end]).collect();
    assert_eq!(
        texts,
        ["MapTilling", "x", "nope", "structural", "len(1, 2)", "1"]
    );
}

// ------------------------------------------------------------------ modules

fn temp_dir(name: &str) -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix(name)
        .tempdir()
        .expect("a temporary directory")
}

fn write(dir: &Path, name: &str, text: &str) {
    std::fs::write(dir.join(name), text).expect("writable");
}

fn module_errors(l: &Loaded) -> Vec<(String, String)> {
    let all = check(l);
    all.iter()
        .filter(|d| d.code == "dmove::recipe::module")
        .map(|d| {
            let text = l.sources.text(d.span.file);
            (
                d.message.clone(),
                text[d.span.start..d.span.end].to_string(),
            )
        })
        .collect()
}

#[test]
fn a_module_cycle_across_three_files_lists_the_chain() {
    let dir = temp_dir("cycle");
    write(
        dir.path(),
        "a.recipe",
        &format!("{HEADER}use \"./b.recipe\" as b\nmain {{\n}}\n"),
    );
    write(dir.path(), "b.recipe", "use \"./c.recipe\" as c\n");
    write(dir.path(), "c.recipe", "use \"./a.recipe\" as a\n");
    let root = dir.path().join("a.recipe");
    let l = load_file(&root);
    let errors = module_errors(&l);
    let chain = format!(
        "{} → ./b.recipe → ./c.recipe → {}",
        root.display(),
        root.display()
    );
    assert_eq!(
        errors,
        [(
            format!("modules use each other in a cycle: {chain}"),
            "use \"./a.recipe\" as a".to_string()
        )]
    );
    assert_eq!(l.modules.len(), 3);
}

#[test]
fn missing_files_and_duplicate_aliases_are_module_errors() {
    let dir = temp_dir("missing");
    write(dir.path(), "x.recipe", "param k: int = 1\n");
    let src = format!("{HEADER}use \"./nope.recipe\" as nope\nuse \"./x.recipe\" as x\nuse \"./x.recipe\" as x\nmain {{\n  print x::k\n  nope::r()\n}}\n");
    let l = load_source("t.recipe", &src, Some(dir.path()));
    let errors = module_errors(&l);
    assert_eq!(
        errors,
        [
            (
                "cannot read module \"./nope.recipe\"".to_string(),
                "use \"./nope.recipe\" as nope".to_string()
            ),
            ("two modules are used as `x`".to_string(), "x".to_string()),
        ]
    );
    // Names through the failed `use` are not reported again; x::k resolves.
    assert_eq!(check(&l).len(), 2, "{:#?}", check(&l));
    let tried = l.diagnostics[0].note.clone().unwrap();
    assert!(tried.contains("nope.recipe"), "{tried}");
}

#[test]
fn modules_are_loaded_once_and_hashed_in_order() {
    let dir = temp_dir("shared");
    write(dir.path(), "leaf.recipe", "param k: int = 1\n");
    write(
        dir.path(),
        "mid.recipe",
        "use \"./leaf.recipe\" as leaf\nparam j: int = 2\n",
    );
    let src = format!("{HEADER}use \"./mid.recipe\" as mid\nuse \"./leaf.recipe\" as leaf\nmain {{\n  print mid::leaf::k + leaf::k + mid::j\n}}\n");
    let l = load_source("t.recipe", &src, Some(dir.path()));
    assert_eq!(l.modules.len(), 3);
    assert_eq!(
        l.root().uses["leaf"],
        l.modules[l.root().uses["mid"]].uses["leaf"]
    );
    assert!(check(&l).is_empty(), "{:#?}", check(&l));
    assert_eq!(
        l.hash(),
        load_source("t.recipe", &src, Some(dir.path())).hash()
    );
    write(dir.path(), "leaf.recipe", "param k: int = 3\n");
    assert_ne!(
        l.hash(),
        load_source("t.recipe", &src, Some(dir.path())).hash()
    );
}

#[test]
fn a_syntax_error_in_a_module_is_recorded_and_loading_continues() {
    let dir = temp_dir("syntax");
    write(dir.path(), "bad.recipe", "rule (\n");
    write(dir.path(), "good.recipe", "param k: int = 1\n");
    let src = format!("{HEADER}use \"./bad.recipe\" as bad\nuse \"./good.recipe\" as good\nmain {{\n  bad::r()\n  print good::k\n}}\n");
    let l = load_source("t.recipe", &src, Some(dir.path()));
    assert_eq!(l.modules.len(), 3);
    let all = check(&l);
    assert_eq!(all.len(), 1, "{all:#?}");
    assert_eq!(all[0].code, "dmove::recipe::syntax");
    assert_eq!(l.sources.name(all[0].span.file), "./bad.recipe");
}

#[test]
fn a_file_that_is_not_utf8_is_a_module_error() {
    let dir = temp_dir("utf8");
    std::fs::write(dir.path().join("bin.recipe"), [0x66, 0xff, 0xfe]).expect("writable");
    let src = format!("{HEADER}use \"./bin.recipe\" as bin\nmain {{\n}}\n");
    let l = load_source("t.recipe", &src, Some(dir.path()));
    let note = l.diagnostics[0].note.clone().unwrap();
    assert!(note.contains("not UTF-8"), "{note}");
}

// --------------------------------------------------------- a clean recipe

#[test]
fn a_recipe_using_every_construct_is_clean() {
    let dir = temp_dir("clean");
    write(
        dir.path(),
        "common.recipe",
        "param width: int in [4, 8] = 8\nchoose width fixed\npattern pair {\n  a = map\n  b = map\n  a -> b\n}\nrule fuse(m: pair) {\n  try { MapFusion(producer = m.a, consumer = m.b) }\n}\n",
    );
    let src = r#"recipe "everything" version "1.2.3"
requires dmove ">=0.1"
use "./common.recipe" as common

param tile: int in pow2(8..64) = 16
param rows: int in [16, 32, 48] = 32
param unroll: int in 1..4 = 1
param alpha: float in [0.25, 0.5] = 0.5
param fuse: bool = true
param impl: enum("pure", "im2col") = "pure"
param cols: int in pow2(16..256) = 64 where tile * cols <= 8192
choose tile, cols by dmd
choose unroll by bench(reps = 5)
choose impl fixed

pattern matmul_add {
  mm  = op MatMul
  t   = data[kind = transient, dtype = f32, shape = [_, 64], rank = 2]
  add = op Add[alpha = 1.0]
  mm -> t -> add
  where uses(t) == 1 and 2 >= uses(mm)
}

pattern sugar {
  mm  = op MatMul
  add = op Add(mm, _)
}

pattern nest {
  m = map[params = 2, schedule = sequential]
  n = node
  x = tasklet
  m -> n -> x
  where params(m) >= params(m)
}

rule fold_bias(m: matmul_add) {
  MatMulAddToGemm(m.mm, m.add)
}

rule fold_sugar(m: sugar) {
  MatMulAddToGemm(matmul = m.mm, add = m.add)
}

rule schedule(m: map) {
  try { Parallelize(m) }
}

rule tile_it(m: map, size: int) {
  if params(m) > 1 {
    MapTiling(m, tiles = [size, 0])
  } else if params(m) == 1 {
    MapTiling(m, tiles = [size])
  } else {
    note "nothing to tile"
  }
}

main {
  let t = tile * rows / 16
  apply fold_bias everywhere
  apply fold_sugar once
  apply MapFusion everywhere
  apply common::fuse everywhere
  for each m in maps(depth = 0, schedule = sequential) {
    schedule(m)
    tile_it(m, t)
    common::fuse
    apply schedule at innermost(m)
    first { Vectorize(innermost(m)) } or { Unroll(outermost(m), max = unroll) }
    if fuse and alpha > 0.1 and exists(m) {
      MapInterchange(m, order = loop_order(m))
    }
    unsafe(numerics, legality) because "reassociation is fine here" {
      MapTiling(m, tiles = set(zeros(params(m)), longest(m), common::width))
    }
  }
  for each x in matches(nest) {
    print name(x.m), extent(x.m, 0), output_params(x.m)
  }
  for each n in ops("Conv") {
    Expand(n, impl = impl)
  }
  for each mt in matches(matmul_add) {
    LayoutTransform(mt.t, to = "nchw")
  }
  repeat (max 10) {
    apply MapFusion once
  } until fixpoint
  expect len(ops()) == 0, "every operator is lowered"
  expect dmd() < 0.5 * baseline.dmd and bytes() <= baseline.bytes
  expect time() < 0.8 * baseline.time
  print "maps:", len(maps()), min(1, 2), max(1.5, 2), range(3)[0], not fuse, -t
  note "tiles chosen for AVX-512"
  for each k in tasklets(in = maps()[0]) {
    print uses(k)
  }
}
"#;
    let src = src.replace("    common::fuse\n", "");
    write(dir.path(), "everything.recipe", &src);
    let l = load_file(&dir.path().join("everything.recipe"));
    let all = check(&l);
    assert!(all.is_empty(), "{}", l.sources.render_plain(&all));
}

#[test]
fn a_rendered_diagnostic_shows_code_label_note_and_help() {
    let src = recipe(
        "",
        "for each m in maps() {\n  MapTiling(m, tile = [4], tiles = [4])\n}",
    );
    let l = load_source("t.recipe", &src, None);
    let out = l.sources.render_plain(&check(&l));
    for part in [
        "dmove::recipe::unknown_name",
        "MapTiling has no role or parameter `tile`",
        "not a role or parameter of this transformation",
        "MapTiling: site roles map; parameters tiles",
        "did you mean `tiles`?",
        "t.recipe:5:16",
    ] {
        assert!(out.contains(part), "missing {part:?} in\n{out}");
    }
}
