//! `dmove build`: the deliverable is copied alone into a clean directory, built there with
//! `make`, run on generated inputs, and its outputs match the reference interpreter's on
//! those same inputs (tolerances from `dmove::numerics`). Also: hostile tensor names build,
//! and a non-empty output directory is refused without `--force`.

use dmove::ir::{Buffer, DType, Tensor};
use dmove::onnx::writer::{AttrValue, ModelBuilder};
use dmove::{import_file, ImportOptions, Program};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const DMOVE: &str = env!("CARGO_BIN_EXE_dmove");
/// Every file a deliverable holds, and nothing else.
const FILES: [&str; 5] = [
    "Makefile",
    "README.md",
    "model.c",
    "model.h",
    "model.weights",
];

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

fn run(cmd: &mut Command) -> Output {
    let out = cmd.output().expect("the command starts");
    assert!(
        out.status.success(),
        "{cmd:?} failed:\n{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

fn dmove(args: &[&str]) -> Output {
    Command::new(DMOVE)
        .args(args)
        .env("NO_COLOR", "1")
        .output()
        .expect("dmove runs")
}

/// Copies the deliverable at `dir` into a fresh directory, runs `make` and the harness there
/// (`--generate`), and returns that directory.
fn make_and_run(dir: &Path) -> tempfile::TempDir {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .expect("the deliverable exists")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names, FILES);
    let clean = tempfile::tempdir().expect("tempdir");
    for name in FILES {
        std::fs::copy(dir.join(name), clean.path().join(name)).expect("copy");
    }
    run(Command::new("make").current_dir(clean.path()));
    for built in ["model", "libmodel.a"] {
        assert!(clean.path().join(built).is_file(), "make built {built}");
    }
    std::fs::create_dir(clean.path().join("io")).expect("mkdir io");
    let out = run(Command::new("./model")
        .args(["model.weights", "io", "1", "3", "--generate"])
        .current_dir(clean.path()));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("dm_run: 3 timed run(s), median"),
        "{stdout}"
    );
    clean
}

fn read_tensor(path: &Path, dtype: DType, shape: &[usize]) -> Tensor {
    let bytes = std::fs::read(path).expect("the harness wrote it");
    let t = Tensor {
        shape: shape.to_vec(),
        data: Buffer::from_le_bytes(dtype, &bytes).expect("whole elements"),
    };
    assert_eq!(
        t.len(),
        shape.iter().product::<usize>(),
        "{}",
        path.display()
    );
    t
}

/// The harness's outputs in `ran/io` against the interpreter's on the inputs it generated.
fn check_against_interpreter(p: &Program, ran: &Path) {
    let io = ran.join("io");
    let env = p.symbol_values();
    let input = |k: usize, name: &String| {
        let desc = &p.data[name];
        let shape: Vec<usize> = (desc.shape.iter())
            .map(|d| d.eval(&env).expect("bound") as usize)
            .collect();
        read_tensor(&io.join(format!("in{k}.bin")), desc.dtype, &shape)
    };
    let inputs: BTreeMap<String, Tensor> = (p.inputs.iter().enumerate())
        .map(|(k, n)| (n.clone(), input(k, n)))
        .collect();
    let expected = dmove::interp::run(p, &inputs).expect("the interpreter runs");
    for (k, name) in p.outputs.iter().enumerate() {
        let want = &expected[name];
        let got = read_tensor(&io.join(format!("out{k}.bin")), want.dtype(), &want.shape);
        let c = dmove::numerics::compare(&got, want);
        assert!(c.within_tolerance, "output {name}: {c:?}");
    }
}

/// Builds `model` with `dmove build EXTRA`, then makes, runs and checks it in a clean
/// directory, which is returned.
fn build_and_check(model: &Path, extra: &[&str]) -> tempfile::TempDir {
    let out = tempfile::tempdir().expect("tempdir");
    let dir = out.path().join("ship");
    let mut args = vec!["build", model.to_str().expect("utf-8 path")];
    args.extend(extra);
    args.extend(["-o", dir.to_str().expect("utf-8 path")]);
    let o = dmove(&args);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let ran = make_and_run(&dir);
    let p = import_file(model, &ImportOptions::default()).expect("imports");
    check_against_interpreter(&p, ran.path());
    ran
}

