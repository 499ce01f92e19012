#!/usr/bin/env python3
"""Writes a small zoo of models the way today's exporters write them, with their inputs and the
outputs an independent oracle computes for those inputs.

    python3 scripts/real_models.py OUTDIR

Needs the `onnx` package at 1.18 or newer (opset 23: Attention, RotaryEmbedding,
RMSNormalization) and numpy; nothing is downloaded. Each model is realistic in structure (the
operators, attributes, dynamic axes and shape subgraphs current exporters emit) and small in
width. For every model NAME it writes:

    OUTDIR/NAME/model.onnx
    OUTDIR/NAME/input_I.bin, output_I.bin   raw little-endian tensors (signature order)

and `OUTDIR/models.json` lists, per model, its opset and IR version, its operators, the
`--dim NAME=VALUE` and `--shape INPUT=DIMS` bindings to import it with, each input's and
output's name, element type and shape, and the oracle that computed the outputs: ONNX Runtime
when it runs the model, otherwise `onnx.reference.ReferenceEvaluator`, with ONNX Runtime's
reason recorded (`oracle_note`). tests/suite/real_models/ imports, lowers and compares them.

Exit status 3 with a line `UNAVAILABLE why` when the onnx package is missing or too old.
"""

import json
import os
import sys

try:
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper
except ImportError as e:
    print("UNAVAILABLE " + str(e))
    sys.exit(3)

if tuple(int(p) for p in onnx.__version__.split(".")[:2]) < (1, 18):
    print("UNAVAILABLE onnx %s is older than 1.18 (opset 23)" % onnx.__version__)
    sys.exit(3)

F32, I64 = TensorProto.FLOAT, TensorProto.INT64


