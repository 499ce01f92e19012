//! LinearAttention's expansion (the module above gives the stages): the state initialised from
//! `past_state` or zeros, one sequential map over the tokens whose body retrieves, updates and
//! reads the state, and the copy of the final state into `present_state`.

use super::{Plan, Width, BETA, DECAY, KEY, PAST, QUERY, VALUE};
use crate::ir::build::ScopeBuilder;
use crate::ir::{BinOp, Range, Schedule, SymExpr, TExpr, UnOp, Wcr};
use crate::ops::activation::mul;
use crate::ops::expand::copy_map;
use crate::ops::support::{element_map, fill_map, params_over, Read};
use crate::ops::{ExpandCtx, OpError};

/// Appends the expansion of `plan` to `ctx`.
pub fn append(plan: &Plan, ctx: &mut ExpandCtx) -> Result<(), OpError> {
    let name = |i: usize| ctx.inputs.get(i).cloned().flatten().map(|(n, _)| n);
    let label = ctx.label.clone();
    let state_shape = plan.state_shape();
    let state = ctx
        .b
        .transient(&format!("{label}_state"), plan.work, state_shape.clone());
    copy_or_fill(
        ctx.b,
        &format!("{label}_state_init"),
        name(PAST).as_deref(),
        &state,
        &state_shape,
    );
    let read_shape = vec![
        plan.batch.clone(),
        plan.q.heads.clone(),
        plan.v.head.clone(),
    ];
    let step = Step {
        q: ctx.input(QUERY)?.0.clone(),
        k: ctx.input(KEY)?.0.clone(),
        v: ctx.input(VALUE)?.0.clone(),
        decay: plan.decay.zip(name(DECAY)),
        beta: plan.beta.zip(name(BETA)),
        y: ctx.output(0)?.0.clone(),
        retrieved: plan.rule.delta.then(|| {
            let shape = vec![
                plan.batch.clone(),
                plan.k.heads.clone(),
                plan.v.head.clone(),
            ];
            ctx.b
                .transient(&format!("{label}_retrieved"), plan.work, shape)
        }),
        read: ctx
            .b
            .transient(&format!("{label}_read"), plan.work, read_shape),
        state: state.clone(),
        plan,
        label: label.clone(),
    };
    let steps = vec![("t", Range::upto(plan.seq.clone()))];
    ctx.b
        .map(&format!("{label}_time"), steps, Schedule::Sequential, |b| {
            step.append(b)
        });
    if let Some((present, _)) = ctx.outputs.get(1).cloned().flatten() {
        copy_or_fill(
            ctx.b,
            &format!("{label}_present"),
            Some(&state),
            &present,
            &state_shape,
        );
    }
    Ok(())
}

/// `dst = src` element by element (a conversion when their types differ), or `dst = 0`.
fn copy_or_fill(
    b: &mut ScopeBuilder,
    label: &str,
    src: Option<&str>,
    dst: &str,
    shape: &[SymExpr],
) {
    match src {
        Some(src) => {
            let (params, i) = params_over("i", shape);
            copy_map(b, label, params, src, i.clone(), dst, i);
        }
        None => fill_map(b, label, dst, shape, 0.0),
    }
}

/// The containers of one time step (the body of the sequential map over `t`).
struct Step<'p> {
    plan: &'p Plan,
    q: String,
    k: String,
    v: String,
    decay: Option<(Width, String)>,
    beta: Option<(Width, String)>,
    y: String,
    /// `[batch, kv_heads, d_k, d_v]` in the work type.
    state: String,
    /// `Sᵀk` of the decayed state, `[batch, kv_heads, d_v]` (delta rules).
    retrieved: Option<String>,
    /// `qᵀ S` before the scale, `[batch, q_heads, d_v]`.
    read: String,
    label: String,
}

