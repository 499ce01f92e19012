//! Nodes and values in the words a recipe's author knows: `map "proj_acc" (n19)`, not
//! `NodeId(19)`. Every diagnostic, skip reason and `print` of the interpreter goes through here.

use super::value::Value;
use crate::ir::{NodeId, NodeKind, Program};

/// `map "proj_acc" (n19)`, `MatMul "mm1" (n3)`, `access "x" (n4)`, `tasklet "fma" (n7)`; a
/// node that is not in the program is just its id.
pub fn describe(p: &Program, id: NodeId) -> String {
    match p.node(id) {
        Some(n) => match &n.kind {
            NodeKind::Access(data) => format!("access {data:?} ({id})"),
            NodeKind::Library(l) => format!("{} {:?} ({id})", l.op, n.label),
            NodeKind::Map(_) => format!("map {:?} ({id})", n.label),
            NodeKind::Tasklet(_) => format!("tasklet {:?} ({id})", n.label),
        },
        None => id.to_string(),
    }
}

/// Several nodes, comma-separated.
pub fn describe_all(p: &Program, ids: &[NodeId]) -> String {
    let parts: Vec<String> = ids.iter().map(|id| describe(p, *id)).collect();
    parts.join(", ")
}

/// A value as `print` and messages show it: nodes described, numbers readable.
pub fn show(p: &Program, v: &Value) -> String {
    match v {
        Value::Node(id) => describe(p, *id),
        Value::Float(x) => number(*x),
        Value::List(items) => {
            let parts: Vec<String> = items.iter().map(|i| show(p, i)).collect();
            format!("[{}]", parts.join(", "))
        }
        Value::Match(m) => {
            let parts: Vec<String> = (m.pattern.captures().into_iter())
                .zip(&m.found.nodes)
                .map(|(c, id)| format!("{c} = {}", describe(p, *id)))
                .collect();
            format!("{} {{ {} }}", m.pattern.name(), parts.join(", "))
        }
        other => other.to_string(),
    }
}

/// A float for people: `1.2e6`, `5.1e5`, `0.25`, `3` (large and tiny magnitudes in scientific
/// notation with three significant digits at most).
pub fn number(x: f64) -> String {
    if x == 0.0 || !x.is_finite() {
        return x.to_string();
    }
    let a = x.abs();
    if !(1e-3..1e5).contains(&a) {
        let s = format!("{x:.2e}");
        let (mantissa, exp) = s.split_once('e').unwrap_or((&s, "0"));
        let mantissa = mantissa.trim_end_matches('0').trim_end_matches('.');
        return format!("{mantissa}e{exp}");
    }
    let s = format!("{x:.4}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::fixtures::matmul;
    use crate::ir::{Schedule, SymExpr};

    #[test]
    fn numbers_read_like_people_write_them() {
        assert_eq!(number(1.2e6), "1.2e6");
        assert_eq!(number(512_345.0), "5.12e5");
        assert_eq!(number(0.25), "0.25");
        assert_eq!(number(3.0), "3");
        assert_eq!(number(-2e-5), "-2e-5");
    }

    #[test]
    fn nodes_are_described_by_kind_and_label() {
        let p = matmul(
            SymExpr::int(4),
            SymExpr::int(4),
            SymExpr::int(4),
            Schedule::Sequential,
        );
        let mut seen = Vec::new();
        p.graph.walk(&mut |n| seen.push(describe(&p, n.id)));
        assert!(
            seen.iter().any(|s| s.starts_with("map \"acc\" (n")),
            "{seen:?}"
        );
        assert!(
            seen.iter().any(|s| s.starts_with("access \"A\" (n")),
            "{seen:?}"
        );
        assert!(
            seen.iter().any(|s| s.starts_with("tasklet \"fma\"")),
            "{seen:?}"
        );
        assert_eq!(describe(&p, NodeId(9999)), "n9999");
    }
}
