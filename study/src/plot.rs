//! PNG and SVG plots (plotters). Text uses an embedded DejaVu Sans
//! (ab_glyph), so the plots render the same on a machine without fonts.
//!
//! Every series has its own colour and marker shape ([`series_style`]);
//! measured points are filled markers on solid lines, extrapolated ones
//! (runs stopped at the budget) hollow markers on dashed lines, and runs
//! stopped too early to extrapolate hollow markers at the time they were
//! stopped with an arrow up ([`mark_style`]). The legend is a panel to the
//! right of the plot area, never over the data.

use crate::efficiency::{EffResult, Row, Status};
use crate::scaling::ScalingRow;
use crate::setups::{Setup, Transport};
use plotters::coord::combinators::{LogCoord, WithKeyPoints};
use plotters::coord::Shift;
use plotters::element::{ComposedElement, DashedPathElement};
use plotters::prelude::*;
use plotters::style::FontStyle;
use std::collections::BTreeSet;
use std::error::Error;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::Once;

type Res = Result<(), Box<dyn Error>>;

fn register_fonts() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        for family in ["sans-serif", "serif", "monospace"] {
            // The bytes are a valid TrueType font shipped by the dejavu crate.
            let _ =
                plotters::style::register_font(family, FontStyle::Normal, dejavu::sans::regular());
            let _ = plotters::style::register_font(family, FontStyle::Bold, dejavu::sans::bold());
        }
    });
}

/// Whole figure; the legend panel takes the right `LEGEND_W` pixels.
const SIZE: (u32, u32) = (1280, 720);
const LEGEND_W: u32 = 430;

/// Series colours (Okabe-Ito, readable with colour-vision deficiencies;
/// green is left to notify, black and grey to the reference lines).
const PALETTE: [RGBColor; 6] = [
    RGBColor(0, 114, 178),   // blue
    RGBColor(213, 94, 0),    // vermillion
    RGBColor(230, 159, 0),   // orange
    RGBColor(204, 121, 167), // reddish purple
    RGBColor(86, 180, 233),  // sky blue
    RGBColor(120, 70, 40),   // brown
];
const NOTIFY: RGBColor = RGBColor(0, 140, 80);
const GREY: RGBColor = RGBColor(110, 110, 110);
const BUDGET: RGBColor = RGBColor(200, 0, 0);

/// Marker shapes; five, so that with six colours the first thirty series
/// all differ in their (colour, shape) pair and the first five in both.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Shape {
    Circle,
    Square,
    TriangleUp,
    Diamond,
    TriangleDown,
}

const SHAPES: [Shape; 5] = [
    Shape::Circle,
    Shape::Square,
    Shape::TriangleUp,
    Shape::Diamond,
    Shape::TriangleDown,
];

/// The colour and marker of a series.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct SeriesStyle {
    pub color: RGBColor,
    pub shape: Shape,
}

/// The style of the `i`-th series of a figure.
pub fn series_style(i: usize) -> SeriesStyle {
    SeriesStyle {
        color: PALETTE[i % PALETTE.len()],
        shape: SHAPES[i % SHAPES.len()],
    }
}

/// How a plotted wall time was obtained.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PointKind {
    /// Runs to the end (the median of the completed runs).
    Measured,
    /// Stopped at the budget and extrapolated to the whole run.
    Extrapolated,
    /// Stopped at the budget after less than [`MIN_PROGRESS`] of the
    /// simulated time, or after passing the reference final time (nothing
    /// to extrapolate to): plotted at the time it was stopped, as a lower
    /// bound.
    AboveBudget,
}

/// A stopped run is extrapolated in the figures only if it reached at
/// least this fraction of the simulated time (docs/efficiency.md: less is
/// too little progress to trust).
pub const MIN_PROGRESS: f64 = 0.01;

/// The wall time a row contributes to a figure, and how it was obtained;
/// `None` for a failed run.
pub fn point_of(r: &Row) -> Option<(f64, PointKind)> {
    match r.status {
        Status::Ok => Some((r.wall_s, PointKind::Measured)),
        Status::OverBudget => match (r.wall_est_s, r.progress) {
            // Progress is capped at 1 when a run passes the reference
            // final time (an estimate factor F > 1 makes it later): then
            // only "longer than the budget" is known.
            (Some(e), Some(p)) if (MIN_PROGRESS..1.0).contains(&p) => {
                Some((e, PointKind::Extrapolated))
            }
            _ => Some((r.wall_s, PointKind::AboveBudget)),
        },
        Status::Failed(_) => None,
    }
}

/// How a point is drawn: filled (measured) or hollow, with an arrow up
/// (only a lower bound is known).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MarkStyle {
    pub filled: bool,
    pub arrow_up: bool,
}

pub fn mark_style(kind: PointKind) -> MarkStyle {
    MarkStyle {
        filled: kind == PointKind::Measured,
        arrow_up: kind == PointKind::AboveBudget,
    }
}

/// The line between two neighbouring points of a series: solid between
/// measured points, dashed if either end is extrapolated, none to a
/// lower bound.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Segment {
    Solid,
    Dashed,
    None,
}

pub fn segment(a: PointKind, b: PointKind) -> Segment {
    use PointKind::*;
    match (a, b) {
        (Measured, Measured) => Segment::Solid,
        (AboveBudget, _) | (_, AboveBudget) => Segment::None,
        _ => Segment::Dashed,
    }
}

