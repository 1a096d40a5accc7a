use ibnet::topology;
use ibnet::traffic::{apply_app_traffic, TrafficSpec};
use ibnet::{Fabric, Params, Time};
use ibnet::engine::TraceKind;
fn main() {
    let a: Vec<String> = std::env::args().collect();
    let topo = topology::load(std::path::Path::new("/work/shared/data/ibmodel-32n/is1_3l_32n.topo")).unwrap();
    let p = Params::qdr();
    let mut f = Fabric::new(&topo, &p).unwrap();
    let spec = TrafficSpec::parse(&format!("seq_loop:/work/shared/data/ibmodel-32n/{}", a[1])).unwrap();
    apply_app_traffic(&mut f, &topo, &spec).unwrap();
    let msg: u32 = a[2].parse().unwrap();
    let t0: u64 = a[3].parse().unwrap();
    f.run_until(Time(t0));
    f.enable_trace();
    f.run_until(Time(t0 + 50_000_000));
    let tr = f.take_trace();
    for r in tr.iter().filter(|r| (r.msg == msg && (r.sn == 0 && r.pkt == 0 || r.pkt == 63 && r.sn == 31)) || (r.msg + 1 == msg && r.pkt == 63 && r.sn >= 29)) {
        println!("{:?}", r);
    }
    let nodes: Vec<String> = topo.nodes.iter().map(|n| n.name.clone()).collect();
    for (i,n) in nodes.iter().enumerate() { if i < 60 { print!("{i}:{n} "); } }
    println!();
}
