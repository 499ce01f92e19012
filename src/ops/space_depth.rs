//! DepthToSpace and SpaceToDepth: rearranging `blocksize × blocksize` blocks of an NCHW tensor
//! between the channel axis and the two spatial axes.
//!
//! DepthToSpace turns `[N, C·b², H, W]` into `[N, C, H·b, W·b]`: output element
//! `(n, c, h·b + i, w·b + j)` comes from channel `(i·b + j)·C + c` (mode `DCR`, the default) or
//! `c·b² + i·b + j` (mode `CRD`). SpaceToDepth is the inverse, `[N, C, H·b, W·b]` into
//! `[N, C·b², H, W]`, with the same two channel orders (`DCR` the default; `mode` is an
//! attribute from opset 28 on).
//!
//! The expansion is one copy map over the six indices `(n, c, h, i, w, j)`, where every index
//! is affine: no division or remainder appears, so the map stays analysable.

use super::support::{arg, element_map, input_type, offset, types_of, Read};
use super::window::multi_indices;
use super::{check_arity, ExpandCtx, OpError, Operator, TensorType};
use crate::ir::tensor::row_major_strides;
use crate::ir::{LibraryNode, Range, SymExpr, TExpr, Tensor};

pub static OPS: &[&dyn Operator] = &[&DEPTH_TO_SPACE, &SPACE_TO_DEPTH];

static DEPTH_TO_SPACE: Rearrange = Rearrange {
    name: "DepthToSpace",
    to_space: true,
};
static SPACE_TO_DEPTH: Rearrange = Rearrange {
    name: "SpaceToDepth",
    to_space: false,
};

/// DepthToSpace (`to_space`) or SpaceToDepth.
pub struct Rearrange {
    name: &'static str,
    to_space: bool,
}

/// The validated attributes: the block size and whether channels are ordered column, row,
/// depth (`CRD`) rather than depth, column, row (`DCR`).
struct Blocks {
    b: i64,
    crd: bool,
}

impl Rearrange {
    fn blocks(&self, node: &LibraryNode) -> Result<Blocks, OpError> {
        let b = node
            .int("blocksize")
            .ok_or_else(|| OpError::attr(self.name, "blocksize", "is required"))?;
        if b < 1 {
            return Err(OpError::attr(
                self.name,
                "blocksize",
                format!("must be positive, got {b}"),
            ));
        }
        let crd = match node.str("mode").unwrap_or("DCR") {
            "DCR" => false,
            "CRD" => true,
            other => {
                return Err(OpError::attr(
                    self.name,
                    "mode",
                    format!("must be DCR or CRD, got {other:?}"),
                ))
            }
        };
        Ok(Blocks { b, crd })
    }

    /// The `[N, C, H, W]` extents of the space side (the output of DepthToSpace, the input of
    /// SpaceToDepth) from the input's shape.
    fn space_shape(&self, x: &[SymExpr], b: i64) -> Result<[SymExpr; 4], OpError> {
        let [n, c, h, w] = x else {
            return Err(OpError::shape(
                self.name,
                format!("expects a 4-D input, got rank {}", x.len()),
            ));
        };
        let bb = SymExpr::Int(b);
        if !self.to_space {
            for (d, e) in [(2, h), (3, w)] {
                if e.as_int().is_some_and(|v| v % b != 0) {
                    return Err(OpError::shape(
                        self.name,
                        format!("dimension {d} ({e}) is not a multiple of the block size {b}"),
                    ));
                }
            }
            return Ok([n.clone(), c.clone(), h.clone(), w.clone()]);
        }
        let squares = b * b;
        let channels = match c.as_int() {
            Some(v) if v % squares != 0 => {
                return Err(OpError::shape(
                    self.name,
                    format!("{v} channels are not a multiple of blocksize² = {squares}"),
                ))
            }
            Some(v) => SymExpr::Int(v / squares),
            None => c.clone().floor_div(SymExpr::Int(squares)),
        };
        let up = |e: &SymExpr| (e.clone() * bb.clone()).simplify();
        Ok([n.clone(), channels, up(h), up(w)])
    }

    /// The depth side's channel for space channel `c` and in-block offsets `i`, `j`.
    fn depth_channel(blocks: &Blocks, channels: SymExpr, [c, i, j]: [SymExpr; 3]) -> SymExpr {
        let b = SymExpr::Int(blocks.b);
        let block = i * b.clone() + j;
        let ch = if blocks.crd {
            c * b.clone() * b + block
        } else {
            block * channels + c
        };
        ch.simplify()
    }
}

