//! Observations of a run over time, written as CSV for pandas and as an SVG
//! heat map: windowed link statistics, per-message records and a filtered
//! flit trace.
//!
//! They sit outside the engine, which stays sans-I/O: the runner advances
//! the fabric window by window (`ibnet run` with open-loop traffic through
//! `Fabric::run_until`, closed-loop traffic through
//! [`crate::traffic::run_closed_loop_observed`]) and at every window end
//! these observers read the engine's cumulative counters (its report) and
//! drain its flit trace. Advancing in windows does not change the run: the
//! engine processes the same events in the same order (tested).
//!
//! Link rows (`--link-stats`), one per link direction per window:
//! `window_start_ps, window_end_ps, link, node, port, peer, data_flits,
//! fc_packets, bytes, busy_ps, utilisation, queue_depth_mean,
//! queue_samples`. A transmission counts in the window in which it
//! *starts* (the engine adds a flit's whole wire time when it goes on the
//! wire), so `utilisation = busy_ps / window length` can exceed 1 by at most
//! one flit time over the window length. The queue depth is the mean of the
//! obuf's periodic samples (one per credit period, docs/model/fabric.md section 8)
//! taken in the window; empty when none was taken.
//!
//! Message rows (`--messages-csv`), one per message at the end: `id, src,
//! dst, src_lid, dst_lid, bytes, injected_ps, first_flit_ps, completed_ps,
//! latency_ps` (completed - injected), `network_latency_ps` (the
//! reference's Msg-Network-Latency, from the first flit's stamp) and
//! `switch_hops` (switches on the route).
//!
//! Trace rows (`--trace`): `t_ps, kind, node, port, msg, pkt, sn` for every
//! flit checkpoint (inject, send, recv, consume) of the chosen hosts' and
//! switches' ports in the chosen time range. Memory stays bounded by one
//! window of trace records.

use crate::engine::{Distributed, Parallel, Transport};
use crate::stats::ObufReport;
use crate::topology::Topology;
use crate::traffic::WindowHook;
use crate::{Fabric, Time};
use std::collections::HashSet;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

/// What to observe and where to write it.
#[derive(Clone, Debug, Default)]
pub struct ObserveConfig {
    /// Window length (ps).
    pub window: Time,
    pub link_stats: Option<PathBuf>,
    pub heatmap: Option<PathBuf>,
    pub messages: Option<PathBuf>,
    pub trace: Option<PathBuf>,
    /// Trace only these nodes (names); empty: every node.
    pub trace_nodes: Vec<String>,
    pub trace_from: Time,
    pub trace_until: Option<Time>,
}

impl ObserveConfig {
    /// Does the run have to advance in windows?
    pub fn windowed(&self) -> bool {
        self.link_stats.is_some() || self.heatmap.is_some() || self.trace.is_some()
    }
    pub fn any(&self) -> bool {
        self.windowed() || self.messages.is_some()
    }
}

/// Cumulative counters of one obuf, as the report gives them.
#[derive(Clone, Copy, Default)]
struct LinkCounters {
    data_flits: u64,
    fc_packets: u64,
    bytes: u64,
    busy_ps: u64,
    q_sum: u128,
    q_count: u64,
}

fn counters(obufs: &[ObufReport]) -> Vec<LinkCounters> {
    obufs
        .iter()
        .map(|o| LinkCounters {
            data_flits: o.data_flits_sent,
            fc_packets: o.fc_packets_sent,
            bytes: o.bytes_sent,
            busy_ps: o.busy_ps,
            q_sum: o.queue_depth.sum,
            q_count: o.queue_depth.count,
        })
        .collect()
}

fn create(path: &Path, what: &str) -> anyhow::Result<BufWriter<std::fs::File>> {
    let f = std::fs::File::create(path)
        .map_err(|e| anyhow::anyhow!("cannot create the {what} file {}: {e}", path.display()))?;
    Ok(BufWriter::new(f))
}

/// A CSV output: the csv crate quotes the fields that need it (node names
/// with a comma or a quote) and buffers the file.
type CsvOut = csv::Writer<std::fs::File>;

/// A field as the csv crate writes it (quoted only when it needs to be),
/// for fields written many times, such as the flit trace's node names.
fn csv_quoted(field: &str) -> String {
    let mut w = csv::Writer::from_writer(Vec::new());
    w.write_field(field).expect("writing to memory cannot fail");
    w.write_record(None::<&[u8]>)
        .expect("writing to memory cannot fail");
    let bytes = w.into_inner().expect("writing to memory cannot fail");
    let text = String::from_utf8(bytes).expect("the field was UTF-8");
    text.trim_end_matches(['\r', '\n']).to_string()
}

