//! ibcosim-common: the utilities that the fabric (`ibnet`) and the
//! scheduler (`loggopsim`) both use on their per-message paths and that
//! belong to neither model (docs/architecture.md, "The crates"):
//!
//! - [`handles`]: a map from a co-simulation's message handles to small
//!   indices, faster than a hash map for handles numbered in sequence;
//! - [`prefetch`]: a software prefetch hint;
//! - [`cpu`]: the process's CPU time, for the reports.
//!
//! Time and its units are in `simtime`, the protocol in `ipc-proto`.

pub mod cpu;
pub mod handles;
pub mod prefetch;
