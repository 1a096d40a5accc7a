use ibnet::topology;
use ibnet::traffic::{apply_app_traffic, TrafficSpec};
use ibnet::{Fabric, Params, Time};
fn main() {
    let a: Vec<String> = std::env::args().collect();
    let topo = topology::load(std::path::Path::new("/work/shared/data/ibmodel-32n/is1_3l_32n.topo")).unwrap();
    let p = Params::qdr();
    let mut f = Fabric::new(&topo, &p).unwrap();
    let spec = TrafficSpec::parse(&format!("seq_loop:/work/shared/data/ibmodel-32n/{}", a[1])).unwrap();
    apply_app_traffic(&mut f, &topo, &spec).unwrap();
    f.run_until(Time(a[2].parse::<u64>().unwrap() * 1_000_000));
    let dst: u16 = a[3].parse().unwrap();
    let r = f.report_with(true);
    for m in r.messages.unwrap() {
        if m.dst_lid == dst {
            let s = f.switches_between(f.hca_of_lid(m.src_lid).unwrap(), f.hca_of_lid(dst).unwrap()).unwrap();
            println!("id {} src {} inj {} stamp {:?} lat {:?} sw {}", m.id, m.src_lid, m.injected_ps, m.first_flit_stamp_ps, m.network_latency_ps, s);
        }
    }
}
