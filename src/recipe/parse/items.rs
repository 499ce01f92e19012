//! The file, its header and its items: `use`, `param`, `choose`, `pattern`, `rule`, `main`.

use super::{fail, mismatch, Builder, Rule, SYNTAX};
use crate::recipe::ast::{
    self, BinaryOp, CaptureDecl, CaptureKind, Choose, ChooseBy, Domain, EdgeChain, Expr, ExprKind,
    File, Header, Item, Param, ParamType, PatternDecl, Prop, Rule as RuleItem, RuleParam, Use,
    UseTarget,
};
use crate::recipe::diag::{Diagnostic, Span};
use pest::iterators::Pair;

impl<'i> Builder<'i> {
    pub(super) fn file(&self, p: Pair<'i, Rule>) -> Result<File, Box<Diagnostic>> {
        let span = self.span(&p);
        let mut kids = self.kids(&p);
        let header = kids
            .take(Rule::header)
            .map(|h| self.header(h))
            .transpose()?;
        let mut items = Vec::new();
        // Whole items, keyword included (a `main` item's block starts at its `{`).
        let mut spans: Vec<Span> = header.iter().map(|h| h.span).collect();
        while let Some(item) = kids.next() {
            if item.as_rule() != Rule::EOI {
                spans.push(self.span(&item));
                items.push(self.item(item)?);
            }
        }
        self.one_per_line(&spans, "item")?;
        Ok(File {
            header,
            items,
            comments: Vec::new(),
            span,
        })
    }

    fn header(&self, p: Pair<'i, Rule>) -> Result<Header, Box<Diagnostic>> {
        let span = self.span(&p);
        let mut kids = self.kids(&p);
        let name = self.string(&kids.need("a recipe name")?)?;
        let version = self.string(&kids.need("a version")?)?;
        let requires = match kids.take(Rule::requires) {
            Some(r) => Some(self.string(&self.kids(&r).need("a version range")?)?),
            None => None,
        };
        Ok(Header {
            name,
            version,
            requires,
            span,
        })
    }

    pub(super) fn item(&self, p: Pair<'i, Rule>) -> Result<Item, Box<Diagnostic>> {
        Ok(match p.as_rule() {
            Rule::use_item => Item::Use(self.use_item(p)?),
            Rule::param_item => Item::Param(self.param(p)?),
            Rule::choose_item => Item::Choose(self.choose(p)?),
            Rule::pattern_item => Item::Pattern(self.pattern(p)?),
            Rule::rule_item => Item::Rule(self.rule(p)?),
            Rule::main_item => {
                let body = self.block(self.kids(&p).need_rule(Rule::block)?)?;
                let span = self.span(&p);
                let keyword = Span::new(span.file, span.start, span.start + "main".len());
                Item::Main(ast::Rule {
                    name: ast::Ident {
                        name: "main".to_string(),
                        span: keyword,
                    },
                    params: Vec::new(),
                    body,
                    span,
                })
            }
            other => return Err(mismatch(self.span(&p), &format!("an item, not {other:?}"))),
        })
    }

    fn use_item(&self, p: Pair<'i, Rule>) -> Result<Use, Box<Diagnostic>> {
        let span = self.span(&p);
        let form = self.kids(&p).need("a module")?;
        let mut kids = self.kids(&form);
        let target = kids.need("a module")?;
        let alias = kids.take(Rule::ident).map(|a| self.ident(&a));
        let target = if form.as_rule() == Rule::use_file {
            UseTarget::File(self.string(&target)?)
        } else {
            let path = self.path(&target);
            if path.segments.len() < 2 || path.segments[0].name != "std" {
                return fail(
                    Diagnostic::error(
                        SYNTAX,
                        path.span,
                        format!("`{}` is not a standard module", path.text()),
                    )
                    .label("a module path starts with `std::`")
                    .help("use a file with `use \"./FILE.recipe\" as NAME`"),
                );
            }
            UseTarget::Std(path)
        };
        Ok(Use {
            target,
            alias,
            span,
        })
    }

    fn param(&self, p: Pair<'i, Rule>) -> Result<Param, Box<Diagnostic>> {
        let span = self.span(&p);
        let mut kids = self.kids(&p);
        let name = self.ident(&kids.need_rule(Rule::ident)?);
        let ty_pair = kids.need("a parameter type")?;
        let ty_span = self.span(&ty_pair);
        let ty = match ty_pair.as_rule() {
            Rule::ty_int => ParamType::Int(ty_span),
            Rule::ty_float => ParamType::Float(ty_span),
            Rule::ty_bool => ParamType::Bool(ty_span),
            _ => {
                let names = (self.kids(&ty_pair).all().iter())
                    .map(|s| self.string(s))
                    .collect::<Result<_, _>>()?;
                ParamType::Enum(names, ty_span)
            }
        };
        let mut param = Param {
            name,
            ty,
            domain: None,
            default: None,
            constraint: None,
            span,
        };
        while let Some(part) = kids.next() {
            match part.as_rule() {
                Rule::domain_list => {
                    let span = self.span(&part);
                    let values = (part.into_inner())
                        .map(|v| self.expr(v))
                        .collect::<Result<_, _>>()?;
                    param.domain = Some(Domain::List(values, span));
                }
                Rule::domain_range | Rule::domain_pow2 => {
                    let span = self.span(&part);
                    let pow2 = part.as_rule() == Rule::domain_pow2;
                    let mut bounds = self.kids(&part);
                    let lo = self.expr(bounds.need("a lower bound")?)?;
                    let hi = self.expr(bounds.need("an upper bound")?)?;
                    param.domain = Some(if pow2 {
                        Domain::Pow2 { lo, hi, span }
                    } else {
                        Domain::Range { lo, hi, span }
                    });
                }
                Rule::param_default => {
                    param.default = Some(self.expr(self.kids(&part).need("a default")?)?);
                }
                _ => {
                    param.constraint = Some(self.expr(self.kids(&part).need("a constraint")?)?);
                }
            }
        }
        Ok(param)
    }

