//! `dmove lsp` driven by a scripted client over standard input and output: diagnostics as the
//! text changes (codes, UTF-16 ranges, labels, findings in used files), hover, completion,
//! go to definition, and the protocol's life cycle and error answers.

mod client;

use client::Client;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};

/// A module the documents use, on disk.
const COMMON: &str =
    "# Shared steps.\n\n# Fuses what can be fused.\nrule fold() {\n  print \"fold\"\n}\n";

/// The document as typed: a misspelt parameter, and an unknown name after non-ASCII text.
const BROKEN: &str = "recipe \"t\" version \"0.1.0\"\nuse \"./common.recipe\" as common\nuse std::loops\n\nrule tile_all() {\n  for each m in maps(depth = 0) {\n    MapTiling(m, tile = [4])\n  }\n}\n\nmain {\n  print \"𝄞é\", nosuch\n  tile_all()\n  common::fold()\n  loops::all(16)\n}\n";

fn fixed() -> String {
    BROKEN
        .replace("tile = [4]", "tiles = [4]")
        .replace("nosuch", "1")
}

struct Workspace {
    _dir: tempfile::TempDir,
    root: PathBuf,
}

impl Workspace {
    fn new() -> Workspace {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path().canonicalize().expect("canonical");
        std::fs::write(root.join("common.recipe"), COMMON).expect("write");
        // On disk the document is valid: the server must check the editor's text instead.
        std::fs::write(root.join("main.recipe"), fixed()).expect("write");
        Workspace { _dir: dir, root }
    }

    fn uri(&self, name: &str) -> String {
        file_uri(&self.root.join(name))
    }
}

fn file_uri(path: &Path) -> String {
    format!("file://{}", path.display())
}

fn open(c: &mut Client, uri: &str, text: &str) -> Vec<Value> {
    c.notify(
        "textDocument/didOpen",
        json!({"textDocument": {"uri": uri, "languageId": "recipe", "version": 1, "text": text}}),
    );
    c.diagnostics(uri)
}

/// `{"textDocument": …, "position": …}` at the `nth` occurrence of `needle` in `text`, `skip`
/// UTF-16 units in (all tests' lines before the needle are ASCII).
fn at(uri: &str, text: &str, needle: &str, skip: u32) -> Value {
    let offset = text.find(needle).expect("needle");
    let line = text[..offset].matches('\n').count();
    let col = offset - text[..offset].rfind('\n').map_or(0, |i| i + 1);
    json!({"textDocument": {"uri": uri}, "position": {"line": line, "character": col as u32 + skip}})
}

/// A workspace, a started server and the URI of the document `name` in the workspace.
fn session(name: &str) -> (Workspace, Client, String) {
    let ws = Workspace::new();
    let (c, _) = Client::start();
    let uri = ws.uri(name);
    (ws, c, uri)
}

fn shut_down(mut c: Client) {
    assert_eq!(c.request("shutdown", Value::Null), Value::Null);
    c.notify("exit", Value::Null);
    assert!(c.wait().success(), "exit after shutdown is a clean exit");
}

fn by_code<'a>(diags: &'a [Value], code: &str) -> &'a Value {
    diags
        .iter()
        .find(|d| d["code"] == code)
        .unwrap_or_else(|| panic!("no {code} in {diags:#?}"))
}

