//! `dmove view`: the SVG picture of the demo model (well-formed, every node and memlet drawn,
//! arrays coloured by what they move), the HTML page loaded in a real headless browser (no
//! console errors — an injected error is caught —, the script's layout equal to the SVG's, a
//! screenshot that shows the graph) and a recipe's step history.

mod browser;

use dmove::demo::model::{encoder_model, EncoderConfig};
use dmove::ir::NodeKind;
use dmove::{import_file, ImportOptions, Program};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Output;

const DMOVE: &str = env!("CARGO_BIN_EXE_dmove");

fn dmove(args: &[&str], dir: &Path) -> Output {
    std::process::Command::new(DMOVE)
        .args(args)
        .current_dir(dir)
        .env("NO_COLOR", "1")
        .output()
        .expect("the binary runs")
}

fn ok(o: &Output) -> &Output {
    assert!(
        o.status.success(),
        "dmove failed: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    o
}

/// The demo's encoder layer (the model `dmove demo` builds), written into `dir`.
fn demo_model(dir: &Path) -> PathBuf {
    let path = dir.join("demo.onnx");
    std::fs::write(&path, encoder_model(&EncoderConfig::default(), 2024)).expect("write model");
    path
}

fn repo(path: &str) -> String {
    format!("{}/{path}", env!("CARGO_MANIFEST_DIR"))
}

/// The attributes of every `<g class="item …">` start tag in `text` (SVG or a dumped DOM), by
/// `data-id`.
fn items(text: &str) -> BTreeMap<String, BTreeMap<String, String>> {
    let mut out = BTreeMap::new();
    for (at, _) in text.match_indices("<g class=\"item ") {
        let tag = &text[at..at + text[at..].find('>').expect("tag ends")];
        let mut attrs = BTreeMap::new();
        for part in tag.split("\" ") {
            if let Some((k, v)) = part.trim_start_matches("<g ").split_once("=\"") {
                attrs.insert(k.trim().to_string(), v.trim_end_matches('"').to_string());
            }
        }
        out.insert(attrs["data-id"].clone(), attrs);
    }
    out
}

/// `translate(x,y)` as numbers.
fn translate(t: &str) -> (f64, f64) {
    let inner = t.trim_start_matches("translate(").trim_end_matches(')');
    let (x, y) = inner.split_once(',').expect("x,y");
    (x.trim().parse().expect("x"), y.trim().parse().expect("y"))
}

fn node_count(p: &Program) -> (usize, usize) {
    let (mut nodes, mut edges) = (0, 0);
    fn walk(g: &dmove::ir::Graph, nodes: &mut usize, edges: &mut usize) {
        *edges += g.edges().count();
        for n in g.nodes() {
            *nodes += 1;
            if let NodeKind::Map(m) = &n.kind {
                walk(&m.body, nodes, edges);
            }
        }
    }
    walk(&p.graph, &mut nodes, &mut edges);
    (nodes, edges)
}

#[test]
fn the_demo_models_svg_is_well_formed_and_draws_every_node_and_memlet() {
    let dir = tempfile::tempdir().expect("tempdir");
    let model = demo_model(dir.path());
    ok(&dmove(&["view", "demo.onnx", "-o", "demo.svg"], dir.path()));
    let svg = std::fs::read_to_string(dir.path().join("demo.svg")).expect("svg written");
    let doc = roxmltree::Document::parse(&svg).expect("the SVG is well-formed XML");
    assert_eq!(doc.root_element().tag_name().name(), "svg");
    let p = import_file(&model, &ImportOptions::default()).expect("import");
    let (nodes, edges) = node_count(&p);
    let drawn = items(&svg);
    assert_eq!(drawn.len(), nodes, "one box per node");
    let has_class = |n: &roxmltree::Node, c: &str| {
        n.attribute("class")
            .is_some_and(|k| k.split(' ').any(|x| x == c))
    };
    assert_eq!(
        doc.descendants().filter(|n| has_class(n, "edge")).count(),
        edges,
        "one edge per memlet"
    );
    // Every operator's box names its operator; every edge's ends are boxes of its scope.
    p.graph.walk(&mut |n| {
        if let NodeKind::Library(l) = &n.kind {
            let item = doc
                .descendants()
                .find(|d| d.attribute("data-id") == Some(&n.id.to_string()))
                .expect("the node's box");
            assert!(
                item.descendants().any(|t| t.text() == Some(l.op.as_str())),
                "{} shows {}",
                n.id,
                l.op
            );
        }
    });
    for scope in doc.descendants().filter(|n| has_class(n, "scope")) {
        let boxes = scope.children().filter(|c| has_class(c, "item")).count();
        for e in scope.descendants().filter(|n| has_class(n, "edge")) {
            if e.ancestors().find(|a| has_class(a, "scope")) != Some(scope) {
                continue;
            }
            for end in ["data-from", "data-to"] {
                let k: usize = e.attribute(end).expect(end).parse().expect("index");
                assert!(k < boxes, "edge end {k} of {boxes} boxes");
            }
        }
    }
    // x (f32[1, 128, 256], 128 KiB) is read by the three projections and the first residual.
    assert!(
        svg.contains("bytes moved: 512 KiB"),
        "x's details give its bytes moved"
    );
    assert!(svg.contains("arrays coloured by bytes moved"), "the legend");
    assert!(svg.contains("encoder_layer"), "the title names the program");
    assert!(
        svg.contains("q_mm (all) · 32.8k el"),
        "memlets carry their subset and volume"
    );
}

#[test]
fn bad_requests_are_errors_not_panics() {
    let dir = tempfile::tempdir().expect("tempdir");
    demo_model(dir.path());
    let o = dmove(&["view", "demo.onnx", "-o", "demo.png"], dir.path());
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("`.svg` or `.html`"), "{err}");
    let o = dmove(&["view", "missing.onnx", "-o", "x.svg"], dir.path());
    assert!(!o.status.success());
    assert!(!String::from_utf8_lossy(&o.stderr).contains("panicked"));
    assert!(!dir.path().join("x.svg").exists());
}

