//! The scaling study (thesis Table 4.8.1): the chain pattern (each rank
//! sends N messages of 1000 B to rank+1, every send but the first after a
//! receive) on 2-level fat trees of growing size, the fabric alone; the
//! same network idle until the same simulated time; and least-squares fits
//! of how the wall time grows with HCAs and with simulated time.

use crate::efficiency::median;
use crate::proc::{self, ProcSpec};
use crate::setups::{read_json, Bins, RunJson};
use anyhow::Context;
use std::collections::BTreeSet;
use std::path::Path;
use std::time::Duration;

#[derive(Clone, Debug)]
pub struct ScalingConfig {
    /// Switch port counts P of `fattree:P` (P*P/2 HCAs).
    pub ports: Vec<u32>,
    /// Messages per rank.
    pub counts: Vec<u64>,
    pub bytes: u64,
    pub preset: String,
    /// Fabric parameter overrides (`--set KEY=VALUE`).
    pub sets: Vec<String>,
    pub runs: usize,
    pub budget: Duration,
    /// Pin every run to this CPU.
    pub pin_cpu: Option<usize>,
}

#[derive(Clone, Debug, Default)]
pub struct ScalingRow {
    pub topology: String,
    pub hcas: u64,
    pub switches: u64,
    pub count: u64,
    pub bytes: u64,
    /// "ok", "over budget" or "failed".
    pub status: String,
    pub runs: usize,
    /// Median wall time of the whole `ibnet run` process.
    pub wall_s: f64,
    /// Median of ibnet's own event-loop time (`run.wall_s`).
    pub loop_s: Option<f64>,
    pub final_ps: Option<u64>,
    pub events: Option<u64>,
    pub idle_events: Option<u64>,
    pub idle_wall_s: Option<f64>,
    pub peak_rss_kb: Option<u64>,
}

impl ScalingRow {
    /// Fabric events per second of event-loop time.
    pub fn events_per_s(&self) -> Option<f64> {
        match (self.events, self.loop_s) {
            (Some(e), Some(l)) if l > 0.0 => Some(e as f64 / l),
            _ => None,
        }
    }
    /// Events per HCA per simulated microsecond (the thesis: about 1000).
    pub fn events_per_hca_us(&self) -> Option<f64> {
        match (self.events, self.final_ps) {
            (Some(e), Some(t)) if t > 0 && self.hcas > 0 => {
                Some(e as f64 / self.hcas as f64 / (t as f64 / 1e6))
            }
            _ => None,
        }
    }
    pub fn idle_ratio(&self) -> Option<f64> {
        match (self.idle_events, self.events) {
            (Some(i), Some(e)) if e > 0 => Some(i as f64 / e as f64),
            _ => None,
        }
    }
}

/// Least-squares fit y = a + sum_k b_k x_k (ordinary, 1 or 2 regressors).
/// Returns (a, b, r2), or None when the system is singular.
pub fn least_squares(xs: &[Vec<f64>], y: &[f64]) -> Option<(f64, Vec<f64>, f64)> {
    let n = y.len();
    let k = xs.first().map_or(0, |r| r.len());
    if n < k + 1 || xs.len() != n {
        return None;
    }
    // Normal equations on [1, x...].
    let m = k + 1;
    let mut a = vec![vec![0.0; m + 1]; m];
    for (row, &yy) in xs.iter().zip(y) {
        let mut v = vec![1.0];
        v.extend(row.iter().cloned());
        for i in 0..m {
            for j in 0..m {
                a[i][j] += v[i] * v[j];
            }
            a[i][m] += v[i] * yy;
        }
    }
    // Gaussian elimination with partial pivoting.
    for c in 0..m {
        let p = (c..m).max_by(|&i, &j| a[i][c].abs().total_cmp(&a[j][c].abs()))?;
        if a[p][c].abs() < 1e-12 {
            return None;
        }
        a.swap(c, p);
        let pivot = a[c].clone();
        for (r, row) in a.iter_mut().enumerate() {
            if r != c {
                let f = row[c] / pivot[c];
                for (x, p) in row.iter_mut().zip(&pivot).skip(c) {
                    *x -= f * p;
                }
            }
        }
    }
    let coef: Vec<f64> = (0..m).map(|i| a[i][m] / a[i][i]).collect();
    let mean = y.iter().sum::<f64>() / n as f64;
    let (mut ss_res, mut ss_tot) = (0.0, 0.0);
    for (row, &yy) in xs.iter().zip(y) {
        let pred = coef[0] + row.iter().zip(&coef[1..]).map(|(x, b)| x * b).sum::<f64>();
        ss_res += (yy - pred).powi(2);
        ss_tot += (yy - mean).powi(2);
    }
    let r2 = if ss_tot > 0.0 {
        1.0 - ss_res / ss_tot
    } else {
        1.0
    };
    Some((coef[0], coef[1..].to_vec(), r2))
}

