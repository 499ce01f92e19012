//! An interactive session on one program (`dmove repl`): recipe text typed one input at a time,
//! run by the recipe interpreter through one checked [`Engine`], with undo and redo.
//!
//! The session owns what a recipe run owns — the declarations, the statements of `main`, the
//! program, the engine, the baseline, the parameter values, the variables and the report — and
//! keeps them between inputs. Each input is a file of its own in the session's [`Sources`], so a
//! diagnostic points into what the user typed, exactly as `dmove run` renders one. An input is
//! checked in context (the declarations so far and every statement in effect, then the new
//! ones, as one recipe whose `main` is those statements), then only its new statements run, in
//! the top frame of variables so `let m = …` stays bound. A `choose` searches over the whole of
//! `main`, so an input that declares one replays every statement from the start under the
//! chosen values ([`super::run::run_with`]).
//!
//! **History.** Every input that succeeds makes a [`Frame`]: the declarations and statements in
//! effect, the program and the interpreter's state after it. Undo and redo move between frames,
//! which are kept whole, so the program's hash after an undo is the one it had before — exactly,
//! not by inverting rewrites. An input that fails (a diagnostic, a refused rewrite, Ctrl-C)
//! makes no frame: the session stays as it was. [`Session::recipe`] writes the frame's
//! declarations and statements as a recipe (undone inputs excluded), which `dmove run` or
//! `dmove check` replays.

mod recipe;

#[cfg(test)]
mod tests;

use super::ast::{self, Entry, Item, Stmt};
use super::modules::load_tree;
use super::parse::{parse, parse_expr, parse_input};
use super::run::env::{Baseline, Carried, Interp};
use super::run::failure::INTERRUPTED;
use super::run::params::{resolve_params, ParamSpace};
use super::run::{eval, run_with, RecordedStep, RunOptions, Value};
use super::{check, Diagnostic, Loaded, Sources, Span};
use crate::ir::Program;
use crate::pattern::Pattern;
use crate::transform::engine::{program_hash, Engine};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The code of the session's own errors (a `main` typed as an input, nothing to undo, …).
pub const SESSION: &str = "dmove::recipe::session";

/// The checker's "declared but never used" warnings: in a session everything is unused when it
/// is typed, so they are not shown.
const UNUSED: &str = "dmove::recipe::unused";

/// The version a session's recipe gets when it did not start from one.
const VERSION: &str = "0.1.0";

/// How the root of the session's recipe is named in diagnostics.
const ROOT: &str = "session";

/// The session's state after one input.
#[derive(Clone, Debug)]
pub struct Frame {
    /// The input that made this frame, as typed (`start` for the first).
    pub label: String,
    pub decls: Vec<Item>,
    pub stmts: Vec<Stmt>,
    pub program: Program,
    /// [`program_hash`] of `program`.
    pub hash: String,
    space: ParamSpace,
    carried: Carried,
}

impl Frame {
    fn new(
        label: String,
        decls: Vec<Item>,
        stmts: Vec<Stmt>,
        program: Program,
        space: ParamSpace,
        carried: Carried,
    ) -> Frame {
        Frame {
            label,
            decls,
            stmts,
            hash: program_hash(&program),
            program,
            space,
            carried,
        }
    }

    /// The steps committed so far, in order.
    pub fn steps(&self) -> &[RecordedStep] {
        &self.carried.report.steps
    }
}

/// What one input did.
#[derive(Clone, Debug, Default)]
pub struct Done {
    /// The steps it committed.
    pub steps: Vec<RecordedStep>,
    /// What its `print` statements printed.
    pub printed: Vec<String>,
    /// Its `note`s, and the skips its strategies recorded (as `skipped: …`).
    pub notes: Vec<String>,
    pub warnings: Vec<Diagnostic>,
    /// Whether the input changed the session (declared or ran something): it can be undone.
    pub recorded: bool,
}

/// A session on one program; see the module docs.
pub struct Session {
    sources: Sources,
    dir: Option<PathBuf>,
    opts: RunOptions,
    engine: Engine,
    baseline: Baseline,
    /// The header of the recipe the session started from (`--recipe`), kept when saving.
    header: Option<ast::Header>,
    /// The recipe of the current frame, loaded and checked.
    loaded: Loaded,
    frame: Frame,
    /// Earlier frames, oldest first (undo goes back through them).
    history: Vec<Frame>,
    /// Undone frames, most recently undone last (redo goes forward through them).
    undone: Vec<Frame>,
    inputs: usize,
}

/// The lengths of a report's lists before an input, to tell what it added.
struct Counts {
    steps: usize,
    printed: usize,
    notes: usize,
    skipped: usize,
    warnings: usize,
}