impl Step<'_> {
    fn append(&self, b: &mut ScopeBuilder) {
        let plan = self.plan;
        let t = SymExpr::sym("t");
        let space = [
            plan.batch.clone(),
            plan.k.heads.clone(),
            plan.k.head.clone(),
            plan.v.head.clone(),
        ];
        let (params, x) = params_over("i", &space);
        let (n, h, i, j) = (&x[0], &x[1], &x[2], &x[3]);
        let s = Read::new("s", &self.state, x.clone());
        let key = || Read::new("k", &self.k, plan.k.at(n, h, &t, i.clone()));
        // The state element decayed by `exp(decay)` when the rule gates.
        let mut decayed_reads = vec![s];
        let mut decayed = TExpr::input("s");
        if let Some((width, decay)) = &self.decay {
            decayed_reads.push(Read::new("g", decay, width.at([n, &t, h, i], &plan.k.head)));
            decayed = mul(TExpr::unary(UnOp::Exp, TExpr::input("g")), decayed);
        }
        let mut reads = decayed_reads.clone();
        reads.push(key());
        reads.push(Read::new("v", &self.v, plan.v.at(n, h, &t, j.clone())));
        let mut written = TExpr::input("v");
        if let (Some(r), Some((width, beta))) = (&self.retrieved, &self.beta) {
            let at = vec![n.clone(), h.clone(), j.clone()];
            let zero = SymExpr::Int(0);
            fill_map(
                b,
                &format!("{}_retrieved_init", self.label),
                r,
                &[space[0].clone(), space[1].clone(), space[3].clone()],
                0.0,
            );
            let mut retrieval = decayed_reads.clone();
            retrieval.push(key());
            let value = mul(decayed.clone(), TExpr::input("k"));
            let label = format!("{}_retrieve", self.label);
            element_map(
                b,
                &label,
                &params,
                retrieval,
                (r, at.clone()),
                Some(Wcr::Sum),
                value,
            );
            reads.push(Read::new("r", r, at));
            reads.push(Read::new(
                "beta",
                beta,
                width.at([n, &t, h, &zero], &plan.k.head),
            ));
            let correction = TExpr::binary(BinOp::Sub, written, TExpr::input("r"));
            written = mul(TExpr::input("beta"), correction);
        }
        let value = TExpr::binary(BinOp::Add, decayed, mul(TExpr::input("k"), written));
        let label = format!("{}_update", self.label);
        element_map(
            b,
            &label,
            &params,
            reads,
            (&self.state, x.clone()),
            None,
            value,
        );
        self.read_out(b, &t);
    }

    /// `read = qᵀ S` for every query head (head `kv · group + g` reads state `kv`), then
    /// `y = scale · read` at token `t`.
    fn read_out(&self, b: &mut ScopeBuilder, t: &SymExpr) {
        let plan = self.plan;
        let read_shape = [
            plan.batch.clone(),
            plan.q.heads.clone(),
            plan.v.head.clone(),
        ];
        fill_map(
            b,
            &format!("{}_read_init", self.label),
            &self.read,
            &read_shape,
            0.0,
        );
        let space = [
            plan.batch.clone(),
            plan.k.heads.clone(),
            SymExpr::Int(plan.group),
            plan.k.head.clone(),
            plan.v.head.clone(),
        ];
        let (params, x) = params_over("i", &space);
        let (n, kv, i, j) = (&x[0], &x[1], &x[3], &x[4]);
        let hq = (kv.clone() * SymExpr::Int(plan.group) + x[2].clone()).simplify();
        let reads = vec![
            Read::new("q", &self.q, plan.q.at(n, &hq, t, i.clone())),
            Read::new(
                "s",
                &self.state,
                vec![n.clone(), kv.clone(), i.clone(), j.clone()],
            ),
        ];
        let dst = (self.read.as_str(), vec![n.clone(), hq, j.clone()]);
        let value = mul(TExpr::input("q"), TExpr::input("s"));
        let label = format!("{}_read", self.label);
        element_map(b, &label, &params, reads, dst, Some(Wcr::Sum), value);
        let (params, x) = params_over("i", &read_shape);
        let reads = vec![Read::new("o", &self.read, x.clone())];
        let dst = (self.y.as_str(), plan.y.at(&x[0], &x[1], t, x[2].clone()));
        let value = mul(TExpr::Const(plan.scale), TExpr::input("o"));
        element_map(
            b,
            &format!("{}_out", self.label),
            &params,
            reads,
            dst,
            None,
            value,
        );
    }
}
