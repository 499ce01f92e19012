//! Text → program. Syntax is checked by the pest grammar; this module checks meaning (names of
//! dtypes, schedules and wcrs, node ids, scopes, constant sizes) and reports each problem at the
//! span of the text that causes it.

use super::error::{from_pest, ErrorKind, Fault, ParseError};
use super::expr::{child, descend, float_literal, int_literal, sym_expr, texpr};
use super::grammar::{IrParser, Rule};
use super::lex::unescape;
use super::values::{element_count, from_hex, from_list};
use crate::ir::data::{DType, DataDesc, DataKind, Storage};
use crate::ir::graph::{Graph, Program};
use crate::ir::node::{
    Attr, LibraryNode, MapNode, MapParam, Memlet, Node, NodeId, NodeKind, Schedule, Tasklet, Wcr,
};
use crate::ir::subset::{Dim, Range, Subset};
use pest::iterators::{Pair, Pairs};
use pest::Parser;
use std::collections::BTreeMap;
use std::ops::Range as Bytes;

/// A parsed program. Constants printed in elided form (`sha256:…`) have no value in
/// `program.constants`; their digests are in `elided`, keyed by container name.
#[derive(Clone, Debug, PartialEq)]
pub struct Parsed {
    pub program: Program,
    pub elided: BTreeMap<String, String>,
}

/// Parses a whole program; errors name the source `<ir>`.
pub fn parse(src: &str) -> Result<Parsed, ParseError> {
    parse_named("<ir>", src)
}

/// Parses a whole program read from `name` (a file path, shown in diagnostics).
pub fn parse_named(name: &str, src: &str) -> Result<Parsed, ParseError> {
    parse_rule(Rule::program, src)
        .and_then(|pair| Reader::default().program(pair))
        .map_err(|f| f.into_error(name, src))
}

/// Runs the grammar from `rule` and returns its single top-level pair.
pub fn parse_rule(rule: Rule, src: &str) -> Result<Pair<'_, Rule>, Fault> {
    // Richer "expected …" lists (literal tokens as well as rules); a process-wide pest switch.
    pest::set_error_detail(true);
    let mut pairs = IrParser::parse(rule, src).map_err(|e| from_pest(&e, src))?;
    pairs.next().ok_or_else(|| Fault {
        kind: ErrorKind::Syntax {
            expected: "input".into(),
        },
        at: 0..0,
        previous: None,
    })
}

fn bytes(p: &Pair<Rule>) -> Bytes<usize> {
    p.as_span().start()..p.as_span().end()
}

/// The text of a `name` (bare identifier or quoted string) or `string` pair.
fn text(p: &Pair<Rule>) -> Result<String, Fault> {
    match p.as_rule() {
        Rule::name | Rule::src_conn | Rule::dst_conn => match p.clone().into_inner().next() {
            Some(inner) => text(&inner),
            None => Ok(p.as_str().to_string()),
        },
        Rule::string => {
            let body = p.clone().into_inner().next();
            let (src, start) = body.map_or(("", p.as_span().start()), |b| {
                (b.as_str(), b.as_span().start())
            });
            unescape(src).map_err(|e| {
                let at = start + e.offset..start + e.offset + e.len;
                Fault {
                    kind: ErrorKind::Invalid {
                        what: "string escape",
                        text: src
                            .get(e.offset..e.offset + e.len)
                            .unwrap_or("")
                            .to_string(),
                        why: e.why,
                    },
                    at,
                    previous: None,
                }
            })
        }
        _ => Ok(p.as_str().to_string()),
    }
}

/// Looks a keyword-like identifier up with `from_name`, or reports the accepted spellings.
fn lookup<T>(
    p: &Pair<Rule>,
    what: &'static str,
    from_name: fn(&str) -> Option<T>,
    all: &[&str],
) -> Result<T, Fault> {
    from_name(p.as_str()).ok_or_else(|| Fault::unknown(what, p.as_span(), all))
}

/// The number of an `n<digits>` id. The largest `u32` is refused: it would leave the program
/// no fresh id after it.
fn node_id(p: &Pair<Rule>) -> Result<u32, Fault> {
    p.as_str()
        .get(1..)
        .and_then(|digits| digits.parse::<u32>().ok())
        .filter(|n| *n < u32::MAX)
        .ok_or_else(|| Fault::invalid("node id", p.as_span(), "must be below n4294967295"))
}