    fn choose(&self, p: Pair<'i, Rule>) -> Result<Choose, Box<Diagnostic>> {
        let span = self.span(&p);
        let mut params = Vec::new();
        let mut by = None;
        for part in self.kids(&p).all() {
            let at = self.span(&part);
            match part.as_rule() {
                Rule::ident => params.push(self.ident(&part)),
                Rule::by_dmd => by = Some(ChooseBy::Dmd(at)),
                Rule::by_estimate => by = Some(ChooseBy::Estimate(at)),
                Rule::by_fixed => by = Some(ChooseBy::Fixed(at)),
                _ => {
                    let reps = self.kids(&part).next().map(|r| self.expr(r)).transpose()?;
                    by = Some(ChooseBy::Bench { reps, span: at });
                }
            }
        }
        let by = by.ok_or_else(|| mismatch(span, "how to choose"))?;
        Ok(Choose { params, by, span })
    }

    fn pattern(&self, p: Pair<'i, Rule>) -> Result<PatternDecl, Box<Diagnostic>> {
        let span = self.span(&p);
        let mut kids = self.kids(&p);
        let name = self.ident(&kids.need_rule(Rule::ident)?);
        let mut decl = PatternDecl {
            name,
            captures: Vec::new(),
            edges: Vec::new(),
            constraints: Vec::new(),
            span,
        };
        let mut elements = Vec::new();
        for part in kids.all() {
            elements.push(self.span(&part));
            match part.as_rule() {
                Rule::capture => decl.captures.push(self.capture(part)?),
                Rule::edge_chain => decl.edges.push(EdgeChain {
                    span: self.span(&part),
                    nodes: part.into_inner().map(|n| self.ident(&n)).collect(),
                }),
                _ => {
                    let e = self.expr(self.kids(&part).need("a constraint")?)?;
                    split_and(e, &mut decl.constraints);
                }
            }
        }
        self.one_per_line(&elements, "pattern element")?;
        Ok(decl)
    }

    fn capture(&self, p: Pair<'i, Rule>) -> Result<CaptureDecl, Box<Diagnostic>> {
        let span = self.span(&p);
        let mut kids = self.kids(&p);
        let name = self.ident(&kids.need_rule(Rule::ident)?);
        let kind_pair = kids.need("a capture kind")?;
        let kind = match kind_pair.as_rule() {
            Rule::kind_op => CaptureKind::Op,
            Rule::kind_map => CaptureKind::Map,
            Rule::kind_tasklet => CaptureKind::Tasklet,
            Rule::kind_data => CaptureKind::Data,
            _ => CaptureKind::Node,
        };
        let operator = match kids.take(Rule::operator) {
            Some(o) => Some(self.ident(&self.kids(&o).need("an operator")?)),
            None => None,
        };
        let props = match kids.take(Rule::props) {
            Some(ps) => (self.kids(&ps).all().into_iter())
                .map(|prop| {
                    let span = self.span(&prop);
                    let mut kv = self.kids(&prop);
                    let key = self.ident(&kv.need("a property name")?);
                    let value = self.expr(kv.need("a property value")?)?;
                    Ok(Prop { key, value, span })
                })
                .collect::<Result<_, Box<Diagnostic>>>()?,
            None => Vec::new(),
        };
        let inputs = kids.take(Rule::inputs).map(|ins| {
            (ins.into_inner())
                .map(|i| {
                    let inner = self.kids(&i).next();
                    inner
                        .filter(|x| x.as_rule() == Rule::ident)
                        .map(|x| self.ident(&x))
                })
                .collect()
        });
        Ok(CaptureDecl {
            name,
            kind,
            operator,
            props,
            inputs,
            span,
        })
    }

    fn rule(&self, p: Pair<'i, Rule>) -> Result<RuleItem, Box<Diagnostic>> {
        let span = self.span(&p);
        let mut kids = self.kids(&p);
        let name = self.ident(&kids.need_rule(Rule::ident)?);
        let mut params = Vec::new();
        while let Some(rp) = kids.take(Rule::rule_param) {
            let mut parts = self.kids(&rp);
            let pname = self.ident(&parts.need("a parameter name")?);
            let ty = self.path(&parts.need("a parameter type")?);
            params.push(RuleParam {
                name: pname,
                ty,
                span: self.span(&rp),
            });
        }
        let body = self.block(kids.need_rule(Rule::block)?)?;
        Ok(RuleItem {
            name,
            params,
            body,
            span,
        })
    }
}

/// `a and b and c` → `[a, b, c]`, at any nesting of `and`: a pattern's constraints are a
/// conjunction either way.
fn split_and(e: Expr, out: &mut Vec<Expr>) {
    match e.kind {
        ExprKind::Binary(BinaryOp::And, l, r) => {
            split_and(*l, out);
            split_and(*r, out);
        }
        kind => out.push(Expr { kind, span: e.span }),
    }
}