/// Vertices of a marker around (0, 0), radius `r` pixels.
fn shape_points(shape: Shape, r: i32) -> Vec<(i32, i32)> {
    let rf = r as f64;
    let poly = |n: usize, start_deg: f64, scale: f64| -> Vec<(i32, i32)> {
        (0..n)
            .map(|k| {
                let a = (start_deg + 360.0 * k as f64 / n as f64).to_radians();
                (
                    (scale * rf * a.cos()).round() as i32,
                    (-scale * rf * a.sin()).round() as i32,
                )
            })
            .collect()
    };
    match shape {
        Shape::Circle => poly(20, 0.0, 1.0),
        Shape::Square => {
            let s = (rf * 0.9).round() as i32;
            vec![(-s, -s), (s, -s), (s, s), (-s, s)]
        }
        Shape::TriangleUp => poly(3, 90.0, 1.25),
        Shape::TriangleDown => poly(3, 270.0, 1.25),
        Shape::Diamond => poly(4, 90.0, 1.3),
    }
}

type Mark<C, DB> = ComposedElement<C, DB, Polygon<(i32, i32)>, PathElement<(i32, i32)>>;

/// A marker at `at` (data or pixel coordinates): filled, or white inside
/// with a coloured outline.
fn marker<C, DB: DrawingBackend>(at: C, st: SeriesStyle, filled: bool, r: i32) -> Mark<C, DB> {
    let pts = shape_points(st.shape, r);
    let mut outline = pts.clone();
    outline.push(pts[0]);
    let fill = if filled {
        st.color.filled()
    } else {
        WHITE.filled()
    };
    EmptyElement::at(at)
        + Polygon::new(pts, fill)
        + PathElement::new(outline, st.color.stroke_width(2))
}

type Arrow<C, DB> = ComposedElement<C, DB, PathElement<(i32, i32)>, Polygon<(i32, i32)>>;

/// An arrow up from a marker of radius `r`: "more than this".
fn arrow_up<C, DB: DrawingBackend>(at: C, color: RGBColor, r: i32) -> Arrow<C, DB> {
    let (y0, y1) = (-r - 2, -r - 24);
    EmptyElement::at(at)
        + PathElement::new(vec![(0, y0), (0, y1 + 6)], color.stroke_width(2))
        + Polygon::new(vec![(-5, y1 + 7), (5, y1 + 7), (0, y1)], color.filled())
}

const MARK_R: i32 = 6;

/// One line of the legend panel.
#[derive(Clone, Debug)]
enum Entry {
    /// A section title.
    Heading(String),
    /// A series: a solid line through a filled marker.
    Series(SeriesStyle, String),
    /// How a point kind is drawn (grey, the series' shape ignored).
    Kind(PointKind, String),
    /// A horizontal reference line: colour, dashed, width.
    Line(RGBColor, bool, u32, String),
    /// A shaded band.
    Band(RGBColor, String),
    /// Text, wrapped.
    Note(String),
}

/// Word-wrap `s` to lines of at most `width` characters.
fn wrap(s: &str, width: usize) -> Vec<String> {
    let mut lines = Vec::new();
    let mut cur = String::new();
    for w in s.split_whitespace() {
        if !cur.is_empty() && cur.chars().count() + 1 + w.chars().count() > width {
            lines.push(std::mem::take(&mut cur));
        }
        if !cur.is_empty() {
            cur.push(' ');
        }
        cur.push_str(w);
    }
    if !cur.is_empty() {
        lines.push(cur);
    }
    lines
}

/// Draw the legend panel: a column of entries from the top.
fn draw_legend<DB: DrawingBackend>(area: &DrawingArea<DB, Shift>, entries: &[Entry]) -> Res
where
    DB::ErrorType: 'static,
{
    let font = ("sans-serif", 15).into_font();
    let bold = ("sans-serif", 16).into_font().style(FontStyle::Bold);
    let small = ("sans-serif", 14).into_font();
    let text_x = 58;
    let wrap_w = 44;
    let mut y = 10;
    let mid = |y: i32| y + 9;
    // An entry's label, wrapped, beside its symbol at `y`; returns how far
    // down the next entry starts.
    let label_at = |y: i32, label: &str| -> Result<i32, Box<dyn Error>> {
        let lines = wrap(label, wrap_w);
        for (k, l) in lines.iter().enumerate() {
            area.draw(&Text::new(
                l.clone(),
                (text_x, y + 18 * k as i32),
                font.clone(),
            ))?;
        }
        Ok(18 * (lines.len() as i32 - 1) + 24)
    };
    for e in entries {
        match e {
            Entry::Heading(t) => {
                y += 6;
                area.draw(&Text::new(t.clone(), (8, y), bold.clone()))?;
                y += 24;
            }
            Entry::Series(st, label) => {
                area.draw(&PathElement::new(
                    vec![(12, mid(y)), (48, mid(y))],
                    st.color.stroke_width(2),
                ))?;
                area.draw(&marker((30, mid(y)), *st, true, MARK_R))?;
                y += label_at(y, label)?;
            }
            Entry::Kind(kind, label) => {
                let st = SeriesStyle {
                    color: GREY,
                    shape: Shape::Circle,
                };
                let m = mark_style(*kind);
                match segment(*kind, *kind) {
                    Segment::Solid => area.draw(&PathElement::new(
                        vec![(12, mid(y)), (48, mid(y))],
                        GREY.stroke_width(2),
                    ))?,
                    Segment::Dashed => area.draw(&DashedPathElement::new(
                        vec![(12, mid(y)), (48, mid(y))],
                        6,
                        4,
                        GREY.stroke_width(2),
                    ))?,
                    Segment::None => {}
                }
                let y_mark = if m.arrow_up { y + 26 } else { mid(y) };
                area.draw(&marker((30, y_mark), st, m.filled, MARK_R))?;
                if m.arrow_up {
                    area.draw(&arrow_up((30, y_mark), GREY, MARK_R))?;
                }
                y += label_at(y, label)?;
                if m.arrow_up {
                    y = y.max(y_mark + MARK_R + 8);
                }
            }
            Entry::Line(c, dashed, w, label) => {
                let pts = vec![(12, mid(y)), (48, mid(y))];
                if *dashed {
                    area.draw(&DashedPathElement::new(pts, 7, 4, c.stroke_width(*w)))?;
                } else {
                    area.draw(&PathElement::new(pts, c.stroke_width(*w)))?;
                }
                y += label_at(y, label)?;
            }
            Entry::Band(c, label) => {
                area.draw(&Rectangle::new(
                    [(12, mid(y) - 7), (48, mid(y) + 7)],
                    c.mix(0.18).filled(),
                ))?;
                y += label_at(y, label)?;
            }
            Entry::Note(t) => {
                y += 4;
                for l in wrap(t, wrap_w + 6) {
                    area.draw(&Text::new(l, (8, y), small.clone()))?;
                    y += 17;
                }
            }
        }
    }
    Ok(())
}

