//! YOLOv8 (ultralytics, `yolov8{n,s,…}.yaml`) as `model.export(format="onnx")` writes it without
//! NMS or simplification: the exporter fuses every BatchNorm into its convolution (the fused
//! tensors keep the module's names, `model.<i>.conv.weight/bias`), switches `C2f` to
//! `forward_split`, and runs `torch.onnx.export(..., opset_version=17, do_constant_folding=True,
//! input_names=["images"], output_names=["output0"])` with a static input, after a dry run that
//! caches the anchor grid and strides as constants. So: `Conv` as Conv + SiLU (Sigmoid, Mul);
//! `C2f` as 1×1 conv → `Split` (its `split` input a constant the JIT shares between all splits of
//! the same sizes, `onnx::Split_<n>`) → bottlenecks → `Concat` → 1×1 conv; `SPPF` as three
//! chained 5×5 MaxPools; `nn.Upsample(scale_factor=2)` as `Resize` with an empty `roi` and a
//! constant `scales` input (nearest, asymmetric, floor); the FPN/PAN neck's `Concat`s; and the
//! `Detect` head: per level a box branch (to 4 × 16 DFL bins) and a class branch, concatenated,
//! flattened (Reshape to `[1, no, -1]`), concatenated over levels, split into boxes and classes,
//! DFL (Reshape → Transpose → Softmax → 1×1 Conv with weights 0 … 15 → Reshape), `dist2bbox`
//! (the `chunk(2, 1)` written as Shape/Gather/Add/Div/Mul/Slice, the anchors subtracted and
//! added, centre and size), times the strides, and the sigmoid of the class scores: one
//! `[1, 4 + classes, anchors]` output. Checked against a torch 1.13 re-implementation of the
//! ultralytics modules and of the exporter's preparation.

use super::net::{int, ints, Exported, Net};
use super::torch_idioms::{chunk, conv_attrs, reshape, scope};
use crate::ir::DType;
use crate::onnx::AttrValue;
use std::collections::BTreeMap;

pub const INPUT: &str = "images";
pub const OUTPUT: &str = "output0";
/// DFL bins per box side (`Detect.reg_max`).
pub const REG_MAX: i64 = 16;
/// Downsampling of the three detection levels (P3, P4, P5).
pub const STRIDES: [i64; 3] = [8, 16, 32];
const OPSET: i64 = 17;
/// The `Detect` layer's module (line 22 of the yaml).
const HEAD: &str = "model.22";

#[derive(Clone, Copy, Debug)]
pub struct YoloConfig {
    /// Side of the square input image (a multiple of 32).
    pub size: i64,
    /// The scale's depth multiple: repeats of each `C2f` are `max(round(n · depth), 1)`.
    pub depth: f64,
    /// The scale's width multiple: channels are `ceil(min(c, max_channels) · width / 8) · 8`.
    pub width: f64,
    pub max_channels: i64,
    pub classes: i64,
}

impl YoloConfig {
    /// YOLOv8n on 640×640 images, the 80 COCO classes.
    pub fn full() -> Self {
        YoloConfig {
            size: 640,
            depth: 0.33,
            width: 0.25,
            max_channels: 1024,
            classes: 80,
        }
    }

    /// The same graph at a quarter of YOLOv8n's widths (8 … 64 channels), 8 classes, 64×64.
    pub fn small() -> Self {
        YoloConfig {
            size: 64,
            depth: 0.33,
            width: 0.0625,
            max_channels: 1024,
            classes: 8,
        }
    }

    /// Output channels of a layer the yaml gives `c` channels (`make_divisible`).
    pub fn channels(&self, c: i64) -> i64 {
        let scaled = c.min(self.max_channels) as f64 * self.width;
        (scaled / 8.0).ceil() as i64 * 8
    }

    /// Bottlenecks of a `C2f` the yaml repeats `n` times (Python's `round`: ties to even).
    pub fn repeats(&self, n: usize) -> usize {
        ((n as f64 * self.depth).round_ties_even() as usize).max(1)
    }

    /// Anchor points over all levels (8400 at 640×640).
    pub fn anchors(&self) -> i64 {
        STRIDES.iter().map(|s| (self.size / s).pow(2)).sum()
    }
}

