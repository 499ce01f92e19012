//! The checker's light type inference: what an expression certainly is, when that is known.
//!
//! Types come from literals, parameter declarations, rule parameter types, `for each` over a
//! typed list and the built-ins' results; everything else is [`Ty::Unknown`], which fits
//! anything. Only a mismatch between two *known* types is reported, so the checker never
//! rejects a recipe that could run.

use crate::recipe::ast::{self, CaptureKind};
use crate::transform::NodeClass;
use std::fmt;

/// The class of node a handle refers to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Class {
    /// A library node, of one operator when known.
    Op(Option<String>),
    Map,
    Tasklet,
    Data,
    /// Any node.
    Any,
}

impl Class {
    pub fn of_capture(c: &ast::CaptureDecl) -> Class {
        match c.kind {
            CaptureKind::Op => Class::Op(c.operator.as_ref().map(|o| o.name.clone())),
            CaptureKind::Map => Class::Map,
            CaptureKind::Tasklet => Class::Tasklet,
            CaptureKind::Data => Class::Data,
            CaptureKind::Node => Class::Any,
        }
    }

    /// The class a rule parameter type word names (`map`, `op`, …).
    pub fn from_word(word: &str) -> Option<Class> {
        Some(match word {
            "op" => Class::Op(None),
            "map" => Class::Map,
            "tasklet" => Class::Tasklet,
            "data" => Class::Data,
            "node" => Class::Any,
            _ => return None,
        })
    }

    /// Whether a node of this class could fill a transformation role of class `role`.
    pub fn may_fill(&self, role: &NodeClass) -> bool {
        match (self, role) {
            (Class::Any, _)
            | (Class::Map, NodeClass::Map)
            | (Class::Data, NodeClass::Access)
            | (Class::Tasklet, NodeClass::Tasklet)
            | (Class::Op(None), NodeClass::Library { .. }) => true,
            (Class::Op(Some(op)), NodeClass::Library { ops }) => {
                ops.is_empty() || ops.contains(&op.as_str())
            }
            _ => false,
        }
    }

    /// Whether a node of class `self` and one of class `other` could be the same node.
    pub fn overlaps(&self, other: &Class) -> bool {
        match (self, other) {
            (Class::Any, _) | (_, Class::Any) => true,
            (Class::Op(a), Class::Op(b)) => a.is_none() || b.is_none() || a == b,
            (a, b) => a == b,
        }
    }

    fn describe(&self) -> String {
        match self {
            Class::Op(None) => "an operator node".to_string(),
            Class::Op(Some(op)) => format!("an operator node ({op})"),
            Class::Map => "a map".to_string(),
            Class::Tasklet => "a tasklet".to_string(),
            Class::Data => "an access node".to_string(),
            Class::Any => "a node".to_string(),
        }
    }
}

/// What an expression evaluates to, as far as the checker knows.
#[derive(Clone, Debug)]
pub enum Ty<'a> {
    Int,
    Float,
    Bool,
    Str,
    List(Box<Ty<'a>>),
    Node(Class),
    /// A match of a pattern.
    Match(&'a ast::PatternDecl),
    /// The `baseline` value, with fields `dmd`, `bytes`, `time`.
    Baseline,
    Unknown,
}

impl PartialEq for Ty<'_> {
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (Ty::List(a), Ty::List(b)) => a == b,
            (Ty::Node(a), Ty::Node(b)) => a == b,
            (Ty::Match(a), Ty::Match(b)) => std::ptr::eq(*a, *b),
            (a, b) => std::mem::discriminant(a) == std::mem::discriminant(b),
        }
    }
}

impl Ty<'_> {
    pub fn is_known(&self) -> bool {
        !matches!(self, Ty::Unknown)
    }

    /// An integer, a float, or not known to be anything else.
    pub fn may_be_number(&self) -> bool {
        matches!(self, Ty::Int | Ty::Float | Ty::Unknown)
    }
}

impl fmt::Display for Ty<'_> {
    /// "an integer", "a list", "a match of `matmul_add`".
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Ty::Int => f.write_str("an integer"),
            Ty::Float => f.write_str("a float"),
            Ty::Bool => f.write_str("a boolean"),
            Ty::Str => f.write_str("a string"),
            Ty::List(_) => f.write_str("a list"),
            Ty::Node(c) => f.write_str(&c.describe()),
            Ty::Match(p) => write!(f, "a match of `{}`", p.name.name),
            Ty::Baseline => f.write_str("the baseline"),
            Ty::Unknown => f.write_str("a value"),
        }
    }
}

/// What a place (an argument, a condition) needs.
#[derive(Clone, Debug)]
pub enum Want<'a> {
    Ty(Ty<'a>),
    /// An integer or a float.
    Number,
    Any,
}

impl fmt::Display for Want<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Want::Ty(t) => t.fmt(f),
            Want::Number => f.write_str("a number"),
            Want::Any => f.write_str("a value"),
        }
    }
}

/// Whether a value of type `found` could be what `want` needs (unknowns always could).
pub fn fits(want: &Want<'_>, found: &Ty<'_>) -> bool {
    let want = match want {
        Want::Any => return true,
        Want::Number => return found.may_be_number(),
        Want::Ty(t) => t,
    };
    match (want, found) {
        (Ty::Unknown, _) | (_, Ty::Unknown) => true,
        (Ty::Float, Ty::Int) => true,
        (Ty::List(a), Ty::List(b)) => fits(&Want::Ty((**a).clone()), b),
        (Ty::Node(a), Ty::Node(b)) => a.overlaps(b),
        (Ty::Match(a), Ty::Match(b)) => std::ptr::eq(*a, *b),
        (a, b) => a == b,
    }
}

/// The type of a recipe parameter's values.
pub fn of_param(p: &ast::Param) -> Ty<'static> {
    match p.ty {
        ast::ParamType::Int(_) => Ty::Int,
        ast::ParamType::Float(_) => Ty::Float,
        ast::ParamType::Bool(_) => Ty::Bool,
        ast::ParamType::Enum(..) => Ty::Str,
    }
}

/// The value type a rule parameter type word names (`int`, `list`, …).
pub fn value_word(word: &str) -> Option<Ty<'static>> {
    Some(match word {
        "int" => Ty::Int,
        "float" => Ty::Float,
        "bool" => Ty::Bool,
        "string" => Ty::Str,
        "list" => Ty::List(Box::new(Ty::Unknown)),
        _ => return None,
    })
}