fn fmt_ps(v: &f64) -> String {
    if *v >= 1000.0 {
        format!("{} ns", v / 1000.0)
    } else {
        format!("{v} ps")
    }
}

fn fmt_s(v: &f64) -> String {
    if *v >= 1.0 {
        format!("{v:.0}")
    } else if *v >= 1e-4 {
        // 0.5, 0.02, 0.001: as many decimals as the leading digit needs.
        let d = (-v.log10()).ceil() as usize;
        format!("{v:.d$}")
    } else {
        format!("{v:.0e}")
    }
}

/// A wall time for a legend: three significant digits, thousands plain.
fn fmt_wall(v: f64) -> String {
    if v >= 100.0 {
        format!("{v:.0} s")
    } else if v >= 10.0 {
        format!("{v:.1} s")
    } else if v >= 0.1 {
        format!("{v:.2} s")
    } else {
        format!("{v:.3} s")
    }
}

/// Axis labels at 1, 2, 5 x 10^k inside [lo, hi] (plotters' own log-scale
/// labels leave ranges of less than a decade almost unlabelled).
fn one_two_five(lo: f64, hi: f64) -> Vec<f64> {
    let mut v = Vec::new();
    let mut k = lo.max(1e-12).log10().floor() as i32;
    while 10f64.powi(k) <= hi {
        for m in [1.0, 2.0, 5.0] {
            let x = m * 10f64.powi(k);
            if x >= lo && x <= hi {
                v.push(x);
            }
        }
        k += 1;
    }
    v
}

/// Powers of ten inside [lo, hi] and the given values.
fn decades_and(lo: f64, hi: f64, extra: &[f64]) -> Vec<f64> {
    let mut v: Vec<f64> = extra.to_vec();
    let mut k = lo.max(1e-12).log10().floor() as i32;
    while 10f64.powi(k) <= hi {
        let x = 10f64.powi(k);
        if x >= lo {
            v.push(x);
        }
        k += 1;
    }
    v.sort_by(f64::total_cmp);
    v.dedup_by(|a, b| (*a / *b - 1.0).abs() < 1e-9);
    v
}

/// The factor by which series `i` of `n` is moved along a log x axis:
/// 1 for the middle series, at most 1.35 or 1/1.35 for the outer ones.
pub fn dodge(i: usize, n: usize) -> f64 {
    if n < 2 {
        return 1.0;
    }
    let step = 0.13 / (n - 1) as f64; // spread over 0.26 decades in all
    10f64.powf(step * (2.0 * i as f64 - (n - 1) as f64))
}

/// Points of a polling series: (quantum ps, wall s, kind).
type QPoints = Vec<(f64, f64, PointKind)>;

/// A polling series of the quantum figure.
#[derive(Clone, Debug)]
pub struct QSeries {
    pub label: String,
    pub style: SeriesStyle,
    /// (quantum ps, wall s, kind), by quantum.
    pub points: Vec<(f64, f64, PointKind)>,
}

/// What the quantum figure shows, taken from a study result.
#[derive(Clone, Debug)]
pub struct QuantumData {
    pub title: String,
    /// Polling without the estimate first, then by estimate factor.
    pub series: Vec<QSeries>,
    pub fabric_alone: Option<f64>,
    pub loggops_alone: Option<f64>,
    /// Every notify variant (label, wall).
    pub notify: Vec<(String, f64)>,
    /// The thesis's notify (v2 over message queues, else the first).
    pub notify_main: Option<(String, f64)>,
    pub budget_s: f64,
    pub runs: usize,
    /// Every quantum run (ps), plotted or not.
    pub quanta: Vec<f64>,
}

