//! The trace files of a traced run: which files make up the run
//! ([`rank_files`]) and all of them read ([`read_run`]). A file is read by
//! the workspace's one liballprof reader, `schedgen::trace::reader`
//! ([`Trace`]: checked call records, run time, call counts, clock offsets),
//! which the translator (`loggopsim trace2goal`) takes its lines from too.

use std::path::{Path, PathBuf};

pub use schedgen::trace::reader::{Record, Trace, TraceError};

/// The trace files of a run: `dir/pmpi-trace-rank-0.txt`, `-1`, ... for as
/// long as consecutive files exist. Errors if there is no rank 0 file.
pub fn rank_files(dir: &Path) -> Result<Vec<PathBuf>, TraceError> {
    let mut files = Vec::new();
    loop {
        let p = dir.join(crate::trace_file_name(files.len()));
        if !p.is_file() {
            break;
        }
        files.push(p);
    }
    if files.is_empty() {
        return Err(TraceError::File {
            file: dir.to_path_buf(),
            msg: format!("no {} in this directory", crate::trace_file_name(0)),
        });
    }
    Ok(files)
}

/// Reads every rank's trace in `dir` (see [`rank_files`]).
pub fn read_run(dir: &Path) -> Result<Vec<Trace>, TraceError> {
    rank_files(dir)?.iter().map(|p| Trace::read(p)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn thesis(rel: &str) -> Trace {
        let p = Path::new(env!("IBCOSIM_REFERENCE_DATA_DIR"))
            .join("thesis")
            .join(rel);
        Trace::read(&p).unwrap()
    }

    #[test]
    #[cfg_attr(
        not(reference_data),
        ignore = "needs the reference data: the thesis's traces"
    )]
    fn thesis_traces_parse_with_the_stated_counts_and_run_times() {
        let r0 = thesis("ltest/pmpi-trace-rank-0.txt");
        let r1 = thesis("ltest/pmpi-trace-rank-1.txt");
        for t in [&r0, &r1] {
            assert_eq!(t.count("MPI_Send"), 10);
            assert_eq!(t.count("MPI_Recv"), 10);
            assert_eq!(t.count("MPI_Init"), 1);
            assert_eq!(t.count("MPI_Finalize"), 1);
            assert_eq!(t.records.len(), 24);
        }
        // Thesis 5.2.1: 1302767374567772 - 1302767374553965.
        assert_eq!(r0.run_time_us(), Some(13_807));
        assert_eq!(r1.run_time_us(), Some(13_889));
        assert_eq!(r0.clockdiff_init, Some(0.0));
        assert_eq!(r1.clockdiff_init, Some(-289.201736));
        assert_eq!(r1.clockdiff_finalize, Some(-288.486481));
        let send = &r0.records[3];
        assert_eq!(send.name, "MPI_Send");
        assert_eq!(send.call_us, Some(1302767374554038));
        assert_eq!(send.return_us, 1302767374555673);
        assert_eq!(send.fields[3], "1,4,4");
        let c = thesis("colltest/pmpi-trace-rank-0.txt");
        assert_eq!(c.run_time_us(), Some(32_148));
        assert_eq!(c.count("MPI_Barrier"), 21);
        assert_eq!(c.count("MPI_Allgather"), 10);
        assert_eq!(c.count("MPI_Allreduce"), 10);
        let r = thesis("ringtest/pmpi-trace-rank-0.txt");
        assert_eq!(r.run_time_us(), Some(6_721));
        assert_eq!(
            thesis("ringtest/pmpi-trace-rank-1.txt").clockdiff_init,
            Some(801.086426)
        );
    }

    #[test]
    fn our_own_colltest_traces_parse_with_the_programs_call_counts() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/colltest-np4");
        let run = read_run(&dir).unwrap();
        assert_eq!(run.len(), 4);
        for (rank, t) in run.iter().enumerate() {
            let c = t.counts();
            for (call, n) in [
                ("MPI_Init", 1),
                ("MPI_Comm_rank", 1),
                ("MPI_Comm_size", 1),
                ("MPI_Send", 2),
                ("MPI_Recv", 2),
                ("MPI_Barrier", 21),
                ("MPI_Allgather", 10),
                ("MPI_Allreduce", 10),
                ("MPI_Finalize", 1),
            ] {
                assert_eq!(c.get(call), Some(&n), "rank {rank} {call}");
            }
            assert_eq!(t.records.len(), 49);
            // One machine: rank 0's offset is 0 by definition, the others
            // are within the ping-pong's resolution.
            let off = t.clockdiff_init.unwrap();
            assert!(
                if rank == 0 {
                    off == 0.0
                } else {
                    off.abs() < 5.0
                },
                "{off}"
            );
            assert!(t.clockdiff_finalize.is_some());
            // All ranks leave MPI_Init together (barrier at its end), up to
            // a scheduler time slice when 4 ranks share 2 cores.
            let skew = t
                .init_return_us()
                .unwrap()
                .abs_diff(run[0].init_return_us().unwrap());
            assert!(
                skew < 1000,
                "rank {rank}: MPI_Init return {skew} us after rank 0"
            );
        }
    }

    #[test]
    fn rank_files_stops_at_the_first_gap() {
        let dir = std::env::temp_dir().join(format!("mpi-tracer-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        for r in [0, 1, 3] {
            std::fs::write(dir.join(crate::trace_file_name(r)), "MPI_Init:-:1:2:3\n").unwrap();
        }
        let files = rank_files(&dir).unwrap();
        assert_eq!(files.len(), 2);
        assert_eq!(read_run(&dir).unwrap().len(), 2);
        std::fs::remove_dir_all(&dir).unwrap();
        assert!(rank_files(&dir).is_err());
    }
}
