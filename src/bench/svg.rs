//! The performance-profile plot of a bench table: per agent and track, the fraction of
//! its (suite, seed) scores above τ. Written by hand, so the bytes depend only on the
//! scores.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use super::report::Table;

const LEFT: f64 = 70.0;
const RIGHT: f64 = 620.0;
const TOP: f64 = 40.0;
const BOTTOM: f64 = 340.0;
const COLORS: [&str; 10] = [
    "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
    "#bcbd22", "#17becf",
];

fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// The profile of `table` as SVG text: one step line per agent (and track other than
/// `none`), its scores pooled over the suites, τ from min(0, lowest score) to max(1,
/// highest score).
pub fn profile_svg(table: &Table) -> String {
    let mut curves: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    for sec in &table.sections {
        for r in &sec.rows {
            let name = if sec.track.is_none() {
                r.agent.clone()
            } else {
                format!("{}+notify={}", r.agent, sec.track)
            };
            curves.entry(name).or_default().extend(&r.scores);
        }
    }
    let all = curves.values().flatten();
    let lo = all.clone().copied().fold(0.0_f64, f64::min);
    let hi = all.copied().fold(1.0_f64, f64::max);
    let sx = |x: f64| LEFT + (x - lo) / (hi - lo) * (RIGHT - LEFT);
    let sy = |y: f64| BOTTOM - y * (BOTTOM - TOP);
    let legend_rows = curves.len().div_ceil(3);
    let height = BOTTOM + 60.0 + 18.0 * legend_rows as f64;
    let mut s = String::new();
    let _ = writeln!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="660" height="{height:.0}" font-family="sans-serif" font-size="12">"#
    );
    let _ = writeln!(
        s,
        r#"<rect width="660" height="{height:.0}" fill="white"/>"#
    );
    let _ = writeln!(
        s,
        r#"<text x="{:.0}" y="22" text-anchor="middle" font-size="14">performance profile: fraction of (suite, seed) scores &gt; τ</text>"#,
        (LEFT + RIGHT) / 2.0
    );
    let _ = writeln!(
        s,
        r#"<path d="M{LEFT:.1},{TOP:.1}V{BOTTOM:.1}H{RIGHT:.1}" fill="none" stroke="black"/>"#
    );
    for i in 0..=5 {
        let y = f64::from(i) / 5.0;
        let _ = writeln!(
            s,
            r#"<text x="{:.1}" y="{:.1}" text-anchor="end">{y:.1}</text>"#,
            LEFT - 6.0,
            sy(y) + 4.0
        );
        let x = lo + (hi - lo) * f64::from(i) / 5.0;
        let _ = writeln!(
            s,
            r#"<text x="{:.1}" y="{:.1}" text-anchor="middle">{x:.2}</text>"#,
            sx(x),
            BOTTOM + 16.0
        );
    }
    for (x, label) in [(0.0, "random"), (1.0, "oracle")] {
        let _ = writeln!(
            s,
            r##"<path d="M{0:.1},{TOP:.1}V{BOTTOM:.1}" stroke="#999" stroke-dasharray="4 3"/><text x="{0:.1}" y="{1:.1}" text-anchor="middle" fill="#666">{label}</text>"##,
            sx(x),
            TOP - 4.0
        );
    }
    let _ = writeln!(
        s,
        r#"<text x="{:.1}" y="{:.1}" text-anchor="middle">normalized score τ</text>"#,
        (LEFT + RIGHT) / 2.0,
        BOTTOM + 34.0
    );
    for (k, (name, scores)) in curves.iter().enumerate() {
        let color = COLORS[k % COLORS.len()];
        let mut v = scores.clone();
        v.sort_by(f64::total_cmp);
        let n = v.len().max(1) as f64;
        // A step line: the fraction above τ drops at each score.
        let mut d = format!("M{:.1},{:.1}", sx(lo), sy(1.0));
        for (i, &x) in v.iter().enumerate() {
            let _ = write!(d, "H{:.1}V{:.1}", sx(x), sy(1.0 - (i + 1) as f64 / n));
        }
        let _ = write!(d, "H{:.1}", sx(hi));
        let _ = writeln!(
            s,
            r#"<path d="{d}" fill="none" stroke="{color}" stroke-width="1.6"/>"#
        );
        let (col, row) = (k % 3, k / 3);
        let (x, y) = (LEFT + 190.0 * col as f64, BOTTOM + 56.0 + 18.0 * row as f64);
        let _ = writeln!(
            s,
            r#"<rect x="{x:.1}" y="{:.1}" width="12" height="4" fill="{color}"/><text x="{:.1}" y="{:.1}">{}</text>"#,
            y - 6.0,
            x + 16.0,
            y,
            escape(name)
        );
    }
    s.push_str("</svg>\n");
    s
}
