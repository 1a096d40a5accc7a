fn main() {
    // `ibnet serve`: the co-simulation server (ibnet::server).
    if std::env::args().nth(1).as_deref() == Some("serve") {
        ibnet::server::serve::main_serve();
    }
    eprintln!("ibnet: not built yet");
    std::process::exit(2);
}
