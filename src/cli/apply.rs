//! `dmove apply`: one transformation by hand — applied and checked, or explained (where it
//! applies and why not elsewhere) without changing anything.

use super::{
    load_program, output_path, parse_node_id, parse_params, write_output, Bindings, CliError,
};
use crate::ir::text::print_exact;
use crate::ir::validate::validate;
use crate::ir::{NodeId, Program};
use crate::ops::expand::expand_all;
use crate::transform::engine::{Checks, Engine, Layer, Refusal};
use crate::transform::{
    explain, nearest, Explanation, ParamError, Params, Transformation, Verdict,
};
use std::path::PathBuf;

/// `dmove apply`
#[derive(Clone, Debug, clap::Args)]
pub struct ApplyArgs {
    /// The model: an `.onnx` file, or textual IR (any other extension).
    #[arg(value_name = "MODEL")]
    pub model: PathBuf,
    #[command(flatten)]
    pub bindings: Bindings,
    /// Transformation name, spelled as `dmove transforms` lists it.
    #[arg(long = "transform", short = 't', value_name = "NAME")]
    pub transform: String,
    /// Node ids of the site, e.g. `--at n12` (MapFusion takes producer and consumer:
    /// `--at n27,n33`). Required unless `--explain` is given.
    #[arg(
        long,
        num_args = 1..,
        value_delimiter = ',',
        value_name = "NODE",
        required_unless_present = "explain"
    )]
    pub at: Vec<String>,
    /// A parameter, read as the kind the transformation declares, e.g. `--param tiles=32,32,0`
    /// (repeat for several).
    #[arg(long = "param", value_name = "NAME=VALUE")]
    pub params: Vec<String>,
    /// Lower every operator to maps and tasklets before applying.
    #[arg(long)]
    pub expand: bool,
    /// Skip the numerics check (recorded in the step's checks).
    #[arg(long)]
    pub no_numerics: bool,
    /// Waive the transformation's legality conditions (races, coverage, strides); each waived
    /// condition is recorded, and the rewrite is still validated and compared numerically.
    #[arg(long)]
    pub no_legality: bool,
    /// Change nothing: list every candidate site with "applies" or the reason it is refused;
    /// with `--at`, the verdict at that site and the nearest candidate.
    #[arg(long)]
    pub explain: bool,
    /// Write the resulting IR to this file instead of standard output.
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
}

impl ApplyArgs {
    /// The checks, with the layers lowered on the command line (and why, for the step's record).
    pub fn checks(&self) -> Checks {
        let mut checks = Checks::default();
        if self.no_numerics {
            checks = checks.lower(
                Layer::Numerics,
                "lowered on the command line (--no-numerics)",
            );
        }
        if self.no_legality {
            checks = checks.lower(
                Layer::Legality,
                "lowered on the command line (--no-legality)",
            );
        }
        checks
    }
}

pub fn apply(args: &ApplyArgs) -> Result<(), CliError> {
    let t = crate::transform::find(&args.transform)?;
    let mut p = load_program(&args.model, &args.bindings)?;
    if args.expand {
        expand_all(&mut p)?;
        validate(&p)?;
    }
    let params = parse_params(t.schema(), &args.params)?;
    let site = (args.at.iter())
        .map(|s| parse_node_id(s))
        .collect::<Result<Vec<_>, _>>()?;
    let mut engine = Engine::new(args.checks());
    if args.explain {
        let text = match site.as_slice() {
            [] => explain_all(t, &p, &params)?,
            _ => explain_at(&engine, t, &p, &site, &params),
        };
        return write_output(output_path(None), text.as_bytes());
    }
    if site.is_empty() {
        return Err(CliError::Usage(
            "`--at NODE` is required (node ids as printed by `dmove import`); \
             `--explain` without `--at` lists the candidate sites"
                .into(),
        ));
    }
    let step = engine.apply(&mut p, t, &site, &params)?;
    let checks: Vec<String> = step.checks.iter().map(|c| c.to_string()).collect();
    eprintln!("applied {}; checks: {}", step.summary(), checks.join(", "));
    write_output(
        output_path(args.output.as_deref()),
        print_exact(&p).as_bytes(),
    )
}

