//! A script's transformation declaration, read into the same [`Schema`] built-ins declare.
//!
//! A script declares a transformation by calling `transformation(#{ … })` at its top level;
//! this module reads that map strictly — an unknown key, a wrong type or an unknown level,
//! node class or parameter kind is refused with the key named — so a typo in a declaration
//! is an error at load time, not a parameter silently ignored at run time. Schemas are
//! `'static` like the built-ins': a script's declarations are leaked once per distinct script
//! text ([`super::load`] interns scripts by hash), which bounds the memory by the scripts a
//! process loads.

use crate::transform::{Default, Level, ListLen, NodeClass, ParamDecl, ParamKind, Role, Schema};
use rhai::{Dynamic, FnPtr, Map};

/// A declared transformation: its schema and the script functions behind it.
#[derive(Clone, Debug)]
pub struct Declaration {
    pub schema: &'static Schema,
    /// `fn(program, site, args)`: `()` or `true` when it applies, a reason string otherwise.
    pub check: FnPtr,
    /// `fn(edit, site, args)`: the rewrite, through the edit primitives.
    pub rewrite: FnPtr,
    /// `fn(program)`: sites worth trying; absent means every node of the one role's class.
    pub candidates: Option<FnPtr>,
}

const KEYS: &[&str] = &[
    "name",
    "level",
    "doc",
    "site",
    "params",
    "check",
    "rewrite",
    "candidates",
];

/// Reads a declaration map; `builtin(name)` says whether a name is taken by a built-in.
pub fn declaration(decl: Map, taken: &dyn Fn(&str) -> bool) -> Result<Declaration, String> {
    unknown_keys(&decl, KEYS, "a transformation declaration")?;
    let name = string(&decl, "name", "the transformation")?;
    if !is_identifier(&name) {
        return Err(format!(
            "`{name}` is not a valid transformation name (letters, digits and `_`, starting with a letter)"
        ));
    }
    if taken(&name) {
        return Err(format!(
            "a transformation named `{name}` already exists; a script cannot replace a built-in or another script's transformation"
        ));
    }
    let level = match string(&decl, "level", &name)?.as_str() {
        "operator" => Level::Operator,
        "expansion" => Level::Expansion,
        "intra_operator" => Level::IntraOperator,
        "inter_operator" => Level::InterOperator,
        other => {
            return Err(format!(
                "`{name}`: level `{other}` is not one of operator, expansion, intra_operator, inter_operator"
            ))
        }
    };
    let doc = leak(string(&decl, "doc", &name)?);
    let site = list(&decl, "site", &name)?
        .into_iter()
        .map(|r| role(r, &name))
        .collect::<Result<Vec<_>, _>>()?;
    if site.is_empty() {
        return Err(format!("`{name}`: `site` must declare at least one role"));
    }
    let params = match decl.get("params") {
        None => Vec::new(),
        Some(_) => (list(&decl, "params", &name)?.into_iter())
            .map(|p| param(p, &name))
            .collect::<Result<Vec<_>, _>>()?,
    };
    let schema: &'static Schema = Box::leak(Box::new(Schema {
        name: leak(name.clone()),
        level,
        doc,
        site: Box::leak(site.into_boxed_slice()),
        params: Box::leak(params.into_boxed_slice()),
    }));
    Ok(Declaration {
        schema,
        check: function(&decl, "check", &name)?
            .ok_or_else(|| format!("`{name}` declares no `check` function"))?,
        rewrite: function(&decl, "rewrite", &name)?
            .ok_or_else(|| format!("`{name}` declares no `rewrite` function"))?,
        candidates: function(&decl, "candidates", &name)?,
    })
}

fn leak(s: String) -> &'static str {
    Box::leak(s.into_boxed_str())
}

