//! Shared helpers for the engine tests.
#![allow(dead_code)]

use ibnet::engine::{TraceKind, TraceRec};
use ibnet::topology::{Link, Node, NodeKind, PortRef, Topology, NO_ROUTE};
use ibnet::{Fabric, Params, Time, TrafficMode};

/// H_1 -- SW_1.port0, SW_1.port1 -- H_2; table `0: 255 0 1` (sec. 11).
pub fn two_hosts_one_switch() -> Topology {
    Topology {
        name: "case1".into(),
        nodes: vec![
            Node {
                name: "H_1".into(),
                kind: NodeKind::Hca { lid: 1 },
            },
            Node {
                name: "H_2".into(),
                kind: NodeKind::Hca { lid: 2 },
            },
            Node {
                name: "SW_1".into(),
                kind: NodeKind::Switch {
                    ports: 2,
                    fdb: vec![NO_ROUTE, 0, 1],
                },
            },
        ],
        links: vec![
            Link {
                a: PortRef { node: 0, port: 0 },
                b: PortRef { node: 2, port: 0 },
            },
            Link {
                a: PortRef { node: 2, port: 1 },
                b: PortRef { node: 1, port: 0 },
            },
        ],
        ranks: vec![],
        sl: vec![],
    }
}

/// `n` senders H_1..H_n and one receiver H_{n+1} on one switch
/// (ports 0..n-1 senders, port n receiver).
pub fn incast(n: usize) -> Topology {
    let mut nodes = Vec::new();
    let mut fdb = vec![NO_ROUTE];
    for i in 0..=n {
        nodes.push(Node {
            name: format!("H_{}", i + 1),
            kind: NodeKind::Hca {
                lid: (i + 1) as u16,
            },
        });
        fdb.push(i as u16);
    }
    nodes.push(Node {
        name: "SW_1".into(),
        kind: NodeKind::Switch {
            ports: (n + 1) as u16,
            fdb,
        },
    });
    let sw = n + 1;
    let links = (0..=n)
        .map(|i| Link {
            a: PortRef { node: i, port: 0 },
            b: PortRef {
                node: sw,
                port: i as u16,
            },
        })
        .collect();
    Topology {
        name: format!("incast{n}"),
        nodes,
        links,
        ranks: vec![],
        sl: vec![],
    }
}

pub fn ns(x: u64) -> u64 {
    x * 1000
}

/// Fabric on the case-1 network with H_1 sending `mode`, H_2 silent.
pub fn case_fabric(p: &Params, mode: TrafficMode) -> Fabric {
    let mut f = Fabric::new(&two_hosts_one_switch(), p).expect("config");
    f.set_traffic(0, mode).unwrap();
    f.set_traffic(1, TrafficMode::Silent).unwrap();
    f.enable_trace();
    f
}

/// Times of trace records of a kind at a node (in trace order).
pub fn times(tr: &[TraceRec], kind: TraceKind, node: u32) -> Vec<&TraceRec> {
    tr.iter()
        .filter(|r| r.kind == kind && r.node == node)
        .collect()
}

pub fn run_to(f: &mut Fabric, t_ns: u64) {
    f.run_until(Time(t_ns * 1000));
    assert!(f.error().is_none(), "{:?}", f.error());
}

/// Injects `flows` (src, dst HCA, bytes) at t = 0 in this order and runs
/// the fabric to the end without a model error; the completion time (ps)
/// of each flow, 0 for one that never completed.
pub fn completion_times(f: &mut Fabric, flows: &[(usize, usize, u64)]) -> Vec<u64> {
    let ids: Vec<_> = flows
        .iter()
        .map(|&(s, d, b)| f.inject(Time(0), s, d, b).unwrap())
        .collect();
    let mut done = vec![0u64; ids.len()];
    while let Some((t, ms)) = f.run_until_completion() {
        for m in ms {
            done[ids.iter().position(|&i| i == m).unwrap()] = t.0;
        }
    }
    assert!(f.error().is_none(), "{:?}", f.error());
    done
}

/// `rel` under the reference data directory `dir`, which must exist: a
/// test that did not run must not pass. The message says `needs` of it
/// (what needs ../shared beside the checkout).
pub fn reference_file(dir: &str, rel: &str, needs: &str) -> std::path::PathBuf {
    let p = std::path::Path::new(dir).join(rel);
    assert!(
        p.exists(),
        "{} is missing: {needs} ../shared beside the checkout",
        p.display()
    );
    p
}

/// The words of a command line (none of the arguments holds a space).
pub fn words(line: &str) -> Vec<&str> {
    line.split_whitespace().collect()
}

/// `ibnet ARGS` run to completion.
pub fn ibnet(args: &[&str]) -> std::process::Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_ibnet"))
        .args(args)
        .output()
        .expect("run ibnet")
}

/// The network latencies (ps) of the messages of `r` (a report with the
/// message list) that `keep` keeps, in report order.
pub fn network_latencies(
    r: &ibnet::Report,
    keep: impl Fn(&ibnet::stats::MsgReport) -> bool,
) -> Vec<u64> {
    r.messages
        .as_ref()
        .expect("the report lists the messages")
        .iter()
        .filter(|m| keep(m))
        .filter_map(|m| m.network_latency_ps)
        .collect()
}

/// The qdr preset with messages of `len` bytes in packets of at most `mtu`
/// bytes, statistics collected from t = 0.
pub fn qdr(mtu: u32, len: u64) -> Params {
    let mut p = Params::qdr();
    p.msg_mtu = mtu;
    p.msg_length = len;
    p.start_stat_col_ns = 0.0;
    p
}
