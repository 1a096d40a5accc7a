//! Real (traced) versus simulated run time per rank.
//!
//! The traced run time of a rank is MPI_Finalize time - MPI_Init return
//! (thesis 5.2.1), in microseconds. The simulated one is the host's finish
//! time printed by `loggopsim` (`Host h: T` lines, reference output format),
//! in the schedule's time unit, which is `timemult` units per trace
//! microsecond (trace2goal multiplies trace times by it).

use serde_json::json;

/// Finish time per host from `loggopsim` output, in host order: either its
/// JSON report (`--json`, the `finish_times_ps` array; `finish_times` of
/// older versions) or the text format (`Host 0: 5654 ps` lines, or the
/// unitless `Host 0: 5654` of `--loggopsim-output`; printed for at most 16
/// hosts). Errors if a
/// host number is missing or repeated, if the JSON report says the run
/// failed, or if there are no times (e.g. the run ended with leftover queues).
pub fn parse_host_times(output: &str) -> Result<Vec<u64>, String> {
    if output.trim_start().starts_with('{') {
        return parse_json_report(output);
    }
    let mut times: Vec<Option<u64>> = Vec::new();
    for (i, line) in output.lines().enumerate() {
        let Some(rest) = line.trim().strip_prefix("Host ") else {
            continue;
        };
        let Some((host, time)) = rest.split_once(':') else {
            continue;
        };
        // `T ps` (native output) or a bare `T` (LogGOPSim's format).
        let time = time.trim();
        let time = time.strip_suffix(" ps").unwrap_or(time);
        let (Ok(host), Ok(time)) = (host.trim().parse::<usize>(), time.parse::<u64>()) else {
            return Err(format!(
                "line {}: cannot read `{}` as `Host N: TIME`",
                i + 1,
                line.trim()
            ));
        };
        if times.len() <= host {
            times.resize(host + 1, None);
        }
        if times[host].replace(time).is_some() {
            return Err(format!("line {}: host {host} appears twice", i + 1));
        }
    }
    if times.is_empty() {
        return Err("the simulator printed no `Host N: TIME` lines".into());
    }
    times
        .iter()
        .enumerate()
        .map(|(h, t)| t.ok_or_else(|| format!("no finish time for host {h}")))
        .collect()
}

fn parse_json_report(output: &str) -> Result<Vec<u64>, String> {
    let v: serde_json::Value =
        serde_json::from_str(output).map_err(|e| format!("simulator JSON report: {e}"))?;
    if v.get("ok").and_then(|o| o.as_bool()) == Some(false) {
        return Err(format!(
            "the simulation failed (leftovers: {})",
            v.get("leftovers")
                .map(|l| l.to_string())
                .unwrap_or_default()
        ));
    }
    let times = v
        .get("finish_times_ps")
        .or_else(|| v.get("finish_times"))
        .and_then(|t| t.as_array())
        .ok_or("simulator JSON report has no `finish_times_ps` array")?;
    times
        .iter()
        .enumerate()
        .map(|(h, t)| {
            t.as_u64()
                .ok_or_else(|| format!("finish time of host {h} is not an unsigned integer: {t}"))
        })
        .collect()
}

/// Per rank, when it started on rank 0's clock relative to the earliest
/// rank, microseconds: `MPI_Init return + clockdiff` (the `# clockdiff:`
/// header, rank 0's clock minus this rank's, in microseconds; a missing one
/// counts as 0) minus the smallest such value. `loggopsim trace2goal
/// --sync-collectives` starts every rank with a calc of exactly this, so its
/// simulated run time is its finish time minus its skew. Computed relative
/// to rank 0's MPI_Init return so the 16-digit epoch times keep their
/// fractions of a microsecond in an f64.
pub fn start_skews_us(starts: &[(u64, Option<f64>)]) -> Vec<f64> {
    let Some(&(base, _)) = starts.first() else {
        return Vec::new();
    };
    let common: Vec<f64> = starts
        .iter()
        .map(|&(init, cd)| (init as i64 - base as i64) as f64 + cd.unwrap_or(0.0))
        .collect();
    let t0 = common.iter().copied().fold(f64::INFINITY, f64::min);
    common.iter().map(|t| t - t0).collect()
}

