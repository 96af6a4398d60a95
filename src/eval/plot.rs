//! The SVG plot: rolling-mean reward over steps, configuration intervals shaded and labelled.

use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::path::Path;

use super::aggregate::ProfilePoint;
use super::error::EvalError;
use super::report::Report;

const WIDTH: f64 = 960.0;
const LEFT: f64 = 80.0;
const RIGHT: f64 = 940.0;
const TOP: f64 = 50.0;
const BOTTOM: f64 = 370.0;
/// Tab10: one colour per run.
const RUN_COLOURS: [&str; 10] = [
    "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
    "#bcbd22", "#17becf",
];
/// Pastels: one per label, light enough to sit behind the lines.
const LABEL_COLOURS: [&str; 8] = [
    "#aec7e8", "#ffbb78", "#98df8a", "#ff9896", "#c5b0d5", "#c49c94", "#f7b6d2", "#dbdb8d",
];

fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            // XML forbids most control characters, and a newline would split a label.
            c if c.is_control() => out.push('\u{fffd}'),
            c => out.push(c),
        }
    }
    out
}

/// About `target` round tick values (1, 2 or 5 times a power of ten apart) covering [lo, hi].
fn ticks(lo: f64, hi: f64, target: usize) -> (Vec<f64>, f64) {
    let raw = (hi - lo) / target as f64;
    let magnitude = 10f64.powf(raw.log10().floor());
    let step = match raw / magnitude {
        f if f <= 1.0 => 1.0,
        f if f <= 2.0 => 2.0,
        f if f <= 5.0 => 5.0,
        _ => 10.0,
    } * magnitude;
    let first = (lo / step).ceil() as i64;
    let last = (hi / step).floor() as i64;
    ((first..=last).map(|i| i as f64 * step).collect(), step)
}

fn tick_label(v: f64, step: f64) -> String {
    if step >= 1.0 {
        format!("{v:.0}")
    } else {
        let decimals = (-step.log10()).ceil() as usize;
        format!("{v:.decimals$}")
    }
}

