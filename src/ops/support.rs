//! Small helpers the transformer operators share: fetching arguments, checking types,
//! normalising axes, walking row-major indices in `eval`, and emitting one-tasklet maps in
//! expansions. Keeping them here keeps each operator file about its semantics only.

use super::{OpError, TensorType};
use crate::ir::build::{In, Out, ScopeBuilder};
use crate::ir::{
    BinOp, LibraryNode, NodeId, Range, Schedule, Subset, SymExpr, TExpr, Tensor, UnOp, Wcr,
};

/// Input `i` of an `eval` call, which must be present.
pub fn arg<'a>(op: &str, inputs: &[Option<&'a Tensor>], i: usize) -> Result<&'a Tensor, OpError> {
    inputs
        .get(i)
        .copied()
        .flatten()
        .ok_or_else(|| OpError::shape(op, format!("missing input {i}")))
}

/// Optional input `i` of an `eval` call.
pub fn opt_arg<'a>(inputs: &[Option<&'a Tensor>], i: usize) -> Option<&'a Tensor> {
    inputs.get(i).copied().flatten()
}

/// Type of input `i` during inference, which must be present.
pub fn input_type<'a>(
    op: &str,
    inputs: &'a [Option<TensorType>],
    i: usize,
) -> Result<&'a TensorType, OpError> {
    inputs
        .get(i)
        .and_then(|x| x.as_ref())
        .ok_or_else(|| OpError::shape(op, format!("missing input {i}")))
}

/// Checks that input `i` has the same element type as input 0 (ONNX type constraint `T`).
pub fn same_dtype(
    op: &str,
    first: &TensorType,
    other: &TensorType,
    i: usize,
) -> Result<(), OpError> {
    if first.dtype == other.dtype {
        Ok(())
    } else {
        Err(OpError::shape(
            op,
            format!(
                "input {i} has type {} but input 0 has type {}",
                other.dtype, first.dtype
            ),
        ))
    }
}

/// Requires a floating-point element type (normalisations and transcendental functions).
pub fn require_float(op: &str, t: &TensorType) -> Result<(), OpError> {
    match t.dtype {
        d if d.is_float() => Ok(()),
        other => Err(OpError::shape(
            op,
            format!("expects a floating-point input, got {other}"),
        )),
    }
}

/// Checks that `got` has the extents `want` where both are numbers.
pub fn expect_shape(
    op: &str,
    what: &str,
    got: &[SymExpr],
    want: &[SymExpr],
) -> Result<(), OpError> {
    let differs = |(a, b): (&SymExpr, &SymExpr)| matches!((a.as_int(), b.as_int()), (Some(x), Some(y)) if x != y);
    if got.len() != want.len() || got.iter().zip(want).any(differs) {
        let show = |s: &[SymExpr]| {
            s.iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        };
        return Err(OpError::shape(
            op,
            format!(
                "{what} must have shape [{}], got [{}]",
                show(want),
                show(got)
            ),
        ));
    }
    Ok(())
}

/// Requires `t` (named `what` in the error) to have rank `rank`.
pub fn require_rank(op: &str, what: &str, t: &TensorType, rank: usize) -> Result<(), OpError> {
    match t.shape.len() {
        n if n == rank => Ok(()),
        n => Err(OpError::shape(
            op,
            format!("{what} must have rank {rank}, got rank {n}"),
        )),
    }
}

/// Shape inference of a one-input float operator whose output has its input's type (the
/// normalizations): checks the arity and the element type, then `check` validates the
/// attributes against the input's rank.
pub fn float_like_input(
    op: &dyn super::Operator,
    inputs: &[Option<TensorType>],
    check: impl FnOnce(usize) -> Result<(), OpError>,
) -> Result<Vec<TensorType>, OpError> {
    super::check_arity(op, inputs.len())?;
    let x = input_type(op.name(), inputs, 0)?;
    require_float(op.name(), x)?;
    check(x.shape.len())?;
    Ok(vec![x.clone()])
}

/// Resolves a possibly negative `axis` against `rank`. The valid range is `[-rank, rank)`, or
/// `[-rank, rank]` when `inclusive` (Flatten's axis may point past the last dimension).
pub fn resolve_axis(
    op: &str,
    attr: &str,
    axis: i64,
    rank: usize,
    inclusive: bool,
) -> Result<usize, OpError> {
    let r = i64::try_from(rank).unwrap_or(i64::MAX);
    let hi = if inclusive { r } else { r - 1 };
    if axis < -r || axis > hi {
        let upper = if inclusive { "]" } else { ")" };
        return Err(OpError::attr(
            op,
            attr,
            format!("axis {axis} is outside [-{r}, {r}{upper} for rank {rank}"),
        ));
    }
    let resolved = if axis < 0 { axis + r } else { axis };
    usize::try_from(resolved).map_err(|_| OpError::attr(op, attr, "negative axis"))
}