/// Collect the quantum figure's data; the style of each series is fixed by
/// its position (plain polling, then F ascending).
pub fn quantum_data(res: &EffResult) -> QuantumData {
    // (estimate factor, points) per series.
    let mut series: Vec<(Option<f64>, QPoints)> = Vec::new();
    let mut d = QuantumData {
        title: format!(
            "Wall time vs polling quantum: {} ranks on {}{}",
            res.config.workload.ranks,
            res.config.workload.topology,
            if res.config.workload.count > 1 {
                format!(", dissemination x {}", res.config.workload.count)
            } else {
                String::new()
            }
        ),
        series: Vec::new(),
        fabric_alone: None,
        loggops_alone: None,
        notify: Vec::new(),
        notify_main: None,
        budget_s: res.config.budget.as_secs_f64(),
        runs: res.config.runs,
        quanta: Vec::new(),
    };
    for r in &res.rows {
        let Some((w, kind)) = point_of(r) else {
            continue;
        };
        match &r.setup {
            Setup::Query {
                quantum_ps,
                estimate,
                ..
            } => {
                let q = *quantum_ps as f64;
                if !d.quanta.contains(&q) {
                    d.quanta.push(q);
                }
                match series.iter_mut().find(|s| s.0 == *estimate) {
                    Some(s) => s.1.push((q, w, kind)),
                    None => series.push((*estimate, vec![(q, w, kind)])),
                }
            }
            Setup::Notify { transport, version } => {
                if kind != PointKind::Measured {
                    continue;
                }
                let label = format!("notify v{version}, {}", transport.describe());
                if d.notify_main.is_none() && *version == 2 && *transport == Transport::Ipc {
                    d.notify_main = Some((label.clone(), w));
                }
                d.notify.push((label, w));
            }
            Setup::FabricAlone if kind == PointKind::Measured => d.fabric_alone = Some(w),
            Setup::LogGops if kind == PointKind::Measured => d.loggops_alone = Some(w),
            _ => {}
        }
    }
    if d.notify_main.is_none() {
        d.notify_main = d.notify.first().cloned();
    }
    d.quanta.sort_by(f64::total_cmp);
    series.sort_by(|a, b| match (a.0, b.0) {
        (None, None) => std::cmp::Ordering::Equal,
        (None, Some(_)) => std::cmp::Ordering::Less,
        (Some(_), None) => std::cmp::Ordering::Greater,
        (Some(x), Some(y)) => x.total_cmp(&y),
    });
    d.series = series
        .into_iter()
        .enumerate()
        .map(|(i, (f, mut pts))| {
            pts.sort_by(|a, b| a.0.total_cmp(&b.0));
            QSeries {
                label: match f {
                    None => "polling, no estimate".into(),
                    Some(f) => format!("polling + arrival estimate, F = {f}"),
                },
                style: series_style(i),
                points: pts,
            }
        })
        .collect();
    d
}

