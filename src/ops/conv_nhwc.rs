//! NhwcConv: Conv with X and Y channels-last (`N, spatial…, C`); W, B, the attributes and the
//! arithmetic are Conv's.
//!
//! ```text
//! Y[n, o…, m] = B[m] + Σ_{c, k…} X[n, o·s − pad + k·d…, g·C/group + c] · W[m, c, k…]
//! ```
//! It is what the operator-level ChannelsLast transformation turns a Conv into, so that a
//! channels-last region needs no transposes between its operators. Its expansions are Conv's with the
//! channel index moved last (see [`super::direct`] and [`super::im2col::expand_last`]): the
//! direct accumulation's innermost input channel walks X with unit stride, and the im2col
//! product runs its SIMD lanes over output channels. The reference transposes to Conv's
//! layout and runs Conv's reference, so it shares no index arithmetic with the expansion.

use super::{direct, Channels, Conv};
use crate::ir::{Attr, LibraryNode, Tensor};
use crate::ops::window::{float_input, tensor_input};
use crate::ops::{ExpandCtx, OpError, Operator, TensorType};

pub(super) const NAME: &str = "NhwcConv";

pub struct NhwcConv;

impl Operator for NhwcConv {
    fn name(&self) -> &'static str {
        NAME
    }

    fn input_count(&self) -> (usize, usize) {
        Conv.input_count()
    }

    fn infer(
        &self,
        node: &LibraryNode,
        inputs: &[Option<TensorType>],
        consts: &[Option<&Tensor>],
    ) -> Result<Vec<TensorType>, OpError> {
        let x = float_input(NAME, inputs, 0, "input X")?;
        if x.shape.len() < 3 {
            return Err(OpError::shape(
                NAME,
                format!(
                    "input X must have rank at least 3 (N, spatial…, C), got rank {}",
                    x.shape.len()
                ),
            ));
        }
        let mut first = inputs.to_vec();
        first[0] = Some(TensorType::new(
            x.dtype,
            Channels::Last.to_first(x.shape.clone()),
        ));
        let out = Conv.infer(node, &first, consts)?;
        Ok(out
            .into_iter()
            .map(|t| TensorType::new(t.dtype, Channels::Last.order(t.shape)))
            .collect())
    }

    fn eval(&self, node: &LibraryNode, inputs: &[Option<&Tensor>]) -> Result<Vec<Tensor>, OpError> {
        let x = tensor_input(NAME, inputs, 0, "input X")?;
        if x.shape.len() < 3 {
            return Err(OpError::shape(
                NAME,
                format!("input X must have rank at least 3, got {:?}", x.shape),
            ));
        }
        let x_first = Channels::Last.relayout(x)?;
        let mut first = inputs.to_vec();
        first[0] = Some(&x_first);
        Conv.eval(node, &first)?
            .iter()
            .map(|y| Channels::First.relayout(y))
            .collect()
    }

    fn default_attr(&self, name: &str) -> Option<Attr> {
        Conv.default_attr(name)
    }

    fn expansions(&self) -> &'static [&'static str] {
        Conv.expansions()
    }

    /// Conv's expansions in the channels-last layout: `pure` and `padded` are [`direct`]
    /// (unpadded or over a padded copy of X), `im2col` is [`super::im2col::expand_last`].
    fn expand(&self, implementation: &str, ctx: &mut ExpandCtx) -> Result<(), OpError> {
        match implementation {
            "im2col" => super::im2col::expand_last(ctx),
            "padded" => direct(ctx, Channels::Last, true),
            _ => direct(ctx, Channels::Last, false),
        }
    }

    fn flops(
        &self,
        node: &LibraryNode,
        inputs: &[Option<TensorType>],
        outputs: &[TensorType],
    ) -> u64 {
        // The count does not depend on where the channels are.
        Conv.flops(node, inputs, outputs)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::DType;
    use std::collections::BTreeMap;

    fn conv_node() -> LibraryNode {
        LibraryNode {
            op: NAME.into(),
            attrs: BTreeMap::from([
                ("pads".to_string(), Attr::Ints(vec![1, 0, 1, 1])),
                ("strides".to_string(), Attr::Ints(vec![2, 1])),
            ]),
        }
    }

    #[test]
    fn reference_is_conv_in_the_other_layout() {
        let n = conv_node();
        let x_first: Vec<f64> = (0..60).map(|i| f64::from(i % 7) - 3.0).collect();
        let x_first = Tensor::from_f64(DType::F32, vec![1, 3, 5, 4], &x_first);
        let w: Vec<f64> = (0..36).map(|i| f64::from(i % 5) * 0.5 - 1.0).collect();
        let w = Tensor::from_f64(DType::F32, vec![2, 3, 3, 2], &w);
        let want = Conv.eval(&n, &[Some(&x_first), Some(&w)]).expect("conv")[0].clone();
        let x_last = Channels::First.relayout(&x_first).expect("to last");
        assert_eq!(x_last.shape, vec![1, 5, 4, 3]);
        let got = NhwcConv.eval(&n, &[Some(&x_last), Some(&w)]).expect("nhwc")[0].clone();
        assert_eq!(got.shape, Channels::Last.order(want.shape.clone()));
        assert_eq!(Channels::Last.relayout(&got).expect("back"), want);
    }
}