/// A 0/1 integer attribute (`default` when absent).
pub fn flag(op: &str, node: &LibraryNode, name: &str, default: bool) -> Result<bool, OpError> {
    match node.int(name) {
        None => Ok(default),
        Some(0) => Ok(false),
        Some(1) => Ok(true),
        Some(v) => Err(OpError::attr(op, name, format!("must be 0 or 1, got {v}"))),
    }
}

/// Product of symbolic dimensions (1 for none).
pub fn dim_product(dims: &[SymExpr]) -> SymExpr {
    dims.iter()
        .fold(SymExpr::Int(1), |acc, d| acc * d.clone())
        .simplify()
}

/// `per_element` operations for every element of the first output (0 when its shape is
/// symbolic): the FLOP count of operators whose work is a fixed amount per output element.
pub fn per_output_element(outputs: &[TensorType], per_element: u64) -> u64 {
    outputs
        .first()
        .and_then(TensorType::static_shape)
        .map_or(0, |s| per_element * s.iter().product::<usize>() as u64)
}

/// The most elements a tensor that dmove computes while importing or interpreting may have
/// (2^31, 8 GiB of f32): a model that asks for more gets an error, not an abort.
pub const MAX_ELEMENTS: usize = 1 << 31;

/// How many elements `shape` holds, or an error when that exceeds [`MAX_ELEMENTS`].
pub fn element_count(op: &str, shape: &[usize]) -> Result<usize, OpError> {
    (shape.iter())
        .try_fold(1usize, |n, &d| n.checked_mul(d))
        .filter(|&n| n <= MAX_ELEMENTS)
        .ok_or_else(|| {
            OpError::shape(
                op,
                format!("a tensor of shape {shape:?} exceeds {MAX_ELEMENTS} elements"),
            )
        })
}

/// Static dimensions of a concrete tensor as symbolic ones.
pub fn sym_shape(shape: &[usize]) -> Vec<SymExpr> {
    shape.iter().map(|&d| SymExpr::from(d)).collect()
}

/// The types of concrete input tensors, so that `eval` can run the checks `infer` makes.
pub fn types_of(inputs: &[Option<&Tensor>]) -> Vec<Option<TensorType>> {
    inputs
        .iter()
        .map(|t| t.map(|t| TensorType::new(t.dtype(), sym_shape(&t.shape))))
        .collect()
}

/// The row-major multi-index of element `linear` in `shape`.
pub fn unravel(mut linear: usize, shape: &[usize]) -> Vec<usize> {
    let mut idx = vec![0; shape.len()];
    for d in (0..shape.len()).rev() {
        if shape[d] > 0 {
            idx[d] = linear % shape[d];
            linear /= shape[d];
        }
    }
    idx
}

/// The offsets of the first elements of the lines of a tensor of `len` elements along an axis
/// (or a block of axes) of `group` elements followed by `inner` elements: line `s` holds
/// `s, s + inner, …, s + (group − 1)·inner`.
pub fn line_starts(len: usize, group: usize, inner: usize) -> impl Iterator<Item = usize> {
    let outer = len.checked_div(group * inner).unwrap_or(0);
    (0..outer).flat_map(move |o| (0..inner).map(move |i| o * group * inner + i))
}

/// The row-major offset of `idx` given `strides`.
pub fn offset(idx: &[usize], strides: &[usize]) -> usize {
    idx.iter().zip(strides).map(|(i, s)| i * s).sum()
}

/// One tasklet read inside an element map: connector, container and the subset it covers
/// (one element, or a window the tasklet reads by element at computed indices).
#[derive(Clone)]
pub struct Read<'a> {
    pub conn: &'a str,
    pub data: &'a str,
    pub subset: Subset,
}

impl<'a> Read<'a> {
    pub fn new(conn: &'a str, data: &'a str, idx: Vec<SymExpr>) -> Self {
        Read::window(conn, data, Subset::element(idx))
    }

    pub fn window(conn: &'a str, data: &'a str, subset: Subset) -> Self {
        Read { conn, data, subset }
    }
}

/// Map parameters named `{prefix}0, {prefix}1, …` spanning `shape`, and their symbols.
pub fn params_over(prefix: &str, shape: &[SymExpr]) -> (Vec<(String, Range)>, Vec<SymExpr>) {
    let params: Vec<(String, Range)> = shape
        .iter()
        .enumerate()
        .map(|(d, extent)| (format!("{prefix}{d}"), Range::upto(extent.clone())))
        .collect();
    let syms = params
        .iter()
        .map(|(n, _)| SymExpr::sym(n.as_str()))
        .collect();
    (params, syms)
}

