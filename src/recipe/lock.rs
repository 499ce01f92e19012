//! Lock files: what a recipe run decided and did on one model, so `dmove check` can replay it
//! and say exactly where a later run stops reproducing it.
//!
//! A lock lives beside its recipe (`NAME.recipe.lock`) and is meant to be committed and diffed,
//! so its bytes are a pure function of its content: pretty JSON, keys in struct order or sorted
//! (`BTreeMap`), entries sorted by what identifies them, floats printed by serde_json's shortest
//! round-trip form, one trailing newline. It is written atomically, so an interrupted run never
//! leaves half a lock behind.
//!
//! One entry per (model, dimension bindings, shape bindings): a run replaces the entry it
//! reproduces and keeps every other, so one recipe can lock several models or several shapes
//! of one model. [`compare`] (in [`drift`]) turns a locked entry and a replayed one into the
//! differences a reviewer needs to read.

mod drift;

pub use drift::{compare, compare_header, Drift};

use super::run::choose::Decision;
use super::run::value::ParamValue;
use super::run::{RecordedStep, RunReport};
use super::Sources;
use crate::ir::NodeId;
use crate::transform::Params;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::path::{Component, Path, PathBuf};

/// The lock format this tool writes. Format 1 hashed each program's text with every weight
/// printed; format 2 each constant by its digest; format 3 also each scope by its digest (the
/// Merkle form of `transform::engine::program_hash`). An older lock is read, but its IR
/// hashes differ from today's for the same programs ([`drift::compare_header`] says so, and
/// `dmove check --update` re-records them once). Any other format is refused rather than
/// misread.
pub const FORMAT: u32 = 3;

/// The oldest format this tool reads.
pub const OLDEST_FORMAT: u32 = 1;

/// A whole lock file.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Lock {
    pub format: u32,
    /// `dmove 0.1.0`: the tool that wrote the lock.
    pub tool: String,
    /// The recipe's header name.
    pub recipe: String,
    /// [`super::modules::Loaded::hash`]: every module's name and source.
    pub recipe_hash: String,
    pub entries: Vec<LockEntry>,
}

/// What one run did on one model with one set of bindings.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LockEntry {
    /// The model's path relative to the lock file's directory, with `/` separators (so a lock
    /// written on one machine reads the same on another).
    pub model: String,
    pub model_sha256: String,
    pub dims: BTreeMap<String, i64>,
    pub shapes: BTreeMap<String, Vec<i64>>,
    /// Imported with `--as-written` (no folding); omitted when false.
    #[serde(default, skip_serializing_if = "is_false")]
    pub as_written: bool,
    /// The `--set` values the run was given (a replay gives them again); omitted when none.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub set: BTreeMap<String, String>,
    /// The final value of every parameter (module parameters as `cpu::tile`).
    pub params: BTreeMap<String, ParamValue>,
    /// How each searched or fixed parameter was decided, with every candidate's score.
    pub decisions: Vec<Decision>,
    pub steps: Vec<LockedStep>,
    /// [`crate::transform::engine::program_hash`] of the program the run produced.
    pub final_hash: String,
}

/// One applied rewrite: enough to name it in a diff and to verify a replay.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LockedStep {
    pub transformation: String,
    /// The hash of the script that declares the transformation (scripted ones only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub script: Option<String>,
    pub site: Vec<NodeId>,
    pub params: Params,
    /// The rule that issued the step (`None` for `main` itself).
    pub rule: Option<String>,
    /// The 1-based line of the call in the file that holds it.
    pub line: usize,
    pub hash_after: String,
}

/// What identifies an entry: a run on the same key replaces it.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct EntryKey<'a> {
    model: &'a str,
    dims: &'a BTreeMap<String, i64>,
    shapes: &'a BTreeMap<String, Vec<i64>>,
    as_written: bool,
}

fn is_false(b: &bool) -> bool {
    !*b
}

/// Why a lock could not be read or written.
#[derive(Debug, thiserror::Error, miette::Diagnostic)]
pub enum LockError {
    #[error("cannot read the lock {}", path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{} is not a lock file dmove can read", path.display())]
    #[diagnostic(
        code(dmove::lock::malformed),
        help(
            "it was edited by hand or written by another tool; delete it and `dmove run` \
             writes a fresh one"
        )
    )]
    Malformed {
        path: PathBuf,
        #[source]
        source: serde_json::Error,
    },
    #[error("{} has lock format {found}; this dmove reads format {FORMAT}", path.display())]
    #[diagnostic(
        code(dmove::lock::format),
        help("run the dmove that wrote it, or rewrite it with `dmove check --update`")
    )]
    Format { path: PathBuf, found: u32 },
    #[error("cannot write the lock {}", path.display())]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// `dmove 0.1.0`.
