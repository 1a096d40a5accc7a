//! PNG and SVG plots (plotters). Text uses an embedded DejaVu Sans
//! (ab_glyph), so the plots render the same on a machine without fonts.

use crate::efficiency::{EffResult, Status};
use crate::scaling::ScalingRow;
use crate::setups::Setup;
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::FontStyle;
use std::collections::BTreeSet;
use std::error::Error;
use std::path::Path;
use std::sync::Once;

type Res = Result<(), Box<dyn Error>>;

/// A polling series: its label and points (quantum ps, wall s, extrapolated).
type Series = (String, Vec<(f64, f64, bool)>);

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

const SIZE: (u32, u32) = (1000, 650);

const PALETTE: [RGBColor; 8] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(23, 190, 207),
];

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

/// Wall time versus quantum: polling (plain and with the estimate, one
/// line per F; hollow markers = extrapolated), notify and the fabric alone
/// as horizontal lines.
fn draw_quantum<DB: DrawingBackend>(root: DrawingArea<DB, Shift>, res: &EffResult) -> Res
where
    DB::ErrorType: 'static,
{
    root.fill(&WHITE)?;
    // Series: label -> points (quantum, wall, extrapolated).
    let mut series: Vec<Series> = Vec::new();
    let mut hlines: Vec<(String, f64)> = Vec::new();
    for r in &res.rows {
        let Some(w) = r.wall_for_plot() else { continue };
        match &r.setup {
            Setup::Query {
                quantum_ps,
                estimate,
                ..
            } => {
                let name = match estimate {
                    None => "query (polling)".to_string(),
                    Some(f) => format!("query, estimate F={f}"),
                };
                let pt = (*quantum_ps as f64, w, r.status == Status::OverBudget);
                match series.iter_mut().find(|s| s.0 == name) {
                    Some(s) => s.1.push(pt),
                    None => series.push((name, vec![pt])),
                }
            }
            Setup::Notify { transport, version } => {
                hlines.push((format!("notify v{version} ({})", transport.describe()), w))
            }
            Setup::FabricAlone => hlines.push(("fabric alone".into(), w)),
            Setup::LogGops => hlines.push(("LogGOPS alone".into(), w)),
        }
    }
    let budget = res.config.budget.as_secs_f64();
    let qs: Vec<f64> = series
        .iter()
        .flat_map(|s| s.1.iter().map(|p| p.0))
        .collect();
    let (qmin, qmax) = if qs.is_empty() {
        (1.0, 1000.0)
    } else {
        (
            qs.iter().cloned().fold(f64::INFINITY, f64::min),
            qs.iter().cloned().fold(0.0, f64::max),
        )
    };
    let ys: Vec<f64> = series
        .iter()
        .flat_map(|s| s.1.iter().map(|p| p.1))
        .chain(hlines.iter().map(|h| h.1))
        .chain(std::iter::once(budget))
        .filter(|y| *y > 0.0)
        .collect();
    let ymin = ys.iter().cloned().fold(f64::INFINITY, f64::min).min(budget) / 2.0;
    // Headroom above the data for the legend.
    let ymax = ys.iter().cloned().fold(0.0, f64::max) * 20.0;
    let xr = (qmin / 2.0)..(qmax * 2.0);
    let mut chart = ChartBuilder::on(&root)
        .caption(
            format!(
                "Wall time vs quantum: {} ranks on {}",
                res.config.workload.ranks, res.config.workload.topology
            ),
            ("sans-serif", 24),
        )
        .margin(15)
        .x_label_area_size(45)
        .y_label_area_size(70)
        .build_cartesian_2d(
            xr.clone().log_scale(),
            (ymin..ymax)
                .log_scale()
                .with_key_points(one_two_five(ymin, ymax)),
        )?;
    chart
        .configure_mesh()
        .x_desc("quantum q (log scale)")
        .y_desc("wall time [s] (log scale)")
        .x_label_formatter(&fmt_ps)
        .y_label_formatter(&fmt_s)
        .label_style(("sans-serif", 15))
        .draw()?;
    for (i, (name, pts)) in series.iter().enumerate() {
        let c = PALETTE[i % PALETTE.len()];
        let mut pts = pts.clone();
        pts.sort_by(|a, b| a.0.total_cmp(&b.0));
        chart
            .draw_series(LineSeries::new(
                pts.iter().map(|p| (p.0, p.1)),
                c.stroke_width(2),
            ))?
            .label(name.clone())
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], c.stroke_width(2)));
        chart.draw_series(pts.iter().map(|p| {
            let style = if p.2 { c.stroke_width(2) } else { c.filled() };
            Circle::new((p.0, p.1), 5, style)
        }))?;
    }
    let dark = [
        BLACK,
        RGBColor(90, 90, 90),
        RGBColor(0, 100, 0),
        RGBColor(120, 0, 120),
    ];
    for (i, (name, y)) in hlines.iter().enumerate() {
        let c = dark[i % dark.len()];
        let y = y.max(ymin * 1.01);
        chart
            .draw_series(DashedLineSeries::new(
                vec![(xr.start, y), (xr.end, y)],
                8,
                4,
                c.stroke_width(2),
            ))?
            .label(format!("{name}: {y:.3} s"))
            .legend(move |(x, yy)| {
                PathElement::new(vec![(x, yy), (x + 20, yy)], c.stroke_width(2))
            });
    }
    let red = RGBColor(200, 0, 0);
    chart
        .draw_series(LineSeries::new(
            vec![(xr.start, budget), (xr.end, budget)],
            red.stroke_width(1),
        ))?
        .label(format!(
            "budget per run: {budget} s (hollow = extrapolated)"
        ))
        .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], red.stroke_width(1)));
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperRight)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .label_font(("sans-serif", 14))
        .draw()?;
    root.present()?;
    Ok(())
}

