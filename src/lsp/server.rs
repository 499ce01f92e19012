//! The server loop: one thread, one message at a time (recipes are small; checking one takes
//! milliseconds), over a [`Connection`] — stdio for `dmove lsp`, in memory in unit tests.
//!
//! The protocol's life cycle is followed to the letter: requests before `initialize` are
//! refused by [`Connection::initialize_start`], `shutdown` is answered and every later request
//! refused, `exit` ends the loop (an error when no `shutdown` came first, so the process exits
//! with status 1 as the protocol asks). A request the server does not implement gets
//! `MethodNotFound`, malformed parameters `InvalidParams`; a notification it does not know is
//! ignored. Should a handler ever panic, the request is answered with `InternalError` and the
//! session goes on.

use super::documents::{analyse, Documents};
use super::{completion, cursor, definition, diagnostics, hover, LspError};
use lsp_server::{Connection, ErrorCode, Message, Notification, Request, RequestId, Response};
use lsp_types::notification::{
    DidChangeTextDocument, DidCloseTextDocument, DidOpenTextDocument, Notification as _,
    PublishDiagnostics,
};
use lsp_types::request::{Completion, GotoDefinition, HoverRequest, Request as _};
use lsp_types::{
    CompletionOptions, CompletionParams, CompletionResponse, DidChangeTextDocumentParams,
    DidCloseTextDocumentParams, DidOpenTextDocumentParams, GotoDefinitionParams,
    GotoDefinitionResponse, Hover, HoverContents, HoverParams, HoverProviderCapability,
    InitializeResult, MarkupContent, MarkupKind, OneOf, PublishDiagnosticsParams,
    ServerCapabilities, ServerInfo, TextDocumentContentChangeEvent, TextDocumentSyncCapability,
    TextDocumentSyncKind, TextDocumentSyncOptions, Url,
};
use serde::de::DeserializeOwned;
use serde::Serialize;
use std::panic::{catch_unwind, AssertUnwindSafe};

/// What the server offers: full text synchronisation, diagnostics pushed on every change,
/// hover, completion and go to definition.
pub fn capabilities() -> ServerCapabilities {
    ServerCapabilities {
        text_document_sync: Some(TextDocumentSyncCapability::Options(
            TextDocumentSyncOptions {
                open_close: Some(true),
                change: Some(TextDocumentSyncKind::FULL),
                ..TextDocumentSyncOptions::default()
            },
        )),
        hover_provider: Some(HoverProviderCapability::Simple(true)),
        completion_provider: Some(CompletionOptions {
            trigger_characters: Some(vec![":".into(), "(".into(), ",".into()]),
            ..CompletionOptions::default()
        }),
        definition_provider: Some(OneOf::Left(true)),
        ..ServerCapabilities::default()
    }
}

/// Runs a whole session on `conn`: the handshake, then messages until `exit`.
pub fn run(conn: &Connection) -> Result<(), LspError> {
    let (id, _client) = conn.initialize_start()?;
    let result = InitializeResult {
        capabilities: capabilities(),
        server_info: Some(ServerInfo {
            name: "dmove".to_string(),
            version: Some(env!("CARGO_PKG_VERSION").to_string()),
        }),
    };
    send(conn, Response::new_ok(id, result))?;
    let mut server = Server {
        conn,
        documents: Documents::default(),
        shut_down: false,
    };
    for message in &conn.receiver {
        match message {
            Message::Request(req) => {
                let response = server.request(req);
                send(conn, response)?;
            }
            Message::Notification(n) if n.method == "exit" => {
                return match server.shut_down {
                    true => Ok(()),
                    false => Err(LspError::ExitWithoutShutdown),
                };
            }
            Message::Notification(n) => server.notification(n)?,
            // The server sends no requests, so no response is awaited.
            Message::Response(_) => {}
        }
    }
    Err(LspError::Disconnected)
}

fn send(conn: &Connection, message: impl Into<Message>) -> Result<(), LspError> {
    conn.sender
        .send(message.into())
        .map_err(|_| LspError::Disconnected)
}

struct Server<'c> {
    conn: &'c Connection,
    documents: Documents,
    shut_down: bool,
}