/// The plot of `report` as SVG text: each run's rolling mean of x (window W, run-wide, so
/// the line is continuous across shifts) as one line, the first run's configuration
/// intervals shaded by label and labelled, axes with ticks, and a legend of runs and labels.
/// Each line has at most about 2000 points.
pub fn svg(report: &Report) -> String {
    let x_lo = report
        .runs
        .iter()
        .filter_map(|r| r.intervals.first().map(|i| i.start))
        .min()
        .unwrap_or(0) as f64;
    let x_hi = report
        .runs
        .iter()
        .filter_map(|r| r.intervals.last().map(|i| i.end + 1))
        .max()
        .unwrap_or(1) as f64;
    let x_hi = if x_hi > x_lo { x_hi } else { x_lo + 1.0 };
    let ys = report.runs.iter().flat_map(|r| r.curve.iter().map(|p| p.1));
    let (mut y_lo, mut y_hi) = ys.fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), y| {
        (lo.min(y), hi.max(y))
    });
    if !y_lo.is_finite() || !y_hi.is_finite() {
        (y_lo, y_hi) = (0.0, 1.0);
    }
    let pad = if y_hi > y_lo {
        (y_hi - y_lo) * 0.05
    } else {
        0.5_f64.max(y_hi.abs() * 0.05)
    };
    (y_lo, y_hi) = (y_lo - pad, y_hi + pad);
    let sx = |x: f64| LEFT + (x - x_lo) / (x_hi - x_lo) * (RIGHT - LEFT);
    let sy = |y: f64| BOTTOM - (y - y_lo) / (y_hi - y_lo) * (BOTTOM - TOP);

    let labels: Vec<&str> = report
        .runs
        .iter()
        .flat_map(|r| r.intervals.iter().map(|i| i.regime.as_str()))
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    let label_colour = |l: &str| {
        let i = labels.iter().position(|&x| x == l).unwrap_or(0);
        LABEL_COLOURS[i % LABEL_COLOURS.len()]
    };

    let mut legend: Vec<(String, &str, bool)> = report
        .runs
        .iter()
        .enumerate()
        .map(|(i, r)| (r.run_id.clone(), RUN_COLOURS[i % RUN_COLOURS.len()], true))
        .collect();
    legend.extend(
        labels
            .iter()
            .map(|&l| (l.to_string(), label_colour(l), false)),
    );
    let mut placed = Vec::new();
    let (mut lx, mut ly) = (LEFT, BOTTOM + 70.0);
    for (text, colour, line) in &legend {
        let w = 34.0 + 7.0 * text.chars().count() as f64;
        if lx + w > RIGHT && lx > LEFT {
            lx = LEFT;
            ly += 20.0;
        }
        placed.push((lx, ly, text, *colour, *line));
        lx += w + 12.0;
    }
    let height = ly + 20.0;

    let mut s = svg_start(height);
    let payout = if report.include_payout {
        "payouts included"
    } else {
        "payouts excluded"
    };
    let _ = writeln!(
        s,
        r#"<text x="{}" y="24" text-anchor="middle" font-size="15">reward, rolling mean over W = {} steps ({payout})</text>"#,
        (LEFT + RIGHT) / 2.0,
        report.window
    );
    if let Some(first) = report.runs.first() {
        for i in &first.intervals {
            let (a, b) = (sx(i.start as f64), sx((i.end + 1) as f64));
            let _ = writeln!(
                s,
                r#"<rect x="{a:.1}" y="{TOP}" width="{:.1}" height="{}" fill="{}" fill-opacity="0.45"><title>{} [{}, {}]</title></rect>"#,
                b - a,
                BOTTOM - TOP,
                label_colour(&i.regime),
                escape(&i.regime),
                i.start,
                i.end
            );
            if b - a >= 7.0 * i.regime.chars().count() as f64 + 6.0 {
                let _ = writeln!(
                    s,
                    r#"<text x="{:.1}" y="{}" text-anchor="middle" fill="dimgray">{}</text>"#,
                    (a + b) / 2.0,
                    TOP + 14.0,
                    escape(&i.regime)
                );
            }
        }
    }
    let (yt, ystep) = ticks(y_lo, y_hi, 6);
    axes(
        &mut s,
        (x_lo, x_hi),
        Axis {
            title: "step",
            place: sx,
        },
        yt.into_iter().map(|v| (v, tick_label(v, ystep))),
        Axis {
            title: "reward (rolling mean)",
            place: sy,
        },
    );
    for (i, run) in report.runs.iter().enumerate() {
        let mut points = String::new();
        for &(step, y) in &run.curve {
            let _ = write!(points, "{:.1},{:.1} ", sx(step as f64), sy(y));
        }
        let _ = writeln!(
            s,
            r#"<polyline fill="none" stroke="{}" stroke-width="1.5" points="{}"><title>{}</title></polyline>"#,
            RUN_COLOURS[i % RUN_COLOURS.len()],
            points.trim_end(),
            escape(&run.run_id)
        );
    }
    for (x, y, text, colour, line) in placed {
        if line {
            let _ = write!(
                s,
                r#"<line x1="{x:.1}" y1="{y:.1}" x2="{:.1}" y2="{y:.1}" stroke="{colour}" stroke-width="2"/>"#,
                x + 24.0
            );
        } else {
            let _ = write!(
                s,
                r#"<rect x="{x:.1}" y="{:.1}" width="24" height="12" fill="{colour}"/>"#,
                y - 6.0
            );
        }
        let _ = writeln!(
            s,
            r#"<text x="{:.1}" y="{:.1}">{}</text>"#,
            x + 30.0,
            y + 4.0,
            escape(text)
        );
    }
    s.push_str("</svg>\n");
    s
}

/// Writes [`svg`] of `report` to `path`.
///
/// # Errors
///
/// The file cannot be written, or the path holds something other than a regular file
/// ([`crate::output::write_atomic`]).
pub fn plot_svg(report: &Report, path: &Path) -> Result<(), EvalError> {
    write_svg(path, &svg(report))
}

