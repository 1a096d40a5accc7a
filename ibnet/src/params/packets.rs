//! Packetisation of a message and flits of a packet (docs/model/fabric.md
//! 3.3, 13; quirk Q1 of section 10).

use super::{ConfigError, Params, MAX_MESSAGE_BYTES};

/// Packetisation of one message (see [`Params::packet_layout`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PacketLayout {
    /// Number of packets (>= 1).
    pub count: u32,
    /// Bytes of every packet but the last, header included.
    pub full: u32,
    /// Bytes of the last packet, header included.
    pub last: u32,
}

impl Params {
    /// Packetisation of a message: the byte size of every packet (header
    /// included). Errors for a message the reference cannot send. Allocates
    /// one entry per packet: the engine uses [`Params::packet_layout`].
    pub fn packets(&self, bytes: u64) -> Result<Vec<u32>, ConfigError> {
        let l = self.packet_layout(bytes)?;
        let mut v = vec![l.full; l.count as usize];
        *v.last_mut().unwrap() = l.last;
        Ok(v)
    }

    /// Packetisation of a message without materialising it: the number of
    /// packets, the size of a full packet and of the last one (headers
    /// included). Messages above [`MAX_MESSAGE_BYTES`] are an error.
    pub fn packet_layout(&self, bytes: u64) -> Result<PacketLayout, ConfigError> {
        if bytes > MAX_MESSAGE_BYTES {
            return Err(ConfigError::BadValue {
                key: "msg_length".into(),
                msg: format!(
                    "a message of {bytes} B is larger than the largest the fabric simulates, {MAX_MESSAGE_BYTES} B (1 TiB)"
                ),
            });
        }
        if bytes == 0 {
            return Err(ConfigError::BadValue {
                key: "msg_length".into(),
                msg: "a message needs at least 1 byte".into(),
            });
        }
        let m = self.msg_mtu as u64;
        let h = self.pkt_header_bytes;
        let (n, last) = if self.legacy_packet_count {
            let n = bytes / m;
            if n == 0 {
                return Err(ConfigError::BadValue {
                    key: "msg_length".into(),
                    msg: format!("{bytes} B is below the MTU {m} B: the reference (legacy_packet_count) would send 0 packets and crash (Q1)"),
                });
            }
            let r = bytes % m;
            (n, if r == 0 { m } else { r })
        } else {
            let n = bytes.div_ceil(m);
            (n, bytes - (n - 1) * m)
        };
        // n <= 2^40 / 1 fits u64; with MTU >= 1 B, n <= 2^40: check u32
        let count = u32::try_from(n).map_err(|_| ConfigError::BadValue {
            key: "msg_length".into(),
            msg: format!("{bytes} B makes {n} packets of MTU {m} B, more than 2^32 - 1"),
        })?;
        Ok(PacketLayout {
            count,
            full: m as u32 + h,
            last: last as u32 + h,
        })
    }

    /// Flits of a packet of `b` bytes and the byte size of its last flit.
    pub fn flits_of(&self, b: u32) -> (u32, u32) {
        let f = self.flit_size;
        let n = b.div_ceil(f).max(1);
        let last = if self.short_last_flit {
            b - f * (n - 1)
        } else {
            f
        };
        (n, last.max(1))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn packetisation() {
        let p = Params::qdr();
        assert_eq!(p.packets(131072).unwrap().len(), 64);
        let mut q = p.clone();
        q.msg_mtu = 1600;
        assert_eq!(q.packets(400000).unwrap().len(), 250);
        q.msg_mtu = 2048;
        let v = q.packets(400000).unwrap();
        assert_eq!((v.len(), *v.last().unwrap()), (196, 400000 - 195 * 2048));
        q.legacy_packet_count = true;
        let v = q.packets(400000).unwrap();
        assert_eq!((v.len(), *v.last().unwrap()), (195, 400000 % 2048));
        assert!(q.packets(100).is_err());
        let t = Params::thesis_ddr();
        // sec. 13 says "10000 B gives 4 packets, the last 1376 + 20": the
        // rule ceil(B / 2156) gives 5 (4 x 2156 + 1376 = 10000); the last
        // packet is as stated.
        let v = t.packets(10000).unwrap();
        assert_eq!(v, vec![2176, 2176, 2176, 2176, 1396]);
        assert_eq!(t.flits_of(2176), (34, 64));
        assert_eq!(t.flits_of(2068), (33, 20));
        assert_eq!(t.flits_of(20), (1, 20));
    }

    #[test]
    fn layouts_at_the_limits() {
        let p = Params::qdr();
        assert_eq!(
            p.packet_layout(1).unwrap(),
            PacketLayout {
                count: 1,
                full: 2048,
                last: 1
            }
        );
        assert_eq!(
            p.packet_layout(4096).unwrap(),
            PacketLayout {
                count: 2,
                full: 2048,
                last: 2048
            }
        );
        assert!(p.packet_layout(0).is_err());
        assert!(p.packet_layout(MAX_MESSAGE_BYTES).is_ok());
        assert!(p.packet_layout(MAX_MESSAGE_BYTES + 1).is_err());
        // a padded last flit is a whole flit; an empty packet still has one
        assert_eq!(p.flits_of(65), (2, 64));
        assert_eq!(p.flits_of(0), (1, 64));
    }
}
