//! Recipe parameters: every `param` of every loaded module with its type, domain, default and
//! constraint, and their initial values (`--set`, then a lock's decisions, then defaults).
//!
//! # Naming
//!
//! A parameter is known by one key everywhere a run reports or replays it (values maps, `--set`,
//! decisions, lock files): the root's `param tile` is `"tile"`; a module's is the alias path
//! under which the root reaches that module, then the name — `use std::cpu` makes cpu's `tile`
//! `"cpu::tile"`, and a module `b` that only `cpu` uses (as `b`) makes b's `tile`
//! `"cpu::b::tile"`. When a module is reachable along several alias paths the shortest one wins,
//! ties going to the alphabetically first alias at each level (the order of `Module::uses`), so
//! a key never depends on which file happened to be loaded first. [`ParamSpace::key`] turns a
//! name as written inside a module (`tile`, `b::tile`) into its key; the interpreter uses it to
//! evaluate `Name` paths.
//!
//! # Domains
//!
//! A domain is the ordered list of values a search tries: `in [..]` as listed, `lo..hi` the
//! integers from `lo` to `hi` inclusive, `pow2(lo..hi)` the powers of two in `[lo, hi]`
//! (`lo ≥ 1`); a `bool` without one is `[false, true]` and an `enum` its names in declaration
//! order. Ranges of floats are refused (write a list), and so is a domain of more than
//! [`MAX_DOMAIN`](super::domain::MAX_DOMAIN) values. `int` and `float` parameters may have no domain; a `choose … by
//! dmd|bench` over one is an error.

use super::choose::choose_items;
pub use super::choose::{Candidate, Decision};
use super::domain::{constant, domain, parse_set, show_domain, typed};
use super::eval::eval_const as eval;
use super::value::{ParamValue, Value};
use crate::recipe::ast;
use crate::recipe::diag::{Diagnostic, Span};
use crate::recipe::modules::Loaded;
use crate::recipe::resolve::suggest;
use std::collections::{BTreeMap, BTreeSet, VecDeque};

/// The code of every finding about parameter values.
pub const CODE: &str = "dmove::recipe::param";

/// The type of a parameter.
#[derive(Clone, Debug, PartialEq)]
pub enum ParamType {
    Int,
    Float,
    Bool,
    /// The names, in declaration order.
    Enum(Vec<String>),
}

impl ParamType {
    pub fn word(&self) -> &'static str {
        match self {
            ParamType::Int => "an int",
            ParamType::Float => "a float",
            ParamType::Bool => "a bool",
            ParamType::Enum(_) => "an enum",
        }
    }
}

/// One declared parameter, resolved.
#[derive(Clone, Debug, PartialEq)]
pub struct ParamInfo {
    /// `"tile"`, `"cpu::tile"` (see the module docs).
    pub key: String,
    /// Index of the declaring module in `Loaded::modules`.
    pub module: usize,
    pub ty: ParamType,
    /// The values a search tries, in order; `None` for an `int` or `float` without `in …`.
    pub domain: Option<Vec<ParamValue>>,
    pub default: Option<ParamValue>,
    /// The `where` expression, evaluated in the declaring module.
    pub constraint: Option<ast::Expr>,
    /// Keys of the parameters the constraint mentions (this one included when it does).
    pub constraint_keys: Vec<String>,
    /// The whole declaration (diagnostics about values point here).
    pub span: Span,
}

/// Every parameter of every loaded module.
#[derive(Clone, Debug, Default)]
pub struct ParamSpace {
    params: Vec<ParamInfo>,
    by_key: BTreeMap<String, usize>,
    /// Per module: the key prefix (`""` for the root, `"cpu::"`).
    prefixes: Vec<String>,
    /// Per module: its `use` aliases.
    uses: Vec<BTreeMap<String, usize>>,
}

/// A constraint that does not hold.
#[derive(Clone, Debug, PartialEq)]
pub struct Violation {
    /// Key of the parameter whose `where` failed.
    pub param: String,
    /// The values it was evaluated on: `tile = 64, cols = 256`.
    pub values: String,
    /// The constraint's span.
    pub span: Span,
}

impl ParamSpace {
    /// Every parameter, modules in load order and each module's in file order.
    pub fn params(&self) -> &[ParamInfo] {
        &self.params
    }

    pub fn get(&self, key: &str) -> Option<&ParamInfo> {
        self.by_key.get(key).map(|&i| &self.params[i])
    }

    /// The key prefix of `module`'s parameters (`""` for the root).
    pub fn prefix(&self, module: usize) -> &str {
        self.prefixes.get(module).map_or("", String::as_str)
    }

