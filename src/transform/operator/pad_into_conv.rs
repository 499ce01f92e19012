//! PadIntoConv: a zero Pad of the spatial axes in front of a convolution becomes the
//! convolution's own padding.
//!
//! ```text
//! before:  T = Pad(X, pads=[0, 0, 1, 2,  0, 0, 1, 0], mode="constant", value=0)   X: [N, C, H, W]
//!          Y = Conv(T, W, pads=[0, 1, 0, 1])
//! after:   Y = Conv(X, W, pads=[1, 3, 1, 1])              (keeps the Conv's id)
//! ```
//! The convolution already treats positions outside its input as zeros, so the padded copy of X
//! (a full pass over memory, and a larger buffer) is unnecessary. Pads are read from the
//! constant `pads` input (opset ≥ 11) or attribute (opset < 11), with the optional constant
//! value and `axes` inputs.

use crate::ir::{Attr, LibraryNode, NodeId, Program};
use crate::transform::support::opgraph::{
    constant, containers, declared, feeds, op_in, op_node, pairs, prune, set_inputs, set_op,
    OpNode, Port,
};
use crate::transform::{
    refuse, Call, Legality, Level, NodeClass, NotApplicable, Plan, Role, Schema, Transformation,
};

pub struct PadIntoConv;

const SCHEMA: Schema = Schema {
    name: "PadIntoConv",
    level: Level::Operator,
    doc: "merge a zero Pad of the spatial axes into the pads of the Conv that reads it",
    site: &[
        Role::new(
            "pad",
            NodeClass::Library { ops: &["Pad"] },
            "the zero padding of the spatial axes; it disappears",
        ),
        Role::new(
            "conv",
            NodeClass::Library { ops: &["Conv"] },
            "the convolution reading the padded tensor as X; it takes the padding over",
        ),
    ],
    params: &[],
};

/// A checked site: the nodes, the unpadded input and the Conv node after the rewrite.
struct Merge {
    pad: OpNode,
    conv: OpNode,
    x: Port,
    merged: LibraryNode,
}

impl PadIntoConv {
    /// Pad's begin and end amounts per axis of a rank-`rank` input, when it pads with zeros.
    fn zero_pads(&self, p: &Program, pad: &OpNode, rank: usize) -> Result<Vec<i64>, NotApplicable> {
        let why = |r: String| refuse(self, pad.id, r);
        let mode = pad.lib.str("mode").unwrap_or("constant");
        if mode != "constant" {
            return Err(why(format!(
                "mode `{mode}` pads with copies of the input, not with zeros"
            )));
        }
        let pads = match pad.input(1) {
            Some((_, name)) => constant(p, name, "pads").map_err(why)?.to_i64_vec(),
            None => pad
                .lib
                .ints("pads")
                .ok_or_else(|| why("neither a `pads` input nor attribute is given".into()))?
                .to_vec(),
        };
        let value = match pad.input(2) {
            Some((_, name)) => {
                let v = constant(p, name, "constant value").map_err(why)?;
                if v.is_empty() {
                    0.0
                } else {
                    v.get_f64(0)
                }
            }
            None => pad.lib.float("value").unwrap_or(0.0),
        };
        if value != 0.0 {
            return Err(why(format!(
                "pads with the value {value}, but a convolution pads with zeros"
            )));
        }
        let axes: Vec<usize> = match pad.input(3) {
            Some((_, name)) => {
                let r = rank as i64;
                let raw = constant(p, name, "axes").map_err(why)?.to_i64_vec();
                raw.iter()
                    .map(|&a| {
                        let a = if a < 0 { a + r } else { a };
                        usize::try_from(a)
                            .ok()
                            .filter(|&a| a < rank)
                            .ok_or_else(|| why(format!("axes {raw:?} leave 0..{rank}")))
                    })
                    .collect::<Result<_, _>>()?
            }
            None => (0..rank).collect(),
        };
        if pads.len() != 2 * axes.len() {
            return Err(why(format!(
                "{} pads for {} axes; expected two per axis",
                pads.len(),
                axes.len()
            )));
        }
        let mut full = vec![0; 2 * rank];
        for (k, &axis) in axes.iter().enumerate() {
            full[axis] = pads[k];
            full[rank + axis] = pads[axes.len() + k];
        }
        if let Some(v) = full.iter().find(|v| **v < 0) {
            return Err(why(format!("a negative pad ({v}) crops the input")));
        }
        if let Some(axis) = (0..2).find(|&d| full[d] != 0 || full[rank + d] != 0) {
            return Err(why(format!(
                "pads axis {axis} (batch or channel); a convolution pads spatial axes only"
            )));
        }
        Ok(full)
    }

