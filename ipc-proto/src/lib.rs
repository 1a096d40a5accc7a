//! ipc-proto: everything the scheduler and the fabric need to talk.
pub mod time;
pub use time::Time;
