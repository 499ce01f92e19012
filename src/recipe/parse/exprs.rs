//! Expressions: precedence chains, prefix and postfix operators, literals, call arguments.
//!
//! Trees are built with their depth tracked so a long chain (`a + a + … + a`) cannot produce a
//! tree deep enough to overflow the stack of whatever walks or drops it later.

use super::{fail, mismatch, Builder, Rule, SYNTAX};
use crate::recipe::ast::{Arg, BinaryOp, Call, Expr, ExprKind, UnaryOp};
use crate::recipe::diag::{Diagnostic, Span};
use pest::iterators::Pair;

/// Deepest expression tree accepted (operators and postfixes on top of one another).
pub const MAX_EXPR_DEPTH: usize = 128;

/// An expression with the height of its tree.
struct Deep {
    expr: Expr,
    depth: usize,
}

impl<'i> Builder<'i> {
    /// An `expr` pair (or any rule of the expression grammar).
    pub(super) fn expr(&self, p: Pair<'i, Rule>) -> Result<Expr, Box<Diagnostic>> {
        Ok(self.deep(p)?.expr)
    }

    fn deep(&self, p: Pair<'i, Rule>) -> Result<Deep, Box<Diagnostic>> {
        // Every precedence level wraps a lone operand in a pair of its own; going down those
        // in a loop keeps the recursion to one call per operator, not per level, which is
        // what lets deep nesting fit a test thread's stack in debug builds.
        let mut p = p;
        // `(a + b)`: the parentheses belong to the expression's span.
        let mut outer = None;
        loop {
            let wrapper = matches!(
                p.as_rule(),
                Rule::expr
                    | Rule::paren
                    | Rule::or_expr
                    | Rule::and_expr
                    | Rule::cmp_expr
                    | Rule::sum_expr
                    | Rule::term_expr
                    | Rule::unary_expr
                    | Rule::postfix_expr
            );
            let mut inner = p.clone().into_inner();
            match (wrapper, inner.next(), inner.next()) {
                (true, Some(only), None) => {
                    if p.as_rule() == Rule::paren {
                        outer.get_or_insert(self.span(&p));
                    }
                    p = only;
                }
                _ => break,
            }
        }
        let mut d = match p.as_rule() {
            Rule::or_expr | Rule::and_expr | Rule::cmp_expr | Rule::sum_expr | Rule::term_expr => {
                self.chain(p)?
            }
            Rule::unary_expr => self.unary(p)?,
            Rule::postfix_expr => self.postfix(p)?,
            Rule::list => self.list(p)?,
            _ => self.leaf(p)?,
        };
        if let Some(span) = outer {
            d.expr.span = span;
        }
        Ok(d)
    }

    /// A literal, a name or `_`.
    fn leaf(&self, p: Pair<'i, Rule>) -> Result<Deep, Box<Diagnostic>> {
        let span = self.span(&p);
        let kind = match p.as_rule() {
            Rule::int => ExprKind::Int(self.int(&p)?),
            Rule::float => ExprKind::Float(self.float(&p)?),
            Rule::boolean => ExprKind::Bool(p.as_str() == "true"),
            Rule::string => ExprKind::Str(self.string(&p)?.value),
            Rule::wildcard => ExprKind::Wildcard,
            Rule::path => ExprKind::Name(self.path(&p)),
            other => return Err(mismatch(span, &format!("an expression, not {other:?}"))),
        };
        Ok(Deep {
            expr: Expr { kind, span },
            depth: 1,
        })
    }

    /// `[a, b, c]`.
    fn list(&self, p: Pair<'i, Rule>) -> Result<Deep, Box<Diagnostic>> {
        let span = self.span(&p);
        let items = (p.into_inner())
            .map(|c| self.deep(c))
            .collect::<Result<Vec<_>, _>>()?;
        let depth = items.iter().map(|d| d.depth).max().unwrap_or(0);
        let kind = ExprKind::List(items.into_iter().map(|d| d.expr).collect());
        self.nest(kind, span, depth)
    }

    /// A node over children of height `below`, refused past [`MAX_EXPR_DEPTH`].
    fn nest(&self, kind: ExprKind, span: Span, below: usize) -> Result<Deep, Box<Diagnostic>> {
        let depth = below + 1;
        if depth > MAX_EXPR_DEPTH {
            return fail(
                Diagnostic::error(
                    SYNTAX,
                    span,
                    format!("expression nested deeper than {MAX_EXPR_DEPTH} levels"),
                )
                .label("too deeply nested")
                .help("split it with `let`"),
            );
        }
        Ok(Deep {
            expr: Expr { kind, span },
            depth,
        })
    }

    /// `a op b op c`, left-associative.
    fn chain(&self, p: Pair<'i, Rule>) -> Result<Deep, Box<Diagnostic>> {
        let start = self.span(&p);
        let mut kids = self.kids(&p);
        let mut acc = self.deep(kids.need("an operand")?)?;
        while let Some(op) = kids.next() {
            let op =
                binary_op(op.as_str()).ok_or_else(|| mismatch(self.span(&op), "an operator"))?;
            let rhs = self.deep(kids.need("an operand")?)?;
            let span = Span {
                end: rhs.expr.span.end,
                ..start
            };
            let below = acc.depth.max(rhs.depth);
            let kind = ExprKind::Binary(op, Box::new(acc.expr), Box::new(rhs.expr));
            acc = self.nest(kind, span, below)?;
        }
        Ok(acc)
    }

