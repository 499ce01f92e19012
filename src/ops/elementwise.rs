//! Broadcasting elementwise operators: arithmetic (Add, Sub, Mul, Div, Pow), the variadic
//! Max / Min / Sum, and comparisons (and, as rows of `ops::bitwise`, BitwiseAnd/Or/Xor).
//!
//! Every operator here folds its inputs left to right with one binary function, so a single
//! generic [`Elementwise`] described by a table row implements them all: the `f64` function is
//! the reference semantics, the [`BinOp`] the tasklet the expansion emits.

use super::broadcast::{broadcast_concrete, broadcast_shapes, source_index, source_offsets};
use super::support::{arg, element_map, input_type, params_over, same_dtype, Read};
use super::{check_arity, ExpandCtx, OpError, Operator, TensorType};
use crate::ir::{BinOp, DType, LibraryNode, SymExpr, TExpr, Tensor};

pub static OPS: &[&dyn Operator] = &[
    &ADD,
    &SUB,
    &MUL,
    &DIV,
    &POW,
    &MAX,
    &MIN,
    &SUM,
    &LESS,
    &LESS_EQ,
    &GREATER,
    &GREATER_EQ,
    &EQUAL,
];

/// Input counts of a binary operator.
const BINARY: (usize, usize) = (2, 2);
/// Input counts of a variadic operator (ONNX allows up to 2³¹−1; programs never come close).
const VARIADIC: (usize, usize) = (1, 1024);

/// What the output element type is.
#[derive(Clone, Copy, PartialEq)]
enum Typing {
    /// All inputs share one type, which the output has.
    Same,
    /// The output has the first input's type; later inputs may differ (Pow's exponent).
    First,
    /// Inputs share one type; the output is boolean.
    Predicate,
    /// All inputs share one integer type, which the output has (bitwise operators).
    Integer,
}

/// A broadcasting operator folding its inputs with one binary function.
pub struct Elementwise {
    name: &'static str,
    arity: (usize, usize),
    /// Reference semantics on one pair of elements (comparisons return 1.0 / 0.0).
    f: fn(f64, f64) -> f64,
    /// The same function in the tasklet language.
    op: BinOp,
    typing: Typing,
}

const fn binary(name: &'static str, f: fn(f64, f64) -> f64, op: BinOp) -> Elementwise {
    Elementwise {
        name,
        arity: BINARY,
        f,
        op,
        typing: Typing::Same,
    }
}

const fn variadic(name: &'static str, f: fn(f64, f64) -> f64, op: BinOp) -> Elementwise {
    Elementwise {
        name,
        arity: VARIADIC,
        f,
        op,
        typing: Typing::Same,
    }
}

const fn compare(name: &'static str, f: fn(f64, f64) -> f64, op: BinOp) -> Elementwise {
    Elementwise {
        name,
        arity: BINARY,
        f,
        op,
        typing: Typing::Predicate,
    }
}

/// A binary operator on integers of one type (`ops::bitwise`).
pub(super) const fn integer(name: &'static str, f: fn(f64, f64) -> f64, op: BinOp) -> Elementwise {
    Elementwise {
        name,
        arity: BINARY,
        f,
        op,
        typing: Typing::Integer,
    }
}

fn truth(b: bool) -> f64 {
    f64::from(u8::from(b))
}

static ADD: Elementwise = binary("Add", |a, b| a + b, BinOp::Add);
static SUB: Elementwise = binary("Sub", |a, b| a - b, BinOp::Sub);
static MUL: Elementwise = binary("Mul", |a, b| a * b, BinOp::Mul);
static DIV: Elementwise = binary("Div", |a, b| a / b, BinOp::Div);
static POW: Elementwise = Elementwise {
    typing: Typing::First,
    ..binary("Pow", f64::powf, BinOp::Pow)
};
static MAX: Elementwise = variadic("Max", f64::max, BinOp::Max);
static MIN: Elementwise = variadic("Min", f64::min, BinOp::Min);
static SUM: Elementwise = variadic("Sum", |a, b| a + b, BinOp::Add);
static LESS: Elementwise = compare("Less", |a, b| truth(a < b), BinOp::Lt);
static LESS_EQ: Elementwise = compare("LessOrEqual", |a, b| truth(a <= b), BinOp::Le);
static GREATER: Elementwise = compare("Greater", |a, b| truth(a > b), BinOp::Gt);
static GREATER_EQ: Elementwise = compare("GreaterOrEqual", |a, b| truth(a >= b), BinOp::Ge);
static EQUAL: Elementwise = compare("Equal", |a, b| truth(a == b), BinOp::Eq);

