//! A scripted language client: starts `dmove lsp`, writes JSON-RPC messages to its standard
//! input with `Content-Length` framing and reads its answers from standard output, as an editor
//! does.

use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::mpsc::{self, Receiver};
use std::time::Duration;

/// How long to wait for one message before calling the server stuck (a safety net so a broken
/// server fails the test instead of hanging it; no assertion depends on it).
const PATIENCE: Duration = Duration::from_secs(120);

pub struct Client {
    child: Child,
    stdin: Option<ChildStdin>,
    incoming: Receiver<Value>,
    next_id: i64,
}

impl Client {
    /// Starts the server and completes the handshake; returns the client and the server's
    /// `initialize` result.
    pub fn start() -> (Client, Value) {
        let mut child = Command::new(env!("CARGO_BIN_EXE_dmove"))
            .args(["lsp", "--stdio"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("dmove lsp starts");
        let stdout = child.stdout.take().expect("stdout");
        let (tx, incoming) = mpsc::channel();
        std::thread::spawn(move || {
            let mut reader = BufReader::new(stdout);
            while let Some(message) = read_message(&mut reader) {
                if tx.send(message).is_err() {
                    break;
                }
            }
        });
        let mut client = Client {
            stdin: child.stdin.take(),
            child,
            incoming,
            next_id: 0,
        };
        let init = client.request(
            "initialize",
            json!({"processId": null, "rootUri": null, "capabilities": {}}),
        );
        client.notify("initialized", json!({}));
        (client, init)
    }

    /// Writes one framed message.
    pub fn send(&mut self, message: &Value) {
        let body = message.to_string();
        let stdin = self.stdin.as_mut().expect("stdin open");
        write!(stdin, "Content-Length: {}\r\n\r\n{body}", body.len()).expect("write");
        stdin.flush().expect("flush");
    }

    pub fn notify(&mut self, method: &str, params: Value) {
        self.send(&json!({"jsonrpc": "2.0", "method": method, "params": params}));
    }

    /// Sends a request and returns its whole response (`result` or `error`), skipping the
    /// notifications that come before it.
    pub fn call(&mut self, method: &str, params: Value) -> Value {
        self.next_id += 1;
        let id = self.next_id;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        self.next(|m| m["id"] == json!(id))
    }

    /// A request's `result`; panics on an error response.
    pub fn request(&mut self, method: &str, params: Value) -> Value {
        let response = self.call(method, params);
        assert!(
            response.get("error").is_none(),
            "{method} failed: {response}"
        );
        response["result"].clone()
    }

    /// The next `publishDiagnostics` for `uri`.
    pub fn diagnostics(&mut self, uri: &str) -> Vec<Value> {
        let m = self.next(|m| {
            m["method"] == "textDocument/publishDiagnostics" && m["params"]["uri"] == uri
        });
        m["params"]["diagnostics"]
            .as_array()
            .cloned()
            .unwrap_or_default()
    }

    /// The next message satisfying `wanted`.
    fn next(&mut self, wanted: impl Fn(&Value) -> bool) -> Value {
        loop {
            let m = self
                .incoming
                .recv_timeout(PATIENCE)
                .expect("the server answers");
            if wanted(&m) {
                return m;
            }
        }
    }

    /// Closes the server's standard input and waits for it to exit.
    pub fn wait(mut self) -> ExitStatus {
        drop(self.stdin.take());
        self.child.wait().expect("the server exits")
    }
}

/// One `Content-Length`-framed message, or `None` at the end of the stream.
fn read_message(reader: &mut impl BufRead) -> Option<Value> {
    let mut length = None;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).ok()? == 0 {
            return None;
        }
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        if let Some(n) = line.strip_prefix("Content-Length: ") {
            length = n.parse::<usize>().ok();
        }
    }
    let mut body = vec![0; length?];
    reader.read_exact(&mut body).ok()?;
    serde_json::from_slice(&body).ok()
}
