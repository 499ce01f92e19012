//! Bitwise operators on integers: BitwiseAnd, BitwiseOr, BitwiseXor (broadcasting), BitwiseNot
//! and BitShift.
//!
//! Tasklets compute integers as `f64` values (see `ir::texpr`), and a store to an integer type
//! wraps modulo 2^bits (`ir::scalar`). And/Or/Xor are one tasklet operator each. The others need
//! none: `~x` is `−x − 1` in two's complement, a right shift by `y` is `floor(x / 2^y)` (which is
//! the arithmetic shift for negative `x`), and a left shift is `x·2^y` reduced modulo 2^bits into
//! the type's range, all exact for the values an `f64` holds exactly (below 2^53). The
//! references compute on the integers themselves, with Rust's shifts.

use super::activation::{simple, Unary};
use super::broadcast::broadcast_shapes;
use super::elementwise::{integer, Elementwise};
use super::logic::{eval_pointwise, expand_pointwise};
use super::support::{arg, input_type, same_dtype};
use super::{check_arity, ExpandCtx, OpError, Operator, TensorType};
use crate::ir::{BinOp, DType, LibraryNode, TExpr, Tensor, UnOp};

pub static OPS: &[&dyn Operator] = &[&AND, &OR, &XOR, &NOT, &BitShift];

static AND: Elementwise = integer("BitwiseAnd", |a, b| bits(a, b, |x, y| x & y), BinOp::BitAnd);
static OR: Elementwise = integer("BitwiseOr", |a, b| bits(a, b, |x, y| x | y), BinOp::BitOr);
static XOR: Elementwise = integer("BitwiseXor", |a, b| bits(a, b, |x, y| x ^ y), BinOp::BitXor);
static NOT: Unary = simple(
    "BitwiseNot",
    |x, _| !(x as i64) as f64,
    |x, _| TExpr::binary(BinOp::Sub, TExpr::Const(-1.0), x),
);

/// The two's-complement `i64` of an integer value (a `u64` above `i64::MAX` keeps its bits,
/// which the wrap-around store gives back).
fn int(v: f64) -> i64 {
    if v >= 9_223_372_036_854_775_808.0 {
        v as u64 as i64
    } else {
        v as i64
    }
}

/// `f` on the two's-complement `i64`s of two integer values.
fn bits(a: f64, b: f64, f: fn(i64, i64) -> i64) -> f64 {
    f(int(a), int(b)) as f64
}

/// `BitShift(x, y)`: `x` shifted by `y` bits, `direction` "LEFT" or "RIGHT". Opset 28's rules
/// for signed types: right shifts are arithmetic, left shifts drop the bits pushed past the
/// sign, and a shift by a negative amount or by the width or more leaves only the sign fill
/// (−1 for a negative `x` shifted right, else 0).
pub struct BitShift;

/// What an integer type's shifts need: its width and whether it is signed.
#[derive(Clone, Copy)]
struct Width {
    bits: u32,
    signed: bool,
}

impl Width {
    fn of(d: DType) -> Option<Width> {
        let (lo, hi) = d.int_range()?;
        let modulus = hi - lo + 1.0;
        Some(Width {
            bits: modulus.log2().round() as u32,
            signed: lo < 0.0,
        })
    }

    /// 2^bits as a value.
    fn modulus(self) -> f64 {
        2f64.powi(self.bits as i32)
    }
}

impl BitShift {
    fn left(node: &LibraryNode) -> Result<bool, OpError> {
        match node.str("direction") {
            Some("LEFT") => Ok(true),
            Some("RIGHT") => Ok(false),
            Some(other) => Err(OpError::attr(
                "BitShift",
                "direction",
                format!("must be \"LEFT\" or \"RIGHT\", got \"{other}\""),
            )),
            None => Err(OpError::attr("BitShift", "direction", "is required")),
        }
    }