    /// The key of the parameter `path` names inside `module` (`tile`, `b::tile`), if it is one.
    pub fn key(&self, module: usize, path: &ast::Path) -> Option<String> {
        keys_of(&self.uses, &self.prefixes, &self.by_key, module, path)
    }

    /// Keys of the parameters a `choose` in `module` names.
    pub fn choose_keys(&self, module: usize, c: &ast::Choose) -> Result<Vec<String>, Diagnostic> {
        c.params
            .iter()
            .map(|id| {
                let key = format!("{}{}", self.prefix(module), id.name);
                match self.by_key.contains_key(&key) {
                    true => Ok(key),
                    false => Err(unknown_param(self, module, &id.name, id.span)),
                }
            })
            .collect()
    }

    /// The first constraint that does not hold on `values`, among those whose parameters all
    /// have a value; an error when a constraint does not evaluate to a boolean.
    pub fn violated(
        &self,
        values: &BTreeMap<String, ParamValue>,
    ) -> Result<Option<Violation>, Diagnostic> {
        for p in &self.params {
            let Some(c) = &p.constraint else { continue };
            if !p.constraint_keys.iter().all(|k| values.contains_key(k)) {
                continue;
            }
            let lookup = |path: &ast::Path| {
                let key = self.key(p.module, path)?;
                values.get(&key).cloned().map(Value::from)
            };
            match eval(c, &lookup)? {
                Value::Bool(true) => {}
                Value::Bool(false) => {
                    let shown: Vec<String> = (p.constraint_keys.iter())
                        .map(|k| format!("{k} = {}", values[k]))
                        .collect();
                    return Ok(Some(Violation {
                        param: p.key.clone(),
                        values: shown.join(", "),
                        span: c.span,
                    }));
                }
                other => {
                    return Err(Diagnostic::error(
                        CODE,
                        c.span,
                        format!("the constraint of `{}` is not a condition", p.key),
                    )
                    .label(format!("this is {}, not a boolean", other.kind())))
                }
            }
        }
        Ok(None)
    }
}

/// The parameter space of `l` and the initial value of every parameter: its `--set` value, else
/// its value in `fixed` (decisions replayed from a lock), else its default, else — for a
/// parameter without a default that a `choose … by dmd|bench` decides — the first value of its
/// domain, which the search replaces. Every value is checked against its type and domain, and
/// every constraint against the values; all problems are returned at once.
pub fn resolve_params(
    l: &Loaded,
    set: &BTreeMap<String, String>,
    fixed: &BTreeMap<String, ParamValue>,
) -> Result<(ParamSpace, BTreeMap<String, ParamValue>), Vec<Diagnostic>> {
    let (space, broken, mut diags) = build_space(l);
    let searched = searched_keys(l, &space);
    let mut values = BTreeMap::new();
    for (key, text) in set {
        // A parameter whose declaration is broken is already reported; it is not unknown.
        if space.get(key).is_none() && !broken.contains(key) {
            diags.push(unknown_set(l, &space, key, text));
        }
    }
    for key in (fixed.keys()).filter(|k| space.get(k).is_none() && !broken.contains(*k)) {
        diags.push(
            Diagnostic::error(
                CODE,
                root_span(l),
                format!("the lock records a value for `{key}`, which this recipe does not declare"),
            )
            .help("a parameter was renamed or removed; run `dmove check --update` to re-record"),
        );
    }
    for p in &space.params {
        let value = if let Some(text) = set.get(&p.key) {
            let why = format!("from `--set {}={text}`", p.key);
            parse_set(&p.ty, text)
                .and_then(|v| in_domain(p, v))
                .map_err(|e| bad_value(p, &e, &why))
        } else if let Some(v) = fixed.get(&p.key) {
            typed(&p.ty, Value::from(v.clone()))
                .and_then(|v| in_domain(p, v))
                .map_err(|e| bad_value(p, &e, "recorded in the lock"))
        } else if let Some(v) = &p.default {
            Ok(v.clone())
        } else if let (true, Some(first)) = (
            searched.contains(&p.key),
            p.domain.as_ref().and_then(|d| d.first()),
        ) {
            Ok(first.clone())
        } else {
            Err(
                Diagnostic::error(CODE, p.span, format!("`{}` has no value", p.key))
                    .label("no default")
                    .help(format!(
                        "give it a default (`= …`) or decide it with `choose {} by dmd`",
                        last_segment(&p.key)
                    )),
            )
        };
        match value {
            Ok(v) => {
                values.insert(p.key.clone(), v);
            }
            Err(d) => diags.push(d),
        }
    }
    if diags.is_empty() {
        match space.violated(&values) {
            Ok(None) => {}
            Ok(Some(v)) => diags.push(violation(
                &v,
                "the initial values (defaults, `--set`, lock)",
            )),
            Err(d) => diags.push(d),
        }
    }
    match diags.is_empty() {
        true => Ok((space, values)),
        false => Err(diags),
    }
}

