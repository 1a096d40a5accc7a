//! `--compute cpu|wall`: the computation between two MPI calls measured in
//! thread CPU time (the tracer's `:cpu=C0:C1` fields) or in wall time.

use schedgen::trace::{translate, Compute, TraceOptions};

fn calcs(goal: &str) -> Vec<u64> {
    goal.lines()
        .filter_map(|l| {
            let t: Vec<&str> = l.split_whitespace().collect();
            (t.len() >= 3 && t[1] == "calc").then(|| t[2].parse().unwrap())
        })
        .collect()
}

fn one_rank(text: &str, compute: Compute) -> Result<(Vec<u64>, Vec<String>), String> {
    let d = tempfile::tempdir().unwrap();
    let f = d.path().join("pmpi-trace-rank-0.txt");
    std::fs::write(&f, text).unwrap();
    let o = TraceOptions {
        timemult: 1000.0,
        compute,
        ..Default::default()
    };
    translate(&f, &o)
        .map(|t| (calcs(&t.goal), t.warnings))
        .map_err(|e| e.to_string())
}

/// A rank that computed 30 us of CPU in a 200 us gap (it waited for a core
/// the rest of the time): cpu gives 30 us, wall 200 us. The Barrier's own
/// `calc 0` and the Finalize gap (CPU 2 us of 50 us) follow.
const WITH_CPU: &str = "# cputime: ...\n\
MPI_Init:-:1:2:100:cpu=1000000:1000000\n\
MPI_Barrier:300:0,0,1:310:cpu=1030000:1031000\n\
MPI_Finalize:360:-:cpu=1033000:-\n";

#[test]
fn cpu_measures_the_burst_cpu_time_and_wall_the_gap() {
    let (cpu, w) = one_rank(WITH_CPU, Compute::Cpu).unwrap();
    assert!(w.is_empty(), "{w:?}");
    assert_eq!(cpu, vec![0, 30_000, 2_000]);
    let (wall, _) = one_rank(WITH_CPU, Compute::Wall).unwrap();
    assert_eq!(wall, vec![0, 200_000, 50_000]);
}

/// The CPU time of a gap is capped at its wall time (the clocks differ in
/// resolution).
#[test]
fn cpu_time_never_exceeds_the_wall_gap() {
    let t = "MPI_Init:-:1:2:100:cpu=0:0\nMPI_Finalize:110:-:cpu=10600:-\n";
    assert_eq!(one_rank(t, Compute::Cpu).unwrap().0, vec![10_000]);
}

/// Traces without CPU times (liballprof's, the thesis's): wall time, with a
/// warning that says so; the schedule equals the wall one.
#[test]
fn old_traces_fall_back_to_wall_with_a_warning() {
    let t = "MPI_Init:-:1:2:100\nMPI_Barrier:300:0,0,1:310\nMPI_Finalize:360:-\n";
    let (cpu, w) = one_rank(t, Compute::Cpu).unwrap();
    assert_eq!(cpu, one_rank(t, Compute::Wall).unwrap().0);
    assert_eq!(w.len(), 1);
    assert!(
        w[0].contains("no CPU times") && w[0].contains("--compute wall"),
        "{w:?}"
    );
}

/// A record without CPU times in a trace that has them, or a malformed
/// value, is an error naming the file and line.
#[test]
fn damaged_cpu_fields_name_file_and_line() {
    let t = "MPI_Init:-:1:2:100:cpu=0:0\nMPI_Barrier:300:0,0,1:310\nMPI_Finalize:360:-:cpu=9:-\n";
    let e = one_rank(t, Compute::Cpu).unwrap_err();
    assert!(
        e.contains("pmpi-trace-rank-0.txt:2:") && e.contains("no `:cpu=` fields"),
        "{e}"
    );
    let t = "MPI_Init:-:1:2:100:cpu=0:0\nMPI_Finalize:360:-:cpu=12a:-\n";
    let e = one_rank(t, Compute::Cpu).unwrap_err();
    assert!(e.contains(":2:") && e.contains("not a CPU time"), "{e}");
    // --compute wall does not look at them.
    let t = "MPI_Init:-:1:2:100:cpu=0:0\nMPI_Finalize:360:-:cpu=12a:-\n";
    assert_eq!(one_rank(t, Compute::Wall).unwrap().0, vec![260_000]);
}
