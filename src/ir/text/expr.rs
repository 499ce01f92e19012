//! Parse trees of symbolic and tasklet expressions to [`SymExpr`] and [`TExpr`].
//!
//! The trees are rebuilt *as printed*, without simplifying: `a - b` becomes the `Add` with a
//! negated term that `Display` prints as `a - b`, so printing a parsed expression reproduces the
//! text it came from. Every built tree's height is bounded so that printing, evaluating and
//! dropping what the parser returns can never exhaust the stack.

use super::error::{ErrorKind, Fault};
use super::grammar::Rule;
use crate::ir::sym::SymExpr;
use crate::ir::texpr::{BinOp, TExpr, UnOp};
use pest::iterators::Pair;

/// The deepest expression tree (and the deepest syntactic nesting) accepted.
pub const MAX_DEPTH: usize = 200;

/// A value with the height of its expression tree.
struct Tall<T> {
    v: T,
    h: usize,
}

/// Height of a node over children of height `hs`, refused beyond [`MAX_DEPTH`].
fn height(hs: &[usize], pair: &Pair<Rule>) -> Result<usize, Fault> {
    let h = 1 + hs.iter().copied().max().unwrap_or(0);
    if h > MAX_DEPTH {
        Err(Fault::new(ErrorKind::TooDeep(MAX_DEPTH), pair.as_span()))
    } else {
        Ok(h)
    }
}

/// Recursion guard for nested syntax (parentheses, calls, map scopes).
pub fn descend(depth: usize, pair: &Pair<Rule>) -> Result<usize, Fault> {
    height(&[depth], pair)
}

/// The next child of `parent`. The grammar guarantees the children converters ask for; should
/// the two ever disagree, that is reported as an error rather than a panic.
pub fn child<'i>(
    it: &mut pest::iterators::Pairs<'i, Rule>,
    parent: &Pair<'i, Rule>,
) -> Result<Pair<'i, Rule>, Fault> {
    it.next().ok_or_else(|| {
        Fault::invalid(
            "syntax tree",
            parent.as_span(),
            "missing element (grammar mismatch)",
        )
    })
}

/// Parses an integer literal (optionally signed) to an `i64`.
pub fn int_literal(text: &str, pair: &Pair<Rule>) -> Result<i64, Fault> {
    text.parse()
        .map_err(|_| Fault::invalid("integer", pair.as_span(), "does not fit in 64 bits"))
}

/// Converts a `sym_expr` pair.
pub fn sym_expr(pair: Pair<Rule>, depth: usize) -> Result<SymExpr, Fault> {
    sym_sum(pair, depth).map(|t| t.v)
}

fn sym_sum(pair: Pair<Rule>, depth: usize) -> Result<Tall<SymExpr>, Fault> {
    let depth = descend(depth, &pair)?;
    let mut it = pair.clone().into_inner();
    let first = sym_term(child(&mut it, &pair)?, depth)?;
    let mut terms = vec![first];
    while let Some(op) = it.next() {
        let t = sym_term(child(&mut it, &pair)?, depth)?;
        terms.push(if op.as_str() == "-" {
            negate(t, &op)?
        } else {
            t
        });
    }
    if terms.len() == 1 {
        return Ok(terms.pop().expect("one term"));
    }
    if terms
        .iter()
        .any(|t| leading_constant(&t.v) == Some(i64::MIN))
    {
        // `Display` of a sum negates every term starting with a negative constant to print it
        // as `- c·x`; `i64::MIN` has no negation.
        return Err(Fault::invalid(
            "sum",
            pair.as_span(),
            "a term of a sum cannot start with -9223372036854775808",
        ));
    }
    let h = height(&terms.iter().map(|t| t.h).collect::<Vec<_>>(), &pair)?;
    Ok(Tall {
        v: SymExpr::Add(terms.into_iter().map(|t| t.v).collect()),
        h,
    })
}

/// The integer a term starts with, if any (`-3` or `-3*x`).
fn leading_constant(e: &SymExpr) -> Option<i64> {
    match e {
        SymExpr::Int(v) => Some(*v),
        SymExpr::Mul(fs) => fs.first().and_then(SymExpr::as_int),
        _ => None,
    }
}

