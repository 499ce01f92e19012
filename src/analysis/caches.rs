//! The machine's data caches, as the analysis models them: levels of fully associative LRU
//! caches of whole lines, innermost first.
//!
//! An access misses a level when its reuse distance at line granularity exceeds the level's
//! capacity in lines (a first access misses every level), so one trace gives the misses of every
//! level at once, and `misses × line` is the traffic into that level from the one below; the
//! last level's is the DRAM traffic. The model has no associativity conflicts, no prefetching
//! and no write-backs (a written line that is evicted costs another transfer on a real machine),
//! and a shared level is modelled whole for the one thread the trace follows.
//!
//! The levels are read from Linux's sysfs (`/sys/devices/system/cpu/cpu0/cache`: data and
//! unified caches) or from a JSON file of the same shape as the `caches` of a report, for
//! another machine or what-if studies. The data TLB is modelled the same way at page
//! granularity: an access misses it when more distinct pages than it holds were touched since
//! its page was (what makes a column walk of a large matrix slow even when its lines are cached).

use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// Where Linux describes CPU 0's caches.
const SYSFS: &str = "/sys/devices/system/cpu/cpu0/cache";

/// One cache level.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CacheLevel {
    /// `L1d`, `L2`, `L3`, ….
    pub name: String,
    pub size_bytes: u64,
    pub line_bytes: u64,
    /// Associativity, when known (reported; the model is fully associative).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ways: Option<u64>,
    /// CPUs sharing one instance, when known (reported; the model gives one thread all of it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shared_by: Option<u64>,
}

/// The data TLB: address translations of `entries` pages, fully associative LRU.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Tlb {
    pub entries: u64,
    pub page_bytes: u64,
}

/// A machine's data-cache hierarchy.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Caches {
    /// Where the description came from: the sysfs directory or the file.
    pub source: String,
    /// Innermost first; sizes strictly increasing, one line size.
    pub levels: Vec<CacheLevel>,
    /// The TLB, when known (`/proc/cpuinfo`'s `TLB size` on AMD machines, or the file).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tlb: Option<Tlb>,
}

/// Why a cache description could not be read.
#[derive(Debug, thiserror::Error, miette::Diagnostic)]
pub enum CachesError {
    #[error("cannot read {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path}: {message}")]
    #[diagnostic(help(
        "a cache file is JSON: {{\"levels\": [{{\"name\": \"L1d\", \"size_bytes\": 49152, \"line_bytes\": 64}}, …]}}"
    ))]
    Invalid { path: PathBuf, message: String },
}

impl Caches {
    /// This machine's caches, from sysfs, and its TLB from `/proc/cpuinfo` when it says.
    pub fn detect() -> Result<Caches, CachesError> {
        let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
        Ok(Caches {
            tlb: tlb_in(&cpuinfo),
            ..Caches::from_sysfs(Path::new(SYSFS))?
        })
    }

    /// The data and unified caches described under `dir` (`index0`, `index1`, …).
    pub fn from_sysfs(dir: &Path) -> Result<Caches, CachesError> {
        let read = |p: PathBuf| {
            std::fs::read_to_string(&p)
                .map(|s| s.trim().to_string())
                .map_err(|source| CachesError::Read { path: p, source })
        };
        let entries = std::fs::read_dir(dir).map_err(|source| CachesError::Read {
            path: dir.to_path_buf(),
            source,
        })?;
        let mut levels = Vec::new();
        for e in entries.flatten() {
            let d = e.path();
            let is_index =
                (d.file_name().and_then(|n| n.to_str())).is_some_and(|n| n.starts_with("index"));
            if !is_index || read(d.join("type"))? == "Instruction" {
                continue;
            }
            let invalid = |message: String| CachesError::Invalid {
                path: d.clone(),
                message,
            };
            let level: u64 = (read(d.join("level"))?.parse())
                .map_err(|_| invalid("`level` is not a number".into()))?;
            let size = read(d.join("size"))?;
            let size_bytes = parse_size(&size)
                .ok_or_else(|| invalid(format!("`size` {size:?} is not a size")))?;
            let line_bytes = (read(d.join("coherency_line_size"))?.parse())
                .map_err(|_| invalid("`coherency_line_size` is not a number".into()))?;
            let optional = |f: &str| read(d.join(f)).ok().and_then(|v| v.parse().ok());
            let suffix = if read(d.join("type"))? == "Data" {
                "d"
            } else {
                ""
            };
            levels.push(CacheLevel {
                name: format!("L{level}{suffix}"),
                size_bytes,
                line_bytes,
                ways: optional("ways_of_associativity"),
                shared_by: read(d.join("shared_cpu_list"))
                    .ok()
                    .and_then(|l| cpus_in(&l)),
            });
        }
        levels.sort_by_key(|l| l.size_bytes);
        Caches {
            source: dir.display().to_string(),
            levels,
            tlb: None,
        }
        .validated(dir)
    }

