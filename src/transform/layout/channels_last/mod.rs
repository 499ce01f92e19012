//! ChannelsLast: run a connected region of NCHW operators channels-last (NHWC), transposing only
//! where data enters and leaves the region.
//!
//! ```text
//! before (NCHW):  X ─▶ Conv ─▶ Relu ─┬─▶ Conv ─▶ Add ─▶ GlobalAveragePool ─▶ Y
//!                                    └───────────▲
//! after:          X ─▶ Transpose(0,2,3,1) ─▶ NhwcConv ─▶ Relu ─┬─▶ NhwcConv ─▶ Add
//!                      └───────────────────────────────────────┘────────────▲
//!                 Add ─▶ ReduceMean(axes=[1,2]) ─▶ Transpose(0,3,1,2) ─▶ Y
//! ```
//! The site is any operator of the region; the region grows from it over every operator joined
//! to it through data that has a channels-last form: Conv (→ NhwcConv, the same convolution with
//! X and Y channels-last), MaxPool / AveragePool (→ NhwcMaxPool / NhwcAveragePool; not a MaxPool
//! that also writes its `Indices`), GlobalAveragePool / GlobalMaxPool (→ ReduceMean / ReduceMax
//! over the spatial axes), Concat (its axis follows the channels), and element-wise operators
//! (unary, and broadcasting ones whose operands are 4-D or constants, which are permuted once
//! here). BatchNormalization has no channels-last operator, so it ends a region (fold it into
//! its Conv first with BatchNormIntoConv).
//!
//! The rewrite is local and then simplified: every operator of the region is wrapped in its own
//! transposes (in before each 4-D operand, out after its result), then transposes that meet are
//! cancelled ([`transpose_cancel`]): an out-transpose feeding an in-transpose is the
//! identity and both disappear, so only the region's boundary keeps transposes. Transposes
//! already in the program next to the region (an NHWC model's own input transposes) cancel the
//! same way. Why: channels-last makes the channel the unit-stride axis, which the per-pixel
//! channel reductions of a convolution and element-wise loops vectorize over.

mod transpose_cancel;

use crate::ir::rewrite::ScopeEdit;
use crate::ir::{
    Attr, DataDesc, DataKind, Graph, LibraryNode, Node, NodeId, NodeKind, Program, SymExpr, Tensor,
};
use crate::transform::support::opgraph::{
    add_access, constant, declare_constant, library_nodes, op_in, op_node, set_inputs, set_op,
    set_output, OpNode, Port,
};
use crate::transform::{
    refuse, Call, Level, NodeClass, NotApplicable, Plan, Role, Schema, Transformation,
};
use petgraph::stable_graph::NodeIndex;
use std::collections::{BTreeMap, BTreeSet, VecDeque};
use transpose_cancel::{cancel_transposes, transpose};

pub struct ChannelsLast;

const SCHEMA: Schema = Schema {
    name: "ChannelsLast",
    level: Level::Operator,
    doc: "run the NCHW operators connected to a node channels-last (Conv → NhwcConv), transposing only at the region's boundary",
    site: &[Role::new(
        "operator",
        NodeClass::Library { ops: &[] },
        "any operator of the region; the region grows from it",
    )],
    params: &[],
};

/// `NCHW → NHWC`: axis `d` of the result is axis `TO_NHWC[d]` of the operand.
const TO_NHWC: [usize; 4] = [0, 2, 3, 1];
/// `NHWC → NCHW`.
const TO_NCHW: [usize; 4] = [0, 3, 1, 2];

/// Unary element-wise operators: any layout gives the same elements.
const UNARY: &[&str] = &[
    "Abs",
    "Ceil",
    "Clip",
    "Elu",
    "Erf",
    "Exp",
    "Floor",
    "Gelu",
    "HardSigmoid",
    "HardSwish",
    "Identity",
    "LeakyRelu",
    "Log",
    "Mish",
    "Neg",
    "Reciprocal",
    "Relu",
    "Selu",
    "Sigmoid",
    "Softplus",
    "Sqrt",
    "Tanh",
];

/// Broadcasting element-wise operators: layout-free when every operand is permuted alike.
const BROADCASTING: &[&str] = &["Add", "Div", "Max", "Min", "Mul", "Pow", "Sub", "Sum"];