/// One fitted power law: wall = C * x^exponent (log-log least squares).
#[derive(Clone, Debug)]
pub struct Fit {
    pub what: String,
    pub exponents: Vec<f64>,
    pub r2: f64,
    pub points: usize,
}

/// Fits over the successful rows, for a wall-time measure `wall`:
/// - one per message count: wall vs HCAs;
/// - one per topology: wall vs simulated final time;
/// - all rows: wall = C * HCAs^a * T^b.
pub fn fits(
    rows: &[ScalingRow],
    wall: impl Fn(&ScalingRow) -> Option<f64>,
    label: &str,
) -> Vec<Fit> {
    let ok: Vec<&ScalingRow> = rows
        .iter()
        .filter(|r| {
            r.status == "ok"
                && wall(r).is_some_and(|w| w > 0.0)
                && r.final_ps.is_some_and(|t| t > 0)
        })
        .collect();
    let ln_hcas = |r: &ScalingRow| (r.hcas as f64).ln();
    let ln_final = |r: &ScalingRow| (r.final_ps.unwrap() as f64).ln();
    // The log-log fit of the wall time over `sel` against the regressors `x`.
    let fit = |what: String, sel: &[&ScalingRow], x: &dyn Fn(&ScalingRow) -> Vec<f64>| {
        let xs: Vec<Vec<f64>> = sel.iter().map(|r| x(r)).collect();
        let y: Vec<f64> = sel.iter().map(|r| wall(r).unwrap().ln()).collect();
        least_squares(&xs, &y).map(|(_, exponents, r2)| Fit {
            what,
            exponents,
            r2,
            points: y.len(),
        })
    };
    let mut out = Vec::new();
    let counts: BTreeSet<u64> = ok.iter().map(|r| r.count).collect();
    for c in counts {
        let sel: Vec<&ScalingRow> = ok.iter().copied().filter(|r| r.count == c).collect();
        let what = format!("{label} vs HCAs, {c} messages per rank");
        out.extend(fit(what, &sel, &|r| vec![ln_hcas(r)]));
    }
    let topos: BTreeSet<u64> = ok.iter().map(|r| r.hcas).collect();
    for h in topos {
        let sel: Vec<&ScalingRow> = ok.iter().copied().filter(|r| r.hcas == h).collect();
        let what = format!("{label} vs simulated time, {h} HCAs");
        out.extend(fit(what, &sel, &|r| vec![ln_final(r)]));
    }
    let what = format!("{label} = C * HCAs^a * T^b (all rows)");
    out.extend(fit(what, &ok, &|r| vec![ln_hcas(r), ln_final(r)]));
    out
}

/// HCAs and switches of the topology, from an `ibnet run` report: one sink
/// per HCA; switches are the other nodes with output buffers.
fn node_counts(j: &RunJson) -> (u64, u64) {
    let Some(r) = &j.report else { return (0, 0) };
    let sinks: BTreeSet<&str> = r.sinks.iter().map(|s| s.name.as_str()).collect();
    let nodes: BTreeSet<&str> = r.obufs.iter().map(|o| o.node.as_str()).collect();
    let switches = nodes.iter().filter(|n| !sinks.contains(*n)).count() as u64;
    (sinks.len() as u64, switches)
}

