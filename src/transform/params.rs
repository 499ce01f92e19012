//! Typed parameters: what a transformation declares, what a caller gives, and the one validator
//! between them.
//!
//! A transformation declares each parameter as data ([`ParamDecl`]): a kind with its domain, a
//! default or "required", and a doc line. The engine validates the caller's [`Params`] against
//! the declarations *before* the transformation sees them ([`Args::validate`]): an unknown key
//! names the accepted keys and the closest one, a wrong type says what was expected, a value out
//! of its domain says the domain. The transformation then reads [`Args`], which holds exactly the
//! declared keys, defaults filled in and map parameters resolved to positions.

use super::{NotApplicable, Schema};
use crate::ir::{NodeId, NodeKind, Program};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt;

/// A parameter value as given by a caller or recorded in a trace.
///
/// JSON keeps its natural form (`16`, `[16, 0]`, `"nhwc"`, `true`); which variant a value must
/// have is decided by the declaration, never guessed from the text.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum ParamValue {
    Bool(bool),
    Int(i64),
    Ints(Vec<i64>),
    Str(String),
}

impl fmt::Display for ParamValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ParamValue::Bool(b) => write!(f, "{b}"),
            ParamValue::Int(v) => write!(f, "{v}"),
            ParamValue::Ints(v) => {
                let items: Vec<String> = v.iter().map(|x| x.to_string()).collect();
                f.write_str(&items.join(","))
            }
            ParamValue::Str(s) => f.write_str(s),
        }
    }
}

impl ParamValue {
    /// What kind of value this is, in words (for "expected …, found …").
    fn describe(&self) -> String {
        match self {
            ParamValue::Bool(b) => format!("the boolean {b}"),
            ParamValue::Int(v) => format!("the integer {v}"),
            ParamValue::Ints(v) if v.len() == 1 => format!("the list {self} (1 entry)"),
            ParamValue::Ints(v) => format!("the list {self} ({} entries)", v.len()),
            ParamValue::Str(s) => format!("the name `{s}`"),
        }
    }
}

/// Named parameters of one application, as given.
pub type Params = BTreeMap<String, ParamValue>;

/// How many entries an integer list must have.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ListLen {
    /// One entry per parameter of the site's map (the first site role).
    PerMapParam,
    /// Any number of entries, at least one.
    Any,
}

/// The kind of a parameter, with its domain.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ParamKind {
    /// One integer in `min..=max`.
    Int {
        min: i64,
        max: i64,
    },
    /// A list of integers, each in `min..=max`.
    Ints {
        len: ListLen,
        min: i64,
        max: i64,
    },
    /// One of the named values.
    Enum {
        values: &'static [&'static str],
    },
    Bool,
    /// The name of a data container the program declares.
    Data,
    /// A parameter of the site's map (the first site role), by name or by position.
    MapParam,
    /// A named implementation of the site's operator (the first site role, a library node).
    Implementation,
}

impl ParamKind {
    /// The kind in words, as "expected …" says it.
    pub fn describe(&self) -> String {
        match self {
            ParamKind::Int { min, max } => format!("an integer in {}", bounds(*min, *max)),
            ParamKind::Ints { len, min, max } => {
                let count = match len {
                    ListLen::PerMapParam => "one integer per map parameter",
                    ListLen::Any => "a list of integers",
                };
                format!("{count}, each in {} (e.g. 32,32,0)", bounds(*min, *max))
            }
            ParamKind::Enum { values } => format!("one of {}", values.join(", ")),
            ParamKind::Bool => "true or false".to_string(),
            ParamKind::Data => "the name of a data container".to_string(),
            ParamKind::MapParam => "a map parameter, by name or position".to_string(),
            ParamKind::Implementation => "an implementation of the operator".to_string(),
        }
    }
}

fn bounds(min: i64, max: i64) -> String {
    match (min, max) {
        (lo, i64::MAX) => format!("{lo}.."),
        (lo, hi) => format!("{lo}..={hi}"),
    }
}

