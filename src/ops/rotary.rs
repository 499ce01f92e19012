//! RotaryEmbedding (opset 23): rotary positional embeddings (RoPE).
//!
//! Each head vector's first `R` elements (`rotary_embedding_dim`, default the head size) are
//! rotated pairwise by the angles of the token's position; the rest pass through. A pair is
//! `(x[i], x[i + R/2])` (halves) or `(x[2i], x[2i + 1])` (`interleaved`), and becomes
//! `(cos·a − sin·b, sin·a + cos·b)` with `cos`/`sin` from the caches: `cache[position_ids[b, s],
//! i]` when position ids are given (a 2-D cache, read at a computed index like Gather, negative
//! ids counting from the end), else `cache[b, s, i]` (a 3-D cache).
//!
//! X is `[batch, heads, seq, head]`, or `[batch, seq, heads · head]` with `num_heads` given. The
//! expansion iterates `(batch, head, seq, pair)` and writes both elements of each pair with two
//! maps whose indices stay affine (`i` and `i + R/2`, or `2i` and `2i + 1`), plus a copy of the
//! unrotated tail.

use super::heads::{grid, HeadLayout};
use super::index::{lookup_map, wrap_index, wrapped};
use super::movement::type_of;
use super::support::{
    arg, input_type, opt_arg, params_over, per_output_element, require_float, same_dtype, sym_shape,
};
use super::{check_arity, ExpandCtx, OpError, Operator, TensorType};
use crate::ir::build::In;
use crate::ir::{BinOp, DType, Dim, LibraryNode, Range, Subset, SymExpr, TExpr, Tensor};

pub static OPS: &[&dyn Operator] = &[&RotaryEmbedding];

const OP: &str = "RotaryEmbedding";

/// `RotaryEmbedding(X, cos_cache, sin_cache, position_ids?) -> Y`.
pub struct RotaryEmbedding;

/// The layout of one application: X's heads and the rotated pairs.
struct Layout {
    x: HeadLayout,
    /// Elements rotated per head (`R`), even.
    rotated: i64,
    interleaved: bool,
}

impl Layout {
    fn new(node: &LibraryNode, x: &[SymExpr]) -> Result<Layout, OpError> {
        let num_heads = node.int("num_heads").unwrap_or(0);
        let layout = HeadLayout::of(OP, "input", x, "num_heads", num_heads)?;
        let head = layout.head.as_int().ok_or_else(|| {
            let d = &layout.head;
            OpError::unsupported(OP, format!("the head size ({d}) must be a known size"))
        })?;
        let rotated = match node.int("rotary_embedding_dim").unwrap_or(0) {
            0 => head,
            r => r,
        };
        if rotated <= 0 || rotated > head || rotated % 2 != 0 {
            return Err(OpError::attr(
                OP,
                "rotary_embedding_dim",
                format!("{rotated} must be even and in [2, {head}] (the head size)"),
            ));
        }
        Ok(Layout {
            x: layout,
            rotated,
            interleaved: node.int("interleaved").unwrap_or(0) != 0,
        })
    }

    /// Positions of the two elements of pair `i`.
    fn pair(&self, i: SymExpr) -> [SymExpr; 2] {
        let half = SymExpr::Int(self.rotated / 2);
        match self.interleaved {
            true => {
                let even = (SymExpr::Int(2) * i).simplify();
                [even.clone(), (even + SymExpr::Int(1)).simplify()]
            }
            false => [i.clone(), (i + half).simplify()],
        }
    }
}

