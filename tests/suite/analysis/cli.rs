//! `dmove analyze` end to end.

use std::process::{Command, Output};

fn dmove(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_dmove"))
        .args(args)
        .output()
        .expect("the binary runs")
}

#[test]
fn kernel_json_reports_warm_and_cold_separately() {
    let o = dmove(&[
        "analyze",
        "--kernel",
        "matmul",
        "--param",
        "order=ijk",
        "--param",
        "n=8",
        "--only",
        "L,R",
        "--json",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("JSON");
    assert_eq!(v["accesses"], 1024);
    assert_eq!(v["first_accesses"], 128);
    let warm = v["dmd_warm"].as_f64().expect("number");
    let cold = v["dmd_cold"].as_f64().expect("number");
    assert!((v["dmd"].as_f64().expect("number") - warm - cold).abs() < 1e-6);
    assert_eq!(v["arrays"].as_array().expect("arrays").len(), 3);
}

#[test]
fn sweep_fits_a_leading_term_and_plots_are_svg() {
    let o = dmove(&[
        "analyze", "--kernel", "matmul", "--sweep", "n=8..32", "--only", "L,R",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("dmd_warm ≈"), "{out}");
    let dir = tempfile::tempdir().expect("tempdir");
    let svg = dir.path().join("p.svg");
    let svg_arg = svg.display().to_string();
    let o = dmove(&[
        "analyze", "--kernel", "fft", "--param", "n=64", "--plot", &svg_arg,
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = std::fs::read_to_string(&svg).expect("written");
    assert!(text.starts_with("<svg") && text.contains("polyline"));
}

#[test]
fn bad_input_is_reported_not_panicked() {
    for (args, needle) in [
        (vec!["analyze"], "either a MODEL"),
        (vec!["analyze", "--kernel", "nope"], "no built-in kernel"),
        (
            vec!["analyze", "--kernel", "matmul", "--param", "order=iij"],
            "permutation",
        ),
        (vec!["analyze", "--kernel", "matmul", "--only", "Z"], "`Z`"),
        (
            vec!["analyze", "--kernel", "fft", "--param", "n=12"],
            "power of two",
        ),
        (
            vec!["analyze", "--kernel", "matmul", "--sweep", "n=8"],
            "sweep",
        ),
        (
            vec!["analyze", "--kernel", "matmul", "--line", "0"],
            "cache-line",
        ),
        (
            vec!["analyze", "--kernel", "matmul", "--sample", "2"],
            "sampling rate",
        ),
    ] {
        let o = dmove(&args);
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(!o.status.success(), "{args:?} succeeded");
        assert!(err.contains(needle), "{args:?}: {err}");
        assert!(!err.contains("panicked"), "{args:?}: {err}");
    }
}

/// `--machine FILE`: each level's misses are the accesses beyond its capacity. With capacities
/// of whole powers of two they can be read off the reuse-distance histogram (bin k holds the
/// distances in (2^(k−1), 2^k]), which checks the per-level counts against the engine's own.
#[test]
fn cache_levels_miss_exactly_the_accesses_beyond_their_capacity() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("caches.json");
    let level = |name: &str, size: u64, ways: Option<u64>| {
        let ways = ways.map_or(String::new(), |w| format!(r#", "ways": {w}"#));
        format!(r#"{{"name": "{name}", "size_bytes": {size}, "line_bytes": 64{ways}}}"#)
    };
    let run_with_tlb = |l1_ways: Option<u64>, tlb_entries: u64| {
        let levels = [level("L1d", 1024, l1_ways), level("L2", 4096, None)];
        let tlb = format!(r#"{{"entries": {tlb_entries}, "page_bytes": 128}}"#);
        let text = format!(r#"{{"levels": [{}], "tlb": {tlb}}}"#, levels.join(", "));
        std::fs::write(&file, text).unwrap();
        let machine = format!("--machine={}", file.display());
        let o = dmove(&[
            "analyze", "--kernel", "matmul", "--param", "n=24", &machine, "--json",
        ]);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        serde_json::from_slice::<serde_json::Value>(&o.stdout).expect("JSON")
    };
    let run = |l1_ways| run_with_tlb(l1_ways, 1 << 20);
    let beyond = |v: &serde_json::Value, bin: usize| {
        let hist = v["histogram"].as_array().expect("histogram");
        let warm: u64 = hist.iter().skip(bin + 1).map(|n| n.as_u64().unwrap()).sum();
        warm + v["first_accesses"].as_u64().unwrap()
    };
    let full = run(None);
    assert_eq!(full["granularity"], "64-byte lines");
    let misses = |v: &serde_json::Value, k: usize| v["levels"][k]["misses"].as_u64().unwrap();
    // 16 lines = 2^4, 64 lines = 2^6.
    assert_eq!(misses(&full, 0), beyond(&full, 4));
    assert_eq!(misses(&full, 1), beyond(&full, 6));
    assert_eq!(
        full["levels"][1]["bytes"].as_u64(),
        Some(64 * misses(&full, 1))
    );
    assert!(misses(&full, 0) > misses(&full, 1));
    // A direct-mapped L1 of the same size conflicts where the fully associative one does not;
    // the outer level does not change.
    let direct = run(Some(1));
    assert_eq!(direct["levels"][0]["model"], "1-way set-associative LRU");
    assert!(misses(&direct, 0) > misses(&full, 0));
    assert_eq!(misses(&direct, 1), misses(&full, 1));
    // A TLB that holds every page misses once per page: three 24×24 f32 arrays, page-aligned,
    // of 18 pages of 128 bytes each; one that holds a single page misses far more often.
    assert_eq!(full["tlb_misses"], 54);
    let small = run_with_tlb(None, 1)["tlb_misses"].as_u64().unwrap();
    assert!(small > 54 && small <= 24 * 24 * 24 * 4, "{small}");
}
