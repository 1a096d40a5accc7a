//! End-to-end tests: the binaries (`loggopsim`, `ibnet`, `ipc-proto`) and the
//! scripts driven as a user would drive them. One test binary, shared helpers
//! in `util`, one module per capability.

mod conformance;
mod cosim;
mod efficiency;
mod hygiene;
mod jobs;
mod peers;
mod prediction;
mod quickstart;
mod readme;
mod schedgen;
mod simgrid;
mod tracer;
mod util;
