//! A DLRM (Facebook's `dlrm_s_pytorch.py` reference, the MLPerf recommendation model) as its
//! `--save-onnx` export writes it with `torch.onnx.export(dlrm, (dense_x, offsets, indices),
//! input_names=["dense_x", "offsets", "indices"], output_names=["pred"], dynamic_axes=…)`,
//! with the embedding tables as `nn.Embedding`: the reference's `nn.EmbeddingBag` exports as a
//! `Loop` over the bags at any opset, while with one index per sample a bag's sum is the looked-up
//! row itself, which `nn.Embedding` exports as one Gather (and the then unused `offsets` input is
//! dropped by the exporter). The graph: the bottom MLP (Gemm + Relu per layer) on the dense
//! features; per table `indices[k]` (Gather on axis 0 of the stacked `[tables, batch]` indices)
//! and the row lookup (Gather); the dot interaction — `cat([x] + ly, 1).view(b, -1, d)` (Concat,
//! Reshape with a shape from Shape/Gather/Unsqueeze/Concat), `bmm(T, T.transpose(1, 2))`
//! (Transpose, MatMul), `Z[:, li, lj]` for the strictly lower triangle as torch writes advanced
//! indexing (Transpose, Flatten, the flat index `li · n + lj` as Mul/Add of Constants and a
//! Shape-read size, Gather, Reshape, Transpose, Reshape), `cat([x, Zflat], 1)` — and the top MLP
//! ending in Sigmoid.

use super::net::{int, ints, Exported, Net};
use super::torch_idioms::{gemm, reshape, Module};
use crate::ir::DType;

pub const DENSE: &str = "dense_x";
pub const INDICES: &str = "indices";
pub const PRED: &str = "pred";
/// The symbolic batch dimension, bound at import (`--dim batch_size=128`).
pub const BATCH_SIZE: &str = "batch_size";

const OPSET: i64 = 17;

#[derive(Clone, Copy, Debug)]
pub struct DlrmConfig {
    /// Dense features per sample.
    pub dense: i64,
    /// Embedding tables (sparse features), one index into each per sample.
    pub tables: i64,
    /// Rows of every table.
    pub rows: i64,
    /// The embedding width, which the bottom MLP ends in.
    pub dim: i64,
    /// Hidden widths of the bottom MLP (`dense → … → dim`).
    pub bottom: &'static [i64],
    /// Hidden widths of the top MLP (`interaction → … → 1`).
    pub top: &'static [i64],
    /// The batch the model is run at (the export's batch axis is symbolic).
    pub batch: i64,
}

impl DlrmConfig {
    /// The MLPerf/Criteo shape (13 dense and 26 sparse features, bottom MLP 13-512-256-64, top
    /// MLP 415-512-256-1) with every table cut to 25,000 rows of 64, so the 26 tables hold
    /// 41.6 M floats (166 MB; the whole model 168 MB) — far beyond the caches, as the real
    /// tables are, but within a laptop's memory; a batch of 128.
    pub fn full() -> Self {
        DlrmConfig {
            dense: 13,
            tables: 26,
            rows: 25_000,
            dim: 64,
            bottom: &[512, 256],
            top: &[512, 256],
            batch: 128,
        }
    }

    /// The same structure (26 tables, two hidden layers in each MLP) with 20-row tables of
    /// width 8 and a batch of 4.
    pub fn small() -> Self {
        DlrmConfig {
            dense: 13,
            tables: 26,
            rows: 20,
            dim: 8,
            bottom: &[16, 12],
            top: &[16, 12],
            batch: 4,
        }
    }

    /// Width of the top MLP's input: the bottom MLP's output and one dot product per pair of
    /// distinct feature vectors.
    pub fn interaction(&self) -> i64 {
        let n = self.tables + 1;
        self.dim + n * (n - 1) / 2
    }

