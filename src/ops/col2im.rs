//! Col2Im (opset 18): the inverse layout of im2col, summing sliding blocks back into an image,
//! over any number of spatial axes.
//!
//! The input is `[N, C·∏block_shape, L]`: column `l` (a block position, row-major over the
//! grid of blocks) holds, for every channel `c` and kernel element `k` (row-major over
//! `block_shape`), the value at row `c·∏block_shape + k`. Block position `l` and kernel element
//! `k` land on image position `l·stride + k·dilation − pad_begin` per axis, as ConvTranspose's
//! input positions and kernel elements do; contributions landing in the padding are dropped and
//! overlapping ones add up. The output is `[N, C, image_shape…]`. Per axis the grid has
//! `(image + pad_begin + pad_end − dilation·(block − 1) − 1) / stride + 1` positions, and `L`
//! must be their product, as the ONNX reference checks.
//!
//! The expansion is ConvTranspose's scatter (`conv_transpose::scatter_target`): a zero fill of
//! Y, then one accumulation map over `(n, c, k…, l…)` adding each input element into Y with a
//! sum write-conflict resolution. It visits each input element once; a gather over the output
//! would visit `strideᵈ` times as many (pixel, kernel) pairs, most failing the divisibility
//! test. Where a contribution can fall in the padding, the write index is clamped and zero is
//! written instead, so no access leaves its container.
//!
//! `image_shape` and `block_shape` must be constants, since the output shape depends on them.

use super::conv_transpose::{masked, scatter_target, Axis};
use super::movement::{to_usize, Param};
use super::support::{arg, element_map, fill_map, input_type, offset, Read};
use super::window::{int_list, multi_indices};
use super::{check_arity, ExpandCtx, OpError, Operator, TensorType};
use crate::ir::tensor::row_major_strides;
use crate::ir::{LibraryNode, Range, SymExpr, TExpr, Tensor, Wcr};

pub static OPS: &[&dyn Operator] = &[&Col2Im];

const OP: &str = "Col2Im";

/// `Y = col2im(X, image_shape, block_shape)`.
pub struct Col2Im;

/// The sizes of one application: batch, channels, elements per block and the spatial axes
/// (the block grid as ConvTranspose's input, the block as its kernel, the image as its output).
struct Geometry {
    batch: SymExpr,
    channels: i64,
    block_size: i64,
    axes: Vec<Axis>,
}

/// A constant 1-D integer input that must be present.
fn required_ints(param: Param, what: &str) -> Result<Vec<i64>, OpError> {
    param
        .ints(OP, what)?
        .ok_or_else(|| OpError::shape(OP, format!("missing input `{what}`")))
}

