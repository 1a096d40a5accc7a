//! The text output and the JSON report.
//!
//! Two text formats ([`TextFormat`]): the native one names the unit of every
//! time (picoseconds, the unit of this tool: `Host 0: 5654 ps`, `Maximum
//! finishing time at host 0: 204006600 ps (204.007 us)`), and LogGOPSim's
//! byte-exact format (docs/model/loggops.md section 8, `--loggopsim-output`), which
//! prints bare numbers and converts the maximum to seconds as if the unit
//! were nanoseconds (its users read its times as ns). JSON keys carry their
//! unit (`finish_times_ps`, `L_ps`, ...) and values are numbers.

use crate::engine::{Params, Report};
use ipc_proto::time::format_ps_human;

/// Which text output to print.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum TextFormat {
    /// Units on every time (picoseconds).
    #[default]
    Native,
    /// LogGOPSim's exact bytes (`--loggopsim-output`).
    LogGopSim,
}

/// Formats like C++ `std::ostream << double` with default flags (`%g`,
/// precision 6): "5.654e-06", "1.23457e+07", "inf", "0.5".
pub fn fmt_g(x: f64) -> String {
    if x.is_nan() {
        return "nan".into();
    }
    if x.is_infinite() {
        return if x > 0.0 { "inf".into() } else { "-inf".into() };
    }
    if x == 0.0 {
        return "0".into();
    }
    const P: i32 = 6;
    let sci = format!("{:.*e}", (P - 1) as usize, x);
    let (mant, exp) = sci.split_once('e').unwrap();
    let e: i32 = exp.parse().unwrap();
    if !(-4..P).contains(&e) {
        let mant = strip_zeros(mant);
        let sign = if e < 0 { '-' } else { '+' };
        format!("{mant}e{sign}{:02}", e.abs())
    } else {
        let decimals = (P - 1 - e).max(0) as usize;
        strip_zeros(&format!("{:.*}", decimals, x)).to_string()
    }
}

fn strip_zeros(s: &str) -> &str {
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.')
    } else {
        s
    }
}

/// `LogGP network backend; size: 2 (1 CPUs, 1 NICs); L=2500, o=1500 g=1000, G=6, O=0, P=2, S=65535`
/// (the missing comma after o is the reference's). The second parameter
/// set, when given, is appended after S.
pub fn header_line(net: &str, r: &Report, p: &Params) -> String {
    header_line_as(net, r, p, TextFormat::LogGopSim)
}

/// The header line in either format; the native one names units:
/// `L=2500 ps, o=1500 ps, g=1000 ps, G=6 ps/B, O=0 ps/B, P=2, S=65535 B`.
pub fn header_line_as(net: &str, r: &Report, p: &Params, f: TextFormat) -> String {
    // LogGOPSim's line has bare numbers and no comma after o.
    let (ps, ps_b, b, after_o) = match f {
        TextFormat::Native => (" ps", " ps/B", " B", ", "),
        TextFormat::LogGopSim => ("", "", "", " "),
    };
    let mut s = format!(
        "{net} network backend; size: {} ({} CPUs, {} NICs); L={}{ps}, o={}{ps}{after_o}\
         g={}{ps}, G={}{ps_b}, O={}{ps_b}, P={}, S={}{b}",
        r.num_hosts, r.num_cpus, r.num_nics, p.l, p.o, p.g, p.big_g, p.big_o, r.num_hosts, p.s
    );
    if p.o_large.is_some() || p.big_o_large.is_some() {
        s.push_str(&format!(
            ", o_large={}{ps}, O_large={}{ps_b}, large_threshold={}{b}",
            p.o_large.unwrap_or(p.o),
            p.big_o_large.unwrap_or(p.big_o),
            p.large_threshold.unwrap_or(p.s)
        ));
    }
    s
}

