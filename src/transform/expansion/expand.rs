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

use crate::ir::{NodeId, Program};
use crate::ops::expand::expand_node;
use crate::ops::{lookup, Operator};
use crate::transform::support::opgraph::op_node;
use crate::transform::{
    refuse, Args, Call, Default, Level, NodeClass, NotApplicable, ParamDecl, ParamKind, Plan, Role,
    Schema, Transformation,
};

pub struct Expand;

const SCHEMA: Schema = Schema {
    name: "Expand",
    level: Level::Expansion,
    doc: "expand one library node into maps and tasklets with a chosen implementation",
    site: &[Role::new(
        "node",
        NodeClass::Library { ops: &[] },
        "the library node to expand",
    )],
    params: &[ParamDecl {
        name: "impl",
        kind: ParamKind::Implementation,
        default: Default::Optional,
        doc: "the implementation (e.g. im2col for Conv); the operator's default when omitted",
    }],
};

impl Expand {
    /// The implementation of library node `id` that `args` choose (the operator's first when
    /// none is given).
    fn choice(&self, p: &Program, id: NodeId, args: &Args) -> Result<String, NotApplicable> {
        let (_, node) = op_node(self, p, id, &[])?;
        let op: &dyn Operator = lookup(&node.lib.op)
            .ok_or_else(|| refuse(self, id, format!("unknown operator `{}`", node.lib.op)))?;
        let available = op.expansions();
        let wanted = match args.get("impl") {
            None => available.first().copied(),
            Some(_) => Some(args.str("impl")?),
        };
        // The engine checked a given name against this operator's implementations; an
        // operator without any has nothing to expand into.
        wanted
            .filter(|w| available.contains(w))
            .map(str::to_string)
            .ok_or_else(|| {
                refuse(
                    self,
                    id,
                    format!(
                        "{} has no implementation `{}` (available: {})",
                        node.lib.op,
                        wanted.unwrap_or("(default)"),
                        available.join(", ")
                    ),
                )
            })
    }
}

impl Transformation for Expand {
    fn schema(&self) -> &'static Schema {
        &SCHEMA
    }

    fn plan(&self, call: Call) -> Result<Plan, NotApplicable> {
        let Call { p, site, args, .. } = call;
        let id = site[0];
        let implementation = self.choice(p, id, args)?;
        Ok(Plan::new(move |p| {
            let mut touched = vec![id];
            touched.extend(
                expand_node(p, id, Some(&implementation))
                    .map_err(|e| refuse(&Expand, id, e.to_string()))?,
            );
            Ok(touched)
        }))
    }
}
