//! The bodies of `dmove demo`, `import` and `c`, with their arguments.

use super::{
    is_onnx, load_program, output_path, print_json, validated, write_output, Bindings, CliError,
};
use crate::demo::model::{encoder_model, EncoderConfig};
use crate::demo::{DemoOptions, DemoReport};
use crate::ir::text::{print, print_exact};
use crate::ir::validate::validate;
use crate::ops::expand::expand_all;
use crate::transform::engine::{Layer, Step};
use std::path::{Path, PathBuf};

/// `dmove demo`
#[derive(Clone, Debug, clap::Args)]
pub struct DemoArgs {
    /// Print the report as JSON.
    #[arg(long)]
    pub json: bool,
    /// Only write the demo's ONNX model to this file (so peers can run the same model).
    #[arg(long, value_name = "FILE")]
    pub write_model: Option<PathBuf>,
    /// Timed repetitions per variant (the median is reported).
    #[arg(long, default_value_t = 15)]
    pub reps: usize,
    /// Untimed warm-up runs per variant.
    #[arg(long, default_value_t = 3)]
    pub warmup: usize,
    /// Skip the ONNX Runtime and OpenVINO comparisons.
    #[arg(long)]
    pub no_peer: bool,
    /// Threads of the generated programs and the peers (default: every CPU).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..))]
    pub threads: Option<u16>,
    /// Sequence length (tokens) of the encoder layer's input.
    #[arg(long, default_value_t = 128, value_name = "TOKENS")]
    pub seq: i64,
    /// Hidden size (model width); a multiple of `--heads`.
    #[arg(long, default_value_t = 256, value_name = "WIDTH")]
    pub hidden: i64,
    /// Number of attention heads.
    #[arg(long, default_value_t = 4, value_name = "N")]
    pub heads: i64,
    /// Inner size of the feed-forward block.
    #[arg(long, default_value_t = 1024, value_name = "WIDTH")]
    pub ffn: i64,
}

impl DemoArgs {
    /// The encoder layer the sizes describe.
    pub fn config(&self) -> EncoderConfig {
        EncoderConfig {
            seq: self.seq,
            hidden: self.hidden,
            heads: self.heads,
            ffn: self.ffn,
        }
    }
}

pub fn demo(args: &DemoArgs) -> Result<(), CliError> {
    let config = args.config();
    let defaults = DemoOptions::default();
    let opts = DemoOptions {
        config,
        warmup: args.warmup,
        reps: args.reps,
        threads: args.threads.map_or(defaults.threads, usize::from),
        peer: !args.no_peer,
        ..defaults
    };
    if let Some(path) = &args.write_model {
        write_output(path, &encoder_model(&config, opts.seed))?;
        eprintln!("wrote the demo model to {}", path.display());
        return Ok(());
    }
    let progress = crate::progress::Mode::for_stderr(args.json);
    let report = crate::demo::run(&opts, progress, &mut |msg| eprintln!("· {msg}"))?;
    if args.json {
        print_json(&report)
    } else {
        write_output(output_path(None), render_demo(&report).as_bytes())
    }
}

fn render_demo(r: &DemoReport) -> String {
    let tol = crate::numerics::tolerance(crate::ir::DType::F32);
    let mut out = format!(
        "\ntransformer encoder layer: batch 1, sequence {}, hidden {}, {} heads, FFN {} — {:.1} MFLOP\n\n",
        r.config.seq,
        r.config.hidden,
        r.config.heads,
        r.config.ffn,
        r.flops as f64 / 1e6
    );
    let peak = crate::bench::machine::Machine::detect().peak_gflops;
    out.push_str(&crate::bench::report::render_table(&r.rows, peak));
    out.push_str(&crate::bench::report::load_note(&r.rows));
    out.push_str(&format!(
        "\noptimized by the recipe {}: {} rewrites; {}\n{} tried and skipped (not applicable, each left the program unchanged); speedup {:.2}x over the baseline\n",
        r.recipe,
        r.steps.len(),
        layers_run(&r.steps),
        r.refused.len(),
        r.speedup
    ));
    out.push_str(&format!("{}\n", r.check_time.render()));
    out.push_str(&format!(
        "outputs match the reference interpreter within |err| <= {} + {}·|ref| (max abs error {:.2e})\n",
        tol.atol, tol.rtol, r.max_abs_error
    ));
    out
}

