//! The attributes LSTM, GRU and RNN share, checked once: direction, hidden size, layout, clip and
//! the gate activations with their `activation_alpha` / `activation_beta` parameters.

use super::super::activation::{recurrent_row, Params, Unary};
use super::super::OpError;
use crate::ir::{BinOp, LibraryNode, TExpr, UnOp};

/// `alpha · x + beta` (defaults 1, 0): an activation only recurrent operators name.
static AFFINE: Unary = Unary {
    name: "Affine",
    params: Params::Attrs(&[("alpha", 1.0), ("beta", 0.0)]),
    predicate: false,
    f: |x, p| p[0] * x + p[1],
    t: |x, p| {
        let scaled = TExpr::binary(BinOp::Mul, TExpr::Const(p[0]), x);
        TExpr::binary(BinOp::Add, scaled, TExpr::Const(p[1]))
    },
};

/// `alpha · tanh(beta · x)` (defaults 1, 1).
static SCALED_TANH: Unary = Unary {
    name: "ScaledTanh",
    params: Params::Attrs(&[("alpha", 1.0), ("beta", 1.0)]),
    predicate: false,
    f: |x, p| p[0] * (p[1] * x).tanh(),
    t: |x, p| {
        let inner = TExpr::binary(BinOp::Mul, TExpr::Const(p[1]), x);
        TExpr::binary(
            BinOp::Mul,
            TExpr::Const(p[0]),
            TExpr::unary(UnOp::Tanh, inner),
        )
    },
};

/// One gate activation with its parameters resolved.
#[derive(Clone)]
pub struct Activation {
    row: &'static Unary,
    params: Vec<f64>,
}

impl Activation {
    /// The reference function.
    pub fn apply(&self, x: f64) -> f64 {
        (self.row.f)(x, &self.params)
    }

    /// The tasklet expression of the activation of `x`.
    pub fn expr(&self, x: TExpr) -> TExpr {
        (self.row.t)(x, &self.params)
    }
}

/// Which way the sequence is walked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Direction {
    Forward,
    Reverse,
    Bidirectional,
}

impl Direction {
    /// Whether each direction, by index, walks the sequence backwards.
    pub fn reversed(self) -> &'static [bool] {
        match self {
            Direction::Forward => &[false],
            Direction::Reverse => &[true],
            Direction::Bidirectional => &[false, true],
        }
    }

    pub fn count(self) -> usize {
        self.reversed().len()
    }
}

/// The validated shared attributes of one recurrent node.
pub struct Config {
    pub direction: Direction,
    /// `hidden_size` when given (it must then agree with R's shape).
    pub hidden_size: Option<i64>,
    /// `layout = 1`: batch-major X, Y, initial and final states.
    pub batch_major: bool,
    /// Gate pre-activations are clamped to `[-clip, clip]`.
    pub clip: Option<f64>,
    /// `per_direction` activations for each direction, forward first.
    pub activations: Vec<Vec<Activation>>,
}

impl Config {
    /// Reads the attributes of `node` for operator `op`, whose cell uses the activations
    /// `defaults` (in the order of ONNX's `f, g, h`).
    pub fn read(op: &str, node: &LibraryNode, defaults: &[&str]) -> Result<Config, OpError> {
        let direction = match node.str("direction").unwrap_or("forward") {
            "forward" => Direction::Forward,
            "reverse" => Direction::Reverse,
            "bidirectional" => Direction::Bidirectional,
            other => {
                return Err(OpError::attr(
                    op,
                    "direction",
                    format!("expected forward, reverse or bidirectional, got `{other}`"),
                ))
            }
        };
        let hidden_size = node.int("hidden_size");
        if let Some(h) = hidden_size.filter(|&h| h <= 0) {
            return Err(OpError::attr(
                op,
                "hidden_size",
                format!("must be positive, got {h}"),
            ));
        }
        let batch_major = match node.int("layout").unwrap_or(0) {
            0 => false,
            1 => true,
            other => {
                return Err(OpError::attr(
                    op,
                    "layout",
                    format!("must be 0 or 1, got {other}"),
                ))
            }
        };
        let clip = node.float("clip");
        if let Some(c) = clip.filter(|c| c.is_nan() || *c <= 0.0) {
            return Err(OpError::attr(
                op,
                "clip",
                format!("must be positive, got {c}"),
            ));
        }
        let activations = activations(op, node, defaults, direction.count())?;
        Ok(Config {
            direction,
            hidden_size,
            batch_major,
            clip,
            activations,
        })
    }

    /// `x` clamped to the clip range (unchanged without `clip`).
    pub fn clip(&self, x: f64) -> f64 {
        self.clip.map_or(x, |c| x.clamp(-c, c))
    }

    /// The tasklet expression of [`Config::clip`].
    pub fn clip_expr(&self, x: TExpr) -> TExpr {
        match self.clip {
            None => x,
            Some(c) => {
                let lower = TExpr::binary(BinOp::Max, x, TExpr::Const(-c));
                TExpr::binary(BinOp::Min, lower, TExpr::Const(c))
            }
        }
    }
}

/// The activations per direction. `activation_alpha` and `activation_beta` are consumed in the
/// order of the activations, each by the next activation that takes that parameter (ONNX
/// Runtime's reading of "the values are consumed in the order of activation functions");
/// activations left without a value use their operator's default.
fn activations(
    op: &str,
    node: &LibraryNode,
    defaults: &[&str],
    directions: usize,
) -> Result<Vec<Vec<Activation>>, OpError> {
    let names: Vec<String> = match node.strs("activations") {
        Some(given) => {
            let expected = defaults.len() * directions;
            if given.len() != expected {
                return Err(OpError::attr(
                    op,
                    "activations",
                    format!(
                        "expected {expected} names ({} per direction), got {}",
                        defaults.len(),
                        given.len()
                    ),
                ));
            }
            given.to_vec()
        }
        None => (0..directions)
            .flat_map(|_| defaults.iter().map(|d| d.to_string()))
            .collect(),
    };
    let mut alphas = node.floats("activation_alpha").unwrap_or_default().iter();
    let mut betas = node.floats("activation_beta").unwrap_or_default().iter();
    let mut resolved = Vec::with_capacity(names.len());
    for name in &names {
        let row = recurrent_row(name)
            .or_else(|| {
                [&AFFINE, &SCALED_TANH]
                    .into_iter()
                    .find(|r| r.name.eq_ignore_ascii_case(name))
            })
            .ok_or_else(|| {
                OpError::attr(
                    op,
                    "activations",
                    format!(
                        "unknown activation `{name}` (known: Relu, Tanh, Sigmoid, Affine, \
                         LeakyRelu, ThresholdedRelu, ScaledTanh, HardSigmoid, Elu, Softsign, \
                         Softplus)"
                    ),
                )
            })?;
        let params = match &row.params {
            Params::Attrs(list) => list
                .iter()
                .map(|(param, default)| {
                    let given = match *param {
                        "alpha" => alphas.next(),
                        _ => betas.next(),
                    };
                    given.copied().unwrap_or(*default)
                })
                .collect(),
            _ => Vec::new(),
        };
        resolved.push(Activation { row, params });
    }
    Ok(resolved
        .chunks(defaults.len())
        .map(<[Activation]>::to_vec)
        .collect())
}