/// The term that `Display` prints as ` - x` after a sum's first term.
fn negate(x: Tall<SymExpr>, at: &Pair<Rule>) -> Result<Tall<SymExpr>, Fault> {
    match x.v {
        SymExpr::Int(v) if v > 0 => Ok(Tall {
            v: SymExpr::Int(-v),
            h: x.h,
        }),
        SymExpr::Mul(mut fs) if matches!(fs.first(), Some(SymExpr::Int(c)) if *c > 1) => {
            if let Some(SymExpr::Int(c)) = fs.first_mut() {
                *c = -*c;
            }
            Ok(Tall {
                v: SymExpr::Mul(fs),
                h: x.h,
            })
        }
        v => Ok(Tall {
            v: SymExpr::Mul(vec![SymExpr::Int(-1), v]),
            h: height(&[x.h], at)?,
        }),
    }
}

fn sym_term(pair: Pair<Rule>, depth: usize) -> Result<Tall<SymExpr>, Fault> {
    let mut it = pair.clone().into_inner();
    let mut acc = sym_factor(child(&mut it, &pair)?, depth)?;
    // Whether `acc` is a product this chain built (so `*` extends it rather than nesting).
    let mut chained = false;
    while let Some(op) = it.next() {
        let rhs = sym_factor(child(&mut it, &pair)?, depth)?;
        let h = height(&[acc.h, rhs.h], &op)?;
        acc = match (op.as_str(), acc.v) {
            ("*", SymExpr::Mul(mut fs)) if chained => {
                fs.push(rhs.v);
                Tall {
                    v: SymExpr::Mul(fs),
                    h,
                }
            }
            ("*", lhs) => {
                chained = true;
                Tall {
                    v: SymExpr::Mul(vec![lhs, rhs.v]),
                    h,
                }
            }
            ("/", lhs) => {
                chained = false;
                Tall {
                    v: SymExpr::FloorDiv(Box::new(lhs), Box::new(rhs.v)),
                    h,
                }
            }
            (_, lhs) => {
                chained = false;
                Tall {
                    v: SymExpr::Mod(Box::new(lhs), Box::new(rhs.v)),
                    h,
                }
            }
        };
    }
    Ok(acc)
}

fn sym_factor(pair: Pair<Rule>, depth: usize) -> Result<Tall<SymExpr>, Fault> {
    let leaf = |v| Ok(Tall { v, h: 1 });
    match pair.as_rule() {
        Rule::uint => leaf(SymExpr::Int(int_literal(pair.as_str(), &pair)?)),
        Rule::ident => leaf(SymExpr::Sym(pair.as_str().to_string())),
        Rule::sym_expr => sym_sum(pair, depth),
        Rule::sym_neg => {
            let inner = child(&mut pair.clone().into_inner(), &pair)?;
            if inner.as_rule() == Rule::uint {
                // Joined with its sign so that `-9223372036854775808` is representable.
                return leaf(SymExpr::Int(int_literal(
                    &format!("-{}", inner.as_str()),
                    &pair,
                )?));
            }
            let x = sym_factor(inner, descend(depth, &pair)?)?;
            let h = height(&[x.h], &pair)?;
            Ok(Tall {
                v: SymExpr::Mul(vec![SymExpr::Int(-1), x.v]),
                h,
            })
        }
        _ => {
            let depth = descend(depth, &pair)?;
            let mut it = pair.clone().into_inner();
            let f = child(&mut it, &pair)?;
            let a = sym_sum(child(&mut it, &pair)?, depth)?;
            let b = sym_sum(child(&mut it, &pair)?, depth)?;
            let h = height(&[a.h, b.h], &pair)?;
            let (a, b) = (Box::new(a.v), Box::new(b.v));
            let v = if f.as_str() == "min" {
                SymExpr::Min(a, b)
            } else {
                SymExpr::Max(a, b)
            };
            Ok(Tall { v, h })
        }
    }
}

/// Infix operators of tasklet expressions, looked up by their printed symbol.
const INFIX: [BinOp; 12] = [
    BinOp::Add,
    BinOp::Sub,
    BinOp::Mul,
    BinOp::Div,
    BinOp::Lt,
    BinOp::Le,
    BinOp::Gt,
    BinOp::Ge,
    BinOp::Eq,
    BinOp::Ne,
    BinOp::And,
    BinOp::Or,
];

