//! Attention's expansion, stage by stage (the module above says why it is one):
//!
//! 1. keys and values after the cache, `[batch, kv_heads, total, head]` — the `present_*`
//!    outputs when the node has them, else transients; skipped (K and V read in place) when
//!    there is neither a cache nor a present output;
//! 2. scores `scale · Q Kᵀ`: a wcr-sum contraction over `(b, kv head, group, s, t, d)`, query
//!    head `kv · group + g` (affine, so GQA costs no division);
//! 3. the softcap, then the bias (mask, causal frontier), each an element-wise map when present;
//! 4. the softmax in three passes (max, sum of `exp(x − max)`, normalisation), guarded so a row
//!    whose maximum is −∞ gives zeros;
//! 5. `Y = P V`, a wcr-sum contraction written in Y's layout; the `qk_matmul_output` copy.

use super::visible::NONPAD;
use super::{Plan, QkMode};
use crate::ir::{BinOp, DType, Dim, Range, Subset, SymExpr, TExpr, UnOp, Wcr};

fn minus_inf() -> TExpr {
    TExpr::Const(f64::NEG_INFINITY)
}
use crate::ops::broadcast::source_index;
use crate::ops::heads::HeadLayout;
use crate::ops::support::{element_map, fill_map, params_over, Read};
use crate::ops::{ExpandCtx, OpError};

/// A container read through a head layout.
struct Heads {
    name: String,
    layout: HeadLayout,
}

/// The containers of one application.
pub struct Stages<'p> {
    plan: &'p Plan,
    q: Heads,
    k: Heads,
    v: Heads,
    mask: Option<(String, Vec<SymExpr>)>,
    nonpad: Option<String>,
    label: String,
}

/// `(b, h, s, t)` over the scores and their symbols.
fn score_space(plan: &Plan) -> (Vec<(String, Range)>, Vec<SymExpr>) {
    params_over("i", &plan.scores_shape())
}

