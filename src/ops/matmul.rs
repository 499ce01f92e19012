//! Matrix products: MatMul (numpy semantics, batched and broadcast) and Gemm.
//!
//! Both expand to an initialisation map (zero, or Gemm's `β·C`) followed by one accumulation map
//! over the output indices and the inner index `k`, whose tasklet adds a product with
//! `Wcr::Sum`: the canonical form that tiling and parallelisation transformations expect.

use super::broadcast::{
    broadcast_concrete, broadcast_shapes, check_unidirectional, source_index, source_offsets,
};
use super::support::{
    arg, element_map, fill_map, input_type, opt_arg, params_over, same_dtype, Read,
};
use super::{check_arity, ExpandCtx, OpError, Operator, TensorType};
use crate::ir::build::ScopeBuilder;
use crate::ir::tensor::row_major_strides;
use crate::ir::{BinOp, DataDesc, LibraryNode, Range, SymExpr, TExpr, Tensor, Wcr};

pub static OPS: &[&dyn Operator] = &[&MatMul, &Gemm];

/// The dimensions of a (batched) matrix product. `m` / `n` are `None` when the operand was a
/// vector, whose promoted dimension is removed from the output.
struct Dims<D> {
    a_batch: Vec<D>,
    b_batch: Vec<D>,
    m: Option<D>,
    k: D,
    n: Option<D>,
}

/// Splits MatMul operand shapes into batch, row, inner and column dimensions.
fn split<D: Clone + PartialEq + std::fmt::Display>(a: &[D], b: &[D]) -> Result<Dims<D>, OpError> {
    let op = "MatMul";
    let (a_batch, m, ka) = match a {
        [] => return Err(OpError::shape(op, "input 0 is a scalar")),
        [k] => (Vec::new(), None, k.clone()),
        [batch @ .., m, k] => (batch.to_vec(), Some(m.clone()), k.clone()),
    };
    let (b_batch, kb, n) = match b {
        [] => return Err(OpError::shape(op, "input 1 is a scalar")),
        [k] => (Vec::new(), k.clone(), None),
        [batch @ .., k, n] => (batch.to_vec(), k.clone(), Some(n.clone())),
    };
    if ka != kb {
        return Err(OpError::shape(
            op,
            format!("inner dimensions {ka} and {kb} differ"),
        ));
    }
    Ok(Dims {
        a_batch,
        b_batch,
        m,
        k: ka,
        n,
    })
}

/// The shape of the product of operands shaped `a` and `b` (batch dimensions broadcast).
pub(super) fn product_shape(
    op: &str,
    a: &[SymExpr],
    b: &[SymExpr],
) -> Result<Vec<SymExpr>, OpError> {
    let d = split(a, b)?;
    let mut shape = broadcast_shapes(op, &[&d.a_batch, &d.b_batch])?;
    shape.extend(d.m);
    shape.extend(d.n);
    Ok(shape)
}

/// The reference product `(A − a₀) · (B − b₀)` of two tensors and per-tensor zero points, in
/// `f64`, and its shape.
pub(super) fn product_values(
    op: &str,
    (a, a0): (&Tensor, f64),
    (b, b0): (&Tensor, f64),
) -> Result<(Vec<f64>, Vec<usize>), OpError> {
    let d = split(&a.shape, &b.shape)?;
    let batch = broadcast_concrete(op, &[&d.a_batch, &d.b_batch])?;
    let (m, n, k) = (d.m.unwrap_or(1), d.n.unwrap_or(1), d.k);
    // Each operand is a stack of matrices; broadcasting picks which matrix a batch reads.
    let a_mats = source_offsets(&d.a_batch, &batch);
    let b_mats = source_offsets(&d.b_batch, &batch);
    let mut out = Vec::with_capacity(a_mats.len() * m * n);
    for (am, bm) in a_mats.iter().zip(&b_mats) {
        let (a_at, b_at) = (am * m * k, bm * k * n);
        for i in 0..m {
            for j in 0..n {
                let acc: f64 = (0..k)
                    .map(|p| {
                        (a.get_f64(a_at + i * k + p) - a0) * (b.get_f64(b_at + p * n + j) - b0)
                    })
                    .sum();
                out.push(acc);
            }
        }
    }
    let mut shape = batch;
    shape.extend(d.m);
    shape.extend(d.n);
    Ok((out, shape))
}