class Graph:
    """Builds one graph in program order, naming values the way torch.onnx names them."""

    def __init__(self, seed):
        self.rng = np.random.default_rng(seed)
        self.nodes, self.inits, self.inputs, self.outputs = [], [], [], []
        self.count = {}

    def fresh(self, scope, op):
        key = scope + "/" + op
        n = self.count.get(key, 0)
        self.count[key] = n + 1
        return key if n == 0 else "%s_%d" % (key, n)

    def op(self, op, inputs, scope="", outputs=1, **attrs):
        name = self.fresh(scope, op)
        outs = [name + "_output_%d" % i for i in range(outputs)]
        self.nodes.append(helper.make_node(op, inputs, outs, name=name, **attrs))
        return outs[0] if outputs == 1 else outs

    def const(self, value, name, dtype=np.float32):
        self.inits.append(numpy_helper.from_array(np.asarray(value, dtype=dtype), name))
        return name

    def weight(self, name, shape, scale=None):
        fan_in = int(np.prod(shape[1:])) if len(shape) > 1 else shape[0]
        scale = scale if scale is not None else 1.0 / np.sqrt(max(fan_in, 1))
        return self.const(self.rng.standard_normal(shape) * scale, name)

    def ints(self, values, name):
        return self.const(values, name, np.int64)

    def input(self, name, elem, dims):
        self.inputs.append(helper.make_tensor_value_info(name, elem, dims))
        return name

    def output(self, value, name, dims=None):
        """Makes `value` a graph output called `name` (renaming its producer's output); its
        shape comes from shape inference unless `dims` states it."""
        producer = next(n for n in self.nodes if value in n.output)
        producer.output[list(producer.output).index(value)] = name
        self.outputs.append(helper.make_tensor_value_info(name, F32, dims))

    def linear(self, x, scope, cin, cout):
        """torch.nn.Linear on a 3-D activation: MatMul with the transposed weight, then Add."""
        w = self.weight(scope + ".weight_t", [cin, cout])
        b = self.weight(scope + ".bias", [cout], 0.1)
        return self.op("Add", [self.op("MatMul", [x, w], scope), b], scope)

    def conv(self, x, scope, cin, cout, k, stride=1, group=1, bias=True):
        w = self.weight(scope + ".weight", [cout, cin // group, k, k])
        ins = [x, w] + ([self.weight(scope + ".bias", [cout], 0.1)] if bias else [])
        pad = k // 2
        return self.op("Conv", ins, scope, kernel_shape=[k, k], strides=[stride, stride],
                       pads=[pad] * 4, group=group, dilations=[1, 1])

    def batchnorm(self, x, scope, c):
        scale = self.const(1 + 0.1 * self.rng.standard_normal(c), scope + ".weight")
        bias = self.const(0.1 * self.rng.standard_normal(c), scope + ".bias")
        mean = self.const(0.1 * self.rng.standard_normal(c), scope + ".running_mean")
        var = self.const(0.5 + self.rng.random(c), scope + ".running_var")
        return self.op("BatchNormalization", [x, scale, bias, mean, var], scope, epsilon=1e-5,
                       momentum=0.9)

    def layernorm(self, x, scope, c):
        scale = self.const(1 + 0.1 * self.rng.standard_normal(c), scope + ".weight")
        bias = self.const(0.1 * self.rng.standard_normal(c), scope + ".bias")
        return self.op("LayerNormalization", [x, scale, bias], scope, axis=-1, epsilon=1e-5)

    def silu(self, x, scope):
        return self.op("Mul", [x, self.op("Sigmoid", [x], scope)], scope)

    def dim(self, x, axis, scope):
        """`x.size(axis)` as torch writes it: Shape, Gather of a scalar index, Unsqueeze."""
        idx = self.ints(axis, "%s.size%d" % (scope, axis))
        g = self.op("Gather", [self.op("Shape", [x], scope), idx], scope, axis=0)
        return self.op("Unsqueeze", [g, self.ints([0], scope + ".unsq_axes%d" % axis)], scope)

    def model(self, name, opset, ir_version=None, producer=("pytorch", "2.5.0")):
        graph = helper.make_graph(self.nodes, name, self.inputs, self.outputs, self.inits)
        kw = {"producer_name": producer[0], "producer_version": producer[1]}
        if ir_version is not None:
            kw["ir_version"] = ir_version
        m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], **kw)
        # Exporters declare each output's type and (symbolic) shape: take them from inference.
        # (onnx infers no type through GroupNormalization: such outputs state their shape.)
        inferred = onnx.shape_inference.infer_shapes(m).graph
        known = {vi.name: vi for vi in list(inferred.value_info) + list(inferred.output)}
        for out in m.graph.output:
            if not out.type.tensor_type.HasField("shape"):
                out.CopyFrom(known[out.name])
        onnx.checker.check_model(m, full_check=True)
        return m