/// Binary operators printed as calls (`pow(a, b)`).
const CALLS: [BinOp; 7] = [
    BinOp::Pow,
    BinOp::Max,
    BinOp::Min,
    BinOp::Fmod,
    BinOp::BitAnd,
    BinOp::BitOr,
    BinOp::BitXor,
];

/// Converts a `texpr` pair.
pub fn texpr(pair: Pair<Rule>, depth: usize) -> Result<TExpr, Fault> {
    tnode(pair, depth).map(|t| t.v)
}

fn tnode(pair: Pair<Rule>, depth: usize) -> Result<Tall<TExpr>, Fault> {
    match pair.as_rule() {
        Rule::texpr => {
            let depth = descend(depth, &pair)?;
            tnode(child(&mut pair.clone().into_inner(), &pair)?, depth)
        }
        Rule::t_unary => tunary(pair, depth),
        Rule::unsigned_number => Ok(Tall {
            v: TExpr::Const(float_literal(pair.as_str(), &pair)?),
            h: 1,
        }),
        Rule::ident => Ok(Tall {
            v: TExpr::Input(pair.as_str().to_string()),
            h: 1,
        }),
        Rule::t_idx => {
            let inner = child(&mut pair.clone().into_inner(), &pair)?;
            Ok(Tall {
                v: TExpr::Index(sym_expr(inner, descend(depth, &pair)?)?),
                h: 1,
            })
        }
        Rule::t_call => tcall(pair, depth),
        Rule::t_elem => telem(pair, depth),
        // t_or … t_mul: a left-associative chain of one precedence level.
        _ => {
            let mut it = pair.clone().into_inner();
            let mut acc = tnode(child(&mut it, &pair)?, depth)?;
            while let Some(op) = it.next() {
                let rhs = tnode(child(&mut it, &pair)?, depth)?;
                let bin = INFIX
                    .into_iter()
                    .find(|b| b.symbol() == Some(op.as_str()))
                    .ok_or_else(|| {
                        Fault::invalid("operator", op.as_span(), "not an infix operator")
                    })?;
                let h = height(&[acc.h, rhs.h], &op)?;
                acc = Tall {
                    v: TExpr::binary(bin, acc.v, rhs.v),
                    h,
                };
            }
            Ok(acc)
        }
    }
}

/// Prefix operators and their operand. A lone `-` before a literal is the negative literal
/// (that is how `Display` prints negative constants); any other prefix is an operator.
fn tunary(pair: Pair<Rule>, depth: usize) -> Result<Tall<TExpr>, Fault> {
    let parts: Vec<Pair<Rule>> = pair.clone().into_inner().collect();
    let Some((atom, prefixes)) = parts.split_last() else {
        return Err(Fault::invalid(
            "expression",
            pair.as_span(),
            "missing operand",
        ));
    };
    if let [only] = prefixes {
        // Not for `nan`: `-nan` is a negation (a negative NaN constant prints as `nan`).
        let literal = atom.as_rule() == Rule::unsigned_number && atom.as_str() != "nan";
        if only.as_str() == "-" && literal {
            let v = float_literal(&format!("-{}", atom.as_str()), &pair)?;
            return Ok(Tall {
                v: TExpr::Const(v),
                h: 1,
            });
        }
    }
    let mut acc = tnode(atom.clone(), depth)?;
    for p in prefixes.iter().rev() {
        let op = if p.as_str() == "-" {
            UnOp::Neg
        } else {
            UnOp::Not
        };
        let h = height(&[acc.h], p)?;
        acc = Tall {
            v: TExpr::unary(op, acc.v),
            h,
        };
    }
    Ok(acc)
}

