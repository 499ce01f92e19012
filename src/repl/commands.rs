//! The REPL's commands (`:show`, `:matches`, `:whynot`, …). Each is a view of the session or a
//! request to it; none rewrites the program itself: `:apply` types a recipe statement, undo and
//! redo move between the session's frames, and the views call the matcher, the explainer, the
//! code generator, the analysis and the benchmark the command line uses.

use super::{Failed, Model, Repl};
use crate::cli::apply::explain_at;
use crate::cli::matching::why;
use crate::cli::recipe::bench::side_by_side;
use crate::cli::recipe::run::run_locked;
use crate::cli::recipe::{load_checked, load_model, user_run};
use crate::cli::{parse_params, write_output};
use crate::codegen::{emit, excerpt, CodegenError};
use crate::ir::text::{print, print_node};
use crate::ir::{NodeId, Program};
use crate::pattern::{find_all, library, Pattern};
use crate::recipe::lock;
use crate::recipe::parse::quote;
use crate::recipe::run::measure;
use crate::transform::{self, ParamValue};
use std::path::Path;
use std::sync::Arc;

/// One command: its name, its arguments as `:help` shows them, and what it does.
pub struct Command {
    pub name: &'static str,
    pub args: &'static str,
    pub doc: &'static str,
}

const fn c(name: &'static str, args: &'static str, doc: &'static str) -> Command {
    Command { name, args, doc }
}

/// Every command, as `:help` lists them.
pub const COMMANDS: &[Command] = &[
    c(":help", "", "this list"),
    c(":show", "[NODE]", "the program, or one node (a map with its body), as text IR"),
    c(":matches", "PATTERN", "the matches of a pattern (the session's or a built-in one)"),
    c(":whynot", "T|PATTERN at NODE[,NODE] [k=v…]", "why a transformation (or pattern) does not apply there: the failed condition and the nearest candidate"),
    c(":apply", "T at NODE[,NODE] [k=v…]", "apply a transformation: types the statement `T(node(\"n12\"), k = v)`"),
    c(":undo", "[N]", "undo the last N inputs (1)"),
    c(":redo", "[N]", "redo N undone inputs (1)"),
    c(":history", "", "the inputs in effect, each with the IR hash after it"),
    c(":diff", "[start|K]", "text IR diff from the start (or from after input K of :history) to now"),
    c(":c", "[NODE]", "the generated C of the program, or of one node"),
    c(":cost", "[NODE]", "bytes moved and DMD of the program, or of one top-level node"),
    c(":bench", "", "time the baseline, the current program and ONNX Runtime side by side"),
    c(":eval", "EXPR", "the value of a recipe expression (changes nothing)"),
    c(":save", "FILE.recipe", "write the session as a recipe and its lock (as `dmove run` does)"),
    c(":quit", "", "leave (Ctrl-D too)"),
];

/// What the loop does after a command.
pub enum After {
    Continue,
    Quit,
}

impl Repl {
    /// Runs one command line (it starts with `:`), printing its result.
    pub fn command(&mut self, line: &str) -> Result<After, Failed> {
        let line = line.trim();
        let (name, rest) = line.split_once(char::is_whitespace).unwrap_or((line, ""));
        let rest = rest.trim();
        let out = match name {
            ":help" | ":h" => help(),
            ":quit" | ":q" | ":exit" => return Ok(After::Quit),
            ":show" => self.show(rest)?,
            ":matches" => self.matches(rest)?,
            ":whynot" => self.why_not(rest)?,
            ":apply" => return self.apply(rest).map(|()| After::Continue),
            ":undo" | ":redo" => self.travel(name == ":undo", rest)?,
            ":history" => self.history(),
            ":diff" => self.diff(rest)?,
            ":c" => self.c(rest)?,
            ":cost" => self.cost(rest)?,
            ":bench" => self.bench()?,
            ":eval" => self.session.evaluate(rest).map_err(Failed::Diagnostics)? + "\n",
            ":save" => self.save(rest)?,
            other => {
                let names = COMMANDS.iter().map(|c| c.name);
                let hint = match crate::recipe::resolve::suggest(other, names) {
                    Some(c) => format!("; did you mean `{c}`?"),
                    None => String::new(),
                };
                return Err(Failed::Message(format!(
                    "unknown command `{other}`{hint} (`:help` lists them)"
                )));
            }
        };
        print!("{out}");
        Ok(After::Continue)
    }

