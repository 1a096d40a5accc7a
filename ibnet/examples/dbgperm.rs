use ibnet::topology::{self, Topology};
use ibnet::traffic::{apply_app_traffic, TrafficSpec};
use ibnet::{Fabric, Params, Time};
fn main() {
    let a: Vec<String> = std::env::args().collect();
    let t0 = topology::load(std::path::Path::new("/work/shared/data/ibmodel-32n/is1_3l_32n.topo")).unwrap();
    // permutation: mode "rev" = HCAs then switches reversed; "swfirst" = switches (file order) then HCAs; "topo" = switch order by name desc L2 first
    let n = t0.nodes.len();
    let h: Vec<usize> = t0.hcas();
    let mut s: Vec<usize> = t0.switches();
    let order: Vec<usize> = match a[3].as_str() {
        "rev" => { s.reverse(); h.iter().chain(s.iter()).copied().collect() }
        "swfirst" => s.iter().chain(h.iter()).copied().collect(),
        "l2first" => { s.sort_by_key(|&i| std::cmp::Reverse(t0.nodes[i].name.clone())); h.iter().chain(s.iter()).copied().collect() }
        _ => (0..n).collect(),
    };
    let mut inv = vec![0; n];
    for (new, &old) in order.iter().enumerate() { inv[old] = new; }
    let mut t = Topology { name: t0.name.clone(), nodes: order.iter().map(|&i| t0.nodes[i].clone()).collect(), links: t0.links.clone(), ranks: vec![] };
    for l in &mut t.links { l.a.node = inv[l.a.node]; l.b.node = inv[l.b.node]; }
    let p = Params::qdr();
    let mut f = Fabric::new(&t, &p).unwrap();
    let spec = TrafficSpec::parse(&format!("seq_loop:/work/shared/data/ibmodel-32n/{}", a[1])).unwrap();
    apply_app_traffic(&mut f, &t, &spec).unwrap();
    f.run_until(Time(a[2].parse::<u64>().unwrap() * 1_000_000));
    let r = f.report();
    for s in &r.sinks { print!("{} ", s.msg_network_latency_ps.min / 1000); }
    println!("\nevents {} consumed {}", r.events_processed, r.flits_consumed);
}
