//! `dmove repl [MODEL] [--recipe R]`: an interactive session on a model. Recipe statements and
//! declarations are typed live and run by the recipe interpreter through the session's checked
//! engine ([`crate::recipe::session`]); commands (`:show`, `:matches`, `:whynot`, `:undo`,
//! `:diff`, `:c`, `:cost`, `:bench`, `:save`, … in [`commands`]) look at the session or ask it
//! for something. The REPL itself has no rewrite logic.
//!
//! On a terminal it reads lines with rustyline ([`editor`]: completion, history file, blocks
//! read while brackets are open); otherwise it reads standard input line by line, so
//! `dmove repl < session.txt` runs a script, and exits non-zero when any input failed. An error
//! is rendered like `dmove run`'s and never ends the session. Ctrl-C while idle clears the line;
//! during long work it interrupts that work ([`crate::interrupt`]) and the session keeps the
//! program it had before the input.

// Like the command line's errors, `ReplError` ends the command: returned once, never in a loop.
#![allow(clippy::result_large_err)]

pub mod commands;
pub mod editor;

use crate::cli::recipe::{parse_sets, user_run, ScriptLimits};
use crate::cli::{is_onnx, load_program, Bindings, CliError};
use crate::demo::model::{encoder_model, EncoderConfig};
use crate::ir::Program;
use crate::onnx::{import, load_model, ImportOptions};
use crate::recipe::parse::open_brackets;
use crate::recipe::session::{Done, Session};
use crate::recipe::Diagnostic;
use commands::After;
use std::io::{BufRead, IsTerminal};
use std::path::PathBuf;

/// `dmove repl`
#[derive(Clone, Debug, clap::Args)]
pub struct ReplArgs {
    /// The model: an `.onnx` file, or textual IR. Without one, the demo's transformer encoder
    /// layer (the model `dmove demo` optimizes).
    #[arg(value_name = "MODEL")]
    pub model: Option<PathBuf>,
    #[command(flatten)]
    pub bindings: Bindings,
    /// Start from this recipe: its declarations, and its `main` run as `dmove run` would.
    #[arg(long, value_name = "RECIPE")]
    pub recipe: Option<PathBuf>,
    /// Fix a recipe parameter, e.g. `--set tile=32`.
    #[arg(long = "set", value_name = "NAME=VALUE")]
    pub set: Vec<String>,
    /// The history file (default: `$XDG_STATE_HOME/dmove/history`, or
    /// `~/.local/state/dmove/history`).
    #[arg(long, value_name = "FILE")]
    pub history: Option<PathBuf>,
    /// Seed of the random inputs used for numerics checks and benchmarks.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    #[command(flatten)]
    pub script_limits: ScriptLimits,
}

/// The seed the demo's model is built with (the weights `dmove demo` uses).
const DEMO_SEED: u64 = 2024;