/// Writes a drawing to `path` atomically, refusing a path that is not a regular file.
fn write_svg(path: &Path, svg: &str) -> Result<(), EvalError> {
    crate::output::write_atomic(path, svg.as_bytes())
        .map_err(|e| EvalError::InvalidOptions(e.to_string()))
}

/// The opening `<svg>` tag of a plot `height` high and its white background.
fn svg_start(height: f64) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" viewBox="0 0 {WIDTH} {height}" font-family="sans-serif" font-size="12">"#
    );
    let _ = writeln!(
        s,
        r#"<rect x="0" y="0" width="{WIDTH}" height="{height}" fill="white"/>"#
    );
    s
}

/// One axis of a plot: its title, and where its values go on the page.
struct Axis<'a, F> {
    title: &'a str,
    place: F,
}

/// The two axes: ticks with labels along the x axis from `x_lo` to `x_hi`, the y axis's
/// `y_ticks` (value and label), and both titles.
fn axes(
    s: &mut String,
    (x_lo, x_hi): (f64, f64),
    x: Axis<'_, impl Fn(f64) -> f64>,
    y_ticks: impl IntoIterator<Item = (f64, String)>,
    y: Axis<'_, impl Fn(f64) -> f64>,
) {
    let _ = writeln!(
        *s,
        "<g stroke=\"#333\"><line x1=\"{LEFT}\" y1=\"{BOTTOM}\" x2=\"{RIGHT}\" y2=\"{BOTTOM}\"/><line x1=\"{LEFT}\" y1=\"{TOP}\" x2=\"{LEFT}\" y2=\"{BOTTOM}\"/></g>"
    );
    let (xt, xstep) = ticks(x_lo, x_hi, 8);
    for v in xt {
        let at = (x.place)(v);
        let _ = writeln!(
            *s,
            "<line x1=\"{at:.1}\" y1=\"{BOTTOM}\" x2=\"{at:.1}\" y2=\"{}\" stroke=\"#333\"/><text x=\"{at:.1}\" y=\"{}\" text-anchor=\"middle\">{}</text>",
            BOTTOM + 5.0,
            BOTTOM + 19.0,
            tick_label(v, xstep)
        );
    }
    for (v, label) in y_ticks {
        let at = (y.place)(v);
        let _ = writeln!(
            *s,
            "<line x1=\"{}\" y1=\"{at:.1}\" x2=\"{LEFT}\" y2=\"{at:.1}\" stroke=\"#333\"/><text x=\"{}\" y=\"{:.1}\" text-anchor=\"end\">{label}</text>",
            LEFT - 5.0,
            LEFT - 8.0,
            at + 4.0
        );
    }
    let _ = writeln!(
        *s,
        r#"<text x="{}" y="{}" text-anchor="middle">{}</text>"#,
        (LEFT + RIGHT) / 2.0,
        BOTTOM + 40.0,
        x.title
    );
    let _ = writeln!(
        *s,
        r#"<text x="20" y="{0}" text-anchor="middle" transform="rotate(-90 20 {0})">{1}</text>"#,
        (TOP + BOTTOM) / 2.0,
        y.title
    );
}

/// The performance profiles of `report`'s aggregate as SVG text: per algorithm, the
/// fraction of scores above τ over the τ grid as a step line with its 95% bootstrap band,
/// and a legend of algorithms.
pub fn profile_svg(report: &Report) -> String {
    let curves: Vec<ProfileCurve<'_>> = report
        .aggregate
        .algorithms
        .iter()
        .map(|a| ProfileCurve {
            name: &a.algorithm,
            points: &a.profile,
        })
        .collect();
    let title = format!(
        "performance profile: fraction of runs × tasks with score &gt; τ ({})",
        escape(&report.aggregate.score)
    );
    profile_curves_svg(&title, &curves, &[])
}

/// One line of a performance-profile plot.
#[derive(Clone, Copy, Debug)]
pub struct ProfileCurve<'a> {
    /// Its legend.
    pub name: &'a str,
    /// Its points, in τ order, with their band.
    pub points: &'a [ProfilePoint],
}

