//! Analytic link-layer model of the fabric's thesis-era preset
//! (docs/model/fabric.md section 13), used by the "MPI call durations as local
//! calculations" method (thesis 5.4): a call's duration minus the link-layer
//! time of its sends and receives becomes a calc.
//!
//! Derivation (all integers in picoseconds):
//! - 4x DDR links carry 16 Gb/s, so one byte takes 8 / 16e9 s = 500 ps on
//!   the wire: 32,000 ps for a 64-byte flit. The HCA arbiter needs only
//!   20,000 ps per flit, so a streaming sender is wire-limited and flit k
//!   leaves `wire(flit k-1)` after flit k-1 (the first at its injection
//!   stamp, "0 ps down time").
//! - Packets carry at most 2156 B payload plus a 20 B header (LRH 8 + BTH
//!   12); a message of B bytes gives ceil(B / 2156) packets, the last one
//!   holding the remainder. A packet of b bytes is ceil(b/64) flits, the last
//!   one short (b - 64(n-1) bytes). A 2176-byte packet is exactly 34 flits,
//!   so within a message the wire never idles between packets (the HCA
//!   obuf rule "start a 34-flit packet when at most 1 flit is queued" keeps
//!   the wire busy because the arbiter is faster than the wire).
//! - Each switch adds ISW + VSW = 100,000 ps between a flit leaving one
//!   port and the next hop (cut-through), so flit k arrives at
//!   `departure_k + 100,000 * switches`.
//! - The sink drains 0.525 ns per byte (33,600 ps per full flit). It
//!   consumes a flit arriving at an idle sink after that flit's own drain
//!   time; while busy, its next tick comes one drain time (of the flit just
//!   consumed) later and takes the next flit if it arrived strictly before
//!   the tick; otherwise the sink stops and restarts on the arrival.
//!   Arrivals every 32 ns against a 33.6 ns drain make the sink fall
//!   behind by 1.6 ns per flit: flit k is consumed 33.6 + 1.6k ns after its
//!   own arrival, as the thesis states.
//!
//! Link-layer time of a send: from the first flit's departure to the last
//! flit's departure (the thesis's "0 ps for the first flit and 32,000 ps for
//! each later flit"). Link-layer time of a receive: from the last flit's
//! arrival to its consumption (the thesis's "33,600 ps for a 64-byte first
//! flit plus 1.6 ns for each later flit"; 60/64 x 33,600 = 31,500 ps for a
//! single 60-byte flit).
//!
//! Not modelled (documented approximation): flow-control packets sharing
//! the wire (4 ns each at DDR), contention, and credit stalls.

/// Parameters of the analytic model.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LinkModel {
    pub flit_bytes: u64,
    pub packet_bytes: u64,
    pub header_bytes: u64,
    pub wire_ps_per_byte: u64,
    /// Sink drain in femtoseconds per byte (0.525 ns = 525,000 fs).
    pub sink_fs_per_byte: u64,
    pub switch_latency_ps: u64,
}

/// Timing of one message relative to its first flit leaving the sender.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MessageTiming {
    pub flits: u64,
    pub last_departure_fs: u64,
    pub first_arrival_fs: u64,
    pub last_arrival_fs: u64,
    pub last_consumed_fs: u64,
}

impl MessageTiming {
    /// Link-layer time charged to the sender, ps (rounded to nearest).
    pub fn send_time_ps(&self) -> u64 {
        (self.last_departure_fs + 500) / 1000
    }
    /// Link-layer time charged to the receiver, ps (rounded to nearest).
    pub fn recv_time_ps(&self) -> u64 {
        (self.last_consumed_fs - self.last_arrival_fs + 500) / 1000
    }
}

impl LinkModel {
    /// The thesis-era preset of docs/model/fabric.md section 13.
    pub fn thesis_ddr() -> Self {
        LinkModel {
            flit_bytes: 64,
            packet_bytes: 2176,
            header_bytes: 20,
            wire_ps_per_byte: 500,
            sink_fs_per_byte: 525_000,
            switch_latency_ps: 100_000,
        }
    }

    /// Flit sizes (bytes) of a message of `bytes` payload bytes. A 0-byte
    /// message still sends one header-only packet.
    pub fn flits(&self, bytes: u64) -> Vec<u64> {
        let payload = self.packet_bytes - self.header_bytes;
        let npk = bytes.div_ceil(payload).max(1);
        let mut out = Vec::new();
        for k in 0..npk {
            let pl = if k + 1 == npk {
                bytes - payload * (npk - 1)
            } else {
                payload
            };
            let pb = pl + self.header_bytes;
            let n = pb.div_ceil(self.flit_bytes);
            for f in 0..n {
                out.push(if f + 1 == n {
                    pb - self.flit_bytes * (n - 1)
                } else {
                    self.flit_bytes
                });
            }
        }
        out
    }

    /// Times of a message of `bytes` bytes crossing `switches` switches on
    /// an otherwise idle path.
    pub fn message(&self, bytes: u64, switches: u64) -> MessageTiming {
        let flits = self.flits(bytes);
        let lat_fs = self.switch_latency_ps * switches * 1000;
        let wire = |b: u64| b * self.wire_ps_per_byte * 1000;
        let drain = |b: u64| b * self.sink_fs_per_byte;
        let mut dep = 0u64;
        let mut consumed = 0u64;
        let mut first_arrival = 0u64;
        let mut last_arrival = 0u64;
        for (k, &b) in flits.iter().enumerate() {
            if k > 0 {
                dep += wire(flits[k - 1]);
            }
            let arr = dep + lat_fs;
            consumed = if k == 0 {
                first_arrival = arr;
                arr + drain(b)
            } else {
                let tick = consumed + drain(flits[k - 1]);
                if arr < tick {
                    tick
                } else {
                    arr + drain(b)
                }
            };
            last_arrival = arr;
        }
        MessageTiming {
            flits: flits.len() as u64,
            last_departure_fs: dep,
            first_arrival_fs: first_arrival,
            last_arrival_fs: last_arrival,
            last_consumed_fs: consumed,
        }
    }