    fn show(&self, rest: &str) -> Result<String, Failed> {
        let p = self.session.program();
        if rest.is_empty() {
            return Ok(print(p));
        }
        let id = node_ref(p, rest)?;
        let n = p.node(id).ok_or_else(|| missing(rest))?;
        Ok(print_node(n) + "\n")
    }

    /// The pattern `name` names: the session's own, else a built-in one.
    fn pattern(&self, name: &str) -> Result<Arc<Pattern>, Failed> {
        if let Some(p) = self.session.pattern(name).map_err(Failed::Diagnostics)? {
            return Ok(p);
        }
        library::builtin(name)
            .map(Arc::new)
            .map_err(|e| Failed::Message(format!("{e} (nor does the session declare it)")))
    }

    fn matches(&self, rest: &str) -> Result<String, Failed> {
        if rest.is_empty() {
            return Err(usage(":matches"));
        }
        let pattern = self.pattern(rest)?;
        let found = find_all(&pattern, self.session.program());
        let mut out = format!("{} match(es) of `{rest}`\n", found.len());
        for m in &found {
            out.push_str(&format!("  {}\n", m.show(&pattern)));
        }
        Ok(out)
    }

    fn why_not(&self, rest: &str) -> Result<String, Failed> {
        let call = Call::parse(rest, ":whynot", self.session.program())?;
        let p = self.session.program();
        match transform::lookup(&call.name) {
            Some(t) => {
                let params = parse_params(t.schema(), &call.params).map_err(Failed::report)?;
                Ok(explain_at(self.session.engine(), t, p, &call.site, &params))
            }
            None => {
                let pattern = self.pattern(&call.name).map_err(|_| {
                    let hint = transform::find(&call.name).err().map(|e| e.to_string());
                    Failed::Message(format!(
                        "`{}` is neither a transformation nor a pattern{}",
                        call.name,
                        hint.map(|h| format!(" ({h})")).unwrap_or_default()
                    ))
                })?;
                Ok(why(&pattern, p, call.site[0], false))
            }
        }
    }

    /// `:apply T at n12 k=v`: the statement `T(node("n12"), k = v)`, run as if typed.
    fn apply(&mut self, rest: &str) -> Result<(), Failed> {
        let call = Call::parse(rest, ":apply", self.session.program())?;
        let t = transform::find(&call.name).map_err(Failed::report)?;
        let params = parse_params(t.schema(), &call.params).map_err(Failed::report)?;
        let mut args: Vec<String> = (call.site.iter())
            .map(|id| format!("node({})", quote(&id.to_string())))
            .collect();
        args.extend(params.iter().map(|(k, v)| format!("{k} = {}", literal(v))));
        let stmt = format!("{}({})", t.name(), args.join(", "));
        println!("> {stmt}");
        self.input(&stmt)
    }

    fn travel(&mut self, back: bool, rest: &str) -> Result<String, Failed> {
        let n = match rest {
            "" => 1,
            n => n
                .parse::<usize>()
                .map_err(|_| Failed::Message(format!("`{n}` is not a number of inputs")))?,
        };
        let (moved, verb) = match back {
            true => (self.session.undo(n), "undid"),
            false => (self.session.redo(n), "redid"),
        };
        if moved == 0 {
            let what = if back { "undo" } else { "redo" };
            return Err(Failed::Message(format!("nothing to {what}")));
        }
        Ok(format!(
            "{verb} {moved} input(s); hash {}{}\n",
            self.session.frame().hash,
            self.same_as()
        ))
    }

    /// ` (as at the start)` or ` (as after input K)` when an earlier frame has the current hash.
    fn same_as(&self) -> String {
        let now = &self.session.frame().hash;
        if crate::transform::engine::program_hash(self.session.start()) == *now {
            return " (as at the start)".into();
        }
        let h = self.session.history();
        match h.iter().position(|f| f.hash == *now) {
            Some(k) => format!(" (as after input {k})"),
            None => String::new(),
        }
    }

