//! The cosine-sum window generators HannWindow, HammingWindow and BlackmanWindow (opset 17):
//! `w[n] = a0 − a1·cos(2πn / N) + a2·cos(4πn / N)` for `n` in `0..size`, where `N` is `size`
//! when `periodic` (default 1) and `size − 1` otherwise, written in `output_datatype` (an ONNX
//! type code, default 1 = float).
//!
//! `size` decides the output's length, so it must be a constant (or folded to one at import).
//! Only floating-point outputs are accepted: an integer window would truncate every value
//! but the peak to 0, which no model means. A symmetric window of size 1 divides by `N = 0`
//! (ONNX's reference yields NaN) and is refused.
//!
//! The expansion is one map over `n` whose tasklet evaluates the cosine sum of the index.

use super::logic::dtype_of_onnx;
use super::support::{arg, element_count, element_map, input_type, params_over};
use super::{check_arity, ExpandCtx, OpError, Operator, TensorType};
use crate::ir::{BinOp, DType, LibraryNode, SymExpr, TExpr, Tensor, UnOp};
use std::f64::consts::PI;

pub static OPS: &[&dyn Operator] = &[
    &CosineWindow {
        name: "HannWindow",
        kind: Kind::Hann,
    },
    &CosineWindow {
        name: "HammingWindow",
        kind: Kind::Hamming,
    },
    &CosineWindow {
        name: "BlackmanWindow",
        kind: Kind::Blackman,
    },
];

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Hann,
    Hamming,
    Blackman,
}

/// A window generator `Window(size) -> output`.
pub struct CosineWindow {
    name: &'static str,
    kind: Kind,
}

/// The window's validated parameters.
struct Plan {
    size: usize,
    /// `N`: `size`, or `size − 1` for a symmetric window.
    period: usize,
    dtype: DType,
}

impl Kind {
    /// `(a0, a1, a2)` of the cosine sum (ONNX's function bodies; Hamming's α is 25/46).
    fn coefficients(self) -> (f64, f64, f64) {
        match self {
            Kind::Hann => (0.5, 0.5, 0.0),
            Kind::Hamming => (25.0 / 46.0, 21.0 / 46.0, 0.0),
            Kind::Blackman => (0.42, 0.5, 0.08),
        }
    }

    /// `w[n]` as the ONNX reference writes each window (Hann as `sin²(πn / N)`).
    fn value(self, n: f64, period: f64) -> f64 {
        let (a0, a1, a2) = self.coefficients();
        match self {
            Kind::Hann => (PI * n / period).sin().powi(2),
            _ => a0 - a1 * (2.0 * PI * n / period).cos() + a2 * (4.0 * PI * n / period).cos(),
        }
    }
}

impl CosineWindow {
    fn plan(&self, node: &LibraryNode, size: &Tensor) -> Result<Plan, OpError> {
        if size.len() != 1 || size.shape.len() > 1 {
            return Err(OpError::shape(
                self.name,
                format!("size must be a scalar, got shape {:?}", size.shape),
            ));
        }
        let value = size.to_i64_vec()[0];
        let size = usize::try_from(value)
            .ok()
            .filter(|s| *s >= 1)
            .ok_or_else(|| {
                OpError::shape(self.name, format!("size must be positive, got {value}"))
            })?;
        element_count(self.name, &[size])?;
        let periodic = match node.int("periodic").unwrap_or(1) {
            0 => false,
            1 => true,
            v => {
                return Err(OpError::attr(
                    self.name,
                    "periodic",
                    format!("{v} is neither 0 nor 1"),
                ))
            }
        };
        if !periodic && size == 1 {
            return Err(OpError::shape(
                self.name,
                "a symmetric window of size 1 divides by size − 1 = 0",
            ));
        }
        let code = node.int("output_datatype").unwrap_or(1);
        let dtype = dtype_of_onnx(code)
            .filter(|d| d.is_float())
            .ok_or_else(|| {
                OpError::attr(
                    self.name,
                    "output_datatype",
                    format!("type code {code} is not a floating-point type dmove supports"),
                )
            })?;
        let period = if periodic { size } else { size - 1 };
        Ok(Plan {
            size,
            period,
            dtype,
        })
    }
}

impl Operator for CosineWindow {
    fn name(&self) -> &'static str {
        self.name
    }

    fn input_count(&self) -> (usize, usize) {
        (1, 1)
    }

    fn infer(
        &self,
        node: &LibraryNode,
        inputs: &[Option<TensorType>],
        consts: &[Option<&Tensor>],
    ) -> Result<Vec<TensorType>, OpError> {
        check_arity(self, inputs.len())?;
        let size = input_type(self.name, inputs, 0)?;
        if !matches!(size.dtype, DType::I32 | DType::I64) {
            return Err(OpError::shape(
                self.name,
                format!("size must be int32 or int64, got {}", size.dtype),
            ));
        }
        let Some(value) = consts.first().copied().flatten() else {
            return Err(OpError::unsupported(
                self.name,
                "size must be a constant (it decides the output's length)",
            ));
        };
        let plan = self.plan(node, value)?;
        Ok(vec![TensorType::new(
            plan.dtype,
            vec![SymExpr::from(plan.size)],
        )])
    }

    fn eval(&self, node: &LibraryNode, inputs: &[Option<&Tensor>]) -> Result<Vec<Tensor>, OpError> {
        let plan = self.plan(node, arg(self.name, inputs, 0)?)?;
        let values: Vec<f64> = (0..plan.size)
            .map(|n| self.kind.value(n as f64, plan.period as f64))
            .collect();
        Ok(vec![Tensor::from_f64(plan.dtype, vec![plan.size], &values)])
    }

    fn expand(&self, _implementation: &str, ctx: &mut ExpandCtx) -> Result<(), OpError> {
        let (y, desc) = ctx.output(0)?.clone();
        let size = ctx
            .constant_input(0)
            .ok_or_else(|| OpError::unsupported(self.name, "size must be a constant to expand"))?;
        let plan = self.plan(ctx.node, size)?;
        let (params, idx) = params_over("n", &desc.shape);
        let (a0, a1, a2) = self.kind.coefficients();
        let step = 2.0 * PI / plan.period as f64;
        let cosine = |harmonic: f64| {
            let angle = TExpr::binary(
                BinOp::Mul,
                TExpr::Index(idx[0].clone()),
                TExpr::Const(harmonic * step),
            );
            TExpr::unary(UnOp::Cos, angle)
        };
        let mut value = TExpr::binary(
            BinOp::Sub,
            TExpr::Const(a0),
            TExpr::binary(BinOp::Mul, TExpr::Const(a1), cosine(1.0)),
        );
        if a2 != 0.0 {
            let third = TExpr::binary(BinOp::Mul, TExpr::Const(a2), cosine(2.0));
            value = TExpr::binary(BinOp::Add, value, third);
        }
        element_map(ctx.b, &ctx.label, &params, vec![], (&y, idx), None, value);
        Ok(())
    }

    fn flops(&self, _: &LibraryNode, _: &[Option<TensorType>], outputs: &[TensorType]) -> u64 {
        super::support::per_output_element(outputs, 6)
    }
}
