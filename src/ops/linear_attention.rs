//! LinearAttention (opset 27): causal linear attention as a recurrence over a matrix state, for
//! autoregressive decoding (one token) and prefill (many) alike.
//!
//! Query, key and value are packed `[batch, seq, heads · head]` (`q_num_heads` query heads of
//! size `d_k`, `kv_num_heads` key heads of size `d_k` and value heads of size `d_v`); each
//! key/value head `h` carries a state `S` of `d_k × d_v`, initialised from `past_state` (or
//! zeros) and returned as `present_state`, both `[batch, kv_heads, d_k, d_v]`. Per token `t`,
//! with `a_t = exp(decay_t)` (`gated` rules) and `β_t` (`delta` rules):
//!
//! - `linear`: `S ← S + k ⊗ v`
//! - `gated`: `S ← a ⊙ S + k ⊗ v`
//! - `delta`: `S ← S + k ⊗ β (v − Sᵀk)`
//! - `gated_delta`: `S ← a ⊙ S + k ⊗ β (v − (a ⊙ S)ᵀ k)`
//!
//! then `o_t = scale · qᵀ S` for each query head, query head `h` reading key/value head `h /
//! (q_heads / kv_heads)` (GQA; MQA is one key/value head). The decay is per key element
//! (`[batch, seq, kv_heads · d_k]`, it scales row `i` of `S`) or per head (`[batch, seq,
//! kv_heads]`); β is per head or one for all heads (`[batch, seq, 1]`). `scale` 0 means `1/√d_k`.
//! `chunk_size` only tunes chunk-parallel implementations: the result is the recurrence's.
//!
//! The reference `eval` runs the recurrence as written (decay, retrieval, write, read) in f64.
//! The expansion (`linear_attention/expand.rs`) walks time with one sequential map over `t` (as
//! `recurrent/` does) whose body has three stages: the retrieval `r = Σ_i a_i S_ij k_i` (delta
//! rules; the decay folded in instead of materialising `a ⊙ S`), one element-wise update `S_ij ←
//! a_i S_ij + k_i u_j` with `u = β (v − r)` or `v`, and the read `o = Σ_i q_i S_ij`, a wcr-sum
//! contraction over `(b, kv head, g, i, j)` whose query head `kv · group + g` is affine. The state
//! and the read are kept in f32 (f64 for f64 inputs) whatever the element type, as ONNX's
//! reference keeps them.

use super::heads::{size, HeadLayout};
use super::support::{
    arg, element_count, expect_shape, input_type, opt_arg, require_float, require_rank, same_dtype,
    types_of,
};
use super::window::same_dim;
use super::{check_arity, ExpandCtx, OpError, Operator, TensorType};
use crate::ir::{DType, LibraryNode, SymExpr, Tensor};

pub static OPS: &[&dyn Operator] = &[&LinearAttention];

mod expand;

const OP: &str = "LinearAttention";

const QUERY: usize = 0;
const KEY: usize = 1;
const VALUE: usize = 2;
const PAST: usize = 3;
const DECAY: usize = 4;
const BETA: usize = 5;

/// `LinearAttention(query, key, value, past_state?, decay?, beta?) -> (output, present_state)`.
pub struct LinearAttention;

/// The recurrence `update_rule` selects: whether it decays the state and whether it writes the
/// delta-corrected value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Rule {
    gated: bool,
    delta: bool,
}

impl Rule {
    fn of(node: &LibraryNode) -> Result<Rule, OpError> {
        let (gated, delta) = match node.str("update_rule").unwrap_or("gated_delta") {
            "linear" => (false, false),
            "gated" => (true, false),
            "delta" => (false, true),
            "gated_delta" => (true, true),
            other => {
                let message =
                    format!("expected linear, gated, delta or gated_delta, got `{other}`");
                return Err(OpError::attr(OP, "update_rule", message));
            }
        };
        Ok(Rule { gated, delta })
    }
}

/// Which column of a `[batch, seq, width]` gate input (decay, β) key/value head `h` and key
/// element `i` read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Width {
    /// `h · d_k + i` (decay per key element).
    PerKey,
    /// `h`.
    PerHead,
    /// 0: one value for every head (β only).
    Shared,
}

