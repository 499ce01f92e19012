//! TopK: the `k` largest (or smallest) elements along an axis and their positions.
//!
//! The expansion ranks instead of selecting repeatedly: element `p` of a line gets the rank
//! `#{j : x_j beats x_p}`, where `x_j` beats `x_p` when it is strictly larger (smaller) or equal
//! with a lower position — the ONNX tie rule, which makes the ranks a permutation of `0..n`.
//! Output position `t` then gathers the one element of rank `t` as a sum of
//! `select(rank_j == t, x_j, 0)` (and of `j` for the indices). That is `O(n²)` work per line,
//! like selection, but every map is a plain reduction. Results are always sorted, which ONNX
//! allows for `sorted = 0` as well. NaN inputs have no defined order and are not supported.

use super::index::lookup_map;
use super::support::{arg, fill_map, input_type, params_over, resolve_axis, unravel};
use super::{check_arity, ExpandCtx, OpError, Operator, TensorType};
use crate::ir::build::{In, Out};
use crate::ir::{BinOp, DType, LibraryNode, Range, Schedule, Subset, SymExpr, TExpr, Tensor, Wcr};

pub static OPS: &[&dyn Operator] = &[&TopK];

/// `TopK(X, K)` with attributes `axis` (default −1), `largest` (default 1), `sorted` (default 1).
pub struct TopK;

impl TopK {
    fn axis(node: &LibraryNode, rank: usize) -> Result<usize, OpError> {
        if rank == 0 {
            return Err(OpError::shape("TopK", "input must have rank at least 1"));
        }
        resolve_axis("TopK", "axis", node.int("axis").unwrap_or(-1), rank, false)
    }

    fn largest(node: &LibraryNode) -> bool {
        node.int("largest").unwrap_or(1) != 0
    }

    /// `k` from the constant input, checked against the axis extent when it is known.
    fn k(k: Option<&Tensor>, extent: Option<i64>) -> Result<usize, OpError> {
        let t = k.ok_or_else(|| OpError::unsupported("TopK", "K (input 1) must be a constant"))?;
        let [v] = t.to_i64_vec()[..] else {
            return Err(OpError::shape(
                "TopK",
                format!("K must hold one value, got shape {:?}", t.shape),
            ));
        };
        if v < 0 || extent.is_some_and(|n| v > n) {
            let n = extent.map_or("?".to_string(), |n| n.to_string());
            return Err(OpError::shape(
                "TopK",
                format!("K = {v} is outside 0..={n}, the extent of the axis"),
            ));
        }
        usize::try_from(v).map_err(|_| OpError::shape("TopK", "K does not fit"))
    }

    fn shape(x: &TensorType, axis: usize, k: usize) -> Vec<SymExpr> {
        let mut s = x.shape.clone();
        s[axis] = SymExpr::from(k);
        s
    }
}

/// `(x_j beats x_p)` over connectors `xj`, `xp` and positions `j`, `p`.
fn beats(largest: bool, j: SymExpr, p: SymExpr) -> TExpr {
    let (xj, xp) = (TExpr::input("xj"), TExpr::input("xp"));
    let strictly = if largest { BinOp::Gt } else { BinOp::Lt };
    TExpr::binary(
        BinOp::Or,
        TExpr::binary(strictly, xj.clone(), xp.clone()),
        TExpr::binary(
            BinOp::And,
            TExpr::binary(BinOp::Eq, xj, xp),
            TExpr::binary(BinOp::Lt, TExpr::Index(j), TExpr::Index(p)),
        ),
    )
}