#[test]
fn diagnostics_follow_the_editors_text() {
    let ws = Workspace::new();
    let (mut c, init) = Client::start();
    let caps = &init["capabilities"];
    assert_eq!(
        caps["textDocumentSync"]["change"], 1,
        "full synchronisation"
    );
    assert_eq!(caps["hoverProvider"], true);
    assert_eq!(caps["definitionProvider"], true);

    let uri = ws.uri("main.recipe");
    let diags = open(&mut c, &uri, BROKEN);

    // `nosuch` follows `print "𝄞é", `: 2 + 1 units for the three bytes + four bytes of text.
    let unknown = diags
        .iter()
        .find(|d| d["message"].as_str().unwrap_or("").contains("`nosuch`"))
        .unwrap_or_else(|| panic!("nosuch reported: {diags:#?}"));
    assert_eq!(unknown["code"], "dmove::recipe::unknown_name");
    assert_eq!(unknown["severity"], 1);
    assert_eq!(unknown["source"], "dmove");
    let line = 11;
    let start = "  print \"𝄞é\", ".encode_utf16().count();
    assert_eq!(
        unknown["range"],
        json!({"start": {"line": line, "character": start}, "end": {"line": line, "character": start + 6}})
    );

    // The misspelt parameter: the CLI's message, its label as related information at the same
    // place, and the help in the message.
    let misspelt = diags
        .iter()
        .find(|d| {
            d["message"]
                .as_str()
                .unwrap_or("")
                .starts_with("MapTiling has no role or parameter `tile`")
        })
        .unwrap_or_else(|| panic!("tile reported: {diags:#?}"));
    assert_eq!(misspelt["code"], "dmove::recipe::unknown_name");
    assert!(
        misspelt["message"]
            .as_str()
            .unwrap_or("")
            .contains("help: did you mean `tiles`?"),
        "{misspelt}"
    );
    let related = &misspelt["relatedInformation"][0];
    assert_eq!(
        related["message"],
        "not a role or parameter of this transformation"
    );
    assert_eq!(related["location"]["uri"], uri.as_str());
    assert_eq!(related["location"]["range"], misspelt["range"]);
    assert_eq!(
        misspelt["range"]["start"],
        json!({"line": 6, "character": 17})
    );
    let required = by_code(&diags, "dmove::recipe::bad_argument");
    assert!(required["message"]
        .as_str()
        .unwrap_or("")
        .starts_with("MapTiling needs parameter `tiles`"));

    // Fixed: the diagnostics are cleared.
    c.notify(
        "textDocument/didChange",
        json!({"textDocument": {"uri": uri, "version": 2}, "contentChanges": [{"text": fixed()}]}),
    );
    assert_eq!(c.diagnostics(&uri), Vec::<Value>::new());

    // A syntax error in a used file is shown on the `use`, pointing into that file.
    std::fs::write(ws.root.join("broken.recipe"), "rule oops( {\n").expect("write");
    let with_broken = fixed().replace(
        "use std::loops\n",
        "use std::loops\nuse \"./broken.recipe\" as broken\n",
    );
    c.notify(
        "textDocument/didChange",
        json!({"textDocument": {"uri": uri, "version": 3}, "contentChanges": [{"text": with_broken}]}),
    );
    let diags = c.diagnostics(&uri);
    let syntax = by_code(&diags, "dmove::recipe::syntax");
    assert!(
        syntax["message"]
            .as_str()
            .unwrap_or("")
            .starts_with("in ./broken.recipe: "),
        "{syntax}"
    );
    assert_eq!(syntax["range"]["start"], json!({"line": 3, "character": 0}));
    let elsewhere = &syntax["relatedInformation"][0]["location"];
    assert_eq!(elsewhere["uri"], ws.uri("broken.recipe").as_str());

    // Closing the document clears what was published for it.
    c.notify(
        "textDocument/didClose",
        json!({"textDocument": {"uri": uri}}),
    );
    assert_eq!(c.diagnostics(&uri), Vec::<Value>::new());
    shut_down(c);
}

