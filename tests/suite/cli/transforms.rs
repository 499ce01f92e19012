//! `dmove transforms --json`: every schema, complete and typed.

use super::support::{assert_success, dmove, stdout};
use serde::Deserialize;
use std::collections::BTreeSet;

/// One transformation as `--json` prints it. Unknown fields are refused, so a schema that grows
/// a field or renames one fails here until the test (and the tools reading it) learn it.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Schema {
    name: String,
    level: Level,
    doc: String,
    site: Vec<Role>,
    params: Vec<Param>,
}

#[derive(Debug, Deserialize, PartialEq, Eq)]
enum Level {
    Operator,
    Expansion,
    IntraOperator,
    InterOperator,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Role {
    name: String,
    node: NodeClass,
    optional: bool,
    doc: String,
}

#[derive(Debug, Deserialize, PartialEq, Eq)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
enum NodeClass {
    Map,
    Library { ops: Vec<String> },
    Access,
    Tasklet,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Param {
    name: String,
    #[serde(rename = "type")]
    ty: ParamType,
    required: bool,
    default: Option<serde_json::Value>,
    doc: String,
}

#[derive(Debug, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
enum ListLen {
    PerMapParam,
    Any,
}

#[derive(Debug, Deserialize, PartialEq, Eq)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
enum ParamType {
    Int { min: i64, max: i64 },
    Ints { len: ListLen, min: i64, max: i64 },
    Enum { values: Vec<String> },
    Bool,
    Data,
    MapParam,
    Implementation,
}

fn schemas() -> (serde_json::Value, Vec<Schema>) {
    let dir = tempfile::tempdir().expect("tempdir");
    let o = dmove(&["transforms", "--json"], dir.path());
    assert_success(&o);
    assert!(
        o.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let raw: serde_json::Value = serde_json::from_slice(&o.stdout).expect("valid JSON");
    let entries = raw.as_array().expect("a JSON array of schemas");
    let parsed = entries
        .iter()
        .map(|e| {
            serde_json::from_value::<Schema>(e.clone())
                .unwrap_or_else(|err| panic!("entry does not parse as a schema: {err}\n{e:#}"))
        })
        .collect();
    (raw, parsed)
}

#[test]
fn every_entry_is_a_complete_schema() {
    let (_, schemas) = schemas();
    assert!(!schemas.is_empty());
    // Without `--script`, `dmove transforms` lists the built-ins; `all()` would also hold
    // what scripts loaded by other tests in this process registered.
    let registry: Vec<&str> = (dmove::transform::builtins().iter())
        .map(|t| t.name())
        .collect();
    let names: Vec<&str> = schemas.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(
        names, registry,
        "one schema per transformation, in registry order"
    );
    let mut sorted = names.clone();
    sorted.sort_unstable();
    assert_eq!(names, sorted, "alphabetical");
    for s in &schemas {
        let t = &s.name;
        assert!(!s.doc.trim().is_empty(), "{t}: empty doc");
        assert!(!s.site.is_empty(), "{t}: no site roles");
        let roles: BTreeSet<&str> = s.site.iter().map(|r| r.name.as_str()).collect();
        assert_eq!(roles.len(), s.site.len(), "{t}: duplicate role names");
        let first_optional = s.site.iter().position(|r| r.optional);
        if let Some(k) = first_optional {
            assert!(
                s.site[k..].iter().all(|r| r.optional),
                "{t}: a required role follows an optional one"
            );
        }
        for r in &s.site {
            assert!(!r.name.is_empty(), "{t}: unnamed role");
            assert!(!r.doc.trim().is_empty(), "{t}.{}: empty doc", r.name);
        }
        let params: BTreeSet<&str> = s.params.iter().map(|p| p.name.as_str()).collect();
        assert_eq!(
            params.len(),
            s.params.len(),
            "{t}: duplicate parameter names"
        );
        for p in &s.params {
            let at = format!("{t}.{}", p.name);
            assert!(!p.doc.trim().is_empty(), "{at}: empty doc");
            if p.required {
                assert_eq!(p.default, None, "{at}: required yet has a default");
            }
            match &p.ty {
                ParamType::Int { min, max } | ParamType::Ints { min, max, .. } => {
                    assert!(min <= max, "{at}: empty domain {min}..={max}");
                    if let Some(d) = p.default.as_ref().and_then(|d| d.as_i64()) {
                        assert!(
                            (*min..=*max).contains(&d),
                            "{at}: default {d} out of domain"
                        );
                    }
                }
                ParamType::Enum { values } => {
                    assert!(!values.is_empty(), "{at}: no values");
                    if let Some(d) = &p.default {
                        let d = d.as_str().expect("an enumeration's default is a name");
                        assert!(values.iter().any(|v| v == d), "{at}: default `{d}`");
                    }
                }
                ParamType::Bool => {
                    if let Some(d) = &p.default {
                        assert!(d.is_boolean(), "{at}: default {d}");
                    }
                }
                ParamType::Data | ParamType::MapParam | ParamType::Implementation => {}
            }
        }
    }
}

#[test]
fn map_tiling_tiles_is_a_required_list_with_one_entry_per_map_parameter() {
    let (raw, schemas) = schemas();
    let tiling = schemas
        .iter()
        .find(|s| s.name == "MapTiling")
        .expect("MapTiling is listed");
    assert_eq!(tiling.level, Level::IntraOperator);
    assert_eq!(tiling.site.len(), 1);
    assert_eq!(tiling.site[0].name, "map");
    assert_eq!(tiling.site[0].node, NodeClass::Map);
    assert!(!tiling.site[0].optional);
    assert_eq!(tiling.params.len(), 1);
    let tiles = &tiling.params[0];
    assert_eq!(tiles.name, "tiles");
    assert!(tiles.required);
    assert_eq!(tiles.default, None);
    assert_eq!(
        tiles.ty,
        ParamType::Ints {
            len: ListLen::PerMapParam,
            min: 0,
            max: i64::MAX
        }
    );
    // The same, read straight from the JSON (the field spellings tools rely on).
    let entry = (raw.as_array().expect("array").iter())
        .find(|e| e["name"] == "MapTiling")
        .expect("MapTiling");
    let tiles = &entry["params"][0];
    assert_eq!(tiles["type"]["kind"], "ints");
    assert_eq!(tiles["type"]["len"], "per_map_param");
    assert_eq!(tiles["required"], true);
    assert!(tiles["default"].is_null());
}

#[test]
fn roles_and_parameters_of_a_few_transformations() {
    let (_, schemas) = schemas();
    let get = |name: &str| {
        schemas
            .iter()
            .find(|s| s.name == name)
            .unwrap_or_else(|| panic!("{name} is listed"))
    };
    let fusion = get("MapFusion");
    let roles: Vec<(&str, &NodeClass)> = fusion
        .site
        .iter()
        .map(|r| (r.name.as_str(), &r.node))
        .collect();
    assert_eq!(
        roles,
        [("producer", &NodeClass::Map), ("consumer", &NodeClass::Map)]
    );
    assert!(fusion.params.is_empty());
    let gemm = get("MatMulAddToGemm");
    assert_eq!(
        gemm.site[0].node,
        NodeClass::Library {
            ops: vec!["MatMul".into()]
        }
    );
    let strip = get("StripMining");
    let kinds: Vec<(&str, &ParamType)> = strip
        .params
        .iter()
        .map(|p| (p.name.as_str(), &p.ty))
        .collect();
    assert_eq!(kinds[0], ("param", &ParamType::MapParam));
    assert_eq!(kinds[1].0, "size");
    assert!(matches!(kinds[1].1, ParamType::Int { min: 2, .. }));
    let layout = get("LayoutTransform");
    assert!(
        matches!(&layout.params[0].ty, ParamType::Enum { values } if values.contains(&"nhwc".to_string()))
    );
}

#[test]
fn the_text_listing_names_every_transformation_with_its_parameters() {
    let dir = tempfile::tempdir().expect("tempdir");
    let o = dmove(&["transforms"], dir.path());
    assert_success(&o);
    let text = stdout(&o);
    let (_, schemas) = schemas();
    for s in &schemas {
        let header = text
            .lines()
            .find(|l| l.starts_with(&format!("{} (", s.name)))
            .unwrap_or_else(|| panic!("no block for {}:\n{text}", s.name));
        assert!(header.ends_with(')'), "{header}");
        for p in &s.params {
            assert!(
                text.contains(&format!("      {}: ", p.name)),
                "{}.{} is not listed",
                s.name,
                p.name
            );
        }
    }
    assert!(
        text.contains("tiles: one integer per map parameter, each in 0.. (e.g. 32,32,0); required"),
        "{text}"
    );
}