pub fn tool_version() -> String {
    format!("dmove {}", env!("CARGO_PKG_VERSION"))
}

impl Lock {
    /// An empty lock for the recipe `name` whose modules hash to `recipe_hash`, written by this
    /// tool.
    pub fn new(recipe: &str, recipe_hash: &str) -> Lock {
        Lock {
            format: FORMAT,
            tool: tool_version(),
            recipe: recipe.to_string(),
            recipe_hash: recipe_hash.to_string(),
            entries: Vec::new(),
        }
    }

    /// The lock's bytes: pretty JSON with one trailing newline.
    pub fn to_json(&self) -> String {
        // Every field is a string, integer, float, list or string-keyed map: serialization
        // cannot fail, and an empty object would still be a readable (if useless) lock.
        serde_json::to_string_pretty(self).unwrap_or_else(|_| "{}".into()) + "\n"
    }

    pub fn from_json(path: &Path, text: &str) -> Result<Lock, LockError> {
        #[derive(Deserialize)]
        struct Header {
            format: u32,
        }
        let malformed = |source| LockError::Malformed {
            path: path.to_path_buf(),
            source,
        };
        let header: Header = serde_json::from_str(text).map_err(malformed)?;
        if !(OLDEST_FORMAT..=FORMAT).contains(&header.format) {
            return Err(LockError::Format {
                path: path.to_path_buf(),
                found: header.format,
            });
        }
        serde_json::from_str(text).map_err(malformed)
    }

    pub fn read(path: &Path) -> Result<Lock, LockError> {
        let text = std::fs::read_to_string(path).map_err(|source| LockError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        Lock::from_json(path, &text)
    }

    /// The lock at `path`, or `None` when there is no file there yet.
    pub fn read_if_exists(path: &Path) -> Result<Option<Lock>, LockError> {
        match path.try_exists() {
            Ok(false) => Ok(None),
            _ => Lock::read(path).map(Some),
        }
    }

    /// Writes the lock atomically.
    pub fn write(&self, path: &Path) -> Result<(), LockError> {
        crate::fsutil::write_atomic(path, self.to_json().as_bytes()).map_err(|source| {
            LockError::Write {
                path: path.to_path_buf(),
                source,
            }
        })
    }

    /// Replaces the entry with `entry`'s model and bindings (or adds it), keeping the entries
    /// sorted so the file does not depend on the order runs happened in.
    pub fn upsert(&mut self, entry: LockEntry) {
        match self.entries.iter_mut().find(|e| e.key() == entry.key()) {
            Some(slot) => *slot = entry,
            None => self.entries.push(entry),
        }
        self.entries.sort_by(|a, b| a.key().cmp(&b.key()));
    }

    /// This lock rewritten for the current tool and recipe, with `entries` upserted into it.
    pub fn updated(mut self, recipe: &str, recipe_hash: &str, entries: Vec<LockEntry>) -> Lock {
        self.format = FORMAT;
        self.tool = tool_version();
        self.recipe = recipe.to_string();
        self.recipe_hash = recipe_hash.to_string();
        for e in entries {
            self.upsert(e);
        }
        self
    }
}

impl Lock {
    /// The decisions a run on `key` replays instead of searching again (a build, a benchmark):
    /// those of the entry for the same model content, bindings and `--set` values, when the
    /// lock was written by this recipe (`recipe_hash`); `None` otherwise.
    pub fn decisions_for(
        &self,
        key: &ModelKey,
        recipe_hash: &str,
    ) -> Option<BTreeMap<String, ParamValue>> {
        if self.recipe_hash != recipe_hash {
            return None;
        }
        (self.entries.iter())
            .find(|e| {
                e.model_sha256 == key.model_sha256
                    && e.dims == key.dims
                    && e.shapes == key.shapes
                    && e.as_written == key.as_written
                    && e.set == key.set
            })
            .map(LockEntry::replayed)
    }
}

impl LockEntry {
    fn key(&self) -> EntryKey<'_> {
        EntryKey {
            model: &self.model,
            dims: &self.dims,
            shapes: &self.shapes,
            as_written: self.as_written,
        }
    }

    /// The values a replay takes from the lock instead of deciding again: every searched
    /// parameter's chosen value (and those already replayed from a lock). Parameters with a
    /// default, `choose … fixed` and `--set` are not among them, so a changed default shows up
    /// as a drift rather than being masked by the lock; `--set` values are replayed from
    /// [`LockEntry::set`].
    pub fn replayed(&self) -> BTreeMap<String, ParamValue> {
        (self.decisions.iter())
            .filter(|d| !matches!(d.by.as_str(), "fixed" | "set"))
            .flat_map(|d| d.chosen.clone())
            .collect()
    }