/// A sequential map over `params` whose body is one tasklet writing `value` (over the reads'
/// connectors) to `dst[dst_idx]`, combined with `wcr` when given. Every expansion map of the
/// transformer operators has this shape: an init, an accumulation or a pointwise step.
pub fn element_map(
    b: &mut ScopeBuilder,
    label: &str,
    params: &[(String, Range)],
    reads: Vec<Read>,
    dst: (&str, Vec<SymExpr>),
    wcr: Option<Wcr>,
    value: TExpr,
) -> NodeId {
    let params_ref = params
        .iter()
        .map(|(n, r)| (n.as_str(), r.clone()))
        .collect();
    b.map(label, params_ref, Schedule::Sequential, |b| {
        let ins = reads
            .into_iter()
            .map(|r| In(r.conn, r.data, r.subset))
            .collect();
        b.tasklet(
            label,
            ins,
            vec![Out("y", dst.0, Subset::element(dst.1), wcr, value)],
        );
    })
}

/// A map writing the constant `value` to every element of `data` (accumulator initialisation).
pub fn fill_map(b: &mut ScopeBuilder, label: &str, data: &str, shape: &[SymExpr], value: f64) {
    let (params, idx) = params_over("i", shape);
    element_map(
        b,
        label,
        &params,
        Vec::new(),
        (data, idx),
        None,
        TExpr::Const(value),
    );
}

/// The statistics pass of a normalization: per-group mean, variance and `1 / sqrt(var + ε)` of
/// `x`, where `params` range over `x` and `stat_idx` maps them to the group's statistics element.
pub struct Moments<'a> {
    pub x: &'a str,
    pub x_idx: &'a [SymExpr],
    pub params: &'a [(String, Range)],
    pub stat_shape: &'a [SymExpr],
    pub stat_idx: &'a [SymExpr],
    /// Elements per group.
    pub count: &'a SymExpr,
    pub epsilon: f64,
}

impl Moments<'_> {
    /// Reads of `x` and of its group's `mean` (connectors `x`, `m`) and the expression `x − m`.
    pub fn centred<'m>(&'m self, mean: &'m str) -> (Vec<Read<'m>>, TExpr) {
        let reads = vec![
            Read::new("x", self.x, self.x_idx.to_vec()),
            Read::new("m", mean, self.stat_idx.to_vec()),
        ];
        (
            reads,
            TExpr::binary(BinOp::Sub, TExpr::input("x"), TExpr::input("m")),
        )
    }

    /// Appends the maps writing `[mean, var, invstd]` (containers of `stat_shape`): two
    /// wcr-sum passes (the variance pass reads the finished mean) and an element-wise map.
    pub fn append(&self, b: &mut ScopeBuilder, label: &str, [mean, var, inv]: [&str; 3]) {
        self.append_mean_var(b, label, [mean, var]);
        let (stat_params, sidx) = params_over("i", self.stat_shape);
        let plus_eps = TExpr::binary(BinOp::Add, TExpr::input("v"), TExpr::Const(self.epsilon));
        let value = TExpr::unary(UnOp::Recip, TExpr::unary(UnOp::Sqrt, plus_eps));
        let reads = vec![Read::new("v", var, sidx.clone())];
        element_map(
            b,
            &format!("{label}_invstd"),
            &stat_params,
            reads,
            (inv, sidx),
            None,
            value,
        );
    }

    /// The two wcr-sum passes of [`Moments::append`] alone, for a normalization that divides
    /// by something other than `√(var + ε)` (MeanVarianceNormalization: `√var + ε`).
    pub fn append_mean_var(&self, b: &mut ScopeBuilder, label: &str, [mean, var]: [&str; 2]) {
        let xi = || Read::new("x", self.x, self.x_idx.to_vec());
        let (centred_reads, centred) = self.centred(mean);
        let per_group = |x: TExpr| super::reduce::divide_by(x, self.count);

        fill_map(b, &format!("{label}_mean_init"), mean, self.stat_shape, 0.0);
        let dst = (mean, self.stat_idx.to_vec());
        let value = per_group(TExpr::input("x"));
        element_map(
            b,
            &format!("{label}_mean"),
            self.params,
            vec![xi()],
            dst,
            Some(Wcr::Sum),
            value,
        );

        fill_map(b, &format!("{label}_var_init"), var, self.stat_shape, 0.0);
        let dst = (var, self.stat_idx.to_vec());
        let value = per_group(TExpr::binary(BinOp::Mul, centred.clone(), centred));
        element_map(
            b,
            &format!("{label}_var"),
            self.params,
            centred_reads,
            dst,
            Some(Wcr::Sum),
            value,
        );
    }
}