/// What an operator of the region becomes.
#[derive(Clone, Debug)]
enum Form {
    /// The same operator and attributes.
    Same,
    /// The channels-last operator of this name, with the same attributes (Conv → NhwcConv).
    Renamed(&'static str),
    /// A global pooling → this reduction over the spatial axes 1 and 2, keeping them.
    GlobalPool(&'static str),
    /// Concat along this axis of the channels-last operands.
    Concat(i64),
}

/// An operator of the region: its form and the input positions that carry NCHW data.
#[derive(Clone, Debug)]
struct Member {
    op: OpNode,
    form: Form,
    layout_inputs: Vec<usize>,
}

/// A region member ready to wrap: what planning found that the rewrite needs.
struct Wrapping {
    member: Member,
    /// Constant operands by input position: the name to declare the permuted copy after, and
    /// its value.
    constants: BTreeMap<usize, (String, Tensor)>,
    /// The container the operator writes (its result is transposed back into it).
    output: Port,
}

impl Transformation for ChannelsLast {
    fn schema(&self) -> &'static Schema {
        &SCHEMA
    }

    fn candidates(&self, p: &Program) -> Vec<Vec<NodeId>> {
        let mut covered = BTreeSet::new();
        let mut out = Vec::new();
        for site in library_nodes(p, &["Conv"]) {
            let Some(&at) = site.first() else {
                continue;
            };
            if covered.contains(&at) {
                continue;
            }
            if let Ok(region) = self.region(p, at) {
                covered.extend(region.iter().map(|m| m.op.id));
                out.push(site);
            }
        }
        out
    }

    fn plan(&self, call: Call) -> Result<Plan, NotApplicable> {
        let Call { p, site, .. } = call;
        let at = site[0];
        let region = self.region(p, at)?;
        let wrappings = (region.into_iter())
            .map(|m| self.prepare(p, m))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Plan::new(move |p| {
            let mut touched: Vec<NodeId> = wrappings.iter().map(|w| w.member.op.id).collect();
            let mut wrapped = BTreeMap::new();
            for w in &wrappings {
                touched.extend(wrap(p, w, &mut wrapped)?);
            }
            cancel_transposes(p, at, &touched);
            touched.retain(|&id| p.node(id).is_some());
            Ok(touched)
        }))
    }
}

impl ChannelsLast {
    /// The operators reachable from `at` through data, all with a channels-last form, in
    /// program order. Refuses when `at` itself has none, or when the region would hold no
    /// operator whose layout matters (then it would only add transposes).
    fn region(&self, p: &Program, at: NodeId) -> Result<Vec<Member>, NotApplicable> {
        let (g, first) = op_node(self, p, at, &[])?;
        let first = member(p, first).map_err(|r| refuse(self, at, r))?;
        let mut seen = BTreeSet::from([first.op.idx]);
        let mut members = vec![first];
        let mut queue = VecDeque::from([0]);
        while let Some(k) = queue.pop_front() {
            for idx in neighbours(g, &members[k]) {
                if !seen.insert(idx) {
                    continue;
                }
                let id = g.node(idx).id;
                let Ok(op) = op_in(self, g, id, &[]) else {
                    continue;
                };
                if let Ok(m) = member(p, op) {
                    members.push(m);
                    queue.push_back(members.len() - 1);
                }
            }
        }
        if members.iter().all(|m| matches!(m.form, Form::Same)) {
            return Err(refuse(
                self,
                at,
                "the region holds only element-wise operators, whose layout does not matter: \
                 running it channels-last would only add transposes",
            ));
        }
        let order = g.ordered();
        members.sort_by_key(|m| order.iter().position(|&i| i == m.op.idx));
        Ok(members)
    }

    /// What wrapping `m` needs from the program as it is: its constant operands permuted to
    /// NHWC, and the container it writes.
    fn prepare(&self, p: &Program, m: Member) -> Result<Wrapping, NotApplicable> {
        let id = m.op.id;
        let mut constants = BTreeMap::new();
        for &i in &m.layout_inputs {
            let Some((_, name)) = m.op.input(i) else {
                continue;
            };
            if let Ok(value) = constant(p, name, "operand") {
                let permuted = permute_constant(value).map_err(|r| refuse(self, id, r))?;
                constants.insert(i, (format!("{name}_nhwc"), permuted));
            }
        }
        let output =
            m.op.outputs
                .first()
                .cloned()
                .flatten()
                .ok_or_else(|| refuse(self, id, "the output is not wired"))?;
        Ok(Wrapping {
            member: m,
            constants,
            output,
        })
    }
}