/// Which check layers ran on how many of `steps`, and how numerics ran: "checks per step:
/// structural 172, legality 172, numerics 172 (139 reference interpreter, 33 compiled C; 96
/// with the original's outputs kept from the step before)".
pub(crate) fn layers_run(steps: &[Step]) -> String {
    let mut parts = Vec::new();
    for layer in [Layer::Structural, Layer::Legality, Layer::Numerics] {
        let ran: Vec<&str> = steps.iter().filter_map(|s| s.passed(layer)).collect();
        let lowered = steps.len() - ran.len();
        let mut part = format!("{} {}", layer.name(), ran.len());
        if layer == Layer::Numerics {
            let compiled = ran.iter().filter(|how| how.contains("compiled C")).count();
            let kept = (ran.iter())
                .filter(|how| how.contains("outputs kept from the previous step"))
                .count();
            let kept = match kept {
                0 => String::new(),
                n => format!("; {n} with the original's outputs kept from the step before"),
            };
            part.push_str(&format!(
                " ({} reference interpreter, {compiled} compiled C{kept})",
                ran.len() - compiled
            ));
        }
        if lowered > 0 {
            part.push_str(&format!(", {lowered} lowered"));
        }
        parts.push(part);
    }
    format!("checks per step: {}", parts.join(", "))
}

/// `dmove import`
#[derive(Clone, Debug, clap::Args)]
pub struct ImportArgs {
    /// The model: an `.onnx` file, or textual IR (any other extension).
    #[arg(value_name = "MODEL")]
    pub model: PathBuf,
    #[command(flatten)]
    pub bindings: Bindings,
    /// Lower every operator to maps and tasklets first.
    #[arg(long)]
    pub expand: bool,
    /// Include every constant's values, so the output can be loaded again.
    #[arg(long)]
    pub exact: bool,
    /// Write Graphviz DOT to this file (`-` for standard output).
    #[arg(long, value_name = "FILE")]
    pub dot: Option<PathBuf>,
    /// Write the IR (or the summary) to this file instead of standard output.
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Print a summary instead of the IR: operators with counts, parameters, weight bytes,
    /// FLOPs.
    #[arg(long)]
    pub summary: bool,
    /// With `--summary`: print it as JSON.
    #[arg(long, requires = "summary")]
    pub json: bool,
}

pub fn import(args: &ImportArgs) -> Result<(), CliError> {
    if args.summary {
        return summary(args);
    }
    let mut p = load_program(&args.model, &args.bindings)?;
    if args.expand {
        expand_all(&mut p)?;
        validate(&p)?;
    }
    if let Some(dot) = &args.dot {
        write_output(dot, crate::ir::dot::to_dot(&p).as_bytes())?;
        if args.output.is_none() {
            return Ok(());
        }
    }
    let text = if args.exact {
        print_exact(&p)
    } else {
        print(&p)
    };
    write_output(output_path(args.output.as_deref()), text.as_bytes())
}

/// `dmove import --summary`: operators (counted in the ONNX graph when the model is ONNX),
/// parameters, weight bytes and FLOPs.
fn summary(args: &ImportArgs) -> Result<(), CliError> {
    let (p, model) = if is_onnx(&args.model) {
        let model = crate::onnx::load_file(&args.model)?;
        let opts = args
            .bindings
            .import_options(args.model.parent().map(std::path::Path::to_path_buf))?;
        let p = validated(&args.model, crate::onnx::import(&model, &opts)?)?;
        (p, Some(model))
    } else {
        (load_program(&args.model, &args.bindings)?, None)
    };
    let s = crate::onnx::summary::summarize(&p, model.as_ref());
    let text = if args.json {
        serde_json::to_string_pretty(&s)? + "\n"
    } else {
        s.to_string()
    };
    write_output(output_path(args.output.as_deref()), text.as_bytes())
}

/// `dmove c`
#[derive(Clone, Debug, clap::Args)]
pub struct EmitCArgs {
    /// The model: an `.onnx` file, or textual IR (any other extension).
    #[arg(value_name = "MODEL")]
    pub model: PathBuf,
    #[command(flatten)]
    pub bindings: Bindings,
    /// Write the C source to this file instead of standard output.
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
}

/// `dmove c`: the generated C for a model (lowered completely first).
pub fn emit_c(args: &EmitCArgs) -> Result<(), CliError> {
    let c = crate::codegen::emit(&lowered(&args.model, &args.bindings)?)?;
    write_output(output_path(args.output.as_deref()), c.source.as_bytes())
}

/// The model at `path` with every input dimension bound and every operator expanded: what code
/// generation takes when no recipe chose the implementations (`dmove c`, `dmove build`).
pub(crate) fn lowered(path: &Path, bindings: &Bindings) -> Result<crate::ir::Program, CliError> {
    let mut p = load_program(path, bindings)?;
    crate::onnx::idioms::require_bound_inputs(&p)?;
    expand_all(&mut p)?;
    Ok(p)
}
