//! loggopsim: the LogGOPS scheduler (sans-I/O engine, GOAL parser, binary
//! schedule format, network backends).
pub use ipc_proto::Time;
