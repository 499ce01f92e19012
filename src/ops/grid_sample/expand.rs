//! GridSample's expansion, three maps. Over the grid positions `[N, H₁ … H_r]`: one writes the
//! `r` padded positions (`pos`, in the grid's precision), one writes per axis and tap the source
//! index (`src`, −1 for a tap that reads 0) and the weight (`w`, absent for `nearest`). Over `Y`:
//! one whose tasklet blends the `tapsʳ` corners of `X[n, c]`, read by element at those indices.

use super::{Mode, Padding, Plan};
use crate::ir::build::{In, Out, ScopeBuilder};
use crate::ir::{BinOp, DType, Dim, Range, Schedule, Subset, SymExpr, TExpr, UnOp};
use crate::ops::support::{element_map, params_over, Read};
use crate::ops::window::multi_indices;

fn bin(op: BinOp, a: TExpr, b: TExpr) -> TExpr {
    TExpr::binary(op, a, b)
}

/// `min(max(e, 0), last)`.
fn clamp_expr(e: TExpr, last: &SymExpr) -> TExpr {
    let low = bin(BinOp::Max, e, TExpr::Const(0.0));
    bin(BinOp::Min, low, TExpr::Index(last.clone()))
}

/// The tasklet side of [`super::reflect`]; `span = hi − lo`.
fn reflect_expr(x: TExpr, lo: TExpr, hi: TExpr, span: &SymExpr) -> TExpr {
    let below = bin(BinOp::Lt, x.clone(), lo.clone());
    let outside = bin(
        BinOp::Or,
        below.clone(),
        bin(BinOp::Gt, x.clone(), hi.clone()),
    );
    if span.as_int() == Some(0) {
        return TExpr::select(outside, lo, x);
    }
    let dx = TExpr::select(
        below.clone(),
        bin(BinOp::Sub, lo.clone(), x.clone()),
        bin(BinOp::Sub, x.clone(), hi.clone()),
    );
    let span_value = TExpr::Index(span.clone());
    let n = TExpr::unary(UnOp::Floor, bin(BinOp::Div, dx.clone(), span_value.clone()));
    let r = bin(
        BinOp::Sub,
        dx,
        bin(BinOp::Mul, n.clone(), span_value.clone()),
    );
    let two = bin(BinOp::Fmod, n, TExpr::Const(2.0));
    let even = bin(BinOp::Eq, two, TExpr::Const(0.0));
    let mut reflected = TExpr::select(
        bin(BinOp::Eq, below, even),
        bin(BinOp::Add, lo.clone(), r.clone()),
        bin(BinOp::Sub, hi, r),
    );
    if span.as_int().is_none() {
        let spans = bin(BinOp::Gt, span_value, TExpr::Const(0.0));
        reflected = TExpr::select(spans, reflected, lo);
    }
    TExpr::select(outside, reflected, x)
}

impl Plan {
    /// The bounds `lo`, `hi` of an axis of `d` elements as tasklet values, and `hi − lo`.
    fn bounds_expr(&self, d: &SymExpr) -> (TExpr, TExpr, SymExpr) {
        let (lo, hi) = self.bounds();
        let hi = bin(BinOp::Add, TExpr::Index(d.clone()), TExpr::Const(hi));
        let span = match self.align {
            true => d - 1,
            false => d.clone(),
        };
        (TExpr::Const(lo), hi, span)
    }

    /// The tasklet side of [`Plan::position`] for the grid coordinate `g`.
    fn position_expr(&self, g: TExpr, d: &SymExpr) -> TExpr {
        let k = TExpr::Const;
        let g1 = bin(BinOp::Add, g, k(1.0));
        let last = d - 1;
        let mut x = match self.align {
            true => bin(
                BinOp::Mul,
                bin(BinOp::Div, g1, k(2.0)),
                TExpr::Index(last.clone()),
            ),
            false => {
                let scaled = bin(BinOp::Mul, g1, TExpr::Index(d.clone()));
                bin(BinOp::Div, bin(BinOp::Sub, scaled, k(1.0)), k(2.0))
            }
        };
        if self.mode == Mode::Nearest {
            x = TExpr::unary(UnOp::Round, x);
        }
        let (lo, hi, span) = self.bounds_expr(d);
        match self.padding {
            Padding::Zeros => x,
            Padding::Border => {
                let below = bin(BinOp::Lt, x.clone(), lo);
                let outside = bin(BinOp::Or, below, bin(BinOp::Gt, x.clone(), hi));
                TExpr::select(outside, clamp_expr(x.clone(), &last), x)
            }
            Padding::Reflection => reflect_expr(x, lo, hi, &span),
        }
    }