/// A failed constraint as a diagnostic; `what` says which values were tried.
pub fn violation(v: &Violation, what: &str) -> Diagnostic {
    Diagnostic::error(
        CODE,
        v.span,
        format!("the constraint of `{}` does not hold", v.param),
    )
    .label(format!("false for {}", v.values))
    .note(format!("checked on {what}"))
}

/// `v` when it lies in `p`'s domain (a parameter without a domain takes any value of its type).
fn in_domain(p: &ParamInfo, v: ParamValue) -> Result<ParamValue, String> {
    match &p.domain {
        Some(d) if !d.contains(&v) => Err(format!("{v} is not in the domain {}", show_domain(d))),
        _ => Ok(v),
    }
}

fn bad_value(p: &ParamInfo, msg: &str, why: &str) -> Diagnostic {
    Diagnostic::error(CODE, p.span, format!("bad value for `{}`: {msg}", p.key))
        .label("declared here")
        .note(format!("the value is {why}"))
}

/// Every parameter of every module, keyed (see the module docs), the keys of those whose
/// declaration is broken (left out of the space) and the problems found.
fn build_space(l: &Loaded) -> (ParamSpace, BTreeSet<String>, Vec<Diagnostic>) {
    let mut space = ParamSpace {
        prefixes: prefixes(l),
        uses: l.modules.iter().map(|m| m.uses.clone()).collect(),
        ..ParamSpace::default()
    };
    let mut diags = Vec::new();
    let mut broken = BTreeSet::new();
    for (module, m) in l.modules.iter().enumerate() {
        for item in &m.ast.items {
            let ast::Item::Param(decl) = item else {
                continue;
            };
            let key = format!("{}{}", space.prefix(module), decl.name.name);
            if space.by_key.contains_key(&key) {
                diags.push(
                    Diagnostic::error(
                        "dmove::recipe::duplicate",
                        decl.name.span,
                        format!("parameter `{}` is declared twice", decl.name.name),
                    )
                    .label("declared again here"),
                );
                continue;
            }
            match declare(key.clone(), module, decl) {
                Ok(info) => {
                    space.by_key.insert(key, space.params.len());
                    space.params.push(info);
                }
                Err(mut d) => {
                    diags.append(&mut d);
                    broken.insert(key);
                }
            }
        }
    }
    for p in &mut space.params {
        let Some(c) = &p.constraint else { continue };
        let mut keys = BTreeSet::new();
        for path in names_in(c) {
            match keys_of(&space.uses, &space.prefixes, &space.by_key, p.module, path) {
                Some(k) => {
                    keys.insert(k);
                }
                None => diags.push(
                    Diagnostic::error(
                        "dmove::recipe::unknown_name",
                        path.span,
                        format!("`{}` is not a parameter", path.text()),
                    )
                    .label("a constraint may only name parameters"),
                ),
            }
        }
        p.constraint_keys = keys.into_iter().collect();
    }
    (space, broken, diags)
}

/// [`ParamSpace::key`] on the parts of a space under construction.
fn keys_of(
    uses: &[BTreeMap<String, usize>],
    prefixes: &[String],
    by_key: &BTreeMap<String, usize>,
    module: usize,
    path: &ast::Path,
) -> Option<String> {
    let (last, aliases) = path.segments.split_last()?;
    let mut m = module;
    for alias in aliases {
        m = *uses.get(m)?.get(&alias.name)?;
    }
    let key = format!("{}{}", prefixes.get(m)?, last.name);
    by_key.contains_key(&key).then_some(key)
}

/// The key prefix of every module: a breadth-first walk of the alias graph from the root, so
/// the shortest alias path wins (see the module docs).
fn prefixes(l: &Loaded) -> Vec<String> {
    let mut out: Vec<Option<String>> = vec![None; l.modules.len()];
    let mut queue = VecDeque::new();
    if !out.is_empty() {
        out[0] = Some(String::new());
        queue.push_back(0);
    }
    while let Some(m) = queue.pop_front() {
        let prefix = out[m].clone().unwrap_or_default();
        for (alias, &next) in &l.modules[m].uses {
            if out.get(next).is_some_and(Option::is_none) {
                out[next] = Some(format!("{prefix}{alias}::"));
                queue.push_back(next);
            }
        }
    }
    // A module the root cannot reach (only possible after a load error) keeps its own name.
    (out.into_iter().zip(&l.modules))
        .map(|(p, m)| p.unwrap_or_else(|| format!("{}::", m.name)))
        .collect()
}