    fn history(&self) -> String {
        let frames = self.frames();
        let mut out = String::new();
        for (k, (label, hash)) in frames.iter().enumerate() {
            let first = label.lines().next().unwrap_or("");
            let more = if label.lines().count() > 1 {
                " …"
            } else {
                ""
            };
            out.push_str(&format!(
                "{k:>3}  {}  {first}{more}\n",
                &hash[..12.min(hash.len())]
            ));
        }
        let redo = self.session.redoable();
        if redo > 0 {
            out.push_str(&format!("     ({redo} undone input(s) can be redone)\n"));
        }
        out
    }

    /// Every frame's label and hash, the start first and the current one last.
    fn frames(&self) -> Vec<(String, String)> {
        let h = self.session.history().iter();
        h.chain(std::iter::once(self.session.frame()))
            .map(|f| (f.label.clone(), f.hash.clone()))
            .collect()
    }

    fn diff(&self, rest: &str) -> Result<String, Failed> {
        let history = self.session.history();
        let (from, name): (&Program, String) = match rest {
            "" | "start" => (self.session.start(), "start".into()),
            k => {
                let k: usize = k.parse().map_err(|_| usage(":diff"))?;
                let f = history.get(k).ok_or_else(|| {
                    Failed::Message(format!(
                        "no input {k} before the current one (see :history)"
                    ))
                })?;
                (&f.program, format!("after input {k}"))
            }
        };
        let (a, b) = (print(from), print(self.session.program()));
        if a == b {
            return Ok(format!("no difference from {name}\n"));
        }
        let diff = similar::TextDiff::from_lines(&a, &b);
        Ok(diff
            .unified_diff()
            .context_radius(2)
            .header(&name, "now")
            .to_string())
    }

    fn c(&self, rest: &str) -> Result<String, Failed> {
        let p = self.session.program();
        let c = emit(p).map_err(|e| match e {
            CodegenError::NotLowered(nodes) => Failed::Message(format!(
                "no C: {} operator(s) are not lowered yet (`apply Expand everywhere` lowers them)",
                nodes.len()
            )),
            other => Failed::report(other),
        })?;
        if rest.is_empty() {
            return Ok(c.source);
        }
        let id = node_ref(p, rest)?;
        excerpt(&c.source, id).ok_or_else(|| {
            Failed::Message(format!(
                "{id} has no code of its own (access nodes and nodes inside a tasklet have none)"
            ))
        })
    }

    fn cost(&self, rest: &str) -> Result<String, Failed> {
        let p = self.session.program();
        let report = measure::report(p).map_err(Failed::Message)?;
        if rest.is_empty() {
            let bytes = measure::bytes(p).map_err(Failed::Message)?;
            return Ok(format!(
                "bytes moved {}, DMD {}\n",
                measure_text(bytes),
                measure_text(report.total.dmd)
            ));
        }
        let id = node_ref(p, rest)?;
        let entry = report.nodes.iter().find(|e| e.id == Some(id));
        let entry = entry.ok_or_else(|| {
            Failed::Message(format!(
                "{id} is not a top-level node of the lowered program: costs are per top-level node (`:cost` lists the total)"
            ))
        })?;
        let bytes = entry
            .bytes_moved
            .map_or("not constant".into(), |b| measure_text(b as f64));
        Ok(format!(
            "{id} {}: bytes moved {bytes}, DMD {}\n",
            entry.name,
            measure_text(entry.dmd)
        ))
    }

    fn bench(&self) -> Result<String, Failed> {
        let current = self.session.program();
        if let Err(CodegenError::NotLowered(nodes)) = emit(current) {
            return Err(Failed::Message(format!(
                "cannot time the current program: {} operator(s) are not lowered (`apply Expand everywhere` first)",
                nodes.len()
            )));
        }
        let progress = crate::progress::Mode::for_stderr(false);
        let rows = side_by_side(
            self.session.start(),
            current,
            self.model.onnx(),
            self.seed,
            progress,
        )
        .map_err(Failed::report)?;
        let mut out = crate::bench::report::render_table(&rows, None);
        out.push_str(&crate::bench::report::render_ratios(&rows));
        Ok(out)
    }