/// Creates a CSV file and writes its header.
fn create_csv(path: &Path, what: &str, header: &str) -> anyhow::Result<CsvOut> {
    let f = std::fs::File::create(path)
        .map_err(|e| anyhow::anyhow!("cannot create the {what} file {}: {e}", path.display()))?;
    let mut w = csv::Writer::from_writer(f);
    w.write_record(header.split(','))?;
    Ok(w)
}

/// Writes one record; each field as `Display` prints it (numbers exactly
/// as before the csv crate wrote them, e.g. utilisation `0.5`, not `5e-1`).
/// `buf` is reused so that a long flit trace allocates nothing per field.
fn write_row(
    w: &mut CsvOut,
    buf: &mut String,
    fields: &[&dyn std::fmt::Display],
) -> csv::Result<()> {
    use std::fmt::Write as _;
    for f in fields {
        buf.clear();
        let _ = write!(buf, "{f}");
        w.write_field(buf.as_bytes())?;
    }
    w.write_record(None::<&[u8]>)
}

/// The observers of one run.
pub struct Observers {
    cfg: ObserveConfig,
    /// Start of the current window.
    start: Time,
    prev: Vec<LinkCounters>,
    links: Option<CsvOut>,
    /// Utilisation per window (rows) and link (columns), for the heat map.
    heat: Vec<Vec<f32>>,
    link_names: Vec<String>,
    trace: Option<BufWriter<std::fs::File>>,
    /// The text of one field (`write_row`).
    field: String,
    trace_nodes: Option<HashSet<u32>>,
    node_names: Vec<String>,
    windows: u64,
}

impl Observers {
    /// Opens the output files and switches the engine's trace on when
    /// needed. Unknown trace node names are an error naming them.
    pub fn new(cfg: ObserveConfig, topo: &Topology, f: &mut Fabric) -> anyhow::Result<Self> {
        if cfg.windowed() && cfg.window.0 == 0 {
            anyhow::bail!("--window must be longer than 0 ps");
        }
        // The flit trace writes a row per flit per hop: the node names,
        // the only fields that may need quoting, are quoted once here (by
        // the csv crate) so that a row is one formatted write.
        let node_names: Vec<String> = topo.nodes.iter().map(|n| csv_quoted(&n.name)).collect();
        let trace_nodes = if cfg.trace_nodes.is_empty() {
            None
        } else {
            let mut set = HashSet::new();
            for n in &cfg.trace_nodes {
                match topo.node_by_name(n) {
                    Some(i) => {
                        set.insert(i as u32);
                    }
                    None => anyhow::bail!("--trace-nodes: no node named '{n}' in the topology"),
                }
            }
            Some(set)
        };
        let mut links = None;
        if let Some(p) = &cfg.link_stats {
            links = Some(create_csv(
                p,
                "link statistics",
                "window_start_ps,window_end_ps,link,node,port,peer,data_flits,fc_packets,bytes,busy_ps,utilisation,queue_depth_mean,queue_samples",
            )?);
        }
        let mut trace = None;
        if let Some(p) = &cfg.trace {
            let mut w = create(p, "trace")?;
            writeln!(w, "t_ps,kind,node,port,msg,pkt,sn")?;
            trace = Some(w);
            f.enable_trace();
        }
        let r = f.report();
        let link_names = r
            .obufs
            .iter()
            .map(|o| format!("{}[{}]", o.node, o.port))
            .collect();
        Ok(Observers {
            start: f.now(),
            prev: counters(&r.obufs),
            links,
            heat: Vec::new(),
            link_names,
            trace,
            field: String::new(),
            trace_nodes,
            node_names,
            windows: 0,
            cfg,
        })
    }

    /// The next window end, when the run must stop there.
    pub fn next_boundary(&self) -> Option<Time> {
        self.cfg
            .windowed()
            .then(|| Time(self.start.0.saturating_add(self.cfg.window.0)))
    }