impl Width {
    /// The gate's width for `kv_heads` heads of `d_k` key elements, from its last extent.
    fn of(
        what: &str,
        last: &SymExpr,
        kv_heads: i64,
        d_k: i64,
        per_key: bool,
    ) -> Result<Width, OpError> {
        let width = match last.as_int() {
            Some(w) if per_key && w == kv_heads * d_k => Width::PerKey,
            Some(w) if w == kv_heads => Width::PerHead,
            Some(1) if !per_key => Width::Shared,
            _ => {
                let allowed = match per_key {
                    true => format!("{} (kv_num_heads · d_k) or {kv_heads}", kv_heads * d_k),
                    false => format!("{kv_heads} (kv_num_heads) or 1"),
                };
                let message = format!("the last extent of {what} is {last}, expected {allowed}");
                return Err(OpError::shape(OP, message));
            }
        };
        Ok(width)
    }

    /// The column for head `h` and key element `i` (`eval`).
    fn column(self, h: usize, i: usize, d_k: usize) -> usize {
        match self {
            Width::PerKey => h * d_k + i,
            Width::PerHead => h,
            Width::Shared => 0,
        }
    }

    /// The gate's element at batch `b`, token `t`, head `h`, key element `i` (expansions).
    fn at(self, [b, t, h, i]: [&SymExpr; 4], d_k: &SymExpr) -> Vec<SymExpr> {
        let column = match self {
            Width::PerKey => (h.clone() * d_k.clone() + i.clone()).simplify(),
            Width::PerHead => h.clone(),
            Width::Shared => SymExpr::Int(0),
        };
        vec![b.clone(), t.clone(), column]
    }
}

/// Shapes and attributes of one application, checked.
struct Plan {
    rule: Rule,
    batch: SymExpr,
    seq: SymExpr,
    q: HeadLayout,
    k: HeadLayout,
    v: HeadLayout,
    /// The output's layout: the query heads with heads of `d_v`.
    y: HeadLayout,
    decay: Option<Width>,
    beta: Option<Width>,
    /// Query heads per key/value head.
    group: i64,
    scale: f64,
    /// The element type of `present_state`: `past_state`'s, else the query's.
    state: DType,
    /// The type the state and the read are computed in.
    work: DType,
}

/// A required, positive head count attribute.
fn head_count(node: &LibraryNode, attr: &str) -> Result<i64, OpError> {
    match node.int(attr) {
        Some(n) if n > 0 => Ok(n),
        Some(n) => Err(OpError::attr(
            OP,
            attr,
            format!("must be positive, got {n}"),
        )),
        None => Err(OpError::attr(OP, attr, "is required")),
    }
}

