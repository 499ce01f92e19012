//! A transformation's schema in words: what `dmove transforms` prints and what editors show on
//! hover (`dmove lsp`), one text so the two never disagree.

use super::contract::Schema;
use super::params::ParamKind;

/// One transformation as a block: name and level, doc, site roles, parameters.
pub fn listing(s: &Schema) -> String {
    let scripted = match crate::transform::lookup(s.name).and_then(|t| t.script_hash()) {
        Some(hash) => format!(", scripted {}", &hash[..12]),
        None => String::new(),
    };
    let mut out = format!("{} ({:?}{scripted})\n    {}\n", s.name, s.level, s.doc);
    out.push_str("    site:\n");
    for r in s.site {
        out.push_str(&format!("      {}\n", r.describe()));
    }
    if s.params.is_empty() {
        out.push_str("    params: none\n");
    } else {
        out.push_str("    params:\n");
        for d in s.params {
            out.push_str(&format!("      {}\n", d.describe()));
            if d.kind == ParamKind::Implementation {
                out.push_str(&implementations());
            }
        }
    }
    out
}

/// Which implementations each operator offers (the first is its default), since an
/// implementation parameter's values depend on the operator at the site. Operators with only
/// `pure` are summarised in one line.
fn implementations() -> String {
    let mut out = String::from(
        "        the implementations depend on the operator; the first is its default:\n",
    );
    for op in crate::ops::all() {
        if op.expansions() != ["pure"] {
            let list = op.expansions().join(", ");
            out.push_str(&format!("          {}: {list}\n", op.name()));
        }
    }
    out.push_str("          every other operator: pure\n");
    out
}
