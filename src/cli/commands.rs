//! The bodies of the `dmove` commands.

use super::{is_onnx, load_program, parse_node_id, parse_params, write_output, Bindings, CliError};
use crate::demo::model::{encoder_model, EncoderConfig};
use crate::demo::{DemoOptions, DemoReport};
use crate::ir::text::{print, print_exact};
use crate::ir::validate::validate;
use crate::ops::expand::expand_all;
use crate::transform::engine::{apply as apply_step, Checks, Layer};
use std::path::PathBuf;

/// `dmove demo`
pub struct DemoArgs {
    pub json: bool,
    pub write_model: Option<PathBuf>,
    pub config: EncoderConfig,
    pub warmup: usize,
    pub reps: usize,
    pub peer: bool,
}

pub fn demo(args: &DemoArgs) -> Result<(), CliError> {
    let opts = DemoOptions {
        config: args.config,
        warmup: args.warmup,
        reps: args.reps,
        peer: args.peer,
        ..DemoOptions::default()
    };
    if let Some(path) = &args.write_model {
        write_output(path, &encoder_model(&args.config, opts.seed))?;
        eprintln!("wrote the demo model to {}", path.display());
        return Ok(());
    }
    let report = crate::demo::run(&opts, &mut |msg| eprintln!("· {msg}"))?;
    if args.json {
        let json =
            serde_json::to_string_pretty(&report).map_err(|e| CliError::Failed(e.to_string()))?;
        println!("{json}");
    } else {
        print!("{}", render_demo(&report));
    }
    Ok(())
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
    out.push_str(&crate::bench::render_table(&r.rows));
    out.push_str(&format!(
        "\noptimized: {} checked rewrites ({} refused and skipped); speedup {:.2}x over the baseline\n",
        r.steps.len(),
        r.refused.len(),
        r.speedup
    ));
    out.push_str(&format!(
        "outputs match the reference interpreter within |err| <= {} + {}·|ref| (max abs error {:.2e})\n",
        tol.atol, tol.rtol, r.max_abs_error
    ));
    out
}

/// `dmove import`
pub struct ImportArgs {
    pub model: PathBuf,
    pub bindings: Bindings,
    pub expand: bool,
    pub exact: bool,
    pub dot: Option<PathBuf>,
    pub output: Option<PathBuf>,
    /// Print the model summary instead of the IR.
    pub summary: bool,
    /// The summary as JSON.
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
    write_output(
        args.output
            .as_deref()
            .unwrap_or_else(|| std::path::Path::new("-")),
        text.as_bytes(),
    )
}

/// `dmove import --summary`: operators (counted in the ONNX graph when the model is ONNX),
/// parameters, weight bytes and FLOPs.
fn summary(args: &ImportArgs) -> Result<(), CliError> {
    let (p, model) = if is_onnx(&args.model) {
        let model = crate::onnx::load_file(&args.model)?;
        let opts = args
            .bindings
            .import_options(args.model.parent().map(std::path::Path::to_path_buf))?;
        (crate::onnx::import(&model, &opts)?, Some(model))
    } else {
        (load_program(&args.model, &args.bindings)?, None)
    };
    let s = crate::onnx::summary::summarize(&p, model.as_ref());
    let text = if args.json {
        serde_json::to_string_pretty(&s).map_err(|e| CliError::Failed(e.to_string()))? + "\n"
    } else {
        s.to_string()
    };
    write_output(
        args.output
            .as_deref()
            .unwrap_or_else(|| std::path::Path::new("-")),
        text.as_bytes(),
    )
}

/// `dmove transforms`
pub fn transforms(json: bool) -> Result<(), CliError> {
    let all = crate::transform::all();
    if json {
        let v: Vec<_> = all
            .iter()
            .map(|t| {
                serde_json::json!({
                    "name": t.name(),
                    "level": t.level(),
                    "doc": t.doc(),
                    "params": t.params(),
                })
            })
            .collect();
        println!("{}", serde_json::Value::Array(v));
        return Ok(());
    }
    let width = all.iter().map(|t| t.name().len()).max().unwrap_or(0) + 2;
    for t in all {
        let params: Vec<String> = t
            .params()
            .iter()
            .map(|p| format!("{}: {}", p.name, p.kind))
            .collect();
        let level = format!("{:?}", t.level());
        println!("{:<width$} {level:<14} {}", t.name(), t.doc());
        if !params.is_empty() {
            println!("{:<width$} {:<14} params: {}", "", "", params.join(", "));
        }
    }
    Ok(())
}

/// `dmove apply`
pub struct ApplyArgs {
    pub model: PathBuf,
    pub bindings: Bindings,
    pub transform: String,
    pub at: Vec<String>,
    pub params: Vec<String>,
    pub expand: bool,
    pub numerics: bool,
    pub output: Option<PathBuf>,
}

pub fn apply(args: &ApplyArgs) -> Result<(), CliError> {
    let mut p = load_program(&args.model, &args.bindings)?;
    if args.expand {
        expand_all(&mut p)?;
    }
    let t = crate::transform::lookup(&args.transform).ok_or_else(|| {
        let names: Vec<&str> = crate::transform::all().iter().map(|t| t.name()).collect();
        CliError::Failed(format!(
            "no transformation named `{}` (see `dmove transforms`: {})",
            args.transform,
            names.join(", ")
        ))
    })?;
    let site = args
        .at
        .iter()
        .map(|s| parse_node_id(s))
        .collect::<Result<Vec<_>, _>>()?;
    if site.is_empty() {
        return Err(CliError::Failed(
            "`--at NODE` is required (node ids as printed by `dmove import`)".into(),
        ));
    }
    let params = parse_params(&args.params)?;
    let checks = if args.numerics {
        Checks::default()
    } else {
        Checks::default().lower(Layer::Numerics)
    };
    let step = apply_step(&mut p, t, &site, &params, &checks)?;
    eprintln!(
        "applied {} at {:?}; touched {:?}; checks: {}",
        step.transformation,
        step.site,
        step.touched,
        step.checks.join(", ")
    );
    write_output(
        args.output
            .as_deref()
            .unwrap_or_else(|| std::path::Path::new("-")),
        print_exact(&p).as_bytes(),
    )
}

/// `dmove c`: the generated C for a model (lowered completely first).
pub fn emit_c(
    model: &std::path::Path,
    bindings: &Bindings,
    output: Option<&std::path::Path>,
) -> Result<(), CliError> {
    let mut p = load_program(model, bindings)?;
    crate::onnx::idioms::require_bound_inputs(&p)?;
    expand_all(&mut p)?;
    let c = crate::codegen::emit(&p)?;
    write_output(
        output.unwrap_or_else(|| std::path::Path::new("-")),
        c.source.as_bytes(),
    )
}
