//! mpi-tracer: a PMPI interposition library that writes liballprof-format
//! MPI traces (one text file per rank), and the tools that read them back.
//!
//! The interposition library itself is C (`c/liballprof.c`), compiled by
//! `build.rs` with the system's `mpicc`; see docs/tracing.md for why. This
//! crate exposes where that library was built ([`LIBRARY`]) and finds and
//! reads the trace files of a run ([`trace`], with schedgen's liballprof
//! reader) so that tools and tests can check them and compute the traced
//! run time of each rank.

pub mod compare;
pub mod trace;

use std::path::{Path, PathBuf};

/// Path of the built tracer (`libmpitracer.so`), or `None` when no MPI C
/// compiler was found at build time (the build prints a warning then).
pub const LIBRARY: Option<&str> = option_env!("MPI_TRACER_LIB");

/// Environment variable naming the directory the tracer writes to (the
/// current directory if unset). `LIBALLPROF_DIR` is accepted as a fallback.
pub const TRACE_DIR_ENV: &str = "PMPI_TRACE_DIR";

/// The library path, or an error that says how to get it built.
pub fn library() -> Result<PathBuf, NotBuilt> {
    match LIBRARY {
        Some(p) if Path::new(p).is_file() => Ok(PathBuf::from(p)),
        Some(p) => Err(NotBuilt(format!(
            "the tracer library {p} no longer exists; rebuild with `cargo build -p mpi-tracer`"
        ))),
        None => Err(NotBuilt(
            "the MPI tracer was not built because no MPI C compiler (mpicc) was found at build \
             time; install Open MPI (scripts/install-mpi) and rebuild"
                .into(),
        )),
    }
}

/// The tracer library is not available.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct NotBuilt(String);

/// File name the tracer uses for `rank` (no zero padding, as the translator
/// expects: it derives rank h's name from rank 0's by replacing `-0`).
pub fn trace_file_name(rank: usize) -> String {
    format!("pmpi-trace-rank-{rank}.txt")
}
