//! One time step of one direction in an expansion: the gate projections as contractions and
//! the state updates as element-wise maps, inside the sequential time map that
//! `recurrent::Recurrent::expand` builds. Cells (LSTM, GRU, RNN) describe their update through
//! this interface and never build maps themselves.

use super::super::support::{element_map, Read};
use super::config::{Activation, Config};
use crate::ir::build::{In, Out, ScopeBuilder};
use crate::ir::{BinOp, DType, Range, Schedule, Subset, SymExpr, TExpr, Wcr};

/// Where the index of each tensor comes from, by `layout`.
#[derive(Clone, Copy)]
pub struct Layout {
    pub batch_major: bool,
}

impl Layout {
    /// The index of X's element at time `t`, batch `n`, feature `k`.
    pub fn x<T>(self, t: T, n: T, k: T) -> [T; 3] {
        if self.batch_major {
            [n, t, k]
        } else {
            [t, n, k]
        }
    }

    /// The index of Y's element at time `t`, direction `d`, batch `n`, hidden unit `j`.
    pub fn y<T>(self, t: T, d: T, n: T, j: T) -> [T; 4] {
        if self.batch_major {
            [n, t, d, j]
        } else {
            [t, d, n, j]
        }
    }

    /// The index of an initial or final state's element (direction `d`, batch `n`, unit `j`).
    pub fn state<T>(self, d: T, n: T, j: T) -> [T; 3] {
        if self.batch_major {
            [n, d, j]
        } else {
            [d, n, j]
        }
    }
}

/// The containers and extents of one direction's step. `h` and `c` are that direction's
/// states (`[batch, hidden]`), `xg` / `hg` the gates' input and hidden projections
/// (`[batch, gates · hidden]`, each with its bias).
pub struct Step<'s, 'p> {
    pub b: &'s mut ScopeBuilder<'p>,
    pub label: String,
    pub cfg: &'s Config,
    /// This direction's activations (`f, g, h`).
    pub acts: &'s [Activation],
    pub layout: Layout,
    /// The direction's index in W, R, B, P and the outputs.
    pub d: SymExpr,
    /// The loop counter and the time index it walks (reversed for the reverse direction).
    pub t: SymExpr,
    pub time: SymExpr,
    pub batch: SymExpr,
    pub hidden: SymExpr,
    pub input: SymExpr,
    pub gates: usize,
    /// The element type of X and of every state and projection.
    pub dtype: DType,
    pub x: String,
    pub w: String,
    pub r: String,
    pub bias: Option<String>,
    /// `sequence_lens`, when some batch entry ends before the sequence does.
    pub lens: Option<String>,
    pub p: Option<String>,
    pub h: String,
    pub c: Option<String>,
    pub y: Option<String>,
    pub xg: String,
    pub hg: String,
}

/// The map parameters over `[batch, hidden]` and their symbols `n`, `j`.
fn unit_params(batch: &SymExpr, hidden: &SymExpr) -> (Vec<(String, Range)>, SymExpr, SymExpr) {
    let params = vec![
        ("n".to_string(), Range::upto(batch.clone())),
        ("j".to_string(), Range::upto(hidden.clone())),
    ];
    (params, SymExpr::sym("n"), SymExpr::sym("j"))
}

pub fn add(a: TExpr, b: TExpr) -> TExpr {
    TExpr::binary(BinOp::Add, a, b)
}

pub fn mul(a: TExpr, b: TExpr) -> TExpr {
    TExpr::binary(BinOp::Mul, a, b)
}

/// `1 − x`.
pub fn one_minus(x: TExpr) -> TExpr {
    TExpr::binary(BinOp::Sub, TExpr::Const(1.0), x)
}

/// One element a tasklet loads: connector, container, index.
pub struct Load {
    pub conn: &'static str,
    pub data: String,
    pub at: Vec<SymExpr>,
}

impl Load {
    pub fn new(conn: &'static str, data: &str, at: Vec<SymExpr>) -> Load {
        Load {
            conn,
            data: data.to_string(),
            at,
        }
    }
}

/// A state update: the value of `target[n, j]` computed from `reads`.
pub struct Update {
    pub target: String,
    pub reads: Vec<Load>,
    pub value: TExpr,
    /// Also write the value to Y at this step.
    pub to_y: bool,
}

impl Step<'_, '_> {
    /// `[n, j]` over this step's batch and hidden units.
    pub fn unit(&self) -> Vec<SymExpr> {
        vec![SymExpr::sym("n"), SymExpr::sym("j")]
    }

