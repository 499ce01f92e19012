//! Mean: the elementwise average of any number of inputs, with multidirectional broadcasting.
//!
//! The reference sums the broadcast operands in `f64` and divides; the expansion is one
//! pointwise map whose tasklet adds the operands and multiplies by `1/n`.

use super::broadcast::{broadcast_concrete, broadcast_shapes, source_index, source_offsets};
use super::support::{arg, element_map, input_type, params_over, require_float, same_dtype, Read};
use super::{check_arity, ExpandCtx, OpError, Operator, TensorType};
use crate::ir::{BinOp, LibraryNode, SymExpr, TExpr, Tensor};

pub static OPS: &[&dyn Operator] = &[&Mean];

const NAME: &str = "Mean";

/// `Mean(data_0, data_1, …)`.
pub struct Mean;

impl Operator for Mean {
    fn name(&self) -> &'static str {
        NAME
    }

    /// ONNX allows up to 2³¹−1 inputs; programs never come close.
    fn input_count(&self) -> (usize, usize) {
        (1, 1024)
    }

    fn infer(
        &self,
        _node: &LibraryNode,
        inputs: &[Option<TensorType>],
        _consts: &[Option<&Tensor>],
    ) -> Result<Vec<TensorType>, OpError> {
        check_arity(self, inputs.len())?;
        let types = (0..inputs.len())
            .map(|i| input_type(NAME, inputs, i))
            .collect::<Result<Vec<_>, _>>()?;
        require_float(NAME, types[0])?;
        for (i, t) in types.iter().enumerate().skip(1) {
            same_dtype(NAME, types[0], t, i)?;
        }
        let shapes: Vec<&[SymExpr]> = types.iter().map(|t| t.shape.as_slice()).collect();
        let shape = broadcast_shapes(NAME, &shapes)?;
        Ok(vec![TensorType::new(types[0].dtype, shape)])
    }

    fn eval(
        &self,
        _node: &LibraryNode,
        inputs: &[Option<&Tensor>],
    ) -> Result<Vec<Tensor>, OpError> {
        check_arity(self, inputs.len())?;
        let args = (0..inputs.len())
            .map(|i| arg(NAME, inputs, i))
            .collect::<Result<Vec<_>, _>>()?;
        let shapes: Vec<&[usize]> = args.iter().map(|t| t.shape.as_slice()).collect();
        let shape = broadcast_concrete(NAME, &shapes)?;
        let mut sums = vec![0.0; shape.iter().product()];
        for t in &args {
            for (s, src) in sums.iter_mut().zip(source_offsets(&t.shape, &shape)) {
                *s += t.get_f64(src);
            }
        }
        let n = args.len() as f64;
        let values: Vec<f64> = sums.iter().map(|s| s / n).collect();
        Ok(vec![Tensor::from_f64(args[0].dtype(), shape, &values)])
    }

    fn expand(&self, _implementation: &str, ctx: &mut ExpandCtx) -> Result<(), OpError> {
        let (y, yd) = ctx.output(0)?.clone();
        let (params, idx) = params_over("i", &yd.shape);
        let operands = (0..ctx.inputs.len())
            .map(|i| ctx.input(i).cloned())
            .collect::<Result<Vec<_>, _>>()?;
        let conns: Vec<String> = (0..operands.len()).map(|i| format!("a{i}")).collect();
        let reads = operands
            .iter()
            .zip(&conns)
            .map(|((name, desc), conn)| Read::new(conn, name, source_index(&desc.shape, &idx)))
            .collect();
        let total = conns[1..].iter().fold(TExpr::input(&conns[0]), |acc, c| {
            TExpr::binary(BinOp::Add, acc, TExpr::input(c))
        });
        let value = TExpr::binary(BinOp::Mul, total, TExpr::Const(1.0 / operands.len() as f64));
        element_map(ctx.b, &ctx.label, &params, reads, (&y, idx), None, value);
        Ok(())
    }

    /// `n − 1` additions and one multiplication per output element.
    fn flops(&self, _: &LibraryNode, inputs: &[Option<TensorType>], outputs: &[TensorType]) -> u64 {
        outputs
            .first()
            .and_then(TensorType::static_shape)
            .map_or(0, |s| {
                s.iter().product::<usize>() as u64 * inputs.len() as u64
            })
    }
}
