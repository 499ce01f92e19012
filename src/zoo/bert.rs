//! A BERT encoder as `torch.onnx.export(BertModel(config).eval(), (input_ids, attention_mask),
//! dynamic_axes={…: {0: "batch_size", 1: "sequence"}})` writes it with eager attention: embeddings
//! through Gather (position and token-type ids sliced from buffers to the sequence length read
//! with Shape), the extended attention mask (Unsqueeze, Cast, `(1 - m) * min`), per layer the
//! `transpose_for_scores` shape subgraphs (Shape → Gather → Unsqueeze → Concat → Reshape, and
//! `size()[:-2]` as Shape → Slice → Concat), scaled scores, Softmax, the erf form of GELU, and the
//! pooler (Gather of token 0 → Gemm → Tanh). Opset 17 writes LayerNormalization; opset 13 the
//! ReduceMean/Sub/Pow/ReduceMean/Add/Sqrt/Div/Mul/Add decomposition. [`BertConfig::full`] is
//! the network suite's BERT-base encoder layer.

use super::net::{int, ints, Exported, Net};
use super::torch_idioms::{
    self, gelu, layer_norm_params, reshape, scope, size_of, split_heads, Module,
};
use crate::ir::DType;
use crate::onnx::proto::tensor_proto::DataType;

pub const INPUT_IDS: &str = "input_ids";
pub const ATTENTION_MASK: &str = "attention_mask";
pub const LAST_HIDDEN: &str = "last_hidden_state";
pub const POOLED: &str = "pooler_output";
/// The symbolic input dimensions, bound at import (`--dim batch_size=1 --dim sequence=128`).
pub const BATCH_SIZE: &str = "batch_size";
pub const SEQUENCE: &str = "sequence";

#[derive(Clone, Copy, Debug)]
pub struct BertConfig {
    pub vocab: i64,
    pub hidden: i64,
    pub heads: i64,
    pub layers: usize,
    pub intermediate: i64,
    pub max_positions: i64,
    pub opset: i64,
    /// What masked positions add to the scores: -10000 (older transformers) or the f32 minimum.
    pub mask_min: f32,
}

impl BertConfig {
    /// One layer of BERT-base (`bert-base-uncased`: hidden 768, 12 heads, FFN 3072, vocabulary
    /// 30522, 512 positions) as `BertModel` exports it: the embeddings, the layer and the pooler.
    /// The embeddings and pooler are what a `BertModel` export with `num_hidden_layers=1`
    /// contains and cost under 1% of the layer's FLOPs, so the model is a real export rather
    /// than a hand-cut fragment; the suite runs it at [`FULL_DIMS`].
    pub fn full() -> Self {
        BertConfig {
            vocab: 30522,
            hidden: 768,
            heads: 12,
            layers: 1,
            intermediate: 3072,
            max_positions: 512,
            opset: 17,
            mask_min: f32::MIN,
        }
    }

    /// The same structure at hidden size 32 (4 heads), for tests; run at [`SMALL_DIMS`].
    pub fn small() -> Self {
        BertConfig {
            vocab: 50,
            hidden: 32,
            heads: 4,
            layers: 1,
            intermediate: 64,
            max_positions: 16,
            opset: 17,
            mask_min: f32::MIN,
        }
    }
}

/// [`BertConfig::full`]'s input sizes: one sequence of 128 tokens.
pub const FULL_DIMS: [(&str, i64); 2] = [(BATCH_SIZE, 1), (SEQUENCE, 128)];
/// [`BertConfig::small`]'s input sizes: two sequences of 8 tokens.
pub const SMALL_DIMS: [(&str, i64); 2] = [(BATCH_SIZE, 2), (SEQUENCE, 8)];

const LN_EPS: f32 = 1e-12;

/// `x @ W.T + b` for an `nn.Linear` applied to a 3-D tensor (see [`torch_idioms::linear`]).
fn linear(net: &mut Net, module: &str, x: &str, fan_in: i64, fan_out: i64) -> String {
    torch_idioms::linear(net, &Module::listed(module), x, (fan_in, fan_out), true)
}

