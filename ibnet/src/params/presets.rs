//! The shipped presets (docs/model/fabric.md 7.1, 12.2, 13; docs/thesis.md).
//!
//! Their single source is the files in configs/presets/: each is compiled
//! in and read by the same steps as a `--config` file (`set.rs`), so the
//! files a user copies and the presets the binary knows cannot disagree.
//! `qdr.toml` sets every key; every other file sets only the keys in which
//! its preset differs from qdr, on top of qdr.

use std::sync::LazyLock;

use super::set::{key_at, merge, parse_doc};
use super::{ConfigError, Params};

/// Names of the shipped presets.
pub const PRESETS: &[&str] = &["qdr", "thesis-ddr", "hcyang99", "thesis-ch5", "thesis-ch4"];

/// The preset files, in the order of [`PRESETS`].
const FILES: [&str; 5] = [
    include_str!("../../../configs/presets/qdr.toml"),
    include_str!("../../../configs/presets/thesis-ddr.toml"),
    include_str!("../../../configs/presets/hcyang99.toml"),
    include_str!("../../../configs/presets/thesis-ch5.toml"),
    include_str!("../../../configs/presets/thesis-ch4.toml"),
];

/// Every preset, read once, in the order of [`PRESETS`]. A file that does
/// not read is a defect of the build, not of the input: the tests below
/// read every file.
static BUILT: LazyLock<Vec<Params>> = LazyLock::new(|| {
    let qdr = load(PRESETS[0], FILES[0], None).unwrap_or_else(|e| panic!("{e}"));
    let mut all = vec![qdr];
    for (name, text) in PRESETS.iter().zip(FILES).skip(1) {
        let p = load(name, text, Some(&all[0])).unwrap_or_else(|e| panic!("{e}"));
        all.push(p);
    }
    all
});

/// Read the preset file `text` of preset `name`: it must name itself
/// (`preset = "name"`); its keys apply on top of `base`, or, for qdr
/// (`base` none), make up the whole parameter set.
fn load(name: &str, text: &str, base: Option<&Params>) -> Result<Params, ConfigError> {
    let origin = format!("configs/presets/{name}.toml");
    let at = |key: &str| key_at(text, &origin, key);
    let mut doc = parse_doc(text, &origin)?;
    match doc.remove("preset") {
        Some(toml::Value::String(s)) if s == name => {}
        _ => {
            return Err(ConfigError::File {
                file: at("preset"),
                msg: format!("a preset file starts with `preset = \"{name}\"`"),
            })
        }
    }
    let t = match base {
        Some(base) => {
            let mut t = base.to_table();
            merge(&mut t, doc, &at)?;
            t
        }
        None => doc,
    };
    Params::from_table(t, &origin)
}

/// The preset at position `i` of [`PRESETS`].
fn built(i: usize) -> Params {
    BUILT[i].clone()
}

impl Params {
    /// The reference defaults (4x QDR), sec. 7.1 effective values.
    pub fn qdr() -> Params {
        built(0)
    }

    /// Thesis-era preset (sec. 13): 4x DDR, sink 0.525 ns/B, 2176-byte
    /// packets with a 20-byte header, short last flit.
    pub fn thesis_ddr() -> Params {
        built(1)
    }

    /// Congestion-control preset from the public CC fork (sec. 12.2).
    pub fn hcyang99() -> Params {
        built(2)
    }

    /// The thesis's chapter-5 model generation (docs/thesis.md):
    /// the thesis-ddr fabric (20-byte header, 2176-byte packets) plus the
    /// generator handing flits to the arbiter without a pop delay
    /// (Appendix J), the message handed straight to the generator (no
    /// app-to-generator gap: the integration inserts at the generator), and
    /// one idle sink drain period after every packet
    /// (`sink_packet_gap_periods`).
    pub fn thesis_ch5() -> Params {
        built(3)
    }

    /// The thesis's chapter-4 model generation (docs/thesis.md):
    /// the sec. 13 thesis-era fabric with the generator's pop delay as in
    /// the reference, and no per-packet sink gap. Its fabric is the same as
    /// thesis-ddr's; what distinguishes the chapter-4 integration is the
    /// scheduler's `loggopsim --insert-at after-o`.
    pub fn thesis_ch4() -> Params {
        built(4)
    }