    /// Runs `f` to `end`, stopping at every window end on the way (the
    /// windows of `--link-stats`, the trace's flushes). Stops early, with
    /// `Ok`, when the fabric fails: the caller reads `f.error()`.
    pub fn run_until(&mut self, f: &mut Fabric, end: Time) -> anyhow::Result<()> {
        while let Some(b) = self.next_boundary() {
            if b >= end {
                break;
            }
            f.run_until(b);
            if f.error().is_some() {
                return Ok(());
            }
            self.window_end(f)?;
        }
        f.run_until(end);
        Ok(())
    }

    /// As [`Observers::run_until`] for the parallel engine: the link
    /// statistics of every window end read from the processes that own
    /// the ports (no flit trace).
    pub fn run_parallel_until(&mut self, par: &mut Parallel, end: Time) -> anyhow::Result<()> {
        while let Some(b) = self.next_boundary() {
            if b >= end {
                break;
            }
            par.run_until(b);
            if par.error().is_some() {
                return Ok(());
            }
            self.window_end_of(par.now(), &par.obuf_reports())?;
        }
        par.run_until(end);
        Ok(())
    }

    /// The fabric has reached the end of the current window (or the end of
    /// the run, for the last, possibly shorter window).
    pub fn window_end(&mut self, f: &mut Fabric) -> anyhow::Result<()> {
        if self.trace.is_some() {
            self.flush_trace(f)?;
        }
        let needed = self.links.is_some() || self.cfg.heatmap.is_some();
        let obufs = if needed && f.now() > self.start {
            f.report().obufs
        } else {
            Vec::new()
        };
        self.window_end_of(f.now(), &obufs)
    }

    /// As [`Observers::window_end`], from the obuf reports at `end` (the
    /// parallel engine's, `Parallel::obuf_reports`; no flit trace).
    pub fn window_end_of(&mut self, end: Time, obufs: &[ObufReport]) -> anyhow::Result<()> {
        if self.links.is_none() && self.cfg.heatmap.is_none() {
            self.start = end;
            return Ok(());
        }
        if end <= self.start {
            return Ok(());
        }
        let now = counters(obufs);
        let len = (end.0 - self.start.0) as f64;
        let mut heat_row = Vec::with_capacity(now.len());
        for (i, (c, p)) in now.iter().zip(&self.prev).enumerate() {
            let busy = c.busy_ps - p.busy_ps;
            let util = busy as f64 / len;
            heat_row.push(util as f32);
            if let Some(w) = &mut self.links {
                let o = &obufs[i];
                let qn = c.q_count - p.q_count;
                let qmean = if qn > 0 {
                    format!("{}", (c.q_sum - p.q_sum) as f64 / qn as f64)
                } else {
                    String::new()
                };
                write_row(
                    w,
                    &mut self.field,
                    &[
                        &self.start.0,
                        &end.0,
                        &self.link_names[i],
                        &o.node,
                        &o.port,
                        &o.peer.as_deref().unwrap_or(""),
                        &(c.data_flits - p.data_flits),
                        &(c.fc_packets - p.fc_packets),
                        &(c.bytes - p.bytes),
                        &busy,
                        &util,
                        &qmean,
                        &qn,
                    ],
                )?;
            }
        }
        if self.cfg.heatmap.is_some() {
            self.heat.push(heat_row);
        }
        self.prev = now;
        self.start = end;
        self.windows += 1;
        Ok(())
    }

    fn flush_trace(&mut self, f: &mut Fabric) -> anyhow::Result<()> {
        let recs = f.take_trace();
        let Some(w) = &mut self.trace else {
            return Ok(());
        };
        for t in recs {
            if t.t < self.cfg.trace_from.0 || self.cfg.trace_until.is_some_and(|u| t.t > u.0) {
                continue;
            }
            if let Some(set) = &self.trace_nodes {
                if !set.contains(&t.node) {
                    continue;
                }
            }
            writeln!(
                w,
                "{},{:?},{},{},{},{},{}",
                t.t, t.kind, self.node_names[t.node as usize], t.port, t.msg, t.pkt, t.sn
            )?;
        }
        Ok(())
    }

    /// After the run: the last window, the message records and the heat
    /// map; flushes every file.
    pub fn finish(mut self, f: &mut Fabric, topo: &Topology) -> anyhow::Result<()> {
        if self.cfg.windowed() {
            self.window_end(f)?;
        }
        if let Some(w) = &mut self.links {
            w.flush()?;
        }
        if let Some(w) = &mut self.trace {
            w.flush()?;
        }
        if let Some(p) = &self.cfg.messages {
            write_messages(p, f, topo)?;
        }
        if let Some(p) = &self.cfg.heatmap {
            write_heatmap(p, &self.link_names, &self.heat, self.cfg.window)?;
        }
        Ok(())
    }
}