fn layer_norm(net: &mut Net, cfg: &BertConfig, module: &str, x: &str, width: i64) -> String {
    if cfg.opset >= 17 {
        return torch_idioms::layer_norm(net, &Module::listed(module), x, width, LN_EPS);
    }
    let scope = scope(module);
    let (w, b) = layer_norm_params(net, module, width);
    let mean_attrs = || vec![("axes", ints(&[-1])), ("keepdims", int(1))];
    let mean = net.op(&scope, "ReduceMean", &[x], mean_attrs());
    let centred = net.op(&scope, "Sub", &[x, &mean], vec![]);
    let two = net.const_f32(&scope, 2.0);
    let square = net.op(&scope, "Pow", &[&centred, &two], vec![]);
    let var = net.op(&scope, "ReduceMean", &[&square], mean_attrs());
    let eps = net.const_f32(&scope, LN_EPS);
    let var_eps = net.op(&scope, "Add", &[&var, &eps], vec![]);
    let std = net.op(&scope, "Sqrt", &[&var_eps], vec![]);
    let normed = net.op(&scope, "Div", &[&centred, &std], vec![]);
    let scaled = net.op(&scope, "Mul", &[&normed, &w], vec![]);
    net.op(&scope, "Add", &[&scaled, &b], vec![])
}

fn attention(net: &mut Net, cfg: &BertConfig, l: usize, h: &str, mask: &str) -> String {
    let module = format!("encoder.layer.{l}.attention.self");
    let s = scope(&module);
    let hd = cfg.hidden;
    let q = linear(net, &format!("{module}.query"), h, hd, hd);
    let k = linear(net, &format!("{module}.key"), h, hd, hd);
    let v = linear(net, &format!("{module}.value"), h, hd, hd);
    let (heads, d) = (cfg.heads, cfg.hidden / cfg.heads);
    let q = split_heads(net, cfg.opset, &s, &q, (heads, d), &[0, 2, 1, 3]);
    // `key.transpose(-1, -2)` after the permute: the exporter fuses the two transposes.
    let k = split_heads(net, cfg.opset, &s, &k, (heads, d), &[0, 2, 3, 1]);
    let v = split_heads(net, cfg.opset, &s, &v, (heads, d), &[0, 2, 1, 3]);
    let scores = net.op(&s, "MatMul", &[&q, &k], vec![]);
    let root = net.const_f32(&s, ((cfg.hidden / cfg.heads) as f32).sqrt());
    let scaled = net.op(&s, "Div", &[&scores, &root], vec![]);
    let masked = net.op(&s, "Add", &[&scaled, mask], vec![]);
    let probs = net.op(&s, "Softmax", &[&masked], vec![("axis", int(-1))]);
    let ctx = net.op(&s, "MatMul", &[&probs, &v], vec![]);
    let ctx = net.op(
        &s,
        "Transpose",
        &[&ctx],
        vec![("perm", ints(&[0, 2, 1, 3]))],
    );
    // `context.size()[:-2] + (all_head_size,)`.
    let shape = net.op(&s, "Shape", &[&ctx], vec![]);
    let start = net.const_i64(&s, &[1], vec![0]);
    let end = net.const_i64(&s, &[1], vec![-2]);
    let axis = net.const_i64(&s, &[1], vec![0]);
    let lead = net.op(&s, "Slice", &[&shape, &start, &end, &axis], vec![]);
    let all_heads = net.const_i64(&s, &[1], vec![cfg.hidden]);
    let target = net.op(&s, "Concat", &[&lead, &all_heads], vec![("axis", int(0))]);
    let ctx = reshape(net, cfg.opset, &s, &ctx, &target);
    let out = format!("encoder.layer.{l}.attention.output");
    let dense = linear(net, &format!("{out}.dense"), &ctx, hd, hd);
    let sum = net.op(&scope(&out), "Add", &[&dense, h], vec![]);
    layer_norm(net, cfg, &format!("{out}.LayerNorm"), &sum, hd)
}

fn feed_forward(net: &mut Net, cfg: &BertConfig, l: usize, h: &str) -> String {
    let inter = format!("encoder.layer.{l}.intermediate");
    let up = linear(
        net,
        &format!("{inter}.dense"),
        h,
        cfg.hidden,
        cfg.intermediate,
    );
    let act = gelu(net, &format!("{}/intermediate_act_fn", scope(&inter)), &up);
    let out = format!("encoder.layer.{l}.output");
    let down = linear(
        net,
        &format!("{out}.dense"),
        &act,
        cfg.intermediate,
        cfg.hidden,
    );
    let sum = net.op(&scope(&out), "Add", &[&down, h], vec![]);
    layer_norm(net, cfg, &format!("{out}.LayerNorm"), &sum, cfg.hidden)
}