/// A program of the user's own, built against `model.h` and linked with `libmodel.a`, that
/// runs the MLP on the harness's inputs and writes its output.
const CALLER: &str = r#"#include <stdio.h>
#include "model.h"
static float x[DM_INPUT0_ELEMENTS], y[DM_OUTPUT0_ELEMENTS];
int main(void) {
    FILE* f = fopen("io/in0.bin", "rb");
    if (!f || fread(x, sizeof x, 1, f) != 1) return 1;
    fclose(f);
    dm_init("model.weights");
    dm_run(x, y);
    dm_free();
    f = fopen("caller.bin", "wb");
    if (!f || fwrite(y, sizeof y, 1, f) != 1) return 1;
    return fclose(f);
}
"#;

/// [`build_and_check`] for a model built in memory.
fn build_encoded(model: &[u8]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("model.onnx");
    std::fs::write(&path, model).expect("write the model");
    build_and_check(&path, &[])
}

#[test]
fn the_mlp_builds_and_matches_the_interpreter() {
    let ran = build_and_check(&fixture("mlp.onnx"), &[]);
    let dir = ran.path();
    std::fs::write(dir.join("caller.c"), CALLER).expect("write the caller");
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".to_string());
    let mut cmd = Command::new("sh");
    cmd.arg("-c")
        .arg(format!(
            "{cc} -std=c11 -fopenmp -o caller caller.c libmodel.a -lm && ./caller"
        ))
        .current_dir(dir);
    run(&mut cmd);
    let caller = std::fs::read(dir.join("caller.bin")).expect("the caller wrote");
    let harness = std::fs::read(dir.join("io/out0.bin")).expect("the harness wrote");
    assert_eq!(
        caller, harness,
        "the library computes what the harness does"
    );
}

#[test]
fn the_mlp_optimized_by_std_cpu_builds_and_matches_the_interpreter() {
    let ran = build_and_check(&fixture("mlp.onnx"), &["--recipe", "std::cpu"]);
    let header = std::fs::read_to_string(ran.path().join("model.h")).expect("header");
    assert!(header.contains("mlp.onnx with recipe std::cpu"), "{header}");
}

/// `std::cpu`'s direct convolution kernels compiled to C compute what the interpreter does: a
/// padded 3×3 over 14-wide rows (blocks of 7 outputs), a strided 3×3 whose 7 outputs per row
/// fill one block, a 1×1 product over the feature map where it lies, a depthwise 3×3 beside
/// them, and 40 output channels (a clipped block of channels); two images (blocks of one).
#[test]
fn convolutions_optimized_by_std_cpu_build_and_match_the_interpreter() {
    let weights = |n: usize| {
        (0..n)
            .map(|v| ((v * 37 % 23) as f32 - 11.0) / 40.0)
            .collect()
    };
    let ints = |v: &[i64]| AttrValue::Ints(v.to_vec());
    let model = ModelBuilder::new("convs", 17)
        .input("x", [2i64, 8, 14, 14])
        .output("y", [2i64, 40, 7, 7])
        .initializer("w1", &[16, 8, 3, 3], weights(16 * 8 * 9))
        .initializer("b1", &[16], weights(16))
        .initializer("wd", &[16, 1, 3, 3], weights(16 * 9))
        .initializer("w2", &[16, 16, 3, 3], weights(16 * 16 * 9))
        .initializer("w3", &[40, 16, 1, 1], weights(40 * 16))
        .node(
            "Conv",
            &["x", "w1", "b1"],
            &["c1"],
            vec![("pads", ints(&[1; 4]))],
        )
        .node("Relu", &["c1"], &["r1"], vec![])
        .node(
            "Conv",
            &["r1", "wd"],
            &["d"],
            vec![("pads", ints(&[1; 4])), ("group", AttrValue::Int(16))],
        )
        .node(
            "Conv",
            &["d", "w2"],
            &["c2"],
            vec![("pads", ints(&[1; 4])), ("strides", ints(&[2, 2]))],
        )
        .node("Conv", &["c2", "w3"], &["y"], vec![])
        .encode();
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("convs.onnx");
    std::fs::write(&path, model).expect("write the model");
    build_and_check(&path, &["--recipe", "std::cpu"]);
}