    /// The tasklet side of [`Plan::source`] for tap position `at`: the index, −1 where the tap
    /// reads 0.
    fn source_expr(&self, at: TExpr, d: &SymExpr) -> TExpr {
        let last = d - 1;
        match self.padding {
            Padding::Zeros => {
                let inside = bin(
                    BinOp::And,
                    bin(BinOp::Ge, at.clone(), TExpr::Const(0.0)),
                    bin(BinOp::Lt, at.clone(), TExpr::Index(d.clone())),
                );
                TExpr::select(inside, at, TExpr::Const(-1.0))
            }
            Padding::Border => clamp_expr(at, &last),
            Padding::Reflection => {
                let (lo, hi, span) = self.bounds_expr(d);
                clamp_expr(reflect_expr(at, lo, hi, &span), &last)
            }
        }
    }
}

/// `idx` followed by `more`.
fn extended(idx: &[SymExpr], more: &[usize]) -> Vec<SymExpr> {
    let mut v = idx.to_vec();
    v.extend(more.iter().map(|&m| SymExpr::from(m)));
    v
}

/// Connector `{prefix}{k}_{j}` for every axis `k < r` and tap `j < count`.
fn tap_conns(prefix: &str, r: usize, count: usize) -> Vec<Vec<String>> {
    let per_axis = |k| (0..count).map(|j| format!("{prefix}{k}_{j}")).collect();
    (0..r).map(per_axis).collect()
}

/// A sequential map over `params` whose one tasklet reads `ins` and writes `outs`.
fn tasklet_map(
    b: &mut ScopeBuilder,
    label: &str,
    params: &[(String, Range)],
    ins: Vec<In>,
    outs: Vec<Out>,
) {
    let params = params
        .iter()
        .map(|(n, r)| (n.as_str(), r.clone()))
        .collect();
    b.map(label, params, Schedule::Sequential, |b| {
        b.tasklet(label, ins, outs);
    });
}

/// The element types of `X` and the grid.
pub(super) struct Types {
    pub x: DType,
    pub grid: DType,
}

