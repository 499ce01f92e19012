//! Node predicates: what one capture of a pattern requires of the node bound to it.
//!
//! Each predicate is tested cheaply (no allocation) while matching, and only when a match fails
//! and the user asks why is the failure put into words, naming the value that was seen.

use crate::ir::{Attr, DType, DataDesc, DataKind, Node, NodeKind, Program, Schedule, SymExpr};
use std::fmt;

/// The four kinds of IR node, for [`Pred::Kind`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum NodeClass {
    Access,
    Library,
    Map,
    Tasklet,
}

impl NodeClass {
    pub fn of(kind: &NodeKind) -> NodeClass {
        match kind {
            NodeKind::Access(_) => NodeClass::Access,
            NodeKind::Library(_) => NodeClass::Library,
            NodeKind::Map(_) => NodeClass::Map,
            NodeKind::Tasklet(_) => NodeClass::Tasklet,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            NodeClass::Access => "access",
            NodeClass::Library => "library",
            NodeClass::Map => "map",
            NodeClass::Tasklet => "tasklet",
        }
    }
}

/// One requirement on the node bound to a capture. Predicates about data (`Data`, `DType`,
/// `Rank`, `Dim`, `DataKind`) apply to access nodes and look at the container's declaration.
#[derive(Clone, Debug, PartialEq)]
pub enum Pred {
    Kind(NodeClass),
    /// A library node applying this operator (`MatMul`, `Conv`, …).
    Op(String),
    /// A library node whose attribute `name` equals the value.
    Attr(String, Attr),
    /// An access node of this container.
    Data(String),
    DType(DType),
    Rank(usize),
    /// Dimension `index` of the container is the literal extent.
    Dim(usize, i64),
    DataKind(DataKind),
    /// A map with this many parameters.
    Params(usize),
    Schedule(Schedule),
}

impl Pred {
    pub fn op(name: impl Into<String>) -> Pred {
        Pred::Op(name.into())
    }

    pub fn data(name: impl Into<String>) -> Pred {
        Pred::Data(name.into())
    }

    pub fn attr(name: impl Into<String>, value: Attr) -> Pred {
        Pred::Attr(name.into(), value)
    }
}