/// An output row one element long (a 3-wide input, a 3×3 window): the kernel's row tile has a
/// single position, squeezed away before the map runs in parallel (squeezed after, the race
/// check refused it and `std::cpu` failed on the model).
#[test]
fn a_convolution_with_one_output_per_row_builds_with_std_cpu() {
    let weights = (0..32 * 16 * 9)
        .map(|v| ((v * 29 % 17) as f32 - 8.0) / 50.0)
        .collect();
    let model = ModelBuilder::new("narrow", 17)
        .input("x", [1i64, 16, 5, 3])
        .output("y", [1i64, 32, 3, 1])
        .initializer("w", &[32, 16, 3, 3], weights)
        .node("Conv", &["x", "w"], &["c"], vec![])
        .node("Relu", &["c"], &["y"], vec![])
        .encode();
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("narrow.onnx");
    std::fs::write(&path, model).expect("write the model");
    build_and_check(&path, &["--recipe", "std::cpu"]);
}

/// A Concat whose first operand is a product: `std::cpu` rebuilds the product's maps, and the
/// generated C ran the Relu before the product and the copy into the Concat's first half (the
/// two halves were separate, unordered versions of `cat`); the builder now orders every partial
/// write after the one before it.
#[test]
fn a_concat_of_a_product_builds_with_std_cpu_in_dataflow_order() {
    let model = ModelBuilder::new("gemm_concat", 17)
        .input("x", [2i64, 4])
        .input("c", [2i64, 8])
        .output("y", [2i64, 16])
        .initializer(
            "w",
            &[8, 4],
            (0..32).map(|v| (v % 7) as f32 * 0.25 - 0.75).collect(),
        )
        .initializer("b", &[8], (0..8).map(|v| v as f32 * 0.125).collect())
        .node(
            "Gemm",
            &["x", "w", "b"],
            &["g"],
            vec![("transB", AttrValue::Int(1))],
        )
        .node(
            "Concat",
            &["g", "c"],
            &["cat"],
            vec![("axis", AttrValue::Int(1))],
        )
        .node("Relu", &["cat"], &["y"], vec![])
        .encode();
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("gemm_concat.onnx");
    std::fs::write(&path, model).expect("write the model");
    build_and_check(&path, &["--recipe", "std::cpu"]);
}

#[test]
fn hostile_tensor_names_build() {
    let (x, w, b, h, y) = (
        "1 input */ int evil; /*",
        "w\"); system(\"rm -rf /",
        "3bias",
        "h\\\n#define x",
        "*/ out put",
    );
    let model = ModelBuilder::new("evil */ model", 17)
        .input(x, [2i64, 3])
        .output(y, [2i64, 4])
        .initializer(w, &[3, 4], (0..12).map(|v| v as f32 * 0.25 - 1.0).collect())
        .initializer(b, &[4], vec![0.5, -0.5, 1.0, 0.0])
        .node(
            "Gemm",
            &[x, w, b],
            &[h],
            vec![("alpha", AttrValue::Float(0.5))],
        )
        .node("Relu", &[h], &[y], vec![])
        .encode();
    let ran = build_encoded(&model);
    let header = std::fs::read_to_string(ran.path().join("model.h")).expect("header");
    let comment_ends = header.matches("*/").count();
    assert_eq!(comment_ends, header.matches("/*").count(), "{header}");
    assert!(
        !header.contains("evil;") && !header.contains("#define x"),
        "{header}"
    );
}

/// Inputs without a C type of their own (f16 bit patterns, int8) are generated by the harness
/// through the same store rules as the interpreter's, and the helpers they need come along.
#[test]
fn generated_narrow_and_integer_inputs_match() {
    const FLOAT: i64 = 1;
    let model = ModelBuilder::new("typed", 17)
        .input_typed("h", DType::F16, [3i64, 5])
        .input_typed("i", DType::I8, [3i64, 5])
        .output("y", [3i64, 5])
        .node("Cast", &["h"], &["hf"], vec![("to", AttrValue::Int(FLOAT))])
        .node("Cast", &["i"], &["if"], vec![("to", AttrValue::Int(FLOAT))])
        .node("Add", &["hf", "if"], &["y"], vec![])
        .encode();
    let ran = build_encoded(&model);
    let source = std::fs::read_to_string(ran.path().join("model.c")).expect("source");
    assert!(source.contains("dm_enc_f16(") && !source.contains("dm_enc_bf16("));
    let ints = std::fs::read(ran.path().join("io/in1.bin")).expect("generated");
    let distinct: std::collections::BTreeSet<i8> = ints.iter().map(|b| *b as i8).collect();
    assert!(distinct.len() > 3, "varied values: {distinct:?}");
    assert!(distinct.iter().all(|v| (-8..8).contains(v)), "{distinct:?}");
}

