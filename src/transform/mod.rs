//! Transformations and the engine that applies them.
//!
//! Every transformation has the same contract ([`Transformation`]): a constant [`Schema`] saying
//! what it is (name, level, site roles, typed parameters), `candidates` in a deterministic order,
//! and `plan`, which checks every precondition without mutating anything — saying why in words
//! when one fails — and returns the rewrite. The [`engine`] validates the site and parameters
//! against the schema before a transformation sees them, then wraps each application in a
//! transaction: snapshot, plan, rewrite, invariants, numerics; any failure restores the program
//! exactly and the refusal says which check failed.
//!
//! The files are grouped by level: `operator/` (library-node rewrites), `expansion/`,
//! `loops/` (one operator's loop nests), `fusion/` (across operators), `layout/` (data layout
//! and memory). Helpers shared by several transformations live in `support/`, which no
//! transformation file is; no transformation imports another's file.
//!
//! Adding a transformation = adding one file with a unit struct, a `SCHEMA` constant and a
//! `Transformation` impl, listed in [`registry::all`].

mod binding;
mod contract;
pub mod engine;
mod expansion;
mod explain;
mod fusion;
mod layout;
mod listing;
mod loops;
mod operator;
mod params;
pub mod queries;
mod registry;
mod site;
mod support;

pub use binding::{check_binding, site_of, sites, BindError, Binding};
pub use contract::{
    role_candidates, Call, Legality, Level, NotApplicable, Plan, Schema, ScriptFault,
    Transformation,
};
pub use explain::{explain, nearest, Explanation, Verdict};
pub use layout::buffer_reuse::plan_buffers;
pub use listing::listing;
pub use params::{
    parse_value, Args, Default, ListLen, ParamDecl, ParamError, ParamKind, ParamValue, Params,
};
pub use registry::{all, builtins, find, lookup, register, taken, UnknownTransformation};
pub use site::{check_site, NodeClass, Role, SiteError};

pub(crate) use binding::builtin_sites;
pub(crate) use contract::{all_maps, expect_map, map_sites, refuse};