impl<'p> Stages<'p> {
    pub fn new(plan: &'p Plan, ctx: &ExpandCtx) -> Result<Stages<'p>, OpError> {
        let heads = |i: usize, layout: &HeadLayout| -> Result<Heads, OpError> {
            Ok(Heads {
                name: ctx.input(i)?.0.clone(),
                layout: layout.clone(),
            })
        };
        let mask = ctx.inputs.get(3).cloned().flatten();
        let mask = mask.map(|(name, desc)| (name, desc.shape));
        Ok(Stages {
            plan,
            q: heads(0, &plan.q)?,
            k: heads(1, &plan.k)?,
            v: heads(2, &plan.v)?,
            mask,
            nonpad: ctx.inputs.get(6).cloned().flatten().map(|(name, _)| name),
            label: ctx.label.clone(),
        })
    }

    pub fn append(mut self, ctx: &mut ExpandCtx) -> Result<(), OpError> {
        self.k = self.with_cache(ctx, 1, 4, false)?;
        self.v = self.with_cache(ctx, 2, 5, true)?;
        let scores = self.scores(ctx);
        let capped = self.capped(ctx, &scores);
        let biased = self.biased(ctx, &capped);
        let probs = self.softmax(ctx, &biased);
        self.output(ctx, &probs)?;
        if let Some((qk, _)) = ctx.outputs.get(3).cloned().flatten() {
            let stage = match self.plan.mode {
                QkMode::Scores => &scores,
                QkMode::Capped => &capped,
                QkMode::Biased => &biased,
                QkMode::Probabilities => &probs,
            };
            let (params, i) = score_space(self.plan);
            let reads = vec![Read::new("x", stage, i.clone())];
            let label = format!("{}_qk_out", self.label);
            element_map(
                ctx.b,
                &label,
                &params,
                reads,
                (&qk, i),
                None,
                TExpr::input("x"),
            );
        }
        Ok(())
    }

    /// The keys (`input` 1, cache `past` 4) or values after the cache, as a 4-D container.
    fn with_cache(
        &self,
        ctx: &mut ExpandCtx,
        input: usize,
        past: usize,
        values: bool,
    ) -> Result<Heads, OpError> {
        let new = if values { &self.v } else { &self.k };
        let cache = ctx.inputs.get(past).cloned().flatten();
        let present = ctx.outputs.get(input).cloned().flatten();
        if cache.is_none() && present.is_none() {
            return Ok(Heads {
                name: new.name.clone(),
                layout: new.layout.clone(),
            });
        }
        let plan = self.plan;
        let layout = plan.cache(values);
        let shape = layout.shape(&plan.batch, &plan.total);
        let dtype = ctx.input(input)?.1.dtype;
        let suffix = if values { "values" } else { "keys" };
        let name = match present {
            Some((name, _)) => name,
            None => ctx
                .b
                .transient(&format!("{}_{suffix}", self.label), dtype, shape),
        };
        if let Some((cache, _)) = cache {
            let (params, i) = params_over("i", &layout.shape(&plan.batch, &plan.past));
            let reads = vec![Read::new("x", &cache, i.clone())];
            let label = format!("{}_{suffix}_past", self.label);
            element_map(
                ctx.b,
                &label,
                &params,
                reads,
                (&name, i),
                None,
                TExpr::input("x"),
            );
        }
        let (params, i) = params_over("i", &layout.shape(&plan.batch, &plan.kv_seq));
        let at = new.layout.at(&i[0], &i[1], &i[2], i[3].clone());
        let reads = vec![Read::new("x", &new.name, at)];
        let mut dst = i.clone();
        dst[2] = (i[2].clone() + plan.past.clone()).simplify();
        let label = format!("{}_{suffix}_new", self.label);
        element_map(
            ctx.b,
            &label,
            &params,
            reads,
            (&name, dst),
            None,
            TExpr::input("x"),
        );
        Ok(Heads { name, layout })
    }

    /// Params `(b, kv head, g, s, t, e)` of a contraction whose innermost parameter `e` runs
    /// over `inner`; returns them, `[b, kv head, query head, s, t]` (query head `kv · group +
    /// g`) and `e`.
    fn contraction(&self, inner: &SymExpr) -> (Vec<(String, Range)>, [SymExpr; 5], SymExpr) {
        let plan = self.plan;
        let extents = [
            plan.batch.clone(),
            plan.k.heads.clone(),
            SymExpr::Int(plan.group),
            plan.q_seq.clone(),
            plan.total.clone(),
            inner.clone(),
        ];
        let (params, i) = params_over("i", &extents);
        let h = (i[1].clone() * SymExpr::Int(plan.group) + i[2].clone()).simplify();
        let at = |d: usize| i[d].clone();
        (params, [at(0), at(1), h, at(3), at(4)], at(5))
    }

    /// A transient of the scores' shape in the work type.
    fn scores_like(&self, ctx: &mut ExpandCtx, suffix: &str) -> String {
        let shape = self.plan.scores_shape();
        ctx.b
            .transient(&format!("{}_{suffix}", self.label), self.plan.work, shape)
    }

    fn scores(&self, ctx: &mut ExpandCtx) -> String {
        let plan = self.plan;
        let scores = self.scores_like(ctx, "scores");
        fill_map(
            ctx.b,
            &format!("{}_scores_init", self.label),
            &scores,
            &plan.scores_shape(),
            0.0,
        );
        let (params, [b, kv, h, s, t], d) = self.contraction(&plan.q.head);
        let reads = vec![
            Read::new("q", &self.q.name, self.q.layout.at(&b, &h, &s, d.clone())),
            Read::new("k", &self.k.name, self.k.layout.at(&b, &kv, &t, d)),
        ];
        let scale = match plan.scale {
            Some(v) => TExpr::Const(v),
            None => TExpr::unary(
                UnOp::Recip,
                TExpr::unary(UnOp::Sqrt, TExpr::Index(plan.q.head.clone())),
            ),
        };
        let product = TExpr::binary(BinOp::Mul, TExpr::input("q"), TExpr::input("k"));
        let value = TExpr::binary(BinOp::Mul, product, scale);
        let dst = (scores.as_str(), vec![b, h, s, t]);
        element_map(
            ctx.b,
            &format!("{}_scores", self.label),
            &params,
            reads,
            dst,
            Some(Wcr::Sum),
            value,
        );
        scores
    }

    /// An element-wise map over the scores from `from` into a new transient.
    fn pointwise(
        &self,
        ctx: &mut ExpandCtx,
        from: &str,
        suffix: &str,
        extra: Vec<Read>,
        value: TExpr,
    ) -> String {
        let out = self.scores_like(ctx, suffix);
        let (params, i) = score_space(self.plan);
        let mut reads = vec![Read::new("x", from, i.clone())];
        reads.extend(extra);
        element_map(
            ctx.b,
            &format!("{}_{suffix}", self.label),
            &params,
            reads,
            (&out, i),
            None,
            value,
        );
        out
    }

    fn capped(&self, ctx: &mut ExpandCtx, scores: &str) -> String {
        let c = self.plan.softcap;
        if c <= 0.0 {
            return scores.to_string();
        }
        let x = TExpr::binary(BinOp::Mul, TExpr::input("x"), TExpr::Const(1.0 / c));
        let value = TExpr::binary(BinOp::Mul, TExpr::Const(c), TExpr::unary(UnOp::Tanh, x));
        self.pointwise(ctx, scores, "capped", Vec::new(), value)
    }

    fn biased(&self, ctx: &mut ExpandCtx, capped: &str) -> String {
        let plan = self.plan;
        let hidden = {
            let (_, i) = score_space(plan);
            plan.visible.hidden_expr(&i[2], &i[3])
        };
        if plan.mask.is_none() && hidden.is_none() {
            return capped.to_string();
        }
        let (_, i) = score_space(plan);
        let mut value = TExpr::input("x");
        let mut reads = Vec::new();
        if let (Some((mask, shape)), Some(dtype)) = (&self.mask, plan.mask) {
            let (read, m) = self.mask_read(mask, shape, &i);
            reads.push(read);
            let bias = match dtype {
                DType::Bool => TExpr::select(m, TExpr::Const(0.0), minus_inf()),
                _ => m,
            };
            value = TExpr::binary(BinOp::Add, value, bias);
        }
        if let Some(hidden) = hidden {
            if let Some(nonpad) = &self.nonpad {
                reads.push(Read::new(NONPAD, nonpad, vec![i[0].clone()]));
            }
            value = TExpr::select(hidden, minus_inf(), value);
        }
        self.pointwise(ctx, capped, "biased", reads, value)
    }

    /// The read of the mask element for scores element `i` and its value: a plain broadcast
    /// read, or, for a mask shorter than the keys, an element read along its key dimension
    /// clamped into it (the keys past it are hidden by `visible::Visibility`).
    fn mask_read<'m>(&self, mask: &'m str, shape: &[SymExpr], i: &[SymExpr]) -> (Read<'m>, TExpr) {
        let at = source_index(shape, i);
        let Some(len) = &self.plan.visible.mask_len else {
            return (Read::new("m", mask, at), TExpr::input("m"));
        };
        let mut subset: Vec<Dim> = at.into_iter().map(Dim::Index).collect();
        let last = subset.len() - 1;
        subset[last] = Dim::Range(Range::upto(len.clone()));
        let mut index = vec![TExpr::Const(0.0); last];
        let inside = (len.clone() - SymExpr::Int(1)).simplify();
        index.push(TExpr::binary(
            BinOp::Min,
            TExpr::Index(i[3].clone()),
            TExpr::Index(inside),
        ));
        (
            Read::window("m", mask, Subset(subset)),
            TExpr::element("m", index),
        )
    }