/// The full text output in LogGOPSim's format ([`TextFormat::LogGopSim`]).
pub fn text(net: &str, r: &Report, p: &Params, wall_secs: f64, batch: bool) -> String {
    text_as(net, r, p, wall_secs, batch, TextFormat::LogGopSim)
}

/// The full text output in format `f`. The PERFORMANCE line keeps
/// LogGOPSim's shape; its wall time `wall_secs` is printed in whole seconds
/// in LogGOPSim's format (truncated as the reference measures it, so a short
/// run shows `Time: 0 s` and `Speed: inf ev/s`, its exact bytes) and to the
/// microsecond in the native one, whose speed is computed from the measured
/// time (`n/a` if that is 0).
pub fn text_as(
    net: &str,
    r: &Report,
    p: &Params,
    wall_secs: f64,
    batch: bool,
    f: TextFormat,
) -> String {
    let native = f == TextFormat::Native;
    let mut out = header_line_as(net, r, p, f);
    out.push('\n');
    out.push_str(&perf_line(r, wall_secs, f));
    if !r.leftovers.is_empty() {
        out.push_str("Unmatched operations at the end of the run (no times printed):\n");
        for hl in &r.leftovers {
            for e in &hl.receives {
                out.push_str(&format!(
                    "Host {} RQ: src={} tag={} size={}\n",
                    hl.host, e.src, e.tag, e.size
                ));
            }
            for e in &hl.unexpected {
                out.push_str(&format!(
                    "Host {} UQ: src={} tag={} size={}\n",
                    hl.host, e.src, e.tag, e.size
                ));
            }
        }
        return out;
    }
    if r.incomplete_ops > 0 {
        out.push_str(&format!(
            "{} operations never completed (dependency cycle, or a rendezvous send matched by a small receive); no times printed\n",
            r.incomplete_ops
        ));
        return out;
    }
    if r.num_hosts > 16 || batch {
        let (h, t) = r.max_finish();
        if native {
            out.push_str(&format!(
                "Maximum finishing time at host {h}: {t} ps ({})\n",
                format_ps_human(t)
            ));
        } else {
            out.push_str(&format!(
                "Maximum finishing time at host {h}: {t} ({} s)\n",
                fmt_g(t as f64 / 1e9)
            ));
        }
    } else {
        out.push_str("Times: \n");
        let unit = if native { " ps" } else { "" };
        for (h, t) in r.finish_times.iter().enumerate() {
            out.push_str(&format!("Host {h}: {t}{unit}\n"));
        }
    }
    out
}

/// `PERFORMANCE: Processes: 2 \t Events: 8 \t Time: 0.000412 s \t Speed: 19417 ev/s`
/// (native) or LogGOPSim's `... Time: 0 s \t Speed: inf ev/s`.
pub fn perf_line(r: &Report, wall_secs: f64, f: TextFormat) -> String {
    let wall = if wall_secs.is_finite() {
        wall_secs.max(0.0)
    } else {
        0.0
    };
    let (time, speed) = if f == TextFormat::Native {
        let speed = if wall > 0.0 {
            format!("{:.0}", r.events as f64 / wall)
        } else {
            "n/a".to_string()
        };
        (format!("{wall:.6}"), speed)
    } else {
        let secs = wall.floor() as u64;
        (secs.to_string(), fmt_g(r.events as f64 / secs as f64))
    };
    format!(
        "PERFORMANCE: Processes: {} \t Events: {} \t Time: {time} s \t Speed: {speed} ev/s\n",
        r.num_hosts, r.events
    )
}

/// The parameters in the JSON report, units in the keys.
#[derive(serde::Serialize)]
struct JsonParams {
    #[serde(rename = "L_ps")]
    l_ps: u64,
    o_ps: u64,
    g_ps: u64,
    #[serde(rename = "G_ps_per_byte")]
    big_g_ps_per_byte: u64,
    #[serde(rename = "O_ps_per_byte")]
    big_o_ps_per_byte: u64,
    #[serde(rename = "S_bytes")]
    s_bytes: u64,
    o_large_ps: Option<u64>,
    #[serde(rename = "O_large_ps_per_byte")]
    big_o_large_ps_per_byte: Option<u64>,
    large_threshold_bytes: Option<u64>,
}

