//! Compiling generated C with the system compiler, cached by content hash.
//!
//! The cache key is the SHA-256 of the source, the flags and the compiler's identity (its
//! command and `--version` banner), so a changed compiler or flag never reuses a stale binary,
//! while the same program compiled twice costs nothing. Weights are cached separately by their
//! own hash: the source only holds offsets, so new weight values reuse the binary. Every cache
//! file is written to a temporary name and renamed, so concurrent builds never see half a file.

use super::{emit, CProgram, CodegenError};
use crate::ir::Program;
use sha2::{Digest, Sha256};
use std::cell::Cell;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

/// Flags for every build: optimise for this machine, OpenMP on, ISO C (so the compiler does not
/// contract `a * b + c` by itself: the generated code asks for each fused multiply-add it
/// wants). Vectors as wide as the machine has: gcc's default on AVX-512 machines prefers 256-bit
/// vectors, which halves the lanes of every vectorized map (measured on MatMul 1024: the same
/// register tile ran 1.3× slower at 256 bits); the flag does nothing on narrower machines.
pub(crate) const FLAGS: &[&str] = &[
    "-O3",
    "-march=native",
    "-mprefer-vector-width=512",
    "-fopenmp",
    "-std=c11",
];
/// Linked after the source, where the linker needs libraries.
pub(crate) const LIBS: &[&str] = &["-lm"];
/// Lines of compiler output kept in an error.
const STDERR_LINES: usize = 30;

thread_local! {
    /// Compiler runs on this thread and their total time (cache hits not counted).
    static BUILDS: Cell<(u32, Duration)> = const { Cell::new((0, Duration::ZERO)) };
}

/// The compiler runs started on this thread so far and their total time: the engine takes the
/// difference across a numerics check to say how many C builds a step cost. Per thread, so
/// parallel checks (and tests) do not count each other's builds.
pub fn builds_on_this_thread() -> (u32, Duration) {
    BUILDS.with(Cell::get)
}

/// How to build: the compiler command line, the flags and where to cache results.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BuildConfig {
    /// The compiler and any leading arguments (split on whitespace, like `$CC`).
    pub compiler: String,
    pub flags: Vec<String>,
    pub cache: PathBuf,
}

impl BuildConfig {
    /// `$CC` (default `cc`), the standard flags, and [`cache_dir`].
    pub fn from_env() -> Self {
        let compiler = std::env::var("CC")
            .ok()
            .filter(|c| !c.trim().is_empty())
            .unwrap_or_else(|| "cc".to_string());
        BuildConfig {
            compiler,
            flags: FLAGS.iter().map(|f| f.to_string()).collect(),
            cache: cache_dir(),
        }
    }
}

/// `$DMOVE_CACHE`, else `${XDG_CACHE_HOME:-$HOME/.cache}/dmove`, else the temp directory.
pub fn cache_dir() -> PathBuf {
    if let Some(d) = std::env::var_os("DMOVE_CACHE") {
        return PathBuf::from(d);
    }
    let base = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))
        .unwrap_or_else(std::env::temp_dir);
    base.join("dmove")
}

/// A compiled program, ready to run.
#[derive(Clone, Debug)]
pub struct Compiled {
    pub(crate) program: CProgram,
    pub(crate) binary: PathBuf,
    pub(crate) weights: PathBuf,
}

impl Compiled {
    /// Emits, compiles (or reuses the cached binary) with [`BuildConfig::from_env`].
    pub fn build(p: &Program) -> Result<Compiled, CodegenError> {
        Compiled::build_with(p, &BuildConfig::from_env())
    }

    pub fn build_with(p: &Program, config: &BuildConfig) -> Result<Compiled, CodegenError> {
        Compiled::from_c(emit(p)?, config)
    }

