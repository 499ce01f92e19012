//! The primitive edits a scripted transformation's `rewrite` is built from.
//!
//! These are the same edits the built-ins make, exposed one by one and nothing more: reorder a
//! map's parameters, set its schedule, set an operator attribute or a node's label, rename a
//! symbol inside a scope, and run another registered transformation's rewrite as part of this
//! one. Each works only while the engine runs the rewrite ([`super::world::with_edit`]), inside
//! its transaction: whatever the script does, invariants, races and numerics are checked after
//! it and the program is restored when any check fails.

use super::convert::{params_from, site_from};
use super::views::node_id;
use super::world::with_edit;
use crate::ir::{Attr, NodeId, NodeKind, Program, Schedule, SymExpr};
use crate::transform::engine::plan_at;
use rhai::{Array, CustomType, Dynamic, Engine, EvalAltResult, Map, TypeBuilder};

type Res<T> = Result<T, Box<EvalAltResult>>;

/// The edit handle a `rewrite` receives.
#[derive(Clone, Copy, Debug, Default)]
pub struct Edit;

pub fn register(e: &mut Engine) {
    e.build_type::<Edit>();
}

fn edit<R>(f: impl FnOnce(&mut Program) -> Result<R, String>) -> Res<R> {
    with_edit(f)
        .map_err(Box::<EvalAltResult>::from)?
        .map_err(Box::<EvalAltResult>::from)
}

/// The node `id` of the lent program, mutably, as `what` (for messages).
fn node_kind(p: &mut Program, id: NodeId) -> Result<&mut NodeKind, String> {
    let e = p
        .edit(id)
        .ok_or_else(|| format!("the program has no node {id}"))?;
    Ok(&mut e.graph.node_mut(e.idx).kind)
}

fn reorder_params(p: &mut Program, id: NodeId, order: &Array) -> Result<(), String> {
    let NodeKind::Map(m) = node_kind(p, id)? else {
        return Err(format!("node {id} is not a map"));
    };
    let order: Vec<usize> = (order.iter())
        .map(|v| v.as_int().ok().and_then(|i| usize::try_from(i).ok()))
        .collect::<Option<_>>()
        .ok_or("an order is a list of parameter positions")?;
    let mut sorted = order.clone();
    sorted.sort_unstable();
    if sorted != (0..m.params.len()).collect::<Vec<_>>() {
        return Err(format!(
            "{order:?} is not a permutation of the map's {} parameters",
            m.params.len()
        ));
    }
    m.params = order.iter().map(|&k| m.params[k].clone()).collect();
    Ok(())
}

fn set_schedule(p: &mut Program, id: NodeId, name: &str) -> Result<(), String> {
    let schedule = Schedule::from_name(name).ok_or_else(|| {
        format!("`{name}` is not a schedule (sequential, parallel, vector, unrolled)")
    })?;
    match node_kind(p, id)? {
        NodeKind::Map(m) => {
            m.schedule = schedule;
            Ok(())
        }
        _ => Err(format!("node {id} is not a map")),
    }
}

fn attr_of(v: &Dynamic) -> Result<Attr, String> {
    if let Ok(i) = v.as_int() {
        return Ok(Attr::Int(i));
    }
    if let Ok(f) = v.as_float() {
        return Ok(Attr::Float(f));
    }
    if let Some(s) = v.clone().try_cast::<rhai::ImmutableString>() {
        return Ok(Attr::Str(s.to_string()));
    }
    if let Some(items) = v.clone().try_cast::<Array>() {
        if let Ok(ints) = items
            .iter()
            .map(|x| x.as_int())
            .collect::<Result<Vec<_>, _>>()
        {
            return Ok(Attr::Ints(ints));
        }
        if let Ok(fs) = items
            .iter()
            .map(|x| x.as_float())
            .collect::<Result<Vec<_>, _>>()
        {
            return Ok(Attr::Floats(fs));
        }
    }
    Err(format!(
        "{} is not an attribute value (an integer, a float, a string, or a list of integers or floats)",
        v.type_name()
    ))
}

fn set_attr(p: &mut Program, id: NodeId, name: &str, value: &Dynamic) -> Result<(), String> {
    let value = attr_of(value)?;
    match node_kind(p, id)? {
        NodeKind::Library(l) => {
            l.attrs.insert(name.to_string(), value);
            Ok(())
        }
        _ => Err(format!("node {id} is not an operator node")),
    }
}

fn set_label(p: &mut Program, id: NodeId, label: &str) -> Result<(), String> {
    let e = p
        .edit(id)
        .ok_or_else(|| format!("the program has no node {id}"))?;
    e.graph.node_mut(e.idx).label = label.to_string();
    Ok(())
}

/// Renames symbol `from` to `to` inside the body of map `id` (and the map's own ranges).
fn rename_symbol(p: &mut Program, id: NodeId, from: &str, to: &str) -> Result<(), String> {
    let NodeKind::Map(m) = node_kind(p, id)? else {
        return Err(format!("node {id} is not a map"));
    };
    let f = |s: &str| (s == from).then(|| SymExpr::sym(to));
    for prm in &mut m.params {
        prm.range = prm.range.map_exprs(&|e| e.substitute_all(&f));
        if prm.name == from {
            prm.name = to.to_string();
        }
    }
    crate::ir::rewrite::substitute_symbols(&mut m.body, &f);
    Ok(())
}

/// Runs the registered transformation `name` at `site` as part of this rewrite (validated
/// and planned like any step; checked with the enclosing step).
fn compose(p: &mut Program, name: &str, site: &[NodeId], params: &Map) -> Result<Array, String> {
    let t = crate::transform::find(name).map_err(|e| e.to_string())?;
    let params = params_from(params)?;
    let planned = plan_at(p, t, site, &params, false).map_err(|e| e.to_string())?;
    let touched = planned.run_within(p).map_err(|e| e.to_string())?;
    Ok(super::convert::site_array(&touched))
}

impl CustomType for Edit {
    fn build(mut b: TypeBuilder<Self>) {
        b.with_name("Edit")
            .with_fn(
                "reorder_params",
                |_: &mut Self, map: Dynamic, order: Array| {
                    let id = node_id(&map)?;
                    edit(|p| reorder_params(p, id, &order))
                },
            )
            .with_fn("set_schedule", |_: &mut Self, map: Dynamic, name: &str| {
                let id = node_id(&map)?;
                edit(|p| set_schedule(p, id, name))
            })
            .with_fn(
                "set_attr",
                |_: &mut Self, node: Dynamic, name: &str, v: Dynamic| {
                    let id = node_id(&node)?;
                    edit(|p| set_attr(p, id, name, &v))
                },
            )
            .with_fn("set_label", |_: &mut Self, node: Dynamic, label: &str| {
                let id = node_id(&node)?;
                edit(|p| set_label(p, id, label))
            })
            .with_fn(
                "rename_symbol",
                |_: &mut Self, map: Dynamic, from: &str, to: &str| {
                    let id = node_id(&map)?;
                    edit(|p| rename_symbol(p, id, from, to))
                },
            )
            .with_fn(
                "apply",
                |_: &mut Self, name: &str, site: Dynamic, params: Map| {
                    let site = site_from(&site).map_err(Box::<EvalAltResult>::from)?;
                    edit(|p| compose(p, name, &site, &params))
                },
            );
    }
}
