//! A directory a user can ship: the generated C (`model.c`, harness included), its weights
//! (`model.weights`), a header for the entry points (`model.h`), a `Makefile` and a
//! `README.md` saying how to build and call it.
//!
//! The directory appears whole or not at all: every file is written into a staging directory
//! beside the destination, which is then renamed into place (a rename within one file system
//! is atomic), so an interrupted build never leaves a half-written deliverable where a user
//! would ship it. An existing non-empty destination is replaced only when asked to, and the
//! old contents are removed only after the new ones are in place.

mod text;

use super::CProgram;
use std::path::{Path, PathBuf};

/// What went wrong writing a deliverable.
#[derive(Debug, thiserror::Error, miette::Diagnostic)]
pub enum DeliverableError {
    #[error("{} is not empty", .0.display())]
    #[diagnostic(
        code(dmove::build::not_empty),
        help("choose a new or empty directory, or replace it on purpose with `--force`")
    )]
    NotEmpty(PathBuf),
    #[error("{} exists and is not a directory", .0.display())]
    #[diagnostic(code(dmove::build::not_a_directory))]
    NotADirectory(PathBuf),
    #[error("{context}")]
    #[diagnostic(code(dmove::build::io))]
    Io {
        context: String,
        #[source]
        source: std::io::Error,
    },
}

fn io(context: String) -> impl FnOnce(std::io::Error) -> DeliverableError {
    move |source| DeliverableError::Io { context, source }
}

/// The files of a deliverable for one generated program.
pub struct Deliverable<'a> {
    program: &'a CProgram,
    /// Where the program came from, for the generated documentation (`model.onnx, recipe
    /// std::cpu`); shown through the comment-safe alphabet only.
    origin: String,
    /// The thread count `make run` uses (`OMP_NUM_THREADS`).
    threads: usize,
}

impl<'a> Deliverable<'a> {
    pub fn new(program: &'a CProgram, origin: &str, threads: usize) -> Self {
        Deliverable {
            program,
            origin: origin.to_string(),
            threads,
        }
    }

    /// Every file by name, in the order the README lists them.
    pub fn files(&self) -> Vec<(&'static str, Vec<u8>)> {
        let p = self.program;
        vec![
            (text::SOURCE, p.source.clone().into_bytes()),
            (text::HEADER, text::header(p, &self.origin).into_bytes()),
            (text::WEIGHTS, p.weights.clone()),
            ("Makefile", text::makefile(self.threads).into_bytes()),
            (
                "README.md",
                text::readme(p, &self.origin, self.threads).into_bytes(),
            ),
        ]
    }

    /// Writes the deliverable to `dir` (created with its parents), which must not exist or be
    /// empty unless `replace`.
    pub fn write(&self, dir: &Path, replace: bool) -> Result<(), DeliverableError> {
        let existing = existing_dir(dir)?;
        if existing == Existing::NonEmpty && !replace {
            return Err(DeliverableError::NotEmpty(dir.to_path_buf()));
        }
        let parent = match dir.parent() {
            Some(p) if !p.as_os_str().is_empty() => p,
            _ => Path::new("."),
        };
        std::fs::create_dir_all(parent)
            .map_err(io(format!("cannot create {}", parent.display())))?;
        // The staging area is private and removed when dropped, with whatever is left in it
        // (the new files after a failure, the old contents after a replacement). The new
        // directory inside it is created like any directory, so it gets the umask's
        // permissions rather than the staging area's owner-only ones.
        let staging = tempfile::Builder::new()
            .prefix(".dmove-build-")
            .tempdir_in(parent)
            .map_err(io(format!(
                "cannot create a staging directory in {}",
                parent.display()
            )))?;
        let fresh = staging.path().join("new");
        std::fs::create_dir(&fresh).map_err(io(format!("cannot create {}", fresh.display())))?;
        for (name, bytes) in self.files() {
            std::fs::write(fresh.join(name), bytes)
                .map_err(io(format!("cannot write {name} for {}", dir.display())))?;
        }
        if existing != Existing::Absent {
            let old = staging.path().join("old");
            std::fs::rename(dir, &old)
                .map_err(io(format!("cannot move {} aside", dir.display())))?;
            if let Err(e) = std::fs::rename(&fresh, dir) {
                // Put the old contents back; the error reported is the one that stopped us.
                let _ = std::fs::rename(&old, dir);
                return Err(io(format!(
                    "cannot move the new files to {}",
                    dir.display()
                ))(e));
            }
        } else {
            std::fs::rename(&fresh, dir).map_err(io(format!(
                "cannot move the new files to {}",
                dir.display()
            )))?;
        }
        staging.close().map_err(io(format!(
            "cannot remove the staging directory beside {}",
            dir.display()
        )))
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Existing {
    Absent,
    Empty,
    NonEmpty,
}

/// What is at `dir` now: nothing, an empty directory, or a directory with entries; anything
/// else (a file, a device) is never replaced.
fn existing_dir(dir: &Path) -> Result<Existing, DeliverableError> {
    match std::fs::symlink_metadata(dir) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Existing::Absent),
        Err(e) => return Err(io(format!("cannot inspect {}", dir.display()))(e)),
        Ok(m) if !m.is_dir() => return Err(DeliverableError::NotADirectory(dir.to_path_buf())),
        Ok(_) => {}
    }
    let mut entries =
        std::fs::read_dir(dir).map_err(io(format!("cannot read {}", dir.display())))?;
    Ok(if entries.next().is_some() {
        Existing::NonEmpty
    } else {
        Existing::Empty
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codegen::CArg;
    use crate::ir::DType;

    fn program() -> CProgram {
        let arg = |name: &str, cname: &str| CArg {
            name: name.to_string(),
            cname: cname.to_string(),
            dtype: DType::F32,
            shape: vec![2],
        };
        CProgram {
            source: "/* c */\n".to_string(),
            weights: vec![1, 2, 3],
            entry: "void dm_run(const float* restrict d_x, float* restrict d_y)".to_string(),
            inputs: vec![arg("x", "d_x")],
            outputs: vec![arg("y", "d_y")],
            constants: Vec::new(),
        }
    }

    #[test]
    fn fills_an_empty_directory_and_refuses_a_file() {
        let root = tempfile::tempdir().expect("tempdir");
        let p = program();
        let d = Deliverable::new(&p, "test", 2);
        let empty = root.path().join("empty");
        std::fs::create_dir(&empty).expect("mkdir");
        d.write(&empty, false).expect("empty is fine");
        assert!(empty.join("Makefile").is_file());
        let weights = std::fs::read(empty.join(text::WEIGHTS)).expect("weights");
        assert_eq!(weights, [1, 2, 3]);
        let file = root.path().join("file");
        std::fs::write(&file, b"x").expect("write");
        let err = d.write(&file, true).expect_err("a file");
        assert!(matches!(err, DeliverableError::NotADirectory(_)), "{err}");
    }
}
