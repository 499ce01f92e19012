//! What a script function called from a recipe may do: apply transformations through the
//! engine, ask what would apply, and measure.
//!
//! Every action goes through the session the recipe lent ([`super::world::with_session`]):
//! `apply` is the engine's transactional apply with the run's checks, and the step it returns
//! is recorded by the recipe interpreter like a step the recipe issued itself. Actions are
//! refused inside a transformation's check or rewrite, so a transformation cannot apply other
//! steps behind the engine's back. Machine facts a heuristic needs (`cache_sizes()`) are read
//! here, read-only, so scripts need no file access of their own.

use super::convert::{param_value, params_from, site_array, site_from};
use super::views::ProgramView;
use super::world::{with_program, with_session, Session};
use crate::recipe::run::measure;
use crate::transform::{self, engine::Step, ParamKind};
use rhai::{Array, Dynamic, Engine, EvalAltResult, Map, INT};

type Res<T> = Result<T, Box<EvalAltResult>>;

pub fn register(e: &mut Engine) {
    e.register_fn("program", || ProgramView);
    e.register_fn("apply", |name: &str, site: Dynamic, params: Map| {
        apply(name, &site, &params)
    });
    e.register_fn("apply", |name: &str, site: Dynamic| {
        apply(name, &site, &Map::new())
    });
    e.register_fn("applies", |name: &str, site: Dynamic, params: Map| {
        applies(name, &site, &params)
    });
    e.register_fn("applies", |name: &str, site: Dynamic| {
        applies(name, &site, &Map::new())
    });
    e.register_fn("candidates", candidates);
    e.register_fn("transformations", transformations);
    e.register_fn("dmd", || measured(measure::dmd));
    e.register_fn("estimate", || measured(measure::estimate_ms));
    e.register_fn("bytes_moved", || measured(measure::bytes));
    e.register_fn("bench", bench);
    e.register_fn("cache_sizes", cache_sizes);
}

fn err(m: impl Into<String>) -> Box<EvalAltResult> {
    m.into().into()
}

/// Runs an action on the lent session; its time is the engine's, not the script's.
fn session<R>(f: impl FnOnce(&mut Session) -> Result<R, String>) -> Res<R> {
    super::sandbox::native(|| with_session(f))
        .map_err(err)?
        .map_err(err)
}

/// Applies `name` at `site` through the engine; the step as a map, or an error saying why the
/// engine refused (catchable with `try`/`catch`).
fn apply(name: &str, site: &Dynamic, params: &Map) -> Res<Map> {
    let t = transform::find(name).map_err(|e| err(e.to_string()))?;
    let site = site_from(site).map_err(err)?;
    let params = params_from(params).map_err(err)?;
    session(|s| {
        let step =
            (s.engine.apply(&mut s.program, t, &site, &params)).map_err(|r| format!("{r}"))?;
        let m = step_map(&step);
        s.steps.push(step);
        Ok(m)
    })
}

fn step_map(step: &Step) -> Map {
    let mut m = Map::new();
    m.insert("transformation".into(), step.transformation.clone().into());
    m.insert("site".into(), site_array(&step.site).into());
    let params: Map = (step.params.iter())
        .map(|(k, v)| (k.into(), param_value(v)))
        .collect();
    m.insert("params".into(), params.into());
    m.insert("hash_after".into(), step.hash_after.clone().into());
    m
}

/// `()` when `name` would apply at `site` (planned, nothing changed), else the reason.
fn applies(name: &str, site: &Dynamic, params: &Map) -> Res<Dynamic> {
    let t = transform::find(name).map_err(|e| err(e.to_string()))?;
    let site = site_from(site).map_err(err)?;
    let params = params_from(params).map_err(err)?;
    session(|s| {
        Ok(match s.engine.plan(&s.program, t, &site, &params) {
            Ok(_) => Dynamic::UNIT,
            Err(r) => Dynamic::from(r.to_string()),
        })
    })
}

/// The sites `name` lists as worth trying on the current program.
fn candidates(name: &str) -> Res<Array> {
    let t = transform::find(name).map_err(|e| err(e.to_string()))?;
    let sites = with_program(|p| t.candidates(p)).map_err(err)?;
    Ok(sites.iter().map(|s| site_array(s).into()).collect())
}