fn tcall(pair: Pair<Rule>, depth: usize) -> Result<Tall<TExpr>, Fault> {
    let depth = descend(depth, &pair)?;
    let mut it = pair.clone().into_inner();
    let fname = child(&mut it, &pair)?;
    let args = it.map(|a| tnode(a, depth)).collect::<Result<Vec<_>, _>>()?;
    let h = height(&args.iter().map(|a| a.h).collect::<Vec<_>>(), &pair)?;
    let mut vals = args.into_iter().map(|a| a.v);
    let name = fname.as_str();
    let v = match (vals.len(), vals.next(), vals.next(), vals.next()) {
        (1, Some(x), None, None) => UnOp::from_name(name).map(|op| TExpr::unary(op, x)),
        (2, Some(a), Some(b), None) => CALLS
            .into_iter()
            .find(|op| op.function_name() == Some(name))
            .map(|op| TExpr::binary(op, a, b)),
        (3, Some(c), Some(a), Some(b)) if name == "select" => Some(TExpr::select(c, a, b)),
        _ => None,
    };
    v.map(|v| Tall { v, h }).ok_or_else(|| {
        let known: Vec<&str> = UnOp::ALL
            .iter()
            .map(|op| op.name())
            .chain(CALLS.iter().filter_map(|op| op.function_name()))
            .chain(["select", "idx"])
            .collect();
        Fault::unknown(
            "function (or wrong argument count)",
            fname.as_span(),
            &known,
        )
    })
}

/// `conn[e0, e1, …]`: an element read at computed indices.
fn telem(pair: Pair<Rule>, depth: usize) -> Result<Tall<TExpr>, Fault> {
    let depth = descend(depth, &pair)?;
    let mut it = pair.clone().into_inner();
    let conn = child(&mut it, &pair)?.as_str().to_string();
    let idx = it.map(|a| tnode(a, depth)).collect::<Result<Vec<_>, _>>()?;
    let h = height(&idx.iter().map(|a| a.h).collect::<Vec<_>>(), &pair)?;
    Ok(Tall {
        v: TExpr::Element(conn, idx.into_iter().map(|a| a.v).collect()),
        h,
    })
}

