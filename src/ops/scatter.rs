//! Scattering updates into a copy of the data: ScatterElements (and its deprecated first name,
//! Scatter) and ScatterND, with the reductions `none`, `add`, `mul`, `max` and `min`.
//!
//! The IR has data-dependent reads (`t[…]`) but no data-dependent writes: every write's subset
//! is affine in the map parameters, which is what keeps race analysis and atomics decidable. So
//! the expansions turn each scatter into a search. The output starts as a copy of the data; then
//! a map runs over (update position, output element that position's index *could* name), and a
//! `select` on "the index names this element" writes the update or a neutral value through the
//! reduction's write-conflict resolution (0 for `add`, 1 for `mul`, the data element itself for
//! `max`/`min`, which leaves the running extreme unchanged). The price is the search:
//! ScatterElements costs |indices| × data.shape[axis] tasklets, ScatterND |index tuples| × |data|.
//!
//! Duplicate indices: ONNX leaves reduction `none` with duplicates undefined. dmove defines it as
//! *the last update in row-major order wins* — what ONNX's reference loop does — in `eval` and in
//! the expansion alike: the expansion records, per output element, the position of the last
//! update naming it (a `max` reduction of `select(match, position, -1)`), then copies that
//! update or, where none matched, the data. With a reduction, duplicates combine in order.
//!
//! Indices may be negative (`[-n, 0)` counts from the end). An index outside `[-n, n)` is an
//! error in `eval`; in the expansion it names no element, so its update is dropped.

use super::index::{axis_attr, axis_window, check_within, window_indices, wrap_index, wrapped};
use super::index::{lookup_map, require_indices, require_int64, tuple_len};
use super::movement::type_of;
use super::support::{
    arg, dim_product, element_map, fill_map, input_type, offset, params_over, same_dtype, unravel,
    Read,
};
use super::{check_arity, ExpandCtx, OpError, Operator, TensorType};
use crate::ir::build::In;
use crate::ir::{BinOp, DType, Dim, LibraryNode, Range, Subset, SymExpr, TExpr, Tensor, UnOp, Wcr};

pub static OPS: &[&dyn Operator] = &[&SCATTER, &SCATTER_ELEMENTS, &ScatterND];

static SCATTER: ScatterElements = ScatterElements { name: "Scatter" };
static SCATTER_ELEMENTS: ScatterElements = ScatterElements {
    name: "ScatterElements",
};

/// The `reduction` attribute: how an update combines with the element it lands on (`None`:
/// it replaces it).
fn reduction(op: &str, node: &LibraryNode) -> Result<Option<Wcr>, OpError> {
    match node.str("reduction").unwrap_or("none") {
        "none" => Ok(None),
        "add" => Ok(Some(Wcr::Sum)),
        "mul" => Ok(Some(Wcr::Prod)),
        "max" => Ok(Some(Wcr::Max)),
        "min" => Ok(Some(Wcr::Min)),
        other => Err(OpError::attr(
            op,
            "reduction",
            format!("expected none, add, mul, max or min, got `{other}`"),
        )),
    }
}

/// `old` combined with the update `new` under `reduction`, in double precision.
fn combine(reduction: Option<Wcr>, old: f64, new: f64) -> f64 {
    reduction.map_or(new, |w| w.combine_f64(old, new))
}

/// The value a matching update contributes, or the reduction's neutral value otherwise;
/// `data` is the connector holding the data element at the target (for `max`/`min`).
fn contribution(reduction: Wcr, matched: TExpr, update: TExpr, data: &str) -> TExpr {
    let neutral = match reduction {
        Wcr::Sum => TExpr::Const(0.0),
        Wcr::Prod => TExpr::Const(1.0),
        Wcr::Max | Wcr::Min => TExpr::input(data),
    };
    TExpr::select(matched, update, neutral)
}

/// Checks that the updates have the data's element type and the expected shape.
fn check_updates(
    op: &str,
    data: &TensorType,
    updates: &TensorType,
    want: &[SymExpr],
) -> Result<(), OpError> {
    same_dtype(op, data, updates, 2)?;
    if updates.shape != want {
        return Err(OpError::shape(
            op,
            format!("updates have shape {:?}, expected {want:?}", updates.shape),
        ));
    }
    Ok(())
}

/// `y[p] = data[p]` over the whole output: the starting point of every scatter expansion.
fn copy_data(ctx: &mut ExpandCtx, data: &str, y: &str, shape: &[SymExpr]) {
    let (params, idx) = params_over("i", shape);
    let label = format!("{}_copy", ctx.label);
    let reads = vec![Read::new("d", data, idx.clone())];
    element_map(
        ctx.b,
        &label,
        &params,
        reads,
        (y, idx),
        None,
        TExpr::input("d"),
    );
}

