//! Markdown tables and CSV files of the results.
//!
//! Conventions: "-" = does not apply to the setup; "n/a" = the simulator
//! did not report the number. Extrapolated numbers are marked "~" in the
//! Markdown table and have their own CSV columns.

use crate::efficiency::{EffResult, Row, Status};
use crate::scaling::{Fit, ScalingRow};
use crate::setups::Setup;

/// The CSV columns of the efficiency study, in order.
pub const EFF_COLUMNS: &[&str] = &[
    "setup",
    "kind",
    "protocol",
    "transport",
    "quantum_ps",
    "estimate_factor",
    "status",
    "runs",
    "wall_s",
    "wall_min_s",
    "wall_max_s",
    "progress_fraction",
    "wall_extrapolated_s",
    "scheduler_loop_s",
    "scheduler_events",
    "fabric_events",
    "ipc_messages_sched_to_fabric",
    "ipc_records_sched_to_fabric",
    "ipc_records_fabric_to_sched",
    "ipc_messages_fabric_to_sched",
    "inserts",
    "queries",
    "round_trips",
    "round_trips_extrapolated",
    "scheduler_peak_rss_kb",
    "fabric_peak_rss_kb",
    "sim_final_ps",
    "error_ps",
    "error_pct",
    "causality_errors",
    "causality_error_max_ps",
];

/// The CSV columns of the scaling study.
pub const SCALING_COLUMNS: &[&str] = &[
    "topology",
    "hcas",
    "switches",
    "messages_per_rank",
    "bytes",
    "status",
    "runs",
    "wall_s",
    "event_loop_s",
    "sim_final_ps",
    "fabric_events",
    "idle_events",
    "idle_to_busy_ratio",
    "events_per_s",
    "events_per_hca_per_sim_us",
    "peak_rss_kb",
];

fn kind(s: &Setup) -> &'static str {
    match s {
        Setup::FabricAlone => "fabric-alone",
        Setup::LogGops => "loggops-alone",
        Setup::Query { estimate: None, .. } => "query",
        Setup::Query { .. } => "query-estimate",
        Setup::Notify { version: 1, .. } => "notify-v1",
        Setup::Notify { .. } => "notify",
    }
}

/// A value cell: `absent` when it does not apply, "n/a" when it was not
/// reported.
fn cell_or<T: ToString>(absent: &str, applies: bool, v: Option<T>) -> String {
    if !applies {
        absent.into()
    } else {
        v.map(|x| x.to_string()).unwrap_or_else(|| "n/a".into())
    }
}

/// A Markdown value cell: "-" when it does not apply.
fn cell<T: ToString>(applies: bool, v: Option<T>) -> String {
    cell_or("-", applies, v)
}

/// The same for CSV: "" when it does not apply.
fn csv_cell<T: ToString>(applies: bool, v: Option<T>) -> String {
    cell_or("", applies, v)
}

/// A CSV file's text: the header, then the rows, each field quoted by the
/// csv crate when it needs it (a comma, a quote, a line break).
fn csv_text(columns: &[&str], rows: &[Vec<String>]) -> String {
    let mut w = csv::Writer::from_writer(Vec::new());
    // Writing to memory fails only on rows of another length than the
    // header, which the callers' debug assertions rule out.
    w.write_record(columns).expect("CSV header");
    for r in rows {
        w.write_record(r).expect("CSV row of the header's length");
    }
    let bytes = w.into_inner().expect("CSV in memory");
    String::from_utf8(bytes).expect("CSV of UTF-8 fields")
}

/// Which measurements apply to a setup.
struct Applies {
    sched: bool,
    fabric: bool,
    ipc: bool,
    query: bool,
    /// Two processes (fabric RSS separate from the scheduler's).
    fabric_proc: bool,
}

fn applies(s: &Setup) -> Applies {
    match s {
        Setup::FabricAlone => Applies {
            sched: false,
            fabric: true,
            ipc: false,
            query: false,
            fabric_proc: true,
        },
        Setup::LogGops => Applies {
            sched: true,
            fabric: false,
            ipc: false,
            query: false,
            fabric_proc: false,
        },
        Setup::Query { transport, .. } => Applies {
            sched: true,
            fabric: true,
            ipc: true,
            query: true,
            fabric_proc: transport.two_processes(),
        },
        Setup::Notify { transport, .. } => Applies {
            sched: true,
            fabric: true,
            ipc: true,
            query: false,
            fabric_proc: transport.two_processes(),
        },
    }
}