/// The builder: the network and the `split` constants written so far, keyed by their sizes.
struct Yolo<'a> {
    net: Net,
    cfg: &'a YoloConfig,
    splits: BTreeMap<Vec<i64>, String>,
}

/// `Conv`'s kernel and stride.
#[derive(Clone, Copy)]
struct Kernel {
    size: i64,
    stride: i64,
}

const POINTWISE: Kernel = Kernel { size: 1, stride: 1 };
const SAME_3X3: Kernel = Kernel { size: 3, stride: 1 };
const DOWN_3X3: Kernel = Kernel { size: 3, stride: 2 };

/// A module: its `state_dict` prefix and the exporter's scope of its calls.
struct Module {
    path: String,
    at: String,
}

impl Module {
    /// `model.<i>` and submodules reached through attributes and `ModuleList`s.
    fn new(path: &str) -> Self {
        Module {
            path: path.to_string(),
            at: scope(path),
        }
    }

    /// The attribute `name` (a called submodule, which adds a scope level).
    fn child(&self, name: &str) -> Self {
        Module {
            path: format!("{}.{name}", self.path),
            at: format!("{}/{name}", self.at),
        }
    }

    /// Entry `k` of this `nn.Sequential`, which the exporter names `<sequential>.<k>`.
    fn entry(&self, k: usize) -> Self {
        let name = self.at.rsplit('/').next().unwrap_or_default();
        Module {
            path: format!("{}.{k}", self.path),
            at: format!("{}/{name}.{k}", self.at),
        }
    }
}

