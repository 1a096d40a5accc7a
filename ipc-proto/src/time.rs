//! Simulated time: the `simtime` crate, re-exported so that
//! `ipc_proto::Time` and `ipc_proto::time::*` keep working. The type lives
//! in its own crate because the sans-I/O engines use it too and must not
//! depend on IPC code; the protocol only carries it (records encode it as
//! a little-endian u64 of picoseconds).

pub use simtime::*;