/// Seconds with 3-4 significant digits (runs range from ms to hours).
fn f3(x: f64) -> String {
    if x >= 100.0 {
        format!("{x:.0}")
    } else if x >= 1.0 {
        format!("{x:.2}")
    } else if x >= 0.001 {
        format!("{x:.4}")
    } else {
        format!("{x:.1e}")
    }
}

fn sci(x: f64) -> String {
    if x >= 1e6 {
        format!("{x:.2e}")
    } else {
        format!("{x:.0}")
    }
}

fn mib(kb: Option<u64>) -> Option<String> {
    kb.map(|k| format!("{:.1}", k as f64 / 1024.0))
}

pub fn eff_csv(res: &EffResult) -> String {
    let mut rows = Vec::new();
    for r in &res.rows {
        let a = applies(&r.setup);
        let s = &r.sample;
        let ok = r.status == Status::Ok;
        let (q, f) = match &r.setup {
            Setup::Query {
                quantum_ps,
                estimate,
                ..
            } => (Some(*quantum_ps), *estimate),
            _ => (None, None),
        };
        let over = r.status == Status::OverBudget;
        // A stopped run has no reports: its counters are "n/a".
        let m = |applies: bool, v: Option<u64>| csv_cell(applies, v.filter(|_| ok));
        let fields: Vec<String> = vec![
            r.setup.label(),
            kind(&r.setup).into(),
            r.setup.protocol().into(),
            r.setup.transport().map(|t| t.name()).unwrap_or("").into(),
            csv_cell(q.is_some(), q),
            csv_cell(f.is_some(), f),
            r.status.name().into(),
            r.runs.to_string(),
            format!("{:.6}", r.wall_s),
            format!("{:.6}", r.wall_min_s),
            format!("{:.6}", r.wall_max_s),
            csv_cell(over, r.progress.map(|p| format!("{p:.6}"))),
            csv_cell(over, r.wall_est_s.map(|p| format!("{p:.3}"))),
            csv_cell(
                a.sched,
                s.sched_loop_s.filter(|_| ok).map(|x| format!("{x:.6}")),
            ),
            m(a.sched, s.sched_events),
            m(a.fabric, s.fabric_events),
            m(a.ipc, s.sched_messages),
            m(a.ipc, s.sched_records),
            m(a.ipc, s.fabric_records),
            csv_cell::<u64>(a.ipc, None),
            m(a.ipc, s.inserts),
            m(a.query, s.queries),
            m(a.ipc, s.round_trips),
            csv_cell(over, r.round_trips_est.map(|x| format!("{x:.0}"))),
            csv_cell(a.sched, s.sched_rss_kb),
            csv_cell(a.fabric_proc, s.fabric_rss_kb),
            m(true, s.final_ps),
            csv_cell(true, r.error_ps.filter(|_| ok)),
            csv_cell(true, r.error_pct.filter(|_| ok).map(|e| format!("{e:.4}"))),
            m(a.query, s.causality_errors),
            m(a.query, s.causality_max_ps),
        ];
        debug_assert_eq!(fields.len(), EFF_COLUMNS.len());
        rows.push(fields);
    }
    csv_text(EFF_COLUMNS, &rows)
}

fn wall_cell(r: &Row) -> String {
    match &r.status {
        Status::Ok => {
            if r.runs > 1 {
                format!(
                    "{} ({}-{})",
                    f3(r.wall_s),
                    f3(r.wall_min_s),
                    f3(r.wall_max_s)
                )
            } else {
                f3(r.wall_s)
            }
        }
        Status::OverBudget => match (r.wall_est_s, r.progress) {
            (Some(e), Some(p)) => format!(
                "**over budget**: stopped at {:.1} s, {:.2}% done; extrapolated ~{} s",
                r.wall_s,
                p * 100.0,
                sci(e)
            ),
            _ => format!(
                "**over budget**: stopped at {:.1} s (no progress known)",
                r.wall_s
            ),
        },
        Status::Failed(_) => "**failed**".into(),
    }
}