/// Performance profiles as SVG text, under `title` (SVG-escaped text): each curve as a line
/// with its band, a dashed vertical line with its label at each of `marks` (such as a
/// normalized score's 0 and 1), and a legend. The τ axis spans the curves' points.
pub fn profile_curves_svg(
    title: &str,
    curves: &[ProfileCurve<'_>],
    marks: &[(f64, &str)],
) -> String {
    let taus = curves.iter().flat_map(|c| c.points.iter().map(|p| p.tau));
    let (mut x_lo, mut x_hi) = taus.fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), t| {
        (lo.min(t), hi.max(t))
    });
    if !x_lo.is_finite() || !x_hi.is_finite() {
        (x_lo, x_hi) = (0.0, 1.0);
    }
    if x_hi <= x_lo {
        (x_lo, x_hi) = (x_lo - 0.5, x_hi + 0.5);
    }
    let sx = |x: f64| LEFT + (x - x_lo) / (x_hi - x_lo) * (RIGHT - LEFT);
    let sy = |y: f64| BOTTOM - y * (BOTTOM - TOP);
    let height = BOTTOM + 70.0 + 20.0 * curves.len().div_ceil(4) as f64;
    let mut s = svg_start(height);
    let _ = writeln!(
        s,
        r#"<text x="{}" y="24" text-anchor="middle" font-size="15">{title}</text>"#,
        (LEFT + RIGHT) / 2.0,
    );
    axes(
        &mut s,
        (x_lo, x_hi),
        Axis {
            title: "τ",
            place: sx,
        },
        [0.0, 0.25, 0.5, 0.75, 1.0].map(|v: f64| (v, v.to_string())),
        Axis {
            title: "fraction with score &gt; τ",
            place: sy,
        },
    );
    for &(x, label) in marks {
        let _ = writeln!(
            s,
            r##"<path d="M{0:.1},{TOP:.1}V{BOTTOM:.1}" stroke="#999" stroke-dasharray="4 3"/><text x="{0:.1}" y="{1:.1}" text-anchor="middle" fill="#666">{2}</text>"##,
            sx(x),
            TOP - 4.0,
            escape(label)
        );
    }
    for (i, c) in curves.iter().enumerate() {
        let colour = RUN_COLOURS[i % RUN_COLOURS.len()];
        let mut band = String::new();
        for p in c.points {
            let _ = write!(band, "{:.1},{:.1} ", sx(p.tau), sy(p.ci_high));
        }
        for p in c.points.iter().rev() {
            let _ = write!(band, "{:.1},{:.1} ", sx(p.tau), sy(p.ci_low));
        }
        let _ = writeln!(
            s,
            r#"<polygon fill="{colour}" fill-opacity="0.2" stroke="none" points="{}"/>"#,
            band.trim_end()
        );
        let mut line = String::new();
        for p in c.points {
            let _ = write!(line, "{:.1},{:.1} ", sx(p.tau), sy(p.fraction));
        }
        let _ = writeln!(
            s,
            r#"<polyline fill="none" stroke="{colour}" stroke-width="2" points="{}"><title>{}</title></polyline>"#,
            line.trim_end(),
            escape(c.name)
        );
        let (x, y) = (
            LEFT + 220.0 * (i % 4) as f64,
            BOTTOM + 70.0 + 20.0 * (i / 4) as f64,
        );
        let _ = writeln!(
            s,
            r#"<line x1="{x:.1}" y1="{y:.1}" x2="{:.1}" y2="{y:.1}" stroke="{colour}" stroke-width="2"/><text x="{:.1}" y="{:.1}">{}</text>"#,
            x + 24.0,
            x + 30.0,
            y + 4.0,
            escape(c.name)
        );
    }
    s.push_str("</svg>\n");
    s
}

/// Writes [`profile_svg`] of `report` to `path`, as [`plot_svg`] writes its plot.
///
/// # Errors
///
/// As [`plot_svg`].
pub fn profile_plot_svg(report: &Report, path: &Path) -> Result<(), EvalError> {
    write_svg(path, &profile_svg(report))
}
