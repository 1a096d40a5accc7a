//! The efficiency study (thesis section 4.8): every setup on the same
//! traffic, repeated runs, the wall-time budget and the extrapolation of
//! runs stopped for it.

use crate::proc::{self, Progress, RunResult};
use crate::setups::{Bins, Sample, Setup, Transport, Workload};
use std::path::Path;
use std::time::Duration;

/// What to run.
#[derive(Clone, Debug)]
pub struct EffConfig {
    pub workload: Workload,
    /// Quanta of the plain polling runs (ps).
    pub quanta: Vec<u64>,
    /// Arrival-estimate factors F, each run at every quantum of `estimate_quanta`.
    pub factors: Vec<f64>,
    pub estimate_quanta: Vec<u64>,
    /// Transport of the polling runs (the thesis: message queues).
    pub query_transport: Transport,
    /// Runs per setup (the wall time is their median).
    pub runs: usize,
    /// Wall-time budget of one run; also bounds the repetitions of a setup.
    pub budget: Duration,
}

impl EffConfig {
    /// The setups in the order of the table (docs/efficiency.md).
    pub fn setups(&self) -> Vec<Setup> {
        let mut v = vec![Setup::FabricAlone, Setup::LogGops];
        for &q in &self.quanta {
            v.push(Setup::Query {
                quantum_ps: q,
                estimate: None,
                transport: self.query_transport,
            });
        }
        for &q in &self.estimate_quanta {
            for &f in &self.factors {
                v.push(Setup::Query {
                    quantum_ps: q,
                    estimate: Some(f),
                    transport: self.query_transport,
                });
            }
        }
        // notify: exact (v2) and the thesis's run-ahead (v1), over every
        // transport
        for version in [2, 1] {
            for transport in [
                Transport::Ipc,
                Transport::Shm,
                Transport::Inproc,
                Transport::OnePiece,
            ] {
                v.push(Setup::Notify { transport, version });
            }
        }
        v
    }
}

#[derive(Clone, Debug, PartialEq)]
pub enum Status {
    Ok,
    /// Stopped at the budget.
    OverBudget,
    Failed(String),
}

impl Status {
    pub fn name(&self) -> &'static str {
        match self {
            Status::Ok => "ok",
            Status::OverBudget => "over budget",
            Status::Failed(_) => "failed",
        }
    }
}

/// One row of the result table.
#[derive(Clone, Debug)]
pub struct Row {
    pub setup: Setup,
    pub status: Status,
    /// Completed runs the median is taken over (1 for a stopped run).
    pub runs: usize,
    /// Median wall time of the completed runs (for a stopped run: the time
    /// until it was stopped).
    pub wall_s: f64,
    pub wall_min_s: f64,
    pub wall_max_s: f64,
    /// Measurements of the median run (for a stopped run: memory only).
    pub sample: Sample,
    /// Stopped run: fraction of the reference simulated time reached.
    pub progress: Option<f64>,
    pub progress_raw: Option<Progress>,
    /// Stopped run: wall time extrapolated to the whole run.
    pub wall_est_s: Option<f64>,
    /// Stopped run: records (≈ round trips) extrapolated to the whole run.
    pub round_trips_est: Option<f64>,
    /// Final time minus the reference (notify) final time.
    pub error_ps: Option<i64>,
    pub error_pct: Option<f64>,
}

impl Row {
    /// A row of `runs` runs whose wall time is `wall_s` (min and max too),
    /// with nothing extrapolated and no error measured yet.
    pub fn new(setup: &Setup, status: Status, runs: usize, wall_s: f64, sample: Sample) -> Row {
        Row {
            setup: setup.clone(),
            status,
            runs,
            wall_s,
            wall_min_s: wall_s,
            wall_max_s: wall_s,
            sample,
            progress: None,
            progress_raw: None,
            wall_est_s: None,
            round_trips_est: None,
            error_ps: None,
            error_pct: None,
        }
    }

    fn failed(setup: &Setup, wall_s: f64, why: String) -> Row {
        Row::new(setup, Status::Failed(why), 0, wall_s, Sample::default())
    }

