//! `dmove match`: find a built-in pattern in a model, or say why it does not match at a node.

use super::{load_program, parse_node_id, Bindings, CliError};
use crate::ops::expand::expand_all;
use crate::pattern::library::builtin;
use crate::pattern::{explain, find_all};
use std::io::Write;
use std::path::PathBuf;

/// `dmove match MODEL --pattern NAME [--why NODE]`
pub struct MatchArgs {
    pub model: PathBuf,
    pub bindings: Bindings,
    pub pattern: String,
    /// Explain the match anchored at this node instead of listing all matches.
    pub why: Option<String>,
    /// Lower every operator to maps and tasklets first (for map-level patterns).
    pub expand: bool,
}

/// Lists every match (one line each: `capture=node …`), or for `--why NODE` either the match
/// anchored there or the first constraint that failed and what it saw.
pub fn run(args: &MatchArgs) -> Result<(), CliError> {
    let pattern = builtin(&args.pattern)?;
    let mut p = load_program(&args.model, &args.bindings)?;
    if args.expand {
        expand_all(&mut p)?;
    }
    let mut out = String::new();
    match &args.why {
        Some(node) => {
            let node = parse_node_id(node)?;
            match explain(&pattern, &p, node) {
                Ok(m) => out.push_str(&format!(
                    "`{}` matches at {node}: {}\n",
                    pattern.name(),
                    m.show(&pattern)
                )),
                Err(why) => out.push_str(&format!(
                    "`{}` does not match at {node}: {why}\n",
                    pattern.name()
                )),
            }
        }
        None => {
            let matches = find_all(&pattern, &p);
            for m in &matches {
                out.push_str(&m.show(&pattern));
                out.push('\n');
            }
            eprintln!("{} match(es) of `{}`", matches.len(), pattern.name());
        }
    }
    std::io::stdout()
        .write_all(out.as_bytes())
        .map_err(|source| CliError::Write {
            path: PathBuf::from("-"),
            source,
        })
}