fn usize_of(p: &Pair<Rule>) -> Result<usize, Fault> {
    p.as_str()
        .parse()
        .map_err(|_| Fault::invalid("dimension", p.as_span(), "too large"))
}

/// Accumulates declarations while walking the tree.
#[derive(Default)]
struct Reader {
    /// Where every node id is declared (collected before graphs are built, for scope errors).
    ids: BTreeMap<u32, Bytes<usize>>,
    /// Where each declared name is, per kind of declaration, to report duplicates.
    declared: BTreeMap<(&'static str, String), Bytes<usize>>,
    elided: BTreeMap<String, String>,
}

impl Reader {
    fn program(mut self, pair: Pair<Rule>) -> Result<Parsed, Fault> {
        self.collect_ids(&pair)?;
        let mut p = Program::new(String::new());
        for item in pair.into_inner() {
            match item.as_rule() {
                Rule::header => p.name = text(&child(&mut item.clone().into_inner(), &item)?)?,
                Rule::symbol_decl => self.symbol(item, &mut p)?,
                Rule::data_decl => self.data(item, &mut p)?,
                Rule::signature => self.signature(item, &mut p)?,
                Rule::const_decl => self.constant(item, &mut p)?,
                Rule::graph => {
                    p.graph = self.scope(child(&mut item.clone().into_inner(), &item)?, 0)?
                }
                _ => {}
            }
        }
        p.reserve_ids();
        Ok(Parsed {
            program: p,
            elided: self.elided,
        })
    }

    /// Records every node id in the text, refusing duplicates anywhere in the program.
    fn collect_ids(&mut self, pair: &Pair<Rule>) -> Result<(), Fault> {
        for node in pair
            .clone()
            .into_inner()
            .flatten()
            .filter(|p| p.as_rule() == Rule::node)
        {
            let id_pair = child(&mut node.clone().into_inner(), &node)?;
            let id = node_id(&id_pair)?;
            if let Some(prev) = self.ids.insert(id, bytes(&id_pair)) {
                let kind = ErrorKind::Duplicate {
                    what: "node id",
                    name: id_pair.as_str().to_string(),
                };
                return Err(Fault::new(kind, id_pair.as_span()).with_previous(prev));
            }
        }
        Ok(())
    }

    /// Registers a declaration of `what` named `name`, refusing a second one.
    fn declare(&mut self, what: &'static str, name: &str, at: &Pair<Rule>) -> Result<(), Fault> {
        if let Some(prev) = self.declared.insert((what, name.to_string()), bytes(at)) {
            let kind = ErrorKind::Duplicate {
                what,
                name: name.to_string(),
            };
            return Err(Fault::new(kind, at.as_span()).with_previous(prev));
        }
        Ok(())
    }

    fn symbol(&mut self, item: Pair<Rule>, p: &mut Program) -> Result<(), Fault> {
        let mut it = item.clone().into_inner();
        let name = child(&mut it, &item)?;
        self.declare("symbol", name.as_str(), &name)?;
        let value = it.next().map(|v| int_literal(v.as_str(), &v)).transpose()?;
        p.symbols.insert(name.as_str().to_string(), value);
        Ok(())
    }

    fn data(&mut self, item: Pair<Rule>, p: &mut Program) -> Result<(), Fault> {
        let mut it = item.clone().into_inner();
        let name_pair = child(&mut it, &item)?;
        let name = text(&name_pair)?;
        self.declare("data", &name, &name_pair)?;
        let dtype = dtype(&child(&mut it, &item)?)?;
        let shape = child(&mut it, &item)?
            .into_inner()
            .map(|e| sym_expr(e, 0))
            .collect::<Result<Vec<_>, _>>()?;
        let kind_pair = child(&mut it, &item)?;
        let kinds = ["input", "output", "transient", "const"];
        let kind = lookup(&kind_pair, "data kind", DataKind::from_name, &kinds)?;
        let storage = match it.next() {
            Some(s) => lookup(
                &s,
                "storage",
                Storage::from_name,
                &["global", "local", "register"],
            )?,
            None => Storage::Global,
        };
        let mut desc = DataDesc::new(dtype, shape, kind);
        desc.storage = storage;
        p.data.insert(name, desc);
        Ok(())
    }

