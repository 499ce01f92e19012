//! AffineGrid: the sampling grid of an affine transform, 2-D (`theta [N, 2, 3]`, `size [N, C, H,
//! W]`, grid `[N, H, W, 2]`) or 3-D (`theta [N, 3, 4]`, `size [N, C, D, H, W]`, grid `[N, D, H, W,
//! 3]`).
//!
//! `grid[n, …, j] = Σ_i theta[n, j, i]·p_i + theta[n, j, r]` where `p = (x, y[, z])` are the
//! normalised coordinates of the output position, x along the last (W) axis: `−1 + 2i/(n − 1)`
//! with `align_corners` (the centres of the corner pixels at ±1; a single position sits at −1,
//! as ONNX's reference puts it), else `−1 + (2i + 1)/n` (pixel centres inside `[−1, 1]`). `size`
//! decides the output shape, so it must be a constant.
//!
//! The expansion is one map over the grid whose tasklet computes the coordinates from the
//! indices and the `r + 1` products with the theta row.

use super::movement::Param;
use super::support::{arg, element_map, input_type, params_over, require_float, Read};
use super::{check_arity, ExpandCtx, OpError, Operator, TensorType};
use crate::ir::{BinOp, LibraryNode, SymExpr, TExpr, Tensor};

pub static OPS: &[&dyn Operator] = &[&AffineGrid];

/// `AffineGrid(theta, size)`.
pub struct AffineGrid;

const NAME: &str = "AffineGrid";

/// The spatial extents (outermost first) and `align_corners`.
struct Plan {
    spatial: Vec<usize>,
    align: bool,
    y_shape: Vec<SymExpr>,
}

/// The normalised coordinate of position `i` of `n` as `scale·i + offset`.
fn coordinate(n: usize, align: bool) -> (f64, f64) {
    let n = n as f64;
    match (align, n > 1.0) {
        (true, true) => (2.0 / (n - 1.0), -1.0),
        (true, false) => (0.0, -1.0),
        (false, _) => (2.0 / n, 1.0 / n - 1.0),
    }
}

impl AffineGrid {
    fn plan(node: &LibraryNode, theta: &TensorType, size: Param) -> Result<Plan, OpError> {
        require_float(NAME, theta)?;
        let size = size
            .ints(NAME, "size")?
            .ok_or_else(|| OpError::shape(NAME, "missing input 1 (size)"))?;
        let r = match size.len() {
            4 => 2,
            5 => 3,
            n => {
                return Err(OpError::unsupported(
                    NAME,
                    format!("`size` must have 4 (2-D) or 5 (3-D) values, got {n}"),
                ))
            }
        };
        if let Some(bad) = size.iter().find(|d| **d < 1) {
            return Err(OpError::shape(
                NAME,
                format!("`size` {size:?} has extent {bad}"),
            ));
        }
        let want = [SymExpr::Int(size[0]), SymExpr::Int(r), SymExpr::Int(r + 1)];
        if theta.shape.len() != 3
            || theta
                .shape
                .iter()
                .zip(&want)
                .any(|(a, b)| (a - b).simplify() != SymExpr::Int(0))
        {
            return Err(OpError::shape(
                NAME,
                format!(
                    "theta has shape {:?}, expected {want:?} for size {size:?}",
                    theta.shape
                ),
            ));
        }
        let align = super::support::flag(NAME, node, "align_corners", false)?;
        let spatial: Vec<usize> = size[2..].iter().map(|&d| d as usize).collect();
        let mut y_shape = vec![SymExpr::Int(size[0])];
        y_shape.extend(spatial.iter().map(|&d| SymExpr::from(d)));
        y_shape.push(SymExpr::Int(r));
        Ok(Plan {
            spatial,
            align,
            y_shape,
        })
    }
}

impl Operator for AffineGrid {
    fn name(&self) -> &'static str {
        NAME
    }

    fn input_count(&self) -> (usize, usize) {
        (2, 2)
    }

    fn infer(
        &self,
        node: &LibraryNode,
        inputs: &[Option<TensorType>],
        consts: &[Option<&Tensor>],
    ) -> Result<Vec<TensorType>, OpError> {
        check_arity(self, inputs.len())?;
        let theta = input_type(NAME, inputs, 0)?;
        let plan = Self::plan(node, theta, Param::of_infer(inputs, consts, 1))?;
        Ok(vec![TensorType::new(theta.dtype, plan.y_shape)])
    }

    fn eval(&self, node: &LibraryNode, inputs: &[Option<&Tensor>]) -> Result<Vec<Tensor>, OpError> {
        let theta = arg(NAME, inputs, 0)?;
        let plan = Self::plan(
            node,
            &super::movement::type_of(theta),
            Param::of_eval(inputs, 1),
        )?;
        let r = plan.spatial.len();
        let coords: Vec<(f64, f64)> = plan
            .spatial
            .iter()
            .map(|&n| coordinate(n, plan.align))
            .collect();
        let mut y = Vec::new();
        for n in 0..theta.shape[0] {
            for at in super::window::multi_indices(&plan.spatial) {
                // p = (x, y[, z]): the innermost axis first, then the homogeneous 1.
                let mut p: Vec<f64> = (0..r)
                    .rev()
                    .map(|d| coords[d].0 * at[d] as f64 + coords[d].1)
                    .collect();
                p.push(1.0);
                for j in 0..r {
                    let row = (n * r + j) * (r + 1);
                    y.push((0..=r).map(|i| theta.get_f64(row + i) * p[i]).sum());
                }
            }
        }
        let shape: Vec<usize> = plan
            .y_shape
            .iter()
            .map(|d| d.as_int().unwrap_or(0) as usize)
            .collect();
        Ok(vec![Tensor::from_f64(theta.dtype(), shape, &y)])
    }

    fn expand(&self, _implementation: &str, ctx: &mut ExpandCtx) -> Result<(), OpError> {
        let (theta, td) = ctx.input(0)?.clone();
        let t_type = TensorType::new(td.dtype, td.shape.clone());
        let plan = Self::plan(ctx.node, &t_type, Param::of_expand(ctx, 1))?;
        let (y, _) = ctx.output(0)?.clone();
        let r = plan.spatial.len();
        let (params, idx) = params_over("i", &plan.y_shape);
        let conns: Vec<String> = (0..=r).map(|i| format!("t{i}")).collect();
        let reads = (0..=r)
            .map(|i| {
                Read::new(
                    &conns[i],
                    &theta,
                    vec![idx[0].clone(), idx[r + 1].clone(), SymExpr::Int(i as i64)],
                )
            })
            .collect();
        let mut value = TExpr::input(&conns[r]);
        for (i, conn) in conns[..r].iter().enumerate() {
            // Coordinate i runs along spatial axis r − 1 − i (x is the innermost).
            let d = r - 1 - i;
            let (scale, offset) = coordinate(plan.spatial[d], plan.align);
            let p = TExpr::binary(
                BinOp::Add,
                TExpr::binary(
                    BinOp::Mul,
                    TExpr::Index(idx[d + 1].clone()),
                    TExpr::Const(scale),
                ),
                TExpr::Const(offset),
            );
            let term = TExpr::binary(BinOp::Mul, TExpr::input(conn), p);
            value = TExpr::binary(BinOp::Add, value, term);
        }
        let label = ctx.label.clone();
        element_map(ctx.b, &label, &params, reads, (&y, idx), None, value);
        Ok(())
    }
}