    fn merge(
        &self,
        p: &Program,
        site: &[NodeId],
        legality: &mut Legality,
    ) -> Result<Merge, NotApplicable> {
        let (a, b) = (site[0], site[1]);
        let (g, pad) = op_node(self, p, a, &["Pad"])?;
        let conv = op_in(self, g, b, &["Conv"])?;
        let (_, pos) = feeds(self, p, &pad, &conv, legality)?;
        if pos != 0 {
            return Err(refuse(
                self,
                b,
                format!("reads the padded tensor as input {pos}, not as X"),
            ));
        }
        let x = pad
            .input(0)
            .cloned()
            .ok_or_else(|| refuse(self, a, "the data input is not wired"))?;
        let rank = declared(self, p, &x.1, a)?.rank();
        if rank < 3 {
            return Err(refuse(
                self,
                a,
                format!("pads a rank-{rank} tensor; a convolution input has rank 3 or more"),
            ));
        }
        let added = self.zero_pads(p, &pad, rank)?;
        let merged = self.merged_conv(&conv, rank, &added)?;
        Ok(Merge {
            pad,
            conv,
            x,
            merged,
        })
    }

    /// The convolution with the `added` pads (begin and end per axis of the rank-`rank` input)
    /// added to its own.
    fn merged_conv(
        &self,
        conv: &OpNode,
        rank: usize,
        added: &[i64],
    ) -> Result<LibraryNode, NotApplicable> {
        let b = conv.id;
        let auto_pad = conv.lib.str("auto_pad").unwrap_or("NOTSET");
        if !matches!(auto_pad, "NOTSET" | "VALID") {
            return Err(refuse(
                self,
                b,
                format!(
                    "auto_pad = {auto_pad} computes its own padding; explicit pads cannot be added"
                ),
            ));
        }
        let spatial = rank - 2;
        let mut pads = conv
            .lib
            .ints("pads")
            .map_or_else(|| vec![0; 2 * spatial], <[i64]>::to_vec);
        if pads.len() != 2 * spatial {
            return Err(refuse(
                self,
                b,
                format!("has {} pads for {spatial} spatial axes", pads.len()),
            ));
        }
        for d in 0..spatial {
            pads[d] += added[2 + d];
            pads[spatial + d] += added[rank + 2 + d];
        }
        let mut merged = conv.lib.clone();
        merged.attrs.remove("auto_pad");
        merged.attrs.insert("pads".into(), Attr::Ints(pads));
        Ok(merged)
    }
}

impl Transformation for PadIntoConv {
    fn schema(&self) -> &'static Schema {
        &SCHEMA
    }

    fn candidates(&self, p: &Program) -> Vec<Vec<NodeId>> {
        pairs(p, &["Pad"], &["Conv"])
    }

    fn plan(&self, call: Call) -> Result<Plan, NotApplicable> {
        let Call {
            p, site, legality, ..
        } = call;
        let m = self.merge(p, site, legality)?;
        let touched = site.to_vec();
        Ok(Plan::new(move |p| {
            let id = m.conv.id;
            let edit = p.edit(id).ok_or_else(|| refuse(&PadIntoConv, id, "gone"))?;
            let (g, data) = (&mut *edit.graph, &*edit.data);
            let mut inputs = m.conv.inputs.clone();
            if let Some(first) = inputs.first_mut() {
                *first = Some(m.x.clone());
            }
            set_inputs(g, data, m.conv.idx, &inputs);
            set_op(g, m.conv.idx, m.merged);
            g.remove_node(m.pad.idx);
            prune(p, &containers(&[&m.pad]));
            Ok(touched)
        }))
    }
}
