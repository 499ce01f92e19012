//! CausalConvWithState (opset 27): a depthwise causal 1-D convolution that carries its left
//! context between calls, the preprocessing step of Gated DeltaNet and Mamba blocks.
//!
//! X is `[batch, channels, length]`, W `[channels, 1, k]` (Conv's depthwise layout), the optional
//! bias `[channels]` and carry `past_state` `[batch, channels, k − 1]` (zeros when absent). Over
//! the sequence `P = past_state ++ X` (length `k − 1 + length`),
//! `Y[n, c, l] = act(B[c] + Σ_j W[c, 0, j] · P[n, c, l + j])` with `act` SiLU (`silu`, `swish`:
//! `x · sigmoid(x)`, applied to the convolution rounded to X's type, as ONNX's reference does) or
//! nothing (`none`), and `present_state` holds the last `k − 1` positions of `P` (padding and
//! carry included when X is shorter than `k − 1`).
//!
//! The reference reads `P` through the position rule above. The expansion writes `P` into a
//! transient (two copy maps), so that the convolution is one wcr-sum map with affine reads
//! (`P[n, c, l + j]`) into an accumulator of the work type (f32, or f64 for f64; X's own
//! container when that is the work type), and `present_state` one more copy from `P`. A kernel
//! of one tap has an empty carry: the maps over it are left out.

use super::expand::copy_map;
use super::math::SWISH;
use super::movement::has_zero_extent;
use super::support::{
    arg, element_count, element_map, expect_shape, fill_map, input_type, opt_arg, params_over,
    require_float, require_rank, same_dtype, types_of, Read,
};
use super::window::{bias_init_at, same_dim};
use super::{check_arity, ExpandCtx, OpError, Operator, TensorType};
use crate::ir::scalar::stored;
use crate::ir::{BinOp, DType, LibraryNode, Range, SymExpr, TExpr, Tensor, Wcr};

pub static OPS: &[&dyn Operator] = &[&CausalConvWithState];

const OP: &str = "CausalConvWithState";

const X: usize = 0;
const W: usize = 1;
const BIAS: usize = 2;
const PAST: usize = 3;

/// `CausalConvWithState(input, weight, bias?, past_state?) -> (output, present_state)`.
pub struct CausalConvWithState;

/// Shapes and attributes of one application, checked.
struct Plan {
    /// `[batch, channels, length]`.
    x: Vec<SymExpr>,
    kernel: SymExpr,
    /// `k − 1`: the carried positions.
    carry: SymExpr,
    silu: bool,
    dtype: DType,
}

impl Plan {
    fn new(node: &LibraryNode, inputs: &[Option<TensorType>]) -> Result<Plan, OpError> {
        let silu = match node.str("activation").unwrap_or("none") {
            "none" => false,
            "silu" | "swish" => true,
            other => {
                let message = format!("expected none, silu or swish, got `{other}`");
                return Err(OpError::attr(OP, "activation", message));
            }
        };
        let x = input_type(OP, inputs, X)?;
        require_float(OP, x)?;
        require_rank(OP, "input", x, 3)?;
        let w = input_type(OP, inputs, W)?;
        same_dtype(OP, x, w, W)?;
        require_rank(OP, "weight", w, 3)?;
        let kernel = w.shape[2].clone();
        expect_shape(
            OP,
            "weight",
            &w.shape,
            &[x.shape[1].clone(), SymExpr::Int(1), kernel.clone()],
        )?;
        same_dim(OP, &w.shape[0], &x.shape[1], || {
            format!(
                "weight has {} channels, input has {}",
                w.shape[0], x.shape[1]
            )
        })?;
        if kernel.as_int().is_some_and(|k| k < 1) {
            return Err(OpError::shape(
                OP,
                format!("the kernel size {kernel} must be at least 1"),
            ));
        }
        let carry = (kernel.clone() - SymExpr::Int(1)).simplify();
        if let Some(Some(bias)) = inputs.get(BIAS) {
            same_dtype(OP, x, bias, BIAS)?;
            expect_shape(OP, "bias", &bias.shape, &x.shape[1..2])?;
        }
        if let Some(Some(past)) = inputs.get(PAST) {
            same_dtype(OP, x, past, PAST)?;
            let want = [x.shape[0].clone(), x.shape[1].clone(), carry.clone()];
            expect_shape(OP, "past_state", &past.shape, &want)?;
        }
        Ok(Plan {
            x: x.shape.clone(),
            kernel,
            carry,
            silu,
            dtype: x.dtype,
        })
    }

