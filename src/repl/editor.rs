//! Line editing on a terminal (rustyline): completion of commands, transformation names, the
//! parameters of the transformation being called, the session's names and the program's node
//! ids and labels; a history file; an input read on while its brackets are open; Ctrl-C clearing
//! the line while idle and interrupting work while busy ([`crate::interrupt`]).

use super::commands::{After, COMMANDS};
use super::{Repl, ReplError};
use crate::recipe::builtins::BUILTINS;
use crate::recipe::parse::open_brackets;
use crate::recipe::session::Session;
use rustyline::completion::{Completer, Pair};
use rustyline::error::ReadlineError;
use rustyline::history::DefaultHistory;
use rustyline::validate::{ValidationContext, ValidationResult, Validator};
use rustyline::{Context, Editor, Helper, Highlighter, Hinter};
use std::cell::RefCell;
use std::path::PathBuf;
use std::rc::Rc;

const PROMPT: &str = "dmove> ";

/// What completion offers, refreshed after every input.
#[derive(Default)]
pub struct Vocabulary {
    /// Transformation names with their parameters.
    transformations: Vec<(String, Vec<String>)>,
    /// Built-in functions, the session's rules, patterns, parameters, modules and variables.
    names: Vec<String>,
    /// Node ids (`n12`) and labels of the current program.
    nodes: Vec<String>,
}

impl Vocabulary {
    pub fn of(s: &Session) -> Vocabulary {
        let transformations = (crate::transform::all().into_iter())
            .map(|t| {
                let params = t.schema().params.iter().map(|p| p.name.to_string());
                (t.name().to_string(), params.collect())
            })
            .collect();
        let mut names: Vec<String> = BUILTINS.iter().map(|b| b.name.to_string()).collect();
        names.extend(crate::recipe::resolve::visible(s.loaded(), 0, false));
        names.extend(s.loaded().root().uses.keys().cloned());
        names.extend(s.variables());
        let mut nodes = Vec::new();
        s.program().graph.walk(&mut |n| {
            nodes.push(n.id.to_string());
            nodes.push(n.label.clone());
        });
        nodes.sort();
        nodes.dedup();
        Vocabulary {
            transformations,
            names,
            nodes,
        }
    }

    /// The completions of the word ending at `pos` in `line`: where it starts, and the words.
    pub fn complete(&self, line: &str, pos: usize) -> (usize, Vec<String>) {
        let before = &line[..pos.min(line.len())];
        let start = before
            .rfind(|c: char| !(c.is_alphanumeric() || c == '_' || c == ':'))
            .map_or(0, |i| i + 1);
        let word = &before[start..];
        let command_line = before.trim_start().starts_with(':');
        let mut out: Vec<String> = Vec::new();
        if command_line && !before.trim_start().contains(char::is_whitespace) {
            out.extend(COMMANDS.iter().map(|c| c.name.to_string()));
        } else {
            if let Some(t) = self.called(before, command_line) {
                let sep = if command_line { "=" } else { " = " };
                out.extend(t.1.iter().map(|p| format!("{p}{sep}")));
            }
            out.extend(self.transformations.iter().map(|t| t.0.clone()));
            out.extend(self.names.iter().cloned());
            out.extend(self.nodes.iter().cloned());
        }
        out.retain(|c| c.starts_with(word) && c != word);
        out.sort();
        out.dedup();
        (start, out)
    }

    /// The transformation whose arguments are being typed: `T(…` still open, or `:apply T at …`.
    fn called(&self, before: &str, command_line: bool) -> Option<&(String, Vec<String>)> {
        let name = match command_line {
            true => before.split_whitespace().nth(1)?,
            false => {
                let mut depth = 0i32;
                let open = before.char_indices().rev().find_map(|(i, c)| {
                    match c {
                        ')' => depth += 1,
                        '(' if depth == 0 => return Some(i),
                        '(' => depth -= 1,
                        _ => {}
                    }
                    None
                })?;
                let head = &before[..open];
                let start = head
                    .rfind(|c: char| !(c.is_alphanumeric() || c == '_'))
                    .map_or(0, |i| i + 1);
                &head[start..]
            }
        };
        self.transformations.iter().find(|t| t.0 == name)
    }
}

#[derive(Helper, Highlighter, Hinter)]
struct ReplHelper {
    vocabulary: Rc<RefCell<Vocabulary>>,
}

impl Completer for ReplHelper {
    type Candidate = Pair;