/// One operand of a matrix product in an expansion: its container and shape, and the
/// per-tensor zero point subtracted from each element (a one-element container and its rank),
/// for the quantized products.
pub(super) struct Operand<'a> {
    pub name: &'a str,
    pub shape: Vec<SymExpr>,
    pub zero_point: Option<(&'a str, usize)>,
}

impl Operand<'_> {
    /// The tasklet read of the element at `idx` (connector `conn`, the zero point's `{conn}0`)
    /// and its value.
    fn read(
        &self,
        conn: &'static str,
        zp_conn: &'static str,
        idx: Vec<SymExpr>,
    ) -> (Vec<Read<'_>>, TExpr) {
        let mut reads = vec![Read::new(conn, self.name, idx)];
        let mut value = TExpr::input(conn);
        if let Some((zp, rank)) = self.zero_point {
            reads.push(Read::new(zp_conn, zp, vec![SymExpr::Int(0); rank]));
            value = TExpr::binary(BinOp::Sub, value, TExpr::input(zp_conn));
        }
        (reads, value)
    }
}

/// Appends the product of `[a, b]` into `y` (of `y_shape`): a zero initialisation and one
/// accumulation map over the output indices and the inner index `k`.
pub(super) fn append_product(
    b: &mut ScopeBuilder,
    label: &str,
    [lhs, rhs]: [Operand; 2],
    (y, y_shape): (&str, &[SymExpr]),
) -> Result<(), OpError> {
    let d = split(&lhs.shape, &rhs.shape)?;
    fill_map(b, &format!("{label}_init"), y, y_shape, 0.0);
    let (mut params, idx) = params_over("i", y_shape);
    let nb = y_shape.len() - usize::from(d.m.is_some()) - usize::from(d.n.is_some());
    let k = SymExpr::sym("k");
    let mut a_idx = source_index(&d.a_batch, &idx[..nb]);
    let mut b_idx = source_index(&d.b_batch, &idx[..nb]);
    let mut rest = idx[nb..].iter().cloned();
    if d.m.is_some() {
        a_idx.extend(rest.next());
    }
    a_idx.push(k.clone());
    b_idx.push(k);
    b_idx.extend(rest.next());
    params.push(("k".to_string(), Range::upto(d.k)));
    let (mut reads, av) = lhs.read("a", "a0", a_idx);
    let (b_reads, bv) = rhs.read("b", "b0", b_idx);
    reads.extend(b_reads);
    let value = TExpr::binary(BinOp::Mul, av, bv);
    let dst = (y, idx);
    element_map(
        b,
        &format!("{label}_acc"),
        &params,
        reads,
        dst,
        Some(Wcr::Sum),
        value,
    );
    Ok(())
}

/// `Y = A · B` with numpy semantics: a 1-D operand is promoted to a matrix and the promoted
/// dimension removed from the result; batch dimensions broadcast.
pub struct MatMul;

impl Operator for MatMul {
    fn name(&self) -> &'static str {
        "MatMul"
    }

    fn input_count(&self) -> (usize, usize) {
        (2, 2)
    }

    fn infer(
        &self,
        _node: &LibraryNode,
        inputs: &[Option<TensorType>],
        _consts: &[Option<&Tensor>],
    ) -> Result<Vec<TensorType>, OpError> {
        check_arity(self, inputs.len())?;
        let (a, b) = (
            input_type("MatMul", inputs, 0)?,
            input_type("MatMul", inputs, 1)?,
        );
        same_dtype("MatMul", a, b, 1)?;
        let shape = product_shape("MatMul", &a.shape, &b.shape)?;
        Ok(vec![TensorType::new(a.dtype, shape)])
    }

    fn eval(
        &self,
        _node: &LibraryNode,
        inputs: &[Option<&Tensor>],
    ) -> Result<Vec<Tensor>, OpError> {
        let (a, b) = (arg("MatMul", inputs, 0)?, arg("MatMul", inputs, 1)?);
        let (values, shape) = product_values("MatMul", (a, 0.0), (b, 0.0))?;
        Ok(vec![Tensor::from_f64(a.dtype(), shape, &values)])
    }

    fn expand(&self, _implementation: &str, ctx: &mut ExpandCtx) -> Result<(), OpError> {
        let (a, a_desc) = ctx.input(0)?.clone();
        let (b, b_desc) = ctx.input(1)?.clone();
        let (y, y_desc) = ctx.output(0)?.clone();
        let operand = |name, desc: &DataDesc| Operand {
            name,
            shape: desc.shape.clone(),
            zero_point: None,
        };
        append_product(
            ctx.b,
            &ctx.label,
            [operand(&a, &a_desc), operand(&b, &b_desc)],
            (&y, &y_desc.shape),
        )
    }

    fn flops(&self, _: &LibraryNode, inputs: &[Option<TensorType>], outputs: &[TensorType]) -> u64 {
        let k = inputs
            .first()
            .and_then(|a| a.as_ref())
            .and_then(|a| a.shape.last())
            .and_then(SymExpr::as_int);
        let elements = outputs
            .first()
            .and_then(TensorType::static_shape)
            .map(|s| s.iter().product::<usize>() as u64);
        match (k, elements) {
            (Some(k), Some(e)) => 2 * e * u64::try_from(k).unwrap_or(0),
            _ => 0,
        }
    }
}

