//! schedgen: GOAL schedule generators (LogGOPSim's Schedgen patterns) and
//! translation of liballprof MPI traces to GOAL, with the thesis's
//! calibration methods. Used by `loggopsim gen` and `loggopsim trace2goal`.
pub mod cli;
