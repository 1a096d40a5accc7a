//! `ibnet run` observers: windowed link statistics, message records, the
//! flit trace and the heat map (src/observe.rs). Checked against the
//! hand-derived case 1 of docs/model/fabric.md section 11 and against the run's own
//! end-of-run report; observing must not change the run.

mod common;
use common::{ibnet, words};
use std::path::{Path, PathBuf};

fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("ibnet-observe-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d.join(name)
}

/// Rows of a CSV file as maps column -> value (the files are plain: no
/// quoted fields in these topologies).
fn rows(p: &Path) -> Vec<std::collections::HashMap<String, String>> {
    let text = std::fs::read_to_string(p).unwrap();
    let mut lines = text.lines();
    let head: Vec<String> = lines.next().unwrap().split(',').map(String::from).collect();
    lines
        .map(|l| {
            let v: Vec<&str> = l.split(',').collect();
            assert_eq!(v.len(), head.len(), "{l}");
            head.iter()
                .cloned()
                .zip(v.iter().map(|s| s.to_string()))
                .collect()
        })
        .collect()
}

fn num(r: &std::collections::HashMap<String, String>, k: &str) -> u64 {
    r[k].parse().unwrap_or_else(|_| panic!("{k} = {:?}", r[k]))
}

/// Case 1 (one 64-byte flit over one switch, qdr): injected at 17 ns, at
/// H_2 at 117 ns, consumed at 136.693 ns; one switch on the route.
#[test]
fn message_records_match_the_hand_derived_case() {
    let m = tmp("case1-messages.csv");
    let o = ibnet(&[
        "run",
        "--topology",
        "chain:1",
        "--preset",
        "qdr",
        "--traffic",
        "chain:64:1",
        "--messages-csv",
        m.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let r = rows(&m);
    assert_eq!(r.len(), 2);
    for row in &r {
        assert_eq!(num(row, "bytes"), 64);
        assert_eq!(num(row, "first_flit_ps"), 17_000);
        assert_eq!(num(row, "completed_ps"), 136_693);
        assert_eq!(num(row, "network_latency_ps"), 100_000);
        assert_eq!(num(row, "latency_ps"), 136_693 - num(row, "injected_ps"));
        assert_eq!(num(row, "switch_hops"), 1);
    }
    assert_eq!(r[0]["src"], "H_1");
    assert_eq!(r[0]["dst"], "H_2");
}

/// The trace of case 1: H_1 injects at 1 ns (stamp 17 ns), sends at 17 ns;
/// the switch forwards at 117 ns; H_2 consumes at 136.693 ns. The node
/// filter keeps H_1 only, the time filter drops what is after 50 ns.
#[test]
fn trace_has_the_checkpoints_and_honours_the_filters() {
    let t = tmp("case1-trace.csv");
    let o = ibnet(&[
        "run",
        "--topology",
        "chain:1",
        "--preset",
        "qdr",
        "--traffic",
        "chain:64:1",
        "--trace",
        t.to_str().unwrap(),
        "--window",
        "20ns",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let all = rows(&t);
    let find = |kind: &str, node: &str, msg: u64| {
        all.iter()
            .find(|r| r["kind"] == kind && r["node"] == node && num(r, "msg") == msg)
            .map(|r| num(r, "t_ps"))
    };
    assert_eq!(find("Send", "H_1", 0), Some(17_000));
    assert_eq!(find("Recv", "H_2", 0), Some(117_000));
    assert_eq!(find("Consume", "H_2", 0), Some(136_693));
    // sorted by time, as the engine produced them
    let times: Vec<u64> = all.iter().map(|r| num(r, "t_ps")).collect();
    assert!(times.windows(2).all(|w| w[0] <= w[1]));

    let o = ibnet(&[
        "run",
        "--topology",
        "chain:1",
        "--preset",
        "qdr",
        "--traffic",
        "chain:64:1",
        "--trace",
        t.to_str().unwrap(),
        "--trace-nodes",
        "H_1",
        "--trace-until",
        "50ns",
    ]);
    assert!(o.status.success());
    let some = rows(&t);
    assert!(!some.is_empty());
    assert!(some
        .iter()
        .all(|r| r["node"] == "H_1" && num(r, "t_ps") <= 50_000));
    assert!(some.iter().any(|r| r["kind"] == "Send"));
}

/// Windowed link rows add up to the end-of-run report, and observing (in
/// windows) leaves the report byte for byte unchanged, closed and open loop.
#[test]
fn link_windows_add_up_and_do_not_change_the_run() {
    for (topo, traffic, extra) in [
        ("fattree:16", "chain:1000:20", vec![]),
        ("H8_S6", "shift:1", vec!["--until", "30us"]),
    ] {
        let mut base = vec![
            "run",
            "--topology",
            topo,
            "--traffic",
            traffic,
            "--json",
            "--no-wall-time",
        ];
        base.extend(extra.iter().copied());
        let plain = ibnet(&base);
        assert!(
            plain.status.success(),
            "{}",
            String::from_utf8_lossy(&plain.stderr)
        );
        let l = tmp(&format!("links-{}.csv", topo.replace(':', "_")));
        let h = tmp(&format!("heat-{}.svg", topo.replace(':', "_")));
        let mut obs = base.clone();
        obs.extend([
            "--link-stats",
            l.to_str().unwrap(),
            "--window",
            "700ns",
            "--heatmap",
            h.to_str().unwrap(),
        ]);
        let observed = ibnet(&obs);
        assert!(observed.status.success());
        assert_eq!(
            plain.stdout, observed.stdout,
            "{topo}: observing changed the run"
        );

        let v: serde_json::Value = serde_json::from_slice(&plain.stdout).unwrap();
        let end = v["run"]["sim_time_ps"].as_u64().unwrap();
        let r = rows(&l);
        let mut flits = std::collections::HashMap::<String, u64>::new();
        let mut busy = std::collections::HashMap::<String, u64>::new();
        for row in &r {
            let (s, e) = (num(row, "window_start_ps"), num(row, "window_end_ps"));
            assert!(e > s && e <= end);
            assert!(e - s <= 700_000);
            *flits.entry(row["link"].clone()).or_default() += num(row, "data_flits");
            *busy.entry(row["link"].clone()).or_default() += num(row, "busy_ps");
            // A transmission counts where it starts: at most one flit time
            // (32 ns at thesis-era DDR) over the window above 1.
            let u: f64 = row["utilisation"].parse().unwrap();
            assert!((0.0..=1.0 + 32_000.0 / (e - s) as f64).contains(&u), "{u}");
        }
        let last = r.iter().map(|row| num(row, "window_end_ps")).max().unwrap();
        assert_eq!(last, end, "{topo}: the last window ends with the run");
        for o in v["report"]["obufs"].as_array().unwrap() {
            let link = format!("{}[{}]", o["node"].as_str().unwrap(), o["port"]);
            assert_eq!(
                flits[&link],
                o["data_flits_sent"].as_u64().unwrap(),
                "{link}"
            );
            assert_eq!(busy[&link], o["busy_ps"].as_u64().unwrap(), "{link}");
        }
        let svg = std::fs::read_to_string(&h).unwrap();
        assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"));
        assert!(svg.contains("<rect"), "a busy run draws cells");
    }
}

#[test]
fn bad_observer_options_are_clear_errors() {
    let o = ibnet(&words(
        "run --topology chain:1 --traffic chain:64:1 --trace /tmp/x.csv --trace-nodes H_99",
    ));
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("no node named 'H_99'"));
    let o = ibnet(&words(
        "run --topology chain:1 --traffic chain:64:1 --link-stats /tmp/x.csv --window 0ps",
    ));
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("--window"));
    let o = ibnet(&words(
        "run --topology chain:1 --traffic chain:64:1 --link-stats /nonexistent-dir/x.csv",
    ));
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("/nonexistent-dir/x.csv"));
}

/// The `<text class="CLASS" ...>` elements of an SVG: (attributes, text).
fn svg_texts<'a>(svg: &'a str, class: &str) -> Vec<(&'a str, &'a str)> {
    let open = format!("<text class=\"{class}\"");
    svg.match_indices(&open)
        .map(|(i, _)| {
            let rest = &svg[i + open.len()..];
            let gt = rest.find('>').expect("end of <text>");
            let end = rest.find("</text>").expect("</text>");
            (&rest[..gt], &rest[gt + 1..end])
        })
        .collect()
}