#[derive(serde::Serialize)]
struct JsonReport<'a> {
    ok: bool,
    network: &'a str,
    params: JsonParams,
    num_hosts: u32,
    num_cpus: u32,
    num_nics: u32,
    events: u64,
    processed_events: u64,
    wall_time_s: f64,
    /// CPU time of the simulation (process CPU clock), without parsing
    cpu_time_s: f64,
    events_per_s: f64,
    events_per_cpu_s: f64,
    end_time_ps: u64,
    max_finish_time_ps: u64,
    max_finish_host: u32,
    finish_times_ps: &'a [u64],
    incomplete_ops: u64,
    leftovers: &'a [crate::engine::HostLeftovers],
    network_stats: std::collections::BTreeMap<&'a str, u64>,
    /// wall-clock seconds spent waiting for a fabric in another process or
    /// thread (per round: the fabric's simulation and the hand-over both
    /// ways); only for such a fabric
    #[serde(skip_serializing_if = "Option::is_none")]
    waited_for_network_s: Option<f64>,
}

pub fn json(net: &str, r: &Report, p: &Params, wall_secs: f64, cpu_secs: f64) -> String {
    let (h, t) = r.max_finish();
    let j = JsonReport {
        ok: r.ok(),
        network: net,
        params: JsonParams {
            l_ps: p.l,
            o_ps: p.o,
            g_ps: p.g,
            big_g_ps_per_byte: p.big_g,
            big_o_ps_per_byte: p.big_o,
            s_bytes: p.s,
            o_large_ps: p.o_large,
            big_o_large_ps_per_byte: p.big_o_large,
            large_threshold_bytes: p.large_threshold,
        },
        num_hosts: r.num_hosts,
        num_cpus: r.num_cpus,
        num_nics: r.num_nics,
        events: r.events,
        processed_events: r.processed,
        wall_time_s: wall_secs,
        cpu_time_s: cpu_secs,
        events_per_s: if wall_secs > 0.0 {
            r.events as f64 / wall_secs
        } else {
            0.0
        },
        events_per_cpu_s: if cpu_secs > 0.0 {
            r.events as f64 / cpu_secs
        } else {
            0.0
        },
        end_time_ps: r.end_time,
        max_finish_time_ps: t,
        max_finish_host: h,
        finish_times_ps: &r.finish_times,
        incomplete_ops: r.incomplete_ops,
        leftovers: &r.leftovers,
        network_stats: r
            .network_stats
            .iter()
            .map(|(k, v)| (k.as_str(), *v))
            .collect(),
        waited_for_network_s: r.waited_for_network.map(|d| d.as_secs_f64()),
    };
    serde_json::to_string_pretty(&j).unwrap() + "\n"
}

#[cfg(test)]
mod tests {
    use super::fmt_g;

    /// Values as C++ `std::cout << double` prints them.
    #[test]
    fn like_cpp_ostream() {
        assert_eq!(fmt_g(f64::INFINITY), "inf");
        assert_eq!(fmt_g(5654.0 / 1e9), "5.654e-06");
        assert_eq!(fmt_g(12345678.0), "1.23457e+07");
        assert_eq!(fmt_g(123456.0), "123456");
        assert_eq!(fmt_g(0.5), "0.5");
        assert_eq!(fmt_g(0.0001), "0.0001");
        assert_eq!(fmt_g(7.0536), "7.0536");
        assert_eq!(fmt_g(1e100), "1e+100");
        assert_eq!(fmt_g(0.0), "0");
        assert_eq!(fmt_g(999999.5), "1e+06");
    }
}
