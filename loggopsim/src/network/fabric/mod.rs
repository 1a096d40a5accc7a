//! The flit-level fabric backends: the scheduler's network is ibnet's
//! fabric, reached through the records of docs/protocol.md. Three
//! transports, one protocol client:
//!
//! - `args.rs`: their command-line options ([`CosimArgs`]: protocol,
//!   quantum, estimate, session key, and ibnet's fabric options), the one
//!   place to start when following an option;
//! - `client.rs`: [`CosimNetwork`], the scheduler's side of the protocol
//!   (query, notify-v1, exact notify, one-sided operations, triggers) over
//!   any [`Link`], and `--network ipc` (attach to an `ibnet serve`
//!   process by its session key);
//! - `link.rs`: [`Link`], where the records go: an ipc-proto channel, or
//!   the fabric server itself;
//! - `inproc.rs`: `--network inproc`, the fabric server on a thread of
//!   this process over in-process channels; it also builds the server
//!   from the options, for `onepiece` too;
//! - `onepiece.rs`: `--network onepiece`, the fabric server called on the
//!   scheduler's thread (no channel).
//!
//! The three are registered in `super::registry`, which says what each
//! needs (a session key, a fabric in this process) and builds it.

mod args;
mod client;
pub mod inproc;
mod link;
pub mod onepiece;

pub use args::CosimArgs;
pub use client::{CosimNetwork, FinishHook};
pub use link::Link;
