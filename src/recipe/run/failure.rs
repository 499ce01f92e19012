//! How a recipe statement fails, and the diagnostic codes the interpreter reports.
//!
//! The distinction drives every strategy: a *silenceable* failure (a transformation that does
//! not apply here, an alternative that found nothing) is what `try`, `first` and `apply …
//! everywhere` absorb; a *definite* one (a rewrite the checks rolled back, a type mismatch, a
//! stale handle, an expectation that does not hold) always fails the run, so no strategy can hide
//! a check that said no.

use crate::recipe::{Diagnostic, Span};
use crate::transform::engine::{Layer, Refusal};

pub const RUNTIME: &str = "dmove::recipe::runtime";
pub const BAD_ARGUMENT: &str = "dmove::recipe::bad_argument";
pub const NOT_APPLICABLE: &str = "dmove::recipe::not_applicable";
pub const REJECTED: &str = "dmove::recipe::rejected";
pub const STALE_HANDLE: &str = "dmove::recipe::stale_handle";
pub const EXPECT: &str = "dmove::recipe::expect";
pub const UNKNOWN_NAME: &str = "dmove::recipe::unknown_name";
pub const NO_MATCH: &str = "dmove::recipe::no_match";
/// A `repeat (max N)` that used all N iterations without reaching a fixpoint (a warning).
pub const NO_FIXPOINT: &str = "dmove::recipe::no_fixpoint";
/// Ctrl-C stopped the run at a step boundary (or killed the step's compiler or program).
pub const INTERRUPTED: &str = "dmove::recipe::interrupted";

/// Why a statement did not complete.
#[derive(Clone, Debug, PartialEq)]
pub enum Failure {
    /// Nothing was wrong, the strategy just did not apply: absorbed by `try`, `first` and the
    /// bodies of `apply … everywhere`.
    Silenceable(Box<Diagnostic>),
    /// Always fails the run.
    Definite(Box<Diagnostic>),
}

impl Failure {
    pub fn silenceable(d: Diagnostic) -> Failure {
        Failure::Silenceable(Box::new(d))
    }

    pub fn definite(d: Diagnostic) -> Failure {
        Failure::Definite(Box::new(d))
    }

    pub fn diagnostic(&self) -> &Diagnostic {
        match self {
            Failure::Silenceable(d) | Failure::Definite(d) => d,
        }
    }

    pub fn into_diagnostic(self) -> Diagnostic {
        match self {
            Failure::Silenceable(d) | Failure::Definite(d) => *d,
        }
    }

    pub fn is_silenceable(&self) -> bool {
        matches!(self, Failure::Silenceable(_))
    }

    /// The one-line reason recorded when a strategy absorbs this failure.
    pub fn reason(&self) -> String {
        let d = self.diagnostic();
        match &d.note {
            Some(note) => format!("{}: {note}", d.message),
            None => d.message.clone(),
        }
    }
}

impl From<Diagnostic> for Failure {
    /// A diagnostic on its own is definite: only the places that know a failure is benign say
    /// otherwise.
    fn from(d: Diagnostic) -> Failure {
        Failure::definite(d)
    }
}

/// The interpreter's result type.
pub type Flow<T> = Result<T, Failure>;

/// A definite evaluation error (`dmove::recipe::runtime`).
pub fn runtime(span: Span, message: impl Into<String>) -> Failure {
    Failure::definite(Diagnostic::error(RUNTIME, span, message))
}

/// The definite failure of a run that Ctrl-C stopped at the step issued at `span` (see
/// [`crate::interrupt`]): no strategy absorbs it.
pub fn interrupted(span: Span) -> Failure {
    Failure::definite(
        Diagnostic::error(INTERRUPTED, span, "interrupted (Ctrl-C)")
            .label("stopped at this step")
            .note("the step was not committed"),
    )
}

/// How the engine's refusal counts for a recipe.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RefusalKind {
    /// The rewrite was never tried: the site or parameters do not fit the schema.
    Mismatch,
    /// A precondition failed: the transformation does not apply here.
    NotApplicable,
    /// The rewrite ran and the check layer rolled it back.
    Rejected(Layer),
}

/// Silenceable refusals are the ones the engine never tried; a refusal with a check layer is a
/// rolled-back rewrite and is definite.
pub fn classify(r: &Refusal) -> RefusalKind {
    match (r.layer(), r) {
        (Some(layer), _) => RefusalKind::Rejected(layer),
        (None, Refusal::NotApplicable(_)) => RefusalKind::NotApplicable,
        (None, _) => RefusalKind::Mismatch,
    }
}

/// The check's own words for "the X check": `structural`, `legality`, `numerics`.
pub fn layer_check(layer: Layer) -> String {
    format!("the {} check", layer.name())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::NodeId;
    use crate::transform::NotApplicable;

    #[test]
    fn refusals_without_a_layer_are_silenceable_and_rollbacks_definite() {
        let na = Refusal::NotApplicable(NotApplicable {
            transformation: "MapTiling",
            node: NodeId(3),
            reason: "no".into(),
            fault: None,
        });
        assert_eq!(classify(&na), RefusalKind::NotApplicable);
        let race = Refusal::Race {
            transformation: "Parallelize".into(),
            node: NodeId(3),
            reason: "write conflict".into(),
        };
        assert_eq!(classify(&race), RefusalKind::Rejected(Layer::Legality));
        let unchecked = Refusal::Unchecked {
            transformation: "MapTiling".into(),
            node: NodeId(3),
            message: "no compiler".into(),
        };
        assert_eq!(classify(&unchecked), RefusalKind::Rejected(Layer::Numerics));
        let site = Refusal::Site(crate::transform::SiteError::Repeated {
            transformation: "MapFusion",
            node: NodeId(1),
        });
        assert_eq!(classify(&site), RefusalKind::Mismatch);
    }

    #[test]
    fn a_plain_diagnostic_is_definite() {
        let f: Failure = Diagnostic::error(RUNTIME, Span::default(), "x").into();
        assert!(!f.is_silenceable());
        assert_eq!(f.reason(), "x");
    }
}
