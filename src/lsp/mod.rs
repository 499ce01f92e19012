//! `dmove lsp`: a language server for recipe files, so editors show what `dmove check` would
//! say while a recipe is typed, and know its names.
//!
//! Nothing here has language logic of its own: diagnostics are the recipe loader's and
//! checker's ([`crate::recipe`]), names are resolved by [`crate::recipe::resolve`], and
//! transformations are described from their schemas. One concept per module: `server` (the
//! message loop and life cycle), `documents` (open texts), `analysis` (load and check one text,
//! where its modules live), `position` (byte offsets ↔ UTF-16 positions), `diagnostics`
//! (conversion), `cursor` (the name at an offset), `meaning` (what it refers to), `hover`,
//! `completion`, `definition`.

mod analysis;
mod completion;
mod cursor;
mod definition;
mod diagnostics;
mod documents;
mod hover;
mod meaning;
mod position;
mod server;

pub use server::{capabilities, run};

/// Why a language-server session ended badly.
#[derive(Debug, thiserror::Error, miette::Diagnostic)]
pub enum LspError {
    #[error("the language client broke the protocol: {0}")]
    #[diagnostic(code(dmove::lsp::protocol))]
    Protocol(#[from] lsp_server::ProtocolError),
    #[error("the language client closed the connection without `shutdown` and `exit`")]
    #[diagnostic(code(dmove::lsp::disconnected))]
    Disconnected,
    #[error("the language client sent `exit` without `shutdown` first")]
    #[diagnostic(code(dmove::lsp::exit_without_shutdown))]
    ExitWithoutShutdown,
    #[error("reading from or writing to the language client failed")]
    #[diagnostic(code(dmove::lsp::io))]
    Io(#[source] std::io::Error),
}

/// Serves one session over standard input and output (what editors start).
pub fn serve_stdio() -> Result<(), LspError> {
    let (conn, io) = lsp_server::Connection::stdio();
    let result = run(&conn);
    drop(conn);
    match result {
        // The transport's own error (a malformed message, say) says more than "disconnected".
        Err(LspError::Disconnected) => {
            Err(io.join().err().map_or(LspError::Disconnected, LspError::Io))
        }
        // After an error the reader may still wait on standard input: do not wait for it.
        Err(e) => Err(e),
        Ok(()) => io.join().map_err(LspError::Io),
    }
}