/// A parameter's default.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Default {
    /// The caller must give it.
    Required,
    /// It may be absent; the transformation then decides (the doc line says how).
    Optional,
    Int(i64),
    Bool(bool),
    Str(&'static str),
}

impl Default {
    fn value(self) -> Option<ParamValue> {
        match self {
            Default::Required | Default::Optional => None,
            Default::Int(v) => Some(ParamValue::Int(v)),
            Default::Bool(b) => Some(ParamValue::Bool(b)),
            Default::Str(s) => Some(ParamValue::Str(s.to_string())),
        }
    }
}

/// Declares one parameter a transformation accepts.
#[derive(Clone, Copy, Debug)]
pub struct ParamDecl {
    pub name: &'static str,
    pub kind: ParamKind,
    pub default: Default,
    pub doc: &'static str,
}

impl ParamDecl {
    /// `tiles: one integer per map parameter, each in 0.. (e.g. 32,32,0); required — tile size
    /// …`: how listings and editors show a parameter.
    pub fn describe(&self) -> String {
        let default = match self.default {
            Default::Required => "required".to_string(),
            Default::Optional => "optional".to_string(),
            Default::Int(v) => format!("default {v}"),
            Default::Bool(b) => format!("default {b}"),
            Default::Str(s) => format!("default {s}"),
        };
        format!(
            "{}: {}; {default} — {}",
            self.name,
            self.kind.describe(),
            self.doc
        )
    }
}

impl Serialize for ParamDecl {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut m = s.serialize_map(None)?;
        m.serialize_entry("name", self.name)?;
        m.serialize_entry("type", &self.kind)?;
        m.serialize_entry("required", &(self.default == Default::Required))?;
        m.serialize_entry("default", &self.default.value())?;
        m.serialize_entry("doc", self.doc)?;
        m.end()
    }
}

/// Why given parameters do not fit a transformation's declarations.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error, miette::Diagnostic)]
pub enum ParamError {
    #[error("{transformation} has no parameter `{key}`")]
    #[diagnostic(
        code(dmove::params::unknown),
        help("{}", accepted_help(accepted, closest))
    )]
    Unknown {
        transformation: &'static str,
        key: String,
        accepted: Vec<&'static str>,
        closest: Option<&'static str>,
    },
    #[error("{transformation}: parameter `{key}` is required")]
    #[diagnostic(code(dmove::params::missing), help("`{key}`: {expected}; {doc}"))]
    Missing {
        transformation: &'static str,
        key: &'static str,
        expected: String,
        doc: &'static str,
    },
    #[error("{transformation}: parameter `{key}` expects {expected}, found {found}")]
    #[diagnostic(code(dmove::params::mistyped))]
    Mistyped {
        transformation: &'static str,
        key: &'static str,
        expected: String,
        found: String,
    },
}

fn accepted_help(accepted: &[&str], closest: &Option<&str>) -> String {
    let list = if accepted.is_empty() {
        "it takes no parameters".to_string()
    } else {
        format!("accepted: {}", accepted.join(", "))
    };
    match closest {
        Some(c) => format!("did you mean `{c}`? {list}"),
        None => list,
    }
}

/// The closest of `names` to `word`, when close enough to be a likely misspelling.
pub fn closest<'a>(word: &str, names: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    names
        .into_iter()
        .map(|n| {
            (
                strsim::jaro_winkler(&word.to_lowercase(), &n.to_lowercase()),
                n,
            )
        })
        .filter(|(score, _)| *score >= 0.8)
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, n)| n)
}

/// Validated parameters: every declared key that has a value (given or default), typed as
/// declared, map parameters resolved to positions.
#[derive(Clone, Debug, PartialEq)]
pub struct Args {
    transformation: &'static str,
    anchor: NodeId,
    values: BTreeMap<&'static str, ParamValue>,
}