impl Yolo<'_> {
    /// `nn.Conv2d(cin, cout, k, s, padding=k // 2)` with a bias (the fused BN's, or the head's
    /// own). Without its BatchNorms a SiLU network at He gain sits at the edge of chaos: with
    /// some seeds its activations grow by orders of magnitude over the 60 layers, with others
    /// they shrink; further below, the image's influence fades out. 95% of He gain with biases
    /// in ± 0.5 (the shifts folded BNs leave) keeps every layer at std 0.2–0.6 at 640² (ONNX
    /// Runtime, several seeds) while the detections still depend on the image.
    fn conv2d(&mut self, m: &Module, x: &str, (cin, cout): (i64, i64), k: Kernel) -> String {
        let net = &mut self.net;
        let fan_in = cin * k.size * k.size;
        let spread = 0.95 * (6.0 / fan_in as f32).sqrt();
        let dims = [cout, cin, k.size, k.size];
        let w = net.weight(&format!("{}.weight", m.path), &dims, 0.0, spread);
        let b = net.weight(&format!("{}.bias", m.path), &[cout], 0.0, 0.5);
        let (p, s) = (k.size / 2, k.stride);
        let attrs = conv_attrs(&[k.size; 2], &[s, s], &[p; 4], &[1, 1], 1);
        net.op(&m.at, "Conv", &[x, &w, &b], attrs)
    }

    /// ultralytics' `Conv` after `fuse()`: the convolution, then SiLU.
    fn conv(&mut self, m: &Module, x: &str, chans: (i64, i64), k: Kernel) -> String {
        let y = self.conv2d(&m.child("conv"), x, chans, k);
        let act = m.child("act").at;
        let gate = self.net.op(&act, "Sigmoid", &[&y], vec![]);
        self.net.op(&act, "Mul", &[&y, &gate], vec![])
    }

    /// `torch.cat(xs, 1)` in the module at `at`.
    fn concat(&mut self, at: &str, xs: &[&str]) -> String {
        self.net.op(at, "Concat", xs, vec![("axis", int(1))])
    }

    /// `x.split(sizes, 1)`: the sizes are one constant shared by every split of that shape.
    fn split(&mut self, at: &str, x: &str, sizes: &[i64]) -> Vec<String> {
        let sizes_name = match self.splits.get(sizes) {
            Some(name) => name.clone(),
            None => {
                let dims = [sizes.len() as i64];
                let name = self
                    .net
                    .const_i64_named("onnx::Split", &dims, sizes.to_vec());
                self.splits.insert(sizes.to_vec(), name.clone());
                name
            }
        };
        let attrs = vec![("axis", int(1))];
        self.net
            .op_outputs(at, "Split", &[x, &sizes_name], sizes.len(), attrs)
    }

    /// `C2f(cin, cout, n, shortcut)`: half the 1×1 output runs through `n` bottlenecks (two 3×3
    /// convs, plus their input when `shortcut`), every intermediate is concatenated.
    fn c2f(
        &mut self,
        module: &Module,
        x: &str,
        (cin, cout): (i64, i64),
        n: usize,
        shortcut: bool,
    ) -> String {
        let c = cout / 2;
        let h = self.conv(&module.child("cv1"), x, (cin, 2 * c), POINTWISE);
        let mut parts = self.split(&module.at, &h, &[c, c]);
        for i in 0..n {
            let m = module.child(&format!("m.{i}"));
            let input = parts[parts.len() - 1].clone();
            let y = self.conv(&m.child("cv1"), &input, (c, c), SAME_3X3);
            let y = self.conv(&m.child("cv2"), &y, (c, c), SAME_3X3);
            parts.push(match shortcut {
                true => self.net.op(&m.at, "Add", &[&input, &y], vec![]),
                false => y,
            });
        }
        let refs: Vec<&str> = parts.iter().map(String::as_str).collect();
        let cat = self.concat(&module.at, &refs);
        let merged = (2 + n as i64) * c;
        self.conv(&module.child("cv2"), &cat, (merged, cout), POINTWISE)
    }

    /// `SPPF(cin, cout, 5)`: one `nn.MaxPool2d(5, 1, 2)` called three times in a chain (the
    /// exporter scopes the calls `m`, `m_1`, `m_2`).
    fn sppf(&mut self, module: &Module, x: &str, (cin, cout): (i64, i64)) -> String {
        let c = cin / 2;
        let mut parts = vec![self.conv(&module.child("cv1"), x, (cin, c), POINTWISE)];
        for call in ["m", "m_1", "m_2"] {
            let attrs = vec![
                ("ceil_mode", int(0)),
                ("kernel_shape", ints(&[5, 5])),
                ("pads", ints(&[2; 4])),
                ("strides", ints(&[1, 1])),
            ];
            let last = &parts[parts.len() - 1];
            let pooled = self
                .net
                .op(&module.child(call).at, "MaxPool", &[last], attrs);
            parts.push(pooled);
        }
        let refs: Vec<&str> = parts.iter().map(String::as_str).collect();
        let cat = self.concat(&module.at, &refs);
        self.conv(&module.child("cv2"), &cat, (4 * c, cout), POINTWISE)
    }

    /// `nn.Upsample(scale_factor=2, mode="nearest")`.
    fn upsample(&mut self, module: &Module, x: &str) -> String {
        let at = &module.at;
        let scales = self
            .net
            .const_f32_tensor(at, &[4], vec![1.0, 1.0, 2.0, 2.0]);
        let text = |s: &str| AttrValue::Str(s.to_string());
        let attrs = vec![
            ("coordinate_transformation_mode", text("asymmetric")),
            ("cubic_coeff_a", AttrValue::Float(-0.75)),
            ("mode", text("nearest")),
            ("nearest_mode", text("floor")),
        ];
        self.net.op(at, "Resize", &[x, "", &scales], attrs)
    }

    /// One of `Detect`'s `nn.Sequential(Conv 3×3, Conv 3×3, nn.Conv2d 1×1)` branches
    /// (`cv2` for boxes, `cv3` for classes) on level `i`.
    fn branch(
        &mut self,
        name: &str,
        i: usize,
        x: &str,
        (cin, width, cout): (i64, i64, i64),
    ) -> String {
        let seq = Module::new(&format!("{HEAD}.{name}.{i}"));
        let h = self.conv(&seq.entry(0), x, (cin, width), SAME_3X3);
        let h = self.conv(&seq.entry(1), &h, (width, width), SAME_3X3);
        self.conv2d(&seq.entry(2), &h, (width, cout), POINTWISE)
    }

    /// `Detect` on the three levels `xs` of `chans` channels, writing the graph output.
    fn detect(&mut self, xs: [&str; 3], chans: [i64; 3]) {
        let head = Module::new(HEAD);
        let at = &head.at;
        let classes = self.cfg.classes;
        let box_width = 16.max(chans[0] / 4).max(4 * REG_MAX);
        let class_width = chans[0].max(classes.min(100));
        let mut levels = Vec::new();
        for (i, (x, c)) in xs.into_iter().zip(chans).enumerate() {
            let boxes = self.branch("cv2", i, x, (c, box_width, 4 * REG_MAX));
            let scores = self.branch("cv3", i, x, (c, class_width, classes));
            levels.push(self.concat(at, &[&boxes, &scores]));
        }
        // `xi.view(shape[0], self.no, -1)` for each level, the shapes folded to constants.
        let outputs = classes + 4 * REG_MAX;
        let shapes: Vec<String> = (0..3)
            .map(|_| self.net.const_i64(at, &[3], vec![1, outputs, -1]))
            .collect();
        let flat: Vec<String> = levels
            .iter()
            .zip(&shapes)
            .map(|(x, shape)| reshape(&mut self.net, OPSET, at, x, shape))
            .collect();
        let refs: Vec<&str> = flat.iter().map(String::as_str).collect();
        let all = self.net.op(at, "Concat", &refs, vec![("axis", int(2))]);
        let parts = self.split(at, &all, &[4 * REG_MAX, classes]);
        let distances = self.dfl(&parts[0]);
        let boxes = self.dist2bbox(&distances);
        let scores = self.net.op(at, "Sigmoid", &[&parts[1]], vec![]);
        let attrs = vec![("axis", int(1))];
        self.net
            .op_into(at, "Concat", &[&boxes, &scores], OUTPUT, attrs);
    }

    /// `DFL`: the expected bin of a softmax over the 16 bins of each box side, as a 1×1
    /// convolution with the fixed weights 0 … 15.
    fn dfl(&mut self, x: &str) -> String {
        let dfl = Module::new(HEAD).child("dfl");
        let at = &dfl.at;
        let anchors = self.cfg.anchors();
        let bins = self.net.const_i64(at, &[4], vec![1, 4, REG_MAX, anchors]);
        let h = reshape(&mut self.net, OPSET, at, x, &bins);
        let perm = vec![("perm", ints(&[0, 2, 1, 3]))];
        let h = self.net.op(at, "Transpose", &[&h], perm);
        let h = self.net.op(at, "Softmax", &[&h], vec![("axis", int(1))]);
        let conv = dfl.child("conv");
        let steps = (0..REG_MAX).map(|i| i as f32).collect();
        let dims = [1, REG_MAX, 1, 1];
        let w = self
            .net
            .table(&format!("{}.weight", conv.path), &dims, steps);
        let attrs = conv_attrs(&[1, 1], &[1, 1], &[0; 4], &[1, 1], 1);
        let h = self.net.op(&conv.at, "Conv", &[&h, &w], attrs);
        let sides = self.net.const_i64(at, &[3], vec![1, 4, anchors]);
        reshape(&mut self.net, OPSET, at, &h, &sides)
    }

    /// `dist2bbox(d, anchors, xywh=True, dim=1) * strides`: the cached anchor grid (cell
    /// centres, `[1, 2, anchors]`, written once per use) and strides (`[1, anchors]`) are
    /// constants.
    fn dist2bbox(&mut self, distances: &str) -> String {
        let head = Module::new(HEAD);
        let at = &head.at;
        let halves = chunk(&mut self.net, at, distances, 2, 1);
        let (points, strides) = anchor_grid(self.cfg);
        let dims = [1, 2, self.cfg.anchors()];
        let grid = self.net.const_f32_tensor(at, &dims, points.clone());
        let top_left = self.net.op(at, "Sub", &[&grid, &halves[0]], vec![]);
        let grid = self.net.const_f32_tensor(at, &dims, points);
        let bottom_right = self.net.op(at, "Add", &[&grid, &halves[1]], vec![]);
        let sum = self.net.op(at, "Add", &[&top_left, &bottom_right], vec![]);
        let two = self.net.const_f32(at, 2.0);
        let centre = self.net.op(at, "Div", &[&sum, &two], vec![]);
        let size = self.net.op(at, "Sub", &[&bottom_right, &top_left], vec![]);
        let attrs = vec![("axis", int(1))];
        let boxes = self.net.op(at, "Concat", &[&centre, &size], attrs);
        let strides = self
            .net
            .const_f32_tensor(at, &[1, self.cfg.anchors()], strides);
        self.net.op(at, "Mul", &[&boxes, &strides], vec![])
    }
}

