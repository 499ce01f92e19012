//! Values of recipe expressions. Parameter values are the scalar subset ([`ParamValue`]), which
//! is what reports and lock files record.

use crate::ir::NodeId;
use crate::pattern::Match;
use serde::{Deserialize, Serialize};
use std::fmt;
use std::sync::Arc;

/// A value an expression evaluates to.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    Int(i64),
    Float(f64),
    Bool(bool),
    Str(String),
    List(Vec<Value>),
    /// A handle to a node: stays valid while the node exists (ids are stable).
    Node(NodeId),
    /// A match of a pattern; its captures are handles.
    Match(MatchValue),
}

/// A match together with the pattern's capture names.
#[derive(Clone, Debug, PartialEq)]
pub struct MatchValue {
    pub pattern: Arc<crate::pattern::Pattern>,
    pub found: Match,
}

/// The value of a recipe parameter, as recorded in reports and locks.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum ParamValue {
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(String),
}

impl From<ParamValue> for Value {
    fn from(v: ParamValue) -> Value {
        match v {
            ParamValue::Bool(b) => Value::Bool(b),
            ParamValue::Int(i) => Value::Int(i),
            ParamValue::Float(x) => Value::Float(x),
            ParamValue::Str(s) => Value::Str(s),
        }
    }
}

impl fmt::Display for ParamValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ParamValue::Bool(b) => write!(f, "{b}"),
            ParamValue::Int(i) => write!(f, "{i}"),
            ParamValue::Float(x) => write!(f, "{x}"),
            ParamValue::Str(s) => write!(f, "{s:?}"),
        }
    }
}

impl Value {
    /// What kind of value this is, for messages ("expected a list, found an integer").
    pub fn kind(&self) -> &'static str {
        match self {
            Value::Int(_) => "an integer",
            Value::Float(_) => "a float",
            Value::Bool(_) => "a boolean",
            Value::Str(_) => "a string",
            Value::List(_) => "a list",
            Value::Node(_) => "a node",
            Value::Match(_) => "a match",
        }
    }
}

impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Int(i) => write!(f, "{i}"),
            Value::Float(x) => write!(f, "{x}"),
            Value::Bool(b) => write!(f, "{b}"),
            Value::Str(s) => f.write_str(s),
            Value::List(items) => {
                let parts: Vec<String> = items.iter().map(|v| v.to_string()).collect();
                write!(f, "[{}]", parts.join(", "))
            }
            Value::Node(n) => write!(f, "{n}"),
            Value::Match(m) => f.write_str(&m.found.show(&m.pattern)),
        }
    }
}