/// The registry with its typed schemas: name, level, doc, site roles, parameters.
fn transformations() -> Array {
    (transform::all().into_iter())
        .map(|t| {
            let s = t.schema();
            let mut m = Map::new();
            m.insert("name".into(), s.name.into());
            m.insert("level".into(), format!("{:?}", s.level).into());
            m.insert("doc".into(), s.doc.into());
            let roles: Array = (s.site.iter())
                .map(|r| {
                    let mut rm = Map::new();
                    rm.insert("name".into(), r.name.into());
                    rm.insert("node".into(), r.class.describe().into());
                    rm.insert("optional".into(), r.optional.into());
                    rm.into()
                })
                .collect();
            m.insert("site".into(), roles.into());
            let params: Array = (s.params.iter())
                .map(|d| {
                    let mut pm = Map::new();
                    pm.insert("name".into(), d.name.into());
                    pm.insert("kind".into(), kind_name(&d.kind).into());
                    pm.insert("expected".into(), d.kind.describe().into());
                    pm.insert("doc".into(), d.doc.into());
                    pm.into()
                })
                .collect();
            m.insert("params".into(), params.into());
            m.into()
        })
        .collect()
}

fn kind_name(k: &ParamKind) -> &'static str {
    match k {
        ParamKind::Int { .. } => "int",
        ParamKind::Ints { .. } => "ints",
        ParamKind::Enum { .. } => "enum",
        ParamKind::Bool => "bool",
        ParamKind::Data => "data",
        ParamKind::MapParam => "map_param",
        ParamKind::Implementation => "implementation",
    }
}

fn measured(f: fn(&crate::ir::Program) -> Result<f64, String>) -> Res<f64> {
    super::sandbox::native(|| with_program(f))
        .map_err(err)?
        .map_err(err)
}

/// The median time in ms of `reps` runs of the current program's C (not while `dmove check`
/// replays: a replay must not depend on timing).
fn bench(reps: INT) -> Res<f64> {
    let reps = usize::try_from(reps).map_err(|_| err("bench(reps) needs reps ≥ 1"))?;
    session(|s| {
        match s.measure {
        true => measure::time_ms(&s.program, reps),
        false => Err("bench() does not run here: this run does not measure (`dmove check` replays without timing; `dmove run --bench` measures)".into()),
    }
    })
}

/// The data-cache sizes of this machine in bytes (`l1d`, `l2`, `l3`), from the kernel's
/// description of CPU 0; a level the kernel does not describe is `()`.
fn cache_sizes() -> Map {
    let mut m = Map::new();
    for key in ["l1d", "l2", "l3"] {
        m.insert(key.into(), Dynamic::UNIT);
    }
    for index in 0..8 {
        let dir = format!("/sys/devices/system/cpu/cpu0/cache/index{index}");
        let read = |f: &str| std::fs::read_to_string(format!("{dir}/{f}")).ok();
        let (Some(level), Some(kind), Some(size)) = (read("level"), read("type"), read("size"))
        else {
            continue;
        };
        let key = match (level.trim(), kind.trim()) {
            ("1", "Data" | "Unified") => "l1d",
            ("2", "Data" | "Unified") => "l2",
            ("3", "Data" | "Unified") => "l3",
            _ => continue,
        };
        if let Some(bytes) = parse_size(size.trim()) {
            m.insert(key.into(), Dynamic::from_int(bytes));
        }
    }
    m
}

/// `48K`, `1024K`, `32M` → bytes.
fn parse_size(s: &str) -> Option<INT> {
    let (digits, unit) = s.split_at(s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len()));
    let n: INT = digits.parse().ok()?;
    match unit {
        "" => Some(n),
        "K" => n.checked_mul(1 << 10),
        "M" => n.checked_mul(1 << 20),
        "G" => n.checked_mul(1 << 30),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn cache_sizes_parse_the_kernels_units() {
        assert_eq!(super::parse_size("48K"), Some(48 * 1024));
        assert_eq!(super::parse_size("32M"), Some(32 << 20));
        assert_eq!(super::parse_size("512"), Some(512));
        assert_eq!(super::parse_size("3X"), None);
    }
}