pub fn eff_markdown(res: &EffResult) -> String {
    let mut out = String::new();
    out.push_str("| Setup | Runs | Wall time [s] median (min-max) | Scheduler events | Fabric events | IPC msgs sched→fabric | IPC records fabric→sched | Round trips | Peak RSS sched / fabric [MiB] | Simulated final time [ps] | Error vs notify | Causality errors (max ps) |\n");
    out.push_str("|---|---:|---|---:|---:|---:|---:|---:|---|---:|---:|---|\n");
    for r in &res.rows {
        let a = applies(&r.setup);
        let s = &r.sample;
        let ok = r.status == Status::Ok;
        let m = |applies: bool, v: Option<u64>| cell(applies, v.filter(|_| ok));
        let rts = if r.status == Status::OverBudget {
            r.round_trips_est
                .map(|x| format!("~{} (extrapolated)", sci(x)))
                .unwrap_or_else(|| "n/a".into())
        } else {
            m(a.ipc, s.round_trips)
        };
        let rss = format!(
            "{} / {}",
            cell(a.sched, mib(s.sched_rss_kb)),
            if a.fabric_proc {
                cell(true, mib(s.fabric_rss_kb))
            } else if a.fabric {
                "(same process)".into()
            } else {
                "-".into()
            }
        );
        let err = match (ok, r.error_ps, r.error_pct) {
            (true, Some(e), Some(p)) => format!("{e} ps ({p:+.3}%)"),
            (true, Some(e), None) => format!("{e} ps"),
            _ => "n/a".into(),
        };
        let caus = if a.query && ok {
            match (s.causality_errors, s.causality_max_ps) {
                (Some(c), Some(mx)) => format!("{c} ({mx})"),
                (Some(c), None) => c.to_string(),
                _ => "n/a".into(),
            }
        } else if a.query {
            "n/a".into()
        } else {
            "-".into()
        };
        out.push_str(&format!(
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |\n",
            r.setup.label(),
            r.runs,
            wall_cell(r),
            m(a.sched, s.sched_events),
            m(a.fabric, s.fabric_events),
            m(a.ipc, s.sched_messages),
            m(a.ipc, s.fabric_records),
            rts,
            rss,
            m(true, s.final_ps),
            err,
            caus
        ));
    }
    out
}

/// The thesis's Table 4.8 layout: wall time by quantum (rows) and
/// estimate factor (columns); "~" marks an extrapolated time.
pub fn eff_pivot(res: &EffResult) -> String {
    let mut quanta: Vec<u64> = Vec::new();
    let mut factors: Vec<f64> = Vec::new();
    for r in &res.rows {
        if let Setup::Query {
            quantum_ps,
            estimate,
            ..
        } = &r.setup
        {
            if !quanta.contains(quantum_ps) {
                quanta.push(*quantum_ps);
            }
            if let Some(f) = estimate {
                if !factors.contains(f) {
                    factors.push(*f);
                }
            }
        }
    }
    if quanta.is_empty() {
        return String::new();
    }
    quanta.sort_unstable_by(|a, b| b.cmp(a));
    let wall = |q: u64, f: Option<f64>| -> String {
        res.rows
            .iter()
            .find(|r| {
                matches!(&r.setup, Setup::Query { quantum_ps, estimate, .. } if *quantum_ps == q && *estimate == f)
            })
            .map(|r| match r.status {
                Status::Ok => f3(r.wall_s),
                Status::OverBudget => r
                    .wall_est_s
                    .map(|e| format!("~{}", sci(e)))
                    .unwrap_or_else(|| format!("> {:.0}", r.wall_s)),
                Status::Failed(_) => "failed".into(),
            })
            .unwrap_or_default()
    };
    let mut out = String::from("| quantum | no estimate |");
    for f in &factors {
        out.push_str(&format!(" F={f} |"));
    }
    out.push_str("\n|---|---:|");
    for _ in &factors {
        out.push_str("---:|");
    }
    out.push('\n');
    for q in quanta {
        out.push_str(&format!(
            "| {} | {} |",
            crate::setups::fmt_quantum(q),
            wall(q, None)
        ));
        for f in &factors {
            out.push_str(&format!(" {} |", wall(q, Some(*f))));
        }
        out.push('\n');
    }
    out
}