fn write_messages(p: &Path, f: &Fabric, topo: &Topology) -> anyhow::Result<()> {
    let mut w = create_csv(
        p,
        "message records",
        "id,src,dst,src_lid,dst_lid,bytes,injected_ps,first_flit_ps,completed_ps,latency_ps,network_latency_ps,switch_hops",
    )?;
    let mut field = String::new();
    let r = f.report_with(true);
    let opt = |v: Option<u64>| v.map(|x| x.to_string()).unwrap_or_default();
    let mut hops_cache = std::collections::HashMap::new();
    for m in r.messages.unwrap_or_default() {
        let src = topo.hca_by_lid(m.src_lid);
        let dst = topo.hca_by_lid(m.dst_lid);
        let name = |n: Option<usize>| n.map(|i| topo.nodes[i].name.clone()).unwrap_or_default();
        let hops = match (src, dst) {
            (Some(a), Some(b)) => *hops_cache
                .entry((a, b))
                // topology hops count links; a route of k links crosses
                // k - 1 switches
                .or_insert_with(|| topo.hops(a, b).ok().map(|l| l.saturating_sub(1))),
            _ => None,
        };
        write_row(
            &mut w,
            &mut field,
            &[
                &m.id,
                &name(src),
                &name(dst),
                &m.src_lid,
                &m.dst_lid,
                &m.bytes,
                &m.injected_ps,
                &opt(m.first_flit_stamp_ps),
                &opt(m.completed_ps),
                &opt(m.completed_ps.map(|c| c.saturating_sub(m.injected_ps))),
                &opt(m.network_latency_ps),
                &hops.map(|h| h.to_string()).unwrap_or_default(),
            ],
        )?;
    }
    w.flush()?;
    Ok(())
}

/// The step of the time axis: the smallest of 1, 2, 5 x 10^k ps that
/// gives at most `max_ticks` intervals over `total` ps.
fn tick_step(total: u64, max_ticks: u64) -> u64 {
    let mut base: u64 = 1;
    loop {
        for m in [1, 2, 5] {
            let step = base.saturating_mul(m);
            if total / step <= max_ticks.max(1) || step == u64::MAX {
                return step.max(1);
            }
        }
        base = base.saturating_mul(10);
    }
}