impl Counts {
    fn of(r: &super::run::RunReport) -> Counts {
        Counts {
            steps: r.steps.len(),
            printed: r.printed.len(),
            notes: r.notes.len(),
            skipped: r.skipped.len(),
            warnings: r.warnings.len(),
        }
    }

    /// What `r` gained since these counts.
    fn done(&self, r: &super::run::RunReport) -> Done {
        let skipped = r.skipped[self.skipped.min(r.skipped.len())..].iter();
        Done {
            steps: r.steps[self.steps.min(r.steps.len())..].to_vec(),
            printed: r.printed[self.printed.min(r.printed.len())..].to_vec(),
            notes: (r.notes[self.notes.min(r.notes.len())..].iter().cloned())
                .chain(skipped.map(|s| format!("skipped: {}", s.reason)))
                .collect(),
            warnings: r.warnings[self.warnings.min(r.warnings.len())..].to_vec(),
            recorded: true,
        }
    }
}

impl Session {
    /// A session on `program`: file `use`s are read relative to `dir`, steps run with
    /// `opts.checks`, and `opts.set` fixes parameters as `--set` does.
    pub fn new(program: Program, dir: Option<&Path>, opts: RunOptions) -> Session {
        let loaded = assemble(Sources::default(), None, &[], &[], dir);
        let frame = Frame::new(
            "start".into(),
            Vec::new(),
            Vec::new(),
            program.clone(),
            ParamSpace::default(),
            Carried::start(Default::default()),
        );
        Session {
            sources: loaded.sources.clone(),
            dir: dir.map(Path::to_path_buf),
            engine: Engine::new(opts.checks.clone()),
            baseline: Baseline::new(program),
            opts,
            header: None,
            loaded,
            frame,
            history: Vec::new(),
            undone: Vec::new(),
            inputs: 0,
        }
    }

    /// Takes a recipe's declarations and the statements of its `main` (`dmove repl --recipe`),
    /// running them from the start as `dmove run` does; one input to undo.
    pub fn load_recipe(&mut self, name: &str, text: &str) -> Result<Done, Vec<Diagnostic>> {
        let file = self.sources.add(name, text);
        let parsed = parse(file, text).map_err(|d| vec![d])?;
        let mut decls = self.frame.decls.clone();
        let mut stmts = self.frame.stmts.clone();
        for item in parsed.items {
            match item {
                Item::Main(main) => stmts.extend(main.body.stmts),
                other => decls.push(other),
            }
        }
        let header = parsed.header.or_else(|| self.header.clone());
        let loaded = assemble(
            self.sources.clone(),
            header.as_ref(),
            &decls,
            &stmts,
            self.dir(),
        );
        let warnings = checked(&loaded, file)?;
        let (frame, mut done) = self.replay(&loaded, decls, stmts, format!("--recipe {name}"))?;
        done.warnings.splice(0..0, warnings);
        self.header = header;
        self.commit(loaded, frame);
        Ok(done)
    }

    /// Runs one input: declarations and statements, in the order typed (see the module docs).
    /// On any error the session is as it was.
    pub fn input(&mut self, text: &str) -> Result<Done, Vec<Diagnostic>> {
        let file = self.next_file(text);
        let entries = parse_input(file, text).map_err(|d| vec![d])?;
        let (mut items, mut stmts) = (Vec::new(), Vec::new());
        for e in entries {
            match e {
                Entry::Item(Item::Main(m)) => {
                    return Err(vec![Diagnostic::error(
                        SESSION,
                        m.name.span,
                        "`main` is the session itself",
                    )
                    .label("not needed here")
                    .help("type the statements of `main` directly, one input at a time")])
                }
                Entry::Item(i) => items.push(i),
                Entry::Stmt(s) => stmts.push(s),
            }
        }
        if items.is_empty() && stmts.is_empty() {
            return Ok(Done::default());
        }
        let searches = items.iter().any(|i| matches!(i, Item::Choose(_)));
        let mut decls = self.frame.decls.clone();
        decls.extend(items);
        let mut all = self.frame.stmts.clone();
        all.extend(stmts.iter().cloned());
        let header = self.header.clone();
        let loaded = assemble(
            self.sources.clone(),
            header.as_ref(),
            &decls,
            &all,
            self.dir(),
        );
        let warnings = checked(&loaded, file)?;
        let label = text.trim().to_string();
        let (frame, mut done) = match searches {
            true => self.replay(&loaded, decls, all, label)?,
            false => self.step(
                &loaded,
                decls,
                all,
                &stmts,
                label,
                Span::new(file, 0, text.len()),
            )?,
        };
        done.warnings.splice(0..0, warnings);
        self.commit(loaded, frame);
        Ok(done)
    }

