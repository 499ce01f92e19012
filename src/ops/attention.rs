//! Attention (opsets 23–25): scaled dot-product attention over `Q`, `K`, `V` with multi-head,
//! grouped-query (GQA) and multi-query head counts, an optional boolean or additive mask, a causal
//! frontier, softcapping, a key/value cache (`past_*` in, `present_*` out), the
//! `qk_matmul_output` debug output in all four modes, and the later additions that hide keys
//! (padding by `nonpad_kv_seqlen` and short masks from 24, sliding windows from 25; see
//! `attention/visible.rs`).
//!
//! `Y = softmax(cap(scale · Q Kᵀ) + bias) V` per (batch, query head), where query head `h` reads
//! key/value head `h / (q_heads / kv_heads)`, `cap(x) = c · tanh(x / c)` when `softcap = c > 0`,
//! and the bias sums the mask (a boolean mask contributes 0 or −∞, a float mask its value) and
//! the causal frontier (key `t` is visible to query `s` iff `t ≤ s + past_length`). Keys and
//! values are the cache followed by the new ones. A query row whose every key is masked gives a
//! zero row (ONNX's errata to opset 23), not NaN.
//!
//! Attention is an operator with its own expansion, not a decomposition into MatMul, Softmax,
//! Reshape, Concat and Where at import, because that keeps it checkable and its code good: the
//! reference `eval` below is a loop nest read off the specification, independent of the maps it
//! checks; head grouping, the causal frontier, the cache concatenation and the 3-D layouts are
//! affine index arithmetic inside maps instead of shape-folded Reshape/Expand chains; and the
//! stages are the ordinary maps other operators produce (a wcr-sum contraction, element-wise maps,
//! the three-pass softmax of `softmax.rs`), so fusion, tiling and the online-softmax rewrite apply
//! to them unchanged. The stages are written out in `attention/expand.rs`.
//!
//! Statistics and scores are computed in f32 (f64 when the inputs are f64 or `softmax_precision`
//! asks for double), which is at least the precision `softmax_precision` requests.

mod expand;
mod visible;

use super::broadcast::{check_unidirectional, source_offsets};
use super::heads::{grid, size, HeadLayout};
use super::movement::type_of;
use super::support::{arg, input_type, opt_arg, require_float, same_dtype};
use super::{check_arity, ExpandCtx, OpError, Operator, TensorType};
use crate::ir::{DType, LibraryNode, SymExpr, Tensor};
use visible::Visibility;

pub static OPS: &[&dyn Operator] = &[&Attention];

const OP: &str = "Attention";

/// ONNX's code for `double`, the one `softmax_precision` that widens the computation.
const ONNX_DOUBLE: i64 = 11;

/// `Attention(Q, K, V, attn_mask?, past_key?, past_value?, nonpad_kv_seqlen?) -> (Y,
/// present_key?, present_value?, qk_matmul_output?)`.
pub struct Attention;

/// What the `qk_matmul_output` output holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum QkMode {
    /// `scale · Q Kᵀ`.
    Scores,
    /// After the softcap.
    Capped,
    /// After the mask and the causal frontier.
    Biased,
    /// After the softmax.
    Probabilities,
}

/// Shapes and attributes of one application, checked.
struct Plan {
    q: HeadLayout,
    k: HeadLayout,
    v: HeadLayout,
    /// Y's layout: Q's, with heads of V's head size.
    y: HeadLayout,
    batch: SymExpr,
    q_seq: SymExpr,
    kv_seq: SymExpr,
    past: SymExpr,
    total: SymExpr,
    /// Query heads per key/value head.
    group: i64,
    /// `None`: `1 / √head`.
    scale: Option<f64>,
    softcap: f64,
    visible: Visibility,
    mode: QkMode,
    /// The mask's element type, when there is one.
    mask: Option<DType>,
    /// `[batch, q_heads, q_seq, keys]` the mask broadcasts to (`keys` may be shorter than the
    /// key sequence from opset 24 on).
    mask_shape: Vec<SymExpr>,
    /// The type scores and statistics are computed in.
    work: DType,
}

fn mismatch(what: &str, a: &SymExpr, b: &SymExpr) -> OpError {
    OpError::shape(OP, format!("{what} differ: {a} vs {b}"))
}