    /// The row of gate `g` for hidden unit `j` in W, R, B and the projections.
    pub fn row(&self, g: usize) -> SymExpr {
        SymExpr::sym("j") + self.hidden.clone() * SymExpr::from(g)
    }

    /// Loads of gate `g`'s input and hidden projections at `[n, j]`.
    pub fn projections(&self, g: usize) -> [Load; 2] {
        let at = vec![SymExpr::sym("n"), self.row(g)];
        [
            Load::new(INPUT_CONN[g], &self.xg, at.clone()),
            Load::new(HIDDEN_CONN[g], &self.hg, at),
        ]
    }

    /// A load of `data` at `[n, j]` through `conn`.
    pub fn at_unit(&self, conn: &'static str, data: &str) -> Load {
        Load::new(conn, data, self.unit())
    }

    /// Gate `g`'s pre-activation without peepholes: its two projections summed.
    pub fn pre_activation(&self, g: usize) -> TExpr {
        add(TExpr::input(INPUT_CONN[g]), TExpr::input(HIDDEN_CONN[g]))
    }

    /// Activation `which` (0 = f, 1 = g, 2 = h) of the clipped pre-activation `x`.
    pub fn gate(&self, which: usize, x: TExpr) -> TExpr {
        self.acts[which].expr(self.cfg.clip_expr(x))
    }

    /// Activation `which` of `x`, unclipped (LSTM's `h(C)`).
    pub fn activate(&self, which: usize, x: TExpr) -> TExpr {
        self.acts[which].expr(x)
    }

    /// Appends the input projection of gates `gates` (bias `Wb` included) into `xg`.
    pub fn project_input(&mut self, gates: std::ops::Range<usize>) {
        let x_at = |k: SymExpr| {
            let [t, n, k] = self.layout.x(self.time.clone(), SymExpr::sym("n"), k);
            vec![t, n, k]
        };
        let src = (self.x.clone(), x_at(SymExpr::sym("k")));
        let (w, xg, bias) = (self.w.clone(), self.xg.clone(), self.bias.clone());
        self.project(
            "in",
            gates,
            src,
            &self.input.clone(),
            &w,
            &xg,
            bias.map(|b| (b, 0)),
        );
    }

    /// Appends the hidden projection of gates `gates` (bias `Rb` included) into `hg`, from the
    /// `[batch, hidden]` container `src` (the previous state, or GRU's `r ⊙ H`).
    pub fn project_hidden(&mut self, gates: std::ops::Range<usize>, src: &str) {
        let src = (src.to_string(), vec![SymExpr::sym("n"), SymExpr::sym("k")]);
        let (r, hg) = (self.r.clone(), self.hg.clone());
        let bias = (self.bias.clone()).map(|b| (b, self.gates));
        self.project("rec", gates, src, &self.hidden.clone(), &r, &hg, bias);
    }

    /// `dst[n, row] = bias[d, offset·hidden + row] + Σ_k src[…k] · weight[d, row, k]` for the
    /// rows of `gates`: an initialising map and a sum-accumulating contraction.
    #[allow(clippy::too_many_arguments)]
    fn project(
        &mut self,
        what: &str,
        gates: std::ops::Range<usize>,
        src: (String, Vec<SymExpr>),
        reduced: &SymExpr,
        weight: &str,
        dst: &str,
        bias: Option<(String, usize)>,
    ) {
        let h = &self.hidden;
        let rows = Range::new(
            h.clone() * SymExpr::from(gates.start),
            h.clone() * SymExpr::from(gates.end),
        );
        let (n, row) = (SymExpr::sym("n"), SymExpr::sym("j"));
        let mut params = vec![
            ("n".to_string(), Range::upto(self.batch.clone())),
            ("j".to_string(), rows),
        ];
        let label = format!("{}_{what}", self.label);
        let (reads, init) = match &bias {
            Some((b, offset)) => {
                let at = vec![self.d.clone(), &row + h.clone() * SymExpr::from(*offset)];
                (vec![Read::new("b", b, at)], TExpr::input("b"))
            }
            None => (Vec::new(), TExpr::Const(0.0)),
        };
        let dst_at = vec![n.clone(), row.clone()];
        element_map(
            self.b,
            &format!("{label}_init"),
            &params,
            reads,
            (dst, dst_at.clone()),
            None,
            init,
        );
        params.push(("k".to_string(), Range::upto(reduced.clone())));
        let reads = vec![
            Read::new("s", &src.0, src.1),
            Read::new("w", weight, vec![self.d.clone(), row, SymExpr::sym("k")]),
        ];
        let value = mul(TExpr::input("s"), TExpr::input("w"));
        element_map(
            self.b,
            &label,
            &params,
            reads,
            (dst, dst_at),
            Some(Wcr::Sum),
            value,
        );
    }