    /// The caches described by the JSON file at `path` (`source` is set to the path).
    pub fn from_file(path: &Path) -> Result<Caches, CachesError> {
        let text = std::fs::read_to_string(path).map_err(|source| CachesError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        #[derive(Deserialize)]
        struct File {
            levels: Vec<CacheLevel>,
            #[serde(default)]
            tlb: Option<Tlb>,
        }
        let f: File = serde_json::from_str(&text).map_err(|e| CachesError::Invalid {
            path: path.to_path_buf(),
            message: e.to_string(),
        })?;
        Caches {
            source: path.display().to_string(),
            levels: f.levels,
            tlb: f.tlb,
        }
        .validated(path)
    }

    /// The line size every level shares.
    pub fn line_bytes(&self) -> u64 {
        self.levels[0].line_bytes
    }

    /// Each level's capacity in lines, innermost first.
    pub fn capacities(&self) -> Vec<u64> {
        (self.levels.iter())
            .map(|l| l.size_bytes / l.line_bytes)
            .collect()
    }

    fn validated(self, path: &Path) -> Result<Caches, CachesError> {
        let invalid = |message: String| CachesError::Invalid {
            path: path.to_path_buf(),
            message,
        };
        let Some(first) = self.levels.first() else {
            return Err(invalid("no data cache is described".into()));
        };
        if let Some(t) = &self.tlb {
            if t.entries == 0
                || t.page_bytes < first.line_bytes
                || t.page_bytes % first.line_bytes != 0
            {
                return Err(invalid(format!(
                    "the TLB must hold at least one page of whole lines ({} entries of {} bytes)",
                    t.entries, t.page_bytes
                )));
            }
        }
        let line = first.line_bytes;
        for (k, l) in self.levels.iter().enumerate() {
            if l.line_bytes == 0 || l.line_bytes != line {
                return Err(invalid(format!(
                    "{} has {}-byte lines; the model needs one positive line size for every level ({line} bytes at {})",
                    l.name, l.line_bytes, first.name
                )));
            }
            if l.size_bytes < l.line_bytes {
                return Err(invalid(format!("{} holds less than one line", l.name)));
            }
            if k > 0 && l.size_bytes <= self.levels[k - 1].size_bytes {
                return Err(invalid(format!(
                    "{} ({} bytes) is not larger than the level inside it, {} ({} bytes)",
                    l.name,
                    l.size_bytes,
                    self.levels[k - 1].name,
                    self.levels[k - 1].size_bytes
                )));
            }
        }
        Ok(self)
    }
}

/// The TLB a `/proc/cpuinfo` text describes (`TLB size : 3072 4K pages`).
fn tlb_in(cpuinfo: &str) -> Option<Tlb> {
    let line = cpuinfo.lines().find(|l| l.starts_with("TLB size"))?;
    let mut words = line.split_once(':')?.1.split_whitespace();
    let entries = words.next()?.parse().ok()?;
    let page_bytes = parse_size(words.next()?)?;
    Some(Tlb {
        entries,
        page_bytes,
    })
}

/// `48K`, `1024K`, `32M`, `512` (bytes) as bytes.
fn parse_size(s: &str) -> Option<u64> {
    let (digits, unit) = match s.char_indices().find(|(_, c)| !c.is_ascii_digit()) {
        Some((i, _)) => s.split_at(i),
        None => (s, ""),
    };
    let v: u64 = digits.parse().ok()?;
    let scale = match unit {
        "" => 1,
        "K" => 1 << 10,
        "M" => 1 << 20,
        "G" => 1 << 30,
        _ => return None,
    };
    v.checked_mul(scale)
}

/// How many CPUs a list such as `0-1,4` names.
fn cpus_in(list: &str) -> Option<u64> {
    let mut n = 0;
    for part in list.split(',').filter(|p| !p.is_empty()) {
        n += match part.split_once('-') {
            Some((a, b)) => b.parse::<u64>().ok()?.checked_sub(a.parse().ok()?)? + 1,
            None => part.parse::<u64>().map(|_| 1).ok()?,
        };
    }
    (n > 0).then_some(n)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fake_sysfs(levels: &[(&str, &str, &str, &str)]) -> tempfile::TempDir {
        let dir = tempfile::tempdir().expect("temp dir");
        for (k, (level, kind, size, shared)) in levels.iter().enumerate() {
            let d = dir.path().join(format!("index{k}"));
            std::fs::create_dir(&d).unwrap();
            for (f, v) in [
                ("level", *level),
                ("type", *kind),
                ("size", *size),
                ("coherency_line_size", "64"),
                ("ways_of_associativity", "16"),
                ("shared_cpu_list", *shared),
            ] {
                std::fs::write(d.join(f), format!("{v}\n")).unwrap();
            }
        }
        dir
    }

    #[test]
    fn sysfs_levels_are_the_data_caches_innermost_first() {
        let dir = fake_sysfs(&[
            ("3", "Unified", "32768K", "0-1"),
            ("1", "Data", "48K", "0"),
            ("1", "Instruction", "32K", "0"),
            ("2", "Unified", "1024K", "0"),
        ]);
        let c = Caches::from_sysfs(dir.path()).expect("reads");
        let names: Vec<&str> = c.levels.iter().map(|l| l.name.as_str()).collect();
        assert_eq!(names, ["L1d", "L2", "L3"]);
        assert_eq!(c.capacities(), [768, 16384, 524288]);
        assert_eq!(c.levels[2].shared_by, Some(2));
        assert_eq!(c.line_bytes(), 64);
    }

    #[test]
    fn a_file_that_does_not_describe_a_hierarchy_is_refused_with_the_reason() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("caches.json");
        let level = |name: &str, size: u64, line: u64| {
            format!(r#"{{"name": "{name}", "size_bytes": {size}, "line_bytes": {line}}}"#)
        };
        for (levels, why) in [
            (vec![], "no data cache"),
            (
                vec![level("L1d", 32768, 64), level("L2", 16384, 64)],
                "not larger",
            ),
            (
                vec![level("L1d", 32768, 64), level("L2", 1 << 20, 128)],
                "128-byte",
            ),
            (vec![level("L1d", 32, 64)], "less than one line"),
        ] {
            std::fs::write(&path, format!(r#"{{"levels": [{}]}}"#, levels.join(","))).unwrap();
            let err = Caches::from_file(&path).expect_err(why).to_string();
            assert!(err.contains(why), "{err}");
        }
        std::fs::write(&path, "{").unwrap();
        assert!(Caches::from_file(&path).is_err());
        std::fs::write(
            &path,
            format!(r#"{{"levels": [{}]}}"#, level("L1d", 32768, 64)),
        )
        .unwrap();
        assert_eq!(Caches::from_file(&path).unwrap().capacities(), [512]);
    }

    #[test]
    fn sizes_and_cpu_lists_parse() {
        assert_eq!(parse_size("48K"), Some(48 << 10));
        assert_eq!(parse_size("32M"), Some(32 << 20));
        assert_eq!(parse_size("512"), Some(512));
        assert_eq!(parse_size("4X"), None);
        assert_eq!(cpus_in("0-3,8"), Some(5));
        assert_eq!(cpus_in("0"), Some(1));
        assert_eq!(cpus_in("3-1"), None);
        let tlb = tlb_in("model name\t: AMD EPYC\nTLB size\t: 3072 4K pages\n");
        assert_eq!(
            tlb,
            Some(Tlb {
                entries: 3072,
                page_bytes: 4096
            })
        );
        assert_eq!(tlb_in("flags\t: fpu\n"), None);
    }
}