/// Wraps one operator: its NCHW operands are transposed (constants permuted), it runs in its
/// channels-last form, and its result is transposed back into the container it wrote.
/// `wrapped` shares one in-transpose between readers of the same access node.
fn wrap(
    p: &mut Program,
    w: &Wrapping,
    wrapped: &mut BTreeMap<NodeIndex, Port>,
) -> Result<Vec<NodeId>, NotApplicable> {
    let m = &w.member;
    let id = m.op.id;
    let constants: BTreeMap<usize, String> = (w.constants.iter())
        .map(|(&i, (base, value))| (i, declare_constant(p, base, value.clone())))
        .collect();
    let mut fresh_inputs = BTreeMap::new();
    for &i in &m.layout_inputs {
        if let Some((idx, name)) = m.op.input(i) {
            if !constants.contains_key(&i) && !wrapped.contains_key(idx) {
                fresh_inputs.insert(i, declare_nhwc(p, id, name)?);
            }
        }
    }
    let out_nhwc = declare_nhwc(p, id, &w.output.1)?;
    let gone = || refuse(&ChannelsLast, id, "gone");
    let mut edit = p.edit(id).ok_or_else(gone)?;
    let mut added = Vec::new();
    let mut inputs = m.op.inputs.clone();
    for &i in &m.layout_inputs {
        let Some(src) = m.op.input(i).cloned() else {
            continue;
        };
        let port = if let Some(name) = constants.get(&i) {
            add_access(&mut edit, name)
        } else if let Some(port) = wrapped.get(&src.0) {
            port.clone()
        } else {
            let fresh = fresh_inputs.get(&i).ok_or_else(gone)?;
            let dst = add_access(&mut edit, fresh);
            added.push(add_transpose(&mut edit, &src, &dst, TO_NHWC));
            wrapped.insert(src.0, dst.clone());
            dst
        };
        if let Some(slot) = inputs.get_mut(i) {
            *slot = Some(port);
        }
    }
    let result = add_access(&mut edit, &out_nhwc);
    let (g, data) = (&mut *edit.graph, &*edit.data);
    set_inputs(g, data, m.op.idx, &inputs);
    set_output(g, data, m.op.idx, &result);
    set_op(g, m.op.idx, channels_last_op(&m.op.lib, &m.form));
    added.push(add_transpose(&mut edit, &result, &w.output, TO_NCHW));
    Ok(added)
}

/// Declares a transient holding container `name` channels-last; returns its name.
fn declare_nhwc(p: &mut Program, id: NodeId, name: &str) -> Result<String, NotApplicable> {
    let desc = (p.data.get(name))
        .filter(|d| d.rank() == 4)
        .ok_or_else(|| {
            refuse(
                &ChannelsLast,
                id,
                format!("`{name}` is not a declared 4-D container"),
            )
        })?;
    let shape: Vec<SymExpr> = TO_NHWC.iter().map(|&k| desc.shape[k].clone()).collect();
    let nhwc = DataDesc::new(desc.dtype, shape, DataKind::Transient);
    let fresh = p.fresh_data_name(&format!("{name}_nhwc"));
    p.data.insert(fresh.clone(), nhwc);
    Ok(fresh)
}

/// The library nodes that write the region member's NCHW operands or read its result.
fn neighbours(g: &Graph, m: &Member) -> Vec<NodeIndex> {
    let mut out = Vec::new();
    for &i in &m.layout_inputs {
        if let Some((access, _)) = m.op.input(i) {
            out.extend(g.in_edges(*access).iter().map(|e| e.other));
        }
    }
    for (access, _) in m.op.outputs.iter().flatten() {
        out.extend(g.out_edges(*access).iter().map(|e| e.other));
    }
    out.retain(|&i| matches!(g.node(i).kind, NodeKind::Library(_)));
    out
}

