//! LRN, local response normalization across channels:
//! `y = x / (bias + alpha / size · Σ x²)^beta`, the sum running over the channels
//! `c − ⌊(size − 1) / 2⌋ ..= c + ⌈(size − 1) / 2⌉` of the same position, clipped to the
//! existing channels (defaults: `alpha` 1e-4, `beta` 0.75, `bias` 1; `size` required).
//!
//! The expansion is a one-axis window over C: a wcr-sum map over `(n, c, k, d…)` adds the square
//! of channel `c − ⌊(size − 1) / 2⌋ + k` (clamped, contributing 0 outside) into a transient,
//! then a pointwise map divides.

use super::support::{
    arg, element_map, fill_map, float_like_input, params_over, per_output_element, Read,
};
use super::window::clamp_into;
use super::{ExpandCtx, OpError, Operator, TensorType};
use crate::ir::{BinOp, LibraryNode, Range, SymExpr, TExpr, Tensor, Wcr};

pub static OPS: &[&dyn Operator] = &[&Lrn];

/// `LRN(X)`.
pub struct Lrn;

/// Validated attributes.
struct Attrs {
    alpha: f64,
    beta: f64,
    bias: f64,
    size: usize,
}

impl Attrs {
    /// Channels before `c` in `c`'s window: `⌊(size − 1) / 2⌋` (the larger half goes after).
    fn before(&self) -> usize {
        (self.size - 1) / 2
    }

    /// `x / (bias + alpha / size · square_sum)^beta`, in f64.
    fn scale(&self, x: f64, square_sum: f64) -> f64 {
        x / (self.bias + self.alpha / self.size as f64 * square_sum).powf(self.beta)
    }
}

impl Lrn {
    fn attrs(&self, node: &LibraryNode, rank: usize) -> Result<Attrs, OpError> {
        if rank < 2 {
            return Err(OpError::shape(
                self.name(),
                format!("input X must have rank at least 2 (N, C, …), got rank {rank}"),
            ));
        }
        let size = node
            .int("size")
            .ok_or_else(|| OpError::attr(self.name(), "size", "is required"))?;
        let size = usize::try_from(size)
            .ok()
            .filter(|s| *s >= 1)
            .ok_or_else(|| {
                OpError::attr(self.name(), "size", format!("must be positive, got {size}"))
            })?;
        Ok(Attrs {
            alpha: node.float("alpha").unwrap_or(1e-4),
            beta: node.float("beta").unwrap_or(0.75),
            bias: node.float("bias").unwrap_or(1.0),
            size,
        })
    }
}

impl Operator for Lrn {
    fn name(&self) -> &'static str {
        "LRN"
    }

    fn input_count(&self) -> (usize, usize) {
        (1, 1)
    }

    fn infer(
        &self,
        node: &LibraryNode,
        inputs: &[Option<TensorType>],
        _consts: &[Option<&Tensor>],
    ) -> Result<Vec<TensorType>, OpError> {
        float_like_input(self, inputs, |rank| self.attrs(node, rank).map(drop))
    }

    fn eval(&self, node: &LibraryNode, inputs: &[Option<&Tensor>]) -> Result<Vec<Tensor>, OpError> {
        let x = arg(self.name(), inputs, 0)?;
        let at = self.attrs(node, x.shape.len())?;
        let channels = x.shape[1];
        let inner: usize = x.shape[2..].iter().product();
        let mut y = vec![0.0; x.len()];
        for (e, out) in y.iter_mut().enumerate() {
            let (c, base) = ((e / inner) % channels, e - (e / inner) % channels * inner);
            let lo = c.saturating_sub(at.before());
            let hi = (c + at.size - at.before()).min(channels);
            let square_sum: f64 = (lo..hi).map(|j| x.get_f64(base + j * inner).powi(2)).sum();
            *out = at.scale(x.get_f64(e), square_sum);
        }
        Ok(vec![Tensor::from_f64(x.dtype(), x.shape.clone(), &y)])
    }

    fn expand(&self, _implementation: &str, ctx: &mut ExpandCtx) -> Result<(), OpError> {
        let (x, desc) = ctx.input(0)?.clone();
        let (y, _) = ctx.output(0)?.clone();
        let at = self.attrs(ctx.node, desc.shape.len())?;
        let (params, idx) = params_over("i", &desc.shape);
        let label = ctx.label.clone();
        let b = &mut *ctx.b;
        let sum = b.transient(
            &format!("{label}_square_sum"),
            desc.dtype,
            desc.shape.clone(),
        );
        fill_map(b, &format!("{label}_init"), &sum, &desc.shape, 0.0);

        // (i0, i1, k, i2, …): window element k of channel i1 reads channel i1 − before + k.
        let mut window_params = params.clone();
        window_params.insert(2, ("k".into(), Range::upto(SymExpr::from(at.size))));
        let channel = &idx[1] - SymExpr::from(at.before()) + SymExpr::sym("k");
        let mut x_idx = vec![idx[0].clone()];
        let mut inside = None;
        clamp_into(channel, &desc.shape[1], &mut x_idx, &mut inside);
        x_idx.extend_from_slice(&idx[2..]);
        let xv = TExpr::input("x");
        let square = TExpr::binary(BinOp::Mul, xv.clone(), xv.clone());
        let value = match inside {
            Some(cond) => TExpr::select(cond, square, TExpr::Const(0.0)),
            None => square,
        };
        let reads = vec![Read::new("x", &x, x_idx)];
        let dst = (sum.as_str(), idx.clone());
        let window_label = format!("{label}_window");
        element_map(
            b,
            &window_label,
            &window_params,
            reads,
            dst,
            Some(Wcr::Sum),
            value,
        );

        let base = TExpr::binary(
            BinOp::Add,
            TExpr::Const(at.bias),
            TExpr::binary(
                BinOp::Mul,
                TExpr::Const(at.alpha / at.size as f64),
                TExpr::input("s"),
            ),
        );
        let denom = TExpr::binary(BinOp::Pow, base, TExpr::Const(at.beta));
        let value = TExpr::binary(BinOp::Div, xv, denom);
        let reads = vec![
            Read::new("x", &x, idx.clone()),
            Read::new("s", &sum, idx.clone()),
        ];
        element_map(b, &label, &params, reads, (&y, idx), None, value);
        Ok(())
    }

    fn flops(&self, node: &LibraryNode, _: &[Option<TensorType>], outputs: &[TensorType]) -> u64 {
        let size = node.int("size").unwrap_or(1).max(1) as u64;
        per_output_element(outputs, 2 * size + 4)
    }
}