#[test]
fn the_html_view_loads_in_a_browser_lays_out_like_the_svg_and_shows_the_graph() {
    let dir = tempfile::tempdir().expect("tempdir");
    demo_model(dir.path());
    ok(&dmove(
        &["view", "demo.onnx", "-o", "demo.html"],
        dir.path(),
    ));
    ok(&dmove(&["view", "demo.onnx", "-o", "demo.svg"], dir.path()));
    let html = std::fs::read_to_string(dir.path().join("demo.html")).expect("html written");
    // No address but the SVG namespace's (a name, never fetched): nothing loads from a network.
    let addresses = html.replace("http://www.w3.org/2000/svg", "");
    assert!(!addresses.contains("://"), "no network");
    assert!(
        !html.contains("<script src") && !html.contains("<link"),
        "one self-contained file"
    );
    let Some(chromium) = browser::chromium() else {
        return;
    };

    let page = dir.path().join("demo.html");
    let dom = browser::dom(&chromium, &page);
    let svg = std::fs::read_to_string(dir.path().join("demo.svg")).expect("svg");
    let expected = items(&svg);
    assert_eq!(
        browser::status(&dom),
        format!("ok: {} boxes, 1 frame(s)", expected.len())
    );
    // The script placed every box where the Rust layout did.
    let placed = items(&dom);
    assert_eq!(placed.len(), expected.len());
    for (id, attrs) in &expected {
        let (a, b) = (
            translate(&attrs["transform"]),
            translate(&placed[id]["transform"]),
        );
        assert!(
            (a.0 - b.0).abs() < 0.11 && (a.1 - b.1).abs() < 0.11,
            "{id}: svg {a:?}, page {b:?}"
        );
    }

    // A page whose script throws reports it: the check above would have caught an error.
    let broken = dir.path().join("broken.html");
    let marker = "<script>\"use strict\";";
    assert!(html.contains(marker));
    std::fs::write(
        &broken,
        html.replacen(
            marker,
            "<script>\"use strict\"; throw new Error(\"injected fault\");",
            1,
        ),
    )
    .expect("write");
    let status = browser::status(&browser::dom(&chromium, &broken));
    assert!(
        status.starts_with("error: ") && status.contains("injected fault"),
        "{status}"
    );

    let png = dir.path().join("demo.png");
    browser::screenshot(&chromium, &page, &png, (1280, 900));
    let bytes = std::fs::read(&png).expect("screenshot written");
    assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n");
    let be = |at: usize| u32::from_be_bytes(bytes[at..at + 4].try_into().expect("4 bytes"));
    assert_eq!((be(16), be(20)), (1280, 900), "IHDR size");
    // A blank or nearly blank page compresses to a few KiB; the drawn graph does not.
    assert!(
        bytes.len() > 60_000,
        "the screenshot shows a drawing ({} bytes)",
        bytes.len()
    );
}