impl Geometry {
    fn new(
        node: &LibraryNode,
        x: &[SymExpr],
        image: Param,
        block: Param,
    ) -> Result<Geometry, OpError> {
        let [batch, rows, columns] = x else {
            return Err(OpError::shape(
                OP,
                format!(
                    "expects a 3-D input [N, C·∏block_shape, L], got rank {}",
                    x.len()
                ),
            ));
        };
        let image = required_ints(image, "image_shape")?;
        let block = required_ints(block, "block_shape")?;
        let rank = image.len();
        if rank == 0 || block.len() != rank {
            return Err(OpError::shape(
                OP,
                format!(
                    "image_shape has {rank} entries and block_shape {}; they need the same \
                     positive number, one per spatial axis",
                    block.len()
                ),
            ));
        }
        if let Some(bad) = image.iter().chain(&block).find(|v| **v < 1) {
            return Err(OpError::shape(
                OP,
                format!(
                    "image_shape {image:?} and block_shape {block:?} must be positive, not {bad}"
                ),
            ));
        }
        let strides = int_list(OP, node, "strides", rank, 1, 1)?;
        let dilations = int_list(OP, node, "dilations", rank, 1, 1)?;
        let pads = int_list(OP, node, "pads", 2 * rank, 0, 0)?;
        let block_size = block
            .iter()
            .try_fold(1i64, |acc, &b| acc.checked_mul(b))
            .ok_or_else(|| OpError::shape(OP, format!("block_shape {block:?} is too large")))?;
        let rows = rows
            .as_int()
            .ok_or_else(|| OpError::symbolic(OP, "the extent of dimension 1", rows))?;
        if rows % block_size != 0 {
            return Err(OpError::shape(
                OP,
                format!("dimension 1 ({rows}) is not a multiple of ∏block_shape = {block_size}"),
            ));
        }
        let mut axes = Vec::with_capacity(rank);
        let mut grid = 1i64;
        for d in 0..rank {
            let span = dilations[d] * (block[d] - 1) + 1;
            let room = image[d] + pads[d] + pads[d + rank] - span;
            if room < 0 {
                return Err(OpError::shape(
                    OP,
                    format!(
                        "spatial axis {d}: a block spanning {span} does not fit the padded \
                         image extent {}",
                        image[d] + pads[d] + pads[d + rank]
                    ),
                ));
            }
            let positions = room / strides[d] + 1;
            grid = grid.saturating_mul(positions);
            axes.push(Axis {
                input: SymExpr::Int(positions),
                kernel: SymExpr::Int(block[d]),
                stride: strides[d],
                dilation: dilations[d],
                pad_begin: SymExpr::Int(pads[d]),
                output: SymExpr::Int(image[d]),
            });
        }
        let columns = columns
            .as_int()
            .ok_or_else(|| OpError::symbolic(OP, "the extent of dimension 2", columns))?;
        if columns != grid {
            return Err(OpError::shape(
                OP,
                format!("dimension 2 has {columns} blocks, but the geometry gives {grid}"),
            ));
        }
        Ok(Geometry {
            batch: batch.clone(),
            channels: rows / block_size,
            block_size,
            axes,
        })
    }

    fn output_shape(&self) -> Vec<SymExpr> {
        let mut s = vec![self.batch.clone(), SymExpr::Int(self.channels)];
        s.extend(self.axes.iter().map(|a| a.output.clone()));
        s
    }

    /// Per axis, the extents of (block grid, block, image), as numbers.
    fn extents(&self) -> [Vec<usize>; 3] {
        let of = |f: fn(&Axis) -> &SymExpr| {
            (self.axes.iter())
                .map(|a| to_usize(f(a).as_int().unwrap_or(0)))
                .collect()
        };
        [of(|a| &a.input), of(|a| &a.kernel), of(|a| &a.output)]
    }
}