/// Word + token-type + position embeddings and their LayerNorm.
fn embeddings(net: &mut Net, cfg: &BertConfig) -> String {
    let s = "/embeddings";
    let hd = cfg.hidden;
    let seq = size_of(net, s, INPUT_IDS, 1);
    let zero = net.const_i64(s, &[1], vec![0]);
    let one = net.const_i64(s, &[1], vec![1]);
    // Registered buffers are written as int64 initializers.
    let positions: Vec<i64> = (0..cfg.max_positions).collect();
    let pos_buffer = "embeddings.position_ids";
    net.buffer_i64(pos_buffer, &[1, cfg.max_positions], positions);
    let type_buffer = "embeddings.token_type_ids";
    net.buffer_i64(
        type_buffer,
        &[1, cfg.max_positions],
        vec![0; cfg.max_positions as usize],
    );
    let position_ids = net.op(s, "Slice", &[pos_buffer, &zero, &seq, &one], vec![]);
    let types = net.op(s, "Slice", &[type_buffer, &zero, &seq, &one], vec![]);
    let batch = size_of(net, s, INPUT_IDS, 0);
    let expanded = net.op(s, "Concat", &[&batch, &seq], vec![("axis", int(0))]);
    let token_type_ids = net.op(s, "Expand", &[&types, &expanded], vec![]);
    let table = |net: &mut Net, name: &str, rows: i64| {
        net.weight(&format!("embeddings.{name}.weight"), &[rows, hd], 0.0, 1.0)
    };
    let words = table(net, "word_embeddings", cfg.vocab);
    let token_types = table(net, "token_type_embeddings", 2);
    let positions = table(net, "position_embeddings", cfg.max_positions);
    let gather = |net: &mut Net, module: &str, t: &str, ids: &str| {
        net.op(&format!("{s}/{module}"), "Gather", &[t, ids], vec![])
    };
    let w = gather(net, "word_embeddings", &words, INPUT_IDS);
    let t = gather(net, "token_type_embeddings", &token_types, &token_type_ids);
    let sum = net.op(s, "Add", &[&w, &t], vec![]);
    let p = gather(net, "position_embeddings", &positions, &position_ids);
    let sum = net.op(s, "Add", &[&sum, &p], vec![]);
    layer_norm(net, cfg, "embeddings.LayerNorm", &sum, hd)
}

/// `(1.0 - mask[:, None, None, :].to(float)) * min`.
fn extended_mask(net: &mut Net, cfg: &BertConfig) -> String {
    let axes1 = net.const_i64("", &[1], vec![1]);
    let m = net.op("", "Unsqueeze", &[ATTENTION_MASK, &axes1], vec![]);
    let axes2 = net.const_i64("", &[1], vec![2]);
    let m = net.op("", "Unsqueeze", &[&m, &axes2], vec![]);
    let m = net.op("", "Cast", &[&m], vec![("to", int(DataType::Float as i64))]);
    let one = net.const_f32("", 1.0);
    let inverted = net.op("", "Sub", &[&one, &m], vec![]);
    let min = net.const_f32("", cfg.mask_min);
    net.op("", "Mul", &[&inverted, &min], vec![])
}

/// Writes the model; its inputs are `[batch_size, sequence]` token ids and mask.
pub fn bert(cfg: &BertConfig, seed: u64) -> Exported {
    let mut net = Net::new("torch_jit", cfg.opset, seed);
    for name in [INPUT_IDS, ATTENTION_MASK] {
        net.input(name, DType::I64, &[BATCH_SIZE, SEQUENCE]);
    }
    let mut h = embeddings(&mut net, cfg);
    let mask = extended_mask(&mut net, cfg);
    for l in 0..cfg.layers {
        h = attention(&mut net, cfg, l, &h, &mask);
        h = feed_forward(&mut net, cfg, l, &h);
    }
    let s = "/pooler";
    let first = net.const_i64(s, &[], vec![0]);
    let cls = net.op(s, "Gather", &[&h, &first], vec![("axis", int(1))]);
    let pooler = Module::sequential("pooler.dense");
    let dense = torch_idioms::gemm(&mut net, &pooler, &cls, (cfg.hidden, cfg.hidden), None);
    net.op_into("/pooler/activation", "Tanh", &[&dense], POOLED, vec![]);
    // The last hidden state is a graph output under its own name.
    net.op_into("", "Identity", &[&h], LAST_HIDDEN, vec![]);
    let hd = cfg.hidden.to_string();
    net.output(LAST_HIDDEN, &[BATCH_SIZE, SEQUENCE, &hd]);
    net.output(POOLED, &[BATCH_SIZE, &hd]);
    net.finish()
}