/// The frames data of an HTML view.
fn frames(html: &str) -> serde_json::Value {
    let start = html.find("id=\"frames\">").expect("frames data") + 12;
    let end = start + html[start..].find("</script>").expect("end of data");
    serde_json::from_str(&html[start..end].replace("<\\/", "</")).expect("JSON")
}

#[test]
fn a_recipes_steps_become_frames_with_what_each_step_changed() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (model, recipe) = (repo("tests/fixtures/mlp.onnx"), repo("recipes/mlp.recipe"));
    ok(&dmove(
        &["view", &model, "--recipe", &recipe, "-o", "all.html"],
        dir.path(),
    ));
    ok(&dmove(
        &[
            "view",
            &model,
            "--recipe",
            &recipe,
            "--max-steps",
            "4",
            "-o",
            "few.html",
        ],
        dir.path(),
    ));
    ok(&dmove(
        &["view", &model, "--recipe", &recipe, "-o", "after.svg"],
        dir.path(),
    ));
    let html = std::fs::read_to_string(dir.path().join("all.html")).expect("html");
    let data = frames(&html);
    let list = data["frames"].as_array().expect("frames");
    // The README's run of this recipe applies 17 steps: the imported model, then one per step.
    assert_eq!(list.len(), 18);
    assert!(list[0]["title"]
        .as_str()
        .unwrap()
        .starts_with("as imported"));
    assert!(list[17]["title"]
        .as_str()
        .unwrap()
        .starts_with("step 17 of 17"));
    for f in &list[1..] {
        assert!(
            !f["changed"].as_array().unwrap().is_empty(),
            "{}",
            f["title"]
        );
    }
    // Unchanged boxes are stored once for every frame that shows them.
    let shown: usize = list
        .iter()
        .map(|f| f["items"].as_array().unwrap().len())
        .sum();
    let stored = data["fragments"].as_array().unwrap().len();
    assert!(stored < shown, "{stored} fragments for {shown} boxes shown");
    let few = frames(&std::fs::read_to_string(dir.path().join("few.html")).expect("html"));
    let titles: Vec<&str> = (few["frames"].as_array().unwrap().iter())
        .map(|f| f["title"].as_str().unwrap())
        .collect();
    assert_eq!(titles.len(), 5, "{titles:?}");
    assert!(titles[4].starts_with("step 17 of 17"), "{titles:?}");
    // The SVG shows the program after the recipe: lowered, so maps and tasklets.
    let svg = std::fs::read_to_string(dir.path().join("after.svg")).expect("svg");
    roxmltree::Document::parse(&svg).expect("well-formed");
    assert!(svg.contains("class=\"item map\"") && svg.contains("class=\"item tasklet\""));
    assert!(!svg.contains("class=\"item library\""));

    let Some(chromium) = browser::chromium() else {
        return;
    };
    let status = browser::status(&browser::dom(&chromium, &dir.path().join("all.html")));
    assert!(
        status.starts_with("ok: ") && status.ends_with("18 frame(s)"),
        "{status}"
    );
}

#[test]
fn arrays_can_be_coloured_by_dmd() {
    let dir = tempfile::tempdir().expect("tempdir");
    let model = repo("tests/fixtures/mlp.onnx");
    ok(&dmove(
        &[
            "view", &model, "--expand", "--color", "dmd", "-o", "dmd.svg",
        ],
        dir.path(),
    ));
    let svg = std::fs::read_to_string(dir.path().join("dmd.svg")).expect("svg");
    assert!(svg.contains("arrays coloured by DMD"));
    assert!(svg.contains("DMD: "), "access details give the array's DMD");
}