    fn width(d: DType) -> Result<Width, OpError> {
        Width::of(d)
            .ok_or_else(|| OpError::shape("BitShift", format!("expects integer inputs, got {d}")))
    }

    /// The reference: the shift on the integers, with opset 28's out-of-range rule.
    fn shift(left: bool, w: Width, x: i64, y: i64) -> i64 {
        let amount = u32::try_from(y).ok().filter(|&a| a < w.bits);
        match (amount, left) {
            (None, false) if x < 0 => -1,
            (None, _) => 0,
            (Some(a), true) => ((x as u64) << a) as i64,
            (Some(a), false) if w.signed => x >> a,
            (Some(a), false) => ((x as u64) >> a) as i64,
        }
    }

    /// The tasklet over `a0` (x) and `a1` (y).
    fn tasklet(left: bool, w: Width) -> TExpr {
        let (x, y) = (TExpr::input("a0"), TExpr::input("a1"));
        let c = TExpr::Const;
        let bin = TExpr::binary;
        let scale = bin(BinOp::Pow, c(2.0), y.clone());
        let out_of_range = bin(
            BinOp::Or,
            bin(BinOp::Lt, y.clone(), c(0.0)),
            bin(BinOp::Ge, y, c(f64::from(w.bits))),
        );
        let (shifted, fill) = if left {
            let m = w.modulus();
            let r = bin(BinOp::Fmod, bin(BinOp::Mul, x, scale), c(m));
            // fmod keeps the sign of x·2^y, in (−2^bits, 2^bits): bring it into the signed range.
            let r = if w.signed {
                let half = m / 2.0;
                let low = TExpr::select(
                    bin(BinOp::Lt, r.clone(), c(-half)),
                    bin(BinOp::Add, r.clone(), c(m)),
                    r.clone(),
                );
                TExpr::select(
                    bin(BinOp::Ge, r.clone(), c(half)),
                    bin(BinOp::Sub, r, c(m)),
                    low,
                )
            } else {
                r
            };
            (r, c(0.0))
        } else {
            let q = TExpr::unary(UnOp::Floor, bin(BinOp::Div, x.clone(), scale));
            let fill = TExpr::select(bin(BinOp::Lt, x, c(0.0)), c(-1.0), c(0.0));
            (q, fill)
        };
        TExpr::select(out_of_range, fill, shifted)
    }
}

impl Operator for BitShift {
    fn name(&self) -> &'static str {
        "BitShift"
    }

    fn input_count(&self) -> (usize, usize) {
        (2, 2)
    }

    fn infer(
        &self,
        node: &LibraryNode,
        inputs: &[Option<TensorType>],
        _consts: &[Option<&Tensor>],
    ) -> Result<Vec<TensorType>, OpError> {
        check_arity(self, inputs.len())?;
        let x = input_type("BitShift", inputs, 0)?;
        let y = input_type("BitShift", inputs, 1)?;
        same_dtype("BitShift", x, y, 1)?;
        Self::width(x.dtype)?;
        Self::left(node)?;
        let shape = broadcast_shapes("BitShift", &[&x.shape, &y.shape])?;
        Ok(vec![TensorType::new(x.dtype, shape)])
    }

    fn eval(&self, node: &LibraryNode, inputs: &[Option<&Tensor>]) -> Result<Vec<Tensor>, OpError> {
        let dtype = arg("BitShift", inputs, 0)?.dtype();
        let (left, w) = (Self::left(node)?, Self::width(dtype)?);
        let y = eval_pointwise("BitShift", inputs, dtype, |v| {
            Self::shift(left, w, int(v[0]), int(v[1])) as f64
        })?;
        Ok(vec![y])
    }

    fn expand(&self, _implementation: &str, ctx: &mut ExpandCtx) -> Result<(), OpError> {
        let w = Self::width(ctx.input(0)?.1.dtype)?;
        expand_pointwise(ctx, Self::tasklet(Self::left(ctx.node)?, w))
    }
}
