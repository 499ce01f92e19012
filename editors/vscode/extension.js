// Starts `dmove lsp` for recipe files. The server does the work (diagnostics, hover,
// completion, definition); this only tells VS Code how to start it and which files it serves.
const vscode = require("vscode");
const { LanguageClient, TransportKind } = require("vscode-languageclient/node");

let client;

function activate(context) {
  const command = vscode.workspace.getConfiguration("dmove").get("path", "dmove");
  const server = { command, args: ["lsp"], transport: TransportKind.stdio };
  client = new LanguageClient(
    "dmove",
    "dmove recipes",
    { run: server, debug: server },
    { documentSelector: [{ scheme: "file", language: "recipe" }, { scheme: "untitled", language: "recipe" }] }
  );
  context.subscriptions.push(client);
  return client.start();
}

function deactivate() {
  return client ? client.stop() : undefined;
}

module.exports = { activate, deactivate };