    /// The bindings of the export's symbolic dimensions.
    pub fn dims(&self) -> [(&'static str, i64); 1] {
        [(BATCH_SIZE, self.batch)]
    }
}

/// `create_mlp`: a `Sequential` of Linear (Gemm) and activation, `name.0`, `name.1`, … through
/// the widths, Relu after every layer; with `sigmoid_into`, the last activation is instead a
/// Sigmoid writing that graph output (the top MLP's `sigmoid_layer`).
fn mlp(net: &mut Net, name: &str, x: &str, widths: &[i64], sigmoid_into: Option<&str>) -> String {
    let mut h = x.to_string();
    for (i, pair) in widths.windows(2).enumerate() {
        let linear = Module::sequential(&format!("{name}.{}", 2 * i));
        h = gemm(net, &linear, &h, (pair[0], pair[1]), None);
        let act = Module::sequential(&format!("{name}.{}", 2 * i + 1)).scope;
        h = match sigmoid_into {
            Some(out) if i + 2 == widths.len() => {
                net.op_into(&act, "Sigmoid", &[&h], out, vec![]);
                out.to_string()
            }
            _ => net.op(&act, "Relu", &[&h], vec![]),
        };
    }
    h
}

/// `x.shape[axis]` as the exporter writes an unpacked size: Shape → Gather (scalar index).
fn dim_of(net: &mut Net, x: &str, axis: i64) -> String {
    let shape = net.op("", "Shape", &[x], vec![]);
    let index = net.const_i64("", &[], vec![axis]);
    net.op("", "Gather", &[&shape, &index], vec![("axis", int(0))])
}

/// `interact_features` with the dot interaction and no self-interaction:
/// `cat([x, Z[:, li, lj]], 1)` with `Z = T Tᵀ` over the `tables + 1` feature vectors.
fn interact(net: &mut Net, cfg: &DlrmConfig, x: &str, ly: &[String]) -> String {
    let batch = dim_of(net, x, 0);
    let d = dim_of(net, x, 1);
    let mut features = vec![x];
    features.extend(ly.iter().map(String::as_str));
    let cat = net.op("", "Concat", &features, vec![("axis", int(1))]);
    let zero = net.const_i64("", &[1], vec![0]);
    let batch1 = net.op("", "Unsqueeze", &[&batch, &zero], vec![]);
    let minus_one = net.const_i64("", &[1], vec![-1]);
    let zero = net.const_i64("", &[1], vec![0]);
    let d1 = net.op("", "Unsqueeze", &[&d, &zero], vec![]);
    let view = net.op(
        "",
        "Concat",
        &[&batch1, &minus_one, &d1],
        vec![("axis", int(0))],
    );
    let t = reshape(net, OPSET, "", &cat, &view);
    let tt = net.op("", "Transpose", &[&t], vec![("perm", ints(&[0, 2, 1]))]);
    let z = net.op("", "MatMul", &[&t, &tt], vec![]);
    // `Z[:, li, lj]`: the indexed axes moved first and flattened, the flat index
    // `li * Z.shape[2] + lj` gathered, the batch moved back to the front.
    let z_shape = net.op("", "Shape", &[&z], vec![]);
    let first = net.const_i64("", &[1], vec![0]);
    let z_batch = net.op("", "Gather", &[&z_shape, &first], vec![("axis", int(0))]);
    let last = net.const_i64("", &[1], vec![2]);
    let nj = net.op("", "Gather", &[&z_shape, &last], vec![("axis", int(0))]);
    let moved = net.op("", "Transpose", &[&z], vec![("perm", ints(&[1, 2, 0]))]);
    let flat = net.op("", "Flatten", &[&moved], vec![("axis", int(2))]);
    let n = cfg.tables + 1;
    let (li, lj): (Vec<i64>, Vec<i64>) = (0..n).flat_map(|i| (0..i).map(move |j| (i, j))).unzip();
    let pairs = li.len() as i64;
    let li = net.const_i64("", &[pairs], li);
    let rows = net.op("", "Mul", &[&li, &nj], vec![]);
    let lj = net.const_i64("", &[pairs], lj);
    let index = net.op("", "Add", &[&lj, &rows], vec![]);
    let picked = net.op("", "Gather", &[&flat, &index], vec![("axis", int(0))]);
    let index_shape = net.op("", "Shape", &[&index], vec![]);
    let minus_one = net.const_i64("", &[1], vec![-1]);
    let columns = net.op(
        "",
        "Concat",
        &[&minus_one, &z_batch],
        vec![("axis", int(0))],
    );
    let picked = reshape(net, OPSET, "", &picked, &columns);
    let picked = net.op("", "Transpose", &[&picked], vec![("perm", ints(&[1, 0]))]);
    let rows = net.op(
        "",
        "Concat",
        &[&z_batch, &index_shape],
        vec![("axis", int(0))],
    );
    let zflat = reshape(net, OPSET, "", &picked, &rows);
    net.op("", "Concat", &[x, &zflat], vec![("axis", int(1))])
}

/// Writes the model; its inputs are the dense features `[batch_size, dense]` and the stacked
/// indices `[tables, batch_size]` (row `k` indexes table `k`), its output the click
/// probability `[batch_size, 1]`.
pub fn dlrm(cfg: &DlrmConfig, seed: u64) -> Exported {
    let mut net = Net::new("torch_jit", OPSET, seed);
    // The reference initialises the tables uniformly in ±1/√rows; ±1 keeps the dot products
    // O(1) at any table size, as trained embeddings are.
    let tables: Vec<String> = (0..cfg.tables)
        .map(|k| {
            let name = format!("emb_l.{k}.weight");
            net.weight(&name, &[cfg.rows, cfg.dim], 0.0, 1.0)
        })
        .collect();
    net.input(DENSE, DType::F32, &[BATCH_SIZE, &cfg.dense.to_string()]);
    let tables_dim = cfg.tables.to_string();
    net.input(INDICES, DType::I64, &[&tables_dim, BATCH_SIZE]);
    let bottom: Vec<i64> = [cfg.dense]
        .iter()
        .chain(cfg.bottom)
        .chain(&[cfg.dim])
        .copied()
        .collect();
    let x = mlp(&mut net, "bot_l", DENSE, &bottom, None);
    let ly: Vec<String> = tables
        .iter()
        .enumerate()
        .map(|(k, table)| {
            let k_const = net.const_i64("", &[], vec![k as i64]);
            let ids = net.op("", "Gather", &[INDICES, &k_const], vec![("axis", int(0))]);
            let scope = Module::listed(&format!("emb_l.{k}")).scope;
            net.op(&scope, "Gather", &[table, &ids], vec![])
        })
        .collect();
    let z = interact(&mut net, cfg, &x, &ly);
    let top: Vec<i64> = [cfg.interaction()]
        .iter()
        .chain(cfg.top)
        .chain(&[1])
        .copied()
        .collect();
    mlp(&mut net, "top_l", &z, &top, Some(PRED));
    net.output(PRED, &[BATCH_SIZE, "1"]);
    net.finish()
}
