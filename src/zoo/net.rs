//! A thin layer over `ModelBuilder` that writes graphs the way `torch.onnx.export` names them:
//! nodes `/<module path>/<Op>`, their outputs `<node>_output_0`, weights under their
//! `state_dict` names, and `Constant` nodes for the axes and indices of shape subgraphs. It also
//! counts the floating-point parameters it writes, which the model summary must report.

use crate::ir::DType;
use crate::onnx::{AttrValue, DimSpec, ModelBuilder};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::collections::BTreeSet;

/// Attributes of one node, as `ModelBuilder` takes them.
pub type Attrs = Vec<(&'static str, AttrValue)>;

pub fn ints(v: &[i64]) -> AttrValue {
    AttrValue::Ints(v.to_vec())
}

pub fn int(v: i64) -> AttrValue {
    AttrValue::Int(v)
}

pub struct Net {
    builder: Option<ModelBuilder>,
    rng: ChaCha8Rng,
    taken: BTreeSet<String>,
    /// Elements of every float initializer and float `Constant` written so far.
    pub parameters: u64,
}

impl Net {
    pub fn new(name: &str, opset: i64, seed: u64) -> Net {
        Net {
            builder: Some(ModelBuilder::new(name, opset)),
            rng: ChaCha8Rng::seed_from_u64(seed),
            taken: BTreeSet::new(),
            parameters: 0,
        }
    }

    fn edit(&mut self, f: impl FnOnce(ModelBuilder) -> ModelBuilder) {
        let b = self.builder.take().expect("the builder is always present");
        self.builder = Some(f(b));
    }

    /// `path` made unique the way the exporter does it: `/Constant`, `/Constant_1`, …
    fn unique(&mut self, path: &str) -> String {
        let name = (0..)
            .map(|k| match k {
                0 => path.to_string(),
                _ => format!("{path}_{k}"),
            })
            .find(|n| !self.taken.contains(n))
            .expect("unbounded names");
        self.taken.insert(name.clone());
        name
    }

    pub fn input(&mut self, name: &str, dtype: DType, dims: &[&str]) {
        let dims: Vec<DimSpec> = dims.iter().map(|&d| d.into()).collect();
        self.edit(|b| b.input_typed(name, dtype, dims));
    }

    pub fn output(&mut self, name: &str, dims: &[&str]) {
        let dims: Vec<DimSpec> = dims.iter().map(|&d| d.into()).collect();
        self.edit(|b| b.output(name, dims));
    }

    /// A float initializer of uniform values in `center ± spread`.
    pub fn weight(&mut self, name: &str, dims: &[i64], center: f32, spread: f32) -> String {
        let n: i64 = dims.iter().product();
        let values: Vec<f32> = (0..n)
            .map(|_| center + self.rng.gen_range(-spread..=spread))
            .collect();
        self.table(name, dims, values)
    }

    /// A float initializer holding `values`.
    pub fn table(&mut self, name: &str, dims: &[i64], values: Vec<f32>) -> String {
        self.parameters += values.len() as u64;
        let name = self.unique(name);
        self.edit(|b| b.initializer(&name, dims, values));
        name
    }

    /// A weight scaled like PyTorch's default initialisation (± 1/sqrt(fan_in)).
    pub fn kaiming(&mut self, name: &str, dims: &[i64], fan_in: i64) -> String {
        self.weight(name, dims, 0.0, 1.0 / (fan_in as f32).sqrt())
    }

    /// `/<scope>/Constant` holding an int64 tensor.
    pub fn const_i64(&mut self, scope: &str, dims: &[i64], values: Vec<i64>) -> String {
        let name = self.unique(&format!("{scope}/Constant")) + "_output_0";
        self.edit(|b| b.constant_i64(&name, dims, values));
        name
    }

    /// A `Constant` holding an int64 tensor under `name` (made unique): the tracer names the
    /// constants it lifts out of every scope after their first consumer, `onnx::<Op>_<n>`.
    pub fn const_i64_named(&mut self, name: &str, dims: &[i64], values: Vec<i64>) -> String {
        let name = self.unique(name);
        self.edit(|b| b.constant_i64(&name, dims, values));
        name
    }

    /// `/<scope>/Constant` holding a float scalar.
    pub fn const_f32(&mut self, scope: &str, value: f32) -> String {
        self.const_f32_tensor(scope, &[], vec![value])
    }

    /// `/<scope>/Constant` holding a float tensor (anchor grids, resize scales).
    pub fn const_f32_tensor(&mut self, scope: &str, dims: &[i64], values: Vec<f32>) -> String {
        let name = self.unique(&format!("{scope}/Constant")) + "_output_0";
        self.parameters += values.len() as u64;
        self.edit(|b| b.constant(&name, dims, values));
        name
    }

    /// The node `/<scope>/<op>` with one output, returned.
    pub fn op(&mut self, scope: &str, op: &str, inputs: &[&str], attrs: Attrs) -> String {
        let mut outs = self.op_outputs(scope, op, inputs, 1, attrs);
        outs.pop().expect("one output was named")
    }

    /// The node `/<scope>/<op>` with `n` outputs (`…_output_0`, `…_output_1`, …), returned.
    pub fn op_outputs(
        &mut self,
        scope: &str,
        op: &str,
        inputs: &[&str],
        n: usize,
        attrs: Attrs,
    ) -> Vec<String> {
        let node = self.unique(&format!("{scope}/{op}"));
        let outs: Vec<String> = (0..n).map(|i| format!("{node}_output_{i}")).collect();
        let names: Vec<&str> = outs.iter().map(String::as_str).collect();
        self.edit(|b| b.named_node(&node, op, inputs, &names, attrs));
        outs
    }

    /// The node `/<scope>/<op>` writing the given (graph output) name.
    pub fn op_into(&mut self, scope: &str, op: &str, inputs: &[&str], out: &str, attrs: Attrs) {
        let node = self.unique(&format!("{scope}/{op}"));
        self.edit(|b| b.named_node(&node, op, inputs, &[out], attrs));
    }

    /// A registered buffer (position ids, token-type ids): an int64 initializer.
    pub fn buffer_i64(&mut self, name: &str, dims: &[i64], values: Vec<i64>) {
        self.taken.insert(name.to_string());
        self.edit(|b| b.initializer_i64(name, dims, values));
    }

    pub fn finish(mut self) -> Exported {
        Exported {
            bytes: self.builder.take().expect("present").encode(),
            parameters: self.parameters,
        }
    }
}

/// A written model and the number of float parameters it holds.
pub struct Exported {
    pub bytes: Vec<u8>,
    pub parameters: u64,
}