impl Args {
    /// Checks `given` against `schema` for an application at `site` (already checked against
    /// the schema's roles, `anchor` being its first node), filling in defaults.
    pub fn validate(
        schema: &Schema,
        p: &Program,
        site: &[NodeId],
        anchor: NodeId,
        given: &Params,
    ) -> Result<Args, ParamError> {
        let t = schema.name;
        if let Some(key) = given
            .keys()
            .find(|k| schema.params.iter().all(|d| d.name != k.as_str()))
        {
            let accepted: Vec<&str> = schema.params.iter().map(|d| d.name).collect();
            return Err(ParamError::Unknown {
                transformation: t,
                closest: closest(key, accepted.iter().copied()),
                key: key.clone(),
                accepted,
            });
        }
        let map_params = site_map_params(p, site);
        let implementations = site_implementations(p, site);
        let mut values = BTreeMap::new();
        for d in schema.params {
            let value = match (given.get(d.name), d.default.value()) {
                (Some(v), _) => check_value(t, d, v, &map_params, implementations, p)?,
                (None, Some(v)) => v,
                // An absent implementation is the operator's default (its first), recorded as
                // such so a replay is exact.
                (None, None) if d.kind == ParamKind::Implementation => {
                    match implementations.first() {
                        Some(first) => ParamValue::Str(first.to_string()),
                        None => continue,
                    }
                }
                (None, None) if d.default == Default::Optional => continue,
                (None, None) => {
                    return Err(ParamError::Missing {
                        transformation: t,
                        key: d.name,
                        expected: d.kind.describe(),
                        doc: d.doc,
                    })
                }
            };
            values.insert(d.name, value);
        }
        Ok(Args {
            transformation: t,
            anchor,
            values,
        })
    }

    /// The values as a trace records them (defaults included, so a replay is exact even if a
    /// default changes).
    pub fn to_params(&self) -> Params {
        (self.values.iter())
            .map(|(k, v)| (k.to_string(), v.clone()))
            .collect()
    }

    /// The raw value of `name`, if it has one.
    pub fn get(&self, name: &str) -> Option<&ParamValue> {
        self.values.get(name)
    }

    fn missing(&self, name: &str, what: &str) -> NotApplicable {
        NotApplicable {
            transformation: self.transformation,
            node: self.anchor,
            reason: format!("parameter `{name}` ({what}) has no value"),
            fault: None,
        }
    }

    /// Integer parameter `name` (a map parameter reads as its position).
    pub fn int(&self, name: &str) -> Result<i64, NotApplicable> {
        match self.get(name) {
            Some(ParamValue::Int(v)) => Ok(*v),
            _ => Err(self.missing(name, "an integer")),
        }
    }

    /// Integer-list parameter `name`.
    pub fn ints(&self, name: &str) -> Result<&[i64], NotApplicable> {
        match self.get(name) {
            Some(ParamValue::Ints(v)) => Ok(v),
            _ => Err(self.missing(name, "a list of integers")),
        }
    }

    /// Name-valued parameter `name` (an enumeration's choice or a data container).
    pub fn str(&self, name: &str) -> Result<&str, NotApplicable> {
        match self.get(name) {
            Some(ParamValue::Str(s)) => Ok(s),
            _ => Err(self.missing(name, "a name")),
        }
    }

    /// Boolean parameter `name`.
    pub fn flag(&self, name: &str) -> Result<bool, NotApplicable> {
        match self.get(name) {
            Some(ParamValue::Bool(b)) => Ok(*b),
            _ => Err(self.missing(name, "true or false")),
        }
    }
}

/// Parameter names of the site's map (its first role), when it is a map.
fn site_map_params(p: &Program, site: &[NodeId]) -> Vec<String> {
    match site.first().and_then(|id| p.node(*id)).map(|n| &n.kind) {
        Some(NodeKind::Map(m)) => m.params.iter().map(|q| q.name.clone()).collect(),
        _ => Vec::new(),
    }
}

/// Implementations of the site's operator (its first role), when it is a library node.
fn site_implementations(p: &Program, site: &[NodeId]) -> &'static [&'static str] {
    match site.first().and_then(|id| p.node(*id)).map(|n| &n.kind) {
        Some(NodeKind::Library(l)) => crate::ops::lookup(&l.op).map_or(&[], |op| op.expansions()),
        _ => &[],
    }
}