/// `ibnet run` on `topo` with the study's preset and overrides, the one
/// option that says how long (`--traffic` or `--until`), JSON out.
fn run_args(cfg: &ScalingConfig, topo: &str, what: &str, value: String) -> Vec<String> {
    let mut v: Vec<String> = vec![
        "run".into(),
        "--topology".into(),
        topo.into(),
        "--preset".into(),
        cfg.preset.clone(),
        what.into(),
        value,
        "--json".into(),
    ];
    for kv in &cfg.sets {
        v.extend(["--set".to_string(), kv.clone()]);
    }
    v
}

fn ibnet_run(
    bins: &Bins,
    args: Vec<String>,
    budget: Duration,
    pin_cpu: Option<usize>,
    work: &Path,
) -> anyhow::Result<(proc::RunResult, Option<RunJson>)> {
    let mut spec = ProcSpec::new("fabric", bins.ibnet.clone(), args);
    spec.cpu = pin_cpu;
    let r = proc::run(&[spec], Some(budget), work)?;
    let j = r
        .proc("fabric")
        .filter(|p| p.exit.success())
        .and_then(|p| read_json::<RunJson>(&p.stdout_path, "ibnet run --json").ok());
    Ok((r, j))
}

/// Run the scaling study, one line per run on stderr.
pub fn run(cfg: &ScalingConfig, bins: &Bins, work: &Path) -> anyhow::Result<Vec<ScalingRow>> {
    let mut rows = Vec::new();
    let total = cfg.ports.len() * cfg.counts.len();
    let mut k = 0;
    for &p in &cfg.ports {
        for &c in &cfg.counts {
            k += 1;
            let topo = format!("fattree:{p}");
            eprintln!(
                "[scaling {k}/{total}] {topo}, chain of {c} x {} B",
                cfg.bytes
            );
            let mut row = ScalingRow {
                topology: topo.clone(),
                count: c,
                bytes: cfg.bytes,
                ..ScalingRow::default()
            };
            let args = run_args(cfg, &topo, "--traffic", format!("chain:{}:{c}", cfg.bytes));
            let mut walls = Vec::new();
            let mut loops = Vec::new();
            let mut last: Option<RunJson> = None;
            let mut spent = 0.0;
            while walls.len() < cfg.runs {
                let dir = work.join(format!("scaling-{p}-{c}-{}", walls.len()));
                std::fs::create_dir_all(&dir)?;
                let (r, j) = ibnet_run(bins, args.clone(), cfg.budget, cfg.pin_cpu, &dir)?;
                row.peak_rss_kb = r.proc("fabric").map(|p| p.maxrss_kb);
                if r.over_budget {
                    row.status = "over budget".into();
                    row.wall_s = r.wall_s;
                    eprintln!("  over budget after {:.1} s", r.wall_s);
                    break;
                }
                let Some(j) = j else {
                    row.status = "failed".into();
                    eprintln!("  FAILED\n{}", r.failure_text());
                    break;
                };
                spent += r.wall_s;
                walls.push(r.wall_s);
                if let Some(l) = j.run.wall_s {
                    loops.push(l);
                }
                last = Some(j);
                if spent + r.wall_s > cfg.budget.as_secs_f64() {
                    break;
                }
            }
            if let Some(j) = last.filter(|_| row.status.is_empty()) {
                row.status = "ok".into();
                row.runs = walls.len();
                row.wall_s = median(&walls);
                row.loop_s = (!loops.is_empty()).then(|| median(&loops));
                row.final_ps = j.closed_loop.as_ref().and_then(|c| c.end_ps);
                row.events = j.run.events_processed;
                let (h, s) = node_counts(&j);
                row.hcas = h;
                row.switches = s;
                eprintln!(
                    "  {:.3} s, simulated {} ps, {} events",
                    row.wall_s,
                    row.final_ps.unwrap_or(0),
                    row.events.unwrap_or(0)
                );
                // The same network without traffic, to the same simulated time.
                if let Some(t) = row.final_ps {
                    let dir = work.join(format!("scaling-{p}-{c}-idle"));
                    std::fs::create_dir_all(&dir)?;
                    let idle_args = run_args(cfg, &topo, "--until", format!("{t}ps"));
                    let (r, ij) = ibnet_run(bins, idle_args, cfg.budget, cfg.pin_cpu, &dir)
                        .context("idle run")?;
                    if let Some(ij) = ij {
                        row.idle_events = ij.run.events_processed;
                        row.idle_wall_s = Some(r.wall_s);
                    } else {
                        eprintln!("  idle run failed\n{}", r.failure_text());
                    }
                }
            }
            rows.push(row);
        }
    }
    Ok(rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fits_a_power_law_exactly() {
        // y = 2 * x^1.5
        let xs: Vec<Vec<f64>> = [1.0f64, 2.0, 4.0, 8.0]
            .iter()
            .map(|x| vec![x.ln()])
            .collect();
        let y: Vec<f64> = [1.0f64, 2.0, 4.0, 8.0]
            .iter()
            .map(|x| (2.0 * x.powf(1.5)).ln())
            .collect();
        let (a, b, r2) = least_squares(&xs, &y).unwrap();
        assert!((a - 2f64.ln()).abs() < 1e-9);
        assert!((b[0] - 1.5).abs() < 1e-9);
        assert!((r2 - 1.0).abs() < 1e-9);
    }

    #[test]
    fn fits_two_exponents() {
        // wall = 0.5 * H^1.0 * T^0.8
        let pts = [
            (128.0f64, 1e7f64),
            (242.0, 2e7),
            (392.0, 1e7),
            (512.0, 3e7),
            (128.0, 3e7),
        ];
        let xs: Vec<Vec<f64>> = pts.iter().map(|(h, t)| vec![h.ln(), t.ln()]).collect();
        let y: Vec<f64> = pts
            .iter()
            .map(|(h, t)| (0.5 * h * t.powf(0.8)).ln())
            .collect();
        let (_, b, _) = least_squares(&xs, &y).unwrap();
        assert!(
            (b[0] - 1.0).abs() < 1e-9 && (b[1] - 0.8).abs() < 1e-9,
            "{b:?}"
        );
        // Singular: one point cannot fit a line.
        assert!(least_squares(&xs[..1], &y[..1]).is_none());
    }

    #[test]
    fn runs_take_the_preset_and_every_override() {
        let cfg = ScalingConfig {
            ports: vec![4],
            counts: vec![2],
            bytes: 1000,
            preset: "qdr".into(),
            sets: vec!["max_vl=1".into(), "isw_delay_ns=40".into()],
            runs: 1,
            budget: Duration::from_secs(1),
            pin_cpu: None,
        };
        assert_eq!(
            run_args(&cfg, "fattree:4", "--until", "5ps".into()).join(" "),
            "run --topology fattree:4 --preset qdr --until 5ps --json --set max_vl=1 --set isw_delay_ns=40"
        );
    }

    #[test]
    fn fits_over_rows() {
        let mk = |h: u64, c: u64, t: u64| ScalingRow {
            hcas: h,
            count: c,
            status: "ok".into(),
            final_ps: Some(t),
            wall_s: h as f64 * 1e-3 * c as f64,
            ..ScalingRow::default()
        };
        let rows = vec![
            mk(128, 15, 10_000_000),
            mk(512, 15, 10_000_000),
            mk(128, 30, 20_000_000),
            mk(512, 30, 20_000_000),
        ];
        let f = fits(&rows, |r| Some(r.wall_s), "wall");
        let by_h = f.iter().find(|x| x.what.contains("HCAs, 15")).unwrap();
        assert!((by_h.exponents[0] - 1.0).abs() < 1e-9);
        let by_t = f
            .iter()
            .find(|x| x.what.contains("simulated time, 128"))
            .unwrap();
        assert!((by_t.exponents[0] - 1.0).abs() < 1e-9);
        let all = f.last().unwrap();
        assert_eq!(all.points, 4);
        assert!((all.exponents[0] - 1.0).abs() < 1e-9 && (all.exponents[1] - 1.0).abs() < 1e-9);
    }
}