/// Wall time versus quantum: one line per polling series (colour and
/// marker), the reference setups as horizontal lines and a band, the
/// legend in a panel on the right.
fn draw_quantum<DB: DrawingBackend>(
    left: &DrawingArea<DB, Shift>,
    d: &QuantumData,
) -> Result<Vec<Entry>, Box<dyn Error>>
where
    DB::ErrorType: 'static,
{
    let pts = d.series.iter().flat_map(|s| s.points.iter());
    let ys: Vec<f64> = pts
        .clone()
        .map(|p| p.1)
        .chain(d.notify.iter().map(|n| n.1))
        .chain(d.fabric_alone)
        .chain(d.loggops_alone)
        .chain(std::iter::once(d.budget_s))
        .filter(|y| *y > 0.0)
        .collect();
    let ymin = ys.iter().cloned().fold(f64::INFINITY, f64::min) / 2.0;
    // Room above the highest point for a lower-bound arrow.
    let ymax = ys.iter().cloned().fold(0.0, f64::max) * 4.0;
    let (qmin, qmax) = match (d.quanta.first(), d.quanta.last()) {
        (Some(a), Some(b)) => (*a, *b),
        _ => (1.0, 1000.0),
    };
    let xr = (qmin / 2.5)..(qmax * 2.5);
    let mut chart = wall_time_chart(
        left,
        xr.clone(),
        decades_and(xr.start, xr.end, &d.quanta),
        "polling quantum q [ps] (log scale)",
        &fmt_ps,
        ymin..ymax,
    )?;
    let mut legend = vec![Entry::Heading("Polling (query)".into())];
    // Reference setups first, so the series are drawn over them.
    let mut refs = vec![Entry::Heading("Without polling".into())];
    if let (Some(lo), Some(hi)) = (
        d.notify.iter().map(|n| n.1).reduce(f64::min),
        d.notify.iter().map(|n| n.1).reduce(f64::max),
    ) {
        if d.notify.len() > 1 {
            chart.draw_series(std::iter::once(Rectangle::new(
                [(xr.start, lo / 1.03), (xr.end, hi * 1.03)],
                NOTIFY.mix(0.18).filled(),
            )))?;
            refs.push(Entry::Band(
                NOTIFY,
                format!(
                    "notify, all {} variants (v1/v2 x transports): {} - {}",
                    d.notify.len(),
                    fmt_wall(lo),
                    fmt_wall(hi)
                ),
            ));
        }
    }
    if let Some((label, w)) = &d.notify_main {
        chart.draw_series(std::iter::once(PathElement::new(
            vec![(xr.start, *w), (xr.end, *w)],
            NOTIFY.stroke_width(2),
        )))?;
        refs.push(Entry::Line(
            NOTIFY,
            false,
            2,
            format!("{label}: {}", fmt_wall(*w)),
        ));
    }
    for (w, c, label) in [
        (d.fabric_alone, BLACK, "fabric alone"),
        (d.loggops_alone, GREY, "LogGOPS alone"),
    ] {
        if let Some(w) = w {
            chart.draw_series(DashedLineSeries::new(
                vec![(xr.start, w), (xr.end, w)],
                9,
                5,
                c.stroke_width(2),
            ))?;
            refs.push(Entry::Line(c, true, 2, format!("{label}: {}", fmt_wall(w))));
        }
    }
    chart.draw_series(std::iter::once(PathElement::new(
        vec![(xr.start, d.budget_s), (xr.end, d.budget_s)],
        BUDGET.stroke_width(1),
    )))?;
    refs.push(Entry::Line(
        BUDGET,
        false,
        1,
        format!("budget per run: {} s", d.budget_s),
    ));
    let mut kinds = BTreeSet::new();
    for (i, s) in d.series.iter().enumerate() {
        let st = s.style;
        // Spread the series slightly around each quantum, so that equal
        // wall times at one quantum do not hide each other's markers.
        let x = |q: f64| q * dodge(i, d.series.len());
        let pts: Vec<(f64, f64, PointKind)> = s.points.iter().map(|p| (x(p.0), p.1, p.2)).collect();
        for w in pts.windows(2) {
            let line = vec![(w[0].0, w[0].1), (w[1].0, w[1].1)];
            match segment(w[0].2, w[1].2) {
                Segment::Solid => {
                    chart.draw_series(LineSeries::new(line, st.color.stroke_width(2)))?;
                }
                Segment::Dashed => {
                    chart.draw_series(DashedLineSeries::new(
                        line,
                        7,
                        5,
                        st.color.stroke_width(2),
                    ))?;
                }
                Segment::None => {}
            }
        }
        for p in &pts {
            let m = mark_style(p.2);
            kinds.insert(p.2 as u8);
            if m.arrow_up {
                chart.draw_series(std::iter::once(arrow_up((p.0, p.1), st.color, MARK_R)))?;
            }
            chart.draw_series(std::iter::once(marker((p.0, p.1), st, m.filled, MARK_R)))?;
        }
        legend.push(Entry::Series(st, s.label.clone()));
    }
    legend.push(Entry::Heading("Points".into()));
    legend.push(Entry::Kind(
        PointKind::Measured,
        if d.runs > 1 {
            format!("measured: median of up to {} runs", d.runs)
        } else {
            "measured: one run".into()
        },
    ));
    if kinds.contains(&(PointKind::Extrapolated as u8)) {
        legend.push(Entry::Kind(
            PointKind::Extrapolated,
            "extrapolated (over budget): stopped at the budget, wall time extrapolated from its progress"
                .into(),
        ));
    }
    if kinds.contains(&(PointKind::AboveBudget as u8)) {
        legend.push(Entry::Kind(
            PointKind::AboveBudget,
            format!(
                "over budget, not extrapolated (less than {:.0}% done, or past the exact final time): longer than the budget",
                MIN_PROGRESS * 100.0
            ),
        ));
    }
    if d.series.len() > 1 {
        legend.push(Entry::Note(
            "The series are drawn slightly apart around each quantum, so that equal times stay visible."
                .into(),
        ));
    }
    legend.extend(refs);
    Ok(legend)
}

/// Wall time versus HCAs, one line per message count.
fn draw_scaling<DB: DrawingBackend>(
    left: &DrawingArea<DB, Shift>,
    rows: &[ScalingRow],
) -> Result<Vec<Entry>, Box<dyn Error>>
where
    DB::ErrorType: 'static,
{
    let ok: Vec<&ScalingRow> = rows
        .iter()
        .filter(|r| r.status == "ok" && r.wall_s > 0.0)
        .collect();
    let hmin = ok.iter().map(|r| r.hcas).min().unwrap_or(1) as f64;
    let hmax = ok.iter().map(|r| r.hcas).max().unwrap_or(2) as f64;
    let ymin = ok
        .iter()
        .map(|r| r.wall_s)
        .fold(f64::INFINITY, f64::min)
        .min(1.0)
        / 1.5;
    let ymax = ok
        .iter()
        .map(|r| r.wall_s)
        .fold(0.0, f64::max)
        .max(ymin * 4.0)
        * 1.5;
    let hcas: Vec<f64> = ok
        .iter()
        .map(|r| r.hcas)
        .collect::<BTreeSet<u64>>()
        .into_iter()
        .map(|h| h as f64)
        .collect();
    let mut chart = wall_time_chart(
        left,
        hmin / 1.3..hmax * 1.3,
        hcas,
        "HCAs (log scale)",
        &|v| format!("{v:.0}"),
        ymin..ymax,
    )?;
    let mut legend = vec![Entry::Heading("Sends per rank".into())];
    let counts: BTreeSet<u64> = ok.iter().map(|r| r.count).collect();
    for (i, c) in counts.iter().enumerate() {
        let st = series_style(i);
        let mut pts: Vec<(f64, f64)> = ok
            .iter()
            .filter(|r| r.count == *c)
            .map(|r| (r.hcas as f64, r.wall_s))
            .collect();
        pts.sort_by(|a, b| a.0.total_cmp(&b.0));
        // The least-squares power law through the points (dashed).
        let xs: Vec<Vec<f64>> = pts.iter().map(|p| vec![p.0.ln()]).collect();
        let ys: Vec<f64> = pts.iter().map(|p| p.1.ln()).collect();
        let fit = crate::scaling::least_squares(&xs, &ys);
        let label = match &fit {
            Some((_, b, _)) => format!("{c} sends per rank (fit: wall ~ HCAs^{:.2})", b[0]),
            None => format!("{c} sends per rank"),
        };
        chart.draw_series(LineSeries::new(pts.clone(), st.color.stroke_width(2)))?;
        if let (Some((a, b, _)), Some(first), Some(last)) = (fit, pts.first(), pts.last()) {
            let line: Vec<(f64, f64)> = (0..=20)
                .map(|k| {
                    let x = first.0 * (last.0 / first.0).powf(k as f64 / 20.0);
                    (x, (a + b[0] * x.ln()).exp())
                })
                .collect();
            chart.draw_series(DashedLineSeries::new(
                line,
                6,
                4,
                st.color.mix(0.6).stroke_width(1),
            ))?;
        }
        chart.draw_series(pts.iter().map(|p| marker(*p, st, true, MARK_R)))?;
        legend.push(Entry::Series(st, label));
    }
    legend.push(Entry::Note(
        "Filled markers: measured (median of the runs). Thin dashed lines: least-squares power laws through each series."
            .into(),
    ));
    Ok(legend)
}