fn is_identifier(s: &str) -> bool {
    let mut chars = s.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

fn unknown_keys(m: &Map, accepted: &[&str], what: &str) -> Result<(), String> {
    match m.keys().find(|k| !accepted.contains(&k.as_str())) {
        Some(k) => Err(format!(
            "`{k}` is not a key of {what}; accepted: {}",
            accepted.join(", ")
        )),
        None => Ok(()),
    }
}

fn string(m: &Map, key: &str, owner: &str) -> Result<String, String> {
    let v = (m.get(key)).ok_or_else(|| format!("{owner}: `{key}` is required"))?;
    v.clone()
        .into_string()
        .map_err(|found| format!("{owner}: `{key}` must be a string, found {found}"))
}

fn list(m: &Map, key: &str, owner: &str) -> Result<Vec<Map>, String> {
    let v = (m.get(key)).ok_or_else(|| format!("`{owner}`: `{key}` is required"))?;
    let items = (v.clone().into_array())
        .map_err(|found| format!("`{owner}`: `{key}` must be an array of maps, found {found}"))?;
    (items.into_iter())
        .map(|i| {
            let found = i.type_name();
            i.try_cast::<Map>().ok_or_else(|| {
                format!("`{owner}`: each entry of `{key}` must be a map `#{{…}}`, found {found}")
            })
        })
        .collect()
}

fn function(m: &Map, key: &str, owner: &str) -> Result<Option<FnPtr>, String> {
    match m.get(key) {
        None => Ok(None),
        Some(v) => {
            let found = v.type_name();
            (v.clone().try_cast::<FnPtr>()).map(Some).ok_or_else(|| {
                format!("`{owner}`: `{key}` must be a function (`Fn(\"name\")` or a closure), found {found}")
            })
        }
    }
}

fn int(m: &Map, key: &str, owner: &str, default: i64) -> Result<i64, String> {
    match m.get(key) {
        None => Ok(default),
        Some(v) => v
            .as_int()
            .map_err(|found| format!("{owner}: `{key}` must be an integer, found {found}")),
    }
}

fn flag(m: &Map, key: &str, owner: &str) -> Result<bool, String> {
    match m.get(key) {
        None => Ok(false),
        Some(v) => v
            .as_bool()
            .map_err(|found| format!("{owner}: `{key}` must be true or false, found {found}")),
    }
}

fn strings(m: &Map, key: &str, owner: &str) -> Result<&'static [&'static str], String> {
    let Some(v) = m.get(key) else {
        return Ok(&[]);
    };
    let items = (v.clone().into_array())
        .map_err(|found| format!("{owner}: `{key}` must be an array of strings, found {found}"))?;
    let names = (items.into_iter())
        .map(|i| {
            i.into_string()
                .map(leak)
                .map_err(|found| format!("{owner}: `{key}` must hold strings, found {found}"))
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Box::leak(names.into_boxed_slice()))
}

fn role(r: Map, t: &str) -> Result<Role, String> {
    unknown_keys(
        &r,
        &["name", "node", "ops", "doc", "optional"],
        "a site role",
    )?;
    let name = leak(string(&r, "name", &format!("`{t}` site role"))?);
    let owner = format!("`{t}` role `{name}`");
    let class = match string(&r, "node", &owner)?.as_str() {
        "map" => NodeClass::Map,
        "access" => NodeClass::Access,
        "tasklet" => NodeClass::Tasklet,
        "op" => NodeClass::Library {
            ops: strings(&r, "ops", &owner)?,
        },
        other => {
            return Err(format!(
                "{owner}: node class `{other}` is not one of map, op, access, tasklet"
            ))
        }
    };
    let doc = leak(string(&r, "doc", &owner)?);
    Ok(if flag(&r, "optional", &owner)? {
        Role::optional(name, class, doc)
    } else {
        Role::new(name, class, doc)
    })
}

fn param(p: Map, t: &str) -> Result<ParamDecl, String> {
    unknown_keys(
        &p,
        &[
            "name", "kind", "min", "max", "len", "values", "default", "optional", "doc",
        ],
        "a parameter declaration",
    )?;
    let name = leak(string(&p, "name", &format!("`{t}` parameter"))?);
    let owner = format!("`{t}` parameter `{name}`");
    let (min, max) = (
        int(&p, "min", &owner, i64::MIN)?,
        int(&p, "max", &owner, i64::MAX)?,
    );
    let kind = match string(&p, "kind", &owner)?.as_str() {
        "int" => ParamKind::Int { min, max },
        "ints" => ParamKind::Ints {
            len: match p.get("len").map(|v| v.to_string()).as_deref() {
                None | Some("any") => ListLen::Any,
                Some("per_map_param") => ListLen::PerMapParam,
                Some(other) => {
                    return Err(format!(
                        "{owner}: `len` `{other}` is not any or per_map_param"
                    ))
                }
            },
            min,
            max,
        },
        "bool" => ParamKind::Bool,
        "enum" => ParamKind::Enum {
            values: strings(&p, "values", &owner)?,
        },
        "data" => ParamKind::Data,
        "map_param" => ParamKind::MapParam,
        other => {
            return Err(format!(
                "{owner}: kind `{other}` is not one of int, ints, bool, enum, data, map_param"
            ))
        }
    };
    let default = match (p.get("default"), flag(&p, "optional", &owner)?) {
        (Some(_), true) => {
            return Err(format!(
                "{owner}: give either `default` or `optional`, not both"
            ))
        }
        (None, true) => Default::Optional,
        (None, false) => Default::Required,
        (Some(v), false) => default_of(v, &kind, &owner)?,
    };
    Ok(ParamDecl {
        name,
        kind,
        default,
        doc: leak(string(&p, "doc", &owner)?),
    })
}

fn default_of(v: &Dynamic, kind: &ParamKind, owner: &str) -> Result<Default, String> {
    let wrong = || {
        format!(
            "{owner}: the default {v} does not fit the kind ({})",
            kind.describe()
        )
    };
    Ok(match kind {
        ParamKind::Int { min, max } => {
            let i = v.as_int().map_err(|_| wrong())?;
            if i < *min || i > *max {
                return Err(wrong());
            }
            Default::Int(i)
        }
        ParamKind::Bool => Default::Bool(v.as_bool().map_err(|_| wrong())?),
        ParamKind::Enum { values } => {
            let s = v.clone().into_string().map_err(|_| wrong())?;
            match values.iter().find(|x| **x == s) {
                Some(x) => Default::Str(x),
                None => return Err(wrong()),
            }
        }
        _ => {
            return Err(format!(
                "{owner}: only int, bool and enum parameters take a `default`; say `optional: true` and decide in the rewrite"
            ))
        }
    })
}
