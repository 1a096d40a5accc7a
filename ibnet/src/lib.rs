//! ibnet: flit-level InfiniBand fabric engine (sans-I/O) and its topologies.
pub use ipc_proto::Time;
pub mod topology;