impl Plan {
    fn new(node: &LibraryNode, inputs: &[Option<TensorType>]) -> Result<Plan, OpError> {
        let (q, k, v) = (
            input_type(OP, inputs, 0)?,
            input_type(OP, inputs, 1)?,
            input_type(OP, inputs, 2)?,
        );
        require_float(OP, q)?;
        same_dtype(OP, q, k, 1)?;
        require_float(OP, v)?;
        let qh = node.int("q_num_heads").unwrap_or(0);
        let kvh = node.int("kv_num_heads").unwrap_or(0);
        let ql = HeadLayout::of(OP, "Q", &q.shape, "q_num_heads", qh)?;
        let kl = HeadLayout::of(OP, "K", &k.shape, "kv_num_heads", kvh)?;
        let vl = HeadLayout::of(OP, "V", &v.shape, "kv_num_heads", kvh)?;
        let batch = q.shape[0].clone();
        for (what, t) in [("K", k), ("V", v)] {
            if t.shape[0] != batch {
                return Err(mismatch(
                    &format!("batch sizes of Q and {what}"),
                    &batch,
                    &t.shape[0],
                ));
            }
        }
        if ql.head != kl.head {
            return Err(mismatch("head sizes of Q and K", &ql.head, &kl.head));
        }
        if kl.heads != vl.heads {
            return Err(mismatch("head counts of K and V", &kl.heads, &vl.heads));
        }
        let kv_seq = kl.seq(&k.shape).clone();
        if vl.seq(&v.shape) != &kv_seq {
            return Err(mismatch(
                "sequence lengths of K and V",
                &kv_seq,
                vl.seq(&v.shape),
            ));
        }
        let group = match (ql.heads.as_int(), kl.heads.as_int()) {
            _ if ql.heads == kl.heads => 1,
            (Some(a), Some(b)) if b > 0 && a % b == 0 => a / b,
            _ => {
                return Err(OpError::shape(
                    OP,
                    format!(
                        "{} query heads are not a multiple of {} key/value heads",
                        ql.heads, kl.heads
                    ),
                ))
            }
        };
        let past = Self::past(inputs, &batch, &kl, &vl)?;
        let total = (past.clone() + kv_seq.clone()).simplify();
        let q_seq = ql.seq(&q.shape).clone();
        let mut mask_shape = vec![
            batch.clone(),
            ql.heads.clone(),
            q_seq.clone(),
            total.clone(),
        ];
        let mut mask_len = None;
        let mask = match inputs.get(3).and_then(|t| t.as_ref()) {
            Some(m) => {
                if m.dtype != DType::Bool && m.dtype != q.dtype {
                    return Err(OpError::shape(
                        OP,
                        format!("attn_mask must be bool or {}, got {}", q.dtype, m.dtype),
                    ));
                }
                let keys = m.shape.last().and_then(SymExpr::as_int);
                if let (Some(k), Some(t)) = (keys, total.as_int()) {
                    if k > 1 && k < t {
                        mask_len = Some(SymExpr::Int(k));
                        mask_shape[3] = SymExpr::Int(k);
                    }
                }
                check_unidirectional(OP, "attn_mask", &m.shape, &mask_shape)?;
                Some(m.dtype)
            }
            None => None,
        };
        let nonpad = match inputs.get(6).and_then(|t| t.as_ref()) {
            Some(n) if n.dtype == DType::I64 && n.shape == [batch.clone()] => true,
            Some(n) => {
                return Err(OpError::shape(
                    OP,
                    format!(
                        "nonpad_kv_seqlen must be int64 [batch], got {} {:?}",
                        n.dtype, n.shape
                    ),
                ))
            }
            None => false,
        };
        let window = |attr: &str| node.int(attr).filter(|&w| w >= 0);
        let visible = Visibility {
            causal: node.int("is_causal").unwrap_or(0) != 0,
            past: inputs.get(4).and_then(|t| t.as_ref()).map(|_| past.clone()),
            nonpad,
            q_seq: q_seq.clone(),
            mask_len,
            left: window("left_window_size"),
            right: window("right_window_size"),
        };
        let softcap = node.float("softcap").unwrap_or(0.0);
        if softcap.is_nan() || softcap < 0.0 {
            let message = format!("must be non-negative, got {softcap}");
            return Err(OpError::attr(OP, "softcap", message));
        }
        let mode = match node.int("qk_matmul_output_mode").unwrap_or(0) {
            0 => QkMode::Scores,
            1 => QkMode::Capped,
            2 => QkMode::Biased,
            3 => QkMode::Probabilities,
            m => {
                let message = format!("expected 0, 1, 2 or 3, got {m}");
                return Err(OpError::attr(OP, "qk_matmul_output_mode", message));
            }
        };
        let wide = q.dtype == DType::F64 || node.int("softmax_precision") == Some(ONNX_DOUBLE);
        Ok(Plan {
            y: ql.with_head(vl.head.clone()),
            q: ql,
            k: kl,
            v: vl,
            batch,
            q_seq,
            kv_seq,
            past,
            total,
            group,
            scale: node.float("scale"),
            softcap,
            visible,
            mode,
            mask,
            mask_shape,
            work: if wide { DType::F64 } else { DType::F32 },
        })
    }