impl Operator for Rearrange {
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
        _consts: &[Option<&Tensor>],
    ) -> Result<Vec<TensorType>, OpError> {
        check_arity(self, inputs.len())?;
        let x = input_type(self.name, inputs, 0)?;
        let blocks = self.blocks(node)?;
        let [n, c, h, w] = self.space_shape(&x.shape, blocks.b)?;
        let shape = if self.to_space {
            vec![n, c, h, w]
        } else {
            let b = SymExpr::Int(blocks.b);
            let down = |e: SymExpr| e.floor_div(b.clone());
            vec![
                n,
                (c * SymExpr::Int(blocks.b * blocks.b)).simplify(),
                down(h),
                down(w),
            ]
        };
        Ok(vec![TensorType::new(x.dtype, shape)])
    }

    fn eval(&self, node: &LibraryNode, inputs: &[Option<&Tensor>]) -> Result<Vec<Tensor>, OpError> {
        let x = arg(self.name, inputs, 0)?;
        let out = self.infer(node, &types_of(inputs), &[])?.remove(0);
        let shape = (out.static_shape())
            .ok_or_else(|| OpError::shape(self.name, "the output shape is not static"))?;
        let blocks = self.blocks(node)?;
        let b = usize::try_from(blocks.b)
            .map_err(|_| OpError::attr(self.name, "blocksize", "is out of range"))?;
        let (space, depth) = match self.to_space {
            true => (&shape, &x.shape),
            false => (&x.shape, &shape),
        };
        let channels = space[1];
        let (space_strides, depth_strides) = (row_major_strides(space), row_major_strides(depth));
        let mut y = Tensor::zeros(x.dtype(), shape.clone());
        for at in multi_indices(&[depth[0], channels, depth[2], b, depth[3], b]) {
            let &[n, c, h, i, w, j] = at.as_slice() else {
                return Err(OpError::shape(self.name, "an index of the wrong rank"));
            };
            let ch = match blocks.crd {
                true => c * b * b + i * b + j,
                false => (i * b + j) * channels + c,
            };
            let s = offset(&[n, c, h * b + i, w * b + j], &space_strides);
            let d = offset(&[n, ch, h, w], &depth_strides);
            let (from, to) = if self.to_space { (d, s) } else { (s, d) };
            y.set_f64(to, x.get_f64(from));
        }
        Ok(vec![y])
    }

    fn expand(&self, _implementation: &str, ctx: &mut ExpandCtx) -> Result<(), OpError> {
        let (x, xd) = ctx.input(0)?.clone();
        let (y, yd) = ctx.output(0)?.clone();
        let blocks = self.blocks(ctx.node)?;
        let space = if self.to_space { &yd.shape } else { &xd.shape };
        let depth = if self.to_space { &xd.shape } else { &yd.shape };
        let b = SymExpr::Int(blocks.b);
        let names = ["n", "c", "h", "i", "w", "j"];
        let extents = [
            depth[0].clone(),
            space[1].clone(),
            depth[2].clone(),
            b.clone(),
            depth[3].clone(),
            b.clone(),
        ];
        let params: Vec<(String, Range)> = names
            .iter()
            .zip(extents)
            .map(|(n, e)| (n.to_string(), Range::upto(e)))
            .collect();
        let [n, c, h, i, w, j] = names.map(SymExpr::sym);
        let ch = Self::depth_channel(&blocks, space[1].clone(), [c.clone(), i.clone(), j.clone()]);
        let space_idx = vec![
            n.clone(),
            c,
            (h.clone() * b.clone() + i).simplify(),
            (w.clone() * b + j).simplify(),
        ];
        let depth_idx = vec![n, ch, h, w];
        let (src, dst) = match self.to_space {
            true => (depth_idx, space_idx),
            false => (space_idx, depth_idx),
        };
        let reads = vec![Read::new("x", &x, src)];
        let value = TExpr::input("x");
        element_map(ctx.b, &ctx.label, &params, reads, (&y, dst), None, value);
        Ok(())
    }

    fn flops(&self, _: &LibraryNode, _: &[Option<TensorType>], _: &[TensorType]) -> u64 {
        0
    }
}
