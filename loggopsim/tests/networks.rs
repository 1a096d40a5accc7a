//! The Network trait from the engine's side: notify mode with a fake
//! network replaying LogGP timing, a poll network that answers "later",
//! and error propagation.

use loggopsim::engine::{Params, Report, Sim, SimError};
use loggopsim::goal::parse_str;
use loggopsim::network::{Envelope, Handle, InFlight, LogGp, NetError, Network, SyncMode};
use loggopsim::Time;
use std::collections::BTreeSet;

/// Notify-mode network whose arrivals are LogGP's: start + o + L.
struct FakeNotify {
    o: u64,
    l: u64,
    next: Handle,
    pending: BTreeSet<(u64, Handle)>,
    waits: u64,
}

impl FakeNotify {
    fn new(p: &Params) -> Self {
        FakeNotify {
            o: p.o,
            l: p.l,
            next: 100,
            pending: BTreeSet::new(),
            waits: 0,
        }
    }
}

impl Network for FakeNotify {
    fn name(&self) -> &str {
        "FakeNotify"
    }
    fn mode(&self) -> SyncMode {
        SyncMode::Notify
    }
    fn insert(&mut self, now: Time, _: Envelope) -> Result<Handle, NetError> {
        self.next += 7; // handles need not be dense
        self.pending.insert((now.0 + self.o + self.l, self.next));
        Ok(self.next)
    }
    fn query(&mut self, _: Time, _: InFlight) -> Result<Time, NetError> {
        Err(NetError::Unsupported("query in notify mode".into()))
    }
    fn wait_arrivals(&mut self, _now: Time) -> Result<Vec<(Handle, Time)>, NetError> {
        self.waits += 1;
        let Some(&(t, _)) = self.pending.iter().next() else {
            return Err(NetError::Deadlock {
                handles: vec![],
                detail: "nothing in flight".into(),
            });
        };
        let batch: Vec<_> = self
            .pending
            .iter()
            .take_while(|x| x.0 == t)
            .map(|&(t, h)| (h, Time(t)))
            .collect();
        for (h, _) in &batch {
            self.pending.remove(&(t, *h));
        }
        Ok(batch)
    }
}

/// Poll network that, at the first query of each message, promises an
/// arrival `extra` later than LogGP's (start + o + L + extra).
struct LatePoll {
    o: u64,
    l: u64,
    extra: u64,
    queries: u64,
    finished_at: Option<u64>,
}

impl Network for LatePoll {
    fn name(&self) -> &str {
        "LatePoll"
    }
    fn insert(&mut self, _: Time, _: Envelope) -> Result<Handle, NetError> {
        Ok(0)
    }
    fn query(&mut self, _now: Time, m: InFlight) -> Result<Time, NetError> {
        self.queries += 1;
        Ok(Time(m.start.0 + self.o + self.l + self.extra))
    }
    fn finish(&mut self, end: Time) -> Result<(), NetError> {
        self.finished_at = Some(end.0);
        Ok(())
    }
    fn stats(&self) -> Vec<(String, u64)> {
        vec![("queries".into(), self.queries)]
    }
}

const WORKED: &str = "num_ranks 2\nrank 0 {\nl1: calc 100\nl2: send 10b to 1\nl3: recv 10b from 1\nl2 requires l1\n}\nrank 1 {\nl1: calc 100\nl2: send 10b to 0\nl3: recv 10b from 0\nl2 requires l1\n}\n";

fn loggp(text: &str) -> Report {
    let mut s = Sim::new(
        parse_str("x", text).unwrap(),
        Params::default(),
        LogGp::new(),
    )
    .unwrap();
    s.run().unwrap();
    s.report()
}

fn notify(text: &str) -> (Report, u64) {
    let p = Params::default();
    let mut s = Sim::new(parse_str("x", text).unwrap(), p, FakeNotify::new(&p)).unwrap();
    s.run().unwrap();
    (s.report(), s.network().waits)
}

fn thesis(path: &str) -> String {
    std::fs::read_to_string(
        std::path::Path::new(env!("IBCOSIM_REFERENCE_DATA_DIR"))
            .join("thesis")
            .join(path),
    )
    .unwrap()
}

#[test]
#[cfg_attr(
    not(reference_data),
    ignore = "needs the reference data: the thesis's schedules and traces"
)]
fn notify_mode_equals_loggp_on_worked_example_and_thesis_schedules() {
    for text in [
        WORKED.to_string(),
        thesis("ltest/ltest.goal"),
        thesis("ringtest/ringtest_durations.goal"),
    ] {
        let a = loggp(&text);
        let (b, waits) = notify(&text);
        assert!(a.ok() && b.ok());
        assert_eq!(a.finish_times, b.finish_times);
        assert_eq!(a.events, b.events);
        assert!(waits > 0);
    }
    let (w, waits) = notify(WORKED);
    assert_eq!(w.finish_times, vec![5654, 5654]);
    assert_eq!(waits, 1, "both messages arrive at 4100, one batch");
}

#[test]
fn notify_mode_equals_loggp_on_a_chain_of_exchanges() {
    // each rank only waits for messages (nothing runs ahead of an arrival)
    let mut t = String::from("num_ranks 4\n");
    for me in 0..4 {
        t += &format!("rank {me} {{\n");
        let mut prev = None;
        for (k, dist) in [1, 2].iter().enumerate() {
            let s = 2 * k + 1;
            t += &format!("l{s}: send 100b to {} tag {k}\n", (me + dist) % 4);
            if let Some(p) = prev {
                t += &format!("l{s} requires l{p}\n");
            }
            t += &format!(
                "l{}: recv 100b from {} tag {k}\n",
                s + 1,
                (me + 4 - dist) % 4
            );
            prev = Some(s + 1);
        }
        t += "}\n";
    }
    let a = loggp(&t);
    let (b, _) = notify(&t);
    assert!(a.ok() && b.ok());
    assert_eq!(a.finish_times, b.finish_times);
}