    /// Runs `new` (the last statements of `all`) on the current frame.
    fn step(
        &mut self,
        loaded: &Loaded,
        decls: Vec<Item>,
        all: Vec<Stmt>,
        new: &[Stmt],
        label: String,
        span: Span,
    ) -> Result<(Frame, Done), Vec<Diagnostic>> {
        let (space, defaults) = resolve_params(loaded, &self.opts.set, &self.opts.fixed)?;
        let mut carried = self.frame.carried.clone();
        for (key, value) in defaults {
            carried.values.entry(key).or_insert(value);
        }
        let before = Counts::of(&carried.report);
        let mut program = self.frame.program.clone();
        self.engine.checks = self.opts.checks.clone();
        let mut it = Interp::new(
            loaded,
            &mut program,
            &self.opts,
            &space,
            &mut self.engine,
            &mut self.baseline,
            carried,
        );
        let outcome = it.statements(new).map_err(|f| f.into_diagnostic());
        let carried = it.into_carried();
        not_interrupted(outcome, span)?;
        let done = before.done(&carried.report);
        Ok((Frame::new(label, decls, all, program, space, carried), done))
    }

    /// Runs every statement of `all` from the start program, with every `choose` decided
    /// first, as `dmove run` would run the recipe.
    fn replay(
        &mut self,
        loaded: &Loaded,
        decls: Vec<Item>,
        all: Vec<Stmt>,
        label: String,
    ) -> Result<(Frame, Done), Vec<Diagnostic>> {
        let mut program = self.baseline.start.clone();
        let run = run_with(
            loaded,
            &mut program,
            &self.opts,
            &mut self.engine,
            &mut self.baseline,
        );
        let whole = Span::new(loaded.root().file, 0, 0);
        let (space, carried) = not_interrupted(run.map_err(|e| e.diagnostic), whole)?;
        let mut done = Counts::of(&Default::default()).done(&carried.report);
        for d in &carried.report.decisions {
            let chosen: Vec<String> = (d.chosen.iter())
                .map(|(k, v)| format!("{k} = {v}"))
                .collect();
            done.notes.push(format!(
                "chose {} by {}; replayed {} statement(s) from the start",
                chosen.join(", "),
                d.by,
                all.len()
            ));
        }
        Ok((Frame::new(label, decls, all, program, space, carried), done))
    }

    /// Makes `frame` the current one (an input that can be undone).
    fn commit(&mut self, loaded: Loaded, frame: Frame) {
        self.sources = loaded.sources.clone();
        self.loaded = loaded;
        let previous = std::mem::replace(&mut self.frame, frame);
        self.history.push(previous);
        self.undone.clear();
    }

    /// Evaluates one expression in the session (its variables, parameters and program) without
    /// changing anything, and shows its value as `print` would.
    pub fn evaluate(&mut self, text: &str) -> Result<String, Vec<Diagnostic>> {
        let file = self.next_file(text);
        let expr = parse_expr(file, text).map_err(|d| vec![d])?;
        let carried = std::mem::take(&mut self.frame.carried);
        let mut it = Interp::new(
            &self.loaded,
            &mut self.frame.program,
            &self.opts,
            &self.frame.space,
            &mut self.engine,
            &mut self.baseline,
            carried,
        );
        let shown = eval::eval(&mut it, &expr).map(|v| super::run::describe::show(it.p, &v));
        self.frame.carried = it.into_carried();
        not_interrupted(shown.map_err(|f| f.into_diagnostic()), expr.span)
    }

    /// The value of a variable of the session (`let`), if one is bound.
    pub fn variable(&self, name: &str) -> Option<&Value> {
        self.frame.carried.env.get(name)
    }

    /// The names of the session's variables.
    pub fn variables(&self) -> Vec<String> {
        self.frame.carried.env.names()
    }

    /// The pattern the session declares (or uses from a module: `cpu::fusable`) as `name`;
    /// `None` when it declares none of that name.
    pub fn pattern(&self, name: &str) -> Result<Option<Arc<Pattern>>, Vec<Diagnostic>> {
        let segments = (name.split("::"))
            .map(|s| ast::Ident {
                name: s.trim().to_string(),
                span: Span::default(),
            })
            .collect();
        let path = ast::Path {
            segments,
            span: Span::default(),
        };
        let Ok((_, decl)) = super::resolve::pattern(&self.loaded, 0, &path) else {
            return Ok(None);
        };
        super::patterns::build(decl).map(|p| Some(Arc::new(p)))
    }

    /// Goes back `n` inputs (all there are when fewer); how many it went back.
    pub fn undo(&mut self, n: usize) -> usize {
        self.travel(n, true)
    }

