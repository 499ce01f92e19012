//! Pad: `pads` as an attribute (with the float attribute `value`) before opset 11, as a constant
//! input (with an optional `constant_value` input) from opset 11, and an optional `axes` input
//! from opset 18. Modes `constant`, `reflect`, `edge` and `wrap`; negative pads crop.
//!
//! Output position `o` of an axis padded by `begin` stands for input position `s = o − begin`.
//! Where `s` lies outside the input, `edge` reads the nearest end, `reflect` mirrors without
//! repeating the border (periodically, as numpy does for pads wider than the input), `wrap`
//! reads `s mod n` (the input repeated as on a torus, also for pads wider than the input) and
//! `constant` writes the constant value. Pads of mixed signs on one axis keep this rule: the
//! positions past a cropped side are still those of the whole input. The expansion is one map over the output whose read
//! index is that rule as a [`SymExpr`] (`min`/`max`/`mod`), so it never leaves the input; for
//! `constant` the read index is clamped and a `select` on index comparisons picks the constant.

use super::expand::elementwise_index;
use super::movement::{
    attr_or_input, concrete, gather, has_zero_extent, resolve_axes, to_usize, type_of, Param,
};
use super::support::{arg, element_map, input_type, offset, Read};
use super::{check_arity, ExpandCtx, OpError, Operator, TensorType};
use crate::ir::{BinOp, DataDesc, LibraryNode, SymExpr, TExpr, Tensor};

pub static OPS: &[&dyn Operator] = &[&Pad];

const OP: &str = "Pad";

/// How positions outside the input are filled.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    Constant,
    Reflect,
    Edge,
    Wrap,
}

impl Mode {
    fn of(node: &LibraryNode) -> Result<Mode, OpError> {
        match node.str("mode").unwrap_or("constant") {
            "constant" => Ok(Mode::Constant),
            "reflect" => Ok(Mode::Reflect),
            "edge" => Ok(Mode::Edge),
            "wrap" => Ok(Mode::Wrap),
            other => Err(OpError::attr(OP, "mode", format!("unknown mode `{other}`"))),
        }
    }

    /// The input position read for position `s` of an axis of extent `n`, or `None` for the
    /// constant. The reference implementations' rule; the expansion states it on [`SymExpr`].
    fn source(self, s: i64, n: i64) -> Option<i64> {
        if (0..n).contains(&s) {
            return Some(s);
        }
        match self {
            Mode::Constant => None,
            Mode::Edge => Some(s.clamp(0, n - 1)),
            Mode::Reflect if n == 1 => Some(0),
            Mode::Reflect => {
                let period = 2 * (n - 1);
                let m = s.rem_euclid(period);
                Some(m.min(period - m))
            }
            Mode::Wrap => Some(s.rem_euclid(n)),
        }
    }
}

/// The resolved padding: mode and, per dimension, the pads before and after (negative: crop).
/// CenterCropPad is this plan with zeros and centred pads, so it shares the rule and the
/// expansion rather than restating them.
pub(super) struct Plan {
    mode: Mode,
    begin: Vec<i64>,
    end: Vec<i64>,
}

impl Plan {
    /// Padding with zeros by `begin[d]` and `end[d]` on each dimension `d`; the caller has
    /// checked that no extent becomes negative.
    pub(super) fn zeros(begin: Vec<i64>, end: Vec<i64>) -> Plan {
        Plan {
            mode: Mode::Constant,
            begin,
            end,
        }
    }

