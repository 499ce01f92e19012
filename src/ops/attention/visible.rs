//! Which keys a query may attend, apart from the mask's values: the causal frontier, the padding
//! `nonpad_kv_seqlen` declares (opset 24), the keys past a mask shorter than the key sequence
//! (opset 24: they are hidden) and the sliding window (opset 25). Every bound is relative to the
//! query's absolute position `p = offset + s`, where `offset` is the cache length when
//! `past_key` is given, `nonpad_kv_seqlen[b] − q_seq` for an external cache, and 0 otherwise.
//!
//! The reference asks [`Visibility::hidden`] with numbers; the expansion builds the same
//! condition as a tasklet expression with [`Visibility::hidden_expr`].

use crate::ir::{BinOp, SymExpr, TExpr};

/// The connector the expansion reads `nonpad_kv_seqlen[b]` through.
pub const NONPAD: &str = "np";

/// The key-visibility rules of one application.
#[derive(Debug)]
pub struct Visibility {
    pub causal: bool,
    /// The cache length when `past_key` is given.
    pub past: Option<SymExpr>,
    pub nonpad: bool,
    pub q_seq: SymExpr,
    /// The mask's key extent when it is shorter than the key sequence.
    pub mask_len: Option<SymExpr>,
    /// The window: keys at most `left` before and `right` after `p` (`None`: unbounded).
    pub left: Option<i64>,
    pub right: Option<i64>,
}

/// `a op b` as a tasklet condition.
fn cmp(op: BinOp, a: TExpr, b: TExpr) -> TExpr {
    TExpr::binary(op, a, b)
}

impl Visibility {
    /// Whether key `t` is hidden from query `s`, `nonpad` being the batch row's
    /// `nonpad_kv_seqlen` (the reference's form; every size is concrete there).
    pub fn hidden(&self, s: i64, t: i64, nonpad: Option<i64>) -> bool {
        let int = |d: &SymExpr| d.as_int().unwrap_or(0);
        let offset = match (&self.past, nonpad) {
            (Some(p), _) => int(p),
            (None, Some(n)) => n - int(&self.q_seq),
            (None, None) => 0,
        };
        let p = offset + s;
        (self.causal && t > p)
            || nonpad.is_some_and(|n| t >= n)
            || self.mask_len.as_ref().is_some_and(|m| t >= int(m))
            || self.left.is_some_and(|l| t < p - l)
            || self.right.is_some_and(|r| t > p + r)
    }

    /// The same condition over the symbols `s` and `t`, reading `nonpad_kv_seqlen[b]` through
    /// connector [`NONPAD`]; `None` when nothing is hidden.
    pub fn hidden_expr(&self, s: &SymExpr, t: &SymExpr) -> Option<TExpr> {
        let t = || TExpr::Index(t.clone());
        let offset = match (&self.past, self.nonpad) {
            (Some(past), _) => TExpr::Index(past.clone()),
            (None, true) => {
                let seq = TExpr::Index(self.q_seq.clone());
                TExpr::binary(BinOp::Sub, TExpr::input(NONPAD), seq)
            }
            (None, false) => TExpr::Const(0.0),
        };
        let p = || TExpr::binary(BinOp::Add, TExpr::Index(s.clone()), offset.clone());
        let shifted = |by: i64| TExpr::binary(BinOp::Add, p(), TExpr::Const(by as f64));
        let mut terms = Vec::new();
        if self.causal {
            terms.push(cmp(BinOp::Gt, t(), p()));
        }
        if self.nonpad {
            terms.push(cmp(BinOp::Ge, t(), TExpr::input(NONPAD)));
        }
        if let Some(m) = &self.mask_len {
            terms.push(cmp(BinOp::Ge, t(), TExpr::Index(m.clone())));
        }
        if let Some(l) = self.left {
            terms.push(cmp(BinOp::Lt, t(), shifted(-l)));
        }
        if let Some(r) = self.right {
            terms.push(cmp(BinOp::Gt, t(), shifted(r)));
        }
        terms
            .into_iter()
            .reduce(|a, b| TExpr::binary(BinOp::Or, a, b))
    }
}
