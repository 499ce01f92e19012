//! Built-in kernels as access generators, for leading-term fits and the worked studies.
//!
//! Each kernel is a loop nest written directly as a stream of element accesses (no IR), with
//! sizes as parameters: `matmul` (naive, any loop order), `matmul-tiled` (loop order
//! jj, kk, i, j, k with tile B), `matmul-recursive` (divide and conquer), `attention` (multi-head,
//! multi-query and grouped-query by the group size), `conv2d` (batched, with an image-block size)
//! and `fft` (iterative radix-2). An update `C += …` is a read and a write of `C`, as in IR
//! traces of a write with conflict resolution.

mod fft;
mod matmul;
mod nn;

use super::{AccessSource, AnalysisError, ArrayInfo, NodeInfo, Sink};
use std::collections::BTreeMap;

/// Bytes per element of every kernel array (single precision; an FFT element is one complex
/// number, two floats).
const F32: u64 = 4;

/// A kernel with concrete sizes.
pub struct Kernel {
    name: String,
    arrays: Vec<ArrayInfo>,
    nodes: Vec<NodeInfo>,
    shape: Shape,
}

enum Shape {
    Matmul(matmul::Naive),
    Tiled(matmul::Tiled),
    Recursive(matmul::Recursive),
    Attention(nn::Attention),
    Conv(nn::Conv),
    Fft(fft::Fft),
}

/// Every kernel name and its parameters (with defaults), for help texts and errors.
pub const KERNELS: &[(&str, &str)] = &[
    ("matmul", "n=64 order=ijk (any permutation of i, j, k)"),
    ("matmul-tiled", "n=64 tile=8 (loop order jj, kk, i, j, k)"),
    (
        "matmul-recursive",
        "n=64 base=4 (halve i, j, k until the block is at most base)",
    ),
    (
        "attention",
        "seq=128 dim=32 heads=8 group=1 (group = heads per K/V head: 1 MHA, heads MQA)",
    ),
    (
        "conv2d",
        "batch=8 channels=8 filters=8 image=16 kernel=3 block=batch (images per batch)",
    ),
    ("fft", "n=1024 (a power of two)"),
];

impl Kernel {
    /// The kernel `name` with `params` (`name=value` as given on the command line; the rest
    /// take their defaults).
    pub fn new(name: &str, params: &BTreeMap<String, String>) -> Result<Kernel, AnalysisError> {
        let mut r = Reader {
            kernel: name,
            params,
            used: BTreeMap::new(),
        };
        let shape = match name {
            "matmul" => Shape::Matmul(matmul::Naive::new(&mut r)?),
            "matmul-tiled" => Shape::Tiled(matmul::Tiled::new(&mut r)?),
            "matmul-recursive" => Shape::Recursive(matmul::Recursive::new(&mut r)?),
            "attention" => Shape::Attention(nn::Attention::new(&mut r)?),
            "conv2d" => Shape::Conv(nn::Conv::new(&mut r)?),
            "fft" => Shape::Fft(fft::Fft::new(&mut r)?),
            _ => return Err(AnalysisError::UnknownKernel(name.to_string())),
        };
        if let Some(unused) = params.keys().find(|k| !r.used.contains_key(k.as_str())) {
            let known = KERNELS
                .iter()
                .find(|(k, _)| *k == name)
                .map_or("", |(_, p)| p);
            return Err(r.error(
                unused,
                &format!("unknown parameter; this kernel takes {known}"),
            ));
        }
        let (arrays, nodes) = match &shape {
            Shape::Matmul(k) => (k.arrays(), vec![node("matmul")]),
            Shape::Tiled(k) => (k.arrays(), vec![node("matmul")]),
            Shape::Recursive(k) => (k.arrays(), vec![node("matmul")]),
            Shape::Attention(k) => (k.arrays(), nn::Attention::nodes()),
            Shape::Conv(k) => (k.arrays(), vec![node("conv2d")]),
            Shape::Fft(k) => (k.arrays(), fft::Fft::nodes()),
        };
        let values: Vec<String> = r.used.iter().map(|(k, v)| format!("{k}={v}")).collect();
        let label = format!("{name}({})", values.join(", "));
        Ok(Kernel {
            name: label,
            arrays,
            nodes,
            shape,
        })
    }
}

impl AccessSource for Kernel {
    fn name(&self) -> String {
        self.name.clone()
    }

    fn arrays(&self) -> &[ArrayInfo] {
        &self.arrays
    }

    fn nodes(&self) -> &[NodeInfo] {
        &self.nodes
    }

    fn stream(&self, sink: &mut dyn Sink) -> Result<(), AnalysisError> {
        match &self.shape {
            Shape::Matmul(k) => k.stream(sink),
            Shape::Tiled(k) => k.stream(sink),
            Shape::Recursive(k) => k.stream(sink),
            Shape::Attention(k) => k.stream(sink),
            Shape::Conv(k) => k.stream(sink),
            Shape::Fft(k) => k.stream(sink),
        }
        Ok(())
    }
}

fn node(label: &str) -> NodeInfo {
    NodeInfo {
        id: None,
        label: label.to_string(),
        bytes_moved: None,
    }
}

fn array(name: &str, elements: u64, elem_bytes: u64) -> ArrayInfo {
    ArrayInfo {
        name: name.to_string(),
        elements,
        elem_bytes,
    }
}

/// Reads kernel parameters, remembering which were used (the rest are reported as unknown).
struct Reader<'a> {
    kernel: &'a str,
    params: &'a BTreeMap<String, String>,
    /// The value each parameter read took (given or default).
    used: BTreeMap<&'static str, String>,
}

impl Reader<'_> {
    fn error(&self, param: &str, message: &str) -> AnalysisError {
        AnalysisError::KernelParam {
            kernel: self.kernel.to_string(),
            param: param.to_string(),
            message: message.to_string(),
        }
    }

    /// A positive integer parameter (the default when not given).
    fn int(&mut self, key: &'static str, default: u64) -> Result<u64, AnalysisError> {
        let value = match self.params.get(key) {
            None => default,
            Some(text) => text
                .trim()
                .parse::<u64>()
                .ok()
                .filter(|v| *v > 0)
                .ok_or_else(|| self.error(key, &format!("`{text}` is not a positive integer")))?,
        };
        self.used.insert(key, value.to_string());
        Ok(value)
    }

    /// A text parameter.
    fn text(&mut self, key: &'static str, default: &str) -> String {
        let value = self
            .params
            .get(key)
            .cloned()
            .unwrap_or_else(|| default.to_string());
        self.used.insert(key, value.clone());
        value
    }
}