/// `Y = α·A'·B' + β·C` with `A' = transA ? Aᵀ : A`, `B' = transB ? Bᵀ : B` and `C` broadcast
/// unidirectionally to `M × N`.
pub struct Gemm;

/// Gemm's attributes with their ONNX defaults.
struct GemmAttrs {
    trans_a: bool,
    trans_b: bool,
    alpha: f64,
    beta: f64,
}

impl GemmAttrs {
    fn of(node: &LibraryNode) -> GemmAttrs {
        GemmAttrs {
            trans_a: node.int("transA").unwrap_or(0) != 0,
            trans_b: node.int("transB").unwrap_or(0) != 0,
            alpha: node.float("alpha").unwrap_or(1.0),
            beta: node.float("beta").unwrap_or(1.0),
        }
    }

    /// `(M, K, N)` from the operand shapes, checking ranks and the inner dimension.
    fn mkn<D: Clone + PartialEq + std::fmt::Display>(
        &self,
        a: &[D],
        b: &[D],
    ) -> Result<(D, D, D), OpError> {
        let (Some([a0, a1]), Some([b0, b1])) = (two_d(a), two_d(b)) else {
            return Err(OpError::shape("Gemm", "inputs A and B must be 2-D"));
        };
        let (m, ka) = if self.trans_a { (a1, a0) } else { (a0, a1) };
        let (kb, n) = if self.trans_b { (b1, b0) } else { (b0, b1) };
        if ka != kb {
            return Err(OpError::shape(
                "Gemm",
                format!("inner dimensions {ka} and {kb} differ"),
            ));
        }
        Ok((m.clone(), ka.clone(), n.clone()))
    }
}

fn two_d<D>(s: &[D]) -> Option<[&D; 2]> {
    match s {
        [x, y] => Some([x, y]),
        _ => None,
    }
}

