//! Real (traced) versus simulated run time per rank.
//!
//! The traced run time of a rank is MPI_Finalize time - MPI_Init return
//! (thesis 5.2.1), in microseconds. The simulated one is the host's finish
//! time printed by `loggopsim` (`Host h: T` lines, reference output format),
//! in the schedule's time unit, which is `timemult` units per trace
//! microsecond (trace2goal multiplies trace times by it).

use serde_json::json;

/// Finish time per host from `loggopsim` output, in host order: either its
/// JSON report (`--json`, the `finish_times` array) or the reference text
/// format (`Host 0: 5654` lines, printed for at most 16 hosts). Errors if a
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
        let (Ok(host), Ok(time)) = (host.trim().parse::<usize>(), time.trim().parse::<u64>())
        else {
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
        .get("finish_times")
        .and_then(|t| t.as_array())
        .ok_or("simulator JSON report has no `finish_times` array")?;
    times
        .iter()
        .enumerate()
        .map(|(h, t)| {
            t.as_u64()
                .ok_or_else(|| format!("finish time of host {h} is not an unsigned integer: {t}"))
        })
        .collect()
}

/// One rank's comparison.
#[derive(Debug, Clone, PartialEq)]
pub struct RankComparison {
    pub rank: usize,
    pub real_us: u64,
    pub simulated_us: f64,
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
            simulated_us: sim as f64 / timemult,
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
    }

    #[test]
    fn json_reports_are_read_too() {
        let ok = r#"{"ok": true, "finish_times": [2875191800, 2880191800], "leftovers": []}"#;
        assert_eq!(
            parse_host_times(ok).unwrap(),
            vec![2_875_191_800, 2_880_191_800]
        );
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
}
