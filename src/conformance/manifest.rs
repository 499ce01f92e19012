//! The manifest of cases expected to pass: one case name per line, `#` starts a comment. CI
//! runs the suite against it and fails on any listed case that does not pass.

use super::{Report, Status};
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};
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

/// What a run says about the manifest. Only listed cases the run could have run are checked:
/// a filtered run checks its part and says how many it left out, and a listed case the filter
/// selects but the directory lacks is reported as missing (it could not show a regression, and
/// its absence must not pass for "no regression").
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Check {
    /// Listed cases that ran.
    pub checked: usize,
    /// Listed cases that ran and did not pass (a timeout included), with their status.
    pub regressions: Vec<(String, Status)>,
    /// Listed cases the filter selects that are not in the suite's directory.
    pub missing: Vec<String>,
    /// Listed cases the filter leaves out (neither run nor checked).
    pub not_selected: usize,
}

impl Check {
    /// Whether every listed case the run selected ran and passed.
    pub fn holds(&self) -> bool {
        self.regressions.is_empty() && self.missing.is_empty()
    }
}

/// Checks `report` (the run of every case of a directory whose name contains `filter`) against
/// the `expected` case names.
pub fn check(report: &Report, expected: &BTreeSet<String>, filter: Option<&str>) -> Check {
    let ran: BTreeMap<&str, Status> = report
        .cases
        .iter()
        .map(|c| (c.name.as_str(), c.status))
        .collect();
    let mut out = Check::default();
    for name in expected {
        if !filter.is_none_or(|f| name.contains(f)) {
            out.not_selected += 1;
            continue;
        }
        match ran.get(name.as_str()) {
            Some(Status::Pass) => out.checked += 1,
            Some(&status) => {
                out.checked += 1;
                out.regressions.push((name.clone(), status));
            }
            None => out.missing.push(name.clone()),
        }
    }
    out
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
    fn manifest_round_trips() {
        let report = Report::new(vec![
            case("test_b", Status::Pass),
            case("test_a", Status::Pass),
            case("test_c", Status::Fail),
        ]);
        assert_eq!(
            parse(&render(&report)),
            BTreeSet::from(["test_a".to_string(), "test_b".to_string()])
        );
        assert_eq!(
            parse("test_a  # comment\n\n  # only a comment\ntest_c\n"),
            BTreeSet::from(["test_a".to_string(), "test_c".to_string()])
        );
    }

    #[test]
    fn every_listed_case_that_ran_and_did_not_pass_is_a_regression() {
        let report = Report::new(vec![
            case("test_a", Status::Pass),
            case("test_c", Status::Fail),
            case("test_d", Status::Timeout),
            case("test_e", Status::Unsupported),
            case("test_unlisted", Status::Fail),
        ]);
        let expected = parse("test_a\ntest_c\ntest_d\ntest_e\ntest_gone\n");
        let c = check(&report, &expected, None);
        assert_eq!(c.checked, 4);
        assert_eq!(
            c.regressions,
            [
                ("test_c".to_string(), Status::Fail),
                ("test_d".to_string(), Status::Timeout),
                ("test_e".to_string(), Status::Unsupported),
            ]
        );
        assert_eq!(c.missing, ["test_gone"]);
        assert_eq!(c.not_selected, 0);
        assert!(!c.holds());
    }

    /// `--filter test_gemm` ran 11 cases: it checks the listed ones among them and says how
    /// many listed cases it left out, instead of claiming the whole manifest.
    #[test]
    fn a_filtered_run_checks_only_what_it_selected() {
        let report = Report::new(vec![
            case("test_gemm_alpha", Status::Pass),
            case("test_gemm_beta", Status::Pass),
            case("test_gemm_unlisted", Status::Fail),
        ]);
        let expected = parse("test_gemm_alpha\ntest_gemm_beta\ntest_relu\ntest_abs\n");
        let c = check(&report, &expected, Some("test_gemm"));
        assert_eq!((c.checked, c.not_selected), (2, 2));
        assert!(c.holds(), "{c:?}");
        let gone = parse("test_gemm_alpha\ntest_gemm_gone\n");
        let c = check(&report, &gone, Some("gemm"));
        assert_eq!(
            (c.checked, c.missing.as_slice()),
            (1, ["test_gemm_gone".to_string()].as_slice())
        );
        assert!(!c.holds());
        assert!(check(&report, &gone, Some("relu")).holds());
    }
}