    fn complete(
        &self,
        line: &str,
        pos: usize,
        _: &Context<'_>,
    ) -> rustyline::Result<(usize, Vec<Pair>)> {
        let (start, words) = self.vocabulary.borrow().complete(line, pos);
        let pairs = (words.into_iter())
            .map(|w| Pair {
                display: w.clone(),
                replacement: w,
            })
            .collect();
        Ok((start, pairs))
    }
}

impl Validator for ReplHelper {
    /// A recipe input goes on while a bracket is open; a command is one line.
    fn validate(&self, ctx: &mut ValidationContext<'_>) -> rustyline::Result<ValidationResult> {
        let text = ctx.input();
        Ok(
            match !text.trim_start().starts_with(':') && open_brackets(text) > 0 {
                true => ValidationResult::Incomplete,
                false => ValidationResult::Valid(None),
            },
        )
    }
}

/// The history file: `--history`, else under `$XDG_STATE_HOME` or `~/.local/state`.
fn history_path(given: Option<PathBuf>) -> Option<PathBuf> {
    given.or_else(|| {
        let state = (std::env::var_os("XDG_STATE_HOME").filter(|v| !v.is_empty()))
            .map(PathBuf::from)
            .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".local/state")))?;
        Some(state.join("dmove").join("history"))
    })
}

/// The terminal loop; returns when the user leaves (`:quit`, Ctrl-D).
pub fn interactive(repl: &mut Repl, history: Option<PathBuf>) -> Result<(), ReplError> {
    let vocabulary = Rc::new(RefCell::new(Vocabulary::of(&repl.session)));
    let mut rl: Editor<ReplHelper, DefaultHistory> =
        Editor::new().map_err(|e| ReplError::Input(e.to_string()))?;
    // After the editor, which installs a SIGINT handler of its own when it opens the terminal:
    // ours goes on top of it (and calls it), so Ctrl-C during work raises the flag.
    crate::interrupt::catch_ctrl_c().map_err(|e| ReplError::Input(e.to_string()))?;
    rl.set_helper(Some(ReplHelper {
        vocabulary: vocabulary.clone(),
    }));
    let history = history_path(history);
    if let Some(h) = &history {
        // A missing file is a first session; any other problem only loses the history.
        let _ = rl.load_history(h);
    }
    loop {
        crate::interrupt::clear();
        match rl.readline(PROMPT) {
            Ok(line) if line.trim().is_empty() => {}
            Ok(line) => {
                let _ = rl.add_history_entry(line.as_str());
                if let Some(h) = &history {
                    save_history(&mut rl, h);
                }
                if let After::Quit = repl.line(&line) {
                    break;
                }
                *vocabulary.borrow_mut() = Vocabulary::of(&repl.session);
            }
            Err(ReadlineError::Interrupted) => {}
            Err(ReadlineError::Eof) => break,
            Err(e) => return Err(ReplError::Input(e.to_string())),
        }
    }
    Ok(())
}

fn save_history(rl: &mut Editor<ReplHelper, DefaultHistory>, path: &std::path::Path) {
    if let Some(dir) = path.parent() {
        let _ = std::fs::create_dir_all(dir);
    }
    if let Err(e) = rl.save_history(path) {
        eprintln!("note: cannot save the history to {}: {e}", path.display());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vocabulary() -> Vocabulary {
        Vocabulary {
            transformations: vec![
                ("MapTiling".into(), vec!["tiles".into()]),
                ("MapFusion".into(), vec![]),
            ],
            names: vec!["maps".into(), "m".into()],
            nodes: vec!["n12".into(), "proj_acc".into()],
        }
    }

    #[test]
    fn commands_transformations_parameters_and_nodes_complete() {
        let v = vocabulary();
        assert_eq!(v.complete(":sh", 3), (0, vec![":show".to_string()]));
        assert_eq!(v.complete("MapT", 4).1, vec!["MapTiling".to_string()]);
        assert_eq!(
            v.complete("MapTiling(m, ti", 15),
            (13, vec!["tiles = ".to_string()])
        );
        assert_eq!(
            v.complete(":apply MapTiling at n12 ti", 26).1,
            vec!["tiles=".to_string()]
        );
        assert_eq!(v.complete(":show n1", 8).1, vec!["n12".to_string()]);
        assert_eq!(
            v.complete("let x = pro", 11).1,
            vec!["proj_acc".to_string()]
        );
    }
}