    /// Link-layer time of sending `bytes` bytes, ps.
    pub fn send_time_ps(&self, bytes: u64) -> u64 {
        self.message(bytes, 1).send_time_ps()
    }

    /// Link-layer time of receiving `bytes` bytes, ps.
    pub fn recv_time_ps(&self, bytes: u64) -> u64 {
        self.message(bytes, 1).recv_time_ps()
    }
}

/// The link layer a schedule made with `--durations` will be simulated on,
/// i.e. what the method subtracts from each call's duration (thesis 5.4:
/// "the time it takes all the data to travel through the link layer", which
/// the simulated network adds back).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LinkLayer {
    /// No link layer: the LogGOPS/LogGP backend with all parameters at zero
    /// charges nothing for a message, so nothing may be subtracted (a traced
    /// call's whole duration stays in its calc).
    None,
    /// The analytic model of a fabric preset (the flit-level fabric
    /// charges these times itself).
    Analytic(LinkModel),
}

/// Names accepted by [`LinkLayer::by_name`] (`trace2goal --link-model`).
pub const LINK_LAYER_NAMES: &[&str] = &["none", "thesis-ddr"];

impl LinkLayer {
    /// `none` or `thesis-ddr` (the fabric preset of docs/model/fabric.md 13).
    pub fn by_name(name: &str) -> Option<Self> {
        match name {
            "none" => Some(LinkLayer::None),
            "thesis-ddr" => Some(LinkLayer::Analytic(LinkModel::thesis_ddr())),
            _ => None,
        }
    }

    /// Link-layer time charged to the sender of `bytes` bytes, ps.
    pub fn send_time_ps(&self, bytes: u64) -> u64 {
        match self {
            LinkLayer::None => 0,
            LinkLayer::Analytic(m) => m.send_time_ps(bytes),
        }
    }

    /// Link-layer time charged to the receiver of `bytes` bytes, ps.
    pub fn recv_time_ps(&self, bytes: u64) -> u64 {
        match self {
            LinkLayer::None => 0,
            LinkLayer::Analytic(m) => m.recv_time_ps(bytes),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The worked check of docs/model/fabric.md section 13.
    #[test]
    fn worked_check_of_the_thesis_era_preset() {
        // 2048 B over one switch: 1 packet of 2068 B = 32 full flits + 20 B.
        let m = LinkModel::thesis_ddr();
        assert_eq!(m.flits(2048).len(), 33);
        assert_eq!(*m.flits(2048).last().unwrap(), 20);
        let t = m.message(2048, 1);
        // The injection stamp is 17 ns after the application start.
        let inject = 17_000_000u64; // fs
        assert_eq!(inject + t.first_arrival_fs, 117_000_000);
        assert_eq!(inject + t.last_arrival_fs, 1_141_000_000);
        // Msg-Network-Latency = 1141 - 17 = 1124 ns.
        assert_eq!(t.last_arrival_fs, 1_124_000_000);
        // Last flit consumed at 150.6 + 32 x 33.6 = 1225.8 ns.
        assert_eq!(inject + t.last_consumed_fs, 1_225_800_000);
    }

    #[test]
    fn thesis_link_layer_delays() {
        let m = LinkModel::thesis_ddr();
        // 40 B payload + 20 B header = one 60-byte flit: send 0, recv 31.5 ns.
        assert_eq!(m.send_time_ps(40), 0);
        assert_eq!(m.recv_time_ps(40), 31_500);
        // 108 B + 20 = 128 B = two full flits: send 32 ns, recv 33.6 + 1.6.
        assert_eq!(m.send_time_ps(108), 32_000);
        assert_eq!(m.recv_time_ps(108), 35_200);
        // Multi-packet: 10000 B = 4 full packets (4 x 2156 = 8624 B) and a
        // fifth holding the remaining 1376 + 20 = 1396 B (docs/model/fabric.md 13 says
        // "4 packets, the last 1376 + 20", which only adds up as 4 + 1).
        let f = m.flits(10_000);
        assert_eq!(f.len(), 34 * 4 + 22);
        assert_eq!(*f.last().unwrap(), 1396 - 64 * 21);
    }

    #[test]
    fn link_layer_by_name() {
        let none = LinkLayer::by_name("none").unwrap();
        assert_eq!(none.send_time_ps(400_000), 0);
        assert_eq!(none.recv_time_ps(400_000), 0);
        let ddr = LinkLayer::by_name("thesis-ddr").unwrap();
        assert_eq!(ddr.recv_time_ps(40), 31_500);
        assert_eq!(ddr.send_time_ps(108), 32_000);
        // 400,000 B: 185 full packets of 34 flits and a last one of
        // 1140 + 20 B = 19 flits, 6309 flits: about 200 us on the wire.
        assert_eq!(LinkModel::thesis_ddr().message(400_000, 1).flits, 6309);
        assert!((195_000_000..205_000_000).contains(&ddr.send_time_ps(400_000)));
        assert_eq!(LinkLayer::by_name("qdr"), None);
        for n in LINK_LAYER_NAMES {
            assert!(LinkLayer::by_name(n).is_some());
        }
    }
}