    fn new<'a>(
        node: &LibraryNode,
        shape: &[SymExpr],
        param: &dyn Fn(usize) -> Param<'a>,
    ) -> Result<Plan, OpError> {
        let mode = Mode::of(node)?;
        let rank = shape.len();
        let pads = attr_or_input(OP, node, "pads", param(1))?
            .ok_or_else(|| OpError::attr(OP, "pads", "is required"))?;
        let axes = match param(3).ints(OP, "axes")? {
            Some(a) => resolve_axes(OP, &a, rank)?,
            None => (0..rank).collect(),
        };
        if pads.len() != 2 * axes.len() {
            return Err(OpError::attr(
                OP,
                "pads",
                format!(
                    "has {} entries, expected 2 × {} axes",
                    pads.len(),
                    axes.len()
                ),
            ));
        }
        let (mut begin, mut end) = (vec![0; rank], vec![0; rank]);
        for (k, &d) in axes.iter().enumerate() {
            begin[d] = pads[k];
            end[d] = pads[k + axes.len()];
        }
        for d in 0..rank {
            let Some(n) = shape[d].as_int() else { continue };
            if n + begin[d] + end[d] < 0 {
                return Err(OpError::shape(
                    OP,
                    format!(
                        "pads {} and {} crop more than the extent {n} of dimension {d}",
                        begin[d], end[d]
                    ),
                ));
            }
            if n == 0 && mode != Mode::Constant && (begin[d] > 0 || end[d] > 0) {
                return Err(OpError::shape(
                    OP,
                    format!("dimension {d} is empty and cannot be padded in mode {mode:?}"),
                ));
            }
        }
        Ok(Plan { mode, begin, end })
    }

    pub(super) fn out_type(&self, x: &TensorType) -> TensorType {
        let shape = x
            .shape
            .iter()
            .enumerate()
            .map(|(d, n)| n + (self.begin[d] + self.end[d]))
            .collect();
        TensorType::new(x.dtype, shape)
    }

    /// True when dimension `d` has positions outside the input (not merely cropped).
    fn pads(&self, d: usize) -> bool {
        self.begin[d] > 0 || self.end[d] > 0
    }

    /// The padded copy of `x`, with `fill` where mode `constant` writes the constant.
    pub(super) fn eval(&self, x: &Tensor, fill: f64) -> Result<Tensor, OpError> {
        let shape = concrete(OP, &self.out_type(&type_of(x)))?;
        let strides = x.strides();
        Ok(gather(x, &shape, fill, |idx| {
            let src = idx
                .iter()
                .enumerate()
                .map(|(d, &o)| {
                    let n = x.shape[d] as i64;
                    self.mode.source(o as i64 - self.begin[d], n).map(to_usize)
                })
                .collect::<Option<Vec<usize>>>()?;
            Some(offset(&src, &strides))
        }))
    }

    /// One map over the output of input 0 into output 0, reading the constant of mode
    /// `constant` from the container `constant` when given (and not empty), else `fill`.
    pub(super) fn expand(
        &self,
        ctx: &mut ExpandCtx,
        constant: Option<(String, DataDesc)>,
        fill: f64,
    ) -> Result<(), OpError> {
        let (x, x_desc) = ctx.input(0)?.clone();
        let (y, y_desc) = ctx.output(0)?.clone();
        let (params, idx) = elementwise_index(&y_desc.shape);
        let constant = constant.filter(|(_, d)| !has_zero_extent(&d.shape));
        let (c_read, c_value) = match &constant {
            Some((name, desc)) => (
                Some(Read::new(
                    "c",
                    name,
                    vec![SymExpr::Int(0); desc.shape.len()],
                )),
                TExpr::input("c"),
            ),
            None => (None, TExpr::Const(fill)),
        };
        if self.mode == Mode::Constant && has_zero_extent(&x_desc.shape) {
            // Nothing to read: the output is all padding.
            let reads = c_read.into_iter().collect();
            element_map(ctx.b, &ctx.label, &params, reads, (&y, idx), None, c_value);
            return Ok(());
        }
        let mut src = Vec::with_capacity(idx.len());
        let mut inside: Option<TExpr> = None;
        for (d, i) in idx.iter().enumerate() {
            let n = &x_desc.shape[d];
            let s = i - self.begin[d];
            if !self.pads(d) {
                src.push(s);
                continue;
            }
            let clamped = s.clone().min(n - 1).max(SymExpr::Int(0));
            src.push(match self.mode {
                Mode::Constant | Mode::Edge => clamped,
                Mode::Reflect => {
                    let period = (n - 1) * 2;
                    let period = period.max(SymExpr::Int(1));
                    let m = s.clone().modulo(period.clone());
                    m.clone().min(period - m)
                }
                Mode::Wrap => s.clone().modulo(n.clone()),
            });
            if self.mode != Mode::Constant {
                continue;
            }
            let at = || TExpr::Index(s.clone());
            for cond in [
                TExpr::binary(BinOp::Ge, at(), TExpr::Const(0.0)),
                TExpr::binary(BinOp::Lt, at(), TExpr::Index(n.clone())),
            ] {
                inside = Some(match inside {
                    None => cond,
                    Some(acc) => TExpr::binary(BinOp::And, acc, cond),
                });
            }
        }
        let mut reads = vec![Read::new("x", &x, src)];
        let value = match (self.mode, inside) {
            (Mode::Constant, Some(inside)) => {
                reads.extend(c_read);
                TExpr::select(inside, TExpr::input("x"), c_value)
            }
            _ => TExpr::input("x"),
        };
        element_map(ctx.b, &ctx.label, &params, reads, (&y, idx), None, value);
        Ok(())
    }
}

/// The constant of mode `constant`: input 2 when present and not empty, else the attribute
/// `value`, else 0.
fn constant_value(node: &LibraryNode, input: Option<&Tensor>) -> f64 {
    match input {
        Some(t) if !t.is_empty() => t.get_f64(0),
        _ => node.float("value").unwrap_or(0.0),
    }
}

/// `Y = pad(X, pads)`.
pub struct Pad;

impl Operator for Pad {
    fn name(&self) -> &'static str {
        OP
    }

    fn input_count(&self) -> (usize, usize) {
        (1, 4)
    }

    fn infer(
        &self,
        node: &LibraryNode,
        inputs: &[Option<TensorType>],
        consts: &[Option<&Tensor>],
    ) -> Result<Vec<TensorType>, OpError> {
        check_arity(self, inputs.len())?;
        let x = input_type(OP, inputs, 0)?;
        if let Some(c) = inputs.get(2).and_then(|c| c.as_ref()) {
            super::support::same_dtype(OP, x, c, 2)?;
        }
        let plan = Plan::new(node, &x.shape, &|i| Param::of_infer(inputs, consts, i))?;
        Ok(vec![plan.out_type(x)])
    }

    fn eval(&self, node: &LibraryNode, inputs: &[Option<&Tensor>]) -> Result<Vec<Tensor>, OpError> {
        let x = arg(OP, inputs, 0)?;
        let xt = type_of(x);
        let plan = Plan::new(node, &xt.shape, &|i| Param::of_eval(inputs, i))?;
        let fill = constant_value(node, inputs.get(2).copied().flatten());
        Ok(vec![plan.eval(x, fill)?])
    }

    fn expand(&self, _implementation: &str, ctx: &mut ExpandCtx) -> Result<(), OpError> {
        let x_shape = ctx.input(0)?.1.shape.clone();
        let plan = Plan::new(ctx.node, &x_shape, &|i| Param::of_expand(ctx, i))?;
        let constant = ctx.inputs.get(2).and_then(|c| c.clone());
        let fill = constant_value(ctx.node, None);
        plan.expand(ctx, constant, fill)
    }

    fn flops(&self, _: &LibraryNode, _: &[Option<TensorType>], _: &[TensorType]) -> u64 {
        0
    }
}