impl Plan {
    fn new(node: &LibraryNode, inputs: &[Option<TensorType>]) -> Result<Plan, OpError> {
        let rule = Rule::of(node)?;
        let (q_heads, kv_heads) = (
            head_count(node, "q_num_heads")?,
            head_count(node, "kv_num_heads")?,
        );
        if q_heads % kv_heads != 0 {
            let message = format!("{q_heads} is not a multiple of kv_num_heads ({kv_heads})");
            return Err(OpError::attr(OP, "q_num_heads", message));
        }
        let q = input_type(OP, inputs, QUERY)?;
        require_float(OP, q)?;
        let packed = |i: usize, what: &str, attr: &str, heads: i64| {
            let t = input_type(OP, inputs, i)?;
            same_dtype(OP, q, t, i)?;
            require_rank(OP, what, t, 3)?;
            HeadLayout::of(OP, what, &t.shape, attr, heads).map(|l| (t, l))
        };
        let (_, ql) = packed(QUERY, "query", "q_num_heads", q_heads)?;
        let (k, kl) = packed(KEY, "key", "kv_num_heads", kv_heads)?;
        let (v, vl) = packed(VALUE, "value", "kv_num_heads", kv_heads)?;
        let (batch, seq) = (q.shape[0].clone(), q.shape[1].clone());
        for (what, t) in [("key", k), ("value", v)] {
            for (d, extent) in [(0, &batch), (1, &seq)] {
                same_dim(OP, &t.shape[d], extent, || {
                    format!(
                        "query and {what} differ in extent {d}: {extent} vs {}",
                        t.shape[d]
                    )
                })?;
            }
        }
        same_dim(OP, &kl.head, &ql.head, || {
            format!(
                "the key head size {} differs from the query's {}",
                kl.head, ql.head
            )
        })?;
        let d_k = ql.head.as_int().unwrap_or(0);
        let gate = |i: usize, what: &str, wanted: bool, per_key: bool| {
            let given = inputs.get(i).and_then(|t| t.as_ref());
            match (given, wanted) {
                (None, false) => Ok(None),
                (Some(_), false) | (None, true) => {
                    let verb = if wanted { "needs" } else { "takes no" };
                    let rule = node.str("update_rule").unwrap_or("gated_delta");
                    let message = format!("`{rule}` {verb} input {i} ({what})");
                    Err(OpError::attr(OP, "update_rule", message))
                }
                (Some(t), true) => {
                    same_dtype(OP, q, t, i)?;
                    require_rank(OP, what, t, 3)?;
                    let want = [batch.clone(), seq.clone(), t.shape[2].clone()];
                    expect_shape(OP, what, &t.shape, &want)?;
                    Width::of(what, &t.shape[2], kv_heads, d_k, per_key).map(Some)
                }
            }
        };
        let decay = gate(DECAY, "decay", rule.gated, true)?;
        let beta = gate(BETA, "beta", rule.delta, false)?;
        let state = match inputs.get(PAST).and_then(|t| t.as_ref()) {
            Some(past) => {
                require_float(OP, past)?;
                let want = [
                    batch.clone(),
                    kl.heads.clone(),
                    kl.head.clone(),
                    vl.head.clone(),
                ];
                expect_shape(OP, "past_state", &past.shape, &want)?;
                past.dtype
            }
            None => q.dtype,
        };
        let wide = q.dtype == DType::F64 || state == DType::F64;
        let scale = match node.float("scale").unwrap_or(0.0) {
            0.0 => 1.0 / (d_k as f64).sqrt(),
            s => s,
        };
        Ok(Plan {
            rule,
            y: ql.with_head(vl.head.clone()),
            q: ql,
            k: kl,
            v: vl,
            batch,
            seq,
            decay,
            beta,
            group: q_heads / kv_heads,
            scale,
            state,
            work: if wide { DType::F64 } else { DType::F32 },
        })
    }

    /// `[batch, kv_heads, d_k, d_v]`.
    fn state_shape(&self) -> Vec<SymExpr> {
        let heads = [&self.k.heads, &self.k.head, &self.v.head];
        std::iter::once(self.batch.clone())
            .chain(heads.into_iter().cloned())
            .collect()
    }

    fn output_types(&self, dtype: DType) -> Vec<TensorType> {
        vec![
            TensorType::new(dtype, self.y.shape(&self.batch, &self.seq)),
            TensorType::new(self.state, self.state_shape()),
        ]
    }
}

