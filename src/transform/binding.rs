//! Patterns feed transformations: a match binds capture names to nodes, and a binding says which
//! capture fills each of a transformation's site roles (by default, the capture of the role's
//! name). The binding is checked against the pattern and the schema before anything runs, so a
//! capture that cannot fill its role (a map bound to an operator role, a Relu bound to an Add
//! role) is an error when a recipe is loaded, not a refusal at some node later.

use super::site::a_node;
use super::{NodeClass, Schema, Transformation};
use crate::ir::{NodeId, Program};
use crate::pattern::{find_all, library::builtin, Match, Pattern, Pred};

/// Why a binding of captures to roles does not fit.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error, miette::Diagnostic)]
pub enum BindError {
    #[error("{transformation} has no site role `{role}`")]
    #[diagnostic(code(dmove::bind::role), help("its roles are {roles}"))]
    UnknownRole {
        transformation: &'static str,
        role: String,
        roles: String,
    },
    #[error("pattern `{pattern}` has no capture `{capture}` (for the `{role}` role)")]
    #[diagnostic(code(dmove::bind::capture), help("its captures are {captures}"))]
    UnknownCapture {
        pattern: String,
        capture: String,
        role: &'static str,
        captures: String,
    },
    #[error("capture `{capture}` is {found}, but the `{role}` role of {transformation} needs {expected}")]
    #[diagnostic(code(dmove::bind::kind))]
    WrongKind {
        transformation: &'static str,
        role: &'static str,
        capture: String,
        found: String,
        expected: String,
    },
}

/// Which capture fills each role: `(role, capture)` pairs; roles not listed take the capture
/// of their own name, optional roles with no such capture stay empty.
pub type Binding<'a> = [(&'a str, &'a str)];

/// The capture that fills `role` under `binding`.
fn capture_for<'a>(role: &'a str, binding: &Binding<'a>) -> &'a str {
    (binding.iter())
        .find(|(r, _)| *r == role)
        .map_or(role, |(_, c)| c)
}

/// Checks `binding` of `pattern`'s captures to `schema`'s roles, without any program.
pub fn check_binding(
    schema: &Schema,
    pattern: &Pattern,
    binding: &Binding,
) -> Result<(), BindError> {
    let roles: Vec<&str> = schema.site.iter().map(|r| r.name).collect();
    if let Some((role, _)) = binding.iter().find(|(r, _)| !roles.contains(r)) {
        return Err(BindError::UnknownRole {
            transformation: schema.name,
            role: role.to_string(),
            roles: roles.join(", "),
        });
    }
    let captures = pattern.captures();
    for role in schema.site {
        let capture = capture_for(role.name, binding);
        let Some(preds) = pattern.capture_preds(capture) else {
            if role.optional {
                continue;
            }
            return Err(BindError::UnknownCapture {
                pattern: pattern.name().to_string(),
                capture: capture.to_string(),
                role: role.name,
                captures: captures.join(", "),
            });
        };
        if let Some(found) = conflict(&role.class, preds) {
            return Err(BindError::WrongKind {
                transformation: schema.name,
                role: role.name,
                capture: capture.to_string(),
                found,
                expected: role.class.describe(),
            });
        }
    }
    Ok(())
}

/// What a capture's predicates say it is, when that can never fill `class`.
fn conflict(class: &NodeClass, preds: &[Pred]) -> Option<String> {
    use crate::pattern::NodeClass as Kind;
    preds.iter().find_map(|pred| match (class, pred) {
        (NodeClass::Library { ops }, Pred::Op(op))
            if !ops.is_empty() && !ops.contains(&op.as_str()) =>
        {
            Some(a_node(op))
        }
        (NodeClass::Library { .. }, Pred::Kind(k)) if *k != Kind::Library => Some(a_node(k.name())),
        (NodeClass::Map, Pred::Kind(k)) if *k != Kind::Map => Some(a_node(k.name())),
        (NodeClass::Map, Pred::Op(op)) => Some(a_node(op)),
        (NodeClass::Access, Pred::Kind(k)) if *k != Kind::Access => Some(a_node(k.name())),
        (NodeClass::Access, Pred::Op(op)) => Some(a_node(op)),
        (NodeClass::Tasklet, Pred::Kind(k)) if *k != Kind::Tasklet => Some(a_node(k.name())),
        (NodeClass::Tasklet, Pred::Op(op)) => Some(a_node(op)),
        _ => None,
    })
}

/// The site that match `m` of `pattern` gives `schema` under `binding` (checked with
/// [`check_binding`] first): one node per role, in role order, optional roles left out.
pub fn site_of(schema: &Schema, pattern: &Pattern, m: &Match, binding: &Binding) -> Vec<NodeId> {
    (schema.site.iter())
        .map_while(|role| pattern.get(m, capture_for(role.name, binding)))
        .collect()
}

/// Every site of `t` that a match of `pattern` in `p` gives under `binding`, in match order.
pub fn sites(
    t: &dyn Transformation,
    pattern: &Pattern,
    p: &Program,
    binding: &Binding,
) -> Result<Vec<Vec<NodeId>>, BindError> {
    check_binding(t.schema(), pattern, binding)?;
    Ok((find_all(pattern, p).iter())
        .map(|m| site_of(t.schema(), pattern, m, binding))
        .collect())
}

/// The candidates of an operator-level transformation whose shape is the built-in pattern
/// `name`: the shape is written once, in the pattern library.
pub(crate) fn builtin_sites(
    t: &dyn Transformation,
    name: &str,
    p: &Program,
    binding: &Binding,
) -> Vec<Vec<NodeId>> {
    let found = builtin(name)
        .ok()
        .and_then(|pattern| sites(t, &pattern, p, binding).ok());
    debug_assert!(
        found.is_some(),
        "built-in pattern `{name}` fits {}",
        t.name()
    );
    found.unwrap_or_default()
}
