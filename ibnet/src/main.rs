fn main() {
    eprintln!("ibnet: not built yet");
    std::process::exit(2);
}