/// `make_anchors(feats, strides, 0.5)`, transposed: the x coordinates of every cell centre
/// (level by level, row-major), then the y coordinates; and each cell's stride.
fn anchor_grid(cfg: &YoloConfig) -> (Vec<f32>, Vec<f32>) {
    let mut xs = Vec::new();
    let mut ys = Vec::new();
    let mut strides = Vec::new();
    for stride in STRIDES {
        let side = cfg.size / stride;
        for y in 0..side {
            for x in 0..side {
                xs.push(x as f32 + 0.5);
                ys.push(y as f32 + 0.5);
                strides.push(stride as f32);
            }
        }
    }
    xs.extend(ys);
    (xs, strides)
}

/// Writes the model: `images` `[1, 3, size, size]` in, `output0` `[1, 4 + classes, anchors]`
/// (box centre and size in pixels, class probabilities) out. Layer `model.<i>` is line `i` of
/// `yolov8.yaml`.
pub fn yolo(cfg: &YoloConfig, seed: u64) -> Exported {
    let mut y = Yolo {
        net: Net::new("torch_jit", OPSET, seed),
        cfg,
        splits: BTreeMap::new(),
    };
    let size = cfg.size.to_string();
    y.net.input(INPUT, DType::F32, &["1", "3", &size, &size]);
    let ch = |c| cfg.channels(c);
    let n = |k| cfg.repeats(k);
    let layer = |i: usize| Module::new(&format!("model.{i}"));
    // Backbone.
    let x = y.conv(&layer(0), INPUT, (3, ch(64)), DOWN_3X3);
    let x = y.conv(&layer(1), &x, (ch(64), ch(128)), DOWN_3X3);
    let x = y.c2f(&layer(2), &x, (ch(128), ch(128)), n(3), true);
    let x = y.conv(&layer(3), &x, (ch(128), ch(256)), DOWN_3X3);
    let p3 = y.c2f(&layer(4), &x, (ch(256), ch(256)), n(6), true);
    let x = y.conv(&layer(5), &p3, (ch(256), ch(512)), DOWN_3X3);
    let p4 = y.c2f(&layer(6), &x, (ch(512), ch(512)), n(6), true);
    let x = y.conv(&layer(7), &p4, (ch(512), ch(1024)), DOWN_3X3);
    let x = y.c2f(&layer(8), &x, (ch(1024), ch(1024)), n(3), true);
    let p5 = y.sppf(&layer(9), &x, (ch(1024), ch(1024)));
    // Top-down (FPN).
    let x = y.upsample(&layer(10), &p5);
    let x = y.concat(&layer(11).at, &[&x, &p4]);
    let h4 = y.c2f(&layer(12), &x, (ch(1024) + ch(512), ch(512)), n(3), false);
    let x = y.upsample(&layer(13), &h4);
    let x = y.concat(&layer(14).at, &[&x, &p3]);
    let out3 = y.c2f(&layer(15), &x, (ch(512) + ch(256), ch(256)), n(3), false);
    // Bottom-up (PAN).
    let x = y.conv(&layer(16), &out3, (ch(256), ch(256)), DOWN_3X3);
    let x = y.concat(&layer(17).at, &[&x, &h4]);
    let out4 = y.c2f(&layer(18), &x, (ch(256) + ch(512), ch(512)), n(3), false);
    let x = y.conv(&layer(19), &out4, (ch(512), ch(512)), DOWN_3X3);
    let x = y.concat(&layer(20).at, &[&x, &p5]);
    let out5 = y.c2f(&layer(21), &x, (ch(512) + ch(1024), ch(1024)), n(3), false);
    y.detect([&out3, &out4, &out5], [ch(256), ch(512), ch(1024)]);
    let outputs = (4 + cfg.classes).to_string();
    y.net
        .output(OUTPUT, &["1", &outputs, &cfg.anchors().to_string()]);
    y.net.finish()
}
