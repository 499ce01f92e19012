//! `dmove match`: find a built-in pattern in a model, or say why it does not match at a node.

use super::{load_program, output_path, parse_node_id, write_output, Bindings, CliError};
use crate::ir::{NodeId, NodeKind, Program};
use crate::ops::expand::expand_all;
use crate::pattern::library::builtin;
use crate::pattern::{explain, find_all, Match, NodeClass, Pattern, Pred};
use std::path::PathBuf;

/// `dmove match MODEL --pattern NAME [--why NODE]`
#[derive(Clone, Debug, clap::Args)]
pub struct MatchArgs {
    /// The model: an `.onnx` file, or textual IR (any other extension).
    #[arg(value_name = "MODEL")]
    pub model: PathBuf,
    #[command(flatten)]
    pub bindings: Bindings,
    /// Built-in pattern name: matmul_add, conv_bn or elementwise_chain.
    #[arg(long, value_name = "NAME")]
    pub pattern: String,
    /// Explain the match at this node instead of listing all matches, e.g. `--why n12`: the
    /// match anchored there, the matches it is part of, or the first constraint that failed.
    #[arg(long, value_name = "NODE")]
    pub why: Option<String>,
    /// Lower every operator to maps and tasklets first (for map-level patterns).
    #[arg(long)]
    pub expand: bool,
}

/// Lists every match (one line each: `capture=node …`), or for `--why NODE` either the match
/// anchored there, the matches `NODE` is a later capture of, or the first constraint that
/// failed and what it saw. When no node of the model can start the pattern (a map pattern on
/// an unlowered model), says so rather than reporting nothing.
pub fn run(args: &MatchArgs) -> Result<(), CliError> {
    let pattern = builtin(&args.pattern)?;
    let mut p = load_program(&args.model, &args.bindings)?;
    if args.expand {
        expand_all(&mut p)?;
    }
    let out = match &args.why {
        Some(node) => why(&pattern, &p, parse_node_id(node)?, args.expand),
        None => {
            let matches = find_all(&pattern, &p);
            let mut summary = format!("{} match(es) of `{}`", matches.len(), pattern.name());
            if let (true, Some(hint)) = (matches.is_empty(), no_anchor(&pattern, &p, args.expand)) {
                summary.push_str(&format!(": the pattern {hint}"));
            }
            eprintln!("{summary}");
            matches.iter().map(|m| m.show(&pattern) + "\n").collect()
        }
    };
    write_output(output_path(None), out.as_bytes())
}

/// The answer to `--why node` (and to `dmove repl`'s `:whynot PATTERN at NODE`).
pub fn why(pattern: &Pattern, p: &Program, node: NodeId, expanded: bool) -> String {
    let name = pattern.name();
    let why = match explain(pattern, p, node) {
        Ok(m) => return format!("`{name}` matches at {node}: {}\n", m.show(pattern)),
        Err(why) => why,
    };
    let inside = part_of(pattern, &find_all(pattern, p), node);
    if !inside.is_empty() {
        return inside;
    }
    let mut out = format!("`{name}` does not match at {node}: {why}\n");
    if let Some(hint) = no_anchor(pattern, p, expanded) {
        out.push_str(&format!("`{name}` {hint}\n"));
    }
    out
}

/// `n4 is the `t` capture of the match anchored at n2: mm=n2 t=n4 add=n5`, one line per match
/// that binds `node` to a capture other than the first.
fn part_of(pattern: &Pattern, matches: &[Match], node: NodeId) -> String {
    let captures = pattern.captures();
    let mut out = String::new();
    for m in matches {
        let Some(k) = m.nodes.iter().position(|n| *n == node).filter(|k| *k > 0) else {
            continue;
        };
        let (Some(capture), Some(anchor)) = (captures.get(k), m.anchor()) else {
            continue;
        };
        out.push_str(&format!(
            "{node} is the `{capture}` capture of the match anchored at {anchor}: {}\n",
            m.show(pattern)
        ));
    }
    out
}

/// Why nothing in `p` can start `pattern`, when that is so for a reason the user can fix: the
/// pattern starts at a map and the model has none (not lowered), or at an operator the model
/// does not contain (perhaps lowered away).
fn no_anchor(pattern: &Pattern, p: &Program, expanded: bool) -> Option<String> {
    let first = pattern.capture_preds(pattern.captures().first()?)?;
    let mut maps = 0usize;
    let mut ops = Vec::new();
    p.graph.walk(&mut |n| match &n.kind {
        NodeKind::Map(_) => maps += 1,
        NodeKind::Library(l) => ops.push(l.op.clone()),
        _ => {}
    });
    first.iter().find_map(|pred| match pred {
        Pred::Kind(NodeClass::Map) if maps == 0 => Some(
            "matches maps, and the model has none: its operators are library nodes until \
             lowered; add `--expand`"
                .to_string(),
        ),
        Pred::Op(op) if !ops.contains(op) => Some(if expanded && ops.is_empty() {
            format!(
                "starts at a {op} node, and the model has none: `--expand` lowered every \
                 operator to maps; drop it"
            )
        } else {
            format!("starts at a {op} node, and the model has none")
        }),
        _ => None,
    })
}
