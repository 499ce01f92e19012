//! The Reduce* family: ReduceSum, ReduceMean, ReduceMax, ReduceMin, ReduceProd, ReduceL1,
//! ReduceL2, ReduceSumSquare, ReduceLogSum and ReduceLogSumExp.
//!
//! Which axes are reduced comes from the `axes` attribute (before opset 18; ReduceSum before 13)
//! or from an optional constant second input (later opsets; the importer passes whichever the
//! model has). An empty or absent list reduces every axis, unless `noop_with_empty_axes` is set,
//! in which case nothing is reduced: every output element is then the reduction of the single
//! input element at its position (so ReduceSumSquare still squares, as in ONNX's reference).
//! `keepdims` (default 1) keeps reduced axes with extent 1.
//!
//! One generic [`Reduce`] implements the family from a table row. The reference folds each group
//! of input values with an `f64` function written directly from the operator's definition; the
//! expansion is described separately as a per-element transform, a write-conflict resolution and
//! a finishing step, which give three maps: an init map writing the resolution's identity, an
//! accumulation map over every input element whose tasklet writes with that resolution (the
//! reduced axes are parameters of the map), and, for Mean / L2 / LogSum(Exp), a finishing map.
//! ReduceLogSumExp is `log(Σ exp(x))` as ONNX's reference computes it (no shift by the
//! maximum: large inputs overflow to infinity there too).

use super::support::{
    arg, dim_product, element_map, fill_map, flag, input_type, params_over, unravel, Read,
};
use super::{check_arity, ExpandCtx, OpError, Operator, TensorType};
use crate::ir::tensor::row_major_strides;
use crate::ir::{BinOp, DType, LibraryNode, SymExpr, TExpr, Tensor, UnOp, Wcr};

pub static OPS: &[&dyn Operator] = &[
    &REDUCE_SUM,
    &REDUCE_MEAN,
    &REDUCE_MAX,
    &REDUCE_MIN,
    &REDUCE_PROD,
    &REDUCE_L1,
    &REDUCE_L2,
    &REDUCE_SUM_SQUARE,
    &REDUCE_LOG_SUM,
    &REDUCE_LOG_SUM_EXP,
];

/// What happens to each input element before it is accumulated.
#[derive(Clone, Copy)]
enum Pre {
    Identity,
    Abs,
    Square,
    Exp,
}

/// What turns the accumulated value into the output.
#[derive(Clone, Copy, PartialEq)]
enum Finish {
    /// The accumulator is the output.
    None,
    /// Divide by the number of reduced elements.
    Mean,
    Sqrt,
    Log,
}

/// One reduction operator.
pub struct Reduce {
    name: &'static str,
    /// Reference semantics: the value of one output element from its group of inputs.
    reference: fn(&[f64]) -> f64,
    pre: Pre,
    wcr: Wcr,
    finish: Finish,
}

fn sum(v: &[f64]) -> f64 {
    v.iter().sum()
}