    /// A map over `[batch, hidden]` writing `value` to the transient `dst` (GRU's `r ⊙ H`).
    pub fn pointwise(&mut self, what: &str, reads: Vec<Load>, dst: &str, value: TExpr) {
        let (params, n, j) = unit_params(&self.batch, &self.hidden);
        let label = format!("{}_{what}", self.label);
        let reads = reads
            .iter()
            .map(|l| Read::new(l.conn, &l.data, l.at.clone()))
            .collect();
        element_map(
            self.b,
            &label,
            &params,
            reads,
            (dst, vec![n, j]),
            None,
            value,
        );
    }

    /// Appends the map writing a state update (and Y when asked). Past a batch entry's
    /// sequence length the state keeps its value and Y is 0.
    pub fn update(&mut self, what: &str, u: Update) {
        let (params, n, j) = unit_params(&self.batch, &self.hidden);
        let mut ins: Vec<In> = (u.reads.iter())
            .map(|r| In(r.conn, &r.data, Subset::element(r.at.clone())))
            .collect();
        let live = self.lens.as_ref().map(|lens| {
            ins.push(In("len", lens, Subset::element([n.clone()])));
            ins.push(In(
                "old",
                &u.target,
                Subset::element([n.clone(), j.clone()]),
            ));
            TExpr::binary(BinOp::Lt, TExpr::Index(self.t.clone()), TExpr::input("len"))
        });
        let masked = |value: TExpr, otherwise: TExpr| match &live {
            Some(cond) => TExpr::select(cond.clone(), value, otherwise),
            None => value,
        };
        let unit = Subset::element([n.clone(), j.clone()]);
        let mut outs = vec![Out(
            "s",
            &u.target,
            unit,
            None,
            masked(u.value.clone(), TExpr::input("old")),
        )];
        if let (true, Some(y)) = (u.to_y, &self.y) {
            let [t, d, n, j] = self.layout.y(self.time.clone(), self.d.clone(), n, j);
            outs.push(Out(
                "y",
                y,
                Subset::element([t, d, n, j]),
                None,
                masked(u.value, TExpr::Const(0.0)),
            ));
        }
        let label = format!("{}_{what}", self.label);
        let params_ref = params
            .iter()
            .map(|(p, r)| (p.as_str(), r.clone()))
            .collect();
        self.b.map(&label, params_ref, Schedule::Sequential, |b| {
            b.tasklet(&label, ins, outs);
        });
    }
}

/// The connectors through which an update reads gate `g`'s input and hidden projections.
const INPUT_CONN: [&str; 4] = ["x0", "x1", "x2", "x3"];
const HIDDEN_CONN: [&str; 4] = ["h0", "h1", "h2", "h3"];

/// Copies the `[batch, hidden]` state `src` of direction `d` into the final-state output `dst`.
pub fn store_state(
    b: &mut ScopeBuilder,
    label: &str,
    layout: Layout,
    d: usize,
    src: &str,
    dst: &str,
    dims: (&SymExpr, &SymExpr),
) {
    let (params, n, j) = unit_params(dims.0, dims.1);
    let [sd, sn, sj] = layout.state(SymExpr::from(d), n.clone(), j.clone());
    let reads = vec![Read::new("s", src, vec![n, j])];
    element_map(
        b,
        label,
        &params,
        reads,
        (dst, vec![sd, sn, sj]),
        None,
        TExpr::input("s"),
    );
}

/// Initialises the `[batch, hidden]` state `dst` of direction `d` from the initial-state input
/// `src`, or to zeros.
pub fn load_state(
    b: &mut ScopeBuilder,
    label: &str,
    layout: Layout,
    d: usize,
    src: Option<&str>,
    dst: &str,
    dims: (&SymExpr, &SymExpr),
) {
    let (params, n, j) = unit_params(dims.0, dims.1);
    let (reads, value) = match src {
        Some(src) => {
            let [sd, sn, sj] = layout.state(SymExpr::from(d), n.clone(), j.clone());
            (
                vec![Read::new("s", src, vec![sd, sn, sj])],
                TExpr::input("s"),
            )
        }
        None => (Vec::new(), TExpr::Const(0.0)),
    };
    element_map(b, label, &params, reads, (dst, vec![n, j]), None, value);
}
