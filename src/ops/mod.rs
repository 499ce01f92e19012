//! The operator library: for each high-level operator, shape inference, a reference
//! implementation (used by the interpreter) and one or more expansions into maps and tasklets.
//!
//! Architecture invariant: operators know the IR and nothing else (no ONNX, no C). The ONNX
//! importer maps ONNX attributes onto [`LibraryNode`] attributes with the same names and
//! semantics as the ONNX operator of the same name, after resolving opset differences.
//!
//! Adding an operator = adding a value implementing [`Operator`] to one family file and listing it
//! in that file's `OPS` table.

mod activation;
mod affine_grid;
mod attention;
mod batchnorm;
mod bitwise;
pub mod broadcast;
mod causal_conv;
mod center_crop_pad;
mod col2im;
mod concat;
mod conv;
mod conv_integer;
mod conv_transpose;
mod dft;
mod diagonal;
mod dropout;
mod einsum;
mod elementwise;
pub mod expand;
pub mod flops;
mod generate;
mod grid_sample;
mod groupnorm;
mod hardmax;
mod heads;
mod identity;
mod index;
mod linear_attention;
pub mod logic;
mod loss;
mod lpnorm;
mod lrn;
mod math;
mod matmul;
mod mean;
mod mish;
mod modulo;
mod movement;
mod mvn;
mod norm;
mod onehot;
mod pad;
mod pool;
mod prelu;
mod qmatmul;
mod quantize;
mod recurrent;
mod reduce;
mod replicate;
mod resize;
mod reverse_sequence;
mod rotary;
mod scan;
mod scatter;
mod shape;
mod signal_window;
mod slice;
mod softmax;
mod space_depth;
mod stft;
mod support;
mod swiglu;
mod topk;
mod upsample;
pub mod versions;
mod window;

use crate::ir::build::ScopeBuilder;
use crate::ir::{Attr, Constant, DType, DataDesc, LibraryNode, SymExpr, Tensor};
use std::collections::BTreeMap;

/// Type of a tensor flowing between operators.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TensorType {
    pub dtype: DType,
    pub shape: Vec<SymExpr>,
}

impl TensorType {
    pub fn new(dtype: DType, shape: Vec<SymExpr>) -> Self {
        TensorType { dtype, shape }
    }

    /// Concrete shape when all dimensions are literals.
    pub fn static_shape(&self) -> Option<Vec<usize>> {
        self.shape
            .iter()
            .map(|d| d.as_int().and_then(|v| usize::try_from(v).ok()))
            .collect()
    }
}

/// Why an operator rejected its inputs or could not run.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum OpError {
    #[error("{op}: expected {expected} input(s), got {got}")]
    Arity {
        op: String,
        expected: String,
        got: usize,
    },
    #[error("{op}: {message}")]
    Shape { op: String, message: String },
    #[error("{op}: attribute `{attr}`: {message}")]
    Attr {
        op: String,
        attr: String,
        message: String,
    },
    #[error("{op}: {message}")]
    Unsupported { op: String, message: String },
    /// A computation that needs a number met a symbolic extent: the importer names the symbols
    /// in `extent` and the flags that bind them.
    #[error("{op}: {what} must be a number, not the symbolic extent `{extent}`")]
    SymbolicExtent {
        op: String,
        what: String,
        extent: SymExpr,
    },
    #[error("{op}: no implementation named `{name}` (available: {available})")]
    NoSuchExpansion {
        op: String,
        name: String,
        available: String,
    },
}

impl OpError {
    pub fn shape(op: &str, message: impl Into<String>) -> Self {
        OpError::Shape {
            op: op.to_string(),
            message: message.into(),
        }
    }

    pub fn attr(op: &str, attr: &str, message: impl Into<String>) -> Self {
        OpError::Attr {
            op: op.to_string(),
            attr: attr.to_string(),
            message: message.into(),
        }
    }

    pub fn symbolic(op: &str, what: impl Into<String>, extent: &SymExpr) -> Self {
        OpError::SymbolicExtent {
            op: op.to_string(),
            what: what.into(),
            extent: extent.clone(),
        }
    }

    pub fn unsupported(op: &str, message: impl Into<String>) -> Self {
        OpError::Unsupported {
            op: op.to_string(),
            message: message.into(),
        }
    }
}

/// The inputs of one operator application during expansion: the containers it reads and writes
/// and a builder positioned in the scope that replaces the library node.
pub struct ExpandCtx<'c, 'p> {
    pub node: &'c LibraryNode,
    /// Input containers by position (`None` for an absent optional input).
    pub inputs: Vec<Option<(String, DataDesc)>>,
    /// Output containers by position (`None` for an output the node does not produce).
    pub outputs: Vec<Option<(String, DataDesc)>>,
    /// Values of constant inputs, when known.
    pub constants: &'c BTreeMap<String, Constant>,
    /// Append the replacement maps here; read inputs and write outputs by their container names.
    pub b: &'c mut ScopeBuilder<'p>,
    /// A prefix for labels and transient names, unique to this node.
    pub label: String,
}

impl ExpandCtx<'_, '_> {
    /// Input `i`, which must be present.
    pub fn input(&self, i: usize) -> Result<&(String, DataDesc), OpError> {
        self.inputs
            .get(i)
            .and_then(|x| x.as_ref())
            .ok_or_else(|| OpError::shape(&self.node.op, format!("missing input {i}")))
    }

