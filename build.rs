//! Tells the tests whether the reference data is there (cfg
//! `reference_data`, see refdata/src/lib.rs).
fn main() {
    refdata::configure();
}
