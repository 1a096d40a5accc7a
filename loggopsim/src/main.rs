fn main() {
    eprintln!("loggopsim: not built yet");
    std::process::exit(2);
}