/// The chart of both figures: wall time on a log scale (labels at 1, 2,
/// 5 x 10^k) over a log-scale x axis labelled at `x_keys`.
fn wall_time_chart<'a, DB: DrawingBackend>(
    area: &'a DrawingArea<DB, Shift>,
    x: Range<f64>,
    x_keys: Vec<f64>,
    x_desc: &str,
    x_fmt: &dyn Fn(&f64) -> String,
    y: Range<f64>,
) -> Result<LogLogChart<'a, DB>, Box<dyn Error>>
where
    DB::ErrorType: 'static,
{
    let y_keys = one_two_five(y.start, y.end);
    let mut chart = ChartBuilder::on(area)
        .margin(15)
        .margin_right(25)
        .x_label_area_size(55)
        .y_label_area_size(75)
        .build_cartesian_2d(
            x.log_scale().with_key_points(x_keys),
            y.log_scale().with_key_points(y_keys),
        )?;
    chart
        .configure_mesh()
        .x_desc(x_desc)
        .y_desc("wall time [s] (log scale)")
        .x_label_formatter(x_fmt)
        .y_label_formatter(&fmt_s)
        .label_style(("sans-serif", 16))
        .axis_desc_style(("sans-serif", 18))
        .light_line_style(WHITE.mix(0.0))
        .bold_line_style(BLACK.mix(0.12))
        .draw()?;
    Ok(chart)
}

type LogLogChart<'a, DB> =
    ChartContext<'a, DB, Cartesian2d<WithKeyPoints<LogCoord<f64>>, WithKeyPoints<LogCoord<f64>>>>;

/// The two figures, each drawn twice (PNG and SVG).
#[derive(Clone, Copy)]
enum Figure<'a> {
    Quantum(&'a QuantumData),
    Scaling(&'a [ScalingRow]),
}

impl Figure<'_> {
    fn title(&self) -> &str {
        match self {
            Figure::Quantum(d) => &d.title,
            Figure::Scaling(_) => "Scaling: wall time vs HCAs (chain pattern, fabric alone)",
        }
    }

    /// The whole figure: white, the title on top, the plot area on the
    /// left and the legend panel on the right.
    fn draw<DB: DrawingBackend>(self, root: DrawingArea<DB, Shift>) -> Res
    where
        DB::ErrorType: 'static,
    {
        root.fill(&WHITE)?;
        let root = root
            .margin(8, 0, 0, 0)
            .titled(self.title(), ("sans-serif", 24))?;
        let (left, right) = root.split_horizontally(SIZE.0 - LEGEND_W);
        let legend = match self {
            Figure::Quantum(d) => draw_quantum(&left, d)?,
            Figure::Scaling(rows) => draw_scaling(&left, rows)?,
        };
        draw_legend(&right, &legend)?;
        left.present()?;
        Ok(())
    }

    /// Write `<stem>.png` and `<stem>.svg`.
    fn write(self, stem: &Path) -> anyhow::Result<Vec<PathBuf>> {
        register_fonts();
        let png = stem.with_extension("png");
        let svg = stem.with_extension("svg");
        self.draw(BitMapBackend::new(&png, SIZE).into_drawing_area())
            .map_err(|e| anyhow::anyhow!("{}: {e}", png.display()))?;
        self.draw(SVGBackend::new(&svg, SIZE).into_drawing_area())
            .map_err(|e| anyhow::anyhow!("{}: {e}", svg.display()))?;
        Ok(vec![png, svg])
    }
}

/// Write `<stem>.png` and `<stem>.svg` of the quantum plot.
pub fn quantum_plot(res: &EffResult, stem: &Path) -> anyhow::Result<Vec<PathBuf>> {
    Figure::Quantum(&quantum_data(res)).write(stem)
}