/// Errors that end `dmove repl` (an input's error never does).
#[derive(Debug, thiserror::Error, miette::Diagnostic)]
pub enum ReplError {
    #[error(transparent)]
    #[diagnostic(transparent)]
    Cli(#[from] CliError),
    #[error(transparent)]
    #[diagnostic(transparent)]
    Onnx(#[from] crate::onnx::OnnxError),
    /// Reading standard input or the terminal failed.
    #[error("cannot read the input: {0}")]
    #[diagnostic(code(dmove::repl::input))]
    Input(String),
    /// Standard input was not a terminal and some inputs failed (each was shown).
    #[error("{0} input(s) failed")]
    #[diagnostic(code(dmove::repl::failed))]
    Failed(usize),
}

/// Where the session's model came from: `:save` needs a file for the lock, `:bench` the ONNX
/// bytes for ONNX Runtime.
pub enum Model {
    File {
        path: PathBuf,
        bindings: Bindings,
        onnx: Option<Vec<u8>>,
    },
    /// The demo's encoder layer, built in memory.
    Demo { bytes: Vec<u8> },
}

impl Model {
    /// The ONNX bytes ONNX Runtime can run, when the model is ONNX.
    pub fn onnx(&self) -> Option<&[u8]> {
        match self {
            Model::File { onnx, .. } => onnx.as_deref(),
            Model::Demo { bytes } => Some(bytes),
        }
    }

    /// The bindings it was imported with.
    pub fn bindings(&self) -> &Bindings {
        static NONE: std::sync::OnceLock<Bindings> = std::sync::OnceLock::new();
        match self {
            Model::File { bindings, .. } => bindings,
            Model::Demo { .. } => NONE.get_or_init(Bindings::default),
        }
    }
}

/// Why an input or a command failed (already worded; shown by [`Repl::fail`]).
pub enum Failed {
    Diagnostics(Vec<Diagnostic>),
    Message(String),
    Report(miette::Report),
}

impl Failed {
    pub fn report(e: impl miette::Diagnostic + Send + Sync + 'static) -> Failed {
        Failed::Report(miette::Report::new(e))
    }
}

/// The session and what the commands need besides it.
pub struct Repl {
    pub session: Session,
    pub model: Model,
    pub seed: u64,
    /// How many inputs failed.
    pub errors: usize,
}

impl Repl {
    /// One complete input: a command, or recipe text.
    pub fn line(&mut self, text: &str) -> After {
        let result = match text.trim_start().starts_with(':') {
            true => self.command(text),
            false => self.input(text).map(|()| After::Continue),
        };
        result.unwrap_or_else(|f| {
            self.fail(f);
            After::Continue
        })
    }

    /// Recipe text typed by the user (or by `:apply`).
    pub fn input(&mut self, text: &str) -> Result<(), Failed> {
        let done = self.session.input(text).map_err(Failed::Diagnostics)?;
        self.done(&done);
        Ok(())
    }

    fn done(&self, done: &Done) {
        crate::cli::recipe::show(self.session.sources(), &done.warnings);
        let first = self.session.frame().steps().len() - done.steps.len();
        for (k, s) in done.steps.iter().enumerate() {
            println!("step {}: {}", first + k + 1, s.step.summary());
        }
        for line in done.printed.iter().chain(&done.notes) {
            println!("{line}");
        }
        if !done.steps.is_empty() {
            println!("hash {}", self.session.frame().hash);
        }
    }

    pub fn fail(&mut self, f: Failed) {
        self.errors += 1;
        match f {
            Failed::Diagnostics(d) => {
                crate::cli::recipe::show(self.session.sources(), &d);
            }
            Failed::Message(m) => eprintln!("error: {m}"),
            Failed::Report(r) => eprintln!("{r:?}"),
        }
    }
}

pub fn run(args: &ReplArgs) -> Result<(), ReplError> {
    args.script_limits.configure()?;
    let (program, model, what) = load(args)?;
    let opts = user_run(parse_sets(&args.set)?, args.seed);
    let dir = match &args.recipe {
        Some(r) => r.parent().map(PathBuf::from).unwrap_or_default(),
        None => PathBuf::from("."),
    };
    let mut repl = Repl {
        session: Session::new(program, Some(&dir), opts),
        model,
        seed: args.seed,
        errors: 0,
    };
    let interactive = std::io::stdin().is_terminal();
    if interactive {
        println!("dmove repl on {what}; `:help` lists the commands");
    }
    if let Some(r) = &args.recipe {
        let text = std::fs::read_to_string(r).map_err(|source| CliError::Read {
            path: r.clone(),
            source,
        })?;
        match repl.session.load_recipe(&r.display().to_string(), &text) {
            Ok(done) => repl.done(&done),
            Err(d) => repl.fail(Failed::Diagnostics(d)),
        }
    }
    match interactive {
        true => editor::interactive(&mut repl, args.history.clone()),
        false => batch(&mut repl),
    }
}

/// The model to work on, what the REPL says it is, and where it came from.
fn load(args: &ReplArgs) -> Result<(Program, Model, String), ReplError> {
    let Some(path) = &args.model else {
        let cfg = EncoderConfig::default();
        let bytes = encoder_model(&cfg, DEMO_SEED);
        let program = import(&load_model(&bytes)?, &ImportOptions::default())?;
        let what = format!(
            "the demo's encoder layer (sequence {}, hidden {}, {} heads, FFN {})",
            cfg.seq, cfg.hidden, cfg.heads, cfg.ffn
        );
        return Ok((program, Model::Demo { bytes }, what));
    };
    let program = load_program(path, &args.bindings)?;
    let onnx = match is_onnx(path) {
        true => Some(std::fs::read(path).map_err(|source| CliError::Read {
            path: path.clone(),
            source,
        })?),
        false => None,
    };
    let model = Model::File {
        path: path.clone(),
        bindings: args.bindings.clone(),
        onnx,
    };
    Ok((program, model, path.display().to_string()))
}

/// Standard input that is not a terminal: line by line, each input complete once its brackets
/// close; fails when any input failed.
fn batch(repl: &mut Repl) -> Result<(), ReplError> {
    let mut pending = String::new();
    for line in std::io::stdin().lock().lines() {
        let line = line.map_err(|e| ReplError::Input(e.to_string()))?;
        if pending.is_empty() && line.trim().is_empty() {
            continue;
        }
        pending.push_str(&line);
        pending.push('\n');
        if pending.trim_start().starts_with(':') || open_brackets(&pending) == 0 {
            let text = std::mem::take(&mut pending);
            if let After::Quit = repl.line(&text) {
                break;
            }
        }
    }
    if !pending.trim().is_empty() {
        repl.line(&pending);
    }
    match repl.errors {
        0 => Ok(()),
        n => Err(ReplError::Failed(n)),
    }
}