    /// The wall time to compare and plot: measured, or extrapolated.
    pub fn wall_for_plot(&self) -> Option<f64> {
        match self.status {
            Status::Ok => Some(self.wall_s),
            Status::OverBudget => self.wall_est_s,
            Status::Failed(_) => None,
        }
    }
}

/// The whole efficiency result.
#[derive(Clone, Debug)]
pub struct EffResult {
    pub config: EffConfig,
    pub rows: Vec<Row>,
    /// The final time every error is measured against, and where it came from.
    pub reference_ps: Option<u64>,
    pub reference_from: String,
}

fn median_index(walls: &[f64]) -> usize {
    let mut idx: Vec<usize> = (0..walls.len()).collect();
    idx.sort_by(|&a, &b| walls[a].total_cmp(&walls[b]));
    idx[(walls.len() - 1) / 2]
}

/// Median of a non-empty list (mean of the two middle values when even).
pub fn median(xs: &[f64]) -> f64 {
    let mut v = xs.to_vec();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// Extrapolate a stopped run to its whole simulated time (the reference,
/// the notify run's final time). The wall time uses the rate of progress
/// (simulated ps per second) over the second half of the run, which leaves
/// out start-up and early transients; with too few samples it falls back to
/// elapsed / fraction done. Polling costs about (messages in flight) / q
/// round trips per simulated ps, which the dissemination keeps roughly
/// constant, so the records (≈ round trips) scale with the fraction done.
/// Returns (fraction done, wall time, round trips).
pub fn extrapolate(
    wall_s: f64,
    progress: Option<Progress>,
    samples: &[(f64, Progress)],
    reference_ps: Option<u64>,
) -> (Option<f64>, Option<f64>, Option<f64>) {
    let (Some(p), Some(t)) = (progress, reference_ps) else {
        return (None, None, None);
    };
    if t == 0 || p.time_ps == 0 {
        return (None, None, None);
    }
    let frac = (p.time_ps as f64 / t as f64).min(1.0);
    let mut est = wall_s / frac;
    let late: Vec<&(f64, Progress)> = samples.iter().filter(|s| s.0 >= wall_s / 2.0).collect();
    if let (Some(a), Some(b)) = (late.first(), late.last()) {
        let dt = b.0 - a.0;
        if dt >= 0.25 * wall_s && b.1.time_ps > a.1.time_ps {
            let rate = (b.1.time_ps - a.1.time_ps) as f64 / dt;
            est = wall_s + t.saturating_sub(p.time_ps) as f64 / rate;
        }
    }
    let rts = p.records.map(|r| r as f64 / frac);
    (Some(frac), Some(est), rts)
}

/// Runs the study, printing one line per run on stderr.
pub struct Runner<'a> {
    pub bins: &'a Bins,
    pub work: &'a Path,
    pub key_prefix: String,
    pub counter: usize,
    pub verbose: bool,
    /// Pin every child to this CPU.
    pub pin_cpu: Option<usize>,
}

/// Whether a failed fabric start was for lack of message-queue budget
/// (other sessions on the machine hold the per-user RLIMIT_MSGQUEUE).
fn mq_budget_exhausted(r: &RunResult) -> bool {
    r.proc("fabric").is_some_and(|p| {
        !p.exit.success()
            && (p.stderr.contains("RLIMIT_MSGQUEUE") || p.stderr.contains("message-queue budget"))
    })
}