impl Operator for TopK {
    fn name(&self) -> &'static str {
        "TopK"
    }

    fn input_count(&self) -> (usize, usize) {
        (2, 2)
    }

    fn output_count(&self) -> usize {
        2
    }

    fn infer(
        &self,
        node: &LibraryNode,
        inputs: &[Option<TensorType>],
        consts: &[Option<&Tensor>],
    ) -> Result<Vec<TensorType>, OpError> {
        check_arity(self, inputs.len())?;
        let x = input_type("TopK", inputs, 0)?;
        let kt = input_type("TopK", inputs, 1)?;
        if kt.dtype != DType::I64 {
            return Err(OpError::shape(
                "TopK",
                format!("K must be int64, got {}", kt.dtype),
            ));
        }
        if x.dtype == DType::Bool {
            return Err(OpError::shape("TopK", "expects a numeric input, got bool"));
        }
        let axis = Self::axis(node, x.shape.len())?;
        let k = Self::k(consts.get(1).copied().flatten(), x.shape[axis].as_int())?;
        let shape = Self::shape(x, axis, k);
        Ok(vec![
            TensorType::new(x.dtype, shape.clone()),
            TensorType::new(DType::I64, shape),
        ])
    }

    fn eval(&self, node: &LibraryNode, inputs: &[Option<&Tensor>]) -> Result<Vec<Tensor>, OpError> {
        let x = arg("TopK", inputs, 0)?;
        let axis = Self::axis(node, x.shape.len())?;
        let n = x.shape[axis];
        let k = Self::k(Some(arg("TopK", inputs, 1)?), i64::try_from(n).ok())?;
        let largest = Self::largest(node);
        let mut shape = x.shape.clone();
        shape[axis] = k;
        let mut values = Tensor::zeros(x.dtype(), shape.clone());
        let mut indices = Tensor::zeros(DType::I64, shape.clone());
        let strides = x.strides();
        let out_strides = values.strides();
        for e in 0..x.len() {
            let base = unravel(e, &x.shape);
            if base[axis] != 0 {
                continue;
            }
            let start: usize = base.iter().zip(&strides).map(|(i, s)| i * s).sum();
            let mut line: Vec<(f64, usize)> = (0..n)
                .map(|j| (x.get_f64(start + j * strides[axis]), j))
                .collect();
            // Stable sort by value keeps equal values in position order (the ONNX tie rule).
            line.sort_by(|a, b| {
                let ord = a.0.partial_cmp(&b.0).unwrap_or(std::cmp::Ordering::Equal);
                if largest {
                    ord.reverse()
                } else {
                    ord
                }
            });
            let out_start: usize = base.iter().zip(&out_strides).map(|(i, s)| i * s).sum();
            for (t, (v, j)) in line.into_iter().take(k).enumerate() {
                values.set_f64(out_start + t * out_strides[axis], v);
                indices.set_f64(out_start + t * out_strides[axis], j as f64);
            }
        }
        Ok(vec![values, indices])
    }

    fn expand(&self, _implementation: &str, ctx: &mut ExpandCtx) -> Result<(), OpError> {
        let (x, x_desc) = ctx.input(0)?.clone();
        let (values, v_desc) = ctx.output(0)?.clone();
        let (indices, _) = ctx.output(1)?.clone();
        let axis = Self::axis(ctx.node, x_desc.shape.len())?;
        let largest = Self::largest(ctx.node);
        let n = x_desc.shape[axis].clone();
        let label = ctx.label.clone();

        let rank = ctx
            .b
            .transient(&format!("{label}_rank"), DType::I64, x_desc.shape.clone());
        fill_map(
            ctx.b,
            &format!("{label}_rank_init"),
            &rank,
            &x_desc.shape,
            0.0,
        );
        let (mut params, idx) = params_over("i", &x_desc.shape);
        params.push(("j".to_string(), Range::upto(n.clone())));
        let mut at_j = idx.clone();
        at_j[axis] = SymExpr::sym("j");
        let p = idx[axis].clone();
        lookup_map(
            ctx.b,
            &format!("{label}_rank"),
            &params,
            vec![
                In("xj", &x, Subset::element(at_j.clone())),
                In("xp", &x, Subset::element(idx.clone())),
            ],
            (&rank, idx.clone()),
            Some(Wcr::Sum),
            TExpr::select(
                beats(largest, SymExpr::sym("j"), p),
                TExpr::Const(1.0),
                TExpr::Const(0.0),
            ),
        );

        fill_map(
            ctx.b,
            &format!("{label}_values_init"),
            &values,
            &v_desc.shape,
            0.0,
        );
        fill_map(
            ctx.b,
            &format!("{label}_indices_init"),
            &indices,
            &v_desc.shape,
            0.0,
        );
        let (mut params, out_idx) = params_over("i", &v_desc.shape);
        params.push(("j".to_string(), Range::upto(n)));
        let mut src = out_idx.clone();
        src[axis] = SymExpr::sym("j");
        let hit = TExpr::binary(
            BinOp::Eq,
            TExpr::input("r"),
            TExpr::Index(out_idx[axis].clone()),
        );
        let pick = |v: TExpr| TExpr::select(hit.clone(), v, TExpr::Const(0.0));
        let params_ref = params
            .iter()
            .map(|(n, r)| (n.as_str(), r.clone()))
            .collect();
        ctx.b.map(
            &format!("{label}_select"),
            params_ref,
            Schedule::Sequential,
            |b| {
                b.tasklet(
                    "select",
                    vec![
                        In("x", &x, Subset::element(src.clone())),
                        In("r", &rank, Subset::element(src.clone())),
                    ],
                    vec![
                        Out(
                            "v",
                            &values,
                            Subset::element(out_idx.clone()),
                            Some(Wcr::Sum),
                            pick(TExpr::input("x")),
                        ),
                        Out(
                            "i",
                            &indices,
                            Subset::element(out_idx.clone()),
                            Some(Wcr::Sum),
                            pick(TExpr::Index(SymExpr::sym("j"))),
                        ),
                    ],
                );
            },
        );
        Ok(())
    }

    fn flops(&self, node: &LibraryNode, inputs: &[Option<TensorType>], _: &[TensorType]) -> u64 {
        // Ranking compares every pair of elements of a line.
        let Some(s) = inputs
            .first()
            .and_then(|x| x.as_ref())
            .and_then(TensorType::static_shape)
        else {
            return 0;
        };
        let n = Self::axis(node, s.len()).map_or(0, |a| s[a]);
        (s.iter().product::<usize>() * n) as u64
    }
}
