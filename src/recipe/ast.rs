//! The syntax tree of one recipe file. Every node carries the byte span it was parsed from, so
//! the checker, the interpreter and the formatter can point at exactly what the user wrote.

use super::diag::Span;

/// One parsed file (a recipe or a module).
#[derive(Clone, Debug, PartialEq)]
pub struct File {
    pub header: Option<Header>,
    pub items: Vec<Item>,
    /// Every `#` comment, in source order (the formatter puts them back).
    pub comments: Vec<Comment>,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Comment {
    /// The text after `#`, without the line break.
    pub text: String,
    /// A blank line separates it from what comes before (the author's paragraphs, which the
    /// formatter keeps).
    pub blank_before: bool,
    /// Code precedes the comment on its line (`stmt  # why`): the formatter keeps it there
    /// instead of on a line of its own.
    pub trailing: bool,
    pub span: Span,
}

/// `recipe "NAME" version "X.Y.Z"` and an optional `requires dmove "RANGE"`.
#[derive(Clone, Debug, PartialEq)]
pub struct Header {
    pub name: Str,
    pub version: Str,
    pub requires: Option<Str>,
    pub span: Span,
}

/// A string literal (unescaped value).
#[derive(Clone, Debug, PartialEq)]
pub struct Str {
    pub value: String,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Ident {
    pub name: String,
    pub span: Span,
}

/// `a`, `cpu::fuse`, `std::cpu::fuse`.
#[derive(Clone, Debug, PartialEq)]
pub struct Path {
    pub segments: Vec<Ident>,
    pub span: Span,
}

impl Path {
    /// `a::b::c`.
    pub fn text(&self) -> String {
        (self.segments.iter())
            .map(|s| s.name.as_str())
            .collect::<Vec<_>>()
            .join("::")
    }

    /// The last segment.
    pub fn last(&self) -> &Ident {
        self.segments.last().expect("a path has a segment")
    }
}

// A file has a handful of items, built once: boxing the large variants would buy nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Clone, Debug, PartialEq)]
pub enum Item {
    Use(Use),
    Param(Param),
    Choose(Choose),
    Pattern(PatternDecl),
    Rule(Rule),
    /// `main { … }`: a rule named `main` without parameters, so a module's pipeline is called
    /// like any rule (`cpu::main()`).
    Main(Rule),
}

impl Item {
    /// The whole item, keyword included.
    pub fn span(&self) -> Span {
        match self {
            Item::Use(u) => u.span,
            Item::Param(p) => p.span,
            Item::Choose(c) => c.span,
            Item::Pattern(p) => p.span,
            Item::Rule(r) | Item::Main(r) => r.span,
        }
    }
}

/// One part of an interactive session's input (`dmove repl`): a declaration or a statement.
// A handful per input, moved once into the session: boxing the items would buy nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Clone, Debug, PartialEq)]
pub enum Entry {
    Item(Item),
    Stmt(Stmt),
}

/// `use std::cpu`, `use std::cpu as c`, `use "./common.recipe" as common`.
#[derive(Clone, Debug, PartialEq)]
pub struct Use {
    pub target: UseTarget,
    pub alias: Option<Ident>,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq)]
pub enum UseTarget {
    /// A module of the standard library, `std::…`.
    Std(Path),
    /// A file, relative to the file that uses it.
    File(Str),
}

/// `param NAME: TYPE in DOMAIN = DEFAULT where CONSTRAINT`.
#[derive(Clone, Debug, PartialEq)]
pub struct Param {
    pub name: Ident,
    pub ty: ParamType,
    pub domain: Option<Domain>,
    pub default: Option<Expr>,
    pub constraint: Option<Expr>,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq)]
pub enum ParamType {
    Int(Span),
    Float(Span),
    Bool(Span),
    /// `enum("a", "b")`.
    Enum(Vec<Str>, Span),
}