impl Runner<'_> {
    fn cleanup(&self, key: &str) {
        let _ = std::process::Command::new(&self.bins.ipc_proto)
            .args(["cleanup", key])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .status();
    }

    /// One run of a setup; retried while the message-queue budget is held
    /// by other sessions (up to about two minutes).
    pub fn run_once(
        &mut self,
        setup: &Setup,
        w: &Workload,
        budget: Option<Duration>,
    ) -> anyhow::Result<(RunResult, std::path::PathBuf)> {
        let mut tries = 0;
        loop {
            self.counter += 1;
            let key = format!("{}-{}", self.key_prefix, self.counter);
            let dir = self.work.join(format!("run{}", self.counter));
            std::fs::create_dir_all(&dir)?;
            let mut specs = setup.procs(w, self.bins, &key, &dir);
            for s in &mut specs {
                s.cpu = self.pin_cpu;
            }
            if self.verbose {
                for s in &specs {
                    eprintln!("  $ {}", s.display());
                }
            }
            let ipc = setup.transport() == Some(Transport::Ipc);
            let two = setup.transport().is_some_and(|t| t.two_processes());
            if two {
                self.cleanup(&key);
            }
            let r = proc::run(&specs, budget, &dir);
            if two {
                self.cleanup(&key);
            }
            let r = r?;
            if ipc && mq_budget_exhausted(&r) && tries < 60 {
                tries += 1;
                if tries == 1 {
                    eprintln!("  message-queue budget held by other sessions; waiting for it");
                }
                std::thread::sleep(Duration::from_secs(2));
                continue;
            }
            return Ok((r, dir));
        }
    }

    /// All runs of one setup.
    pub fn measure(
        &mut self,
        setup: &Setup,
        cfg: &EffConfig,
        reference_ps: Option<u64>,
    ) -> anyhow::Result<Row> {
        let budget = cfg.budget;
        let mut samples: Vec<Sample> = Vec::new();
        let mut spent = 0.0;
        loop {
            let (r, dir) = self.run_once(setup, &cfg.workload, Some(budget))?;
            if r.over_budget {
                let (progress, wall_est_s, round_trips_est) =
                    extrapolate(r.wall_s, r.progress, &r.progress_samples, reference_ps);
                if self.verbose {
                    for (t, p) in &r.progress_samples {
                        eprintln!(
                            "    progress at {t:.2} s: {} ps, {:?} records",
                            p.time_ps, p.records
                        );
                    }
                }
                let sample = Sample {
                    wall_s: r.wall_s,
                    sched_rss_kb: r.proc("scheduler").map(|p| p.maxrss_kb),
                    fabric_rss_kb: r.proc("fabric").map(|p| p.maxrss_kb),
                    parent_anon_kb: r.parent_anon_kb,
                    ..Sample::default()
                };
                eprintln!(
                    "  {}: over budget after {:.1} s{}",
                    setup.label(),
                    r.wall_s,
                    match (progress, wall_est_s) {
                        (Some(p), Some(e)) => format!(
                            " at {:.2}% of the simulated time; extrapolated {:.0} s",
                            p * 100.0,
                            e
                        ),
                        _ => " (no progress known, no extrapolation)".into(),
                    }
                );
                // A stopped run replaces any completed ones: the setup as a
                // whole does not fit the budget.
                return Ok(Row {
                    progress,
                    progress_raw: r.progress,
                    wall_est_s,
                    round_trips_est,
                    ..Row::new(setup, Status::OverBudget, 1, r.wall_s, sample)
                });
            }
            if !r.all_ok() {
                let why = r.failure_text();
                eprintln!("  {}: FAILED\n{why}", setup.label());
                return Ok(Row::failed(setup, r.wall_s, why));
            }
            let s = match setup.sample(&r, &cfg.workload, &dir) {
                Ok(s) => s,
                Err(e) => {
                    let why = format!("{e:#}");
                    eprintln!("  {}: FAILED: {why}", setup.label());
                    return Ok(Row::failed(setup, r.wall_s, why));
                }
            };
            eprintln!(
                "  {}: run {} {:.3} s",
                setup.label(),
                samples.len() + 1,
                s.wall_s
            );
            spent += s.wall_s;
            let last = s.wall_s;
            samples.push(s);
            if samples.len() >= cfg.runs || spent + last > budget.as_secs_f64() {
                break;
            }
        }
        let walls: Vec<f64> = samples.iter().map(|s| s.wall_s).collect();
        let runs = samples.len();
        let sample = samples.swap_remove(median_index(&walls));
        Ok(Row {
            wall_min_s: walls.iter().cloned().fold(f64::INFINITY, f64::min),
            wall_max_s: walls.iter().cloned().fold(0.0, f64::max),
            ..Row::new(setup, Status::Ok, runs, median(&walls), sample)
        })
    }

    /// The whole study: the notify runs first (their final time is the
    /// reference for errors and for extrapolating stopped runs).
    pub fn run_study(&mut self, cfg: &EffConfig) -> anyhow::Result<EffResult> {
        let setups = cfg.setups();
        let n = setups.len();
        let first: Vec<usize> = (0..n)
            .filter(|&i| matches!(setups[i], Setup::Notify { .. }))
            .collect();
        let rest: Vec<usize> = (0..n).filter(|i| !first.contains(i)).collect();
        let mut rows: Vec<Option<Row>> = vec![None; n];
        let mut reference: Option<(u64, String)> = None;
        for (k, &i) in first.iter().chain(rest.iter()).enumerate() {
            eprintln!("[{}/{}] {}", k + 1, n, setups[i].label());
            let row = self.measure(&setups[i], cfg, reference.as_ref().map(|r| r.0))?;
            if reference.is_none()
                && row.status == Status::Ok
                && matches!(row.setup, Setup::Notify { .. })
            {
                if let Some(t) = row.sample.final_ps {
                    reference = Some((t, row.setup.label()));
                }
            }
            rows[i] = Some(row);
        }
        let mut rows: Vec<Row> = rows
            .into_iter()
            .map(|r| r.expect("every setup ran"))
            .collect();
        if let Some((t, _)) = &reference {
            for r in &mut rows {
                if let (Status::Ok, Some(f)) = (&r.status, r.sample.final_ps) {
                    let e = f as i64 - *t as i64;
                    r.error_ps = Some(e);
                    r.error_pct = (*t > 0).then(|| e as f64 * 100.0 / *t as f64);
                }
            }
        }
        Ok(EffResult {
            config: cfg.clone(),
            rows,
            reference_ps: reference.as_ref().map(|r| r.0),
            reference_from: reference
                .map(|r| r.1)
                .unwrap_or_else(|| "none (the notify runs failed)".into()),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_of_odd_and_even() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[4.0, 1.0]), 2.5);
        assert_eq!(median_index(&[3.0, 1.0, 2.0]), 2);
    }

    #[test]
    fn extrapolation_is_linear_in_simulated_time() {
        let p = Progress {
            time_ps: 250,
            records: Some(1000),
            events: None,
        };
        // No samples: elapsed / fraction done.
        let (f, w, r) = extrapolate(5.0, Some(p), &[], Some(1000));
        assert_eq!(f, Some(0.25));
        assert_eq!(w, Some(20.0));
        assert_eq!(r, Some(4000.0));
        assert_eq!(extrapolate(5.0, None, &[], Some(1000)), (None, None, None));
        assert_eq!(extrapolate(5.0, Some(p), &[], None), (None, None, None));
        // A slow start (nothing in the first 2.5 s), then 100 ps/s: the
        // remaining 750 ps take 7.5 s more.
        let at = |t: u64| Progress {
            time_ps: t,
            records: None,
            events: None,
        };
        let samples = [(2.5, at(0)), (3.0, at(50)), (4.0, at(150)), (5.0, at(250))];
        let (_, w, _) = extrapolate(5.0, Some(p), &samples, Some(1000));
        assert_eq!(w, Some(12.5));
    }

    #[test]
    fn setups_in_the_issues_order() {
        let cfg = EffConfig {
            workload: Workload {
                ranks: 2,
                bytes: 180,
                count: 1,
                topology: "H8_S1".into(),
                preset: "thesis-ddr".into(),
                sets: vec![],
                goal: "g".into(),
            },
            quanta: vec![1000, 100],
            factors: vec![1.0, 2.0],
            estimate_quanta: vec![1000],
            query_transport: Transport::Ipc,
            runs: 3,
            budget: Duration::from_secs(1),
        };
        let l: Vec<String> = cfg.setups().iter().map(|s| s.label()).collect();
        assert_eq!(
            l,
            [
                "fabric alone",
                "LogGOPS alone (LogGP)",
                "query q=1 ns",
                "query q=100 ps",
                "query q=1 ns F=1",
                "query q=1 ns F=2",
                "notify v2 (mq)",
                "notify v2 (shm)",
                "notify v2 (inproc)",
                "notify v2 (onepiece)",
                "notify v1 (mq)",
                "notify v1 (shm)",
                "notify v1 (inproc)",
                "notify v1 (onepiece)"
            ]
        );
    }
}