#[test]
fn notify_deadlock_error_fails_the_run() {
    struct NeverArrives;
    impl Network for NeverArrives {
        fn name(&self) -> &str {
            "never"
        }
        fn mode(&self) -> SyncMode {
            SyncMode::Notify
        }
        fn insert(&mut self, _: Time, _: Envelope) -> Result<Handle, NetError> {
            Ok(1)
        }
        fn query(&mut self, _: Time, _: InFlight) -> Result<Time, NetError> {
            unreachable!()
        }
        fn wait_arrivals(&mut self, _now: Time) -> Result<Vec<(Handle, Time)>, NetError> {
            Err(NetError::Deadlock {
                handles: vec![1],
                detail: "event queue drained".into(),
            })
        }
    }
    let mut s = Sim::new(
        parse_str("x", WORKED).unwrap(),
        Params::default(),
        NeverArrives,
    )
    .unwrap();
    let e = s.run().unwrap_err();
    assert!(
        matches!(e, SimError::Net(NetError::Deadlock { ref handles, .. }) if handles == &vec![1]),
        "{e}"
    );
    assert!(e.to_string().contains("deadlock"));
}

#[test]
fn poll_network_later_arrival_reinserts_the_message() {
    // LogGP would take the messages in at 4100; the network says 4100+1000.
    // The event is re-inserted at 5100 and queried again (then it is there):
    // receivers end at 5100 + 1500 + 54 = 6654; 2 queries per message.
    let net = LatePoll {
        o: 1500,
        l: 2500,
        extra: 1000,
        queries: 0,
        finished_at: None,
    };
    let mut s = Sim::new(parse_str("x", WORKED).unwrap(), Params::default(), net).unwrap();
    s.run().unwrap();
    let r = s.report();
    assert_eq!(r.finish_times, vec![6654, 6654]);
    assert_eq!(s.network().queries, 4);
    assert_eq!(s.network().finished_at, Some(5100));
    assert_eq!(r.events, 8, "re-insertions are not events");
    assert_eq!(r.network_stats, vec![("queries".to_string(), 4)]);
}

#[test]
fn step_api_reports_event_times_in_order() {
    let mut s = Sim::new(
        parse_str("x", WORKED).unwrap(),
        Params::default(),
        LogGp::new(),
    )
    .unwrap();
    let mut times = vec![];
    while let Some(t) = s.step().unwrap() {
        times.push(t.0);
    }
    assert_eq!(times, vec![0, 0, 0, 0, 100, 100, 4100, 4100]);
    assert!(s.is_done());
    assert_eq!(s.step().unwrap(), None);
}

/// The notify protocol as specified (docs/protocol.md rule 3) only asks the
/// network when no finite event is left, so a host with two CPUs can run a
/// later calc before an earlier arrival is known. Defaults L=2500 o=1500
/// g=1000 G=6 O=0.
///
/// LogGP (exact order): host 0 sends 1000 B at 0 (message event at
/// 0+o+L = 4000). Host 1's cpu-1 calc ends at 1e6 and releases the cpu-0
/// calc at 1e6. At 4000 the message is received on cpu 0: nexto = 4000 +
/// 1500 + 999*6 = 11494; the reply is sent at 11494 (nexto 12994), its
/// message event is at 15494 and host 0 receives it: 15494 + 1500 + 9*6 =
/// 17048. The cpu-0 calc runs 1e6..2e6. Finish: [17048, 2000000].
///
/// Notify: the cpu-0 calc at 1e6 runs first (nexto 2e6); the arrival at
/// 4000 is then 996000 late and waits for cpu 0 until 2e6: nexto = 2e6 +
/// 7494 = 2007494, reply at 2007494 (nexto 2008994), arrival 2011494, host 0
/// finishes at 2011494 + 1554 = 2013048. The engine counts the late arrival.
#[test]
fn notify_run_ahead_is_counted_and_reported() {
    let text = "num_ranks 2\nrank 0 {\nl1: send 1000b to 1\nl2: recv 10b from 1\nl2 requires l1\n}\n\
rank 1 {\nl1: recv 1000b from 0\nl2: send 10b to 0\nl2 requires l1\nl3: calc 1000000 cpu 1\nl4: calc 1000000 cpu 0\nl4 requires l3\n}\n";
    let a = loggp(text);
    assert_eq!(a.finish_times, vec![17048, 2_000_000]);
    let (b, _) = notify(text);
    assert_eq!(b.finish_times, vec![2_013_048, 2_008_994]);
    let stat = |k: &str| b.network_stats.iter().find(|(n, _)| n == k).map(|x| x.1);
    assert_eq!(stat("late_arrivals"), Some(1));
    assert_eq!(stat("max_arrival_lag_ps"), Some(996_000));
    // Without a second CPU there is nothing to run ahead: no late arrival.
    let (w, _) = notify(WORKED);
    assert_eq!(
        w.network_stats
            .iter()
            .find(|(n, _)| n == "late_arrivals")
            .map(|x| x.1),
        Some(0)
    );
}