/// Appends the three maps writing `y` from `x` and `grid`.
pub(super) fn append(
    plan: &Plan,
    b: &mut ScopeBuilder,
    label: &str,
    [x, grid, y]: [&str; 3],
    types: Types,
) {
    let r = plan.spatial.len();
    let (start, count) = plan.window();
    // Positions in the grid's precision (f32 below f64), weights in X's or the grid's.
    let wide = |d: DType| d == DType::F64;
    let pos_type = if wide(types.grid) {
        DType::F64
    } else {
        DType::F32
    };
    let w_type = if wide(types.x) { DType::F64 } else { pos_type };
    let mut at_shape = vec![plan.y.shape[0].clone()];
    at_shape.extend(plan.y.shape[2..].iter().cloned());
    let per = |more: &[usize]| extended(&at_shape, more);
    let pos = b.transient(&format!("{label}_pos"), pos_type, per(&[r]));
    let src = b.transient(&format!("{label}_src"), DType::I64, per(&[r, count]));
    let weights = match plan.mode {
        Mode::Nearest => None,
        Mode::Kernel(_) => Some(b.transient(&format!("{label}_w"), w_type, per(&[r, count]))),
    };
    let s_conns = tap_conns("s", r, count);
    let w_conns = tap_conns("w", r, count);

    // The padded positions, from grid component r − 1 − k for axis k.
    let (params, idx) = params_over("i", &at_shape);
    let g_conns: Vec<String> = (0..r).map(|k| format!("g{k}")).collect();
    let p_conns: Vec<String> = (0..r).map(|k| format!("p{k}")).collect();
    let ins = (0..r)
        .map(|k| {
            In(
                &g_conns[k],
                grid,
                Subset::element(extended(&idx, &[r - 1 - k])),
            )
        })
        .collect();
    let outs = (0..r)
        .map(|k| {
            let value = plan.position_expr(TExpr::input(&g_conns[k]), &plan.spatial[k]);
            let at = Subset::element(extended(&idx, &[k]));
            Out(&p_conns[k], &pos, at, None, value)
        })
        .collect();
    tasklet_map(b, &format!("{label}_pos"), &params, ins, outs);

    // Per axis and tap: the source index and the weight.
    let ins = (0..r)
        .map(|k| In(&p_conns[k], &pos, Subset::element(extended(&idx, &[k]))))
        .collect();
    let mut outs = Vec::new();
    for (k, d) in plan.spatial.iter().enumerate() {
        let p = TExpr::input(&p_conns[k]);
        let base = TExpr::unary(UnOp::Floor, p.clone());
        for j in 0..count {
            let at = || Subset::element(extended(&idx, &[k, j]));
            let offset = TExpr::Const((start + j as i64) as f64);
            let index = plan.source_expr(bin(BinOp::Add, base.clone(), offset.clone()), d);
            outs.push(Out(&s_conns[k][j], &src, at(), None, index));
            if let (Mode::Kernel(shape), Some(w)) = (plan.mode, &weights) {
                let t = bin(BinOp::Sub, offset, bin(BinOp::Sub, p.clone(), base.clone()));
                outs.push(Out(&w_conns[k][j], w, at(), None, shape.at_expr(t)));
            }
        }
    }
    tasklet_map(b, &format!("{label}_taps"), &params, ins, outs);

    // The blend over Y [N, C, H…], whose grid position drops the channel.
    let (y_params, y_idx) = params_over("i", &plan.y.shape);
    let mut at_idx = vec![y_idx[0].clone()];
    at_idx.extend(y_idx[2..].iter().cloned());
    let mut reads = Vec::new();
    for k in 0..r {
        for j in 0..count {
            reads.push(Read::new(&s_conns[k][j], &src, extended(&at_idx, &[k, j])));
            if let Some(w) = &weights {
                reads.push(Read::new(&w_conns[k][j], w, extended(&at_idx, &[k, j])));
            }
        }
    }
    let mut window = vec![Dim::Index(y_idx[0].clone()), Dim::Index(y_idx[1].clone())];
    window.extend(
        plan.spatial
            .iter()
            .map(|d| Dim::Range(Range::upto(d.clone()))),
    );
    reads.push(Read::window("x", x, Subset(window)));
    let value = multi_indices(&vec![count; r])
        .map(|corner| {
            let index = |k: usize| TExpr::input(&s_conns[k][corner[k]]);
            let mut term = corner_sample(plan.padding, &index, r);
            if weights.is_some() {
                for (k, &j) in corner.iter().enumerate() {
                    term = bin(BinOp::Mul, TExpr::input(&w_conns[k][j]), term);
                }
            }
            term
        })
        .reduce(|acc, term| bin(BinOp::Add, acc, term))
        .unwrap_or(TExpr::Const(0.0));
    element_map(b, label, &y_params, reads, (y, y_idx), None, value);
}

/// The element of `X[n, c]` (connector `x`) a corner reads, whose index on axis `k` is
/// `index(k)`; with `zeros` padding an index of −1 reads 0.
fn corner_sample(padding: Padding, index: &dyn Fn(usize) -> TExpr, r: usize) -> TExpr {
    let zero = TExpr::Const(0.0);
    let mut at = vec![zero.clone(), zero.clone()];
    if padding != Padding::Zeros {
        at.extend((0..r).map(index));
        return TExpr::element("x", at);
    }
    at.extend((0..r).map(|k| bin(BinOp::Max, index(k), zero.clone())));
    let inside = (0..r)
        .map(|k| bin(BinOp::Ge, index(k), zero.clone()))
        .reduce(|a, c| bin(BinOp::And, a, c))
        .unwrap_or(TExpr::Const(1.0));
    TExpr::select(inside, TExpr::element("x", at), zero)
}