#[derive(Clone, Debug, PartialEq)]
pub enum Domain {
    /// `in [a, b, c]`.
    List(Vec<Expr>, Span),
    /// `in lo..hi` (inclusive).
    Range { lo: Expr, hi: Expr, span: Span },
    /// `in pow2(lo..hi)`: the powers of two from `lo` to `hi`, inclusive.
    Pow2 { lo: Expr, hi: Expr, span: Span },
}

/// `choose a, b by dmd`.
#[derive(Clone, Debug, PartialEq)]
pub struct Choose {
    pub params: Vec<Ident>,
    pub by: ChooseBy,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq)]
pub enum ChooseBy {
    Dmd(Span),
    /// The cost model's time on this machine (`analysis::cost`).
    Estimate(Span),
    /// `bench(reps = K)`; `reps` is optional.
    Bench {
        reps: Option<Expr>,
        span: Span,
    },
    Fixed(Span),
}

/// `pattern NAME { captures, edges, where … }`.
#[derive(Clone, Debug, PartialEq)]
pub struct PatternDecl {
    pub name: Ident,
    pub captures: Vec<CaptureDecl>,
    pub edges: Vec<EdgeChain>,
    /// Each `where` clause, split at `and`.
    pub constraints: Vec<Expr>,
    pub span: Span,
}

/// `NAME = KIND OPERATOR? [PROPS]? (INPUTS)?`.
#[derive(Clone, Debug, PartialEq)]
pub struct CaptureDecl {
    pub name: Ident,
    pub kind: CaptureKind,
    /// `op MatMul`: the operator; `None` for any library node (and for other kinds).
    pub operator: Option<Ident>,
    pub props: Vec<Prop>,
    /// `op Add(mm, _)`: for each input position, the capture whose output it reads (`None` for
    /// `_`). `None` when no parentheses were written.
    pub inputs: Option<Vec<Option<Ident>>>,
    pub span: Span,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CaptureKind {
    Op,
    Map,
    Tasklet,
    Data,
    Node,
}

impl CaptureKind {
    pub fn keyword(self) -> &'static str {
        match self {
            CaptureKind::Op => "op",
            CaptureKind::Map => "map",
            CaptureKind::Tasklet => "tasklet",
            CaptureKind::Data => "data",
            CaptureKind::Node => "node",
        }
    }
}

/// `key = value` inside `[…]`; `_` is written as [`ExprKind::Wildcard`].
#[derive(Clone, Debug, PartialEq)]
pub struct Prop {
    pub key: Ident,
    pub value: Expr,
    pub span: Span,
}

/// `a -> b -> c`.
#[derive(Clone, Debug, PartialEq)]
pub struct EdgeChain {
    pub nodes: Vec<Ident>,
    pub span: Span,
}

/// `rule NAME(PARAMS) { BODY }`.
#[derive(Clone, Debug, PartialEq)]
pub struct Rule {
    pub name: Ident,
    pub params: Vec<RuleParam>,
    pub body: Block,
    pub span: Span,
}

/// `m: matmul_add`, `m: map`, `n: int`; the type is a node class, a value type or a pattern path
/// (resolved by the checker).
#[derive(Clone, Debug, PartialEq)]
pub struct RuleParam {
    pub name: Ident,
    pub ty: Path,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Block {
    pub stmts: Vec<Stmt>,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq)]
pub enum Stmt {
    /// A transformation or rule call: `MapTiling(m, tiles = [16, 0])`, `cpu::schedule(m)`.
    Call(Call),
    /// `apply R everywhere | once | at X`.
    Apply {
        target: Path,
        mode: ApplyMode,
        span: Span,
    },
    /// `for each x in EXPR { … }`.
    ForEach {
        var: Ident,
        iter: Expr,
        body: Block,
        span: Span,
    },
    Try {
        body: Block,
        span: Span,
    },
    /// `first { … } or { … } or { … }`.
    First {
        alternatives: Vec<Block>,
        span: Span,
    },
    /// `repeat (max N) { … } until fixpoint`.
    Repeat {
        max: Expr,
        body: Block,
        span: Span,
    },
    /// `if C { … } else if C { … } else { … }`: `otherwise` holds a nested `If` for `else if`.
    If {
        cond: Expr,
        then: Block,
        otherwise: Option<Block>,
        span: Span,
    },
    Let {
        name: Ident,
        value: Expr,
        span: Span,
    },
    /// `expect C` or `expect C, "message"`.
    Expect {
        cond: Expr,
        message: Option<Str>,
        span: Span,
    },
    /// `unsafe(legality, numerics) because "REASON" { … }`.
    Unsafe {
        layers: Vec<Ident>,
        reason: Str,
        body: Block,
        span: Span,
    },
    /// `print a, b, …`.
    Print {
        args: Vec<Expr>,
        span: Span,
    },
    /// `note EXPR`: recorded in the report and the lock.
    Note {
        text: Expr,
        span: Span,
    },
}

