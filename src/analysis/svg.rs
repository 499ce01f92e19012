//! SVG plots of a report: the LRU miss-ratio curve and per-node DMD bars, side by side.
//!
//! Hand-written SVG keeps the tool free of plotting dependencies; the plots are for a quick look,
//! the numbers are in the text and JSON reports.

use super::Report;
use std::fmt::Write;

const W: f64 = 420.0;
const H: f64 = 300.0;
const PAD: f64 = 50.0;

/// Both panels in one SVG document.
pub fn plot(r: &Report) -> String {
    let mut s = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\" font-family=\"sans-serif\" font-size=\"11\">\n",
        2.0 * W,
        H
    );
    s.push_str("<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n");
    miss_ratio_panel(&mut s, r);
    dmd_bars_panel(&mut s, r);
    s.push_str("</svg>\n");
    s
}

fn axes(s: &mut String, x0: f64, title: &str, xlabel: &str, ylabel: &str) {
    let _ = writeln!(
        s,
        "<text x=\"{}\" y=\"20\" text-anchor=\"middle\" font-size=\"13\">{}</text>",
        x0 + W / 2.0,
        escape(title)
    );
    let _ = writeln!(
        s,
        "<path d=\"M{a} {t} L{a} {b} L{r} {b}\" stroke=\"black\" fill=\"none\"/>",
        a = x0 + PAD,
        t = PAD,
        b = H - PAD,
        r = x0 + W - 10.0
    );
    let _ = writeln!(
        s,
        "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>",
        x0 + W / 2.0,
        H - 12.0,
        escape(xlabel)
    );
    let _ = writeln!(
        s,
        "<text x=\"{x}\" y=\"{y}\" text-anchor=\"middle\" transform=\"rotate(-90 {x} {y})\">{}</text>",
        escape(ylabel),
        x = x0 + 14.0,
        y = H / 2.0
    );
}

fn miss_ratio_panel(s: &mut String, r: &Report) {
    axes(
        s,
        0.0,
        "LRU miss ratio",
        &format!("capacity (log2, {})", r.granularity),
        "miss ratio",
    );
    let pts = &r.miss_ratio;
    let max_k = pts.len().saturating_sub(1).max(1) as f64;
    let (pw, ph) = (W - PAD - 10.0, H - 2.0 * PAD);
    let path: Vec<String> = pts
        .iter()
        .enumerate()
        .map(|(k, m)| {
            format!(
                "{:.1},{:.1}",
                PAD + pw * k as f64 / max_k,
                H - PAD - ph * m.ratio
            )
        })
        .collect();
    let _ = writeln!(
        s,
        "<polyline points=\"{}\" stroke=\"steelblue\" stroke-width=\"2\" fill=\"none\"/>",
        path.join(" ")
    );
    for (k, m) in pts.iter().enumerate().step_by(pts.len().div_ceil(8).max(1)) {
        let _ = writeln!(
            s,
            "<text x=\"{:.1}\" y=\"{}\" text-anchor=\"middle\">{}</text>",
            PAD + pw * k as f64 / max_k,
            H - PAD + 14.0,
            m.capacity.trailing_zeros()
        );
    }
    for tick in [0.0, 0.5, 1.0] {
        let _ = writeln!(
            s,
            "<text x=\"{}\" y=\"{:.1}\" text-anchor=\"end\">{tick}</text>",
            PAD - 4.0,
            H - PAD - ph * tick + 4.0
        );
    }
}

fn dmd_bars_panel(s: &mut String, r: &Report) {
    let x0 = W;
    axes(s, x0, "DMD per node", "node", "DMD");
    let max = r.nodes.iter().map(|n| n.dmd).fold(0.0, f64::max);
    let (pw, ph) = (W - PAD - 10.0, H - 2.0 * PAD);
    let slot = pw / r.nodes.len().max(1) as f64;
    for (i, n) in r.nodes.iter().enumerate() {
        let h = if max > 0.0 { ph * n.dmd / max } else { 0.0 };
        let x = x0 + PAD + slot * i as f64 + slot * 0.1;
        let _ = writeln!(
            s,
            "<rect x=\"{x:.1}\" y=\"{:.1}\" width=\"{:.1}\" height=\"{h:.1}\" fill=\"darkorange\"><title>{}: {:.4e}</title></rect>",
            H - PAD - h,
            slot * 0.8,
            escape(&n.name),
            n.dmd
        );
        let _ = writeln!(
            s,
            "<text x=\"{:.1}\" y=\"{}\" text-anchor=\"middle\">{}</text>",
            x + slot * 0.4,
            H - PAD + 14.0,
            escape(&n.id.map_or_else(|| n.name.clone(), |id| id.to_string()))
        );
    }
    let _ = writeln!(
        s,
        "<text x=\"{}\" y=\"{}\" text-anchor=\"end\">{max:.3e}</text>",
        x0 + PAD - 4.0,
        PAD + 4.0
    );
}

fn escape(t: &str) -> String {
    t.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}
