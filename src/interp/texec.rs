//! Evaluation of compiled tasklet expressions in the tasklet's compute type.
//!
//! Values are carried as `f64`; in an `f32` tasklet every constant, load and intermediate result
//! is rounded to `f32` (operations run on `f32` operands), so the interpreter reproduces the
//! generated C's `float` arithmetic exactly. Element reads (`conn[i, j]`) are resolved here,
//! against the subset of the connector's memlet, and an index outside it is an error naming the
//! node, the connector and the index — never a panic and never a clamp: the interpreter is the
//! oracle that must notice a wrong index.

use super::plan::{CIdx, CWindow};
use super::InterpError;
use crate::ir::scalar;
use crate::ir::{BinOp, DType, NodeId, Precision, Tensor, UnOp, Wcr};

/// A tasklet expression over loaded inputs, parameter slots and windows (compiled by
/// [`super::plan::Compiler`]).
#[derive(Debug)]
pub(crate) enum CExpr {
    /// Already rounded to the compute type.
    Const(f64),
    Input(usize),
    Index(CIdx),
    Unary(UnOp, Box<CExpr>),
    Binary(BinOp, Box<CExpr>, Box<CExpr>),
    Select(Box<CExpr>, Box<CExpr>, Box<CExpr>),
    /// Window number and one index expression per dimension.
    Element(usize, Vec<CExpr>),
}

/// Everything one evaluation reads.
pub(super) struct Eval<'a> {
    pub node: NodeId,
    pub precision: Precision,
    /// Plain inputs, loaded and rounded to the compute type.
    pub inputs: &'a [f64],
    pub windows: &'a [CWindow],
    pub slots: &'a [i64],
    pub bufs: &'a [Tensor],
}

impl CExpr {
    pub(super) fn eval(&self, cx: &Eval) -> Result<f64, InterpError> {
        let p = cx.precision;
        Ok(match self {
            CExpr::Const(v) => *v,
            CExpr::Input(i) => cx.inputs[*i],
            CExpr::Index(e) => p.round(e.eval(cx.slots).unwrap_or(0) as f64),
            CExpr::Unary(op, x) => op.apply_in(p, x.eval(cx)?),
            CExpr::Binary(op, a, b) => op.apply_in(p, a.eval(cx)?, b.eval(cx)?),
            CExpr::Select(c, a, b) => {
                if c.eval(cx)? != 0.0 {
                    a.eval(cx)?
                } else {
                    b.eval(cx)?
                }
            }
            CExpr::Element(w, idx) => {
                let mut at = Vec::with_capacity(idx.len());
                for e in idx {
                    at.push(e.eval(cx)?);
                }
                p.round(read_element(cx, &cx.windows[*w], &at)?)
            }
        })
    }
}

/// The element of window `w` at relative indices `at` (truncated toward zero).
fn read_element(cx: &Eval, w: &CWindow, at: &[f64]) -> Result<f64, InterpError> {
    let bad = |message: String| InterpError::Index {
        node: cx.node,
        message,
    };
    let shown = || {
        let parts: Vec<String> = at.iter().map(ToString::to_string).collect();
        format!("{}[{}]", w.conn, parts.join(", "))
    };
    let buf = &cx.bufs[w.data];
    if at.len() != w.dims.len() || w.dims.len() != buf.shape.len() {
        return Err(bad(format!(
            "element read {} has {} index(es) for a {}-dimensional subset of a rank-{} container",
            shown(),
            at.len(),
            w.dims.len(),
            buf.shape.len()
        )));
    }
    let mut off = 0usize;
    for (d, (x, [start, end, step])) in at.iter().zip(&w.dims).enumerate() {
        let (Some(lo), Some(hi), Some(st)) = (
            start.eval(cx.slots),
            end.eval(cx.slots),
            step.eval(cx.slots),
        ) else {
            return Err(bad(format!("element read {}: unbounded subset", shown())));
        };
        let st = st.max(1);
        let len = (hi - lo + st - 1).div_euclid(st).max(0);
        let k = x.trunc();
        if !k.is_finite() || k < 0.0 || k >= len as f64 {
            return Err(bad(format!(
                "element read {}: index {x} of dimension {d} is outside 0..{len} of the memlet's subset",
                shown()
            )));
        }
        let pos = lo + (k as i64) * st;
        let extent = buf.shape[d];
        let pos = usize::try_from(pos)
            .ok()
            .filter(|&v| v < extent)
            .ok_or_else(|| {
                bad(format!(
                    "element read {}: position {pos} of dimension {d} is outside the container's extent {extent}",
                    shown()
                ))
            })?;
        off = off * extent + pos;
    }
    Ok(buf.get_f64(off))
}

/// Stores `x` (a value of the compute type) into element `off` of `buf`: converted to the
/// container's type as the generated C does (see `ir::scalar`), then, with a write-conflict
/// resolution, combined with the stored value in the container's arithmetic (`f32` for the
/// types that compute in `f32`, whose C helpers combine in `float` too).
pub(super) fn store(buf: &mut Tensor, off: usize, wcr: Option<Wcr>, x: f64) {
    let dtype = buf.dtype();
    let converted = scalar::stored(dtype, x);
    let value = match wcr {
        None => converted,
        Some(w) if dtype != DType::Bool && Precision::of([dtype]) == Precision::F32 => {
            f64::from(w.combine(buf.get_f64(off) as f32, converted as f32))
        }
        Some(w) => w.combine_f64(buf.get_f64(off), converted),
    };
    buf.set_f64(off, value);
}