    /// Goes forward again through `n` undone inputs; how many it went forward.
    pub fn redo(&mut self, n: usize) -> usize {
        self.travel(n, false)
    }

    fn travel(&mut self, n: usize, back: bool) -> usize {
        let mut moved = 0;
        while moved < n {
            let (from, to) = match back {
                true => (&mut self.history, &mut self.undone),
                false => (&mut self.undone, &mut self.history),
            };
            let Some(frame) = from.pop() else { break };
            to.push(std::mem::replace(&mut self.frame, frame));
            moved += 1;
        }
        if moved > 0 {
            let f = &self.frame;
            self.loaded = assemble(
                self.sources.clone(),
                self.header.as_ref(),
                &f.decls,
                &f.stmts,
                self.dir.as_deref(),
            );
        }
        moved
    }

    /// The current frame.
    pub fn frame(&self) -> &Frame {
        &self.frame
    }

    /// The frames before the current one, oldest first: `[0]` is the start.
    pub fn history(&self) -> &[Frame] {
        &self.history
    }

    /// How many inputs redo can go forward through.
    pub fn redoable(&self) -> usize {
        self.undone.len()
    }

    pub fn program(&self) -> &Program {
        &self.frame.program
    }

    /// The program as the session started (before any input).
    pub fn start(&self) -> &Program {
        &self.baseline.start
    }

    /// Every input and module, for rendering diagnostics.
    pub fn sources(&self) -> &Sources {
        &self.sources
    }

    /// The current frame's recipe, loaded (its rules, patterns and parameters).
    pub fn loaded(&self) -> &Loaded {
        &self.loaded
    }

    /// The session's engine (its checks, its cache of compiled outputs).
    pub fn engine(&self) -> &Engine {
        &self.engine
    }

    pub fn options(&self) -> &RunOptions {
        &self.opts
    }

    fn dir(&self) -> Option<&Path> {
        self.dir.as_deref()
    }

    /// Adds one input as a file of its own: `input 3`.
    fn next_file(&mut self, text: &str) -> super::FileId {
        self.inputs += 1;
        self.sources.add(format!("input {}", self.inputs), text)
    }
}

/// The session's recipe as one loaded root: `header`, the declarations, and a `main` of the
/// statements (their spans point into the inputs that typed them).
fn assemble(
    sources: Sources,
    header: Option<&ast::Header>,
    decls: &[Item],
    stmts: &[Stmt],
    dir: Option<&Path>,
) -> Loaded {
    let nowhere = Span::default();
    let main = ast::Rule {
        name: ast::Ident {
            name: "main".into(),
            span: nowhere,
        },
        params: Vec::new(),
        body: ast::Block {
            stmts: stmts.to_vec(),
            span: nowhere,
        },
        span: nowhere,
    };
    let mut items = decls.to_vec();
    items.push(Item::Main(main));
    let root = ast::File {
        header: Some(header.cloned().unwrap_or_else(|| default_header(ROOT))),
        items,
        comments: Vec::new(),
        span: nowhere,
    };
    load_tree(sources, ROOT, root, dir)
}

/// The header of a session that did not start from a recipe: `recipe "NAME" version "0.1.0"`.
fn default_header(name: &str) -> ast::Header {
    let text = |value: &str| ast::Str {
        value: value.to_string(),
        span: Span::default(),
    };
    ast::Header {
        name: text(name),
        version: text(VERSION),
        requires: None,
        span: Span::default(),
    }
}

/// The errors of `l`, or the warnings about input `file` worth showing.
fn checked(l: &Loaded, file: super::FileId) -> Result<Vec<Diagnostic>, Vec<Diagnostic>> {
    let all = check(l);
    let errors: Vec<Diagnostic> = all.iter().filter(|d| d.is_error()).cloned().collect();
    if !errors.is_empty() {
        return Err(errors);
    }
    Ok((all.into_iter())
        .filter(|d| d.code != UNUSED && d.span.file == file)
        .collect())
}

/// `outcome`, unless Ctrl-C was pressed meanwhile: then work that finished anyway is dropped
/// too, so an interrupted input never changes the session.
fn not_interrupted<T>(outcome: Result<T, Diagnostic>, span: Span) -> Result<T, Vec<Diagnostic>> {
    match outcome {
        Err(d) => Err(vec![d]),
        Ok(_) if crate::interrupt::requested() => Err(vec![Diagnostic::error(
            INTERRUPTED,
            span,
            "interrupted (Ctrl-C)",
        )
        .label("while running this")
        .note("nothing this input did was kept")]),
        Ok(v) => Ok(v),
    }
}
