//! ibnet: flit-level InfiniBand fabric engine (sans-I/O) and its topologies.
//!
//! - [`Fabric`]: the discrete-event engine of docs/model/fabric.md (integer ps time,
//!   FIFO order among equal timestamps).
//! - [`Params`]: every parameter of docs/model/fabric.md sections 7 and 12, presets.
//! - [`traffic`]: standalone traffic (reference app modes and closed-loop
//!   dissemination / chain drivers over the injection API).
//! - [`topology`]: topology data model, loaders, generators and routing.
//! - `server` (cargo feature `server`, on by default): the co-simulation
//!   server over ipc-proto. It is the only part of the crate that depends
//!   on IPC code; the engine's time type is [`simtime::Time`].
pub use simtime::Time;

pub mod engine;
pub mod flowlevel;
pub mod hostparams;
pub mod hugepages;
pub mod input;
#[cfg(feature = "mpi")]
pub mod mpi_transport;
pub mod observe;
pub mod options;
pub mod params;
pub mod processes;
#[cfg(feature = "server")]
pub mod server;
pub mod simgrid;
pub mod stats;
pub mod topology;
pub mod traffic;
pub mod units;
pub mod zeroload;

// The handle map and the prefetch hint are in ibcosim-common, shared with
// the scheduler; `crate::handles` and `crate::prefetch` name them inside
// this crate (nothing outside needs them from here).
#[cfg(feature = "server")]
use ibcosim_common::handles;
use ibcosim_common::prefetch;

pub use engine::{Fabric, FabricError, MsgId, OpKind, OpPoint, RunOutcome, TrafficMode};
pub use params::{ConfigError, Params};
pub use stats::Report;