/// Checks the caches and position ids against X's layout.
fn check_caches(
    x: &TensorType,
    layout: &Layout,
    cos: &TensorType,
    sin: &TensorType,
    ids: Option<&TensorType>,
) -> Result<(), OpError> {
    same_dtype(OP, x, cos, 1)?;
    same_dtype(OP, x, sin, 2)?;
    if cos.shape != sin.shape {
        return Err(OpError::shape(
            OP,
            "cos_cache and sin_cache differ in shape",
        ));
    }
    let seq = layout.x.seq(&x.shape);
    let half = SymExpr::Int(layout.rotated / 2);
    let want = match ids {
        Some(ids) => {
            if ids.dtype != DType::I64 || ids.shape != [x.shape[0].clone(), seq.clone()] {
                return Err(OpError::shape(
                    OP,
                    format!(
                        "position_ids must be int64 [batch, seq], got {} {:?}",
                        ids.dtype, ids.shape
                    ),
                ));
            }
            match cos.shape.first() {
                Some(p) => vec![p.clone(), half],
                None => vec![half],
            }
        }
        None => vec![x.shape[0].clone(), seq.clone(), half],
    };
    if cos.shape != want {
        return Err(OpError::shape(
            OP,
            format!("the caches have shape {:?}, expected {want:?}", cos.shape),
        ));
    }
    Ok(())
}