/// One declaration: type, domain and default evaluated and checked.
fn declare(key: String, module: usize, decl: &ast::Param) -> Result<ParamInfo, Vec<Diagnostic>> {
    let ty = match &decl.ty {
        ast::ParamType::Int(_) => ParamType::Int,
        ast::ParamType::Float(_) => ParamType::Float,
        ast::ParamType::Bool(_) => ParamType::Bool,
        ast::ParamType::Enum(names, _) => {
            ParamType::Enum(names.iter().map(|s| s.value.clone()).collect())
        }
    };
    let mut diags = Vec::new();
    let domain = match &decl.domain {
        Some(d) => domain(&ty, d).map(Some).unwrap_or_else(|e| {
            diags.push(e);
            None
        }),
        None => match &ty {
            ParamType::Bool => Some(vec![ParamValue::Bool(false), ParamValue::Bool(true)]),
            ParamType::Enum(names) => Some(names.iter().cloned().map(ParamValue::Str).collect()),
            ParamType::Int | ParamType::Float => None,
        },
    };
    let default = decl.default.as_ref().and_then(|e| {
        let v = constant(&ty, e).and_then(|v| {
            let domain_ok = domain.as_ref().is_none_or(|d| d.contains(&v));
            match domain_ok {
                true => Ok(v),
                false => Err(Diagnostic::error(
                    CODE,
                    e.span,
                    format!("the default of `{key}` is not in its domain"),
                )
                .label(format!(
                    "{v} is not in {}",
                    show_domain(domain.as_deref().unwrap_or(&[]))
                ))),
            }
        });
        v.map_err(|d| diags.push(d)).ok()
    });
    if !diags.is_empty() {
        return Err(diags);
    }
    Ok(ParamInfo {
        key,
        module,
        ty,
        domain,
        default,
        constraint: decl.constraint.clone(),
        constraint_keys: Vec::new(),
        span: decl.span,
    })
}

/// Keys of the parameters some `choose … by dmd|bench` searches.
fn searched_keys(l: &Loaded, space: &ParamSpace) -> BTreeSet<String> {
    (choose_items(l).into_iter())
        .filter(|(_, c)| !matches!(c.by, ast::ChooseBy::Fixed(_)))
        .flat_map(|(module, c)| space.choose_keys(module, c).unwrap_or_default())
        .collect()
}

fn unknown_set(l: &Loaded, space: &ParamSpace, key: &str, text: &str) -> Diagnostic {
    let keys: Vec<&str> = space.params.iter().map(|p| p.key.as_str()).collect();
    let d = Diagnostic::error(
        CODE,
        root_span(l),
        format!("`--set {key}={text}`: no parameter `{key}`"),
    )
    .note(format!("parameters: {}", keys.join(", ")));
    match suggest(key, keys) {
        Some(c) => d.help(format!("did you mean `{c}`?")),
        None => d,
    }
}

/// `--set` keys as the parameter space spells them (see [`root_key`]).
pub fn canonical_sets(l: &Loaded, set: &BTreeMap<String, String>) -> BTreeMap<String, String> {
    let (space, _, _) = build_space(l);
    (set.iter())
        .map(|(key, text)| (root_key(l, &space, key), text.clone()))
        .collect()
}

/// `key` as the parameter space spells it: the root's own parameters have no prefix, but a
/// user who read `--set cpu::outer_tile` in `std::cpu`'s comments (written for recipes that
/// `use std::cpu`) means the same parameter when running `std::cpu` itself; so does one who
/// prefixes a recipe's parameter with the recipe's name (`tiny::tile`).
fn root_key(l: &Loaded, space: &ParamSpace, key: &str) -> String {
    let root = l.root();
    let header = root.ast.header.as_ref().map(|h| h.name.value.as_str());
    let names = [Some(root.name.as_str()), header].into_iter().flatten();
    let aliases: Vec<&str> = names
        .flat_map(|n| [n, n.rsplit("::").next().unwrap_or(n)])
        .collect();
    (aliases.iter())
        .filter_map(|alias| key.strip_prefix(alias)?.strip_prefix("::"))
        .find(|rest| space.get(rest).is_some_and(|p| p.module == 0))
        .map_or_else(|| key.to_string(), str::to_string)
}