/// The operator's channels-last form and the positions of its NCHW operands, or why it has none.
fn member(p: &Program, op: OpNode) -> Result<Member, String> {
    let name = op.lib.op.as_str();
    let (form, layout_inputs): (Form, Vec<usize>) = match name {
        "Conv" => (Form::Renamed("NhwcConv"), vec![0]),
        "MaxPool" => (Form::Renamed("NhwcMaxPool"), vec![0]),
        "AveragePool" => (Form::Renamed("NhwcAveragePool"), vec![0]),
        "GlobalAveragePool" => (Form::GlobalPool("ReduceMean"), vec![0]),
        "GlobalMaxPool" => (Form::GlobalPool("ReduceMax"), vec![0]),
        "Concat" => {
            let axis = op.lib.int("axis").unwrap_or(1);
            let axis = usize::try_from(if axis < 0 { axis + 4 } else { axis })
                .ok()
                .and_then(|a| TO_NHWC.iter().position(|&k| k == a))
                .ok_or_else(|| format!("Concat's axis {axis} is not an axis of a 4-D tensor"))?;
            (Form::Concat(axis as i64), (0..op.inputs.len()).collect())
        }
        _ if UNARY.contains(&name) => (Form::Same, vec![0]),
        _ if BROADCASTING.contains(&name) => (Form::Same, (0..op.inputs.len()).collect()),
        "BatchNormalization" => {
            return Err(
                "BatchNormalization normalizes axis 1 and has no channels-last form; fold it \
                 into its Conv first (BatchNormIntoConv)"
                    .into(),
            )
        }
        _ => return Err(format!("{name} has no channels-last form")),
    };
    let (Some(Some(result)), true) = (
        op.outputs.first(),
        op.outputs.iter().skip(1).all(Option::is_none),
    ) else {
        return Err(format!("{name} must have exactly one output"));
    };
    let rank = |d: &str| p.data.get(d).map_or(0, |desc| desc.rank());
    if rank(&result.1) != 4 {
        return Err(format!(
            "{name}'s result `{}` has rank {}; NCHW ↔ NHWC applies to 4-D tensors",
            result.1,
            rank(&result.1)
        ));
    }
    for &i in &layout_inputs {
        let Some((_, d)) = op.input(i) else { continue };
        let is_constant = constant(p, d, "operand").is_ok();
        if rank(d) != 4 && !(is_constant && rank(d) < 4 && matches!(form, Form::Same)) {
            return Err(format!(
                "{name}'s operand `{d}` has rank {}; NCHW ↔ NHWC applies to 4-D tensors \
                 (lower ranks only as broadcast constants)",
                rank(d)
            ));
        }
    }
    Ok(Member {
        op,
        form,
        layout_inputs,
    })
}

/// The library node `lib` becomes in the region.
fn channels_last_op(lib: &LibraryNode, form: &Form) -> LibraryNode {
    match form {
        Form::Same => lib.clone(),
        Form::Renamed(op) => LibraryNode {
            op: (*op).into(),
            attrs: lib.attrs.clone(),
        },
        Form::GlobalPool(reduce) => LibraryNode {
            op: (*reduce).into(),
            attrs: BTreeMap::from([
                ("axes".to_string(), Attr::Ints(vec![1, 2])),
                ("keepdims".to_string(), Attr::Int(1)),
            ]),
        },
        Form::Concat(axis) => {
            let mut attrs = lib.attrs.clone();
            attrs.insert("axis".into(), Attr::Int(*axis));
            LibraryNode {
                op: lib.op.clone(),
                attrs,
            }
        }
    }
}

/// A constant operand of rank ≤ 4 aligned to rank 4 as broadcasting does (leading 1s) and
/// permuted to NHWC.
fn permute_constant(value: &Tensor) -> Result<Tensor, String> {
    let mut shape = vec![1; 4usize.saturating_sub(value.shape.len())];
    shape.extend(&value.shape);
    let aligned = Tensor {
        shape,
        data: value.data.clone(),
    };
    let perm = transpose(&TO_NHWC);
    crate::ops::lookup("Transpose")
        .ok_or("no Transpose operator")?
        .eval(&perm, &[Some(&aligned)])
        .map(|mut v| v.remove(0))
        .map_err(|e| e.to_string())
}

/// A new Transpose by `perm` from `src` into `dst`; returns its id.
fn add_transpose(edit: &mut ScopeEdit, src: &Port, dst: &Port, perm: [usize; 4]) -> NodeId {
    let id = edit.fresh_id();
    let idx = edit.graph.add_node(Node {
        id,
        label: format!("{}_to_{}", src.1, dst.1),
        kind: NodeKind::Library(transpose(&perm)),
    });
    let (g, data) = (&mut *edit.graph, &*edit.data);
    set_inputs(g, data, idx, &[Some(src.clone())]);
    set_output(g, data, idx, dst);
    id
}