def vit_block(g):
    """A ViT encoder (timm/HF export, opset 23): patch Conv, class token expanded to the batch
    through a shape subgraph, position embedding, pre-norm blocks with the Attention operator on
    3-D projections, Gelu MLPs, the class token's features through the head."""
    hidden, heads, patch, image, classes = 32, 4, 8, 32, 10
    tokens = (image // patch) ** 2
    x = g.input("pixel_values", F32, ["batch_size", 3, image, image])
    w = g.weight("patch_embed.proj.weight", [hidden, 3, patch, patch])
    p = g.op("Conv", [x, w, g.weight("patch_embed.proj.bias", [hidden], 0.1)],
             "/patch_embed/proj", kernel_shape=[patch, patch], strides=[patch, patch])
    # `x.flatten(2).transpose(1, 2)`: a Reshape to a shape computed from the batch size.
    batch = g.dim(x, 0, "/patch_embed")
    shape = g.op("Concat", [batch, g.ints([hidden, -1], "patch.shape_tail")], "/patch_embed",
                 axis=0)
    p = g.op("Transpose", [g.op("Reshape", [p, shape], "/patch_embed")], "/patch_embed",
             perm=[0, 2, 1])
    cls_shape = g.op("Concat", [batch, g.ints([1, hidden], "cls.shape_tail")], "/cls", axis=0)
    cls = g.op("Expand", [g.weight("cls_token", [1, 1, hidden], 0.5), cls_shape], "/cls")
    h = g.op("Concat", [cls, p], "", axis=1)
    h = g.op("Add", [h, g.weight("pos_embed", [1, tokens + 1, hidden], 0.5)], "/pos")
    for layer in range(2):
        s = "/blocks.%d" % layer
        n = g.layernorm(h, s + "/norm1", hidden)
        q, k, v = (g.linear(n, "%s/attn/%s" % (s, t), hidden, hidden) for t in "qkv")
        a = g.op("Attention", [q, k, v], s + "/attn", q_num_heads=heads, kv_num_heads=heads)
        h = g.op("Add", [h, g.linear(a, s + "/attn/proj", hidden, hidden)], s)
        n = g.layernorm(h, s + "/norm2", hidden)
        m = g.op("Gelu", [g.linear(n, s + "/mlp/fc1", hidden, 2 * hidden)], s + "/mlp")
        h = g.op("Add", [h, g.linear(m, s + "/mlp/fc2", 2 * hidden, hidden)], s)
    h = g.layernorm(h, "/norm", hidden)
    first = g.op("Gather", [h, g.ints(0, "cls_index")], "/head", axis=1)
    w = g.weight("head.weight", [classes, hidden])
    g.output(g.op("Gemm", [first, w, g.weight("head.bias", [classes], 0.1)], "/head", transB=1),
             "logits")
    return g.model("vit_block", 23, ir_version=11), {"dims": {"batch_size": 2}}


def llama_decoder(g):
    """A LLaMA-style decoder layer (opset 23): RMSNormalization, RotaryEmbedding on 4-D heads
    with the position ids as an input, Attention with grouped-query heads (4 query heads on 2
    key/value heads) and the causal mask, a SiLU-gated MLP, the LM head."""
    vocab, hidden, heads, kv_heads, inter, max_pos = 40, 32, 4, 2, 48, 16
    d = hidden // heads
    ids = g.input("input_ids", I64, ["batch_size", "sequence_length"])
    pos = g.input("position_ids", I64, ["batch_size", "sequence_length"])
    h = g.op("Gather", [g.weight("embed_tokens.weight", [vocab, hidden], 1.0), ids],
             "/model/embed_tokens")
    inv = 1.0 / (10000 ** (np.arange(0, d, 2) / d))
    freqs = np.outer(np.arange(max_pos), inv)
    cos, sin = g.const(np.cos(freqs), "rotary.cos_cache"), g.const(np.sin(freqs), "rotary.sin_cache")

    def rms(x, scope):
        w = g.const(1 + 0.1 * g.rng.standard_normal(hidden), scope + ".weight")
        return g.op("RMSNormalization", [x, w], scope, axis=-1, epsilon=1e-6)

    def heads_of(x, n, scope):
        r = g.op("Reshape", [x, g.ints([0, 0, n, d], scope + ".split_heads")], scope)
        return g.op("Transpose", [r], scope, perm=[0, 2, 1, 3])

    s = "/model/layers.0"
    n = rms(h, s + "/input_layernorm")
    wq = g.weight(s + ".q_proj.weight_t", [hidden, heads * d])
    wk = g.weight(s + ".k_proj.weight_t", [hidden, kv_heads * d])
    wv = g.weight(s + ".v_proj.weight_t", [hidden, kv_heads * d])
    q = heads_of(g.op("MatMul", [n, wq], s + "/self_attn/q_proj"), heads, s + "/self_attn/q")
    k = heads_of(g.op("MatMul", [n, wk], s + "/self_attn/k_proj"), kv_heads, s + "/self_attn/k")
    v = heads_of(g.op("MatMul", [n, wv], s + "/self_attn/v_proj"), kv_heads, s + "/self_attn/v")
    q = g.op("RotaryEmbedding", [q, cos, sin, pos], s + "/self_attn/rotary_q")
    k = g.op("RotaryEmbedding", [k, cos, sin, pos], s + "/self_attn/rotary_k")
    a = g.op("Attention", [q, k, v], s + "/self_attn", is_causal=1)
    a = g.op("Transpose", [a], s + "/self_attn", perm=[0, 2, 1, 3])
    a = g.op("Reshape", [a, g.ints([0, 0, hidden], s + ".merge_heads")], s + "/self_attn")
    wo = g.weight(s + ".o_proj.weight_t", [hidden, hidden])
    h = g.op("Add", [h, g.op("MatMul", [a, wo], s + "/self_attn/o_proj")], s)
    n = rms(h, s + "/post_attention_layernorm")
    gate = g.op("MatMul", [n, g.weight(s + ".gate_proj.weight_t", [hidden, inter])], s + "/mlp")
    up = g.op("MatMul", [n, g.weight(s + ".up_proj.weight_t", [hidden, inter])], s + "/mlp")
    m = g.op("Mul", [g.silu(gate, s + "/mlp/act_fn"), up], s + "/mlp")
    down = g.op("MatMul", [m, g.weight(s + ".down_proj.weight_t", [inter, hidden])], s + "/mlp")
    h = g.op("Add", [h, down], s)
    h = rms(h, "/model/norm")
    logits = g.op("MatMul", [h, g.weight("lm_head.weight_t", [hidden, vocab])], "/lm_head")
    g.output(logits, "logits")
    return g.model("llama_decoder", 23, ir_version=11), {"dims": {"batch_size": 2, "sequence_length": 8}}


def yolo_head(g):
    """A YOLO-style detector neck and head (ultralytics export, opset 19) on dynamic image
    sizes: Conv + BatchNormalization + SiLU stages, a nearest Resize by scales, a Concat with
    the skip path, the detection Conv, Sigmoid and the Reshape/Transpose to boxes computed from
    the input's shape."""
    x = g.input("images", F32, ["batch", 3, "height", "width"])

    def cbs(x, scope, cin, cout, k, stride=1):
        return g.silu(g.batchnorm(g.conv(x, scope + "/conv", cin, cout, k, stride, bias=False),
                                  scope + "/bn", cout), scope + "/act")

    c1 = cbs(x, "/model.0", 3, 8, 3, 2)
    c2 = cbs(c1, "/model.1", 8, 16, 3, 2)
    c3 = cbs(c2, "/model.2", 16, 16, 3, 2)
    up = g.op("Resize", [c3, "", g.const([1, 1, 2, 2], "up.scales")], "/model.3", mode="nearest",
              coordinate_transformation_mode="asymmetric", nearest_mode="floor")
    cat = g.op("Concat", [up, c2], "/model.4", axis=1)
    f = cbs(cat, "/model.5", 32, 16, 1)
    anchors, per = 3, 5 + 2
    det = g.conv(f, "/model.6/m.0", 16, anchors * per, 1)
    det = g.op("Sigmoid", [det], "/model.6")
    batch = g.dim(x, 0, "/model.6")
    shape = g.op("Concat", [batch, g.ints([anchors, per, -1], "det.shape_tail")], "/model.6",
                 axis=0)
    boxes = g.op("Transpose", [g.op("Reshape", [det, shape], "/model.6")], "/model.6",
                 perm=[0, 1, 3, 2])
    g.output(boxes, "output0")
    return g.model("yolo_head", 19, ir_version=9), {"dims": {"batch": 1, "height": 48, "width": 80}}


def mobilenet_block(g):
    """A MobileNetV3-style network as Paddle/TF exports write it (opset 18): the batch is -1 and
    the image sizes are unnamed dimensions, bound by --shape; Conv + HardSwish, a depthwise Conv
    with BatchNormalization, squeeze-excite (GlobalAveragePool, 1×1 Convs, HardSigmoid, Mul),
    a pointwise Conv with a residual Add, the pooled classifier."""
    x = g.input("x", F32, [-1, 3, "", ""])
    g.inputs[-1].type.tensor_type.shape.dim[2].Clear()
    g.inputs[-1].type.tensor_type.shape.dim[3].Clear()
    h = g.op("HardSwish", [g.conv(x, "conv1", 3, 16, 3, 2)], "conv1")
    dw = g.batchnorm(g.conv(h, "dw", 16, 16, 3, 1, group=16, bias=False), "dw_bn", 16)
    dw = g.op("Relu", [dw], "dw")
    se = g.op("GlobalAveragePool", [dw], "se")
    se = g.op("Relu", [g.conv(se, "se_reduce", 16, 4, 1)], "se")
    se = g.op("HardSigmoid", [g.conv(se, "se_expand", 4, 16, 1)], "se", alpha=1.0 / 6, beta=0.5)
    dw = g.op("Mul", [dw, se], "se")
    pw = g.batchnorm(g.conv(dw, "pw", 16, 16, 1, bias=False), "pw_bn", 16)
    h = g.op("Add", [h, pw], "block")
    pooled = g.op("Flatten", [g.op("GlobalAveragePool", [h], "pool")], "pool", axis=1)
    w = g.weight("fc.weight", [16, 10])
    g.output(g.op("Gemm", [pooled, w, g.weight("fc.bias", [10], 0.1)], "fc"), "softmax_0.tmp_0")
    return g.model("mobilenet_block", 18, ir_version=8,
                   producer=("PaddlePaddle", "2.6.0")), {"shapes": {"x": [2, 3, 40, 40]}}


def unet_block(g):
    """A UNet-style down/up block (diffusers export, opset 21): Conv, GroupNormalization with
    per-channel scale and bias, SiLU, a strided Conv down, ConvTranspose up, Concat with the
    skip connection, the output Conv; dynamic batch and image sizes."""
    x = g.input("sample", F32, ["batch", 4, "height", "width"])

    def gn(x, scope, c, groups):
        scale = g.const(1 + 0.1 * g.rng.standard_normal(c), scope + ".weight")
        bias = g.const(0.1 * g.rng.standard_normal(c), scope + ".bias")
        return g.op("GroupNormalization", [x, scale, bias], scope, num_groups=groups,
                    epsilon=1e-5)

    h = g.conv(x, "/conv_in", 4, 16, 3)
    skip = g.silu(gn(h, "/down/norm1", 16, 4), "/down/act1")
    d = g.conv(skip, "/down/downsample", 16, 32, 3, 2)
    d = g.silu(gn(d, "/mid/norm", 32, 8), "/mid/act")
    w = g.weight("/up/upsample.weight", [32, 16, 4, 4])
    u = g.op("ConvTranspose", [d, w, g.weight("/up/upsample.bias", [16], 0.1)], "/up/upsample",
             kernel_shape=[4, 4], strides=[2, 2], pads=[1, 1, 1, 1])
    cat = g.op("Concat", [u, skip], "/up", axis=1)
    o = g.silu(gn(cat, "/up/norm", 32, 8), "/up/act")
    g.output(g.conv(o, "/conv_out", 32, 4, 3), "out_sample", ["batch", 4, "height", "width"])
    return g.model("unet_block", 21, ir_version=10), {"dims": {"batch": 1, "height": 16, "width": 24}}


def mlp(g):
    """A tabular MLP at opset 17: Gemm layers with transposed weights, LayerNormalization, ReLU,
    Softmax over the classes."""
    x = g.input("features", F32, ["batch_size", 24])
    h = x
    for i, (cin, cout) in enumerate([(24, 32), (32, 32)]):
        s = "/layers.%d" % i
        w = g.weight(s + ".weight", [cout, cin])
        h = g.op("Gemm", [h, w, g.weight(s + ".bias", [cout], 0.1)], s, transB=1)
        h = g.op("Relu", [g.layernorm(h, s + "/norm", cout)], s)
    w = g.weight("/head.weight", [5, 32])
    logits = g.op("Gemm", [h, w, g.weight("/head.bias", [5], 0.1)], "/head", transB=1)
    g.output(g.op("Softmax", [logits], "", axis=-1), "probabilities")
    return g.model("mlp", 17, ir_version=8), {"dims": {"batch_size": 3}}


def bert_block(g):
    """A BERT encoder layer at opset 21, saved with the installed onnx package's default IR
    version: embeddings with position ids from Range over the sequence's size, the extended
    attention mask (Unsqueeze, Cast, Sub, Mul by the float minimum), heads split with Reshape
    and Transpose, scaled scores, Softmax, Gelu (opset 20) in the FFN, LayerNormalization."""
    vocab, hidden, heads, inter, max_pos = 30, 32, 4, 64, 16
    d = hidden // heads
    ids = g.input("input_ids", I64, ["batch_size", "sequence_length"])
    mask = g.input("attention_mask", I64, ["batch_size", "sequence_length"])
    seq = g.op("Gather", [g.op("Shape", [ids], "/embeddings"), g.ints(1, "seq_axis")],
               "/embeddings", axis=0)
    positions = g.op("Range", [g.ints(0, "range_start"), seq, g.ints(1, "range_step")],
                     "/embeddings")
    positions = g.op("Unsqueeze", [positions, g.ints([0], "pos_axes")], "/embeddings")
    e = g.op("Gather", [g.weight("word_embeddings.weight", [vocab, hidden], 1.0), ids],
             "/embeddings/word_embeddings")
    pe = g.op("Gather", [g.weight("position_embeddings.weight", [max_pos, hidden], 1.0),
                         positions], "/embeddings/position_embeddings")
    h = g.layernorm(g.op("Add", [e, pe], "/embeddings"), "/embeddings/LayerNorm", hidden)
    m = g.op("Unsqueeze", [mask, g.ints([1, 2], "mask_axes")], "")
    m = g.op("Cast", [m], "", to=F32)
    m = g.op("Sub", [g.const(1.0, "one"), m], "")
    m = g.op("Mul", [m, g.const(np.finfo(np.float32).min, "float_min")], "")
    s = "/encoder/layer.0/attention/self"

    def split(x, name):
        r = g.op("Reshape", [x, g.ints([0, 0, heads, d], name + ".shape")], s)
        return g.op("Transpose", [r], s, perm=[0, 2, 1, 3])

    q, k, v = (split(g.linear(h, "%s/%s" % (s, t), hidden, hidden), t) for t in
               ("query", "key", "value"))
    kt = g.op("Transpose", [k], s, perm=[0, 1, 3, 2])
    scores = g.op("Div", [g.op("MatMul", [q, kt], s), g.const(np.sqrt(d), "sqrt_d")], s)
    probs = g.op("Softmax", [g.op("Add", [scores, m], s)], s, axis=-1)
    ctx = g.op("Transpose", [g.op("MatMul", [probs, v], s)], s, perm=[0, 2, 1, 3])
    ctx = g.op("Reshape", [ctx, g.ints([0, 0, hidden], "ctx.shape")], s)
    o = "/encoder/layer.0/attention/output"
    h = g.layernorm(g.op("Add", [g.linear(ctx, o + "/dense", hidden, hidden), h], o),
                    o + "/LayerNorm", hidden)
    f = "/encoder/layer.0"
    i = g.op("Gelu", [g.linear(h, f + "/intermediate/dense", hidden, inter)], f + "/intermediate")
    h = g.layernorm(g.op("Add", [g.linear(i, f + "/output/dense", inter, hidden), h],
                         f + "/output"), f + "/output/LayerNorm", hidden)
    g.output(h, "last_hidden_state")
    return g.model("bert_block", 21), {"dims": {"batch_size": 2, "sequence_length": 8}}


MODELS = [vit_block, llama_decoder, yolo_head, mobilenet_block, unet_block, mlp, bert_block]

ELEM_NAMES = {F32: "float32", I64: "int64"}


def concrete_shape(vi, bind):
    """The input's shape with its symbolic, -1 and unnamed dimensions bound."""
    if vi.name in bind.get("shapes", {}):
        return list(bind["shapes"][vi.name])
    dims = []
    for dim in vi.type.tensor_type.shape.dim:
        dims.append(bind["dims"][dim.dim_param] if dim.HasField("dim_param") else dim.dim_value)
    return dims


def make_inputs(model, bind, rng):
    feeds = {}
    for vi in model.graph.input:
        shape = concrete_shape(vi, bind)
        if vi.type.tensor_type.elem_type == F32:
            feeds[vi.name] = rng.standard_normal(shape).astype(np.float32)
        elif vi.name == "position_ids":
            feeds[vi.name] = np.broadcast_to(np.arange(shape[1]), shape).astype(np.int64)
        elif vi.name == "attention_mask":
            m = np.ones(shape, dtype=np.int64)
            m[-1, shape[1] - 3:] = 0  # the last sequence padded at its end
            feeds[vi.name] = m
        else:
            feeds[vi.name] = rng.integers(0, 30, size=shape).astype(np.int64)
    return feeds


def oracle(path, feeds):
    """ONNX Runtime's outputs, or the reference evaluator's when ONNX Runtime cannot run the
    model (with ONNX Runtime's reason)."""
    try:
        import onnxruntime as ort
        sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
        return "onnxruntime", ort.__version__, "", sess.run(None, feeds)
    except ImportError as e:
        note = "onnxruntime not installed (%s)" % e
    except Exception as e:  # ONNX Runtime refuses the model or an operator in it
        note = "onnxruntime: " + str(e).strip().splitlines()[-1][:300]
    from onnx.reference import ReferenceEvaluator
    outs = ReferenceEvaluator(path).run(None, feeds)
    return "onnx.reference", onnx.__version__, note, outs


def write_tensor(path, array):
    np.ascontiguousarray(array).tofile(path)


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    entries = []
    for i, build in enumerate(MODELS):
        model, bind = build(Graph(seed=100 + i))
        bind.setdefault("dims", {})
        bind.setdefault("shapes", {})
        name = model.graph.name
        d = os.path.join(out, name)
        os.makedirs(d, exist_ok=True)
        path = os.path.join(d, "model.onnx")
        onnx.save(model, path)
        feeds = make_inputs(model, bind, np.random.default_rng(7 + i))
        kind, version, note, outs = oracle(path, feeds)
        inputs, outputs = [], []
        for j, vi in enumerate(model.graph.input):
            a = feeds[vi.name]
            write_tensor(os.path.join(d, "input_%d.bin" % j), a)
            inputs.append({"name": vi.name, "dtype": str(a.dtype), "shape": list(a.shape)})
        for j, (vi, a) in enumerate(zip(model.graph.output, outs)):
            write_tensor(os.path.join(d, "output_%d.bin" % j), a)
            outputs.append({"name": vi.name, "dtype": str(a.dtype), "shape": list(a.shape)})
        entries.append({
            "name": name,
            "opset": model.opset_import[0].version,
            "ir_version": model.ir_version,
            "ops": sorted({n.op_type for n in model.graph.node}),
            "dims": bind["dims"],
            "shapes": bind["shapes"],
            "inputs": inputs,
            "outputs": outputs,
            "oracle": kind,
            "oracle_version": version,
            "oracle_note": note,
        })
    with open(os.path.join(out, "models.json.tmp"), "w") as f:
        json.dump({"onnx": onnx.__version__, "models": entries}, f, indent=1)
    os.replace(os.path.join(out, "models.json.tmp"), os.path.join(out, "models.json"))


if __name__ == "__main__":
    main()
