//! schedgen: GOAL schedule generators (LogGOPSim's Schedgen patterns) and
//! translation of liballprof MPI traces to GOAL, with the thesis's
//! calibration methods. Used by `loggopsim gen` and `loggopsim trace2goal`.
//!
//! - [`goal`]: the GOAL text writer (docs/model/schedgen.md section 2);
//! - [`patterns`]: the generator patterns (section 3);
//! - [`trace`]: liballprof reader and translator (section 4 + extensions);
//! - [`collectives`]: collective algorithms as Open MPI / MPICH choose
//!   them (`trace2goal --collectives`);
//! - [`calib`]: pinning, processing overheads, link-layer model (thesis ch. 5);
//! - [`cli`]: the clap argument structs and entry points;
//! - [`input`]: bounded reading of input files (regular files only, size limits).
pub mod calib;
pub mod cli;
pub mod collectives;
pub mod goal;
pub mod input;
pub mod patterns;
pub mod rng;
pub mod trace;
