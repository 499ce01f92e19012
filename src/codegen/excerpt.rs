//! The C of one node: the lines the backend emitted for it, found by the comment every map,
//! tasklet and copy opens with (`/* n12 map "proj" (parallel) */`).

use crate::ir::NodeId;

/// The code emitted for node `id` in `source` (its opening comment, then its block or statement,
/// up to where the brackets opened after the comment close), or `None` when it emitted none.
pub fn excerpt(source: &str, id: NodeId) -> Option<String> {
    let marker = format!("/* {id} ");
    let lines: Vec<&str> = source.lines().collect();
    let start = lines
        .iter()
        .position(|l| l.trim_start().starts_with(&marker))?;
    let mut depth = 0i64;
    let mut opened = false;
    let mut end = start;
    for (k, line) in lines.iter().enumerate().skip(start + 1) {
        end = k;
        for c in line.chars() {
            match c {
                '{' => {
                    depth += 1;
                    opened = true;
                }
                '}' => depth -= 1,
                _ => {}
            }
        }
        if (opened && depth <= 0) || (!opened && line.trim_end().ends_with(';')) {
            break;
        }
    }
    Some(lines[start..=end].join("\n") + "\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_map_is_cut_out_with_its_block() {
        let c = "int x;\n/* n3 map \"a\" (sequential) */\nfor (;;) {\n  {\n    y = 1;\n  }\n}\n/* n4 map \"b\" (sequential) */\nfor (;;) {}\n";
        let got = excerpt(c, NodeId(3)).expect("n3 is there");
        assert_eq!(
            got,
            "/* n3 map \"a\" (sequential) */\nfor (;;) {\n  {\n    y = 1;\n  }\n}\n"
        );
        assert_eq!(
            excerpt(c, NodeId(4)).as_deref(),
            Some("/* n4 map \"b\" (sequential) */\nfor (;;) {}\n")
        );
        assert_eq!(excerpt(c, NodeId(5)), None);
    }
}