    /// The cache length: `past_key` and `past_value` come together, 4-D, matching K and V.
    fn past(
        inputs: &[Option<TensorType>],
        batch: &SymExpr,
        k: &HeadLayout,
        v: &HeadLayout,
    ) -> Result<SymExpr, OpError> {
        let get = |i: usize| inputs.get(i).and_then(|t| t.as_ref());
        match (get(4), get(5)) {
            (None, None) => Ok(SymExpr::Int(0)),
            (Some(pk), Some(pv)) => {
                let len = pk.shape.get(2).cloned().unwrap_or(SymExpr::Int(0));
                for (what, t, layout) in [("past_key", pk, k), ("past_value", pv, v)] {
                    let want = HeadLayout::split(layout.heads.clone(), layout.head.clone())
                        .shape(batch, &len);
                    if t.shape != want {
                        return Err(OpError::shape(
                            OP,
                            format!("{what} has shape {:?}, expected {want:?}", t.shape),
                        ));
                    }
                }
                Ok(len)
            }
            _ => Err(OpError::shape(
                OP,
                "past_key and past_value must be given together",
            )),
        }
    }

    /// The 4-D layout of the keys (`v = false`) or values after the cache.
    fn cache(&self, v: bool) -> HeadLayout {
        let l = if v { &self.v } else { &self.k };
        HeadLayout::split(l.heads.clone(), l.head.clone())
    }

    /// `[batch, q_heads, q_seq, total]`: the scores' shape.
    fn scores_shape(&self) -> Vec<SymExpr> {
        vec![
            self.batch.clone(),
            self.q.heads.clone(),
            self.q_seq.clone(),
            self.total.clone(),
        ]
    }

    fn output_types(&self, q: DType, v: DType) -> Vec<TensorType> {
        vec![
            TensorType::new(v, self.y.shape(&self.batch, &self.q_seq)),
            TensorType::new(q, self.cache(false).shape(&self.batch, &self.total)),
            TensorType::new(v, self.cache(true).shape(&self.batch, &self.total)),
            TensorType::new(q, self.scores_shape()),
        ]
    }
}