static REDUCE_SUM: Reduce = Reduce {
    name: "ReduceSum",
    reference: sum,
    pre: Pre::Identity,
    wcr: Wcr::Sum,
    finish: Finish::None,
};
static REDUCE_MEAN: Reduce = Reduce {
    name: "ReduceMean",
    reference: |v| sum(v) / v.len() as f64,
    pre: Pre::Identity,
    wcr: Wcr::Sum,
    finish: Finish::Mean,
};
static REDUCE_MAX: Reduce = Reduce {
    name: "ReduceMax",
    reference: |v| v.iter().copied().fold(f64::NEG_INFINITY, f64::max),
    pre: Pre::Identity,
    wcr: Wcr::Max,
    finish: Finish::None,
};
static REDUCE_MIN: Reduce = Reduce {
    name: "ReduceMin",
    reference: |v| v.iter().copied().fold(f64::INFINITY, f64::min),
    pre: Pre::Identity,
    wcr: Wcr::Min,
    finish: Finish::None,
};
static REDUCE_PROD: Reduce = Reduce {
    name: "ReduceProd",
    reference: |v| v.iter().product(),
    pre: Pre::Identity,
    wcr: Wcr::Prod,
    finish: Finish::None,
};
static REDUCE_L1: Reduce = Reduce {
    name: "ReduceL1",
    reference: |v| v.iter().map(|x| x.abs()).sum(),
    pre: Pre::Abs,
    wcr: Wcr::Sum,
    finish: Finish::None,
};
static REDUCE_L2: Reduce = Reduce {
    name: "ReduceL2",
    reference: |v| v.iter().map(|x| x * x).sum::<f64>().sqrt(),
    pre: Pre::Square,
    wcr: Wcr::Sum,
    finish: Finish::Sqrt,
};
static REDUCE_SUM_SQUARE: Reduce = Reduce {
    name: "ReduceSumSquare",
    reference: |v| v.iter().map(|x| x * x).sum(),
    pre: Pre::Square,
    wcr: Wcr::Sum,
    finish: Finish::None,
};
static REDUCE_LOG_SUM: Reduce = Reduce {
    name: "ReduceLogSum",
    reference: |v| sum(v).ln(),
    pre: Pre::Identity,
    wcr: Wcr::Sum,
    finish: Finish::Log,
};
static REDUCE_LOG_SUM_EXP: Reduce = Reduce {
    name: "ReduceLogSumExp",
    reference: |v| v.iter().map(|x| x.exp()).sum::<f64>().ln(),
    pre: Pre::Exp,
    wcr: Wcr::Sum,
    finish: Finish::Log,
};

/// Where the reduced axes come from, as far as the caller knows.
enum AxesInput<'a> {
    Absent,
    Constant(&'a Tensor),
    /// Computed at run time: the output shape would depend on data.
    Dynamic,
}

impl<'a> AxesInput<'a> {
    /// From whether input 1 is wired and, if known, its value.
    fn of(present: bool, value: Option<&'a Tensor>) -> Self {
        match (present, value) {
            (false, _) => AxesInput::Absent,
            (true, Some(t)) => AxesInput::Constant(t),
            (true, None) => AxesInput::Dynamic,
        }
    }
}

/// The reduced axes (`true` per reduced dimension) and `keepdims`.
struct Plan {
    reduced: Vec<bool>,
    keepdims: bool,
}

impl Plan {
    fn new(op: &str, node: &LibraryNode, rank: usize, input: AxesInput) -> Result<Plan, OpError> {
        let listed: Option<Vec<i64>> = match (node.ints("axes"), input) {
            (Some(_), AxesInput::Constant(_) | AxesInput::Dynamic) => {
                return Err(OpError::attr(
                    op,
                    "axes",
                    "given both as an attribute and as input 1",
                ))
            }
            (Some(a), AxesInput::Absent) => Some(a.to_vec()),
            (None, AxesInput::Constant(t)) => {
                if !matches!(t.dtype(), DType::I64 | DType::I32) || t.shape.len() > 1 {
                    return Err(OpError::shape(
                        op,
                        format!(
                            "input 1 (axes) must be a 1-D integer tensor, got {} of shape {:?}",
                            t.dtype(),
                            t.shape
                        ),
                    ));
                }
                Some(t.to_i64_vec())
            }
            (None, AxesInput::Dynamic) => {
                return Err(OpError::unsupported(
                    op,
                    "input 1 (axes) must be a constant: the output shape depends on it",
                ))
            }
            (None, AxesInput::Absent) => None,
        };
        let keepdims = flag(op, node, "keepdims", true)?;
        let noop = flag(op, node, "noop_with_empty_axes", false)?;
        let listed = listed.unwrap_or_default();
        let mut reduced = vec![listed.is_empty() && !noop; rank];
        let r = i64::try_from(rank).unwrap_or(i64::MAX);
        for &a in &listed {
            if a < -r || a >= r {
                return Err(OpError::attr(
                    op,
                    "axes",
                    format!("axis {a} is outside [-{r}, {r}) for rank {rank}"),
                ));
            }
            let d = usize::try_from(if a < 0 { a + r } else { a }).unwrap_or(0);
            if std::mem::replace(&mut reduced[d], true) {
                return Err(OpError::attr(
                    op,
                    "axes",
                    format!("axis {d} is listed twice in {listed:?}"),
                ));
            }
        }
        Ok(Plan { reduced, keepdims })
    }

