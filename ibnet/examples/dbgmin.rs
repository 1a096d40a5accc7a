use ibnet::topology;
use ibnet::traffic::{apply_app_traffic, TrafficSpec};
use ibnet::{Fabric, Params, Time};
fn main() {
    let a: Vec<String> = std::env::args().collect();
    let topo = topology::load(std::path::Path::new("/work/shared/data/ibmodel-32n/is1_3l_32n.topo")).unwrap();
    let mut p = Params::qdr();
    for s in &a[3..] { p = p.apply_override(s).unwrap(); }
    let mut f = Fabric::new(&topo, &p).unwrap();
    let spec = TrafficSpec::parse(&format!("seq_loop:/work/shared/data/ibmodel-32n/{}", a[1])).unwrap();
    apply_app_traffic(&mut f, &topo, &spec).unwrap();
    f.run_until(Time(a[2].parse::<u64>().unwrap() * 1_000_000));
    let r = f.report();
    for s in &r.sinks { print!("{} ", s.msg_network_latency_ps.min / 1000); }
    println!();
    println!("events {} maxheap {}", r.events_processed, f.max_heap);
}
