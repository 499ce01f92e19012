//! Progress reporting for long commands (benchmarks, conformance, recipe runs): a bar on
//! standard error when it is a terminal a person watches, plain `· message` lines otherwise.
//!
//! A bar never appears in machine-readable output: a command printing JSON, or whose standard
//! error is a pipe or a file, gets [`Mode::Lines`] from [`Mode::for_stderr`]
//! (or [`Mode::Quiet`]) instead, so logs stay readable and nothing redraws in them.

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::IsTerminal;

/// How progress is shown.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Mode {
    /// A bar redrawn on standard error (a terminal).
    Bar,
    /// One `· message` line on standard error per step.
    Lines,
    /// Nothing at all.
    #[default]
    Quiet,
}

impl Mode {
    /// A bar when standard error is a terminal and the command's output is for people (`json`
    /// false), lines otherwise.
    pub fn for_stderr(json: bool) -> Mode {
        if !json && std::io::stderr().is_terminal() {
            Mode::Bar
        } else {
            Mode::Lines
        }
    }

    /// This mode without the lines: for work whose steps are too many to log a line each (a
    /// recipe's checked rewrites), which shows a bar on a terminal and nothing otherwise.
    pub fn without_lines(self) -> Mode {
        match self {
            Mode::Bar => Mode::Bar,
            _ => Mode::Quiet,
        }
    }
}

/// A sequence of `total` steps with a message, shown as [`Mode`] says.
pub struct Progress {
    mode: Mode,
    bar: Option<ProgressBar>,
}

impl Progress {
    /// Starts a task of `total` steps titled `title`.
    pub fn new(mode: Mode, title: &str, total: u64) -> Progress {
        let bar = (mode == Mode::Bar).then(|| {
            let bar = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::stderr());
            let style = ProgressStyle::with_template("{prefix} [{bar:30}] {pos}/{len} {msg}")
                .unwrap_or_else(|_| ProgressStyle::default_bar())
                .progress_chars("=> ");
            bar.set_style(style);
            bar.set_prefix(title.to_string());
            bar
        });
        if mode == Mode::Lines {
            eprintln!("· {title}");
        }
        Progress { mode, bar }
    }

    /// A task whose number of steps is not known in advance: a spinner with the count so far.
    pub fn unbounded(mode: Mode, title: &str) -> Progress {
        let bar = (mode == Mode::Bar).then(|| {
            let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr());
            let style = ProgressStyle::with_template("{prefix} {spinner} {pos} {msg}")
                .unwrap_or_else(|_| ProgressStyle::default_spinner());
            bar.set_style(style);
            bar.set_prefix(title.to_string());
            bar.enable_steady_tick(std::time::Duration::from_millis(120));
            bar
        });
        if mode == Mode::Lines {
            eprintln!("· {title}");
        }
        Progress { mode, bar }
    }

    /// Runs `f` with the bar hidden, so what it prints (on either stream) is not overdrawn.
    pub fn suspend<R>(&self, f: impl FnOnce() -> R) -> R {
        match &self.bar {
            Some(bar) => bar.suspend(f),
            None => f(),
        }
    }

    /// Whether anything is shown: callers skip composing messages nobody sees.
    pub fn shown(&self) -> bool {
        self.mode != Mode::Quiet
    }

    /// Says what the current step is doing.
    pub fn step(&self, message: &str) {
        match (&self.bar, self.mode) {
            (Some(bar), _) => bar.set_message(message.to_string()),
            (None, Mode::Lines) => eprintln!("· {message}"),
            _ => {}
        }
    }

    /// One step done.
    pub fn advance(&self) {
        if let Some(bar) = &self.bar {
            bar.inc(1);
        }
    }

    /// A line that must stay visible (a note, a warning), printed above a bar.
    pub fn note(&self, line: &str) {
        match (&self.bar, self.mode) {
            (Some(bar), _) => bar.println(line),
            (None, Mode::Quiet) => {}
            (None, _) => eprintln!("{line}"),
        }
    }
}

impl Drop for Progress {
    /// A finished (or abandoned) task leaves no bar behind on the terminal.
    fn drop(&mut self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_output_never_gets_a_bar() {
        assert_eq!(Mode::for_stderr(true), Mode::Lines);
        let p = Progress::new(Mode::Quiet, "quiet", 2);
        p.step("nothing shown");
        p.advance();
        assert!(p.bar.is_none());
    }
}