impl Server<'_> {
    fn request(&mut self, req: Request) -> Response {
        if self.shut_down {
            return Response::new_err(
                req.id,
                ErrorCode::InvalidRequest as i32,
                "the server is shutting down".to_string(),
            );
        }
        match req.method.as_str() {
            "shutdown" => {
                self.shut_down = true;
                Response::new_ok(req.id, ())
            }
            HoverRequest::METHOD => self.answer(req, Self::hover),
            Completion::METHOD => self.answer(req, Self::completion),
            GotoDefinition::METHOD => self.answer(req, Self::definition),
            _ => Response::new_err(
                req.id,
                ErrorCode::MethodNotFound as i32,
                format!("dmove lsp does not implement `{}`", req.method),
            ),
        }
    }

    /// Parses the request's parameters for `handler` and answers with its result.
    fn answer<P: DeserializeOwned, R: Serialize>(
        &self,
        req: Request,
        handler: impl FnOnce(&Self, P) -> R,
    ) -> Response {
        let id: RequestId = req.id;
        let params: P = match serde_json::from_value(req.params) {
            Ok(p) => p,
            Err(e) => {
                return Response::new_err(
                    id,
                    ErrorCode::InvalidParams as i32,
                    format!("malformed `{}` parameters: {e}", req.method),
                )
            }
        };
        match catch_unwind(AssertUnwindSafe(|| handler(self, params))) {
            Ok(result) => Response::new_ok(id, result),
            Err(_) => Response::new_err(
                id,
                ErrorCode::InternalError as i32,
                format!(
                    "dmove lsp failed answering `{}` (a bug; please report it)",
                    req.method
                ),
            ),
        }
    }

    fn hover(&self, p: HoverParams) -> Option<Hover> {
        let at = p.text_document_position_params;
        let doc = self.documents.get(&at.text_document.uri)?;
        let a = &doc.analysis;
        if !a.parsed() {
            return None;
        }
        let found = cursor::at(a.root(), doc.lines.offset(&doc.text, at.position))?;
        Some(Hover {
            contents: HoverContents::Markup(MarkupContent {
                kind: MarkupKind::Markdown,
                value: hover::hover(a, &found)?,
            }),
            range: Some(doc.lines.range(&doc.text, found.span)),
        })
    }

    fn completion(&self, p: CompletionParams) -> Option<CompletionResponse> {
        let at = p.text_document_position;
        let doc = self.documents.get(&at.text_document.uri)?;
        let offset = doc.lines.offset(&doc.text, at.position);
        let items = completion::complete(&doc.text, offset, doc.last_parsed.as_deref());
        Some(CompletionResponse::Array(items))
    }

    fn definition(&self, p: GotoDefinitionParams) -> Option<GotoDefinitionResponse> {
        let at = p.text_document_position_params;
        let uri = &at.text_document.uri;
        let doc = self.documents.get(uri)?;
        let a = &doc.analysis;
        if !a.parsed() {
            return None;
        }
        let found = cursor::at(a.root(), doc.lines.offset(&doc.text, at.position))?;
        definition::definition(a, &found, uri).map(GotoDefinitionResponse::Scalar)
    }

    fn notification(&mut self, n: Notification) -> Result<(), LspError> {
        let method = n.method.clone();
        let handled = catch_unwind(AssertUnwindSafe(|| self.document_event(n)));
        match handled {
            Ok(Some(publish)) => send(self.conn, publish),
            Ok(None) => Ok(()),
            Err(_) => {
                eprintln!("dmove lsp: handling `{method}` failed (a bug; please report it)");
                Ok(())
            }
        }
    }

    /// Applies an open, change or close to the documents; returns the diagnostics to publish.
    /// Other notifications (`initialized`, `$/cancelRequest`, saves, configuration) need
    /// nothing.
    fn document_event(&mut self, n: Notification) -> Option<Notification> {
        let (uri, text, version) = match n.method.as_str() {
            DidOpenTextDocument::METHOD => {
                let p: DidOpenTextDocumentParams = serde_json::from_value(n.params).ok()?;
                let d = p.text_document;
                (d.uri, d.text, d.version)
            }
            DidChangeTextDocument::METHOD => {
                let p: DidChangeTextDocumentParams = serde_json::from_value(n.params).ok()?;
                let (uri, version) = (p.text_document.uri, p.text_document.version);
                let text = self.changed(&uri, p.content_changes)?;
                (uri, text, version)
            }
            DidCloseTextDocument::METHOD => {
                let p: DidCloseTextDocumentParams = serde_json::from_value(n.params).ok()?;
                self.documents.close(&p.text_document.uri);
                return Some(publish(p.text_document.uri, Vec::new(), None));
            }
            _ => return None,
        };
        let analysis = analyse(&uri, &text);
        let doc = self.documents.set(&uri, text, analysis);
        let diagnostics = diagnostics::to_lsp(&doc.analysis, &uri);
        Some(publish(uri, diagnostics, Some(version)))
    }

    /// The text after `changes`: a change without a range replaces the text (full
    /// synchronisation, as advertised); one with a range is spliced in, for clients that send
    /// increments anyway.
    fn changed(&self, uri: &Url, changes: Vec<TextDocumentContentChangeEvent>) -> Option<String> {
        let mut text = self.documents.get(uri)?.text.clone();
        for change in changes {
            match change.range {
                None => text = change.text,
                Some(range) => {
                    let lines = super::position::LineIndex::new(&text);
                    let start = lines.offset(&text, range.start);
                    let end = lines.offset(&text, range.end).max(start);
                    text.replace_range(start..end, &change.text);
                }
            }
        }
        Some(text)
    }
}

/// The diagnostics of `uri` (at `version`, when they are about a version of its text).
fn publish(
    uri: Url,
    diagnostics: Vec<lsp_types::Diagnostic>,
    version: Option<i32>,
) -> Notification {
    let params = PublishDiagnosticsParams {
        uri,
        diagnostics,
        version,
    };
    Notification::new(PublishDiagnostics::METHOD.to_string(), params)
}