#[test]
fn a_non_empty_directory_is_kept_unless_forced() {
    let root = tempfile::tempdir().expect("tempdir");
    let dir = root.path().join("ship");
    std::fs::create_dir(&dir).expect("mkdir");
    std::fs::write(dir.join("notes.txt"), b"mine").expect("write");
    let (model, out) = (fixture("mlp.onnx"), dir.to_str().expect("utf-8 path"));
    let model = model.to_str().expect("utf-8 path");
    let o = dmove(&["build", model, "-o", out]);
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("is not empty") && err.contains("--force"),
        "{err}"
    );
    assert!(dir.join("notes.txt").is_file());
    let o = dmove(&["build", model, "-o", out, "--force"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(!dir.join("notes.txt").exists() && dir.join("model.c").is_file());
    let left: Vec<_> = std::fs::read_dir(root.path())
        .expect("list")
        .map(|e| e.expect("entry").file_name())
        .collect();
    assert_eq!(left, ["ship"], "no staging directory is left behind");
}

/// `make VARS TARGET` in `dir` (with this process's environment), its stdout.
fn make(dir: &Path, args: &[&str]) -> String {
    let out = run(Command::new("make").arg("-s").args(args).current_dir(dir));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn make_run_exports_the_openmp_settings_the_benchmark_runner_uses() {
    let ran = build_and_check(&fixture("mlp.onnx"), &[]);
    let show = dmove::codegen::OMP_DEFAULTS
        .iter()
        .map(|d| format!("{0}=$${0}", d.var))
        .collect::<Vec<_>>()
        .join(" ");
    let cpus = dmove::codegen::available_cpus();
    for threads in [1, cpus, cpus + 1] {
        let rule = format!("omp-env: ; @echo \"{show}\"");
        let seen = make(
            ran.path(),
            &["--eval", &rule, "omp-env", &format!("THREADS={threads}")],
        );
        let seen = seen.trim();
        let expected: Vec<String> = dmove::codegen::OMP_DEFAULTS
            .iter()
            .map(|d| {
                let value = dmove::codegen::omp_settings(Some(threads))
                    .into_iter()
                    .find(|(var, _)| *var == d.var)
                    .map(|(_, v)| v.to_string())
                    .or_else(|| std::env::var(d.var).ok())
                    .unwrap_or_default();
                format!("{}={value}", d.var)
            })
            .collect();
        assert_eq!(seen, expected.join(" "), "THREADS={threads}");
    }
}

/// The median `make run` printed (`dm_run: N timed run(s), median X ms, …`).
fn median_ms(stdout: &str) -> f64 {
    let at = stdout.find("median ").expect("a median") + "median ".len();
    let rest = &stdout[at..];
    rest[..rest.find(' ').expect("a unit")]
        .parse()
        .expect("a number")
}

/// The first benchmark a user runs, beside one busy process: the mlp optimized by its recipe
/// against its naive lowering, both shipped by `dmove build` and run by `make run` (the same
/// runtime settings as `dmove bench`, see the test above), alternating over several rounds.
/// The optimized program once ran 56–190× slower here (a barrier's sleeping thread woken a
/// scheduler tick late); the bound tolerates the machine's noise (a ratio of medians, never
/// an absolute time), not that. It measures, so it runs alone: the other tests of a
/// `cargo test` run compile and compute beside it and would be a second, unmeasured load.
#[test]
#[ignore = "a timing ratio beside a busy process: run alone, as .ci/run does (--ignored --test-threads=1)"]
fn the_optimized_mlp_is_not_slower_than_its_baseline_beside_a_busy_process() {
    let model = fixture("mlp.onnx");
    let recipe = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("recipes/mlp.recipe");
    let baseline = build_and_check(&model, &[]);
    let optimized = build_and_check(&model, &["--recipe", recipe.to_str().expect("utf-8 path")]);
    let busy = dmove::bench::load::BusyProcess::start().expect("a busy process starts");
    let mut ratios = Vec::new();
    for _ in 0..5 {
        let time = |dir: &Path| median_ms(&make(dir, &["run", "WARMUP=20", "REPS=200"]));
        let base = time(baseline.path());
        ratios.push(time(optimized.path()) / base);
    }
    drop(busy);
    ratios.sort_by(f64::total_cmp);
    let median = ratios[ratios.len() / 2];
    assert!(
        median <= 1.25,
        "optimized / baseline medians over 5 rounds: {ratios:?}"
    );
}
