//! CPU noise from a trace (`--noise-trace FILE`, lines `start<TAB>duration`).
//!
//! The trace is taken as periodic (period = the end of its last event). Each
//! host reads it from its own offset, drawn from `--noise-seed` (the
//! reference draws it from the clock, which makes runs unrepeatable). The
//! noise added to a piece of CPU work [t, t+w) is the total duration of the
//! noise events that start inside that interval on that host. Noise is only
//! applied when a trace is given; without one, times are the reference's.

use crate::goal::LoadError;

#[derive(Clone, Debug)]
pub struct Noise {
    starts: Vec<u64>,
    /// `prefix[i]` = sum of durations of events 0..i
    prefix: Vec<u64>,
    period: u64,
    offsets: Vec<u64>,
}

fn splitmix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = x;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

impl Noise {
    /// Parses the trace text; `hosts` offsets are drawn from `seed`.
    pub fn parse(name: &str, text: &str, hosts: u32, seed: u64) -> Result<Noise, LoadError> {
        let mut ev: Vec<(u64, u64)> = Vec::new();
        let mut total: u64 = 0;
        for (i, line) in text.lines().enumerate() {
            let l = line.trim();
            if l.is_empty() || l.starts_with('#') {
                continue;
            }
            let mut it = l.split_whitespace();
            let mut num = |what: &str| -> Result<u64, LoadError> {
                let tok = it.next().ok_or_else(|| LoadError::Syntax {
                    file: name.into(),
                    line: i as u64 + 1,
                    col: 1,
                    msg: format!("missing {what} (expected 'start<TAB>duration')"),
                })?;
                tok.parse::<u64>().map_err(|_| LoadError::Syntax {
                    file: name.into(),
                    line: i as u64 + 1,
                    col: (line.find(tok).unwrap_or(0) + 1) as u64,
                    msg: format!("{what} '{tok}' is not a non-negative integer"),
                })
            };
            let s = num("start")?;
            let d = num("duration")?;
            // The trace's period (last end) and total noise must fit in 64
            // bits; saturating would change the noise silently.
            total = total.checked_add(d).ok_or_else(|| LoadError::Syntax {
                file: name.into(),
                line: i as u64 + 1,
                col: 1,
                msg: "the total noise duration exceeds 2^64-1".into(),
            })?;
            if s.checked_add(d).is_none() {
                return Err(LoadError::Syntax {
                    file: name.into(),
                    line: i as u64 + 1,
                    col: 1,
                    msg: format!("start {s} + duration {d} exceeds 2^64-1"),
                });
            }
            ev.push((s, d));
        }
        let offsets_seed = seed;
        Ok(Self::from_events(ev, hosts, |h, period| {
            splitmix(offsets_seed ^ splitmix(h as u64)) % period
        }))
    }

    /// Builds the model from (start, duration) events; `offset(host, period)`
    /// gives each host's starting point in the trace.
    pub fn from_events(
        mut ev: Vec<(u64, u64)>,
        hosts: u32,
        offset: impl Fn(u32, u64) -> u64,
    ) -> Noise {
        ev.sort();
        let period = ev
            .iter()
            .map(|&(s, d)| s.saturating_add(d))
            .max()
            .unwrap_or(0)
            .max(1);
        let mut prefix = vec![0u64];
        for &(_, d) in &ev {
            prefix.push(prefix.last().unwrap().saturating_add(d));
        }
        let offsets = (0..hosts).map(|h| offset(h, period)).collect();
        Noise {
            starts: ev.iter().map(|e| e.0).collect(),
            prefix,
            period,
            offsets,
        }
    }

    /// Noise durations starting before x on the infinitely repeated trace.
    fn upto(&self, x: u128) -> u128 {
        let p = self.period as u128;
        let total = *self.prefix.last().unwrap() as u128;
        let full = x / p;
        let rem = (x % p) as u64;
        let k = self.starts.partition_point(|&s| s < rem);
        full * total + self.prefix[k] as u128
    }

    /// Extra time for CPU work of length `len` starting at `start` on `host`.
    pub fn extra(&self, host: u32, start: u64, len: u64) -> u64 {
        if self.starts.is_empty() {
            return 0;
        }
        let a = start as u128 + self.offsets[host as usize] as u128;
        let v = self.upto(a + len as u128) - self.upto(a);
        v.min(u64::MAX as u128) as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Trace: noise 5 at 10, noise 7 at 60; period = 67.
    /// Host 0 offset 0: work [0, 20) sees the event at 10 -> +5;
    /// [0, 67) both -> +12; [0, 134) two periods -> +24; [11, 60) none.
    /// Host 1 offset 50: [0, 20) is trace time [50, 70) -> the 60 event -> +7.
    #[test]
    fn periodic_trace_with_offsets() {
        let n = Noise::from_events(
            vec![(60, 7), (10, 5)],
            2,
            |h, _| if h == 0 { 0 } else { 50 },
        );
        assert_eq!(n.extra(0, 0, 20), 5);
        assert_eq!(n.extra(0, 0, 67), 12);
        assert_eq!(n.extra(0, 0, 134), 24);
        assert_eq!(n.extra(0, 11, 49), 0);
        assert_eq!(n.extra(1, 0, 20), 7);
        // [60, 80) on host 1 = trace [110, 130) = [43, 63) of the next period
        assert_eq!(n.extra(1, 60, 20), 7);
    }

    #[test]
    fn parse_errors_name_line() {
        let e = Noise::parse("n.txt", "0\t5\nx\t3\n", 1, 0)
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("n.txt:2:1: start 'x'"), "{e}");
        let n = Noise::parse("n.txt", "# comment\n10\t5\n", 3, 42).unwrap();
        assert_eq!(n.period, 15);
        assert!(n.offsets.iter().all(|&o| o < 15));
    }
}