impl Operator for Col2Im {
    fn name(&self) -> &'static str {
        OP
    }

    fn input_count(&self) -> (usize, usize) {
        (3, 3)
    }

    fn infer(
        &self,
        node: &LibraryNode,
        inputs: &[Option<TensorType>],
        consts: &[Option<&Tensor>],
    ) -> Result<Vec<TensorType>, OpError> {
        check_arity(self, inputs.len())?;
        let x = input_type(OP, inputs, 0)?;
        let param = |i| Param::of_infer(inputs, consts, i);
        let geo = Geometry::new(node, &x.shape, param(1), param(2))?;
        Ok(vec![TensorType::new(x.dtype, geo.output_shape())])
    }

    /// The definition's loops with explicit range tests, accumulating in `f64`.
    fn eval(&self, node: &LibraryNode, inputs: &[Option<&Tensor>]) -> Result<Vec<Tensor>, OpError> {
        let x = arg(OP, inputs, 0)?;
        let shape = super::support::sym_shape(&x.shape);
        let param = |i| Param::of_eval(inputs, i);
        let geo = Geometry::new(node, &shape, param(1), param(2))?;
        let [grid, block, image] = geo.extents();
        let (channels, block_size) = (to_usize(geo.channels), to_usize(geo.block_size));
        let mut out_shape = vec![x.shape[0], channels];
        out_shape.extend(&image);
        let (xs, ys) = (x.strides(), row_major_strides(&out_shape));
        let mut y = vec![0.0; out_shape.iter().product()];
        for n in 0..x.shape[0] {
            for c in 0..channels {
                for (kf, k) in multi_indices(&block).enumerate() {
                    let row = n * xs[0] + (c * block_size + kf) * xs[1];
                    'block: for (lf, l) in multi_indices(&grid).enumerate() {
                        let mut at = Vec::with_capacity(l.len());
                        for (d, a) in geo.axes.iter().enumerate() {
                            let pad = a.pad_begin.as_int().unwrap_or(0);
                            let p = (l[d] as i64) * a.stride + (k[d] as i64) * a.dilation - pad;
                            match usize::try_from(p) {
                                Ok(p) if p < image[d] => at.push(p),
                                _ => continue 'block,
                            }
                        }
                        let e = n * ys[0] + c * ys[1] + offset(&at, &ys[2..]);
                        y[e] += x.get_f64(row + lf * xs[2]);
                    }
                }
            }
        }
        Ok(vec![Tensor::from_f64(x.dtype(), out_shape, &y)])
    }

    fn expand(&self, _implementation: &str, ctx: &mut ExpandCtx) -> Result<(), OpError> {
        let (x, xd) = ctx.input(0)?.clone();
        let (y, yd) = ctx.output(0)?.clone();
        let geo = Geometry::new(
            ctx.node,
            &xd.shape,
            Param::of_expand(ctx, 1),
            Param::of_expand(ctx, 2),
        )?;
        let label = ctx.label.clone();
        fill_map(ctx.b, &format!("{label}_init"), &y, &yd.shape, 0.0);

        let [grid, block, _] = geo.extents();
        let rank = geo.axes.len();
        let mut params: Vec<(String, Range)> = vec![
            ("n".into(), Range::upto(geo.batch.clone())),
            ("c".into(), Range::upto(geo.channels)),
        ];
        let ks: Vec<SymExpr> = (0..rank).map(|d| SymExpr::sym(format!("k{d}"))).collect();
        let ls: Vec<SymExpr> = (0..rank).map(|d| SymExpr::sym(format!("l{d}"))).collect();
        for (d, a) in geo.axes.iter().enumerate() {
            params.push((format!("k{d}"), Range::upto(a.kernel.clone())));
        }
        for (d, a) in geo.axes.iter().enumerate() {
            params.push((format!("l{d}"), Range::upto(a.input.clone())));
        }
        // Row-major positions within the block and within the grid: affine in the parameters.
        let flat = |syms: &[SymExpr], extents: &[usize]| {
            let strides = row_major_strides(extents);
            (syms.iter().zip(strides))
                .fold(SymExpr::Int(0), |acc, (s, st)| acc + s * (st as i64))
                .simplify()
        };
        let row = (SymExpr::sym("c") * geo.block_size + flat(&ks, &block)).simplify();
        let x_idx = vec![SymExpr::sym("n"), row, flat(&ls, &grid)];
        let (target, inside) = scatter_target(&geo.axes, &ls, &ks);
        let y_idx = [SymExpr::sym("n"), SymExpr::sym("c")]
            .into_iter()
            .chain(target)
            .collect();
        let reads = vec![Read::new("x", &x, x_idx)];
        let value = masked(TExpr::input("x"), inside);
        let acc = format!("{label}_acc");
        element_map(
            ctx.b,
            &acc,
            &params,
            reads,
            (&y, y_idx),
            Some(Wcr::Sum),
            value,
        );
        Ok(())
    }

    /// One addition per input element.
    fn flops(&self, _: &LibraryNode, inputs: &[Option<TensorType>], _: &[TensorType]) -> u64 {
        match inputs.first() {
            Some(Some(x)) => x
                .static_shape()
                .map_or(0, |s| s.iter().product::<usize>() as u64),
            _ => 0,
        }
    }
}
