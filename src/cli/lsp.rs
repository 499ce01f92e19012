//! `dmove lsp`: the recipe language server, for editors (see `editors/` and README's "Editor
//! support").

use super::CliError;

/// `dmove lsp`
#[derive(Clone, Debug, clap::Args)]
pub struct LspArgs {
    /// Speak the protocol over standard input and output. That is the only transport, so the
    /// flag changes nothing; it is accepted because language clients (VS Code's among them)
    /// pass it.
    #[arg(long)]
    pub stdio: bool,
}

pub fn lsp(_args: &LspArgs) -> Result<(), CliError> {
    crate::lsp::serve_stdio()?;
    Ok(())
}
