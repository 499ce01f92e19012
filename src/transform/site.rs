//! Typed sites: the nodes a transformation rewrites, declared as named roles with node kinds.
//!
//! A site is a list of node ids, one per role in declaration order (optional roles last, and
//! they may be left out). The engine checks arity, existence and kinds ([`check_site`]) before a
//! transformation sees the site, so a transformation indexes `site[k]` for every required role
//! without guarding it, and a recipe can bind captures to roles by name.

use super::Schema;
use crate::ir::{NodeId, NodeKind, Program};
use serde::Serialize;

/// Which nodes may fill a role.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum NodeClass {
    /// A map scope, at any depth.
    Map,
    /// A library (operator) node; `ops` lists the accepted operators (empty: any).
    Library { ops: &'static [&'static str] },
    /// An access node (one data container).
    Access,
    /// A tasklet.
    Tasklet,
}

impl NodeClass {
    /// Whether `kind` fills this class.
    pub fn admits(&self, kind: &NodeKind) -> bool {
        match (self, kind) {
            (NodeClass::Map, NodeKind::Map(_))
            | (NodeClass::Access, NodeKind::Access(_))
            | (NodeClass::Tasklet, NodeKind::Tasklet(_)) => true,
            (NodeClass::Library { ops }, NodeKind::Library(l)) => {
                ops.is_empty() || ops.contains(&l.op.as_str())
            }
            _ => false,
        }
    }

    /// The class in words ("a map", "a MatMul or Gemm node").
    pub fn describe(&self) -> String {
        match self {
            NodeClass::Map => "a map".to_string(),
            NodeClass::Access => a_node("access"),
            NodeClass::Tasklet => "a tasklet".to_string(),
            NodeClass::Library { ops: [] } => "a library node".to_string(),
            NodeClass::Library { ops } => a_node(&ops.join(" or ")),
        }
    }
}

/// "a Conv node", "an Add node".
pub(super) fn a_node(what: &str) -> String {
    let vowel = what.starts_with(['A', 'E', 'I', 'O', 'U', 'a', 'e', 'i', 'o', 'u']);
    format!("{} {what} node", if vowel { "an" } else { "a" })
}

/// One named place in a site.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct Role {
    pub name: &'static str,
    #[serde(rename = "node")]
    pub class: NodeClass,
    /// An optional role may be left out (only at the end of a site).
    pub optional: bool,
    pub doc: &'static str,
}

impl Role {
    /// A required role.
    pub const fn new(name: &'static str, class: NodeClass, doc: &'static str) -> Role {
        Role {
            name,
            class,
            optional: false,
            doc,
        }
    }

    /// An optional role.
    pub const fn optional(name: &'static str, class: NodeClass, doc: &'static str) -> Role {
        Role {
            name,
            class,
            optional: true,
            doc,
        }
    }

    /// `producer: a map — the map whose result is consumed` (`(optional)` when it may be left
    /// out): how listings and editors show a role.
    pub fn describe(&self) -> String {
        let optional = if self.optional { " (optional)" } else { "" };
        format!(
            "{}: {}{optional} — {}",
            self.name,
            self.class.describe(),
            self.doc
        )
    }
}

/// Why a site does not fit a transformation's roles.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error, miette::Diagnostic)]
pub enum SiteError {
    #[error("{transformation} takes {expected} at its site ({roles}), but {given} were given")]
    #[diagnostic(code(dmove::site::arity))]
    Arity {
        transformation: &'static str,
        expected: String,
        roles: String,
        given: usize,
    },
    #[error("{transformation}: {node} (the `{role}` role) is not in the program")]
    #[diagnostic(code(dmove::site::missing))]
    Missing {
        transformation: &'static str,
        role: &'static str,
        node: NodeId,
    },
    #[error("{transformation}: {node} (the `{role}` role) is {found}, not {expected}")]
    #[diagnostic(code(dmove::site::kind))]
    WrongKind {
        transformation: &'static str,
        role: &'static str,
        node: NodeId,
        found: String,
        expected: String,
    },
    #[error("{transformation}: {node} fills two roles of the site")]
    #[diagnostic(code(dmove::site::repeated))]
    Repeated {
        transformation: &'static str,
        node: NodeId,
    },
}

/// Checks `site` against the schema's roles; returns the anchor (the first node).
pub fn check_site(schema: &Schema, p: &Program, site: &[NodeId]) -> Result<NodeId, SiteError> {
    let t = schema.name;
    let required = schema.site.iter().filter(|r| !r.optional).count();
    let first = match site.first() {
        Some(first) if (required..=schema.site.len()).contains(&site.len()) => *first,
        _ => {
            let expected = if required == schema.site.len() {
                format!("{required} node(s)")
            } else {
                format!("{required} to {} nodes", schema.site.len())
            };
            return Err(SiteError::Arity {
                transformation: t,
                expected,
                roles: role_list(schema),
                given: site.len(),
            });
        }
    };
    for (k, (id, role)) in site.iter().zip(schema.site).enumerate() {
        if site[..k].contains(id) {
            return Err(SiteError::Repeated {
                transformation: t,
                node: *id,
            });
        }
        let node = p.node(*id).ok_or(SiteError::Missing {
            transformation: t,
            role: role.name,
            node: *id,
        })?;
        if !role.class.admits(&node.kind) {
            let found = match &node.kind {
                NodeKind::Library(l) => a_node(&l.op),
                other => a_node(other.kind_name()),
            };
            return Err(SiteError::WrongKind {
                transformation: t,
                role: role.name,
                node: *id,
                found,
                expected: role.class.describe(),
            });
        }
    }
    Ok(first)
}

/// The roles in words: `producer: a map, consumer: a map`.
pub fn role_list(schema: &Schema) -> String {
    let v: Vec<String> = (schema.site.iter())
        .map(|r| {
            let opt = if r.optional { " (optional)" } else { "" };
            format!("{}: {}{opt}", r.name, r.class.describe())
        })
        .collect();
    v.join(", ")
}