impl Operator for Gemm {
    fn name(&self) -> &'static str {
        "Gemm"
    }

    fn input_count(&self) -> (usize, usize) {
        (2, 3)
    }

    fn infer(
        &self,
        node: &LibraryNode,
        inputs: &[Option<TensorType>],
        _consts: &[Option<&Tensor>],
    ) -> Result<Vec<TensorType>, OpError> {
        check_arity(self, inputs.len())?;
        let (a, b) = (
            input_type("Gemm", inputs, 0)?,
            input_type("Gemm", inputs, 1)?,
        );
        same_dtype("Gemm", a, b, 1)?;
        let (m, _, n) = GemmAttrs::of(node).mkn(&a.shape, &b.shape)?;
        let shape = vec![m, n];
        if let Some(Some(c)) = inputs.get(2) {
            same_dtype("Gemm", a, c, 2)?;
            check_unidirectional("Gemm", "C", &c.shape, &shape)?;
        }
        Ok(vec![TensorType::new(a.dtype, shape)])
    }

    fn eval(&self, node: &LibraryNode, inputs: &[Option<&Tensor>]) -> Result<Vec<Tensor>, OpError> {
        let (a, b) = (arg("Gemm", inputs, 0)?, arg("Gemm", inputs, 1)?);
        let at = GemmAttrs::of(node);
        let (m, k, n) = at.mkn(&a.shape, &b.shape)?;
        let (sa, sb) = (row_major_strides(&a.shape), row_major_strides(&b.shape));
        // Element (i, p) of A' and (p, j) of B', following the transposition flags.
        let a_at = |i: usize, p: usize| match at.trans_a {
            true => a.get_f64(p * sa[0] + i),
            false => a.get_f64(i * sa[0] + p),
        };
        let b_at = |p: usize, j: usize| match at.trans_b {
            true => b.get_f64(j * sb[0] + p),
            false => b.get_f64(p * sb[0] + j),
        };
        let c = opt_arg(inputs, 2);
        let c_src = c.map(|c| source_offsets(&c.shape, &[m, n]));
        let mut out = vec![0.0; m * n];
        for i in 0..m {
            for j in 0..n {
                let dot: f64 = (0..k).map(|p| a_at(i, p) * b_at(p, j)).sum();
                let bias = match (c, &c_src) {
                    (Some(c), Some(src)) => at.beta * c.get_f64(src[i * n + j]),
                    _ => 0.0,
                };
                out[i * n + j] = at.alpha * dot + bias;
            }
        }
        Ok(vec![Tensor::from_f64(a.dtype(), vec![m, n], &out)])
    }

    fn expand(&self, _implementation: &str, ctx: &mut ExpandCtx) -> Result<(), OpError> {
        let at = GemmAttrs::of(ctx.node);
        let (a, a_desc) = ctx.input(0)?.clone();
        let (b, b_desc) = ctx.input(1)?.clone();
        let (y, y_desc) = ctx.output(0)?.clone();
        let (_, k, _) = at.mkn(&a_desc.shape, &b_desc.shape)?;
        let (params, idx) = params_over("i", &y_desc.shape);
        let init = format!("{}_init", ctx.label);
        match ctx.inputs.get(2).cloned().flatten() {
            Some((c, c_desc)) => {
                let reads = vec![Read::new("c", &c, source_index(&c_desc.shape, &idx))];
                let value = scaled(at.beta, TExpr::input("c"));
                element_map(ctx.b, &init, &params, reads, (&y, idx.clone()), None, value);
            }
            None => fill_map(ctx.b, &init, &y, &y_desc.shape, 0.0),
        }
        let ks = SymExpr::sym("k");
        let (i, j) = (idx[0].clone(), idx[1].clone());
        let a_idx = match at.trans_a {
            true => vec![ks.clone(), i],
            false => vec![i, ks.clone()],
        };
        let b_idx = match at.trans_b {
            true => vec![j, ks],
            false => vec![ks, j],
        };
        let mut acc_params = params;
        acc_params.push(("k".to_string(), Range::upto(k)));
        let reads = vec![Read::new("a", &a, a_idx), Read::new("b", &b, b_idx)];
        let product = TExpr::binary(BinOp::Mul, TExpr::input("a"), TExpr::input("b"));
        let label = format!("{}_acc", ctx.label);
        let value = scaled(at.alpha, product);
        element_map(
            ctx.b,
            &label,
            &acc_params,
            reads,
            (&y, idx),
            Some(Wcr::Sum),
            value,
        );
        Ok(())
    }

    fn flops(&self, node: &LibraryNode, inputs: &[Option<TensorType>], _: &[TensorType]) -> u64 {
        let shape = |i: usize| {
            inputs
                .get(i)
                .and_then(|t| t.as_ref())
                .and_then(TensorType::static_shape)
        };
        let (Some(a), Some(b)) = (shape(0), shape(1)) else {
            return 0;
        };
        let Ok((m, k, n)) = GemmAttrs::of(node).mkn(&a, &b) else {
            return 0;
        };
        let bias = if inputs.get(2).is_some_and(Option::is_some) {
            2
        } else {
            0
        };
        (m * n * (2 * k + bias)) as u64
    }
}

/// `factor · x`, without the multiplication when the factor is 1.
fn scaled(factor: f64, x: TExpr) -> TExpr {
    if factor == 1.0 {
        x
    } else {
        TExpr::binary(BinOp::Mul, TExpr::Const(factor), x)
    }
}