/// Where reduction `none` found no update (`last` < 0) the data element, else the update that
/// `at(max(last, 0))` indexes inside `window` (the clamp keeps the unselected read in bounds).
fn last_or_data(window_at: impl Fn(TExpr) -> Vec<TExpr>) -> TExpr {
    let clamped = TExpr::binary(BinOp::Max, TExpr::input("l"), TExpr::Const(0.0));
    TExpr::select(
        TExpr::binary(BinOp::Ge, TExpr::input("l"), TExpr::Const(0.0)),
        TExpr::element("u", window_at(clamped)),
        TExpr::input("d"),
    )
}

/// `ScatterElements(data, indices, updates)` along `axis`: for every position `q` of
/// `indices`, the element `q` with `q[axis] = indices[q]` receives `updates[q]`.
pub struct ScatterElements {
    name: &'static str,
}

impl Operator for ScatterElements {
    fn name(&self) -> &'static str {
        self.name
    }

    fn input_count(&self) -> (usize, usize) {
        (3, 3)
    }

    fn infer(
        &self,
        node: &LibraryNode,
        inputs: &[Option<TensorType>],
        _consts: &[Option<&Tensor>],
    ) -> Result<Vec<TensorType>, OpError> {
        check_arity(self, inputs.len())?;
        let op = self.name;
        let data = input_type(op, inputs, 0)?;
        let indices = input_type(op, inputs, 1)?;
        let updates = input_type(op, inputs, 2)?;
        require_indices(op, indices)?;
        reduction(op, node)?;
        let axis = axis_attr(op, node, data.shape.len())?;
        check_within(op, &indices.shape, &data.shape, axis)?;
        check_updates(op, data, updates, &indices.shape)?;
        Ok(vec![data.clone()])
    }

    fn eval(&self, node: &LibraryNode, inputs: &[Option<&Tensor>]) -> Result<Vec<Tensor>, OpError> {
        let op = self.name;
        let data = arg(op, inputs, 0)?;
        let indices = arg(op, inputs, 1)?;
        let updates = arg(op, inputs, 2)?;
        let types: Vec<Option<TensorType>> =
            [data, indices, updates].map(|t| Some(type_of(t))).to_vec();
        self.infer(node, &types, &[])?;
        let red = reduction(op, node)?;
        let axis = axis_attr(op, node, data.shape.len())?;
        let strides = data.strides();
        let mut y = data.clone();
        for (e, &i) in indices.to_i64_vec().iter().enumerate() {
            let mut p = unravel(e, &indices.shape);
            p[axis] = wrap_index(op, i, data.shape[axis])?;
            let off = offset(&p, &strides);
            y.set_f64(off, combine(red, y.get_f64(off), updates.get_f64(e)));
        }
        Ok(vec![y])
    }

    fn expand(&self, _implementation: &str, ctx: &mut ExpandCtx) -> Result<(), OpError> {
        let (data, dd) = ctx.input(0)?.clone();
        let (indices, id) = ctx.input(1)?.clone();
        let (updates, _) = ctx.input(2)?.clone();
        let (y, _) = ctx.output(0)?.clone();
        let rank = dd.shape.len();
        let axis = axis_attr(self.name, ctx.node, rank)?;
        let red = reduction(self.name, ctx.node)?;
        let extent = dd.shape[axis].clone();
        copy_data(ctx, &data, &y, &dd.shape);

        // The search: update position `q` against every element `j` of the axis it may land on.
        let (mut params, q) = params_over("i", &id.shape);
        params.push(("j".to_string(), Range::upto(extent.clone())));
        let mut target = q.clone();
        target[axis] = SymExpr::sym("j");
        let matched = TExpr::binary(
            BinOp::Eq,
            wrapped(TExpr::input("n"), &extent),
            TExpr::Index(SymExpr::sym("j")),
        );
        let n = Read::new("n", &indices, q.clone());
        let label = ctx.label.clone();
        let Some(w) = red else {
            // The region updates can reach: the indices' extents, the data's along `axis`.
            let mut region = id.shape.clone();
            region[axis] = extent;
            let last = ctx
                .b
                .transient(&format!("{label}_last"), DType::I64, region.clone());
            fill_map(ctx.b, &format!("{label}_last_init"), &last, &region, -1.0);
            let position =
                TExpr::select(matched, TExpr::Index(q[axis].clone()), TExpr::Const(-1.0));
            let dst = (last.as_str(), target);
            element_map(
                ctx.b,
                &format!("{label}_match"),
                &params,
                vec![n],
                dst,
                Some(Wcr::Max),
                position,
            );
            let (params, p) = params_over("i", &region);
            let inputs = vec![
                In("l", &last, Subset::element(p.clone())),
                In("d", &data, Subset::element(p.clone())),
                In("u", &updates, axis_window(&id.shape, &p, axis)),
            ];
            let value = last_or_data(|at| window_indices(rank, axis, at));
            lookup_map(
                ctx.b,
                &format!("{label}_place"),
                &params,
                inputs,
                (&y, p),
                None,
                value,
            );
            return Ok(());
        };
        let reads = vec![
            n,
            Read::new("u", &updates, q.clone()),
            Read::new("d", &data, target.clone()),
        ];
        let value = contribution(w, matched, TExpr::input("u"), "d");
        element_map(
            ctx.b,
            &format!("{label}_scatter"),
            &params,
            reads,
            (&y, target),
            Some(w),
            value,
        );
        Ok(())
    }

    fn flops(&self, node: &LibraryNode, inputs: &[Option<TensorType>], _: &[TensorType]) -> u64 {
        scattered(node, inputs)
    }
}