impl Elementwise {
    fn output_dtype(&self, first: DType) -> DType {
        match self.typing {
            Typing::Predicate => DType::Bool,
            Typing::Same | Typing::First | Typing::Integer => first,
        }
    }
}

impl Operator for Elementwise {
    fn name(&self) -> &'static str {
        self.name
    }

    fn input_count(&self) -> (usize, usize) {
        self.arity
    }

    fn infer(
        &self,
        _node: &LibraryNode,
        inputs: &[Option<TensorType>],
        _consts: &[Option<&Tensor>],
    ) -> Result<Vec<TensorType>, OpError> {
        check_arity(self, inputs.len())?;
        let types = (0..inputs.len())
            .map(|i| input_type(self.name, inputs, i))
            .collect::<Result<Vec<_>, _>>()?;
        if self.typing != Typing::First {
            for (i, t) in types.iter().enumerate().skip(1) {
                same_dtype(self.name, types[0], t, i)?;
            }
        }
        if self.typing == Typing::Integer && !types[0].dtype.is_int() {
            return Err(OpError::shape(
                self.name,
                format!("expects integer inputs, got {}", types[0].dtype),
            ));
        }
        let shapes: Vec<&[SymExpr]> = types.iter().map(|t| t.shape.as_slice()).collect();
        let shape = broadcast_shapes(self.name, &shapes)?;
        Ok(vec![TensorType::new(
            self.output_dtype(types[0].dtype),
            shape,
        )])
    }

    fn eval(
        &self,
        _node: &LibraryNode,
        inputs: &[Option<&Tensor>],
    ) -> Result<Vec<Tensor>, OpError> {
        check_arity(self, inputs.len())?;
        let args = (0..inputs.len())
            .map(|i| arg(self.name, inputs, i))
            .collect::<Result<Vec<_>, _>>()?;
        let shapes: Vec<&[usize]> = args.iter().map(|t| t.shape.as_slice()).collect();
        let shape = broadcast_concrete(self.name, &shapes)?;
        let total: usize = shape.iter().product();
        let sources: Vec<Vec<usize>> = args
            .iter()
            .map(|t| source_offsets(&t.shape, &shape))
            .collect();
        let values: Vec<f64> = (0..total)
            .map(|e| {
                let first = args[0].get_f64(sources[0][e]);
                args.iter()
                    .zip(&sources)
                    .skip(1)
                    .fold(first, |acc, (t, src)| (self.f)(acc, t.get_f64(src[e])))
            })
            .collect();
        Ok(vec![Tensor::from_f64(
            self.output_dtype(args[0].dtype()),
            shape,
            &values,
        )])
    }

    fn expand(&self, _implementation: &str, ctx: &mut ExpandCtx) -> Result<(), OpError> {
        let (y, y_desc) = ctx.output(0)?.clone();
        let (params, idx) = params_over("i", &y_desc.shape);
        let operands = (0..ctx.inputs.len())
            .map(|i| ctx.input(i).cloned())
            .collect::<Result<Vec<_>, _>>()?;
        let conns: Vec<String> = (0..operands.len()).map(|i| format!("a{i}")).collect();
        let reads = operands
            .iter()
            .zip(&conns)
            .map(|((name, desc), conn)| Read::new(conn, name, source_index(&desc.shape, &idx)))
            .collect();
        let value = conns[1..].iter().fold(TExpr::input(&conns[0]), |acc, c| {
            TExpr::binary(self.op, acc, TExpr::input(c))
        });
        element_map(ctx.b, &ctx.label, &params, reads, (&y, idx), None, value);
        Ok(())
    }

    fn flops(&self, _: &LibraryNode, inputs: &[Option<TensorType>], outputs: &[TensorType]) -> u64 {
        let folds = inputs.len().saturating_sub(1) as u64;
        outputs
            .iter()
            .filter_map(|t| t.static_shape())
            .map(|s| s.iter().product::<usize>() as u64 * folds)
            .sum()
    }
}
