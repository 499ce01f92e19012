//! The session as a recipe file: what `dmove repl`'s `:save` writes.

use super::{Item, Session};
use crate::recipe::ast::{self, Block, File, Rule};
use crate::recipe::{format, Span};

impl Session {
    /// The declarations and statements in effect (undone inputs excluded) as one canonically
    /// formatted recipe named `name` (the header of the `--recipe` the session started from is
    /// kept instead when there was one). Comments typed in the session are not kept.
    pub fn recipe(&self, name: &str) -> String {
        let nowhere = Span::default();
        let header = (self.header.clone()).unwrap_or_else(|| super::default_header(name));
        let mut items = self.frame.decls.clone();
        items.push(Item::Main(Rule {
            name: ast::Ident {
                name: "main".into(),
                span: nowhere,
            },
            params: Vec::new(),
            body: Block {
                stmts: self.frame.stmts.clone(),
                span: nowhere,
            },
            span: nowhere,
        }));
        format(&File {
            header: Some(header),
            items,
            comments: Vec::new(),
            span: nowhere,
        })
    }
}