    /// The output shape; reduced dimensions become 1 or disappear.
    fn output<T: Clone>(&self, shape: &[T], one: T) -> Vec<T> {
        shape
            .iter()
            .zip(&self.reduced)
            .filter_map(|(d, &r)| match (r, self.keepdims) {
                (false, _) => Some(d.clone()),
                (true, true) => Some(one.clone()),
                (true, false) => None,
            })
            .collect()
    }
}

/// The identity of `wcr` in `dtype`: integer and boolean containers cannot hold infinities, so
/// Max / Min start from the type's extreme values.
fn identity(wcr: Wcr, dtype: DType) -> f64 {
    match (wcr, dtype) {
        (Wcr::Max, DType::Bool) => 0.0,
        (Wcr::Min, DType::Bool) => 1.0,
        (Wcr::Max | Wcr::Min, d) if d.is_int() => {
            let (lo, hi) = d.int_range().expect("integer range");
            if wcr == Wcr::Max {
                lo
            } else {
                hi
            }
        }
        (w, _) => f64::from(w.identity()),
    }
}

/// `x / n`, as a multiplication by the reciprocal when `n` is a literal.
pub(super) fn divide_by(x: TExpr, n: &SymExpr) -> TExpr {
    match n.as_int() {
        Some(v) => TExpr::binary(BinOp::Mul, x, TExpr::Const(1.0 / v as f64)),
        None => TExpr::binary(BinOp::Div, x, TExpr::Index(n.clone())),
    }
}

impl Reduce {
    /// Any numeric type; booleans only for Max / Min (opset 20), where they mean any / all.
    fn check_input(&self, dtype: DType) -> Result<(), OpError> {
        if dtype == DType::Bool && !matches!(self.wcr, Wcr::Max | Wcr::Min) {
            return Err(OpError::shape(
                self.name,
                "expects a numeric input, got bool",
            ));
        }
        Ok(())
    }
}