    /// The softmax over keys, in three passes; rows that are entirely −∞ become zeros.
    fn softmax(&self, ctx: &mut ExpandCtx, x: &str) -> String {
        let plan = self.plan;
        let (params, i) = score_space(plan);
        let mut stat_shape = plan.scores_shape();
        stat_shape[3] = SymExpr::Int(1);
        let mut stat = i.clone();
        stat[3] = SymExpr::Int(0);
        let label = &self.label;
        let max = ctx
            .b
            .transient(&format!("{label}_max"), plan.work, stat_shape.clone());
        let sum = ctx
            .b
            .transient(&format!("{label}_sum"), plan.work, stat_shape.clone());
        let xi = || Read::new("x", x, i.clone());
        let mi = || Read::new("m", &max, stat.clone());
        let b = &mut *ctx.b;
        fill_map(
            b,
            &format!("{label}_max_init"),
            &max,
            &stat_shape,
            f64::NEG_INFINITY,
        );
        let dst = (max.as_str(), stat.clone());
        element_map(
            b,
            &format!("{label}_max"),
            &params,
            vec![xi()],
            dst,
            Some(Wcr::Max),
            TExpr::input("x"),
        );
        fill_map(b, &format!("{label}_sum_init"), &sum, &stat_shape, 0.0);
        let exp = || {
            TExpr::unary(
                UnOp::Exp,
                TExpr::binary(BinOp::Sub, TExpr::input("x"), TExpr::input("m")),
            )
        };
        let empty = TExpr::binary(
            BinOp::Eq,
            TExpr::input("m"),
            TExpr::Const(f64::NEG_INFINITY),
        );
        let value = TExpr::select(empty, TExpr::Const(0.0), exp());
        let dst = (sum.as_str(), stat.clone());
        element_map(
            b,
            &format!("{label}_sum"),
            &params,
            vec![xi(), mi()],
            dst,
            Some(Wcr::Sum),
            value,
        );
        let some = TExpr::binary(BinOp::Gt, TExpr::input("s"), TExpr::Const(0.0));
        let normed = TExpr::binary(BinOp::Div, exp(), TExpr::input("s"));
        let value = TExpr::select(some, normed, TExpr::Const(0.0));
        let reads = vec![mi(), Read::new("s", &sum, stat.clone())];
        self.pointwise(ctx, x, "probs", reads, value)
    }

    /// `Y = P V` in Y's layout.
    fn output(&self, ctx: &mut ExpandCtx, probs: &str) -> Result<(), OpError> {
        let plan = self.plan;
        let (y, desc) = ctx.output(0)?.clone();
        fill_map(
            ctx.b,
            &format!("{}_y_init", self.label),
            &y,
            &desc.shape,
            0.0,
        );
        let (params, [b, kv, h, s, t], d) = self.contraction(&plan.v.head);
        let reads = vec![
            Read::new("p", probs, vec![b.clone(), h.clone(), s.clone(), t.clone()]),
            Read::new("v", &self.v.name, self.v.layout.at(&b, &kv, &t, d.clone())),
        ];
        let value = TExpr::binary(BinOp::Mul, TExpr::input("p"), TExpr::input("v"));
        let dst = (y.as_str(), plan.y.at(&b, &h, &s, d));
        element_map(
            ctx.b,
            &format!("{}_y", self.label),
            &params,
            reads,
            dst,
            Some(Wcr::Sum),
            value,
        );
        Ok(())
    }
}