impl Stmt {
    pub fn span(&self) -> Span {
        match self {
            Stmt::Call(c) => c.span,
            Stmt::Apply { span, .. }
            | Stmt::ForEach { span, .. }
            | Stmt::Try { span, .. }
            | Stmt::First { span, .. }
            | Stmt::Repeat { span, .. }
            | Stmt::If { span, .. }
            | Stmt::Let { span, .. }
            | Stmt::Expect { span, .. }
            | Stmt::Unsafe { span, .. }
            | Stmt::Print { span, .. }
            | Stmt::Note { span, .. } => *span,
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub enum ApplyMode {
    Everywhere(Span),
    Once(Span),
    At(Expr),
}

/// `callee(args)`: a transformation, rule or built-in function, resolved by the checker.
#[derive(Clone, Debug, PartialEq)]
pub struct Call {
    pub callee: Path,
    pub args: Vec<Arg>,
    pub span: Span,
}

/// A positional (`m`) or named (`tiles = [16, 0]`) argument.
#[derive(Clone, Debug, PartialEq)]
pub struct Arg {
    pub name: Option<Ident>,
    pub value: Expr,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Expr {
    pub kind: ExprKind,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq)]
pub enum ExprKind {
    Int(i64),
    Float(f64),
    Bool(bool),
    Str(String),
    List(Vec<Expr>),
    /// A variable, parameter or module parameter: `t`, `cpu::tile`; also bare words that the
    /// context gives meaning to (`transient`, `f32`, `sequential` in pattern properties).
    Name(Path),
    /// `_` (pattern properties and inputs only).
    Wildcard,
    /// `m.mm`, `baseline.dmd`.
    Field(Box<Expr>, Ident),
    /// `l[i]`.
    Index(Box<Expr>, Box<Expr>),
    Call(Call),
    Unary(UnaryOp, Box<Expr>),
    Binary(BinaryOp, Box<Expr>, Box<Expr>),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UnaryOp {
    Neg,
    Not,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BinaryOp {
    Add,
    Sub,
    Mul,
    Div,
    Rem,
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
    And,
    Or,
}

impl BinaryOp {
    pub fn symbol(self) -> &'static str {
        match self {
            BinaryOp::Add => "+",
            BinaryOp::Sub => "-",
            BinaryOp::Mul => "*",
            BinaryOp::Div => "/",
            BinaryOp::Rem => "%",
            BinaryOp::Eq => "==",
            BinaryOp::Ne => "!=",
            BinaryOp::Lt => "<",
            BinaryOp::Le => "<=",
            BinaryOp::Gt => ">",
            BinaryOp::Ge => ">=",
            BinaryOp::And => "and",
            BinaryOp::Or => "or",
        }
    }

    /// Binding strength: `or` 1, `and` 2, comparisons 3, `+ -` 4, `* / %` 5.
    pub fn precedence(self) -> u8 {
        match self {
            BinaryOp::Or => 1,
            BinaryOp::And => 2,
            BinaryOp::Eq
            | BinaryOp::Ne
            | BinaryOp::Lt
            | BinaryOp::Le
            | BinaryOp::Gt
            | BinaryOp::Ge => 3,
            BinaryOp::Add | BinaryOp::Sub => 4,
            BinaryOp::Mul | BinaryOp::Div | BinaryOp::Rem => 5,
        }
    }
}
