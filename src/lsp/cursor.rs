//! What the cursor is on: the name at a byte offset of a parsed recipe, with the role the syntax
//! gives it (a callee, an argument name, a rule parameter's type, a value, a declaration, a
//! `use`) and, for a variable, the binding in scope there. Hover and definition resolve the
//! answer with [`crate::recipe::resolve`], so they mean by a name what the checker means.
//!
//! Variables are scoped as the checker scopes them: rule parameters in the rule's body, a `let`
//! from the next statement to the end of its block, a `for each` variable in its body.

use crate::recipe::ast::{self, ApplyMode, Block, Expr, ExprKind, Item, Stmt};
use crate::recipe::Span;

/// The name under the cursor and what it is.
#[derive(Clone, Copy, Debug)]
pub struct Found<'a> {
    pub target: Target<'a>,
    /// The word under the cursor.
    pub span: Span,
}

#[derive(Clone, Copy, Debug)]
pub enum Target<'a> {
    /// A segment before the last of `path`: the module alias the first `depth + 1` segments
    /// lead to.
    Module {
        path: &'a ast::Path,
        depth: usize,
    },
    /// What a call or `apply` names: a rule, transformation, built-in or script function.
    Callee(&'a ast::Path),
    /// A named argument `name = …` of a call to `callee`.
    ArgName {
        callee: &'a ast::Path,
        name: &'a ast::Ident,
    },
    /// A rule parameter's type: a node class, a value type or a pattern.
    Type(&'a ast::Path),
    /// A name used as a value: a variable (`local` is its binding), a parameter or a pattern.
    Value {
        path: &'a ast::Path,
        local: Option<&'a ast::Ident>,
    },
    /// A variable where it is bound.
    Binding(&'a ast::Ident),
    /// A parameter named by `choose`.
    Chosen(&'a ast::Ident),
    Rule(&'a ast::Rule),
    Pattern(&'a ast::PatternDecl),
    Param(&'a ast::Param),
    Use(&'a ast::Use),
}

/// The name at `offset` of `file` (a cursor just after a word is on it).
pub fn at(file: &ast::File, offset: usize) -> Option<Found<'_>> {
    let mut w = Walker {
        offset,
        scope: Vec::new(),
    };
    file.items.iter().find_map(|item| w.item(item))
}

fn on(span: Span, offset: usize) -> bool {
    span.start <= offset && offset <= span.end
}

struct Walker<'a> {
    offset: usize,
    /// Variables in scope, innermost last.
    scope: Vec<&'a ast::Ident>,
}

impl<'a> Walker<'a> {
    fn found(&self, target: Target<'a>, span: Span) -> Option<Found<'a>> {
        Some(Found { target, span })
    }

    /// `path` when the cursor is on it: a module segment, or `last` for its last segment.
    fn path(&self, path: &'a ast::Path, last: impl FnOnce() -> Target<'a>) -> Option<Found<'a>> {
        if !on(path.span, self.offset) {
            return None;
        }
        let (i, seg) = (path.segments.iter().enumerate()).find(|(_, s)| on(s.span, self.offset))?;
        if i + 1 < path.segments.len() {
            self.found(Target::Module { path, depth: i }, seg.span)
        } else {
            self.found(last(), seg.span)
        }
    }

    fn ident(&self, ident: &'a ast::Ident, target: Target<'a>) -> Option<Found<'a>> {
        on(ident.span, self.offset).then_some(Found {
            target,
            span: ident.span,
        })
    }

    fn item(&mut self, item: &'a Item) -> Option<Found<'a>> {
        match item {
            Item::Use(u) => {
                let target = match &u.target {
                    ast::UseTarget::Std(p) => p.span,
                    ast::UseTarget::File(s) => s.span,
                };
                let alias = u.alias.as_ref().map(|a| a.span);
                [Some(target), alias]
                    .into_iter()
                    .flatten()
                    .find(|s| on(*s, self.offset))
                    .and_then(|s| self.found(Target::Use(u), s))
            }
            Item::Param(p) => self.ident(&p.name, Target::Param(p)).or_else(|| {
                let domain = p.domain.iter().flat_map(|d| match d {
                    ast::Domain::List(items, _) => items.iter().collect::<Vec<_>>(),
                    ast::Domain::Range { lo, hi, .. } | ast::Domain::Pow2 { lo, hi, .. } => {
                        vec![lo, hi]
                    }
                });
                let exprs: Vec<&'a Expr> = domain
                    .chain(p.default.iter())
                    .chain(p.constraint.iter())
                    .collect();
                exprs.into_iter().find_map(|e| self.expr(e))
            }),
            Item::Choose(c) => (c.params.iter()).find_map(|i| self.ident(i, Target::Chosen(i))),
            Item::Pattern(p) => self.ident(&p.name, Target::Pattern(p)),
            Item::Rule(r) | Item::Main(r) => {
                if !on(r.span, self.offset) {
                    return None;
                }
                if let Some(f) = self.ident(&r.name, Target::Rule(r)) {
                    return Some(f);
                }
                let depth = self.scope.len();
                let mut found = None;
                for p in &r.params {
                    found = found
                        .or_else(|| self.ident(&p.name, Target::Binding(&p.name)))
                        .or_else(|| self.path(&p.ty, || Target::Type(&p.ty)));
                    self.scope.push(&p.name);
                }
                let found = found.or_else(|| self.block(&r.body));
                self.scope.truncate(depth);
                found
            }
        }
    }

    fn block(&mut self, b: &'a Block) -> Option<Found<'a>> {
        if !on(b.span, self.offset) {
            return None;
        }
        let depth = self.scope.len();
        let found = b.stmts.iter().find_map(|s| self.stmt(s));
        self.scope.truncate(depth);
        found
    }

    fn stmt(&mut self, s: &'a Stmt) -> Option<Found<'a>> {
        if let Stmt::Let { name, value, .. } = s {
            // The name is bound after its own statement, so it is pushed even when the cursor
            // is elsewhere: later statements of the block see it.
            let found = self
                .ident(name, Target::Binding(name))
                .or_else(|| self.expr(value));
            self.scope.push(name);
            return found;
        }
        if !on(s.span(), self.offset) {
            return None;
        }
        match s {
            Stmt::Call(c) => self.call(c),
            Stmt::Apply { target, mode, .. } => self
                .path(target, || Target::Callee(target))
                .or_else(|| match mode {
                    ApplyMode::At(e) => self.expr(e),
                    ApplyMode::Everywhere(_) | ApplyMode::Once(_) => None,
                }),
            Stmt::ForEach {
                var, iter, body, ..
            } => self
                .ident(var, Target::Binding(var))
                .or_else(|| self.expr(iter))
                .or_else(|| {
                    self.scope.push(var);
                    let found = self.block(body);
                    self.scope.pop();
                    found
                }),
            Stmt::Try { body, .. } | Stmt::Unsafe { body, .. } => self.block(body),
            Stmt::First { alternatives, .. } => alternatives.iter().find_map(|b| self.block(b)),
            Stmt::Repeat { max, body, .. } => self.expr(max).or_else(|| self.block(body)),
            Stmt::If {
                cond,
                then,
                otherwise,
                ..
            } => self
                .expr(cond)
                .or_else(|| self.block(then))
                .or_else(|| otherwise.as_ref().and_then(|b| self.block(b))),
            Stmt::Expect { cond, .. } => self.expr(cond),
            Stmt::Print { args, .. } => args.iter().find_map(|a| self.expr(a)),
            Stmt::Note { text, .. } => self.expr(text),
            Stmt::Let { .. } => None,
        }
    }

    fn call(&mut self, c: &'a ast::Call) -> Option<Found<'a>> {
        if !on(c.span, self.offset) {
            return None;
        }
        self.path(&c.callee, || Target::Callee(&c.callee))
            .or_else(|| {
                c.args.iter().find_map(|a| {
                    (a.name.as_ref())
                        .and_then(|n| {
                            self.ident(
                                n,
                                Target::ArgName {
                                    callee: &c.callee,
                                    name: n,
                                },
                            )
                        })
                        .or_else(|| self.expr(&a.value))
                })
            })
    }

    fn expr(&mut self, e: &'a Expr) -> Option<Found<'a>> {
        if !on(e.span, self.offset) {
            return None;
        }
        match &e.kind {
            ExprKind::Name(path) => {
                let local = match path.segments.as_slice() {
                    [one] => self
                        .scope
                        .iter()
                        .rev()
                        .find(|v| v.name == one.name)
                        .copied(),
                    _ => None,
                };
                self.path(path, || Target::Value { path, local })
            }
            ExprKind::List(items) => items.iter().find_map(|i| self.expr(i)),
            ExprKind::Field(base, _) => self.expr(base),
            ExprKind::Index(base, index) => self.expr(base).or_else(|| self.expr(index)),
            ExprKind::Call(c) => self.call(c),
            ExprKind::Unary(_, inner) => self.expr(inner),
            ExprKind::Binary(_, a, b) => self.expr(a).or_else(|| self.expr(b)),
            ExprKind::Int(_)
            | ExprKind::Float(_)
            | ExprKind::Bool(_)
            | ExprKind::Str(_)
            | ExprKind::Wildcard => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::recipe::{parse, FileId};

    const SRC: &str = "recipe \"t\" version \"0.1.0\"\nuse std::loops\nparam tile: int = 4\nrule go(m: map) {\n  let n = params(m)\n  MapTiling(m, tiles = [tile, n])\n  loops::all(tile)\n}\nmain {\n  apply go everywhere\n}\n";

    /// `word: what` for the first occurrence of `needle` (the cursor one byte into it).
    fn target_at(needle: &str) -> String {
        let file = parse(FileId(0), SRC).expect("parses");
        let offset = SRC.find(needle).expect("needle") + 1;
        let found = at(&file, offset).expect("something under the cursor");
        let word = &SRC[found.span.start..found.span.end];
        let what = match found.target {
            Target::Module { depth, .. } => format!("module {depth}"),
            Target::Callee(p) => format!("callee {}", p.text()),
            Target::ArgName { callee, name } => format!("arg {}.{}", callee.text(), name.name),
            Target::Type(p) => format!("type {}", p.text()),
            Target::Value { path, local } => {
                format!("value {} local={}", path.text(), local.is_some())
            }
            Target::Binding(i) => format!("binding {}", i.name),
            Target::Chosen(i) => format!("chosen {}", i.name),
            Target::Rule(r) => format!("rule {}", r.name.name),
            Target::Pattern(p) => format!("pattern {}", p.name.name),
            Target::Param(p) => format!("param {}", p.name.name),
            Target::Use(_) => "use".to_string(),
        };
        format!("{word}: {what}")
    }

    #[test]
    fn names_are_found_with_their_role_and_scope() {
        let cases = [
            ("MapTiling", "MapTiling: callee MapTiling"),
            ("tiles", "tiles: arg MapTiling.tiles"),
            ("tile,", "tile: value tile local=false"),
            ("n]", "n: value n local=true"),
            ("m)", "m: value m local=true"),
            ("map)", "map: type map"),
            ("loops::all", "loops: module 0"),
            ("all(", "all: callee loops::all"),
            ("go ", "go: callee go"),
            ("go(", "go: rule go"),
            ("std::loops", "std::loops: use"),
            ("tile:", "tile: param tile"),
            ("n =", "n: binding n"),
        ];
        for (needle, expected) in cases {
            assert_eq!(target_at(needle), expected, "at {needle:?}");
        }
    }
}