    pub fn output(&self, i: usize) -> Result<&(String, DataDesc), OpError> {
        self.outputs
            .get(i)
            .and_then(|x| x.as_ref())
            .ok_or_else(|| OpError::shape(&self.node.op, format!("missing output {i}")))
    }

    /// The types of the inputs (`None` for absent ones), for the checks `infer` makes.
    pub fn input_types(&self) -> Vec<Option<TensorType>> {
        self.inputs
            .iter()
            .map(|i| {
                i.as_ref()
                    .map(|(_, d)| TensorType::new(d.dtype, d.shape.clone()))
            })
            .collect()
    }

    /// Constant value of input `i`, if it is a known constant.
    pub fn constant_input(&self, i: usize) -> Option<&Tensor> {
        let (name, _) = self.inputs.get(i)?.as_ref()?;
        self.constants.get(name).map(Constant::tensor)
    }
}

/// A high-level operator.
pub trait Operator: Sync {
    /// The operator's name, equal to the ONNX op type it implements.
    fn name(&self) -> &'static str;

    /// Accepted number of inputs, inclusive (optional trailing inputs included in `max`).
    fn input_count(&self) -> (usize, usize);

    /// Number of outputs produced.
    fn output_count(&self) -> usize {
        1
    }

    /// Output types from input types. `consts[i]` holds input `i`'s value when it is a constant
    /// (shape-like inputs such as Reshape's `shape` need it).
    fn infer(
        &self,
        node: &LibraryNode,
        inputs: &[Option<TensorType>],
        consts: &[Option<&Tensor>],
    ) -> Result<Vec<TensorType>, OpError>;

    /// The reference implementation: straightforward, independent of the expansions, computed
    /// in at least the precision of the data type. Used as the oracle for every check.
    fn eval(&self, node: &LibraryNode, inputs: &[Option<&Tensor>]) -> Result<Vec<Tensor>, OpError>;

    /// The value ONNX gives attribute `name` when a node omits it, where the operator declares
    /// one: a pattern's `op Conv[group = 1]` matches a Conv that leaves `group` out.
    fn default_attr(&self, _name: &str) -> Option<Attr> {
        None
    }

    /// Names of the available expansions; the first is the default.
    fn expansions(&self) -> &'static [&'static str] {
        &["pure"]
    }

    /// Appends the maps and tasklets that implement expansion `implementation`.
    fn expand(&self, implementation: &str, ctx: &mut ExpandCtx) -> Result<(), OpError>;

    /// Floating-point operations of one application (for reports), from the input types.
    fn flops(
        &self,
        _node: &LibraryNode,
        _inputs: &[Option<TensorType>],
        outputs: &[TensorType],
    ) -> u64 {
        outputs
            .iter()
            .filter_map(|t| t.static_shape())
            .map(|s| s.iter().product::<usize>() as u64)
            .sum()
    }
}

/// Every operator, sorted by name.
pub fn all() -> Vec<&'static dyn Operator> {
    let mut v: Vec<&'static dyn Operator> = Vec::new();
    for family in [
        activation::OPS,
        affine_grid::OPS,
        attention::OPS,
        batchnorm::OPS,
        bitwise::OPS,
        causal_conv::OPS,
        center_crop_pad::OPS,
        col2im::OPS,
        concat::OPS,
        conv::OPS,
        conv_integer::OPS,
        conv_transpose::OPS,
        dft::OPS,
        diagonal::OPS,
        dropout::OPS,
        einsum::OPS,
        elementwise::OPS,
        generate::OPS,
        grid_sample::OPS,
        groupnorm::OPS,
        hardmax::OPS,
        identity::OPS,
        index::OPS,
        linear_attention::OPS,
        logic::OPS,
        loss::OPS,
        lpnorm::OPS,
        lrn::OPS,
        math::OPS,
        matmul::OPS,
        mean::OPS,
        mish::OPS,
        modulo::OPS,
        mvn::OPS,
        norm::OPS,
        onehot::OPS,
        pad::OPS,
        pool::OPS,
        prelu::OPS,
        qmatmul::OPS,
        quantize::OPS,
        recurrent::OPS,
        reduce::OPS,
        replicate::OPS,
        resize::OPS,
        reverse_sequence::OPS,
        rotary::OPS,
        scan::OPS,
        scatter::OPS,
        shape::OPS,
        signal_window::OPS,
        slice::OPS,
        softmax::OPS,
        space_depth::OPS,
        stft::OPS,
        swiglu::OPS,
        topk::OPS,
        upsample::OPS,
    ] {
        v.extend_from_slice(family);
    }
    v.sort_by_key(|op| op.name());
    v
}

/// The operator named `name`.
pub fn lookup(name: &str) -> Option<&'static dyn Operator> {
    all().into_iter().find(|op| op.name() == name)
}

/// Checks the input count against the operator's arity.
pub fn check_arity(op: &dyn Operator, got: usize) -> Result<(), OpError> {
    let (lo, hi) = op.input_count();
    if got < lo || got > hi {
        let expected = if lo == hi {
            lo.to_string()
        } else {
            format!("{lo} to {hi}")
        };
        return Err(OpError::Arity {
            op: op.name().to_string(),
            expected,
            got,
        });
    }
    Ok(())
}

/// The first input's type; operators whose first input is required call this.
pub fn first_input<'a>(
    op: &str,
    inputs: &'a [Option<TensorType>],
) -> Result<&'a TensorType, OpError> {
    inputs
        .first()
        .and_then(|x| x.as_ref())
        .ok_or_else(|| OpError::shape(op, "missing first input"))
}