impl Operator for LinearAttention {
    fn name(&self) -> &'static str {
        OP
    }

    fn input_count(&self) -> (usize, usize) {
        (3, 6)
    }

    fn output_count(&self) -> usize {
        2
    }

    fn infer(
        &self,
        node: &LibraryNode,
        inputs: &[Option<TensorType>],
        _consts: &[Option<&Tensor>],
    ) -> Result<Vec<TensorType>, OpError> {
        check_arity(self, inputs.len())?;
        let plan = Plan::new(node, inputs)?;
        Ok(plan.output_types(input_type(OP, inputs, QUERY)?.dtype))
    }

    fn eval(&self, node: &LibraryNode, inputs: &[Option<&Tensor>]) -> Result<Vec<Tensor>, OpError> {
        check_arity(self, inputs.len())?;
        let plan = Plan::new(node, &types_of(inputs))?;
        let (q, k, v) = (
            arg(OP, inputs, QUERY)?,
            arg(OP, inputs, KEY)?,
            arg(OP, inputs, VALUE)?,
        );
        let [batch, seq, kv_heads, d_k, d_v] = [
            &plan.batch,
            &plan.seq,
            &plan.k.heads,
            &plan.k.head,
            &plan.v.head,
        ]
        .map(size);
        let group = plan.group as usize;
        let types = plan.output_types(q.dtype());
        let shapes: Vec<Vec<usize>> = types
            .iter()
            .map(|t| t.shape.iter().map(size).collect())
            .collect();
        for shape in &shapes {
            element_count(OP, shape)?;
        }
        let past = opt_arg(inputs, PAST);
        let gate = |width: Option<Width>, i: usize| width.zip(opt_arg(inputs, i));
        let (decay, beta) = (gate(plan.decay, DECAY), gate(plan.beta, BETA));
        // Element `column` of a gate at (b, t).
        let gate_at = |g: &Tensor, b: usize, t: usize, column: usize| {
            g.get_f64((b * seq + t) * g.shape[2] + column)
        };
        let mut y = vec![0.0; shapes[0].iter().product()];
        let mut present = Vec::with_capacity(shapes[1].iter().product());
        for b in 0..batch {
            for h in 0..kv_heads {
                let base = (b * kv_heads + h) * d_k * d_v;
                // s[i · d_v + j] = S[i, j].
                let mut s: Vec<f64> = (0..d_k * d_v)
                    .map(|e| past.map_or(0.0, |p| p.get_f64(base + e)))
                    .collect();
                for t in 0..seq {
                    let key: Vec<f64> = (0..d_k)
                        .map(|i| k.get_f64(plan.k.offset(&k.shape, [b, h, t, i])))
                        .collect();
                    let mut write: Vec<f64> = (0..d_v)
                        .map(|j| v.get_f64(plan.v.offset(&v.shape, [b, h, t, j])))
                        .collect();
                    if let Some((width, g)) = decay {
                        for i in 0..d_k {
                            let a = gate_at(g, b, t, width.column(h, i, d_k)).exp();
                            s[i * d_v..(i + 1) * d_v].iter_mut().for_each(|x| *x *= a);
                        }
                    }
                    if let Some((width, beta)) = beta {
                        let rate = gate_at(beta, b, t, width.column(h, 0, d_k));
                        for (j, w) in write.iter_mut().enumerate() {
                            let retrieved: f64 = (0..d_k).map(|i| s[i * d_v + j] * key[i]).sum();
                            *w = rate * (*w - retrieved);
                        }
                    }
                    for (i, ki) in key.iter().enumerate() {
                        for (j, w) in write.iter().enumerate() {
                            s[i * d_v + j] += ki * w;
                        }
                    }
                    for hq in h * group..(h + 1) * group {
                        let query: Vec<f64> = (0..d_k)
                            .map(|i| q.get_f64(plan.q.offset(&q.shape, [b, hq, t, i])))
                            .collect();
                        for j in 0..d_v {
                            let read: f64 = (0..d_k).map(|i| query[i] * s[i * d_v + j]).sum();
                            y[plan.y.offset(&shapes[0], [b, hq, t, j])] = plan.scale * read;
                        }
                    }
                }
                present.extend(s);
            }
        }
        Ok(vec![
            Tensor::from_f64(q.dtype(), shapes[0].clone(), &y),
            Tensor::from_f64(plan.state, shapes[1].clone(), &present),
        ])
    }

    fn expand(&self, _implementation: &str, ctx: &mut ExpandCtx) -> Result<(), OpError> {
        let plan = Plan::new(ctx.node, &ctx.input_types())?;
        expand::append(&plan, ctx)
    }

    /// Per token and key/value head: the decay and the delta retrieval (`d_k · d_v` each when
    /// present), the write (2 per state element) and the reads (2 per element per query head).
    fn flops(&self, node: &LibraryNode, inputs: &[Option<TensorType>], _: &[TensorType]) -> u64 {
        let Ok(plan) = Plan::new(node, inputs) else {
            return 0;
        };
        let dims = [
            &plan.batch,
            &plan.seq,
            &plan.k.heads,
            &plan.k.head,
            &plan.v.head,
        ];
        let [Some(b), Some(t), Some(h), Some(dk), Some(dv)] = dims.map(SymExpr::as_int) else {
            return 0;
        };
        let per_head =
            2 + i64::from(plan.rule.gated) + 2 * i64::from(plan.rule.delta) + 2 * plan.group;
        (b * t * h * dk * dv * per_head).max(0) as u64
    }
}