    /// `:save FILE.recipe`: the recipe, then the lock from running it as `dmove run` does. The
    /// built-in model is written beside it (`FILE.onnx`) so the lock has a model to name.
    fn save(&mut self, rest: &str) -> Result<String, Failed> {
        if rest.is_empty() {
            return Err(usage(":save"));
        }
        let path = Path::new(rest);
        let name = (path.file_stem().and_then(|s| s.to_str()))
            .map(|s| s.trim_end_matches(".recipe").to_string())
            .unwrap_or_else(|| "session".into());
        write_output(path, self.session.recipe(&name).as_bytes()).map_err(Failed::report)?;
        let model_path = match &self.model {
            Model::File { path, .. } => path.clone(),
            Model::Demo { bytes } => {
                let beside = path.with_extension("onnx");
                write_output(&beside, bytes).map_err(Failed::report)?;
                beside
            }
        };
        let lock_path = lock::default_path(path);
        let set = self.session.options().set.clone();
        let loaded = load_checked(path).map_err(Failed::report)?.loaded;
        let model = load_model(&model_path, self.model.bindings(), &set, &lock_path)
            .map_err(Failed::report)?;
        let opts = user_run(set, self.seed);
        let done = run_locked(&loaded, path, &model, &opts, &lock_path).map_err(Failed::report)?;
        let verdict = match done.entry.final_hash == self.session.frame().hash {
            true => "it reproduces the session".to_string(),
            false => format!(
                "its run ends at {}, not at the session's hash (a search chose differently, or a model file changed)",
                done.entry.final_hash
            ),
        };
        Ok(format!(
            "saved {} and {} ({} step(s), hash {}): {verdict}\n",
            path.display(),
            lock_path.display(),
            done.entry.steps.len(),
            done.entry.final_hash
        ))
    }
}

/// `T at n12,n13 k=v …` (`:apply` and `:whynot`).
struct Call {
    name: String,
    site: Vec<NodeId>,
    params: Vec<String>,
}

impl Call {
    fn parse(text: &str, command: &str, p: &Program) -> Result<Call, Failed> {
        let words: Vec<&str> = text.split_whitespace().collect();
        let [name, "at", site, params @ ..] = words.as_slice() else {
            return Err(usage(command));
        };
        let site = (site.split(',').filter(|s| !s.is_empty()))
            .map(|s| node_ref(p, s))
            .collect::<Result<Vec<_>, _>>()?;
        if site.is_empty() {
            return Err(usage(command));
        }
        Ok(Call {
            name: name.to_string(),
            site,
            params: params.iter().map(|s| s.to_string()).collect(),
        })
    }
}

/// A node written `n12`, or by its label.
pub fn node_ref(p: &Program, text: &str) -> Result<NodeId, Failed> {
    let text = text.trim().trim_matches('"');
    if let Ok(id) = text.parse::<NodeId>() {
        if p.node(id).is_some() {
            return Ok(id);
        }
    }
    let mut found = None;
    p.graph.walk(&mut |n| {
        if found.is_none() && n.label == text {
            found = Some(n.id);
        }
    });
    found.ok_or_else(|| missing(text))
}

fn missing(text: &str) -> Failed {
    Failed::Message(format!(
        "the program has no node `{text}` (ids as `:show` prints them, e.g. n12, or a node's label)"
    ))
}

fn usage(command: &str) -> Failed {
    let c = COMMANDS.iter().find(|c| c.name == command);
    Failed::Message(match c {
        Some(c) => format!("usage: {} {}", c.name, c.args),
        None => format!("usage: see :help for {command}"),
    })
}

/// A transformation parameter as recipe text.
fn literal(v: &ParamValue) -> String {
    match v {
        ParamValue::Bool(b) => b.to_string(),
        ParamValue::Int(i) => i.to_string(),
        ParamValue::Ints(l) => {
            let items: Vec<String> = l.iter().map(i64::to_string).collect();
            format!("[{}]", items.join(", "))
        }
        ParamValue::Str(s) => quote(s),
    }
}

/// `1.25e6` → `1250000`: numbers as the recipe report shows them.
fn measure_text(x: f64) -> String {
    crate::recipe::run::describe::number(x)
}

fn help() -> String {
    let mut out = String::from(
        "Type recipe statements and declarations (blocks may span lines); commands:\n",
    );
    for c in COMMANDS {
        let head = format!("{} {}", c.name, c.args);
        out.push_str(&format!("  {head:<40} {}\n", c.doc));
    }
    out.push_str("Tab completes commands, transformations, their parameters and node names; Ctrl-C interrupts long work.\n");
    out
}