pub fn scaling_csv(rows: &[ScalingRow]) -> String {
    let mut out = Vec::new();
    for r in rows {
        let ok = r.status == "ok";
        let fields: Vec<String> = vec![
            r.topology.clone(),
            csv_cell(ok, Some(r.hcas)),
            csv_cell(ok, Some(r.switches)),
            r.count.to_string(),
            r.bytes.to_string(),
            r.status.clone(),
            r.runs.to_string(),
            format!("{:.6}", r.wall_s),
            csv_cell(true, r.loop_s.map(|x| format!("{x:.6}"))),
            csv_cell(true, r.final_ps),
            csv_cell(true, r.events),
            csv_cell(true, r.idle_events),
            csv_cell(true, r.idle_ratio().map(|x| format!("{x:.4}"))),
            csv_cell(true, r.events_per_s().map(|x| format!("{x:.0}"))),
            csv_cell(true, r.events_per_hca_us().map(|x| format!("{x:.1}"))),
            csv_cell(true, r.peak_rss_kb),
        ];
        debug_assert_eq!(fields.len(), SCALING_COLUMNS.len());
        out.push(fields);
    }
    csv_text(SCALING_COLUMNS, &out)
}

pub fn scaling_markdown(rows: &[ScalingRow], fits: &[Fit]) -> String {
    let mut out = String::new();
    out.push_str("| Topology (HCAs, switches) | Sends per rank x bytes | Wall time [s] | Event loop [s] | Simulated final time [ps] | Fabric events | Events w/o sends (idle/busy) | Events/s | Events per HCA per sim. µs | Peak RSS [MiB] |\n");
    out.push_str("|---|---|---:|---:|---:|---:|---|---:|---:|---:|\n");
    for r in rows {
        let wall = match r.status.as_str() {
            "ok" => f3(r.wall_s),
            "over budget" => format!("**over budget** (stopped at {:.1})", r.wall_s),
            _ => "**failed**".into(),
        };
        out.push_str(&format!(
            "| {} ({}, {}) | {} x {} | {} | {} | {} | {} | {} | {} | {} | {} |\n",
            r.topology,
            r.hcas,
            r.switches,
            r.count,
            r.bytes,
            wall,
            cell(true, r.loop_s.map(f3)),
            cell(true, r.final_ps),
            cell(true, r.events),
            match (r.idle_events, r.idle_ratio()) {
                (Some(i), Some(x)) => format!("{i} ({x:.3})"),
                (Some(i), None) => i.to_string(),
                _ => "n/a".into(),
            },
            cell(true, r.events_per_s().map(sci)),
            cell(true, r.events_per_hca_us().map(|x| format!("{x:.0}"))),
            cell(true, mib(r.peak_rss_kb)),
        ));
    }
    if !fits.is_empty() {
        out.push_str("\nLeast-squares fits on log-log scales (wall = C * x^exponent):\n\n");
        out.push_str("| Fit | Exponent(s) | R² | Points |\n|---|---|---:|---:|\n");
        for f in fits {
            let e: Vec<String> = f.exponents.iter().map(|x| format!("{x:.3}")).collect();
            out.push_str(&format!(
                "| {} | {} | {:.3} | {} |\n",
                f.what,
                e.join(", "),
                f.r2,
                f.points
            ));
        }
    }
    out
}

/// A short description of the machine and the time of the run.
pub fn machine_info() -> String {
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split_once(':'))
                .map(|(_, v)| v.trim().to_string())
        })
        .unwrap_or_else(|| "unknown CPU".into());
    let cores = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(0);
    let load = std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "?".into());
    format!("{cpu}, {cores} cores available, load average at start {load}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cells_distinguish_not_applicable_from_not_reported() {
        assert_eq!(cell::<u64>(false, None), "-");
        assert_eq!(cell::<u64>(true, None), "n/a");
        assert_eq!(cell(true, Some(5u64)), "5");
        assert_eq!(csv_cell::<u64>(false, Some(1)), "");
    }

    #[test]
    fn csv_quotes_only_fields_that_need_it() {
        let rows = vec![
            vec!["a,b".to_string(), "say \"hi\"".into(), "".into()],
            vec!["plain".to_string(), "1.5".into(), "n/a".into()],
        ];
        assert_eq!(
            csv_text(&["x", "y", "z"], &rows),
            "x,y,z\n\"a,b\",\"say \"\"hi\"\"\",\nplain,1.5,n/a\n"
        );
    }
}