    fn signature(&mut self, item: Pair<Rule>, p: &mut Program) -> Result<(), Fault> {
        self.declare("declaration", "signature", &item)?;
        let mut it = item.clone().into_inner();
        let names = |list: Pair<Rule>| {
            list.into_inner()
                .map(|n| text(&n))
                .collect::<Result<Vec<_>, _>>()
        };
        p.inputs = names(child(&mut it, &item)?)?.into();
        p.outputs = names(child(&mut it, &item)?)?.into();
        Ok(())
    }

    fn constant(&mut self, item: Pair<Rule>, p: &mut Program) -> Result<(), Fault> {
        let mut it = item.clone().into_inner();
        let name_pair = child(&mut it, &item)?;
        let name = text(&name_pair)?;
        self.declare("constant", &name, &name_pair)?;
        let dtype = dtype(&child(&mut it, &item)?)?;
        let dims = child(&mut it, &item)?;
        let shape = dims
            .clone()
            .into_inner()
            .map(|d| usize_of(&d))
            .collect::<Result<Vec<_>, _>>()?;
        let value = child(&mut it, &item)?;
        match value.as_rule() {
            Rule::value_list => {
                p.constants
                    .insert(name, from_list(dtype, shape, value)?.into());
            }
            Rule::blob_hex => {
                p.constants
                    .insert(name, from_hex(dtype, shape, value)?.into());
            }
            _ => {
                let mut parts = value.clone().into_inner();
                let sha = child(&mut parts, &value)?;
                let digest = sha.clone().into_inner().next().map_or("", |h| h.as_str());
                if digest.len() != 64 {
                    return Err(Fault::invalid(
                        "sha256 digest",
                        sha.as_span(),
                        "expected 64 hex digits",
                    ));
                }
                let count = child(&mut parts, &value)?;
                if usize_of(&count)? != element_count(&shape, &dims)? {
                    return Err(Fault::invalid(
                        "value count",
                        count.as_span(),
                        "does not match the shape",
                    ));
                }
                self.elided.insert(name, digest.to_ascii_lowercase());
            }
        }
        Ok(())
    }

    /// Builds one scope: nodes first, then its edges, whose endpoints must be in this scope.
    fn scope(&mut self, pair: Pair<Rule>, depth: usize) -> Result<Graph, Fault> {
        let depth = descend(depth, &pair)?;
        let mut g = Graph::default();
        let mut here = BTreeMap::new();
        let mut edges = Vec::new();
        for item in pair.into_inner() {
            if item.as_rule() == Rule::edge {
                edges.push(item);
                continue;
            }
            let node = self.node(item, depth)?;
            let id = node.id.0;
            here.insert(id, g.add_node(node));
        }
        for e in edges {
            let mut it = e.clone().into_inner();
            let src = self.endpoint(&child(&mut it, &e)?, &here)?;
            let dst = self.endpoint(&child(&mut it, &e)?, &here)?;
            let memlet = memlet(it, &e)?;
            g.add_edge(src, dst, memlet);
        }
        Ok(g)
    }

    fn endpoint(
        &self,
        p: &Pair<Rule>,
        here: &BTreeMap<u32, petgraph::stable_graph::NodeIndex>,
    ) -> Result<petgraph::stable_graph::NodeIndex, Fault> {
        let id = node_id(p)?;
        here.get(&id)
            .copied()
            .ok_or_else(|| match self.ids.get(&id) {
                Some(decl) => Fault::new(ErrorKind::CrossScope(p.as_str().into()), p.as_span())
                    .with_previous(decl.clone()),
                None => Fault::new(ErrorKind::UnknownNode(p.as_str().into()), p.as_span()),
            })
    }

