//! The manifest of cases expected to pass: one case name per line, `#` starts a comment. CI
//! runs the suite against it and fails on any listed case that does not pass.

use super::{Report, Status};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// Why a manifest could not be read or written.
#[derive(Debug, thiserror::Error, miette::Diagnostic)]
pub enum ManifestError {
    #[error("cannot read manifest {}", path.display())]
    #[diagnostic(code(dmove::conformance::manifest))]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot write manifest {}", path.display())]
    #[diagnostic(code(dmove::conformance::manifest))]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// The case names listed in manifest text.
pub fn parse(text: &str) -> BTreeSet<String> {
    text.lines()
        .map(|l| l.split('#').next().unwrap_or_default().trim())
        .filter(|l| !l.is_empty())
        .map(str::to_string)
        .collect()
}

pub fn read(path: &Path) -> Result<BTreeSet<String>, ManifestError> {
    std::fs::read_to_string(path)
        .map(|t| parse(&t))
        .map_err(|source| ManifestError::Read {
            path: path.to_path_buf(),
            source,
        })
}

/// The manifest text for `report`: its passing cases, sorted, under a header saying how to
/// regenerate it.
pub fn render(report: &Report) -> String {
    let mut text = String::from(
        "# ONNX backend cases expected to pass through the interpreter and the generated C.\n\
         # Regenerate: cargo run --release -- conformance DIR --write-manifest FILE\n",
    );
    for case in report.cases.iter().filter(|c| c.status == Status::Pass) {
        text.push_str(&case.name);
        text.push('\n');
    }
    text
}

pub fn write(path: &Path, report: &Report) -> Result<(), ManifestError> {
    crate::fsutil::write_atomic(path, render(report).as_bytes()).map_err(|source| {
        ManifestError::Write {
            path: path.to_path_buf(),
            source,
        }
    })
}

/// Listed cases that did not pass, with their status (`missing` when the run did not include
/// them). Only cases whose name contains `filter` are checked, so a filtered run checks its part.
pub fn regressions(
    report: &Report,
    expected: &BTreeSet<String>,
    filter: Option<&str>,
) -> Vec<(String, String)> {
    expected
        .iter()
        .filter(|name| filter.is_none_or(|f| name.contains(f)))
        .filter_map(|name| {
            match report.cases.iter().find(|c| &c.name == name) {
                Some(c) if c.status == Status::Pass => None,
                Some(c) => Some(format!("{:?}", c.status).to_lowercase()),
                None => Some("missing".to_string()),
            }
            .map(|status| (name.clone(), status))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::conformance::CaseResult;

    fn case(name: &str, status: Status) -> CaseResult {
        CaseResult {
            name: name.into(),
            status,
            max_error: None,
            stage: None,
            message: None,
            listed: true,
            specialised_inputs: Vec::new(),
            seconds: 0.0,
        }
    }

    #[test]
    fn manifest_round_trips_and_reports_regressions() {
        let report = Report::new(vec![
            case("test_b", Status::Pass),
            case("test_a", Status::Pass),
            case("test_c", Status::Fail),
        ]);
        let text = render(&report);
        assert_eq!(
            parse(&text),
            BTreeSet::from(["test_a".to_string(), "test_b".to_string()])
        );
        let expected = parse("test_a  # comment\ntest_c\n\ntest_gone\n");
        assert_eq!(
            regressions(&report, &expected, None),
            [
                ("test_c".to_string(), "fail".to_string()),
                ("test_gone".to_string(), "missing".to_string())
            ]
        );
        assert!(regressions(&report, &expected, Some("_a")).is_empty());
    }
}
