//! The ONNX frontend: reading `.onnx` files, importing them into the IR, and writing models.
//!
//! # The import contract
//!
//! [`import`] turns a model into a validated [`crate::ir::Program`] with one library node per
//! ONNX node and nothing else; expansion into maps and tasklets happens later.
//!
//! - **Names.** Data containers carry the ONNX tensor names unchanged (making them valid C
//!   identifiers is the C backend's job). Every name must be non-empty; the one exception is an
//!   output the model leaves unnamed between named ones, which gets a fresh transient
//!   `<label>_unused_out<k>`. Node labels are the ONNX node names, or `<op_type>_<index>` for
//!   unnamed nodes.
//! - **Kinds.** Graph inputs become `Input` data and graph outputs `Output` data, in the model's
//!   order in `Program::inputs` / `Program::outputs`; everything else a node computes is
//!   `Transient`. Initializers and the values of `Constant` nodes become `Constant` data whose
//!   values are in `Program::constants`; a graph input that is also an initializer is a constant
//!   (the initializer is its value), not an input. A graph output must be computed by a node;
//!   one whose value is known at import time is copied from a hidden constant by `Identity`.
//! - **Idioms** ([`idioms`]). `Identity` and inference-mode `Dropout` are renamings: readers of
//!   their output read the input's container (unless the output is a graph output). A node
//!   whose inputs are all constants is evaluated with [`crate::ops::Operator::eval`] and its
//!   outputs become constants; `Shape`/`Size` of an input whose shape is static (once bound
//!   symbols are substituted) fold from the type alone, so exporters' shape subgraphs
//!   (`Shape → Gather → Unsqueeze → Concat → Reshape`) disappear when shapes are known.
//! - **Symbols.** Every `dim_param` of a graph input becomes a program symbol of the same name,
//!   bound when `ImportOptions::dims` or `ImportOptions::input_shapes` gives it a value and left
//!   unbound otherwise; shapes keep the symbol either way, except downstream of a value folded
//!   from a bound symbol's value (`Shape` of a bound input), whose readers infer their types with
//!   bound symbols substituted so both agree. A dimension with neither a value nor a
//!   name becomes the symbol `<input>_dim<i>`. Options that name no input or no symbol are errors.
//! - **Attributes.** ONNX attributes keep their names: INT → `Attr::Int`, FLOAT → `Attr::Float`,
//!   INTS → `Attr::Ints`, FLOATS → `Attr::Floats`, STRING → `Attr::Str`, STRINGS →
//!   `Attr::Strs` (the recurrent operators' `activations`). Every attribute is
//!   first checked against the ONNX definition the node follows ([`opsets`]): an attribute of
//!   the wrong type, a missing required one and one the operator never declared are three
//!   distinct errors naming the node, the attribute and the declared type. Other attribute
//!   types (tensors, graphs…) are rejected, except on `Constant`, which the
//!   importer consumes itself. Empty input names are absent optional inputs (no edge on that
//!   connector); trailing empty output names are omitted optional outputs.
//! - **Versions.** Any IR version from 3 imports; what a newer one adds is read (element
//!   types, refused by name when dmove lacks them), ignored when it cannot change the computed
//!   values, or refused naming the field (see [`load::check_model`]). No opset is refused for
//!   its number: each node follows the latest definition of its operator not newer than the
//!   model's default opset ([`opsets::resolve`], from the generated [`schemas`]), and is refused
//!   only when dmove does not implement that definition ([`crate::ops::versions`]), with the
//!   operator, the model's opset and the versions dmove implements named. Where an older opset
//!   differs in meaning, not just in form, the importer adds the integer attribute `opset` (the
//!   model's default-domain version) and the operator interprets it. Today that is `Softmax`
//!   and `LogSoftmax` before opset 13, which coerce the input to 2-D at `axis` (default 1) and
//!   normalise over the flattened trailing block; from opset 13 they normalise along `axis`
//!   (default -1) and get no `opset` attribute. Attributes that later opsets turned into inputs
//!   are passed through as written. A `Split` without `split` sizes or `num_outputs` gets
//!   `num_outputs` = its output count.
//! - **Control flow.** `If`, `Loop` and `Scan` leave no node of their own: an `If` whose
//!   condition is known at import becomes its taken branch, a `Loop` with a known trip count
//!   and condition and a `Scan` with a static sequence length are unrolled ([`graphs`],
//!   `import::control`). Subgraph nodes are labelled `<node>/then/<label>`,
//!   `<node>/iter<i>/<label>`, and what they define is named `<scope>/<name>` (made fresh);
//!   anything else is refused naming what is not known and the flags that would bind it.
//! - **Types.** Output types come from [`crate::ops::Operator::infer`] in node order, with the
//!   values of constant inputs available; declared types (`value_info`, graph outputs) are
//!   checked against them wherever both sides are static.
//! - **Errors.** Unsupported operators are reported all together, nodes in foreign domains too;
//!   every other error names the file, node, tensor or attribute at fault.

pub mod attrs;
pub mod error;
pub mod graphs;
pub mod idioms;
pub mod import;
pub mod load;
pub mod opsets;
pub mod proto;
pub mod schemas;
pub mod signature;
pub mod summary;
pub mod tensor;
pub mod writer;

pub use error::{OnnxError, UnsupportedNode};
pub use import::{import, import_bytes, import_file, ImportOptions};
pub use load::{load_file, load_model};
pub use proto::ModelProto;
pub use writer::{AttrValue, DimSpec, ModelBuilder};