impl Operator for Reduce {
    fn name(&self) -> &'static str {
        self.name
    }

    fn input_count(&self) -> (usize, usize) {
        (1, 2)
    }

    fn infer(
        &self,
        node: &LibraryNode,
        inputs: &[Option<TensorType>],
        consts: &[Option<&Tensor>],
    ) -> Result<Vec<TensorType>, OpError> {
        check_arity(self, inputs.len())?;
        let x = input_type(self.name, inputs, 0)?;
        self.check_input(x.dtype)?;
        let axes = AxesInput::of(
            inputs.get(1).is_some_and(Option::is_some),
            consts.get(1).copied().flatten(),
        );
        let plan = Plan::new(self.name, node, x.shape.len(), axes)?;
        Ok(vec![TensorType::new(
            x.dtype,
            plan.output(&x.shape, SymExpr::Int(1)),
        )])
    }

    fn eval(&self, node: &LibraryNode, inputs: &[Option<&Tensor>]) -> Result<Vec<Tensor>, OpError> {
        check_arity(self, inputs.len())?;
        let x = arg(self.name, inputs, 0)?;
        self.check_input(x.dtype())?;
        let value = inputs.get(1).copied().flatten();
        let axes = AxesInput::of(value.is_some(), value);
        let plan = Plan::new(self.name, node, x.shape.len(), axes)?;
        // Group the input values by the output element they reduce into.
        let kept: Vec<usize> = x
            .shape
            .iter()
            .zip(&plan.reduced)
            .map(|(&d, &r)| if r { 1 } else { d })
            .collect();
        let strides = row_major_strides(&kept);
        let mut groups: Vec<Vec<f64>> = vec![Vec::new(); kept.iter().product()];
        for e in 0..x.len() {
            let idx = unravel(e, &x.shape);
            let out: usize = idx
                .iter()
                .zip(&plan.reduced)
                .zip(&strides)
                .map(|((&i, &r), s)| if r { 0 } else { i * s })
                .sum();
            groups[out].push(x.get_f64(e));
        }
        let values: Vec<f64> = groups.iter().map(|g| (self.reference)(g)).collect();
        Ok(vec![Tensor::from_f64(
            x.dtype(),
            plan.output(&x.shape, 1),
            &values,
        )])
    }

    fn expand(&self, _implementation: &str, ctx: &mut ExpandCtx) -> Result<(), OpError> {
        let (x, xd) = ctx.input(0)?.clone();
        let (y, yd) = ctx.output(0)?.clone();
        let axes = AxesInput::of(
            ctx.inputs.get(1).is_some_and(Option::is_some),
            ctx.constant_input(1),
        );
        let plan = Plan::new(self.name, ctx.node, xd.shape.len(), axes)?;
        let label = ctx.label.clone();
        let (params, idx) = params_over("i", &xd.shape);
        let out_idx = plan.output(
            &idx.iter()
                .zip(&plan.reduced)
                .map(|(i, &r)| if r { SymExpr::Int(0) } else { i.clone() })
                .collect::<Vec<_>>(),
            SymExpr::Int(0),
        );
        let acc = match self.finish {
            Finish::None => y.clone(),
            _ => ctx
                .b
                .transient(&format!("{label}_acc"), yd.dtype, yd.shape.clone()),
        };
        let b = &mut *ctx.b;
        let init = identity(self.wcr, yd.dtype);
        fill_map(b, &format!("{label}_init"), &acc, &yd.shape, init);
        let xv = TExpr::input("x");
        let value = match self.pre {
            Pre::Identity => xv,
            Pre::Abs => TExpr::unary(UnOp::Abs, xv),
            Pre::Square => TExpr::binary(BinOp::Mul, xv.clone(), xv),
            Pre::Exp => TExpr::unary(UnOp::Exp, xv),
        };
        element_map(
            b,
            &format!("{label}_reduce"),
            &params,
            vec![Read::new("x", &x, idx)],
            (&acc, out_idx),
            Some(self.wcr),
            value,
        );
        let av = TExpr::input("a");
        let value = match self.finish {
            Finish::None => return Ok(()),
            Finish::Mean => {
                let count: Vec<SymExpr> = xd
                    .shape
                    .iter()
                    .zip(&plan.reduced)
                    .filter(|(_, &r)| r)
                    .map(|(d, _)| d.clone())
                    .collect();
                divide_by(av, &dim_product(&count))
            }
            Finish::Sqrt => TExpr::unary(UnOp::Sqrt, av),
            Finish::Log => TExpr::unary(UnOp::Log, av),
        };
        let (out_params, oidx) = params_over("i", &yd.shape);
        element_map(
            b,
            &format!("{label}_finish"),
            &out_params,
            vec![Read::new("a", &acc, oidx.clone())],
            (&y, oidx),
            None,
            value,
        );
        Ok(())
    }

    /// One operation per input element (the accumulation), plus one per output element for the
    /// finishing step.
    fn flops(&self, _: &LibraryNode, inputs: &[Option<TensorType>], outputs: &[TensorType]) -> u64 {
        let count = |t: Option<&TensorType>| {
            t.and_then(TensorType::static_shape)
                .map_or(0, |s| s.iter().product::<usize>() as u64)
        };
        let finish = if self.finish == Finish::None {
            0
        } else {
            count(outputs.first())
        };
        count(inputs.first().and_then(Option::as_ref)) + finish
    }
}
