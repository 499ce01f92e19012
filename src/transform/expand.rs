//! Expand: replace one library node by maps and tasklets, choosing among the operator's
//! implementations.
//!
//! ```text
//! before:  Y = Conv(X, W, B)                                   (library node)
//! after:   impl=pure:   map init { Y = B }; map acc { Y += X·W }  over (n, m, o…, c, k…)
//!          impl=im2col: map init { Y = B }; map im2col { col = X or 0 }; map gemm { Y += W·col }
//! ```
//! Expansion is where an operator stops being opaque: the maps it produces are what the
//! intra-operator transformations (tiling, parallelisation, …) work on. The default is the
//! operator's first implementation; `dmove transforms` and refusals list the others.

use super::{refuse, Level, NotApplicable, ParamSpec, ParamValue, Params, Transformation};
use crate::ir::{NodeId, Program};
use crate::ops::expand::expand_node;
use crate::ops::{lookup, Operator};

pub struct Expand;

impl Expand {
    /// The operator of library node `id` and the implementation `params` choose.
    fn choice(
        &self,
        p: &Program,
        site: &[NodeId],
        params: &Params,
    ) -> Result<(NodeId, &'static str), NotApplicable> {
        let [id] = site else {
            return Err(refuse(
                self,
                site.first().copied().unwrap_or(NodeId(0)),
                "a site is one library node",
            ));
        };
        let (_, node) = super::opgraph::op_node(self, p, *id, &[])?;
        let op: &dyn Operator = lookup(&node.lib.op)
            .ok_or_else(|| refuse(self, *id, format!("unknown operator `{}`", node.lib.op)))?;
        let available = op.expansions();
        let wanted = match params.get("impl") {
            None => return Ok((*id, available[0])),
            Some(ParamValue::Str(s)) => s.clone(),
            Some(other) => other.to_string(),
        };
        available
            .iter()
            .find(|a| **a == wanted)
            .map(|a| (*id, *a))
            .ok_or_else(|| {
                refuse(
                    self,
                    *id,
                    format!(
                        "{} has no implementation `{wanted}` (available: {})",
                        node.lib.op,
                        available.join(", ")
                    ),
                )
            })
    }
}

impl Transformation for Expand {
    fn name(&self) -> &'static str {
        "Expand"
    }

    fn level(&self) -> Level {
        Level::Expansion
    }

    fn doc(&self) -> &'static str {
        "expand one library node into maps and tasklets with a chosen implementation"
    }

    fn params(&self) -> &'static [ParamSpec] {
        &[ParamSpec {
            name: "impl",
            kind: "str",
            doc: "the implementation (e.g. im2col for Conv); the operator's default when omitted",
        }]
    }

    fn candidates(&self, p: &Program) -> Vec<Vec<NodeId>> {
        super::opgraph::library_nodes(p, &[])
    }

    fn check(&self, p: &Program, site: &[NodeId], params: &Params) -> Result<(), NotApplicable> {
        self.choice(p, site, params).map(|_| ())
    }

    fn apply(
        &self,
        p: &mut Program,
        site: &[NodeId],
        params: &Params,
    ) -> Result<Vec<NodeId>, NotApplicable> {
        let (id, implementation) = self.choice(p, site, params)?;
        let mut touched = vec![id];
        touched.extend(
            expand_node(p, id, Some(implementation))
                .map_err(|e| refuse(self, id, e.to_string()))?,
        );
        Ok(touched)
    }
}