/// One rank's comparison.
#[derive(Debug, Clone, PartialEq)]
pub struct RankComparison {
    pub rank: usize,
    pub real_us: u64,
    /// Finish time minus start skew, microseconds.
    pub simulated_us: f64,
    /// Start skew subtracted from the finish time (0 without --start-skew).
    pub start_skew_us: f64,
}

impl RankComparison {
    /// (simulated - real) / real; 0 when both are 0.
    pub fn relative_error(&self) -> f64 {
        if self.real_us == 0 {
            if self.simulated_us == 0.0 {
                0.0
            } else {
                f64::INFINITY
            }
        } else {
            (self.simulated_us - self.real_us as f64) / self.real_us as f64
        }
    }
}

/// Pairs traced run times (µs) with simulated finish times (schedule units,
/// `timemult` per µs). The rank counts must agree.
pub fn compare(
    real_us: &[u64],
    simulated: &[u64],
    timemult: f64,
) -> Result<Vec<RankComparison>, String> {
    compare_with_skews(real_us, simulated, timemult, &vec![0.0; real_us.len()])
}

/// [`compare`] for a schedule that starts rank r `skews_us[r]` after the
/// earliest rank (see [`start_skews_us`]): its simulated run time is its
/// finish time minus that.
pub fn compare_with_skews(
    real_us: &[u64],
    simulated: &[u64],
    timemult: f64,
    skews_us: &[f64],
) -> Result<Vec<RankComparison>, String> {
    if skews_us.len() != real_us.len() {
        return Err(format!(
            "{} start skews for {} traced ranks",
            skews_us.len(),
            real_us.len()
        ));
    }
    if real_us.len() != simulated.len() {
        return Err(format!(
            "{} traced ranks but {} simulated hosts",
            real_us.len(),
            simulated.len()
        ));
    }
    if !timemult.is_finite() || timemult <= 0.0 {
        return Err(format!("timemult must be positive, got {timemult}"));
    }
    Ok(real_us
        .iter()
        .zip(simulated)
        .enumerate()
        .map(|(rank, (&real, &sim))| RankComparison {
            rank,
            real_us: real,
            simulated_us: sim as f64 / timemult - skews_us[rank],
            start_skew_us: skews_us[rank],
        })
        .collect())
}

/// A fixed-width table for people.
pub fn render_table(rows: &[RankComparison]) -> String {
    let mut s = format!(
        "{:>5} {:>14} {:>16} {:>10}\n",
        "rank", "real_us", "simulated_us", "error_%"
    );
    for r in rows {
        s.push_str(&format!(
            "{:>5} {:>14} {:>16.3} {:>+10.3}\n",
            r.rank,
            r.real_us,
            r.simulated_us,
            100.0 * r.relative_error()
        ));
    }
    s
}