    /// Compiles already generated C.
    pub fn from_c(program: CProgram, config: &BuildConfig) -> Result<Compiled, CodegenError> {
        let cache = &config.cache;
        std::fs::create_dir_all(cache).map_err(CodegenError::io(format!(
            "creating cache directory {}",
            cache.display()
        )))?;
        let (cmd, lead) = split_command(&config.compiler);
        let key = sha256_hex(&[
            program.source.as_bytes(),
            config.flags.join(" ").as_bytes(),
            config.compiler.as_bytes(),
            compiler_identity(&cmd, &lead).as_bytes(),
        ]);
        let binary = cache.join(format!("{key}.bin"));
        if !binary.is_file() {
            let source = cache.join(format!("{key}.c"));
            write_atomic(&source, program.source.as_bytes())?;
            let started = Instant::now();
            let compiled = compile(config, &cmd, &lead, &source, &binary);
            BUILDS.with(|b| {
                let (n, t) = b.get();
                b.set((n + 1, t + started.elapsed()));
            });
            compiled?;
        }
        let weights = cache.join(format!("{}.weights", sha256_hex(&[&program.weights])));
        if !weights.is_file() {
            write_atomic(&weights, &program.weights)?;
        }
        Ok(Compiled {
            program,
            binary,
            weights,
        })
    }

    /// The generated C source.
    pub fn source(&self) -> &str {
        &self.program.source
    }

    pub fn program(&self) -> &CProgram {
        &self.program
    }

    pub fn binary_path(&self) -> &Path {
        &self.binary
    }
}

fn split_command(command: &str) -> (String, Vec<String>) {
    let mut parts = command.split_whitespace().map(str::to_string);
    let cmd = parts.next().unwrap_or_else(|| "cc".to_string());
    (cmd, parts.collect())
}

/// The compiler's `--version` banner (empty when it has none), part of the cache key.
fn compiler_identity(cmd: &str, lead: &[String]) -> String {
    Command::new(cmd)
        .args(lead)
        .arg("--version")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
        .unwrap_or_default()
}

/// Compiles `source` into a private temporary directory, then renames the binary into place.
fn compile(
    config: &BuildConfig,
    cmd: &str,
    lead: &[String],
    source: &Path,
    binary: &Path,
) -> Result<(), CodegenError> {
    let staging = tempfile::Builder::new()
        .prefix(".build-")
        .tempdir_in(&config.cache)
        .map_err(CodegenError::io("creating a build directory"))?;
    let out = staging.path().join("prog");
    let result = crate::interrupt::output(
        Command::new(cmd)
            .args(lead)
            .args(&config.flags)
            .arg("-o")
            .arg(&out)
            .arg(source)
            .args(LIBS),
    )
    .map_err(CodegenError::io(format!(
        "running the C compiler `{}`",
        config.compiler
    )))?;
    if !result.status.success() || !out.is_file() {
        let stderr = String::from_utf8_lossy(&result.stderr);
        let mut text = head(&stderr, STDERR_LINES);
        if text.is_empty() {
            text = format!("(no diagnostics; {})", result.status);
        }
        return Err(CodegenError::Compile {
            compiler: config.compiler.clone(),
            stderr: text,
            source_path: source.to_path_buf(),
        });
    }
    std::fs::rename(&out, binary).map_err(CodegenError::io(format!(
        "moving the binary to {}",
        binary.display()
    )))
}

/// The first `n` lines of `text`, with a note when more were cut.
pub(crate) fn head(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().collect();
    let mut out = lines.iter().take(n).copied().collect::<Vec<_>>().join("\n");
    if lines.len() > n {
        out.push_str(&format!("\n… ({} more lines)", lines.len() - n));
    }
    out
}

fn sha256_hex(parts: &[&[u8]]) -> String {
    let mut h = Sha256::new();
    for p in parts {
        h.update((p.len() as u64).to_le_bytes());
        h.update(p);
    }
    hex::encode(h.finalize())
}

fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), CodegenError> {
    crate::fsutil::write_atomic(path, bytes)
        .map_err(CodegenError::io(format!("writing {}", path.display())))
}
