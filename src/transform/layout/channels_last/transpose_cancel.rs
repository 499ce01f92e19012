//! Cancelling transposes that meet: the simplification behind ChannelsLast (and any rewrite that
//! wraps operators in transposes).
//!
//! ```text
//! before:  A = Transpose(S, p)    R = Transpose(A, q)    … = f(R)    … = g(A)
//! after, q∘p the identity:        … = f(S)               … = g(A)   (first kept: A is still read)
//! after, otherwise:               R = Transpose(S, p∘q)
//! ```
//! Unlike TransposeFolding, which rewrites one named pair and needs the link read once, this
//! runs to a fixed point over a scope and handles a link read by several transposes (a result
//! used by two operators of a channels-last region): each reader is cancelled on its own, and
//! the first transpose goes once nothing reads the link any more.

use super::ChannelsLast;
use crate::ir::{Attr, DataKind, LibraryNode, NodeId, Program};
use crate::transform::support::opgraph::{
    forwardable, only_output, op_in, prune, redirect_readers, set_inputs, set_op, transpose_perm,
    OpNode, Port,
};
use crate::transform::support::scope::uses;
use std::collections::BTreeMap;

/// `Transpose` by `perm`.
pub(super) fn transpose(perm: &[usize]) -> LibraryNode {
    let perm = perm.iter().map(|&d| d as i64).collect();
    LibraryNode {
        op: "Transpose".into(),
        attrs: BTreeMap::from([("perm".to_string(), Attr::Ints(perm))]),
    }
}

/// Two transposes that meet: `second` reads `link`, written only by `first` from `source`.
struct Meeting {
    first: OpNode,
    second: OpNode,
    source: Port,
    link: Port,
    result: Port,
    /// The composition: axis `d` of `result` is axis `perm[d]` of `source`.
    perm: Vec<usize>,
}

/// Cancels or composes every pair of transposes that meet in the scope of node `anchor` where
/// one of the two is in `involved` (so unrelated transposes elsewhere stay as they are).
pub(super) fn cancel_transposes(p: &mut Program, anchor: NodeId, involved: &[NodeId]) {
    while let Some(m) = next_meeting(p, anchor, involved) {
        resolve(p, m);
    }
}

/// The first meeting in program order.
fn next_meeting(p: &Program, anchor: NodeId, involved: &[NodeId]) -> Option<Meeting> {
    let t = &ChannelsLast;
    let (g, _) = p.graph.locate(anchor)?;
    for idx in g.ordered() {
        let Ok(second) = op_in(t, g, g.node(idx).id, &["Transpose"]) else {
            continue;
        };
        let Some(link) = second.input(0).cloned() else {
            continue;
        };
        let writers = g.in_edges(link.0);
        let [writer] = writers.as_slice() else {
            continue;
        };
        let Ok(first) = op_in(t, g, g.node(writer.other).id, &["Transpose"]) else {
            continue;
        };
        let transient = p.data.get(&link.1).map(|d| d.kind) == Some(DataKind::Transient);
        if !(involved.contains(&first.id) || involved.contains(&second.id))
            || !transient
            || uses(&p.graph, &link.1).1 != 1
        {
            continue;
        }
        let (Some(source), Ok(result)) = (first.input(0).cloned(), only_output(t, &second)) else {
            continue;
        };
        let result = result.clone();
        let Some(rank) = p.data.get(&source.1).map(|d| d.rank()) else {
            continue;
        };
        let (Ok(p1), Ok(p2)) = (
            transpose_perm(t, &first, rank),
            transpose_perm(t, &second, rank),
        ) else {
            continue;
        };
        let perm = p2.iter().map(|&d| p1[d]).collect();
        return Some(Meeting {
            first,
            second,
            source,
            link,
            result,
            perm,
        });
    }
    None
}

/// Removes `second` when the pair is the identity and its readers may read the source, else
/// makes it one transpose of the source; removes `first` once its result is unread.
fn resolve(p: &mut Program, m: Meeting) {
    let identity = m.perm.iter().enumerate().all(|(d, &k)| d == k);
    let forward = identity
        && p.graph.locate(m.second.id).is_some_and(|(g, _)| {
            forwardable(&ChannelsLast, p, g, &m.source, &m.result, m.second.id).is_ok()
        });
    let Some(edit) = p.edit(m.second.id) else {
        return;
    };
    let (g, data) = (&mut *edit.graph, &*edit.data);
    if forward {
        redirect_readers(g, &m.result, &m.source);
        g.remove_node(m.second.idx);
    } else {
        set_inputs(g, data, m.second.idx, &[Some(m.source.clone())]);
        set_op(g, m.second.idx, transpose(&m.perm));
    }
    if g.out_edges(m.link.0).is_empty() {
        g.remove_node(m.first.idx);
    }
    prune(p, &[m.link.1, m.result.1]);
}