impl Operator for Attention {
    fn name(&self) -> &'static str {
        OP
    }

    fn input_count(&self) -> (usize, usize) {
        (3, 7)
    }

    fn output_count(&self) -> usize {
        4
    }

    fn infer(
        &self,
        node: &LibraryNode,
        inputs: &[Option<TensorType>],
        _consts: &[Option<&Tensor>],
    ) -> Result<Vec<TensorType>, OpError> {
        check_arity(self, inputs.len())?;
        let plan = Plan::new(node, inputs)?;
        let (q, v) = (input_type(OP, inputs, 0)?, input_type(OP, inputs, 2)?);
        Ok(plan.output_types(q.dtype, v.dtype))
    }

    fn eval(&self, node: &LibraryNode, inputs: &[Option<&Tensor>]) -> Result<Vec<Tensor>, OpError> {
        let types: Vec<Option<TensorType>> = inputs.iter().map(|t| t.map(type_of)).collect();
        let plan = Plan::new(node, &types)?;
        let (q, k, v) = (
            arg(OP, inputs, 0)?,
            arg(OP, inputs, 1)?,
            arg(OP, inputs, 2)?,
        );
        let [batch, heads, q_seq, total] =
            [&plan.batch, &plan.q.heads, &plan.q_seq, &plan.total].map(size);
        let (past, kv_heads, head) = (size(&plan.past), size(&plan.k.heads), size(&plan.q.head));
        let v_head = size(&plan.v.head);
        // The caches followed by the new keys and values: the present outputs.
        let present = |cache: Option<&Tensor>, new: &Tensor, layout: &HeadLayout, width: usize| {
            let mut out = Vec::with_capacity(batch * kv_heads * total * width);
            for (b, h, t) in grid(batch, kv_heads, total) {
                for d in 0..width {
                    out.push(match (t < past, cache) {
                        (true, Some(c)) => c.get_f64(((b * kv_heads + h) * past + t) * width + d),
                        _ => new.get_f64(layout.offset(&new.shape, [b, h, t - past, d])),
                    });
                }
            }
            out
        };
        let keys = present(opt_arg(inputs, 4), k, &plan.k, head);
        let values = present(opt_arg(inputs, 5), v, &plan.v, v_head);
        let scale = plan.scale.unwrap_or(1.0 / (head as f64).sqrt());
        let mask_keys = size(&plan.mask_shape[3]);
        let mask_full = [batch, heads, q_seq, mask_keys];
        let mask = opt_arg(inputs, 3).map(|m| (m, source_offsets(&m.shape, &mask_full)));
        let nonpad = opt_arg(inputs, 6).map(Tensor::to_i64_vec);
        let y_shape: Vec<usize> = plan
            .y
            .shape(&plan.batch, &plan.q_seq)
            .iter()
            .map(size)
            .collect();
        let mut y = vec![0.0; y_shape.iter().product()];
        let mut qk = Vec::with_capacity(batch * heads * q_seq * total);
        for (b, h, s) in grid(batch, heads, q_seq) {
            let kv = h / plan.group as usize;
            let row = |t: usize| (b * kv_heads + kv) * total + t;
            let scores: Vec<f64> = (0..total)
                .map(|t| {
                    let dot: f64 = (0..head)
                        .map(|d| {
                            q.get_f64(plan.q.offset(&q.shape, [b, h, s, d]))
                                * keys[row(t) * head + d]
                        })
                        .sum();
                    scale * dot
                })
                .collect();
            let capped: Vec<f64> = match plan.softcap {
                c if c > 0.0 => scores.iter().map(|x| c * (x / c).tanh()).collect(),
                _ => scores.clone(),
            };
            let biased: Vec<f64> = (0..total)
                .map(|t| {
                    let n = nonpad.as_ref().map(|n| n[b]);
                    if plan.visible.hidden(s as i64, t as i64, n) {
                        return f64::NEG_INFINITY;
                    }
                    let at = ((b * heads + h) * q_seq + s) * mask_keys + t;
                    let mask_bias = mask.as_ref().map_or(0.0, |(m, src)| match m.dtype() {
                        DType::Bool if m.get_f64(src[at]) == 0.0 => f64::NEG_INFINITY,
                        DType::Bool => 0.0,
                        _ => m.get_f64(src[at]),
                    });
                    capped[t] + mask_bias
                })
                .collect();
            let max = biased.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            let probs: Vec<f64> = match max {
                m if m == f64::NEG_INFINITY => vec![0.0; total],
                m => {
                    let e: Vec<f64> = biased.iter().map(|x| (x - m).exp()).collect();
                    let sum: f64 = e.iter().sum();
                    e.iter().map(|x| x / sum).collect()
                }
            };
            for d in 0..v_head {
                let at = plan.y.offset(&y_shape, [b, h, s, d]);
                y[at] = (0..total)
                    .map(|t| probs[t] * values[row(t) * v_head + d])
                    .sum();
            }
            qk.extend(match plan.mode {
                QkMode::Scores => scores,
                QkMode::Capped => capped,
                QkMode::Biased => biased,
                QkMode::Probabilities => probs,
            });
        }
        let types = plan.output_types(q.dtype(), v.dtype());
        let shape = |i: usize| types[i].shape.iter().map(size).collect::<Vec<_>>();
        Ok(vec![
            Tensor::from_f64(v.dtype(), y_shape, &y),
            Tensor::from_f64(k.dtype(), shape(1), &keys),
            Tensor::from_f64(v.dtype(), shape(2), &values),
            Tensor::from_f64(q.dtype(), shape(3), &qk),
        ])
    }

    fn expand(&self, _implementation: &str, ctx: &mut ExpandCtx) -> Result<(), OpError> {
        let plan = Plan::new(ctx.node, &ctx.input_types())?;
        expand::Stages::new(&plan, ctx)?.append(ctx)
    }

    fn flops(&self, node: &LibraryNode, inputs: &[Option<TensorType>], _: &[TensorType]) -> u64 {
        // Two contractions (2 per multiply-add) and about 8 per score for scaling and softmax.
        let Ok(plan) = Plan::new(node, inputs) else {
            return 0;
        };
        let dims = [
            &plan.batch,
            &plan.q.heads,
            &plan.q_seq,
            &plan.total,
            &plan.q.head,
            &plan.v.head,
        ];
        match dims.map(SymExpr::as_int) {
            [Some(b), Some(h), Some(s), Some(t), Some(d), Some(dv)] => {
                (b * h * s * t * (2 * d + 2 * dv + 8)).max(0) as u64
            }
            _ => 0,
        }
    }
}
