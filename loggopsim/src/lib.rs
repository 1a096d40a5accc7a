//! loggopsim: the LogGOPS scheduler (sans-I/O engine, GOAL parser, binary
//! schedule format, network backends).
//!
//! Layout:
//! - [`schedule`]: the compact in-memory schedule (struct of arrays) and its builder;
//! - [`goal`]: GOAL text reader (hand-written, streaming) and writer;
//! - [`binfmt`]: the reference's binary layout (magic 4223) reader and writer;
//! - [`matching`]: receive/unexpected queues with sublinear FIFO-with-wildcards matching;
//! - [`network`]: the `Network` trait and the built-in LogGP backend;
//! - [`engine`]: the simulator itself (state, ordering rules, handlers);
//! - [`noise`]: optional CPU noise from a trace;
//! - [`jobs`]: several jobs on one fabric (placement, merged rank space, per-job results);
//! - [`report`]: the reference's text output and the JSON report.
//!
//! The command line (`src/main.rs`) exits with 0 on success, 1 on a failed
//! simulation (unmatched receive/unexpected queues, operations that never
//! completed, network errors) and 2 on usage or input errors.
//!
//! Units and limits: times are picoseconds. The native text
//! output names them (`Host 0: 5654 ps`, `Maximum finishing time at host 0:
//! 204006600 ps (204.007 us)`); `--loggopsim-output` prints LogGOPSim's
//! exact bytes (no units; its "(0.204007 s)" reads the times as ns). JSON
//! keys carry the unit (`finish_times_ps`, `L_ps`, `G_ps_per_byte`).
//! Command-line times accept `ps`/`ns`/`us`/`ms`/`s` suffixes
//! ([`ipc_proto::time::parse_time_arg`]). Time arithmetic is checked: a
//! time of 2^64-1 ps (the protocol's "never") or more is a
//! [`engine::SimError::TimeOverflow`], exit 2 (the schedule or the
//! parameters are at fault), never a saturation. Inputs must be regular
//! files (devices and FIFOs are refused); GOAL lines are at most
//! [`goal::MAX_LINE_BYTES`]; a binary schedule with bytes after its last
//! rank block is refused. With a fabric backend, sends above 1 TiB (the
//! fabric's message limit) are refused before the fabric starts.
pub use ipc_proto::Time;

pub mod binfmt;
pub mod engine;
pub mod goal;
mod goal_fast;
pub mod hash;
pub mod jobs;
pub mod matching;
pub mod network;
pub mod noise;
pub mod report;
pub mod schedule;
pub mod verbose;

/// Reads a schedule from a file, detecting the binary layout by its magic.
/// Warnings of the GOAL reader (a label defined twice) go to stderr.
pub fn load_schedule(path: &std::path::Path) -> Result<schedule::Schedule, goal::LoadError> {
    let (s, warnings) = load_schedule_warnings(path)?;
    for w in warnings {
        eprintln!("loggopsim: warning: {w}");
    }
    Ok(s)
}

/// [`load_schedule`], returning the warnings instead of printing them.
pub fn load_schedule_warnings(
    path: &std::path::Path,
) -> Result<(schedule::Schedule, Vec<String>), goal::LoadError> {
    use std::io::Read;
    // Regular files only: a device (/dev/zero) or a FIFO could be endless or
    // block forever.
    let (mut f, _) = schedgen::input::open_regular(path).map_err(|msg| goal::LoadError::Io {
        file: path.display().to_string(),
        msg,
    })?;
    let mut head = [0u8; 8];
    let mut n = 0;
    while n < 8 {
        match f.read(&mut head[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) => {
                return Err(goal::LoadError::Io {
                    file: path.display().to_string(),
                    msg: e.to_string(),
                })
            }
        }
    }
    drop(f);
    if n == 8 {
        let magic = u64::from_le_bytes(head);
        if magic == binfmt::MAGIC || magic == binfmt::MAGIC_CONSUMED {
            return binfmt::read_file(path).map(|s| (s, Vec::new()));
        }
    }
    goal::parse_file_warnings(path)
}