/// The same as JSON (an array of objects).
pub fn render_json(rows: &[RankComparison]) -> serde_json::Value {
    serde_json::Value::Array(
        rows.iter()
            .map(|r| {
                json!({
                    "rank": r.rank,
                    "real_us": r.real_us,
                    "simulated_us": r.simulated_us,
                    "relative_error": r.relative_error(),
                    "start_skew_us": r.start_skew_us,
                })
            })
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    const OUT: &str = "LogGP network backend; size: 2 (1 CPUs, 1 NICs); L=0, o=0 g=0, G=0, O=0, \
                       P=2, S=65535\nPERFORMANCE: Processes: 2 \t Events: 8 \t Time: 0 s \t \
                       Speed: inf ev/s\nTimes: \nHost 0: 13807000\nHost 1: 13900000\n";

    #[test]
    fn host_lines_are_read_in_host_order() {
        assert_eq!(parse_host_times(OUT).unwrap(), vec![13_807_000, 13_900_000]);
        let swapped = "Host 1: 5\nHost 0: 7\n";
        assert_eq!(parse_host_times(swapped).unwrap(), vec![7, 5]);
        // loggopsim's native output names the unit.
        let native = "Times: \nHost 0: 7 ps\nHost 1: 5 ps\n";
        assert_eq!(parse_host_times(native).unwrap(), vec![7, 5]);
    }

    #[test]
    fn json_reports_are_read_too() {
        let ok = r#"{"ok": true, "finish_times": [2875191800, 2880191800], "leftovers": []}"#;
        assert_eq!(
            parse_host_times(ok).unwrap(),
            vec![2_875_191_800, 2_880_191_800]
        );
        let ps = r#"{"ok": true, "finish_times_ps": [3, 4], "leftovers": []}"#;
        assert_eq!(parse_host_times(ps).unwrap(), vec![3, 4]);
        let failed = r#"{"ok": false, "finish_times": [], "leftovers": ["rank 0 recv"]}"#;
        assert!(parse_host_times(failed)
            .unwrap_err()
            .contains("rank 0 recv"));
        assert!(parse_host_times(r#"{"ok": true}"#)
            .unwrap_err()
            .contains("finish_times"));
        assert!(parse_host_times("{ nope")
            .unwrap_err()
            .starts_with("simulator JSON report"));
    }

    #[test]
    fn host_line_errors() {
        assert!(parse_host_times("leftover queues\n")
            .unwrap_err()
            .contains("no `Host"));
        assert_eq!(
            parse_host_times("Host 1: 5\n").unwrap_err(),
            "no finish time for host 0"
        );
        assert!(parse_host_times("Host 0: 5\nHost 0: 6\n")
            .unwrap_err()
            .contains("twice"));
        assert!(parse_host_times("Host 0: x\n")
            .unwrap_err()
            .starts_with("line 1:"));
    }

    #[test]
    fn errors_are_relative_to_the_traced_time() {
        let rows = compare(&[13_807, 13_889], &[13_807_000, 14_583_450], 1000.0).unwrap();
        assert_eq!(rows[0].relative_error(), 0.0);
        assert!((rows[1].simulated_us - 14_583.45).abs() < 1e-9);
        assert!((rows[1].relative_error() - 0.05).abs() < 1e-12);
        let table = render_table(&rows);
        assert!(
            table.contains("    1          13889        14583.450     +5.000"),
            "{table}"
        );
        assert_eq!(render_json(&rows)[1]["real_us"], 13_889);
        assert!(compare(&[1], &[1, 2], 1000.0).is_err());
        assert!(compare(&[1], &[1], 0.0).is_err());
    }

    #[test]
    fn start_skews_put_ranks_on_rank_0s_clock() {
        // The thesis's ringtest: rank 1 left MPI_Init at ...521319 on its
        // clock, + 801.086426 us = 39.913574 us before rank 0's ...522160.
        let s = start_skews_us(&[
            (1_306_395_099_522_160, Some(0.0)),
            (1_306_395_099_521_319, Some(801.086426)),
        ]);
        assert!((s[0] - 39.913574).abs() < 1e-6 && s[1] == 0.0, "{s:?}");
        assert_eq!(
            start_skews_us(&[(10, None), (25, Some(-5.0))]),
            vec![0.0, 10.0]
        );
        let rows =
            compare_with_skews(&[100, 90], &[100_000, 100_000], 1000.0, &[0.0, 10.0]).unwrap();
        assert_eq!(rows[1].simulated_us, 90.0);
        assert_eq!(rows[1].relative_error(), 0.0);
        assert_eq!(render_json(&rows)[1]["start_skew_us"], 10.0);
        assert!(compare_with_skews(&[1], &[1], 1.0, &[]).is_err());
    }
}