#[test]
fn hover_completion_and_definition_know_the_names() {
    let (ws, mut c, uri) = session("main.recipe");
    let text = fixed();
    assert_eq!(open(&mut c, &uri, &text), Vec::<Value>::new());

    // A transformation: its doc, site role and typed parameters.
    let h = c.request("textDocument/hover", at(&uri, &text, "MapTiling", 3));
    let md = h["contents"]["value"].as_str().unwrap_or_default();
    assert!(
        md.starts_with("```text\nMapTiling (IntraOperator)\n"),
        "{md}"
    );
    assert!(md.contains("\n    site:\n      map: a map — "), "{md}");
    let tiles =
        "\n      tiles: one integer per map parameter, each in 0.. (e.g. 32,32,0); required — ";
    assert!(md.contains(tiles), "{md}");
    assert_eq!(h["range"]["start"], json!({"line": 6, "character": 4}));

    // A named argument: its declaration alone.
    let h = c.request("textDocument/hover", at(&uri, &text, "tiles =", 1));
    assert!(h["contents"]["value"]
        .as_str()
        .unwrap_or_default()
        .starts_with("parameter of **MapTiling**"));

    // A rule of a used file: its signature, its comment and where it lives.
    let h = c.request("textDocument/hover", at(&uri, &text, "common::fold", 9));
    let md = h["contents"]["value"].as_str().unwrap_or_default();
    assert_eq!(
        md,
        "```recipe\nrule fold()\n```\nFuses what can be fused.\n\n_in ./common.recipe_"
    );

    // A built-in function.
    let h = c.request("textDocument/hover", at(&uri, &text, "maps(", 1));
    assert!(h["contents"]["value"]
        .as_str()
        .unwrap_or_default()
        .contains("built-in function: every map"));

    // Completion in a statement: transformations, the document's rules, module aliases.
    let labels = |v: &Value| -> Vec<String> {
        v.as_array().map_or_else(Vec::new, |a| {
            a.iter()
                .map(|i| i["label"].as_str().unwrap_or_default().to_string())
                .collect()
        })
    };
    let items = labels(&c.request(
        "textDocument/completion",
        at(&uri, &text, "  tile_all()", 2),
    ));
    for want in [
        "MapTiling",
        "Parallelize",
        "tile_all",
        "common",
        "loops",
        "maps",
        "apply",
    ] {
        assert!(items.iter().any(|i| i == want), "{want} offered: {items:?}");
    }
    // In a transformation's argument list: its parameter names first.
    let items = labels(&c.request("textDocument/completion", at(&uri, &text, "tiles =", 0)));
    assert_eq!(items.first().map(String::as_str), Some("tiles"));
    // After a module alias: the module's rules, standard modules included.
    let items = labels(&c.request("textDocument/completion", at(&uri, &text, "all(16)", 0)));
    assert!(
        items.contains(&"schedule".to_string()) && items.contains(&"all".to_string()),
        "{items:?}"
    );
    let items = labels(&c.request("textDocument/completion", at(&uri, &text, "fold()", 0)));
    assert_eq!(items, ["fold"]);

    // Definition: a rule of the document, a rule of a used file, the used file itself, a
    // variable.
    let d = c.request(
        "textDocument/definition",
        at(&uri, &text, "tile_all()\n  common", 2),
    );
    assert_eq!(d["uri"], uri.as_str());
    assert_eq!(
        d["range"],
        json!({"start": {"line": 4, "character": 5}, "end": {"line": 4, "character": 13}})
    );
    let common = ws.uri("common.recipe");
    let d = c.request("textDocument/definition", at(&uri, &text, "fold()", 1));
    assert_eq!(d["uri"], common.as_str());
    assert_eq!(d["range"]["start"], json!({"line": 3, "character": 5}));
    let d = c.request(
        "textDocument/definition",
        at(&uri, &text, "\"./common.recipe\"", 3),
    );
    assert_eq!(d["uri"], common.as_str());
    let d = c.request(
        "textDocument/definition",
        at(&uri, &text, "MapTiling(m", 10),
    );
    assert_eq!(
        d["range"]["start"],
        json!({"line": 5, "character": 11}),
        "the `for each` variable"
    );
    // Standard modules are embedded: no file to go to.
    assert_eq!(
        c.request("textDocument/definition", at(&uri, &text, "all(16)", 1)),
        Value::Null
    );
    shut_down(c);
}