/// Floating-point operations of a scatter: one per update when it reduces, none when it copies.
fn scattered(node: &LibraryNode, inputs: &[Option<TensorType>]) -> u64 {
    let reduces = node.str("reduction").is_some_and(|r| r != "none");
    let updates = inputs.get(2).and_then(|t| t.as_ref()?.static_shape());
    match (reduces, updates) {
        (true, Some(s)) => s.iter().product::<usize>() as u64,
        _ => 0,
    }
}

/// `ScatterND(data, indices, updates)`: `indices` has shape `B… × k`; each of its index tuples
/// names a slice `data[t0, …, t(k-1), :, …]`, which receives `updates[B…, :, …]`.
pub struct ScatterND;

impl ScatterND {
    /// The tuple length `k`, after checking every shape.
    fn tuple_len(
        data: &TensorType,
        indices: &TensorType,
        updates: &TensorType,
    ) -> Result<usize, OpError> {
        let op = "ScatterND";
        require_int64(op, indices)?;
        let (r, q) = (data.shape.len(), indices.shape.len());
        if r == 0 || q == 0 {
            return Err(OpError::shape(
                op,
                "data and indices must have rank at least 1",
            ));
        }
        let k = tuple_len(op, &indices.shape)?;
        if k > r {
            return Err(OpError::shape(
                op,
                format!("index tuples have length {k}, more than the data's rank {r}"),
            ));
        }
        let mut want = indices.shape[..q - 1].to_vec();
        want.extend(data.shape[k..].iter().cloned());
        check_updates(op, data, updates, &want)?;
        Ok(k)
    }

    fn types(inputs: &[Option<&Tensor>]) -> Result<[TensorType; 3], OpError> {
        let t = |i| arg("ScatterND", inputs, i).map(type_of);
        Ok([t(0)?, t(1)?, t(2)?])
    }
}