    /// `-x`, `not x`, `- -x`: prefixes apply from the innermost out.
    fn unary(&self, p: Pair<'i, Rule>) -> Result<Deep, Box<Diagnostic>> {
        let mut kids: Vec<Pair<'i, Rule>> = self.kids(&p).all().into();
        let operand = kids
            .pop()
            .ok_or_else(|| mismatch(self.span(&p), "an operand"))?;
        let mut acc = self.deep(operand)?;
        for op in kids.iter().rev() {
            let op_kind = match op.as_rule() {
                Rule::op_neg => UnaryOp::Neg,
                _ => UnaryOp::Not,
            };
            let span = self.span(op).to(acc.expr.span);
            acc = self.nest(
                ExprKind::Unary(op_kind, Box::new(acc.expr)),
                span,
                acc.depth,
            )?;
        }
        Ok(acc)
    }

    /// `x.field`, `l[i]`, `f(args)`.
    fn postfix(&self, p: Pair<'i, Rule>) -> Result<Deep, Box<Diagnostic>> {
        let start = self.span(&p);
        let mut kids = self.kids(&p);
        let first = kids.need("an operand")?;
        // Only a name can be called: not `(f)(x)`, `f(x)(y)` or `m.f(x)`.
        let mut callable = first.as_rule() == Rule::path;
        let mut acc = self.deep(first)?;
        while let Some(suffix) = kids.next() {
            let span = Span {
                end: self.span(&suffix).end,
                ..start
            };
            let was_callable = std::mem::replace(&mut callable, false);
            acc = match suffix.as_rule() {
                Rule::field => {
                    let name = self.kids(&suffix).need("a field name")?;
                    let kind = ExprKind::Field(Box::new(acc.expr), self.ident(&name));
                    self.nest(kind, span, acc.depth)?
                }
                Rule::index => {
                    let at = self.deep(self.kids(&suffix).need("an index")?)?;
                    let below = acc.depth.max(at.depth);
                    let kind = ExprKind::Index(Box::new(acc.expr), Box::new(at.expr));
                    self.nest(kind, span, below)?
                }
                _ => {
                    let callee = match acc.expr.kind {
                        ExprKind::Name(path) if was_callable => path,
                        _ => {
                            return fail(
                                Diagnostic::error(
                                    SYNTAX,
                                    acc.expr.span,
                                    "only a name can be called",
                                )
                                .label("this is not a function, rule or transformation name"),
                            )
                        }
                    };
                    let (args, below) = self.args_deep(suffix)?;
                    let call = Call { callee, args, span };
                    self.nest(ExprKind::Call(call), span, below.max(acc.depth))?
                }
            };
        }
        Ok(acc)
    }

    /// The `arg`s of a pair (`call` or `call_args`), skipping anything else.
    pub(super) fn args(&self, p: Pair<'i, Rule>) -> Result<Vec<Arg>, Box<Diagnostic>> {
        Ok(self.args_deep(p)?.0)
    }

    fn args_deep(&self, p: Pair<'i, Rule>) -> Result<(Vec<Arg>, usize), Box<Diagnostic>> {
        let mut args = Vec::new();
        let mut depth = 0;
        for a in p.into_inner().filter(|c| c.as_rule() == Rule::arg) {
            let span = self.span(&a);
            let mut kids = self.kids(&a);
            let name = kids.take(Rule::arg_name).map(|n| self.ident(&n));
            let value = self.deep(kids.need("an argument value")?)?;
            depth = depth.max(value.depth);
            args.push(Arg {
                name,
                value: value.expr,
                span,
            });
        }
        Ok((args, depth))
    }

    fn int(&self, p: &Pair<'i, Rule>) -> Result<i64, Box<Diagnostic>> {
        match p.as_str().parse::<i64>() {
            Ok(v) => Ok(v),
            Err(_) => fail(
                Diagnostic::error(SYNTAX, self.span(p), "integer literal out of range")
                    .label("does not fit in 64 bits")
                    .note(format!("integers range from {} to {}", i64::MIN, i64::MAX)),
            ),
        }
    }

    fn float(&self, p: &Pair<'i, Rule>) -> Result<f64, Box<Diagnostic>> {
        match p.as_str().parse::<f64>() {
            Ok(v) if v.is_finite() => Ok(v),
            _ => fail(
                Diagnostic::error(SYNTAX, self.span(p), "float literal out of range")
                    .label("too large for a 64-bit float"),
            ),
        }
    }
}

/// The operator spelled `s`.
fn binary_op(s: &str) -> Option<BinaryOp> {
    Some(match s {
        "+" => BinaryOp::Add,
        "-" => BinaryOp::Sub,
        "*" => BinaryOp::Mul,
        "/" => BinaryOp::Div,
        "%" => BinaryOp::Rem,
        "==" => BinaryOp::Eq,
        "!=" => BinaryOp::Ne,
        "<" => BinaryOp::Lt,
        "<=" => BinaryOp::Le,
        ">" => BinaryOp::Gt,
        ">=" => BinaryOp::Ge,
        "and" => BinaryOp::And,
        "or" => BinaryOp::Or,
        _ => return None,
    })
}