fn attr<'a>(attrs: &'a str, name: &str) -> &'a str {
    let key = format!(" {name}=\"");
    let i = attrs
        .find(&key)
        .unwrap_or_else(|| panic!("no {name} in {attrs}"))
        + key.len();
    &attrs[i..i + attrs[i..].find('"').unwrap()]
}

/// The heat map is readable on its own: every link labelled on the y axis
/// (in the order of the link statistics), time ticks with their unit on
/// the x axis, a colour legend from white (0) to blue (1) that the cells'
/// colours follow, and a caption that names those colours. The CSV
/// outputs keep their format.
#[test]
fn heat_map_has_link_labels_time_ticks_and_a_legend() {
    let (l, h) = (tmp("hm-links.csv"), tmp("hm.svg"));
    let o = ibnet(&[
        "run",
        "--topology",
        "H8_S6",
        "--traffic",
        "shift:1",
        "--until",
        "20us",
        "--window",
        "1us",
        "--link-stats",
        l.to_str().unwrap(),
        "--heatmap",
        h.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let csv = std::fs::read_to_string(&l).unwrap();
    assert_eq!(
        csv.lines().next().unwrap(),
        "window_start_ps,window_end_ps,link,node,port,peer,data_flits,fc_packets,bytes,busy_ps,utilisation,queue_depth_mean,queue_samples"
    );
    let mut links: Vec<String> = Vec::new();
    for row in rows(&l) {
        if !links.contains(&row["link"]) {
            links.push(row["link"].clone());
        }
    }
    let svg = std::fs::read_to_string(&h).unwrap();
    assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"));

    // y axis: one label per link, in order
    let labels: Vec<&str> = svg_texts(&svg, "link-label").iter().map(|t| t.1).collect();
    assert_eq!(labels, links, "link labels");

    // x axis: ticks from 0 at round times, each with its unit, up to 20 us
    let ticks = svg_texts(&svg, "tick");
    assert!(ticks.len() >= 3, "{ticks:?}");
    let mut last = None;
    for (a, text) in &ticks {
        let ps: u64 = attr(a, "data-ps").parse().unwrap();
        let (v, unit) = text
            .split_once(' ')
            .unwrap_or_else(|| panic!("no unit: {text}"));
        let scale = match unit {
            "ps" => 1.0,
            "ns" => 1e3,
            "us" => 1e6,
            "ms" => 1e9,
            "s" => 1e12,
            u => panic!("unit {u} in tick {text}"),
        };
        let v: f64 = v.parse().unwrap();
        assert!((v * scale - ps as f64).abs() < 0.5, "{text} at {ps} ps");
        assert!(last.is_none_or(|l| ps > l), "ticks out of order: {ticks:?}");
        assert!(ps <= 20_000_000, "{text}");
        last = Some(ps);
    }
    assert_eq!(attr(ticks[0].0, "data-ps"), "0");
    assert_eq!(ticks.last().unwrap().1, "20 us");

    // the legend: a white-to-blue scale from 0 to 1
    assert!(svg.contains(r#"<linearGradient id="utilisation""#), "{svg}");
    assert!(svg.contains(r#"<stop offset="0" stop-color="rgb(255,255,255)"/>"#));
    assert!(svg.contains(r#"<stop offset="1" stop-color="rgb(0,0,255)"/>"#));
    let legend = &svg[svg.find(r#"<g class="legend">"#).expect("legend")..];
    assert!(legend.contains(r#"fill="url(#utilisation)""#));
    let scale: Vec<&str> = svg_texts(legend, "legend-label")
        .iter()
        .map(|t| attr(t.0, "data-utilisation"))
        .collect();
    assert_eq!(scale, ["1", "0.5", "0"]);
    // every cell's colour is on that scale: rgb(s, s, 255)
    let mut cells = 0;
    for (i, _) in svg.match_indices(" fill=\"rgb(") {
        let c = &svg[i + 11..i + 11 + svg[i + 11..].find(')').unwrap()];
        let v: Vec<u32> = c.split(',').map(|x| x.parse().unwrap()).collect();
        assert!(
            v[0] == v[1] && v[2] == 255,
            "cell colour rgb({c}) is off the scale"
        );
        cells += 1;
    }
    assert!(cells > 10, "a busy run draws cells");

    // the caption names the colours used
    let caption = svg_texts(&svg, "caption");
    assert_eq!(caption.len(), 1);
    assert_eq!(
        caption[0].1,
        "Link utilisation (busy time / window) per window of 1 us: white = idle (0), blue = busy \
        (1 or more)"
    );
}