fn xml_text(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// The heat map: links (rows, labelled on the y axis) by windows (columns,
/// simulated time on the x axis with ticks in time units); each cell's
/// colour runs linearly from white (utilisation 0, idle) to blue
/// (utilisation 1 or more, busy the whole window), as the legend shows.
/// The elements carry classes (`caption`, `link-label`, `tick`, `legend`,
/// `legend-label`) so that tools and tests can find them.
fn write_heatmap(
    p: &Path,
    links: &[String],
    heat: &[Vec<f32>],
    window: Time,
) -> anyhow::Result<()> {
    let mut w = create(p, "heat map")?;
    let cols = heat.len().max(1);
    let rows = links.len().max(1);
    // cells at least 1 px, the plot at most ~1600 x 1200 px and at least
    // 240 px wide (room for the time axis)
    let cw = (1600.0 / cols as f64)
        .clamp(1.0, 24.0)
        .max(240.0 / cols as f64);
    let ch = (1200.0 / rows as f64).clamp(1.0, 14.0);
    let (plot_w, plot_h) = (cw * cols as f64, ch * rows as f64);
    let longest = links.iter().map(|l| l.chars().count()).max().unwrap_or(4);
    let left = (longest as f64 * 6.2 + 34.0).max(70.0);
    let top = 40.0;
    let legend_x = left + plot_w + 24.0;
    let width = legend_x + 110.0;
    let height = top + plot_h.max(120.0) + 60.0;
    let win = simtime::format_ps_human(window.0);
    writeln!(
        w,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{width:.0}" height="{height:.0}" font-family="sans-serif" font-size="11">"#
    )?;
    let caption = format!(
        "Link utilisation (busy time / window) per window of {win}: white = idle (0), blue = busy (1 or more)"
    );
    writeln!(w, "<title>{}</title>", xml_text(&caption))?;
    writeln!(
        w,
        r#"<defs><linearGradient id="utilisation" x1="0" y1="1" x2="0" y2="0"><stop offset="0" stop-color="rgb(255,255,255)"/><stop offset="1" stop-color="rgb(0,0,255)"/></linearGradient></defs>"#
    )?;
    writeln!(
        w,
        r#"<text class="caption" x="{left:.0}" y="20">{}</text>"#,
        xml_text(&caption)
    )?;
    for (c, row) in heat.iter().enumerate() {
        for (r, &u) in row.iter().enumerate() {
            let u = u.clamp(0.0, 1.0);
            if u <= 0.0 {
                continue;
            }
            let shade = (255.0 * (1.0 - u)) as u8;
            writeln!(
                w,
                r#"<rect x="{:.2}" y="{:.2}" width="{cw:.2}" height="{ch:.2}" fill="rgb({shade},{shade},255)"/>"#,
                left + cw * c as f64,
                top + ch * r as f64
            )?;
        }
    }
    // the plot's frame (idle cells are white, like the background)
    writeln!(
        w,
        r##"<rect class="frame" x="{left:.2}" y="{top:.2}" width="{plot_w:.2}" height="{plot_h:.2}" fill="none" stroke="#888" stroke-width="0.5"/>"##
    )?;
    // y axis: the links, every k-th when the rows are too thin for all
    let every = (10.0 / ch).ceil().max(1.0) as usize;
    let label_size = ch.clamp(8.0, 10.0);
    writeln!(w, r#"<g class="link-labels" font-size="{label_size:.0}">"#)?;
    for (r, name) in links.iter().enumerate().step_by(every) {
        writeln!(
            w,
            r#"<text class="link-label" x="{:.0}" y="{:.1}" text-anchor="end" dominant-baseline="middle">{}</text>"#,
            left - 4.0,
            top + ch * (r as f64 + 0.5),
            xml_text(name)
        )?;
    }
    writeln!(w, "</g>")?;
    let label = if every == 1 {
        "link (node[port], the output buffer sending on it)".to_string()
    } else {
        format!("link (node[port]; every {every}th labelled)")
    };
    writeln!(
        w,
        r#"<text class="axis-title" transform="translate(12,{:.1}) rotate(-90)" text-anchor="middle">{}</text>"#,
        top + plot_h / 2.0,
        xml_text(&label)
    )?;
    // x axis: simulated time, ticks at round times with their unit
    let total = window.0.saturating_mul(heat.len() as u64);
    let step = tick_step(total, (plot_w / 70.0).floor() as u64);
    let axis_y = top + plot_h;
    writeln!(w, r#"<g class="time-ticks">"#)?;
    let mut t = 0u64;
    loop {
        let x = left
            + plot_w
                * if total == 0 {
                    0.0
                } else {
                    t as f64 / total as f64
                };
        writeln!(
            w,
            r##"<line x1="{x:.2}" y1="{axis_y:.2}" x2="{x:.2}" y2="{:.2}" stroke="#444"/>"##,
            axis_y + 5.0
        )?;
        writeln!(
            w,
            r#"<text class="tick" data-ps="{t}" x="{x:.2}" y="{:.1}" text-anchor="middle">{}</text>"#,
            axis_y + 17.0,
            simtime::format_ps_human(t)
        )?;
        match t.checked_add(step) {
            Some(n) if n <= total => t = n,
            _ => break,
        }
    }
    writeln!(w, "</g>")?;
    writeln!(
        w,
        r#"<text class="axis-title" x="{:.1}" y="{:.1}" text-anchor="middle">simulated time ({} windows of {win}, one per column)</text>"#,
        left + plot_w / 2.0,
        axis_y + 38.0,
        heat.len()
    )?;
    // the colour legend: the scale of the cells
    let (lh, ly) = (100.0, top);
    writeln!(w, r#"<g class="legend">"#)?;
    writeln!(
        w,
        r##"<rect x="{legend_x:.1}" y="{ly:.1}" width="14" height="{lh:.1}" fill="url(#utilisation)" stroke="#888" stroke-width="0.5"/>"##
    )?;
    for (v, text) in [(1.0, "1 (busy)"), (0.5, "0.5"), (0.0, "0 (idle)")] {
        writeln!(
            w,
            r#"<text class="legend-label" data-utilisation="{v}" x="{:.1}" y="{:.1}" dominant-baseline="middle">{text}</text>"#,
            legend_x + 20.0,
            ly + lh * (1.0 - v)
        )?;
    }
    writeln!(
        w,
        r#"<text class="legend-title" x="{legend_x:.1}" y="{:.1}">utilisation</text>"#,
        ly + lh + 18.0
    )?;
    writeln!(w, "</g>")?;
    writeln!(w, "</svg>")?;
    w.flush()?;
    Ok(())
}

/// The window ends of a closed-loop run (`traffic::run_closed_loop_observed`),
/// on either engine; the first error of the outputs stops the windows and
/// is kept in `err`.
pub struct Windows<'a> {
    pub obs: &'a mut Observers,
    pub err: Option<anyhow::Error>,
}

impl<'a> Windows<'a> {
    pub fn new(obs: &'a mut Observers) -> Windows<'a> {
        Windows { obs, err: None }
    }

    fn next_window(&self) -> Option<Time> {
        if self.err.is_some() {
            return None;
        }
        self.obs.next_boundary()
    }

    fn keep(&mut self, r: anyhow::Result<()>) {
        if let Err(e) = r {
            self.err = Some(e);
        }
    }
}

impl WindowHook for Windows<'_> {
    fn next(&self) -> Option<Time> {
        self.next_window()
    }
    fn at(&mut self, f: &mut Fabric) {
        let r = self.obs.window_end(f);
        self.keep(r);
    }
}

impl WindowHook<Parallel> for Windows<'_> {
    fn next(&self) -> Option<Time> {
        self.next_window()
    }
    fn at(&mut self, par: &mut Parallel) {
        let r = self.obs.window_end_of(par.now(), &par.obuf_reports());
        self.keep(r);
    }
}

/// The window ends of the link statistics and heat map in a distributed
/// run (`ibnet run --distributed`): every rank stops at each, the obuf
/// counters are gathered at rank 0 ([`Distributed::obuf_reports`]), and
/// rank 0's observers write them; the other ranks have none. Every rank
/// steps the same windows whatever happens to the files (a failed write
/// is kept for the end: a rank that stopped stepping would leave the
/// others waiting at the gather).
pub struct RankWindows<'a> {
    obs: Option<&'a mut Observers>,
    /// window length, when a windowed output is wanted
    window: Option<Time>,
    start: Time,
    /// the first error, reported after the run
    pub err: Option<anyhow::Error>,
}

impl<'a> RankWindows<'a> {
    /// `obs`: rank 0's observers (None on the other ranks); `window`:
    /// the window length if `--link-stats` or `--heatmap` is given, on
    /// every rank.
    pub fn new(obs: Option<&'a mut Observers>, window: Option<Time>) -> RankWindows<'a> {
        RankWindows {
            obs,
            window,
            start: Time(0),
            err: None,
        }
    }

    fn next_window(&self) -> Option<Time> {
        self.window.map(|w| Time(self.start.0.saturating_add(w.0)))
    }

    fn end<T: Transport>(&mut self, d: &mut Distributed<T>) {
        let now = d.now();
        match d.obuf_reports() {
            Err(e) => {
                self.err.get_or_insert(anyhow::anyhow!(e));
            }
            Ok(reports) => {
                if let (Some(obs), Some(r), None) = (self.obs.as_mut(), reports, &self.err) {
                    if let Err(e) = obs.window_end_of(now, &r) {
                        self.err = Some(e);
                    }
                }
            }
        }
        self.start = now;
    }

    /// Run every rank to `end`, stopping at every window end on the way;
    /// stops early when the run stops (a fatal error somewhere).
    pub fn run_until<T: Transport>(&mut self, d: &mut Distributed<T>, end: Time) {
        while let Some(b) = self.next_window() {
            if b >= end {
                break;
            }
            d.run_until(b);
            if d.stopped() {
                return;
            }
            self.end(d);
        }
        d.run_until(end);
    }
}

impl<T: Transport> WindowHook<Distributed<T>> for RankWindows<'_> {
    fn next(&self) -> Option<Time> {
        self.next_window()
    }
    fn at(&mut self, d: &mut Distributed<T>) {
        self.end(d);
    }
}

#[cfg(test)]
mod tests {
    use super::csv_quoted;

    #[test]
    fn node_names_are_quoted_only_when_they_need_it() {
        assert_eq!(csv_quoted("leaf_0"), "leaf_0");
        assert_eq!(csv_quoted("H,1"), "\"H,1\"");
        assert_eq!(csv_quoted("say \"x\""), "\"say \"\"x\"\"\"");
        assert_eq!(csv_quoted("a\nb"), "\"a\nb\"");
    }
}