fn check_value(
    t: &'static str,
    d: &ParamDecl,
    v: &ParamValue,
    map_params: &[String],
    implementations: &[&str],
    p: &Program,
) -> Result<ParamValue, ParamError> {
    let wrong = |found: String| ParamError::Mistyped {
        transformation: t,
        key: d.name,
        expected: d.kind.describe(),
        found,
    };
    let in_range = |x: i64, min: i64, max: i64| (min..=max).contains(&x);
    match (&d.kind, v) {
        (ParamKind::Int { min, max }, ParamValue::Int(x)) if in_range(*x, *min, *max) => {
            Ok(v.clone())
        }
        (ParamKind::Ints { len, min, max }, ParamValue::Ints(xs)) => {
            let want = match len {
                ListLen::PerMapParam => Some(map_params.len()),
                ListLen::Any => None,
            };
            if xs.is_empty() || want.is_some_and(|n| n != xs.len()) {
                let per = want.map_or(String::new(), |n| {
                    format!("; the map has {n} parameters ({})", map_params.join(", "))
                });
                return Err(wrong(format!("{}{per}", v.describe())));
            }
            match xs.iter().find(|x| !in_range(**x, *min, *max)) {
                Some(bad) => Err(wrong(format!("{} (entry {bad})", v.describe()))),
                None => Ok(v.clone()),
            }
        }
        (ParamKind::Enum { values }, ParamValue::Str(s)) if values.contains(&s.as_str()) => {
            Ok(v.clone())
        }
        (ParamKind::Bool, ParamValue::Bool(_)) => Ok(v.clone()),
        (ParamKind::Data, ParamValue::Str(s)) => {
            if p.data.contains_key(s) {
                Ok(v.clone())
            } else {
                let hint = closest(s, p.data.keys().map(String::as_str))
                    .map_or(String::new(), |c| format!(" (did you mean `{c}`?)"));
                Err(wrong(format!(
                    "`{s}`, which the program does not declare{hint}"
                )))
            }
        }
        (ParamKind::MapParam, ParamValue::Str(s)) => match map_params.iter().position(|q| q == s) {
            Some(k) => Ok(ParamValue::Int(k as i64)),
            None => Err(wrong(format!(
                "`{s}`; the map's parameters are {}",
                map_params.join(", ")
            ))),
        },
        (ParamKind::MapParam, ParamValue::Int(k))
            if usize::try_from(*k).is_ok_and(|k| k < map_params.len()) =>
        {
            Ok(v.clone())
        }
        (ParamKind::Implementation, ParamValue::Str(s)) => {
            if implementations.contains(&s.as_str()) {
                Ok(v.clone())
            } else {
                Err(wrong(format!(
                    "`{s}`; this operator's implementations are {}",
                    implementations.join(", ")
                )))
            }
        }
        (ParamKind::MapParam, ParamValue::Int(k)) => Err(wrong(format!(
            "position {k}; the map has {} parameters",
            map_params.len()
        ))),
        _ => Err(wrong(v.describe())),
    }
}

/// Reads `text` (from a command line) as a value of `kind`: the declaration decides.
pub fn parse_value(kind: &ParamKind, text: &str) -> Option<ParamValue> {
    let text = text.trim();
    let int = |s: &str| s.trim().parse::<i64>().ok();
    match kind {
        ParamKind::Int { .. } => int(text).map(ParamValue::Int),
        ParamKind::Ints { .. } => text
            .split(',')
            .map(int)
            .collect::<Option<Vec<_>>>()
            .map(ParamValue::Ints),
        ParamKind::Bool => text.parse().ok().map(ParamValue::Bool),
        ParamKind::MapParam => {
            Some(int(text).map_or_else(|| ParamValue::Str(text.to_string()), ParamValue::Int))
        }
        ParamKind::Enum { .. } | ParamKind::Data | ParamKind::Implementation => {
            Some(ParamValue::Str(text.to_string()))
        }
    }
}