    /// `tests/model.onnx` or `tests/model.onnx (batch=1; input=1x3x8x8)`: how the entry is
    /// named in `dmove check`'s output.
    pub fn describe(&self) -> String {
        let mut bindings: Vec<String> = (self.dims.iter())
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        let shapes = self.shapes.iter();
        bindings.extend(shapes.map(|(k, dims)| format!("{k}={}", shape_text(dims))));
        if self.as_written {
            bindings.push("as written".into());
        }
        match bindings.is_empty() {
            true => self.model.clone(),
            false => format!("{} ({})", self.model, bindings.join("; ")),
        }
    }
}

/// Where a model was found and which bindings it was imported with.
#[derive(Clone, Debug, PartialEq)]
pub struct ModelKey {
    /// Relative to the lock file's directory, `/` separators.
    pub model: String,
    pub model_sha256: String,
    pub dims: BTreeMap<String, i64>,
    pub shapes: BTreeMap<String, Vec<i64>>,
    pub as_written: bool,
    /// The `--set` values of the run.
    pub set: BTreeMap<String, String>,
}

/// The entry a run produced: its model, what the report recorded, and the final IR's hash.
/// Step lines come from `sources`, which must be the sources of the run's [`super::Loaded`].
pub fn entry(
    key: ModelKey,
    report: &RunReport,
    sources: &Sources,
    final_hash: String,
) -> LockEntry {
    LockEntry {
        model: key.model,
        model_sha256: key.model_sha256,
        dims: key.dims,
        shapes: key.shapes,
        as_written: key.as_written,
        set: key.set,
        params: report.params.clone(),
        decisions: report.decisions.clone(),
        steps: (report.steps.iter())
            .map(|s| locked_step(s, sources))
            .collect(),
        final_hash,
    }
}

fn locked_step(s: &RecordedStep, sources: &Sources) -> LockedStep {
    LockedStep {
        transformation: s.step.transformation.clone(),
        script: s.step.script.clone(),
        site: s.step.site.clone(),
        params: s.step.params.clone(),
        rule: s.rule.clone(),
        line: sources.line_col(s.span).0,
        hash_after: s.step.hash_after.clone(),
    }
}

/// The default lock of a recipe: `NAME.recipe.lock` beside `NAME.recipe`.
pub fn default_path(recipe: &Path) -> PathBuf {
    let mut name = recipe.as_os_str().to_os_string();
    name.push(".lock");
    PathBuf::from(name)
}

/// The recipe a lock belongs to: the lock's path without `.lock` (`None` when it does not end
/// in `.lock`).
pub fn recipe_of(lock: &Path) -> Option<PathBuf> {
    let name = lock.file_name()?.to_str()?;
    let recipe = name.strip_suffix(".lock").filter(|r| !r.is_empty())?;
    Some(lock.with_file_name(recipe))
}

/// `1x3x224x224`: a shape as `--shape` writes it.
pub fn shape_text(dims: &[i64]) -> String {
    let d: Vec<String> = dims.iter().map(i64::to_string).collect();
    d.join("x")
}

/// The hex SHA-256 of `bytes` (a model file's identity in the lock).
pub fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

/// `model` relative to `dir`, with `/` separators: `../models/m.onnx`. Both are made absolute
/// first (symbolic links resolved where the paths exist), so `./x` and `x` agree; when no
/// relative path exists (another drive), the absolute path is kept.
pub fn relative_path(model: &Path, dir: &Path) -> String {
    let abs = |p: &Path| {
        std::fs::canonicalize(p)
            .or_else(|_| std::path::absolute(p))
            .unwrap_or_else(|_| p.to_path_buf())
    };
    let (model, dir) = (abs(model), abs(dir));
    let m: Vec<Component> = model.components().collect();
    let d: Vec<Component> = dir.components().collect();
    if m.first() != d.first() {
        return slashed(model.components());
    }
    let common = m.iter().zip(&d).take_while(|(a, b)| a == b).count();
    let ups = std::iter::repeat_n("..".to_string(), d.len() - common);
    let rest = m[common..]
        .iter()
        .map(|c| c.as_os_str().to_string_lossy().into_owned());
    ups.chain(rest).collect::<Vec<_>>().join("/")
}

fn slashed<'a>(cs: impl Iterator<Item = Component<'a>>) -> String {
    let parts: Vec<String> = cs
        .filter(|c| !matches!(c, Component::RootDir))
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    format!("/{}", parts.join("/"))
}

/// The directory a lock's model paths are relative to: the lock's own (`.` for a bare name).
pub fn dir_of(lock: &Path) -> &Path {
    match lock.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    }
}

/// The path a lock's `model` names, read from the lock's directory.
pub fn model_path(lock: &Path, model: &str) -> PathBuf {
    dir_of(lock).join(model)
}

#[cfg(test)]
mod tests;