/// What a failed predicate saw, borrowed from the program (testing allocates only to look up
/// an attribute's default).
#[derive(Debug)]
pub(crate) enum Seen<'a> {
    Kind(&'a NodeKind),
    Op(&'a str),
    Attr(Option<&'a Attr>),
    /// The node leaves the attribute out and its operator's default is this one.
    Default(Attr),
    Data(&'a str),
    Undeclared(&'a str),
    DType(DType, &'a str),
    Rank(usize, &'a str),
    Dim(Option<&'a SymExpr>, &'a str),
    DataKind(DataKind, &'a str),
    Params(usize),
    Schedule(Schedule),
}

/// Tests `pred` on `node`; `Err` carries what was seen instead.
pub(crate) fn test<'a>(pred: &Pred, node: &'a Node, p: &'a Program) -> Result<(), Seen<'a>> {
    let wrong_kind = || Seen::Kind(&node.kind);
    match pred {
        Pred::Kind(c) => ok_if(NodeClass::of(&node.kind) == *c, wrong_kind()),
        Pred::Op(op) => match &node.kind {
            NodeKind::Library(l) => ok_if(&l.op == op, Seen::Op(&l.op)),
            _ => Err(wrong_kind()),
        },
        Pred::Attr(name, value) => match &node.kind {
            NodeKind::Library(l) => {
                let default = || crate::ops::lookup(&l.op)?.default_attr(name);
                match l.attrs.get(name) {
                    Some(got) => ok_if(got == value, Seen::Attr(Some(got))),
                    None => match default() {
                        Some(d) if d == *value => Ok(()),
                        Some(d) => Err(Seen::Default(d)),
                        None => Err(Seen::Attr(None)),
                    },
                }
            }
            _ => Err(wrong_kind()),
        },
        Pred::Data(d) => match &node.kind {
            NodeKind::Access(name) => ok_if(name == d, Seen::Data(name)),
            _ => Err(wrong_kind()),
        },
        Pred::DType(_) | Pred::Rank(_) | Pred::Dim(..) | Pred::DataKind(_) => {
            let NodeKind::Access(name) = &node.kind else {
                return Err(wrong_kind());
            };
            let desc = p.data.get(name).ok_or(Seen::Undeclared(name))?;
            test_desc(pred, name, desc)
        }
        Pred::Params(n) => match &node.kind {
            NodeKind::Map(m) => ok_if(m.params.len() == *n, Seen::Params(m.params.len())),
            _ => Err(wrong_kind()),
        },
        Pred::Schedule(s) => match &node.kind {
            NodeKind::Map(m) => ok_if(m.schedule == *s, Seen::Schedule(m.schedule)),
            _ => Err(wrong_kind()),
        },
    }
}

fn test_desc<'a>(pred: &Pred, name: &'a str, desc: &'a DataDesc) -> Result<(), Seen<'a>> {
    match pred {
        Pred::DType(t) => ok_if(desc.dtype == *t, Seen::DType(desc.dtype, name)),
        Pred::Rank(r) => ok_if(desc.rank() == *r, Seen::Rank(desc.rank(), name)),
        Pred::Dim(i, v) => {
            let got = desc.shape.get(*i);
            ok_if(
                got.and_then(SymExpr::as_int) == Some(*v),
                Seen::Dim(got, name),
            )
        }
        Pred::DataKind(k) => ok_if(desc.kind == *k, Seen::DataKind(desc.kind, name)),
        _ => Ok(()),
    }
}

fn ok_if(cond: bool, seen: Seen<'_>) -> Result<(), Seen<'_>> {
    if cond {
        Ok(())
    } else {
        Err(seen)
    }
}

/// Puts a failed predicate into words: what was expected and what was found.
pub(crate) fn describe(pred: &Pred, seen: &Seen<'_>) -> String {
    let found = match seen {
        Seen::Kind(k) => kind_phrase(k),
        Seen::Op(op) => op.to_string(),
        Seen::Attr(None) => "no such attribute".to_string(),
        Seen::Attr(Some(a)) => show_attr(a),
        Seen::Default(a) => format!("no such attribute, whose default is {}", show_attr(a)),
        Seen::Data(d) => format!("container {d}"),
        Seen::Undeclared(d) => format!("container {d}, which is not declared"),
        Seen::DType(t, d) => format!("{t} (container {d})"),
        Seen::Rank(r, d) => format!("rank {r} (container {d})"),
        Seen::Dim(None, d) => format!("no such dimension (container {d})"),
        Seen::Dim(Some(e), d) => format!("{e} (container {d})"),
        Seen::DataKind(k, d) => format!("{} container {d}", k.name()),
        Seen::Params(n) => format!("{n}"),
        Seen::Schedule(s) => s.name().to_string(),
    };
    format!("expected {}, found {found}", expectation(pred))
}

/// The requirement in words (also used to print patterns).
pub(crate) fn expectation(pred: &Pred) -> String {
    match pred {
        Pred::Kind(c) => format!("{} {} node", article(c.name()), c.name()),
        Pred::Op(op) => format!("op {op}"),
        Pred::Attr(name, v) => format!("attribute {name} = {}", show_attr(v)),
        Pred::Data(d) => format!("container {d}"),
        Pred::DType(t) => format!("dtype {t}"),
        Pred::Rank(r) => format!("rank {r}"),
        Pred::Dim(i, v) => format!("dimension {i} = {v}"),
        Pred::DataKind(k) => format!("{} {} container", article(k.name()), k.name()),
        Pred::Params(n) => format!("{n} map parameter(s)"),
        Pred::Schedule(s) => format!("schedule {}", s.name()),
    }
}

/// `a map node`, `a library node (Gemm)`, `an access node (X)`.
fn kind_phrase(k: &NodeKind) -> String {
    match k {
        NodeKind::Access(d) => format!("an access node ({d})"),
        NodeKind::Library(l) => format!("a library node ({})", l.op),
        other => format!("{} {} node", article(other.kind_name()), other.kind_name()),
    }
}

/// `a` or `an` before a word.
fn article(word: &str) -> &'static str {
    if word.starts_with(['a', 'e', 'i', 'o', 'u']) {
        "an"
    } else {
        "a"
    }
}

fn show_attr(a: &Attr) -> String {
    fn list<T: fmt::Display>(v: &[T]) -> String {
        let items: Vec<String> = v.iter().map(ToString::to_string).collect();
        format!("[{}]", items.join(", "))
    }
    match a {
        Attr::Int(v) => v.to_string(),
        Attr::Float(v) => v.to_string(),
        Attr::Str(s) => format!("{s:?}"),
        Attr::Ints(v) => list(v),
        Attr::Floats(v) => list(v),
        Attr::Strs(v) => list(&v.iter().map(|s| format!("{s:?}")).collect::<Vec<_>>()),
    }
}