    /// `[batch, channels, k − 1]`.
    fn state_shape(&self) -> Vec<SymExpr> {
        vec![self.x[0].clone(), self.x[1].clone(), self.carry.clone()]
    }

    fn output_types(&self) -> Vec<TensorType> {
        vec![
            TensorType::new(self.dtype, self.x.clone()),
            TensorType::new(self.dtype, self.state_shape()),
        ]
    }

    /// The type the convolution accumulates in.
    fn work(&self) -> DType {
        match self.dtype {
            DType::F64 => DType::F64,
            _ => DType::F32,
        }
    }
}

impl Operator for CausalConvWithState {
    fn name(&self) -> &'static str {
        OP
    }

    fn input_count(&self) -> (usize, usize) {
        (2, 4)
    }

    fn output_count(&self) -> usize {
        2
    }

    fn infer(
        &self,
        node: &LibraryNode,
        inputs: &[Option<TensorType>],
        _consts: &[Option<&Tensor>],
    ) -> Result<Vec<TensorType>, OpError> {
        check_arity(self, inputs.len())?;
        Ok(Plan::new(node, inputs)?.output_types())
    }

    fn eval(&self, node: &LibraryNode, inputs: &[Option<&Tensor>]) -> Result<Vec<Tensor>, OpError> {
        check_arity(self, inputs.len())?;
        let plan = Plan::new(node, &types_of(inputs))?;
        let (x, w) = (arg(OP, inputs, X)?, arg(OP, inputs, W)?);
        let (bias, past) = (opt_arg(inputs, BIAS), opt_arg(inputs, PAST));
        let [batch, channels, len] = [x.shape[0], x.shape[1], x.shape[2]];
        let kernel = w.shape[2];
        let carry = kernel - 1;
        element_count(OP, &[batch, channels, carry])?;
        let mut y = Vec::with_capacity(x.len());
        let mut present = Vec::with_capacity(batch * channels * carry);
        for line in 0..batch * channels {
            // Position `p` of the past state followed by the input.
            let at = |p: usize| match p.checked_sub(carry) {
                Some(l) => x.get_f64(line * len + l),
                None => past.map_or(0.0, |s| s.get_f64(line * carry + p)),
            };
            let c = line % channels;
            for l in 0..len {
                let sum: f64 = (0..kernel)
                    .map(|j| w.get_f64(c * kernel + j) * at(l + j))
                    .sum();
                let conv = stored(plan.dtype, bias.map_or(0.0, |b| b.get_f64(c)) + sum);
                y.push(if plan.silu {
                    (SWISH.f)(conv, &[1.0])
                } else {
                    conv
                });
            }
            present.extend((len..len + carry).map(at));
        }
        Ok(vec![
            Tensor::from_f64(plan.dtype, x.shape.clone(), &y),
            Tensor::from_f64(plan.dtype, vec![batch, channels, carry], &present),
        ])
    }

    fn expand(&self, _implementation: &str, ctx: &mut ExpandCtx) -> Result<(), OpError> {
        let plan = Plan::new(ctx.node, &ctx.input_types())?;
        let label = ctx.label.clone();
        let name = |i: usize| ctx.inputs.get(i).cloned().flatten().map(|(n, _)| n);
        let (past, bias) = (name(PAST), name(BIAS));
        let present = ctx.outputs.get(1).cloned().flatten().map(|(n, _)| n);
        let (x, w) = (ctx.input(X)?.0.clone(), ctx.input(W)?.0.clone());
        let y = ctx.output(0)?.0.clone();
        let b = &mut *ctx.b;
        // `[n, c, l + by]` for the index `[n, c, l]`.
        let shift = |i: &[SymExpr], by: &SymExpr| {
            vec![
                i[0].clone(),
                i[1].clone(),
                (i[2].clone() + by.clone()).simplify(),
            ]
        };
        // P = past_state ++ X.
        let total = (plan.carry.clone() + plan.x[2].clone()).simplify();
        let seq_shape = vec![plan.x[0].clone(), plan.x[1].clone(), total];
        let seq = b.transient(&format!("{label}_seq"), plan.dtype, seq_shape);
        let state_shape = plan.state_shape();
        let carried = !has_zero_extent(&state_shape);
        match (&past, carried) {
            (Some(past), true) => {
                let (params, i) = params_over("i", &state_shape);
                copy_map(
                    b,
                    &format!("{label}_seq_past"),
                    params,
                    past,
                    i.clone(),
                    &seq,
                    i,
                );
            }
            (None, true) => fill_map(b, &format!("{label}_seq_past"), &seq, &state_shape, 0.0),
            (_, false) => {}
        }
        let (params, i) = params_over("i", &plan.x);
        let dst = shift(&i, &plan.carry);
        copy_map(b, &format!("{label}_seq_input"), params, &x, i, &seq, dst);
        // The convolution, in the work type.
        let acc = match plan.work() == plan.dtype {
            true => y.clone(),
            false => b.transient(&format!("{label}_acc"), plan.work(), plan.x.clone()),
        };
        bias_init_at(b, &label, &acc, &plan.x, bias.as_deref(), 1);
        let (mut params, i) = params_over("i", &plan.x);
        params.push(("j".to_string(), Range::upto(plan.kernel.clone())));
        let tap = SymExpr::sym("j");
        let reads = vec![
            Read::new("w", &w, vec![i[1].clone(), SymExpr::Int(0), tap.clone()]),
            Read::new("p", &seq, shift(&i, &tap)),
        ];
        let value = TExpr::binary(BinOp::Mul, TExpr::input("w"), TExpr::input("p"));
        let dst = (acc.as_str(), i.clone());
        element_map(
            b,
            &format!("{label}_conv"),
            &params,
            reads,
            dst,
            Some(Wcr::Sum),
            value,
        );
        let (params, i) = params_over("i", &plan.x);
        if acc != y {
            let label = format!("{label}_store");
            copy_map(b, &label, params.clone(), &acc, i.clone(), &y, i.clone());
        }
        // SiLU of the convolution as stored in Y's type.
        if plan.silu {
            let reads = vec![Read::new("x", &y, i.clone())];
            let value = (SWISH.t)(TExpr::input("x"), &[1.0]);
            element_map(
                b,
                &format!("{label}_silu"),
                &params,
                reads,
                (&y, i),
                None,
                value,
            );
        }
        if let (Some(present), true) = (present, carried) {
            let (params, i) = params_over("i", &state_shape);
            let src = shift(&i, &plan.x[2]);
            copy_map(
                b,
                &format!("{label}_present"),
                params,
                &seq,
                src,
                &present,
                i,
            );
        }
        Ok(())
    }

    /// Two per tap per output element, plus the activation's four.
    fn flops(
        &self,
        _node: &LibraryNode,
        inputs: &[Option<TensorType>],
        outputs: &[TensorType],
    ) -> u64 {
        let taps = inputs
            .get(W)
            .cloned()
            .flatten()
            .and_then(|w| w.static_shape())
            .map_or(0, |w| w[2] as u64);
        let silu = 4;
        super::support::per_output_element(&outputs[..1], 2 * taps + silu)
    }
}