/// An error for each `--set` (canonical keys) of a declared parameter that no body of the run
/// reads: it would be recorded in the lock and change nothing. Unknown names are
/// [`resolve_params`]'s to report.
pub fn unread_sets(l: &Loaded, set: &BTreeMap<String, String>) -> Vec<Diagnostic> {
    let (space, _, _) = build_space(l);
    let read = crate::recipe::check::params_read(l);
    let is_read =
        |p: &ParamInfo| read.contains(&(p.module, p.key[space.prefix(p.module).len()..].into()));
    (set.iter())
        .filter(|(key, _)| space.get(key).is_some_and(|p| !is_read(p)))
        .map(|(key, text)| unread_set(l, &space, &is_read, key, text))
        .collect()
}

fn unread_set(
    l: &Loaded,
    space: &ParamSpace,
    is_read: &dyn Fn(&ParamInfo) -> bool,
    key: &str,
    text: &str,
) -> Diagnostic {
    let keys: Vec<&str> = (space.params.iter())
        .filter(|p| is_read(p))
        .map(|p| p.key.as_str())
        .collect();
    let shown = match keys.is_empty() {
        true => "none".to_string(),
        false => keys.join(", "),
    };
    Diagnostic::error(
        CODE,
        root_span(l),
        format!("`--set {key}={text}` changes nothing: no rule this run calls reads `{key}`"),
    )
    .note(format!("parameters this run reads: {shown}"))
    .help("set one of those; a module's parameter matters only where its rules read it rather than take the value as an argument")
}

fn unknown_param(space: &ParamSpace, module: usize, name: &str, span: Span) -> Diagnostic {
    let prefix = space.prefix(module);
    let local = (space.params.iter())
        .filter(|p| p.module == module)
        .map(|p| &p.key[prefix.len()..]);
    let d = Diagnostic::error(
        "dmove::recipe::unknown_name",
        span,
        format!("no parameter `{name}`"),
    )
    .label("not a parameter of this file");
    match suggest(name, local) {
        Some(c) => d.help(format!("did you mean `{c}`?")),
        None => d,
    }
}

/// The start of the root file: where a finding about the command line is shown.
fn root_span(l: &Loaded) -> Span {
    let file = l.modules.first().map(|m| m.file).unwrap_or_default();
    Span::new(file, 0, 0)
}

fn last_segment(key: &str) -> &str {
    key.rsplit("::").next().unwrap_or(key)
}

/// Every `Name` path in `e`, in source order (the parameters a constraint mentions).
fn names_in(e: &ast::Expr) -> Vec<&ast::Path> {
    let mut out = Vec::new();
    let mut stack = vec![e];
    while let Some(e) = stack.pop() {
        match &e.kind {
            ast::ExprKind::Name(p) => out.push(p),
            ast::ExprKind::List(items) => stack.extend(items.iter().rev()),
            ast::ExprKind::Field(base, _) | ast::ExprKind::Unary(_, base) => stack.push(base),
            ast::ExprKind::Index(a, b) | ast::ExprKind::Binary(_, a, b) => {
                stack.push(b);
                stack.push(a);
            }
            ast::ExprKind::Call(c) => stack.extend(c.args.iter().rev().map(|a| &a.value)),
            ast::ExprKind::Int(_)
            | ast::ExprKind::Float(_)
            | ast::ExprKind::Bool(_)
            | ast::ExprKind::Str(_)
            | ast::ExprKind::Wildcard => {}
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::super::domain::{pow2_values, range_values};
    use super::*;

    #[test]
    fn ranges_and_powers_of_two_at_the_edges() {
        assert_eq!(range_values(-1, 1), Ok(vec![-1, 0, 1]));
        assert!(range_values(i64::MIN, i64::MAX).is_err_and(|e| e.contains("more than 4096")));
        assert_eq!(pow2_values(1, 1), Ok(vec![1]));
        assert_eq!(pow2_values(3, i64::MAX).map(|v| v.len()), Ok(61));
        assert!(pow2_values(-4, 8).is_err());
    }

    #[test]
    fn set_text_is_read_by_type() {
        let e = ParamType::Enum(vec!["pure".into()]);
        assert_eq!(
            parse_set(&ParamType::Float, "2"),
            Ok(ParamValue::Float(2.0))
        );
        assert!(parse_set(&ParamType::Float, "inf").is_err());
        assert_eq!(
            parse_set(&e, " \"pure\" "),
            Ok(ParamValue::Str("pure".into()))
        );
        assert!(parse_set(&e, "\"").is_err());
        assert!(parse_set(&ParamType::Int, "1.0").is_err());
    }
}
