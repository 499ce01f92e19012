//! File output that never leaves a half-written file behind.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::Path;

/// Writes `bytes` to a temporary file beside `path`, then renames it over `path`, so readers see
/// the old content or the new one, never a mixture, and a failure leaves the old file intact.
///
/// The result has the permissions a plain `File::create` would give it: those of the file it
/// replaces, or for a new file 0o666 less the umask (not the owner-only mode temporary files
/// usually have). A symbolic link is written through (its target is replaced, not the link),
/// and a target that is not a regular file (`/dev/null`, a pipe) is written in place, since
/// renaming over it would replace the device. An error is the operating system's, without the
/// temporary file's name (callers name `path`, the file the user asked for); the temporary file
/// is removed on failure.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let existing = std::fs::metadata(path).ok();
    if existing.as_ref().is_some_and(|m| !m.is_file()) {
        return OpenOptions::new().write(true).open(path)?.write_all(bytes);
    }
    let target = match existing {
        Some(_) => std::fs::canonicalize(path)?,
        None => path.to_path_buf(),
    };
    let dir = match target.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    // `make_in` hands our own `open` errors back unchanged; `tempfile_in` and the `Write` impl
    // of `NamedTempFile` would add " at path .tmpXXXX" to them.
    let mut tmp = tempfile::Builder::new()
        .prefix(".dmove-")
        .make_in(dir, create_plain)?;
    if let Some(m) = &existing {
        tmp.as_file().set_permissions(m.permissions())?;
    }
    tmp.as_file_mut().write_all(bytes)?;
    tmp.as_file().sync_all()?;
    tmp.persist(&target).map(|_| ()).map_err(|e| e.error)
}

/// Creates a new file with the default mode (`0o666`, masked by the umask).
fn create_plain(path: &Path) -> std::io::Result<File> {
    let mut opts = OpenOptions::new();
    opts.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        opts.mode(0o666);
    }
    opts.open(path)
}

#[cfg(test)]
mod tests {
    use super::write_atomic;

    #[cfg(unix)]
    #[test]
    fn files_get_the_umask_default_permissions() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("out.txt");
        write_atomic(&path, b"x").expect("write");
        let plain = dir.path().join("plain.txt");
        std::fs::write(&plain, b"x").expect("write");
        let mode = |p: &std::path::Path| {
            std::fs::metadata(p).expect("metadata").permissions().mode() & 0o777
        };
        assert_eq!(mode(&path), mode(&plain));
    }

    #[cfg(unix)]
    #[test]
    fn links_are_written_through() {
        let dir = tempfile::tempdir().expect("tempdir");
        let target = dir.path().join("target.txt");
        std::fs::write(&target, b"old").expect("write");
        let link = dir.path().join("link.txt");
        std::os::unix::fs::symlink(&target, &link).expect("symlink");
        write_atomic(&link, b"new").expect("write through the link");
        assert!(std::fs::symlink_metadata(&link).expect("link").is_symlink());
        assert_eq!(std::fs::read(&target).expect("read"), b"new");
    }

    #[test]
    fn a_failed_write_does_not_name_the_temporary_file() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("no-such-dir").join("out.txt");
        let err = write_atomic(&path, b"x").expect_err("missing directory");
        assert!(!err.to_string().contains(".dmove-"), "{err}");
        assert!(!err.to_string().contains(".tmp"), "{err}");
    }
}