    /// A preset by name or alias (`default` = qdr, `thesis` = thesis-ddr,
    /// `cc` = hcyang99).
    pub fn preset(name: &str) -> Result<Params, ConfigError> {
        let canonical = match name {
            "default" => "qdr",
            "thesis" => "thesis-ddr",
            "cc" => "hcyang99",
            n => n,
        };
        match PRESETS.iter().position(|&p| p == canonical) {
            Some(i) => Ok(built(i)),
            None => Err(ConfigError::UnknownPreset(name.to_string())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::params::PARAM_KEYS;

    #[test]
    fn qdr_file_sets_every_key() {
        let mut doc = parse_doc(FILES[0], "qdr").unwrap();
        doc.remove("preset");
        let mut keys: Vec<&String> = doc.keys().collect();
        keys.sort();
        let mut all: Vec<&String> = PARAM_KEYS.iter().collect();
        all.sort();
        assert_eq!(keys, all);
    }

    #[test]
    fn a_file_must_name_its_preset() {
        let e = load("qdr", "preset = \"hcyang99\"\n", None).unwrap_err();
        assert_eq!(
            e.to_string(),
            "configs/presets/qdr.toml:1: a preset file starts with `preset = \"qdr\"`"
        );
        assert!(load("x", "max_vl = 1\n", Some(&Params::qdr())).is_err());
    }

    #[test]
    fn files_apply_on_top_of_qdr() {
        let qdr = Params::qdr();
        let p = load(
            "x",
            "preset = \"x\"\nmax_vl = 2\nisw_delay_ns = 7\n",
            Some(&qdr),
        )
        .unwrap();
        assert_eq!(
            p,
            Params {
                max_vl: 2,
                isw_delay_ns: 7.0,
                ..qdr.clone()
            }
        );
        let e = load("x", "preset = \"x\"\nbogus = 2\n", Some(&qdr)).unwrap_err();
        assert_eq!(
            e.to_string(),
            "unknown parameter `bogus` in configs/presets/x.toml:2"
        );
        // qdr alone: a key it lacks is an error, not a default
        let e = load("q", "preset = \"q\"\nmax_vl = 0\n", None).unwrap_err();
        assert!(
            e.to_string()
                .starts_with("configs/presets/q.toml: missing field"),
            "{e}"
        );
    }

    #[test]
    fn unknown_presets() {
        assert_eq!(
            Params::preset("ndr").unwrap_err(),
            ConfigError::UnknownPreset("ndr".into())
        );
    }
    /// The presets' values as the Rust constructors wrote them before the
    /// TOML files in configs/presets/ became their single source: every
    /// preset must still give exactly these parameters, field by field.
    #[cfg(test)]
    mod preset_values {
        use crate::params::Params;

        // The reference defaults (4x QDR), sec. 7.1 effective values.
        fn qdr() -> Params {
            Params {
                flit_size: 64,
                width: 4,
                max_vl: 0,
                gen_dly_per_byte_ns: 0.3077,
                gen_pop_dly_per_byte_ns: 0.25,
                max_queued_per_vl: 4,
                max_cont_pkts: 10,
                send_queues: "single".into(),
                msg2msg_gap_ns: 1.0,
                msg_mtu: 2048,
                msg_length: 131072,
                msg_len_mode: "param".into(),
                msg_len_set: vec![],
                msg_len_prob: vec![],
                msg_sq: 0,
                seed: 1,
                sink_pop_dly_per_byte_ns: 0.3077,
                hiccup_duration_ns: 1.0,
                hiccup_delay_ns: 10_000_000.0,
                start_stat_col_ns: 100_000.0,
                rep_first_packets: 0,
                sink_packet_gap_periods: 0,
                obuf_size_switch: 78,
                obuf_size_hca: 36,
                cred_min_time_ns: 256.0,
                obuf_enabled: true,
                max_static: vec![200; 8],
                total_buffer_size: 1000,
                max_being_sent: 3,
                lossy_mode: false,
                link_packet_error_rate: 0.0,
                link_bit_error_rate: 0.0,
                rto_ns: 65_536.0,
                link_delay_ns: 0.0,
                isw_delay_ns: 50.0,
                vsw_delay_ns: 50.0,
                core_freq_switch_mhz: 250.0,
                core_freq_hca_mhz: 200.0,
                bus_width_switch: 24,
                bus_width_hca: 16,
                vl_high_limit: 16,
                high_vl_arb_entries: "0:1 1:20 2:40 3:80".into(),
                low_vl_arb_entries: "0:1 1:20 2:40 3:80".into(),
                use_fcfs_rq_arb: false,
                iba_vl_arb: false,
                vl_arb_rr_per_vl: false,
                link_width: 4,
                link_speed: "QDR".into(),
                pkt_header_bytes: 0,
                short_last_flit: false,
                legacy_packet_count: false,
                elastic_obuf: false,
                lazy_credit_timer: true,
                event_order: "fifo".into(),
                cc_enabled: false,
                cc_threshold: 0,
                cc_markrate: 3,
                cc_cct_limit: 127,
                cc_cct_min: 0,
                cc_timer_ns: 10_000.0,
                cc_cct_coeff_ns: 3300.0 / 6889.0,
                cc_base_interval_ns: 512.0,
                cc_per_destination: true,
                rdma_ack_every_pkts: 0,
                host_model: false,
                pcie: "gen2x8".into(),
                pcie_bw_gbps: 0.0,
                pcie_max_payload_bytes: 256,
                pcie_tlp_overhead_bytes: 24,
                pcie_latency_ns: 0.0,
                nic_tx_engines: 1,
                nic_rx_engines: 1,
                nic_cmd_ns: 0.0,
            }
        }

        // Thesis-era preset (sec. 13): 4x DDR, sink 0.525 ns/B, 2176-byte
        // packets with a 20-byte header, short last flit.
        fn thesis_ddr() -> Params {
            Params {
                link_speed: "DDR".into(),
                sink_pop_dly_per_byte_ns: 0.525,
                msg_mtu: 2156,
                pkt_header_bytes: 20,
                short_last_flit: true,
                ..qdr()
            }
        }

        // The thesis's chapter-5 model generation (docs/thesis.md):
        // the thesis-ddr fabric (20-byte header, 2176-byte packets) plus the
        // generator handing flits to the arbiter without a pop delay
        // (Appendix J), the message handed straight to the generator (no
        // app-to-generator gap: the integration inserts at the generator), and
        // one idle sink drain period after every packet
        // (`sink_packet_gap_periods`).
        fn thesis_ch5() -> Params {
            Params {
                gen_pop_dly_per_byte_ns: 0.0,
                msg2msg_gap_ns: 0.0,
                sink_packet_gap_periods: 1,
                ..thesis_ddr()
            }
        }

        // The thesis's chapter-4 model generation (docs/thesis.md):
        // the sec. 13 thesis-era fabric with the generator's pop delay as in
        // the reference, and no per-packet sink gap. Its fabric is the same as
        // thesis-ddr's; what distinguishes the chapter-4 integration is the
        // scheduler's `loggopsim --insert-at after-o`.
        fn thesis_ch4() -> Params {
            thesis_ddr()
        }

        // Congestion-control preset from the public CC fork (sec. 12.2).
        fn hcyang99() -> Params {
            Params {
                flit_size: 2048,
                msg_mtu: 2048,
                obuf_size_switch: 5,
                obuf_size_hca: 5,
                max_static: vec![32; 8],
                cred_min_time_ns: 4096.0,
                max_being_sent: 1,
                core_freq_switch_mhz: 1200.0,
                core_freq_hca_mhz: 1000.0,
                bus_width_switch: 24,
                bus_width_hca: 16,
                gen_pop_dly_per_byte_ns: 0.25,
                gen_dly_per_byte_ns: 0.25,
                max_vl: 1,
                cc_enabled: true,
                cc_threshold: 0,
                cc_markrate: 3,
                cc_cct_limit: 127,
                cc_cct_min: 0,
                cc_timer_ns: 10_000.0,
                cc_cct_coeff_ns: 3300.0 / 6889.0,
                cc_base_interval_ns: 512.0,
                cc_per_destination: false,
                ..qdr()
            }
        }

        /// Compares two parameter sets key by key (every key, also those that
        /// reports leave out at their defaults), naming the first that differs.
        fn assert_same(name: &str, got: &Params, want: &Params) {
            let (g, w) = (got.to_table(), want.to_table());
            assert_eq!(
                g.keys().collect::<Vec<_>>(),
                w.keys().collect::<Vec<_>>(),
                "{name}: keys"
            );
            for (k, v) in &w {
                assert_eq!(g.get(k), Some(v), "{name}: parameter `{k}`");
            }
            assert_eq!(got, want, "{name}");
        }

        #[test]
        fn every_preset_keeps_its_values() {
            for (name, want) in [
                ("qdr", qdr()),
                ("thesis-ddr", thesis_ddr()),
                ("thesis-ch5", thesis_ch5()),
                ("thesis-ch4", thesis_ch4()),
                ("hcyang99", hcyang99()),
            ] {
                assert_same(name, &Params::preset(name).unwrap(), &want);
            }
            for (alias, name) in [
                ("default", "qdr"),
                ("thesis", "thesis-ddr"),
                ("cc", "hcyang99"),
            ] {
                assert_same(
                    alias,
                    &Params::preset(alias).unwrap(),
                    &Params::preset(name).unwrap(),
                );
            }
            assert_same("Default", &Params::default(), &qdr());
        }
    }
}