/// Write `<stem>.png` and `<stem>.svg` of the scaling plot.
pub fn scaling_plot(rows: &[ScalingRow], stem: &Path) -> anyhow::Result<Vec<PathBuf>> {
    Figure::Scaling(rows).write(stem)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::efficiency::EffConfig;
    use crate::setups::{Sample, Workload};
    use std::collections::HashSet;
    use std::time::Duration;

    #[test]
    fn axis_labels() {
        assert_eq!(one_two_five(0.03, 0.6), vec![0.05, 0.1, 0.2, 0.5]);
        assert_eq!(
            decades_and(0.5, 2000.0, &[100.0, 1000.0]),
            vec![1.0, 10.0, 100.0, 1000.0]
        );
        assert_eq!(fmt_s(&0.05), "0.05");
        assert_eq!(fmt_s(&0.002), "0.002");
        assert_eq!(fmt_s(&20.0), "20");
        assert_eq!(fmt_ps(&100.0), "100 ps");
        assert_eq!(fmt_ps(&1000.0), "1 ns");
        assert_eq!(fmt_wall(123.4), "123 s");
        assert_eq!(fmt_wall(0.7274), "0.73 s");
        assert_eq!(wrap("a bb ccc dddd", 6), vec!["a bb", "ccc", "dddd"]);
    }

    #[test]
    fn every_series_has_its_own_colour_and_marker() {
        let styles: Vec<SeriesStyle> = (0..5).map(series_style).collect();
        let colours: HashSet<RGBColor> = styles.iter().map(|s| s.color).collect();
        let shapes: HashSet<Shape> = styles.iter().map(|s| s.shape).collect();
        assert_eq!(colours.len(), 5, "five series, five colours");
        assert_eq!(shapes.len(), 5, "five series, five marker shapes");
        // Beyond that the (colour, shape) pairs stay distinct for 30 series.
        let pairs: HashSet<SeriesStyle> = (0..30).map(series_style).collect();
        assert_eq!(pairs.len(), 30);
        // No series is drawn in a reference line's colour.
        for s in &styles {
            assert!(![NOTIFY, GREY, BUDGET, BLACK].contains(&s.color));
        }
        // Every shape is a closed outline around its position.
        for sh in SHAPES {
            let p = shape_points(sh, MARK_R);
            assert!(p.len() >= 3);
            assert!(p
                .iter()
                .all(|(x, y)| x.abs() <= 2 * MARK_R && y.abs() <= 2 * MARK_R));
        }
    }

    #[test]
    fn series_are_spread_around_each_quantum() {
        assert_eq!(dodge(0, 1), 1.0);
        let f: Vec<f64> = (0..5).map(|i| dodge(i, 5)).collect();
        assert!((f[2] - 1.0).abs() < 1e-12);
        assert!(f.windows(2).all(|w| w[1] > w[0] * 1.1));
        assert!(f[0] > 1.0 / 1.36 && f[4] < 1.36);
    }

    #[test]
    fn extrapolated_points_are_drawn_apart() {
        use PointKind::*;
        assert_eq!(
            mark_style(Measured),
            MarkStyle {
                filled: true,
                arrow_up: false
            }
        );
        assert_eq!(
            mark_style(Extrapolated),
            MarkStyle {
                filled: false,
                arrow_up: false
            }
        );
        assert_eq!(
            mark_style(AboveBudget),
            MarkStyle {
                filled: false,
                arrow_up: true
            }
        );
        assert_eq!(segment(Measured, Measured), Segment::Solid);
        assert_eq!(segment(Measured, Extrapolated), Segment::Dashed);
        assert_eq!(segment(Extrapolated, Extrapolated), Segment::Dashed);
        assert_eq!(segment(Extrapolated, AboveBudget), Segment::None);
        assert_eq!(segment(AboveBudget, Measured), Segment::None);
    }

    fn row(
        setup: Setup,
        status: Status,
        wall: f64,
        est: Option<f64>,
        progress: Option<f64>,
    ) -> Row {
        Row {
            progress,
            wall_est_s: est,
            ..Row::new(&setup, status, 1, wall, Sample::default())
        }
    }

    fn query(q: u64, f: Option<f64>) -> Setup {
        Setup::Query {
            quantum_ps: q,
            estimate: f,
            transport: Transport::Ipc,
        }
    }

    /// A result like the default configuration's: measured, extrapolated
    /// and too-early-to-extrapolate polling runs, and the reference setups.
    fn sample_result() -> EffResult {
        let ok = Status::Ok;
        let over = Status::OverBudget;
        let notify = |t, v, w| {
            row(
                Setup::Notify {
                    transport: t,
                    version: v,
                },
                Status::Ok,
                w,
                None,
                None,
            )
        };
        EffResult {
            config: EffConfig {
                workload: Workload {
                    ranks: 128,
                    bytes: 180,
                    count: 100,
                    topology: "fattree:16".into(),
                    preset: "thesis-ddr".into(),
                    sets: vec![],
                    goal: "g".into(),
                },
                quanta: vec![1000, 100, 10, 1],
                factors: vec![1.0, 2.0],
                estimate_quanta: vec![1000, 100],
                query_transport: Transport::Ipc,
                runs: 3,
                budget: Duration::from_secs(10),
            },
            rows: vec![
                row(Setup::FabricAlone, ok.clone(), 0.6, None, None),
                row(Setup::LogGops, ok.clone(), 0.07, None, None),
                row(
                    query(1000, None),
                    over.clone(),
                    10.0,
                    Some(123.0),
                    Some(0.081),
                ),
                row(
                    query(100, None),
                    over.clone(),
                    10.0,
                    Some(7000.0),
                    Some(0.0013),
                ),
                row(
                    query(10, None),
                    over.clone(),
                    10.0,
                    Some(1.0e5),
                    Some(0.0004),
                ),
                row(query(1, None), Status::Failed("x".into()), 1.0, None, None),
                row(
                    query(1000, Some(1.0)),
                    over.clone(),
                    10.0,
                    Some(50.0),
                    Some(0.2),
                ),
                row(query(1000, Some(2.0)), ok.clone(), 6.3, None, None),
                row(
                    query(10, Some(2.0)),
                    over.clone(),
                    10.0,
                    Some(10.0),
                    Some(1.0),
                ),
                row(
                    query(100, Some(1.0)),
                    over.clone(),
                    10.0,
                    Some(1900.0),
                    Some(0.005),
                ),
                row(query(100, Some(2.0)), over, 10.0, Some(65.0), Some(0.15)),
                notify(Transport::Shm, 2, 0.71),
                notify(Transport::Ipc, 2, 0.73),
                notify(Transport::Inproc, 1, 0.83),
            ],
            reference_ps: Some(274_017_400),
            reference_from: "notify v2 (mq)".into(),
        }
    }

    #[test]
    fn quantum_data_separates_series_and_point_kinds() {
        let d = quantum_data(&sample_result());
        let labels: Vec<&str> = d.series.iter().map(|s| s.label.as_str()).collect();
        assert_eq!(
            labels,
            [
                "polling, no estimate",
                "polling + arrival estimate, F = 1",
                "polling + arrival estimate, F = 2"
            ]
        );
        let styles: HashSet<SeriesStyle> = d.series.iter().map(|s| s.style).collect();
        assert_eq!(styles.len(), 3);
        let colours: HashSet<RGBColor> = d.series.iter().map(|s| s.style.color).collect();
        let shapes: HashSet<Shape> = d.series.iter().map(|s| s.style.shape).collect();
        assert_eq!((colours.len(), shapes.len()), (3, 3));
        use PointKind::*;
        // Plain polling: the failed 1 ps run is left out; 8.1% done is
        // extrapolated, 0.13% and 0.04% are only "longer than the budget".
        // F = 2 at 10 ps passed the reference final time at the budget: a
        // lower bound.
        let points: Vec<&[(f64, f64, PointKind)]> =
            d.series.iter().map(|s| s.points.as_slice()).collect();
        assert_eq!(
            points,
            [
                &[
                    (10.0, 10.0, AboveBudget),
                    (100.0, 10.0, AboveBudget),
                    (1000.0, 123.0, Extrapolated)
                ][..],
                &[(100.0, 10.0, AboveBudget), (1000.0, 50.0, Extrapolated)],
                &[
                    (10.0, 10.0, AboveBudget),
                    (100.0, 65.0, Extrapolated),
                    (1000.0, 6.3, Measured)
                ]
            ]
        );
        assert_eq!(d.quanta, vec![10.0, 100.0, 1000.0]);
        assert_eq!(d.notify.len(), 3);
        assert_eq!(
            d.notify_main,
            Some(("notify v2, message queues".into(), 0.73))
        );
        assert_eq!(
            (d.fabric_alone, d.loggops_alone, d.budget_s),
            (Some(0.6), Some(0.07), 10.0)
        );
    }

    #[test]
    fn plots_are_written() {
        let dir = tempfile::tempdir().unwrap();
        let files = quantum_plot(&sample_result(), &dir.path().join("q")).unwrap();
        assert_eq!(files.len(), 2);
        let svg = std::fs::read_to_string(dir.path().join("q.svg")).unwrap();
        for text in [
            "polling, no estimate",
            "F = 2",
            "extrapolated (over budget)",
            "budget per run",
            "fabric alone",
            "wall time [s]",
        ] {
            assert!(svg.contains(text), "{text} missing from the SVG");
        }
        assert!(std::fs::metadata(dir.path().join("q.png")).unwrap().len() > 1000);
        if let Ok(keep) = std::env::var("STUDY_PLOT_KEEP") {
            std::fs::copy(
                dir.path().join("q.png"),
                Path::new(&keep).join("sample-quantum.png"),
            )
            .unwrap();
        }
    }

    #[test]
    fn scaling_plot_is_written() {
        // The doc's scaling table: wall time per (HCAs, sends per rank).
        let walls = [
            (128, [0.030, 0.046, 0.062]),
            (242, [0.052, 0.086, 0.118]),
            (392, [0.081, 0.143, 0.202]),
            (512, [0.106, 0.190, 0.277]),
        ];
        let mut rows = Vec::new();
        for (hcas, w) in walls {
            for (count, wall_s) in [15, 30, 45].into_iter().zip(w) {
                rows.push(ScalingRow {
                    hcas,
                    count,
                    wall_s,
                    status: "ok".into(),
                    ..ScalingRow::default()
                });
            }
        }
        let dir = tempfile::tempdir().unwrap();
        scaling_plot(&rows, &dir.path().join("s")).unwrap();
        let svg = std::fs::read_to_string(dir.path().join("s.svg")).unwrap();
        for text in ["15 sends per rank", "45 sends per rank", "HCAs (log scale)"] {
            assert!(svg.contains(text), "{text} missing from the SVG");
        }
        if let Ok(keep) = std::env::var("STUDY_PLOT_KEEP") {
            std::fs::copy(
                dir.path().join("s.png"),
                Path::new(&keep).join("sample-scaling.png"),
            )
            .unwrap();
        }
    }
}