/// Wall time versus HCAs, one line per message count.
fn draw_scaling<DB: DrawingBackend>(root: DrawingArea<DB, Shift>, rows: &[ScalingRow]) -> Res
where
    DB::ErrorType: 'static,
{
    root.fill(&WHITE)?;
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
    let mut chart = ChartBuilder::on(&root)
        .caption(
            "Scaling: wall time vs HCAs (chain pattern, fabric alone)",
            ("sans-serif", 24),
        )
        .margin(15)
        .x_label_area_size(45)
        .y_label_area_size(70)
        .build_cartesian_2d(
            (hmin / 1.3..hmax * 1.3).log_scale(),
            (ymin..ymax)
                .log_scale()
                .with_key_points(one_two_five(ymin, ymax)),
        )?;
    chart
        .configure_mesh()
        .x_desc("HCAs (log scale)")
        .y_desc("wall time [s] (log scale)")
        .x_label_formatter(&|v| format!("{v:.0}"))
        .y_label_formatter(&fmt_s)
        .label_style(("sans-serif", 15))
        .draw()?;
    let counts: BTreeSet<u64> = ok.iter().map(|r| r.count).collect();
    for (i, c) in counts.iter().enumerate() {
        let col = PALETTE[i % PALETTE.len()];
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
        chart
            .draw_series(LineSeries::new(pts.clone(), col.stroke_width(2)))?
            .label(label)
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], col.stroke_width(2)));
        chart.draw_series(pts.iter().map(|p| Circle::new(*p, 5, col.filled())))?;
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
                col.mix(0.6).stroke_width(1),
            ))?;
        }
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperLeft)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .label_font(("sans-serif", 14))
        .draw()?;
    root.present()?;
    Ok(())
}

/// Write `<stem>.png` and `<stem>.svg` of the quantum plot.
pub fn quantum_plot(res: &EffResult, stem: &Path) -> anyhow::Result<Vec<std::path::PathBuf>> {
    register_fonts();
    let png = stem.with_extension("png");
    let svg = stem.with_extension("svg");
    draw_quantum(BitMapBackend::new(&png, SIZE).into_drawing_area(), res)
        .map_err(|e| anyhow::anyhow!("{}: {e}", png.display()))?;
    draw_quantum(SVGBackend::new(&svg, SIZE).into_drawing_area(), res)
        .map_err(|e| anyhow::anyhow!("{}: {e}", svg.display()))?;
    Ok(vec![png, svg])
}

/// Write `<stem>.png` and `<stem>.svg` of the scaling plot.
pub fn scaling_plot(rows: &[ScalingRow], stem: &Path) -> anyhow::Result<Vec<std::path::PathBuf>> {
    register_fonts();
    let png = stem.with_extension("png");
    let svg = stem.with_extension("svg");
    draw_scaling(BitMapBackend::new(&png, SIZE).into_drawing_area(), rows)
        .map_err(|e| anyhow::anyhow!("{}: {e}", png.display()))?;
    draw_scaling(SVGBackend::new(&svg, SIZE).into_drawing_area(), rows)
        .map_err(|e| anyhow::anyhow!("{}: {e}", svg.display()))?;
    Ok(vec![png, svg])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn axis_labels() {
        assert_eq!(one_two_five(0.03, 0.6), vec![0.05, 0.1, 0.2, 0.5]);
        assert_eq!(fmt_s(&0.05), "0.05");
        assert_eq!(fmt_s(&0.002), "0.002");
        assert_eq!(fmt_s(&20.0), "20");
        assert_eq!(fmt_ps(&100.0), "100 ps");
        assert_eq!(fmt_ps(&1000.0), "1 ns");
    }
}
