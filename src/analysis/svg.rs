//! SVG figures of analysis reports: one program's (miss-ratio curve, DMD per node and per array)
//! and a comparison of two (baseline against a recipe's result: totals, both miss-ratio curves,
//! DMD per array side by side). Every value axis is titled with its unit; DMD bars are on a log
//! scale, largest first and labelled by name, so small nodes stay readable next to the largest.

use super::report::{Entry, Report};
use crate::plot::bars::{Bar, Bars, Row};
use crate::plot::curve::{Curves, Series};
use crate::plot::figure::figure;
use crate::plot::scale::Unit;
use std::collections::BTreeMap;

/// At most this many rows per bar chart; the rest are summed up in a note.
const MAX_ROWS: usize = 40;

const DMD_AXIS: &str = "DMD (Σ √LRU reuse distance per access)";

/// One report as a figure.
pub fn plot(r: &Report) -> String {
    let nodes = ranked(&r.nodes, &[], "nodes");
    let arrays = ranked(&r.arrays, &[], "arrays");
    let panels = [
        &miss_ratio(r, &[(r, "")]) as &dyn crate::plot::figure::Panel,
        &Bars {
            title: "DMD per node, largest first".into(),
            ..nodes
        },
        &Bars {
            title: "DMD per array, largest first".into(),
            ..arrays
        },
    ];
    figure(
        &format!("{} — data movement", r.program),
        &summary(r),
        &panels,
    )
}

/// `before` and `after` (e.g. the naive lowering and a recipe's result) in one figure, named
/// `names` in legends.
pub fn compare(before: &Report, after: &Report, names: [&str; 2]) -> String {
    let totals = Bars {
        title: "Total DMD: warm (reuse) and cold (first accesses)".into(),
        axis_title: DMD_AXIS.into(),
        unit: Unit::Count,
        series: names.iter().map(|n| n.to_string()).collect(),
        rows: [
            ("DMD", (|e: &Entry| e.dmd) as fn(&Entry) -> f64),
            ("warm", |e| e.stats.dmd_warm),
            ("cold", |e| e.stats.dmd_cold),
        ]
        .into_iter()
        .map(|(label, f)| Row {
            label: label.into(),
            bars: vec![
                Some(Bar::of(f(&before.total))),
                Some(Bar::of(f(&after.total))),
            ],
        })
        .collect(),
        log: false,
        note: None,
    };
    let arrays = Bars {
        title: "DMD per array, largest first".into(),
        ..ranked(&before.arrays, &after.arrays, "arrays")
    };
    let arrays = Bars {
        series: names.iter().map(|n| n.to_string()).collect(),
        ..arrays
    };
    let curves = miss_ratio(before, &[(before, names[0]), (after, names[1])]);
    let ratio = |a: f64, b: f64| {
        if a > 0.0 {
            format!(" ({:.2}×)", b / a)
        } else {
            String::new()
        }
    };
    let subtitle = format!(
        "DMD {} → {}{} · bytes moved {} → {}{} · {} granularity",
        Unit::Count.format(before.total.dmd),
        Unit::Count.format(after.total.dmd),
        ratio(before.total.dmd, after.total.dmd),
        bytes(&before.total),
        bytes(&after.total),
        ratio(
            before.total.bytes_moved.unwrap_or(0) as f64,
            after.total.bytes_moved.unwrap_or(0) as f64
        ),
        before.granularity
    );
    figure(
        &format!("{}: {} vs {}", before.program, names[0], names[1]),
        &subtitle,
        &[&totals, &curves, &arrays],
    )
}

fn bytes(e: &Entry) -> String {
    e.bytes_moved
        .map_or_else(|| "unknown".into(), |b| Unit::Bytes.format(b as f64))
}

fn summary(r: &Report) -> String {
    let mut s = format!(
        "DMD {} · {} accesses at {} granularity · bytes moved {}",
        Unit::Count.format(r.total.dmd),
        Unit::Count.format(r.total.stats.accesses as f64),
        r.granularity,
        bytes(&r.total)
    );
    if let Some(rate) = r.sample_rate {
        s.push_str(&format!(" · sampled at rate {rate} (estimates)"));
    }
    s
}

/// The miss-ratio curves of `reports`, capacity in bytes for line granularity (in elements
/// otherwise: elements of different arrays may differ in size).
fn miss_ratio(first: &Report, reports: &[(&Report, &str)]) -> Curves {
    let line = line_bytes(&first.granularity);
    let (x_title, x_unit) = match line {
        Some(b) => (
            format!("cache capacity (bytes, {b}-byte lines)"),
            Unit::Bytes,
        ),
        None => ("cache capacity (elements)".to_string(), Unit::Locations),
    };
    Curves {
        title: "LRU miss ratio against cache capacity (first accesses always miss)".into(),
        x_title,
        x_unit,
        y_title: "miss ratio".into(),
        series: (reports.iter())
            .map(|(r, name)| Series {
                name: name.to_string(),
                points: (r.miss_ratio.iter())
                    .map(|m| (m.capacity as f64 * line.unwrap_or(1) as f64, m.ratio))
                    .collect(),
            })
            .collect(),
    }
}

/// `64` for `64-byte lines`.
fn line_bytes(granularity: &str) -> Option<u64> {
    granularity.strip_suffix("-byte lines")?.parse().ok()
}

/// The entries of one or two reports by name, largest DMD first (the largest of either side),
/// at most [`MAX_ROWS`], the others summed in a note; one series per non-empty side.
fn ranked(first: &[Entry], second: &[Entry], what: &str) -> Bars {
    let mut by_name: BTreeMap<String, [Option<f64>; 2]> = BTreeMap::new();
    for (side, entries) in [first, second].into_iter().enumerate() {
        for e in entries {
            let label = match e.id {
                Some(id) => format!("{} ({id})", e.name),
                None => e.name.clone(),
            };
            by_name.entry(label).or_default()[side] = Some(e.dmd);
        }
    }
    let sides = if second.is_empty() { 1 } else { 2 };
    let mut rows: Vec<(String, [Option<f64>; 2])> = by_name.into_iter().collect();
    let key = |v: &[Option<f64>; 2]| v.iter().flatten().copied().fold(0.0, f64::max);
    rows.sort_by(|a, b| key(&b.1).total_cmp(&key(&a.1)).then_with(|| a.0.cmp(&b.0)));
    let rest = rows.split_off(rows.len().min(MAX_ROWS));
    let note = (!rest.is_empty()).then(|| {
        let sum: f64 = rest.iter().map(|r| key(&r.1)).sum();
        format!(
            "… and {} more {what} (DMD {} together), not shown",
            rest.len(),
            Unit::Count.format(sum)
        )
    });
    Bars {
        title: String::new(),
        axis_title: DMD_AXIS.into(),
        unit: Unit::Count,
        series: vec!["DMD".into()],
        rows: (rows.into_iter())
            .map(|(label, v)| Row {
                label,
                bars: v[..sides].iter().map(|d| d.map(Bar::of)).collect(),
            })
            .collect(),
        log: true,
        note,
    }
}
