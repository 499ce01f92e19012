//! `dmove conformance DIR`: the ONNX backend test cases, one line per case and a summary, or
//! JSON; optionally checked against (or written to) the manifest of cases expected to pass.

use super::CliError;
use crate::conformance::{manifest, run_suite, CaseResult, Options, Report, Status};
use std::path::PathBuf;
use std::time::Instant;

/// `dmove conformance`
pub struct ConformanceArgs {
    pub dir: PathBuf,
    pub json: bool,
    pub filter: Option<String>,
    pub c: bool,
    pub jobs: usize,
    /// Fail when a case listed here does not pass.
    pub manifest: Option<PathBuf>,
    /// Write the passing cases here.
    pub write_manifest: Option<PathBuf>,
}

pub fn conformance(args: &ConformanceArgs) -> Result<(), CliError> {
    let opts = Options {
        filter: args.filter.clone(),
        c: args.c,
        jobs: args.jobs,
    };
    let expected = args.manifest.as_deref().map(manifest::read).transpose()?;
    let start = Instant::now();
    // Panics are caught per case and reported in its result; the default hook would also print
    // them in the middle of the output.
    let hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    let report = run_suite(&args.dir, &opts, &|_| {});
    std::panic::set_hook(hook);
    let report = report?;
    if args.json {
        let json =
            serde_json::to_string_pretty(&report).map_err(|e| CliError::Failed(e.to_string()))?;
        println!("{json}");
    } else {
        for case in &report.cases {
            println!("{}", line(case));
        }
        println!("{}", summary_line(&report, start.elapsed().as_secs_f64()));
    }
    if let Some(path) = &args.write_manifest {
        manifest::write(path, &report)?;
        eprintln!(
            "wrote {} passing case(s) to {}",
            report.summary.passed,
            path.display()
        );
    }
    if let Some(expected) = &expected {
        let lost = manifest::regressions(&report, expected, args.filter.as_deref());
        if !lost.is_empty() {
            let list: Vec<String> = lost.iter().map(|(n, s)| format!("{n} ({s})")).collect();
            return Err(CliError::Failed(format!(
                "{} case(s) listed in the manifest did not pass: {}",
                lost.len(),
                list.join(", ")
            )));
        }
        eprintln!("no regression against {} listed case(s)", expected.len());
    }
    Ok(())
}

/// `pass test_abs (max error 0)`, `fail test_x [c-run] (max error 2.1e0): …`.
fn line(c: &CaseResult) -> String {
    let status = match c.status {
        Status::Pass => "pass",
        Status::Fail => "FAIL",
        Status::Unsupported => "unsupported",
    };
    let mut out = format!("{status:<11} {}", c.name);
    if let Some(stage) = c.stage {
        out.push_str(&format!(" [{stage}]"));
    }
    if let Some(err) = c.max_error {
        out.push_str(&format!(" (max error {err:.2e})"));
    }
    if !c.specialised_inputs.is_empty() {
        out.push_str(&format!(
            " [constant inputs: {}]",
            c.specialised_inputs.join(", ")
        ));
    }
    if let Some(msg) = &c.message {
        // Compiler output and lists of unsupported nodes can be long; the JSON report keeps
        // all of it.
        let first = msg.lines().next().unwrap_or_default();
        out.push_str(": ");
        match first.char_indices().nth(MESSAGE_CHARS) {
            Some((cut, _)) => {
                out.push_str(&first[..cut]);
                out.push('…');
            }
            None => out.push_str(first),
        }
    }
    out
}

/// Characters of a case's message shown on its line.
const MESSAGE_CHARS: usize = 200;

fn summary_line(r: &Report, seconds: f64) -> String {
    let s = r.summary;
    let percent = |part: usize, whole: usize| match whole {
        0 => 0.0,
        _ => 100.0 * part as f64 / whole as f64,
    };
    format!(
        "{} cases: {} passed, {} failed, {} unsupported ({:.1}% of supported cases pass); \
         using only the promised operators: {}/{} pass ({:.1}%); {seconds:.1}s",
        r.cases.len(),
        s.passed,
        s.failed,
        s.unsupported,
        percent(s.passed, s.passed + s.failed),
        s.listed_passed,
        s.listed,
        percent(s.listed_passed, s.listed),
    )
}