/// `n27,n33`
fn show_site(site: &[NodeId]) -> String {
    let v: Vec<String> = site.iter().map(|n| n.to_string()).collect();
    v.join(",")
}

fn show_verdict(v: &Verdict) -> String {
    match v {
        Verdict::Applies => "applies".to_string(),
        Verdict::Refused(r) => format!("refused: {r}"),
    }
}

/// Parameter errors that do not depend on the site (an unknown or missing key) would refuse
/// every candidate alike: they are reported once, as the error they are, with its help.
fn site_independent(all: &[Explanation]) -> Option<ParamError> {
    all.iter().find_map(|e| match &e.verdict {
        Verdict::Refused(Refusal::Params(
            err @ (ParamError::Unknown { .. } | ParamError::Missing { .. }),
        )) => Some(err.clone()),
        _ => None,
    })
}

/// Every candidate site with its verdict.
pub fn explain_all(
    t: &dyn Transformation,
    p: &Program,
    params: &Params,
) -> Result<String, CliError> {
    let all = explain(t, p, params);
    if let Some(err) = site_independent(&all) {
        return Err(Refusal::Params(err).into());
    }
    if all.is_empty() {
        return Ok(format!(
            "{} has no candidate sites in this program\n",
            t.name()
        ));
    }
    let applying = all.iter().filter(|e| e.applies()).count();
    let mut out = format!(
        "{}: {} candidate site(s), {applying} apply\n",
        t.name(),
        all.len()
    );
    for e in &all {
        out.push_str(&format!(
            "  {}: {}\n",
            show_site(&e.site),
            show_verdict(&e.verdict)
        ));
    }
    Ok(out)
}

/// The verdict at `site` (planned with the command line's checks, nothing changed) and, when it
/// is refused or not a candidate, the nearest candidate and its verdict.
pub fn explain_at(
    engine: &Engine,
    t: &dyn Transformation,
    p: &Program,
    site: &[NodeId],
    params: &Params,
) -> String {
    let verdict = match engine.plan(p, t, site, params) {
        Ok(_) => Verdict::Applies,
        Err(r) => Verdict::Refused(r),
    };
    let shown = show_site(site);
    let mut out = format!("{} at {shown}: {}\n", t.name(), show_verdict(&verdict));
    let candidate = t.candidates(p).iter().any(|c| c == site);
    if !candidate {
        out.push_str(&format!(
            "{shown} is not among the candidate sites of {}\n",
            t.name()
        ));
    }
    if verdict == Verdict::Applies && candidate {
        return out;
    }
    let Some(&anchor) = site.first() else {
        return out;
    };
    let near = nearest(t, p, anchor, params);
    match &near {
        Some(e) if e.site != site => out.push_str(&format!(
            "nearest candidate: {}: {}\n",
            show_site(&e.site),
            show_verdict(&e.verdict)
        )),
        Some(_) => {}
        None => {
            out.push_str(&format!(
                "{} has no candidate sites in this program\n",
                t.name()
            ));
            return out;
        }
    }
    if !near.is_some_and(|e| e.applies()) {
        out.push_str(&applying(t, p, params));
    }
    out
}

/// `MapFusion applies at 2 candidate site(s): n27,n33; n40,n46` (the first few), so a refused
/// site comes with where the transformation does apply.
fn applying(t: &dyn Transformation, p: &Program, params: &Params) -> String {
    const SHOWN: usize = 8;
    let sites: Vec<String> = (explain(t, p, params).into_iter())
        .filter(|e| e.applies())
        .map(|e| show_site(&e.site))
        .collect();
    if sites.is_empty() {
        return format!("{} applies at none of its candidate sites\n", t.name());
    }
    let more = if sites.len() > SHOWN { "; …" } else { "" };
    format!(
        "{} applies at {} candidate site(s): {}{more}\n",
        t.name(),
        sites.len(),
        sites[..sites.len().min(SHOWN)].join("; ")
    )
}
