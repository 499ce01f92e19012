//! The two layouts attention-style operators accept for a tensor of heads: `[batch, heads, seq,
//! head]` (4-D) or `[batch, seq, heads · head]` (3-D, the head count given by an attribute).
//! RotaryEmbedding and Attention both address elements as `(b, h, s, d)` through this, so the
//! layout rule is stated once.

use super::OpError;
use crate::ir::SymExpr;

/// How `(b, h, s, d)` maps onto a tensor's dimensions.
#[derive(Clone, Debug)]
pub struct HeadLayout {
    /// `[batch, seq, heads · head]` rather than `[batch, heads, seq, head]`.
    pub packed: bool,
    pub heads: SymExpr,
    pub head: SymExpr,
}

impl HeadLayout {
    /// The layout of a tensor of `shape`; a 3-D one needs `num_heads` (the attribute named
    /// `attr`, 0 when absent) and a hidden size it divides.
    pub fn of(
        op: &str,
        what: &str,
        shape: &[SymExpr],
        attr: &str,
        num_heads: i64,
    ) -> Result<HeadLayout, OpError> {
        match shape.len() {
            4 => Ok(HeadLayout::split(shape[1].clone(), shape[3].clone())),
            3 if num_heads > 0 => {
                let hidden = shape[2].as_int().ok_or_else(|| {
                    OpError::unsupported(
                        op,
                        format!(
                            "the hidden size of {what} ({}) must be a known size",
                            shape[2]
                        ),
                    )
                })?;
                if hidden % num_heads != 0 {
                    return Err(OpError::attr(
                        op,
                        attr,
                        format!("{num_heads} does not divide the hidden size {hidden} of {what}"),
                    ));
                }
                Ok(HeadLayout {
                    packed: true,
                    heads: SymExpr::Int(num_heads),
                    head: SymExpr::Int(hidden / num_heads),
                })
            }
            3 => Err(OpError::attr(
                op,
                attr,
                format!("must be given (positive) for a 3-D {what}"),
            )),
            r => Err(OpError::shape(
                op,
                format!("{what} must have rank 3 or 4, got {r}"),
            )),
        }
    }

    /// The 4-D layout with `heads` heads of `head` elements.
    pub fn split(heads: SymExpr, head: SymExpr) -> HeadLayout {
        HeadLayout {
            packed: false,
            heads,
            head,
        }
    }

    /// This layout's head count with heads of `head` elements (an output's layout).
    pub fn with_head(&self, head: SymExpr) -> HeadLayout {
        HeadLayout {
            packed: self.packed,
            heads: self.heads.clone(),
            head,
        }
    }

    /// The sequence dimension of a tensor of `shape` in this layout.
    pub fn seq<'s>(&self, shape: &'s [SymExpr]) -> &'s SymExpr {
        &shape[if self.packed { 1 } else { 2 }]
    }

    /// The shape of a tensor in this layout.
    pub fn shape(&self, batch: &SymExpr, seq: &SymExpr) -> Vec<SymExpr> {
        match self.packed {
            true => vec![
                batch.clone(),
                seq.clone(),
                (self.heads.clone() * self.head.clone()).simplify(),
            ],
            false => vec![
                batch.clone(),
                self.heads.clone(),
                seq.clone(),
                self.head.clone(),
            ],
        }
    }

    /// The index of element `d` of head `h` of token `s` in batch `b`.
    pub fn at(&self, b: &SymExpr, h: &SymExpr, s: &SymExpr, d: SymExpr) -> Vec<SymExpr> {
        match self.packed {
            true => vec![
                b.clone(),
                s.clone(),
                (h.clone() * self.head.clone() + d).simplify(),
            ],
            false => vec![b.clone(), h.clone(), s.clone(), d],
        }
    }

    /// [`HeadLayout::at`] as a row-major offset into a concrete tensor of `shape` (`eval`).
    pub fn offset(&self, shape: &[usize], [b, h, s, d]: [usize; 4]) -> usize {
        match self.packed {
            true => {
                let head = self.head.as_int().unwrap_or(0) as usize;
                (b * shape[1] + s) * shape[2] + h * head + d
            }
            false => ((b * shape[1] + h) * shape[2] + s) * shape[3] + d,
        }
    }
}

/// Every `(a, b, c)` of an `n0 × n1 × n2` grid in row-major order: the (batch, head, token)
/// walks of the references.
pub fn grid(n0: usize, n1: usize, n2: usize) -> impl Iterator<Item = (usize, usize, usize)> {
    (0..n0).flat_map(move |a| (0..n1).flat_map(move |b| (0..n2).map(move |c| (a, b, c))))
}

/// A symbolic size that a reference knows (every shape is concrete in `eval`).
pub fn size(d: &SymExpr) -> usize {
    d.as_int()
        .and_then(|v| usize::try_from(v).ok())
        .unwrap_or(0)
}
