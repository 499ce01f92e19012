//! Values across the script boundary: parameters, sites and node handles.
//!
//! A parameter reaches a script as the value it has in a trace (`16`, `[16, 0]`, `"nhwc"`,
//! `true`), and a script gives parameters back the same way; which variant a value must be is
//! decided by the schema the engine validates against, never guessed here.

use super::views::{node_id, NodeRef};
use crate::ir::NodeId;
use crate::transform::{Args, ParamValue, Params};
use rhai::{Array, Dynamic, Map};

pub fn param_value(v: &ParamValue) -> Dynamic {
    match v {
        ParamValue::Bool(b) => Dynamic::from_bool(*b),
        ParamValue::Int(i) => Dynamic::from_int(*i),
        ParamValue::Ints(v) => {
            Dynamic::from_array(v.iter().map(|x| Dynamic::from_int(*x)).collect())
        }
        ParamValue::Str(s) => Dynamic::from(s.clone()),
    }
}

/// A script's value as a parameter value, or what it was instead.
pub fn to_param_value(v: &Dynamic) -> Result<ParamValue, String> {
    if let Ok(b) = v.as_bool() {
        return Ok(ParamValue::Bool(b));
    }
    if let Ok(i) = v.as_int() {
        return Ok(ParamValue::Int(i));
    }
    if let Some(s) = v.clone().try_cast::<rhai::ImmutableString>() {
        return Ok(ParamValue::Str(s.to_string()));
    }
    if let Some(items) = v.clone().try_cast::<Array>() {
        return (items.iter())
            .map(|x| {
                x.as_int()
                    .map_err(|t| format!("a list of integers holds {t}"))
            })
            .collect::<Result<Vec<_>, _>>()
            .map(ParamValue::Ints);
    }
    Err(format!(
        "{} is not a parameter value (an integer, a list of integers, a string or a boolean)",
        v.type_name()
    ))
}

/// Validated arguments as the map a script's `check` and `rewrite` receive.
pub fn args_map(args: &Args) -> Map {
    (args.to_params().iter())
        .map(|(k, v)| (k.into(), param_value(v)))
        .collect()
}

/// A map of parameters a script gives to `apply`.
pub fn params_from(m: &Map) -> Result<Params, String> {
    (m.iter())
        .map(|(k, v)| {
            to_param_value(v)
                .map(|v| (k.to_string(), v))
                .map_err(|e| format!("parameter `{k}`: {e}"))
        })
        .collect()
}

pub fn site_array(site: &[NodeId]) -> Array {
    site.iter().map(|id| Dynamic::from(NodeRef(*id))).collect()
}

/// One site: a node (or id), or an array of them.
pub fn site_from(v: &Dynamic) -> Result<Vec<NodeId>, String> {
    match v.clone().try_cast::<Array>() {
        Some(items) => (items.iter())
            .map(|x| node_id(x).map_err(|e| e.to_string()))
            .collect(),
        None => node_id(v).map(|id| vec![id]).map_err(|e| e.to_string()),
    }
}

/// A list of sites, as `candidates` returns (each a node or an array of nodes).
pub fn sites_from(v: &Dynamic) -> Result<Vec<Vec<NodeId>>, String> {
    let items = (v.clone().try_cast::<Array>())
        .ok_or_else(|| format!("{}, not an array of sites", v.type_name()))?;
    items.iter().map(site_from).collect()
}
