//! The thesis's efficiency study (section 4.8) as one rerunnable command.
//!
//! The `study` binary drives the workspace's simulators as child processes
//! (`ibnet run`, `ibnet serve`, `loggopsim`), measures each one's wall time
//! and peak memory (`wait4`), reads their `--json` reports, and writes a
//! Markdown table, a CSV file and PNG/SVG plots.
//!
//! - [`setups`]: the five setups and the command lines that run them;
//! - [`proc`]: child processes, budget, peak memory, progress of a stopped run;
//! - [`efficiency`]: repetitions, medians, extrapolation, errors vs notify;
//! - [`scaling`]: the chain-pattern scaling study and its log-log fits;
//! - [`report`], [`plot`]: the outputs.

pub mod efficiency;
pub mod plot;
pub mod proc;
pub mod report;
pub mod scaling;
pub mod setups;
