//! End-to-end tests: the binaries (`loggopsim`, `ibnet`, `ipc-proto`) and the
//! scripts driven as a user would drive them. One test binary, shared helpers
//! in `util`, one module per capability.

mod util;
mod tracer;
mod schedgen;
mod cosim;
mod peers;
mod conformance;
mod efficiency;