    fn node(&mut self, item: Pair<Rule>, depth: usize) -> Result<Node, Fault> {
        let mut it = item.clone().into_inner();
        let id = NodeId(node_id(&child(&mut it, &item)?)?);
        let body = child(&mut it, &item)?;
        let mut parts = body.clone().into_inner();
        let (label, kind) = match body.as_rule() {
            Rule::access => {
                let data = text(&child(&mut parts, &body)?)?;
                let label = parts.next().map(|l| text(&l)).transpose()?;
                (
                    label.unwrap_or_else(|| data.clone()),
                    NodeKind::Access(data),
                )
            }
            Rule::library => {
                let label = text(&child(&mut parts, &body)?)?;
                let op = text(&child(&mut parts, &body)?)?;
                let attrs = parts.next().map(attrs).transpose()?.unwrap_or_default();
                (label, NodeKind::Library(LibraryNode { op, attrs }))
            }
            Rule::map => {
                let label = text(&child(&mut parts, &body)?)?;
                let params = child(&mut parts, &body)?
                    .into_inner()
                    .map(param)
                    .collect::<Result<Vec<_>, _>>()?;
                let schedules = ["sequential", "parallel", "vector", "unrolled"];
                let schedule = lookup(
                    &child(&mut parts, &body)?,
                    "schedule",
                    Schedule::from_name,
                    &schedules,
                )?;
                let mut next = child(&mut parts, &body)?;
                let mut min_work = 0;
                if next.as_rule() == Rule::min_work {
                    let value = child(&mut next.clone().into_inner(), &next)?;
                    min_work = value
                        .as_str()
                        .parse()
                        .map_err(|_| Fault::invalid("min_work", value.as_span(), "too large"))?;
                    next = child(&mut parts, &body)?;
                }
                let body_graph = self.scope(next, depth)?;
                let map = MapNode {
                    params,
                    schedule,
                    min_work,
                    body: body_graph,
                };
                (label, NodeKind::Map(map))
            }
            _ => {
                let label = text(&child(&mut parts, &body)?)?;
                let inputs = child(&mut parts, &body)?
                    .into_inner()
                    .map(|c| text(&c))
                    .collect::<Result<Vec<_>, _>>()?;
                let outputs = parts
                    .map(|a| {
                        let mut ai = a.clone().into_inner();
                        let conn = text(&child(&mut ai, &a)?)?;
                        Ok((conn, texpr(child(&mut ai, &a)?, depth)?))
                    })
                    .collect::<Result<Vec<_>, Fault>>()?;
                (label, NodeKind::Tasklet(Tasklet { inputs, outputs }))
            }
        };
        Ok(Node { id, label, kind })
    }
}

fn dtype(p: &Pair<Rule>) -> Result<DType, Fault> {
    let all: Vec<&str> = DType::ALL.iter().map(|d| d.name()).collect();
    lookup(p, "dtype", DType::from_name, &all)
}

fn param(p: Pair<Rule>) -> Result<MapParam, Fault> {
    let mut it = p.clone().into_inner();
    let name = text(&child(&mut it, &p)?)?;
    let r = child(&mut it, &p)?;
    let mut bounds = r.clone().into_inner().map(|e| sym_expr(e, 0));
    let start = bounds.next().transpose()?;
    let end = bounds.next().transpose()?;
    let step = bounds.next().transpose()?;
    let (Some(start), Some(end)) = (start, end) else {
        return Err(Fault::invalid("range", r.as_span(), "expected `start:end`"));
    };
    let mut range = Range::new(start, end);
    if let Some(step) = step {
        range.step = step;
    }
    Ok(MapParam { name, range })
}

fn attrs(block: Pair<Rule>) -> Result<BTreeMap<String, Attr>, Fault> {
    let mut out = BTreeMap::new();
    let mut seen: BTreeMap<String, Bytes<usize>> = BTreeMap::new();
    for a in block.into_inner() {
        let mut it = a.clone().into_inner();
        let key_pair = child(&mut it, &a)?;
        let key = text(&key_pair)?;
        if let Some(prev) = seen.insert(key.clone(), bytes(&key_pair)) {
            let kind = ErrorKind::Duplicate {
                what: "attribute",
                name: key,
            };
            return Err(Fault::new(kind, key_pair.as_span()).with_previous(prev));
        }
        let value = child(&mut it, &a)?;
        out.insert(key, attr_value(value)?);
    }
    Ok(out)
}

/// True when a number literal is a float (has a fraction, an exponent, or is nan/inf).
fn is_float(s: &str) -> bool {
    s.contains(['.', 'e', 'E', 'n', 'i'])
}

fn attr_value(v: Pair<Rule>) -> Result<Attr, Fault> {
    let int = |p: &Pair<Rule>| int_literal(p.as_str(), p);
    let float = |p: &Pair<Rule>| float_literal(p.as_str(), p);
    match v.as_rule() {
        Rule::string => Ok(Attr::Str(text(&v)?)),
        Rule::number if is_float(v.as_str()) => Ok(Attr::Float(float(&v)?)),
        Rule::number => Ok(Attr::Int(int(&v)?)),
        _ => {
            let mut items: Vec<Pair<Rule>> = v.clone().into_inner().collect();
            let declared = match items.first() {
                Some(t) if t.as_rule() == Rule::list_type => Some(match items.remove(0).as_str() {
                    "floats" => ListKind::Floats,
                    "strings" => ListKind::Strings,
                    _ => ListKind::Ints,
                }),
                _ => None,
            };
            let kind = match (declared, items.first()) {
                (Some(k), _) => k,
                (None, Some(first)) => ListKind::of(first),
                (None, None) => {
                    return Err(Fault::invalid(
                        "list",
                        v.as_span(),
                        "an empty list needs a type: `ints[]`, `floats[]` or `strings[]`",
                    ))
                }
            };
            if let Some(odd) = items.iter().find(|i| ListKind::of(i) != kind) {
                let want = match kind {
                    ListKind::Floats => "a float like `1.0`",
                    ListKind::Ints => "an integer",
                    ListKind::Strings => "a string like `\"Tanh\"`",
                };
                return Err(Fault::invalid(
                    "list element",
                    odd.as_span(),
                    format!("expected {want} like the rest of the list"),
                ));
            }
            match kind {
                ListKind::Floats => Ok(Attr::Floats(
                    items.iter().map(float).collect::<Result<_, _>>()?,
                )),
                ListKind::Ints => Ok(Attr::Ints(items.iter().map(int).collect::<Result<_, _>>()?)),
                ListKind::Strings => Ok(Attr::Strs(
                    items.iter().map(text).collect::<Result<_, _>>()?,
                )),
            }
        }
    }
}

/// The element type of an attribute list.
#[derive(Clone, Copy, PartialEq, Eq)]
enum ListKind {
    Ints,
    Floats,
    Strings,
}

impl ListKind {
    fn of(item: &Pair<Rule>) -> ListKind {
        match item.as_rule() {
            Rule::string => ListKind::Strings,
            _ if is_float(item.as_str()) => ListKind::Floats,
            _ => ListKind::Ints,
        }
    }
}

/// The memlet part of an edge: `[src ->] data subset [-> dst] [wcr w]`.
fn memlet(it: Pairs<Rule>, edge: &Pair<Rule>) -> Result<Memlet, Fault> {
    let mut data = None;
    let mut subset = Subset::default();
    let (mut src_conn, mut dst_conn, mut wcr) = (None, None, None);
    for part in it {
        match part.as_rule() {
            Rule::src_conn => src_conn = Some(text(&part)?),
            Rule::dst_conn => dst_conn = Some(text(&part)?),
            Rule::subset => subset = Subset(part.into_inner().map(dim).collect::<Result<_, _>>()?),
            Rule::wcr => {
                let w = child(&mut part.clone().into_inner(), &part)?;
                wcr = Some(lookup(
                    &w,
                    "wcr",
                    Wcr::from_name,
                    &["sum", "prod", "max", "min"],
                )?);
            }
            _ => data = Some(text(&part)?),
        }
    }
    let data = data.ok_or_else(|| Fault::invalid("edge", edge.as_span(), "missing container"))?;
    Ok(Memlet {
        data,
        subset,
        wcr,
        src_conn,
        dst_conn,
    })
}

fn dim(d: Pair<Rule>) -> Result<Dim, Fault> {
    let exprs = d
        .clone()
        .into_inner()
        .map(|e| sym_expr(e, 0))
        .collect::<Result<Vec<_>, _>>()?;
    let mut it = exprs.into_iter();
    Ok(match (it.next(), it.next(), it.next()) {
        (Some(start), Some(end), step) => {
            let mut r = Range::new(start, end);
            if let Some(step) = step {
                r.step = step;
            }
            Dim::Range(r)
        }
        (Some(i), None, _) => Dim::Index(i),
        (None, ..) => return Err(Fault::invalid("subset", d.as_span(), "empty dimension")),
    })
}