#[test]
fn malformed_input_and_unknown_requests_get_answers_not_crashes() {
    let (_ws, mut c, uri) = session("junk.recipe");
    let junk = "rule ( {{{ \u{0} é\n\"unterminated\nmain {\n  MapTiling(\n";
    let diags = open(&mut c, &uri, junk);
    assert_eq!(diags.len(), 1, "{diags:#?}");
    assert_eq!(diags[0]["code"], "dmove::recipe::syntax");
    // Hover on text that does not parse says nothing; completion still answers.
    assert_eq!(
        c.request("textDocument/hover", at(&uri, junk, "MapTiling", 2)),
        Value::Null
    );
    let items = c.request("textDocument/completion", at(&uri, junk, "MapTiling(", 10));
    assert_eq!(
        items[0]["label"], "tiles",
        "the argument list is recognised in broken text"
    );
    // Positions past the end are clamped.
    let far = json!({"textDocument": {"uri": uri}, "position": {"line": 999, "character": 999}});
    assert!(c.call("textDocument/hover", far).get("error").is_none());
    // A document the server never saw: no answer, but no error.
    let unseen = json!({"textDocument": {"uri": "file:///nowhere.recipe"}, "position": {"line": 0, "character": 0}});
    assert_eq!(c.request("textDocument/definition", unseen), Value::Null);

    let unknown = c.call("textDocument/formatting", json!({}));
    assert_eq!(
        unknown["error"]["code"], -32601,
        "MethodNotFound: {unknown}"
    );
    let malformed = c.call("textDocument/hover", json!({"position": "here"}));
    assert_eq!(
        malformed["error"]["code"], -32602,
        "InvalidParams: {malformed}"
    );

    assert_eq!(c.request("shutdown", Value::Null), Value::Null);
    let late = c.call("textDocument/hover", at(&uri, junk, "main", 0));
    assert_eq!(
        late["error"]["code"], -32600,
        "InvalidRequest after shutdown: {late}"
    );
    c.notify("exit", Value::Null);
    assert!(c.wait().success());
}

#[test]
fn exit_without_shutdown_is_a_failure_status() {
    let (mut c, _) = Client::start();
    c.notify("exit", Value::Null);
    assert_eq!(c.wait().code(), Some(1));
}

/// The VS Code grammar stays in step with the language: every reserved word of
/// `grammar/recipe.pest` is highlighted, and the extension serves `.recipe` files with
/// `dmove lsp`.
#[test]
fn the_vscode_extension_highlights_every_reserved_word_and_starts_the_server() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let pest = std::fs::read_to_string(root.join("grammar/recipe.pest")).expect("grammar");
    let reserved = pest.split("reserved = @{").nth(1).expect("reserved rule");
    let reserved = reserved.split("~ !ident_char").next().expect("its words");
    let words: Vec<&str> = reserved.split('"').skip(1).step_by(2).collect();
    assert!(words.len() > 30, "{words:?}");

    let dir = root.join("editors/vscode");
    let read_json = |name: &str| -> Value {
        serde_json::from_str(&std::fs::read_to_string(dir.join(name)).expect(name)).expect(name)
    };
    let grammar = read_json("syntaxes/recipe.tmLanguage.json");
    let mut highlighted = std::collections::BTreeSet::new();
    let mut stack = vec![&grammar];
    while let Some(v) = stack.pop() {
        match v {
            Value::Object(o) => {
                if let Some(Value::String(m)) = o.get("match") {
                    let runs =
                        m.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '|'));
                    highlighted.extend(runs.flat_map(|r| r.split('|')).map(str::to_string));
                }
                stack.extend(o.values());
            }
            Value::Array(a) => stack.extend(a),
            _ => {}
        }
    }
    let missing: Vec<&&str> = words
        .iter()
        .filter(|w| !highlighted.contains(**w))
        .collect();
    assert!(missing.is_empty(), "not highlighted: {missing:?}");

    let package = read_json("package.json");
    assert_eq!(
        package["contributes"]["languages"][0]["extensions"],
        json!([".recipe"])
    );
    let grammar_path = package["contributes"]["grammars"][0]["path"]
        .as_str()
        .expect("path");
    assert!(dir.join(grammar_path).exists());
    read_json("language-configuration.json");
    let extension = std::fs::read_to_string(dir.join("extension.js")).expect("extension.js");
    assert!(extension.contains("args: [\"lsp\"]"), "starts `dmove lsp`");
}