pub fn float_literal(text: &str, pair: &Pair<Rule>) -> Result<f64, Fault> {
    text.parse()
        .map_err(|_| Fault::invalid("number", pair.as_span(), "not a floating-point number"))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Display → parse → Display is the identity, and the parse rebuilds the same tree.
    fn sym_round_trip(e: &SymExpr) {
        let text = e.to_string();
        let back: SymExpr = text.parse().unwrap_or_else(|err| panic!("{text}: {err:?}"));
        assert_eq!(back.to_string(), text);
        assert_eq!(&back, e, "{text}");
    }

    fn t_round_trip(e: &TExpr) {
        let text = e.to_string();
        let back: TExpr = text.parse().unwrap_or_else(|err| panic!("{text}: {err:?}"));
        assert_eq!(back.to_string(), text);
    }

    #[test]
    fn canonical_symbolic_forms_parse_to_the_same_tree() {
        let (i, j, n) = (SymExpr::sym("i"), SymExpr::sym("j"), SymExpr::sym("n"));
        for e in [
            &i * 4 + &j - 3,
            &j - &i * 2,
            SymExpr::Int(0) - &i,
            (&i + 1).floor_div(n.clone()) * 3,
            (&i * &j).modulo(SymExpr::Int(7)),
            i.clone().min(&n - 1).max(SymExpr::Int(0)),
            SymExpr::Int(i64::MIN),
            SymExpr::Int(-5),
        ] {
            sym_round_trip(&e);
        }
    }

    #[test]
    fn unsimplified_symbolic_trees_keep_their_shape() {
        use SymExpr::{Add, FloorDiv, Int, Mul, Sym};
        let x = || Sym("x".into());
        for e in [
            Mul(vec![Mul(vec![x(), x()]), x()]),
            Add(vec![x(), Add(vec![x(), Int(1)])]),
            FloorDiv(
                Box::new(x()),
                Box::new(FloorDiv(Box::new(x()), Box::new(Int(2)))),
            ),
            Mul(vec![x(), Int(-3)]),
            Mul(vec![Int(-1), Add(vec![x(), Int(1)])]),
        ] {
            sym_round_trip(&e);
        }
        assert_eq!(
            "(a + b) * c"
                .parse::<SymExpr>()
                .map(|e| e.to_string())
                .ok()
                .as_deref(),
            Some("(a + b)*c")
        );
    }

    #[test]
    fn negative_constants_and_negations_print_back_identically() {
        let one = || TExpr::Const(1.0);
        let a = || TExpr::input("a");
        for e in [
            TExpr::Const(-1.0),
            TExpr::unary(UnOp::Neg, one()),
            TExpr::unary(UnOp::Neg, TExpr::Const(-1.0)),
            TExpr::unary(UnOp::Neg, TExpr::unary(UnOp::Neg, one())),
            TExpr::unary(UnOp::Not, TExpr::Const(-1.0)),
            TExpr::binary(BinOp::Mul, a(), TExpr::Const(-2.5)),
            TExpr::binary(BinOp::Sub, a(), TExpr::Const(f64::NEG_INFINITY)),
            TExpr::binary(BinOp::Lt, TExpr::binary(BinOp::Lt, a(), one()), a()),
            TExpr::binary(
                BinOp::Or,
                a(),
                TExpr::binary(BinOp::And, a(), TExpr::unary(UnOp::Not, a())),
            ),
            TExpr::binary(
                BinOp::Pow,
                TExpr::Index(SymExpr::sym("i") - 1),
                TExpr::Const(f64::NAN),
            ),
            TExpr::binary(BinOp::Fmod, a(), TExpr::Const(-2.5)),
            TExpr::binary(BinOp::BitXor, a(), TExpr::unary(UnOp::Atanh, a())),
            TExpr::unary(UnOp::Round, TExpr::binary(BinOp::BitAnd, one(), a())),
            TExpr::unary(UnOp::Sigmoid, TExpr::input("exp")),
            TExpr::unary(UnOp::Neg, TExpr::Const(f64::NAN)),
            TExpr::unary(UnOp::Neg, TExpr::Const(f64::INFINITY)),
        ] {
            t_round_trip(&e);
        }
        assert_eq!("-0.0".parse::<TExpr>().ok(), Some(TExpr::Const(-0.0)));
        assert!(matches!("-0.0".parse::<TExpr>(), Ok(TExpr::Const(z)) if z.is_sign_negative()));
    }

    #[test]
    fn element_reads_parse_back_to_the_same_tree() {
        let a = || TExpr::input("a");
        for e in [
            TExpr::element("t", vec![a(), TExpr::Index(SymExpr::sym("d") + 1)]),
            TExpr::unary(
                UnOp::Neg,
                TExpr::element(
                    "t",
                    vec![TExpr::binary(BinOp::Add, a(), TExpr::element("u", vec![]))],
                ),
            ),
            TExpr::binary(
                BinOp::Mul,
                TExpr::element("t", vec![TExpr::Const(2.0)]),
                TExpr::select(a(), TExpr::element("t", vec![a()]), a()),
            ),
        ] {
            t_round_trip(&e);
            assert_eq!(e.to_string().parse::<TExpr>().ok(), Some(e));
        }
        assert_eq!(
            "t[a, idx(d)] * 2.0".parse::<TExpr>().ok(),
            Some(TExpr::binary(
                BinOp::Mul,
                TExpr::element("t", vec![a(), TExpr::Index(SymExpr::sym("d"))]),
                TExpr::Const(2.0)
            ))
        );
    }

    #[test]
    fn unknown_functions_and_deep_nesting_are_errors() {
        let e = "a + frob(b)".parse::<TExpr>().unwrap_err();
        assert_eq!(e.byte_range(), 4..8);
        assert!(matches!(e.kind, ErrorKind::Unknown { .. }));
        let e = "exp(a, b)".parse::<TExpr>().unwrap_err();
        assert_eq!(e.byte_range(), 0..3);
        assert!("t[a, ]".parse::<TExpr>().is_err());
        assert!("t[a".parse::<TExpr>().is_err());
        let nested = format!("{}a{}", "t[".repeat(5000), "]".repeat(5000));
        assert!(nested.parse::<TExpr>().is_err());
        let deep = format!("{}x{}", "(".repeat(5000), ")".repeat(5000));
        assert!(deep.parse::<SymExpr>().is_err());
        let chain = vec!["x"; 5000].join(" / ");
        assert!(
            matches!(chain.parse::<SymExpr>(), Err(e) if e.kind == ErrorKind::TooDeep(MAX_DEPTH))
        );
        let prefixes = format!("{}a", "-".repeat(5000));
        assert!(prefixes.parse::<TExpr>().is_err());
        assert!("x + -9223372036854775808".parse::<SymExpr>().is_err());
        assert!("-9223372036854775808 + x".parse::<SymExpr>().is_err());
        assert!("(-9223372036854775808)*x - 1".parse::<SymExpr>().is_err());
        assert!("99999999999999999999".parse::<SymExpr>().is_err());
    }
}