impl Operator for RotaryEmbedding {
    fn name(&self) -> &'static str {
        OP
    }

    fn input_count(&self) -> (usize, usize) {
        (3, 4)
    }

    fn infer(
        &self,
        node: &LibraryNode,
        inputs: &[Option<TensorType>],
        _consts: &[Option<&Tensor>],
    ) -> Result<Vec<TensorType>, OpError> {
        check_arity(self, inputs.len())?;
        let x = input_type(OP, inputs, 0)?;
        require_float(OP, x)?;
        let layout = Layout::new(node, &x.shape)?;
        let ids = inputs.get(3).and_then(|t| t.as_ref());
        let (cos, sin) = (input_type(OP, inputs, 1)?, input_type(OP, inputs, 2)?);
        check_caches(x, &layout, cos, sin, ids)?;
        Ok(vec![x.clone()])
    }

    fn eval(&self, node: &LibraryNode, inputs: &[Option<&Tensor>]) -> Result<Vec<Tensor>, OpError> {
        let x = arg(OP, inputs, 0)?;
        let (cos, sin) = (arg(OP, inputs, 1)?, arg(OP, inputs, 2)?);
        let ids = opt_arg(inputs, 3);
        let types: Vec<Option<TensorType>> = inputs.iter().map(|t| t.map(type_of)).collect();
        self.infer(node, &types, &[])?;
        let layout = Layout::new(node, &sym_shape(&x.shape))?;
        let half = layout.rotated as usize / 2;
        let seq = x.shape[if layout.x.packed { 1 } else { 2 }];
        let heads = layout.x.heads.as_int().unwrap_or(0) as usize;
        let ids = ids.map(Tensor::to_i64_vec);
        let mut y = x.to_f64_vec();
        for (b, h, s) in grid(x.shape[0], heads, seq) {
            let cache_row = match &ids {
                Some(ids) => wrap_index(OP, ids[b * seq + s], cos.shape[0])?,
                None => b * seq + s,
            };
            let base = layout.x.offset(&x.shape, [b, h, s, 0]);
            for i in 0..half {
                let [p, q] = match layout.interleaved {
                    true => [2 * i, 2 * i + 1],
                    false => [i, i + half],
                };
                let at = cache_row * half + i;
                let (c, sn) = (cos.get_f64(at), sin.get_f64(at));
                let (a, z) = (x.get_f64(base + p), x.get_f64(base + q));
                y[base + p] = c * a - sn * z;
                y[base + q] = sn * a + c * z;
            }
        }
        Ok(vec![Tensor::from_f64(x.dtype(), x.shape.clone(), &y)])
    }

    fn expand(&self, _implementation: &str, ctx: &mut ExpandCtx) -> Result<(), OpError> {
        let (x, xd) = ctx.input(0)?.clone();
        let (cos, cd) = ctx.input(1)?.clone();
        let (sin, _) = ctx.input(2)?.clone();
        let ids = ctx.inputs.get(3).cloned().flatten();
        let (y, _) = ctx.output(0)?.clone();
        let layout = Layout::new(ctx.node, &xd.shape)?;
        let seq = layout.x.seq(&xd.shape);
        let half = SymExpr::Int(layout.rotated / 2);
        let space = [xd.shape[0].clone(), layout.x.heads.clone(), seq.clone()];
        let (mut params, bhs) = params_over("i", &space);
        params.push(("j".to_string(), Range::upto(half)));
        let j = SymExpr::sym("j");
        let (b, h, s) = (&bhs[0], &bhs[1], &bhs[2]);
        // The caches' element for (b, s, j): at the position id (a computed row) or at (b, s).
        let mut inputs: Vec<(String, String, Subset)> = Vec::new();
        let (c, sn) = match &ids {
            Some((ids, _)) => {
                inputs.push((
                    "p".into(),
                    ids.clone(),
                    Subset::element([b.clone(), s.clone()]),
                ));
                let rows = Dim::Range(Range::upto(cd.shape[0].clone()));
                let window = Subset(vec![rows, Dim::Index(j.clone())]);
                inputs.push(("c".into(), cos.clone(), window.clone()));
                inputs.push(("s".into(), sin.clone(), window));
                let row = wrapped(TExpr::input("p"), &cd.shape[0]);
                let at = vec![row, TExpr::Const(0.0)];
                (TExpr::element("c", at.clone()), TExpr::element("s", at))
            }
            None => {
                let at = Subset::element([b.clone(), s.clone(), j.clone()]);
                inputs.push(("c".into(), cos.clone(), at.clone()));
                inputs.push(("s".into(), sin.clone(), at));
                (TExpr::input("c"), TExpr::input("s"))
            }
        };
        let [p, q] = layout.pair(j);
        inputs.push((
            "a".into(),
            x.clone(),
            Subset::element(layout.x.at(b, h, s, p.clone())),
        ));
        inputs.push((
            "z".into(),
            x.clone(),
            Subset::element(layout.x.at(b, h, s, q.clone())),
        ));
        let (a, z) = (TExpr::input("a"), TExpr::input("z"));
        let mul = |u: &TExpr, v: &TExpr| TExpr::binary(BinOp::Mul, u.clone(), v.clone());
        let first = TExpr::binary(BinOp::Sub, mul(&c, &a), mul(&sn, &z));
        let second = TExpr::binary(BinOp::Add, mul(&sn, &a), mul(&c, &z));
        for (k, (at, value)) in [(p, first), (q, second)].into_iter().enumerate() {
            let ins = inputs
                .iter()
                .map(|(c, d, sub)| In(c, d, sub.clone()))
                .collect();
            let dst = (y.as_str(), layout.x.at(b, h, s, at));
            lookup_map(
                ctx.b,
                &format!("{}_rot{k}", ctx.label),
                &params,
                ins,
                dst,
                None,
                value,
            );
        }
        // The tail beyond the rotated elements passes through.
        let tail = layout.x.head.clone() - SymExpr::Int(layout.rotated);
        if tail.as_int() != Some(0) {
            let (mut params, _) = params_over("i", &space);
            params.push(("j".to_string(), Range::upto(tail)));
            let d = (SymExpr::sym("j") + SymExpr::Int(layout.rotated)).simplify();
            let at = layout.x.at(b, h, s, d);
            let ins = vec![In("a", &x, Subset::element(at.clone()))];
            let dst = (y.as_str(), at);
            let label = format!("{}_tail", ctx.label);
            lookup_map(ctx.b, &label, &params, ins, dst, None, TExpr::input("a"));
        }
        Ok(())
    }

    fn flops(&self, _: &LibraryNode, _: &[Option<TensorType>], outputs: &[TensorType]) -> u64 {
        // Per rotated element: two products and a sum.
        per_output_element(outputs, 3)
    }
}