impl Operator for ScatterND {
    fn name(&self) -> &'static str {
        "ScatterND"
    }

    fn input_count(&self) -> (usize, usize) {
        (3, 3)
    }

    fn infer(
        &self,
        node: &LibraryNode,
        inputs: &[Option<TensorType>],
        _consts: &[Option<&Tensor>],
    ) -> Result<Vec<TensorType>, OpError> {
        check_arity(self, inputs.len())?;
        let data = input_type("ScatterND", inputs, 0)?;
        let indices = input_type("ScatterND", inputs, 1)?;
        let updates = input_type("ScatterND", inputs, 2)?;
        reduction("ScatterND", node)?;
        Self::tuple_len(data, indices, updates)?;
        Ok(vec![data.clone()])
    }

    fn eval(&self, node: &LibraryNode, inputs: &[Option<&Tensor>]) -> Result<Vec<Tensor>, OpError> {
        let [dt, it, ut] = Self::types(inputs)?;
        let k = Self::tuple_len(&dt, &it, &ut)?;
        let red = reduction("ScatterND", node)?;
        let data = arg("ScatterND", inputs, 0)?;
        let indices = arg("ScatterND", inputs, 1)?;
        let updates = arg("ScatterND", inputs, 2)?;
        let ind = indices.to_i64_vec();
        let strides = data.strides();
        let slice: usize = data.shape[k..].iter().product();
        let tuples: usize = indices.shape[..indices.shape.len() - 1].iter().product();
        let mut y = data.clone();
        for t in 0..tuples {
            let mut base = 0;
            for m in 0..k {
                base += wrap_index("ScatterND", ind[t * k + m], data.shape[m])? * strides[m];
            }
            for s in 0..slice {
                let off = base + s;
                y.set_f64(
                    off,
                    combine(red, y.get_f64(off), updates.get_f64(t * slice + s)),
                );
            }
        }
        Ok(vec![y])
    }

    fn expand(&self, _implementation: &str, ctx: &mut ExpandCtx) -> Result<(), OpError> {
        let (data, dd) = ctx.input(0)?.clone();
        let (indices, id) = ctx.input(1)?.clone();
        let (updates, ud) = ctx.input(2)?.clone();
        let (y, _) = ctx.output(0)?.clone();
        let types = [&dd, &id, &ud].map(|d| TensorType::new(d.dtype, d.shape.clone()));
        let k = Self::tuple_len(&types[0], &types[1], &types[2])?;
        let red = reduction("ScatterND", ctx.node)?;
        let batch = id.shape[..id.shape.len() - 1].to_vec();
        copy_data(ctx, &data, &y, &dd.shape);

        // The search: every index tuple `b` against every element `p` of the data's first `k`
        // dimensions (and, with a reduction, the slice behind it).
        let (b_params, b) = params_over("b", &batch);
        let searched = if red.is_some() {
            dd.shape.clone()
        } else {
            dd.shape[..k].to_vec()
        };
        let (p_params, p) = params_over("i", &searched);
        let params: Vec<(String, Range)> = b_params.into_iter().chain(p_params).collect();
        let conns: Vec<String> = (0..k).map(|m| format!("n{m}")).collect();
        let mut reads: Vec<Read> = (0..k)
            .map(|m| {
                let mut at = b.clone();
                at.push(SymExpr::from(m));
                Read::new(&conns[m], &indices, at)
            })
            .collect();
        let matched = (0..k)
            .map(|m| {
                let n = wrapped(TExpr::input(&conns[m]), &dd.shape[m]);
                TExpr::binary(BinOp::Eq, n, TExpr::Index(p[m].clone()))
            })
            .reduce(|a, c| TExpr::binary(BinOp::And, a, c))
            .unwrap_or(TExpr::Const(1.0));
        let label = ctx.label.clone();
        let Some(w) = red else {
            let last = ctx
                .b
                .transient(&format!("{label}_last"), DType::I64, searched.clone());
            fill_map(ctx.b, &format!("{label}_last_init"), &last, &searched, -1.0);
            // The tuple's row-major position among all tuples.
            let strides = (0..batch.len()).map(|m| dim_product(&batch[m + 1..]));
            let position = b
                .iter()
                .zip(strides.clone())
                .fold(SymExpr::Int(0), |acc, (x, s)| acc + x.clone() * s);
            let value = TExpr::select(
                matched,
                TExpr::Index(position.simplify()),
                TExpr::Const(-1.0),
            );
            element_map(
                ctx.b,
                &format!("{label}_match"),
                &params,
                reads,
                (&last, p),
                Some(Wcr::Max),
                value,
            );

            let (params, p) = params_over("i", &dd.shape);
            // The updates window: every tuple, the slice element `p[k..]`.
            let window = Subset(
                (0..ud.shape.len())
                    .map(|d| match d < batch.len() {
                        true => Dim::Range(Range::upto(ud.shape[d].clone())),
                        false => Dim::Index(p[k + d - batch.len()].clone()),
                    })
                    .collect(),
            );
            let inputs = vec![
                In("l", &last, Subset::element(p[..k].to_vec())),
                In("d", &data, Subset::element(p.clone())),
                In("u", &updates, window),
            ];
            let dims = ud.shape.len();
            let value = last_or_data(|at| {
                // Unravels the tuple position over the batch dimensions (exact: integers
                // below 2^52 divide exactly enough in f64 for the floor to be right).
                let stride = strides.clone().map(TExpr::Index);
                let mut v: Vec<TExpr> = stride
                    .zip(&batch)
                    .enumerate()
                    .map(|(m, (s, extent))| {
                        let q = TExpr::unary(UnOp::Floor, TExpr::binary(BinOp::Div, at.clone(), s));
                        match m {
                            0 => q,
                            _ => TExpr::binary(BinOp::Fmod, q, TExpr::Index(extent.clone())),
                        }
                    })
                    .collect();
                v.resize(dims, TExpr::Const(0.0));
                v
            });
            lookup_map(
                ctx.b,
                &format!("{label}_place"),
                &params,
                inputs,
                (&y, p),
                None,
                value,
            );
            return Ok(());
        };
        let mut u_at = b.clone();
        u_at.extend(p[k..].iter().cloned());
        reads.push(Read::new("u", &updates, u_at));
        reads.push(Read::new("d", &data, p.clone()));
        let value = contribution(w, matched, TExpr::input("u"), "d");
        element_map(
            ctx.b,
            &format!("{label}_scatter"),
            &params,
            reads,
            (&y, p),
            Some(w),
            value,
        );
        Ok(())
    }

    fn flops(&self, node: &LibraryNode, inputs: &[Option<TensorType>], _: &[TensorType]) -> u64 {
        scattered(node, inputs)
    }
}
