//! The fabric engine: a sans-I/O discrete-event simulator of the flit-level
//! InfiniBand model (docs/model/fabric.md sections 1 to 6, 8, 12).
//!
//! Event order: one future-event queue keyed by (time, seq). `seq` comes
//! from a global counter (shifted left by `SEQ_SHIFT`) so equal-time events
//! run in insertion (FIFO) order, sec. 1.3. Handlers schedule their events in
//! exactly the order the spec lists them. (`event_order = "local"` runs the
//! same handlers in an order every node computes alone: `order.rs`.)
//!
//! Queue layout (performance, not semantics): delayed events live in a
//! timing wheel (`wheel.rs`, 256 ps slots over 262 ns, a binary heap
//! beyond), zero-delay events of the current instant in a FIFO (`nowq`);
//! `step` takes whichever holds the smaller (time, seq). Events are 16
//! bytes: flits travel by handle into a slab (`Fabric::fl`), allocated by
//! the generator and released when consumed or dropped. The wheel's base
//! slot lives in its own vector (one indirection less per pop), and a
//! drained slot gives back a buffer far larger than its last round needed
//! (the memory bound of the 1944-node network, `wheel.rs`).
//!
//! Direct events (`direct.rs`): the ibuf's credit update to its own obuf
//! (`ObufRxCred`, a quarter of all events) is applied where it is
//! scheduled, and an arbiter kick that cannot do anything (`ArbKick` while
//! the arbiter's pop is pending beyond this instant, while it is inside a
//! packet, or while none of its HoQ slots is used) is dropped, whenever
//! that is provably the same run; both still take their seq and count as
//! processed events, so reports, event counts and the same-instant order
//! are unchanged. The proofs are in `direct.rs`.
//!
//! Idle cost: an obuf whose credit timer finds it idle with nothing new to
//! advertise stops ticking ("dormant"). When it is touched again, the ticks
//! it skipped are accounted for and its timer resumes on the same phase.
//! Re-armed ticks and their 1 ns wake-ups get a *virtual* sequence number
//! that places them where the always-ticking model would have put them: in
//! the always-ticking model the ticks at k*P are the first events processed
//! in period k (every delay that touches an obuf is shorter than P), so the
//! events they insert sort right after everything inserted before k*P and
//! before everything inserted from k*P on, in obuf order. A dormant obuf
//! that wakes after the 1 ns wake-up pop of its last tick would have run
//! also takes that pop's effect: between packets the FC scan pointer is
//! past the last VL until the next tick. The tests `lazy_equals_naive*`
//! compare both modes flit by flit.

//!
//! # Layout
//!
//! One module per component of the model (the reference's modules), each
//! holding its state type and its handlers as an `impl Fabric` block:
//!
//! | module      | component                                  | spec         |
//! |-------------|--------------------------------------------|--------------|
//! | `app.rs`    | app (traffic source), message table        | 5.1          |
//! | `gen.rs`    | generator (packetisation, injection)       | 5.2          |
//! | `vlarb.rs`  | VL arbiter (HoQ, round robin, VL tables)   | 5.3          |
//! | `obuf.rs`   | output buffer, credit timer, FC packets    | 5.4          |
//! | `ibuf.rs`   | input buffer, routing, credits             | 5.5          |
//! | `sink.rs`   | sink (drain, hiccup) and its statistics    | 5.6, 8       |
//! | `cc.rs`     | congestion control (CNP, CCT index, timer) | 12           |
//! | `rdma.rs`   | one-sided put/get, their control packets   | docs/rdma.md |
//! | `pcie.rs`   | host model: PCIe DMA read/write per HCA    | docs/rdma.md |
//! | `nic.rs`    | host model: NIC TX/RX command engines      | docs/rdma.md |
//!
//! and the machinery around them:
//!
//! | module        | role                                                  |
//! |---------------|-------------------------------------------------------|
//! | `fabric.rs`   | the `Fabric` struct, ports and HCAs, errors, queries   |
//! | `build.rs`    | construction, configuration checks, init events (1.4) |
//! | `dispatch.rs` | the event type and the dispatch; the total order      |
//! | `direct.rs`   | zero-delay events applied where scheduled (proofs)    |
//! | `queue.rs`    | scheduling into the future-event queue                |
//! | `order.rs`    | the local event order (`event_order = "local"`)       |
//! | `lookahead.rs`| a parallel run's promises in the local order          |
//! | `causal.rs`   | the causal key of every event, checked (feature       |
//! |               | `causal-check`; docs/scaling.md, "Event order")       |
//! | `wheel.rs`    | the timing wheel and the now-FIFO behind `queue.rs`   |
//! | `flits.rs`    | the flit type and the flit store (slab)               |
//! | `pervl.rs`    | per-VL state: VL 0 inline, the others boxed           |
//! | `run.rs`      | run loops, deadlock rule, completions                 |
//! | `report.rs`   | the statistics report                                 |
//! | `trace.rs`    | optional per-flit trace                               |
//!
//! The engine is sans-I/O and depends on no IPC code: its time type is
//! [`simtime::Time`] (re-exported as `ibnet::Time`).

mod app;
mod build;
#[cfg(feature = "causal-check")]
mod causal;
mod cc;
mod direct;
mod dispatch;
mod distributed;
mod distributed_drive;
mod driven;
mod fabric;
mod flits;
mod gen;
mod ibuf;
mod lookahead;
mod loss;
mod nic;
mod obuf;
mod order;
mod parallel;
mod parallel_drive;
mod parallel_fifo;
mod partition;
mod pcie;
mod pervl;
mod qp;
mod queue;
mod rdma;
mod report;
mod run;
mod sink;
mod stall;
pub mod trace;
mod vlarb;
mod wheel;

pub use self::app::{MsgId, TrafficMode};
#[cfg(feature = "causal-check")]
pub use self::causal::{CausalSummary, HORIZON_PS as CAUSAL_HORIZON_PS};
pub use self::distributed::{Distributed, Finished, Transport};
pub use self::driven::Driven;
pub use self::fabric::{Fabric, FabricError, MAX_TIME_PS};
pub use self::parallel::{Parallel, ParallelStats, MAX_THREADS};
pub use self::partition::Partition;
pub use self::pcie::{HostHcaReport, HostReport};
pub use self::rdma::{OpKind, OpPoint, RdmaReport};
pub use self::run::RunOutcome;
pub use self::stall::STALL_MIN_WINDOW_PS;
pub use trace::{TraceKind, TraceRec};
