//! Trace translation against the thesis's data (../shared/data/thesis) and
//! the example of docs/model/schedgen.md 4.8.

use std::path::PathBuf;

use schedgen::calib::linkmodel::{LinkLayer, LinkModel};
use schedgen::trace::{translate, TraceOptions};

fn data(rel: &str) -> PathBuf {
    PathBuf::from(env!("IBCOSIM_REFERENCE_DATA_DIR"))
        .join("thesis")
        .join(rel)
}

fn thesis_opts() -> TraceOptions {
    TraceOptions {
        timemult: 1_000_000.0,
        raw_tags: true,
        ..Default::default()
    }
}

#[test]
#[cfg_attr(
    not(reference_data),
    ignore = "needs the reference data: the thesis's traces"
)]
fn ltest_is_byte_identical_to_schedgen11_output() {
    let t = translate(&data("ltest/pmpi-trace-rank-0.txt"), &thesis_opts()).unwrap();
    let expected = std::fs::read_to_string(data("ltest/ltest.goal")).unwrap();
    // The thesis file ends without a final newline after the last `}`.
    assert_eq!(t.goal.trim_end(), expected.trim_end());
    assert!(t.warnings.is_empty(), "{:?}", t.warnings);
    assert_eq!(
        t.counts.to_string(),
        "20 sends, 20 recvs, 42 execs, and 80 reqs among 2 hosts written"
    );
}

const EXAMPLE_RANK0: &str = "MPI_Init:-:1000:2000:100
MPI_Send:110:4096:10:11,8,8:1:7:0,0,2:115
MPI_Recv:120:4096:3:1,4,4:1:8:0,0,2:6000:130
MPI_Isend:140:4096:5:13,1,1:1:9:0,0,2:7000:141
MPI_Irecv:142:4096:6:13,1,1:-1:10:0,0,2:7008:143
MPI_Waitall:150:2:7000:8000:170
MPI_Barrier:220:0,0,2:230
MPI_Finalize:400:-
";

fn example_dir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("pmpi-trace-rank-0.txt"), EXAMPLE_RANK0).unwrap();
    let r1 = EXAMPLE_RANK0
        .replace("MPI_Init:-:1000:2000:100", "MPI_Init:-:1000:2000:105")
        .replace(":1:7:0,0,2", ":0:7:0,1,2")
        .replace(":1:8:0,0,2", ":0:8:0,1,2")
        .replace(":1:9:0,0,2", ":0:9:0,1,2")
        .replace(":-1:10:0,0,2", ":-1:10:0,1,2")
        .replace(":0,0,2:230", ":0,1,2:230");
    std::fs::write(dir.path().join("pmpi-trace-rank-1.txt"), r1).unwrap();
    dir
}

#[test]
fn example_of_spec_4_8() {
    let dir = example_dir();
    let t = translate(
        &dir.path().join("pmpi-trace-rank-0.txt"),
        &TraceOptions::default(),
    )
    .unwrap();
    let rank0 = "rank 0 {
l1: send 80b to 1 tag 7
l2: calc 10000
l1 requires l2
l3: recv 12b from 1 tag 8
l4: calc 5000
l3 requires l4
l4 requires l1
l5: send 5b to 1 tag 9
l6: calc 10000
l5 requires l6
l6 requires l3
l7: recv 6b from -1 tag 10
l8: calc 1000
l7 requires l8
l8 irequires l5
l9: calc 0
l9 requires l5
l9 requires l7
l10: calc 7000
l9 requires l10
l10 irequires l7
l11: send 1b to 1 tag 1000000
l12: recv 1b from 1 tag 1000000
l13: calc 0
l13 requires l11
l13 requires l12
l14: calc 50000
l11 requires l14
l12 requires l14
l14 requires l9
l15: calc 170000
l15 requires l13
}
";
    assert!(t.goal.starts_with("num_ranks 2\n\n"));
    assert!(t.goal.contains(rank0), "{}", t.goal);
    // Extrapolation: block 2 talks to 3 and runs a 4-rank barrier.
    let o = TraceOptions {
        extr: 2,
        ..Default::default()
    };
    let t = translate(&dir.path().join("pmpi-trace-rank-0.txt"), &o).unwrap();
    assert!(t.goal.starts_with("num_ranks 4\n"));
    let block2 = t.goal.split("rank 2 {\n").nth(1).unwrap();
    assert!(block2.starts_with("l1: send 80b to 3 tag 7\n"), "{block2}");
    assert!(block2.contains("l7: recv 6b from -1 tag 10\n"));
    assert!(block2.contains(
        "l11: send 1b to 3 tag 1000000\nl12: recv 1b from 1 tag 1000000\nl13: send 1b to 0 tag 1000000\nl13 requires l12\nl14: recv 1b from 0 tag 1000000\n"
    ), "{block2}");
}

#[test]
#[cfg_attr(
    not(reference_data),
    ignore = "needs the reference data: the thesis's traces"
)]
fn reference_tags_fold_the_communicator() {
    // Without --raw-tags, tags follow the reference: maketag(comm, tag).
    let o = TraceOptions {
        timemult: 1_000_000.0,
        ..Default::default()
    };
    let t = translate(&data("ltest/pmpi-trace-rank-0.txt"), &o).unwrap();
    // 6575584 << 24 keeps only 0xE0 in the top byte: 0xE0000000 sign-extended.
    assert!(
        t.goal
            .contains("l1: send 400000b to 1 tag 18446744073172680704\n"),
        "{}",
        &t.goal[..200]
    );
    // The reference's own default timemult (1000) gives nanoseconds.
    let t = translate(
        &data("ltest/pmpi-trace-rank-0.txt"),
        &TraceOptions::default(),
    )
    .unwrap();
    assert!(t.goal.contains("l2: calc 73000\n"));
}

#[test]
#[cfg_attr(
    not(reference_data),
    ignore = "needs the reference data: the thesis's traces"
)]
fn ringtest_translates_and_durations_follow_the_thesis_structure() {
    let first = data("ringtest/pmpi-trace-rank-0.txt");
    let t = translate(&first, &thesis_opts()).unwrap();
    assert!(
        t.goal
            .contains("l1: recv 40b from 1 tag 123\nl2: calc 79000000\nl1 requires l2\n"),
        "{}",
        t.goal
    );
    // Durations method: the structure of ringtest_durations.goal.
    let o = TraceOptions {
        durations: Some(LinkLayer::Analytic(LinkModel::thesis_ddr())),
        ..thesis_opts()
    };
    let t = translate(&first, &o).unwrap();
    let rank0 = t.goal.split("rank 1 {").next().unwrap();
    let expected_rank0 = "rank 0 {
l1: recv 40b from 1 tag 123
l2: calc 79000000
l1 requires l2
l3: calc 33968500
l1 requires l3
l3 requires l2
l4: send 40b to 1 tag 123
l5: calc 13000000
l4 requires l5
l5 irequires l1
l6: calc 19000000
l4 requires l6
l6 requires l5
l7: calc 17000000
l7 requires l1
l8: calc 13000000
l7 requires l8
l8 requires l4
l9: send 4b to 1 tag 1000000
l10: recv 4b from 1 tag 1000000
l11: calc 42987400
l11 requires l9
l11 requires l10
l12: calc 13000000
l9 requires l12
l10 requires l12
l12 requires l7
l13: calc 6490000000
l13 requires l11
}
";
    assert!(rank0.contains(expected_rank0), "{rank0}");
    // Same statements as the thesis's file; only three rank-0 calc values
    // differ (the thesis notes its printed values do not follow its text).
    let thesis = std::fs::read_to_string(data("ringtest/ringtest_durations.goal")).unwrap();
    let ours: Vec<&str> = t.goal.lines().collect();
    let theirs: Vec<&str> = thesis.lines().collect();
    assert_eq!(ours.len(), theirs.len());
    let diffs: Vec<(&str, &str)> = ours
        .iter()
        .zip(&theirs)
        .filter(|(a, b)| a != b)
        .map(|(a, b)| (*a, *b))
        .collect();
    assert_eq!(
        diffs,
        vec![
            ("l3: calc 33968500", "l3: calc 33967818"),
            ("l6: calc 19000000", "l6: calc 18970000"),
            ("l11: calc 42987400", "l11: calc 42975291"),
            ("l3: calc 34968500", "l3: calc 34967818"),
            ("l6: calc 19000000", "l6: calc 18970000"),
            ("l11: calc 77987400", "l11: calc 77975291"),
        ]
    );
}

#[test]
#[cfg_attr(
    not(reference_data),
    ignore = "needs the reference data: the thesis's traces"
)]
fn sync_collectives_use_the_common_clock() {
    // ringtest on rank 0's clock (rank 1's `# clockdiff: 801.086426`, in
    // microseconds, added to rank 1's times): rank 1 leaves MPI_Init at
    // 1306395099521319 + 801.086426, 39.913574 us before rank 0
    // (...522160), so rank 0 starts with a 39.913574 us calc. Allreduce
    // entries: rank 0 at ...522348, rank 1 at ...521517 + 801.086426 =
    // ...522318.086426, so rank 1 (not rank 0, as the entry times relative
    // to each rank's own MPI_Init return of thesis 5.4.1 would say) waits
    // 29.913574 us, taken out of its 78 us - 12,600 ps link time.
    let o = TraceOptions {
        durations: Some(LinkLayer::Analytic(LinkModel::thesis_ddr())),
        sync_collectives: true,
        ..thesis_opts()
    };
    let t = translate(&data("ringtest/pmpi-trace-rank-0.txt"), &o).unwrap();
    assert!(t.warnings.is_empty(), "{:?}", t.warnings);
    let rank0 = t.goal.split("rank 1 {").next().unwrap();
    assert!(
        rank0.contains("rank 0 {\nl1: calc 39913574\nl2: recv 40b from 1 tag 123\nl3: calc 79000000\nl2 requires l3\nl3 requires l1\n"),
        "{rank0}"
    );
    // Rank 0 enters last: no delay, its whole duration stays.
    assert!(rank0.contains("l12: calc 42987400\n"), "{rank0}");
    assert_eq!(rank0.matches(": calc").count(), 10, "{rank0}");
    let rank1 = t.goal.split("rank 1 {").nth(1).unwrap();
    assert!(
        rank1.starts_with("\nl1: recv 40b from 0 tag 123\n"),
        "no start calc for the earliest rank"
    );
    assert!(rank1.contains("l11: calc 48073826\n"), "{rank1}");
    assert!(
        rank1.contains("l13: calc 29913574\nl13 requires l12\nl9 requires l13\nl10 requires l13\n"),
        "{rank1}"
    );
    // Each rank's calcs still add up to its traced run time (+ start skew
    // for rank 0, - link time of the Allreduce's 4-byte send and receive,
    // which the fabric adds back).
    let sum = |r: &str| -> u64 {
        r.lines()
            .filter_map(|l| {
                l.split_once(": calc ")
                    .map(|(_, v)| v.parse::<u64>().unwrap())
            })
            .sum()
    };
    let link = 31_500 + 12_600; // the 40 B Irecv/Recv and the 4 B Allreduce recv
    assert_eq!(sum(rank0) + link, 39_913_574 + 6_721_000_000);
    assert_eq!(sum(rank1) + link, 6_748_000_000);
    assert_eq!(
        schedgen::trace::translate::start_skews_us(&data("ringtest/pmpi-trace-rank-0.txt"))
            .unwrap()
            .iter()
            .map(|s| (s * 1e6).round() as u64)
            .collect::<Vec<_>>(),
        vec![39_913_574, 0]
    );
}

#[test]
fn sync_collectives_read_the_clock_offset_header() {
    let dir = example_dir();
    let r1 = dir.path().join("pmpi-trace-rank-1.txt");
    let text = std::fs::read_to_string(&r1).unwrap();
    // Rank 1's clock runs 20 us ahead: +(-20) us gives rank 0 time, so it
    // left MPI_Init at 85 (< rank 0's 100) and entered the barrier at 200
    // (< 220), and waits 20 us there.
    std::fs::write(
        &r1,
        format!("# clockdiff: -20.000000 s (relative to rank 0)\n{text}"),
    )
    .unwrap();
    std::fs::write(
        dir.path().join("pmpi-trace-rank-0.txt"),
        format!("# clockdiff: 0.000000 s (relative to rank 0)\n{EXAMPLE_RANK0}"),
    )
    .unwrap();
    let first = dir.path().join("pmpi-trace-rank-0.txt");
    let o = TraceOptions {
        sync_collectives: true,
        ..thesis_opts()
    };
    let t = translate(&first, &o).unwrap();
    assert!(t.warnings.is_empty(), "{:?}", t.warnings);
    let rank0 = t.goal.split("rank 1 {").next().unwrap();
    assert!(rank0.contains("rank 0 {\nl1: calc 15000000\n"), "{rank0}");
    let rank1 = t.goal.split("rank 1 {").nth(1).unwrap();
    assert!(rank1.contains(": calc 20000000\n"), "{rank1}");
    assert_eq!(
        schedgen::trace::translate::start_skews_us(&first).unwrap(),
        vec![15.0, 0.0]
    );
    // A malformed offset names file and line; a missing one warns.
    std::fs::write(&r1, format!("# clockdiff: soon s\n{text}")).unwrap();
    let err = translate(&first, &o).unwrap_err().to_string();
    assert!(
        err.contains("pmpi-trace-rank-1.txt:1:") && err.contains("`soon`"),
        "{err}"
    );
    std::fs::write(&r1, &text).unwrap();
    let t = translate(&first, &o).unwrap();
    assert!(
        t.warnings
            .iter()
            .any(|w| w.contains("pmpi-trace-rank-1.txt: no `# clockdiff:`")),
        "{:?}",
        t.warnings
    );
}

#[test]
#[cfg_attr(
    not(reference_data),
    ignore = "needs the reference data: the thesis's traces"
)]
fn pinning_charges_new_buffers_only() {
    let o = TraceOptions {
        pinning: Some(Default::default()),
        ..thesis_opts()
    };
    let t = translate(&data("ltest/pmpi-trace-rank-0.txt"), &o).unwrap();
    // One buffer of 400000 B: one pinning calc of 165.894 + 0.00301695 *
    // 400000 = 1372.674 us, before the first send only.
    assert_eq!(t.goal.matches("calc 1372674000").count(), 2, "one per rank");
    let rank0 = t.goal.split("rank 1 {").next().unwrap();
    assert!(rank0.contains(
        "l2: calc 73000000\nl1 requires l2\nl3: calc 1372674000\nl1 requires l3\nl3 requires l2\n"
    ));
}

#[test]
#[cfg_attr(
    not(reference_data),
    ignore = "needs the reference data: the thesis's traces"
)]
fn colltest_rank0_alone_and_missing_ranks() {
    let first = data("colltest/pmpi-trace-rank-0.txt");
    // Rank 0 alone sends to rank 1, which has no trace. That used
    // to be written (`send 400000b to 1` in a 1-rank schedule) and only
    // failed when simulated; it is an error naming file and line.
    let err = translate(&first, &thesis_opts()).unwrap_err().to_string();
    assert!(
        err.ends_with(
            "colltest/pmpi-trace-rank-0.txt:9: peer 1 is outside 0..0: only 1 trace file(s) \
             were found (the traces of the other ranks are missing; see --require-all)"
        ),
        "{err}"
    );
    // Without the point-to-point part the rank translates on its own.
    let nop2p = TraceOptions {
        nop2p: true,
        ..thesis_opts()
    };
    let t = translate(&first, &nop2p).unwrap();
    assert!(t.goal.starts_with("num_ranks 1\n\nrank 0 {\nl1: calc "));
    assert!(!t.goal.contains("send"));
    let missing = t
        .warnings
        .iter()
        .find(|w| w.contains("missing"))
        .expect("missing-rank warning");
    for r in 1..4 {
        assert!(
            missing.contains(&format!("pmpi-trace-rank-{r}.txt")),
            "{missing}"
        );
    }
    assert!(t
        .warnings
        .iter()
        .any(|w| w.contains(":13: MPI_Barrier over a communicator of size 4 skipped")));
    // 21 barriers + 10 allgathers + 10 allreduces: one detailed line, one summary.
    assert!(t.warnings.iter().any(
        |w| w.ends_with("40 more collective(s) over a communicator of another size than 1 skipped")
    ));
    assert_eq!(t.warnings.len(), 3, "{:?}", t.warnings);
    let o = TraceOptions {
        require_all: true,
        ..thesis_opts()
    };
    let err = translate(&first, &o).unwrap_err().to_string();
    assert!(
        err.contains("describe 4 ranks") && err.contains("pmpi-trace-rank-3.txt"),
        "{err}"
    );
}

#[test]
fn unknown_calls_warn_or_fail_with_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("t-0.txt");
    std::fs::write(
        &f,
        "# header\nMPI_Init:-:1:2:100\nMPI_Waitany:110:1:2:3:120\nMPI_Finalize:130:-\n",
    )
    .unwrap();
    let t = translate(&f, &TraceOptions::default()).unwrap();
    assert_eq!(t.warnings.len(), 1);
    assert!(
        t.warnings[0].ends_with("t-0.txt:3: unknown MPI call `MPI_Waitany` ignored"),
        "{:?}",
        t.warnings
    );
    let err = translate(
        &f,
        &TraceOptions {
            strict: true,
            ..Default::default()
        },
    )
    .unwrap_err()
    .to_string();
    assert!(
        err.ends_with("t-0.txt:3: unknown MPI call `MPI_Waitany` (--strict)"),
        "{err}"
    );
}

#[test]
fn malformed_lines_are_reported() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("t-0.txt");
    std::fs::write(
        &f,
        "MPI_Init:-:1:2:100\nMPI_Send:110:4096:ten:11,8,8:1:7:0,0,2:115\n",
    )
    .unwrap();
    let err = translate(&f, &TraceOptions::default())
        .unwrap_err()
        .to_string();
    assert!(
        err.ends_with("t-0.txt:2: field 3 (count): `ten` is not an integer"),
        "{err}"
    );
    std::fs::write(&f, "MPI_Init:-:1:2:100\nMPI_Send:110:4096\n").unwrap();
    let err = translate(&f, &TraceOptions::default())
        .unwrap_err()
        .to_string();
    assert!(err.contains("t-0.txt:2: field 3 (count) missing"), "{err}");
    let err = translate(&dir.path().join("nope-0.txt"), &TraceOptions::default())
        .unwrap_err()
        .to_string();
    assert!(err.contains("not found"), "{err}");
    let err = translate(&dir.path().join("trace.txt"), &TraceOptions::default())
        .unwrap_err()
        .to_string();
    assert!(err.contains("exactly once"), "{err}");
}

#[test]
fn extension_collectives_are_translated() {
    let dir = tempfile::tempdir().unwrap();
    // Two ranks, Alltoallv with counts (3,5) / (7,9) of 4-byte ints, then a
    // Gatherv to root 1 and a Reduce_scatter with counts (2, 6).
    for r in 0..2 {
        let (c0, c1) = if r == 0 { (3, 5) } else { (7, 9) };
        let text = format!(
            "MPI_Init:-:1:2:100\n\
             MPI_Alltoallv:110:5000:6000:{c0},{c1}:6100:0,0:1,4,4:7000:8000:{c0},{c1}:8100:0,0:1,4,4:3,{r},2:120\n\
             MPI_Gatherv:130:5000:{c0}:1,4,4:7000:8000:3,5:8100:0,3:1,4,4:1:3,{r},2:140\n\
             MPI_Scatterv:142:5000:8000:4,6:8100:0,4:1,4,4:7000:{c0}:1,4,4:0:3,{r},2:145\n\
             MPI_Reduce_scatter:150:5000:7000:8000:2,6:1,8,8:3:3,{r},2:160\n\
             MPI_Finalize:170:-\n"
        );
        std::fs::write(dir.path().join(format!("p-{r}.txt")), text).unwrap();
    }
    let o = TraceOptions {
        raw_tags: true,
        ..Default::default()
    };
    let t = translate(&dir.path().join("p-0.txt"), &o).unwrap();
    assert!(t.warnings.is_empty(), "{:?}", t.warnings);
    let rank0 = t.goal.split("rank 1 {").next().unwrap();
    let rank1 = t.goal.split("rank 1 {").nth(1).unwrap();
    // Alltoallv: rank 0 sends scounts[1]*4 = 20 to 1, receives rcounts[1]*4 = 20.
    assert!(
        rank0.contains("l1: send 20b to 1 tag 1000000\nl2: recv 20b from 1 tag 1000000\n"),
        "{rank0}"
    );
    // Gatherv: rank 0 sends its 3 ints to root 1; root receives rcounts[0]*4 = 12.
    assert!(rank0.contains("send 12b to 1 tag 1000001\n"), "{rank0}");
    assert!(rank1.contains("recv 12b from 0 tag 1000001\n"), "{rank1}");
    // Reduce_scatter: block 1 (6 * 8 B) goes to rank 1, rank 0 receives its 2 * 8 B.
    // Scatterv from root 0: rank 0 sends scounts[1]*4 = 24 B, rank 1 receives its 7 ints.
    assert!(rank0.contains("send 24b to 1 tag 1000002\n"), "{rank0}");
    assert!(rank1.contains("recv 28b from 0 tag 1000002\n"), "{rank1}");
    assert!(
        rank0.contains("send 48b to 1 tag 1000003\n")
            && rank0.contains("recv 16b from 1 tag 1000003\n"),
        "{rank0}"
    );
}

#[test]
fn start_file_and_early_stop() {
    let dir = example_dir();
    let start = dir.path().join("start.txt");
    let o = TraceOptions {
        nops: 1,
        start_file: Some(start.clone()),
        ..Default::default()
    };
    let first = dir.path().join("pmpi-trace-rank-0.txt");
    // No start file yet: offsets 0 (the Init line is read twice), stop
    // right after the Barrier, no Finalize gap.
    let t = translate(&first, &o).unwrap();
    let rank0 = t.goal.split("rank 1 {").next().unwrap();
    assert!(rank0.ends_with("l14 requires l9\n}\n\n"), "{rank0}");
    let barrier_end = EXAMPLE_RANK0.find("MPI_Finalize").unwrap();
    assert_eq!(
        std::fs::read_to_string(&start).unwrap(),
        format!("{barrier_end} 230\n{barrier_end} 230\n")
    );
    // Second run continues after the Barrier with t0 = 230.
    let t = translate(&first, &o).unwrap();
    assert!(
        t.goal.contains("rank 0 {\nl1: calc 170000\n}\n"),
        "{}",
        t.goal
    );
    assert_eq!(
        schedgen::trace::translate::fmt_g30(0.1),
        "0.100000000000000005551115123126"
    );
    assert_eq!(
        schedgen::trace::translate::fmt_g30(1302767374561003.0),
        "1302767374561003"
    );
    assert_eq!(
        schedgen::trace::translate::fmt_g30(1e-7),
        "9.99999999999999954748111825886e-08"
    );
}

#[test]
fn nbcify_and_print_comments() {
    let dir = example_dir();
    let first = dir.path().join("pmpi-trace-rank-0.txt");
    let o = TraceOptions {
        nbcify: 5,
        print: true,
        ..Default::default()
    };
    let t = translate(&first, &o).unwrap();
    let rank0 = t.goal.split("rank 1 {").next().unwrap();
    // Barrier: its calc C = l13, then the nbcify calc N <~ C, then the gap
    // from t0 = 170 to the virtual start 215.
    assert!(
        rank0.contains("l13: calc 0\nl13 requires l11\nl13 requires l12\nl14: calc 5\nl14 irequires l13\nl15: calc 45000\n"),
        "{rank0}"
    );
    assert!(rank0.contains("/* Barrier begin */\nl11: send 1b to 1 tag 1000000\n"));
    assert!(rank0.contains("/* Send begin */\nl1: send 80b"));
    assert!(
        !rank0.contains("/* wait */"),
        "Waitall has no comment in the reference list"
    );
}

#[test]
fn negative_gaps_are_errors() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("n-0.txt");
    std::fs::write(
        &f,
        "MPI_Init:-:1:2:100\nMPI_Send:90:4096:1:1,4,4:0:0:0,0,1:95\n",
    )
    .unwrap();
    // (90 - 100) * 1000 = -10000: the reference prints it as unsigned 64-bit,
    // a schedule whose time overflows; we stop with file and line.
    let e = translate(&f, &TraceOptions::default())
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("n-0.txt:2: negative operation time -10000"),
        "{e}"
    );
}

#[test]
fn durations_subtract_multi_flit_link_time() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("d-0.txt");
    // A 2048-byte send lasting 10 us: 33 flits, link time 32 x 32 ns = 1024 ns.
    std::fs::write(
        &f,
        "MPI_Init:-:1:2:100\nMPI_Send:110:4096:512:1,4,4:0:0:0,0,1:120\nMPI_Finalize:130:-\n",
    )
    .unwrap();
    let o = TraceOptions {
        durations: Some(LinkLayer::Analytic(LinkModel::thesis_ddr())),
        timemult: 1e6,
        ..Default::default()
    };
    let t = translate(&f, &o).unwrap();
    assert!(
        t.goal
            .contains("l3: calc 8976000\nl1 requires l3\nl3 requires l2\n"),
        "{}",
        t.goal
    );
}

#[test]
#[cfg_attr(
    not(reference_data),
    ignore = "needs the reference data: the thesis's traces"
)]
fn link_model_none_keeps_whole_durations() {
    // ltest's first MPI_Send of rank 0 lasts 1635 us (554038 -> 555673):
    // thesis-ddr takes the 400,000-byte send's wire time off, none does not.
    let with = |link| TraceOptions {
        durations: Some(link),
        ..thesis_opts()
    };
    let ddr = translate(
        &data("ltest/pmpi-trace-rank-0.txt"),
        &with(LinkLayer::Analytic(LinkModel::thesis_ddr())),
    )
    .unwrap();
    let none = translate(&data("ltest/pmpi-trace-rank-0.txt"), &with(LinkLayer::None)).unwrap();
    let send_ps = LinkModel::thesis_ddr().send_time_ps(400_000);
    assert!(
        none.goal.contains("l3: calc 1635000000\nl1 requires l3\n"),
        "{}",
        none.goal
    );
    assert!(
        ddr.goal.contains(&format!(
            "l3: calc {}\nl1 requires l3\n",
            1_635_000_000 - send_ps
        )),
        "{}",
        ddr.goal
    );
}

#[test]
#[cfg_attr(
    not(reference_data),
    ignore = "needs the reference data: the thesis's traces"
)]
fn sync_p2p_places_blocking_pairs_where_the_calls_overlap() {
    // ltest on rank 0's clock (rank 1: + -289.201736 us), relative to rank
    // 0's MPI_Init return (...553965): rank 1 starts at -51.201736, so rank
    // 0 gets a 51.201736 us start calc. First pair: rank 0's Send 73 ->
    // 1708, rank 1's Recv 554273 - 553965 - 289.201736 = 18.798264 ->
    // 1705.798264. Both operations go to max(73, 18.798264) = 73: the Send
    // splits into 0 + 1635 us, the Recv into 54.201736 + 1632.798264 us.
    let o = TraceOptions {
        durations: Some(LinkLayer::None),
        sync_p2p: true,
        ..thesis_opts()
    };
    let t = translate(&data("ltest/pmpi-trace-rank-0.txt"), &o).unwrap();
    let rank0 = t.goal.split("rank 1 {").next().unwrap();
    assert!(
        rank0.contains(
            "l1: calc 51201736\nl2: send 400000b to 1 tag 0\nl3: calc 73000000\nl2 requires l3\n\
             l3 requires l1\nl4: calc 0\nl2 requires l4\nl4 requires l3\nl5: calc 1635000000\n\
             l5 requires l2\nl6: recv 400000b from 1 tag 0\nl7: calc 15000000\nl6 requires l7\n\
             l7 requires l5\n"
        ),
        "{rank0}"
    );
    let rank1 = t.goal.split("rank 1 {").nth(1).unwrap();
    assert!(
        rank1.contains(
            "l3: calc 54201736\nl1 requires l3\nl3 requires l2\nl4: calc 1632798264\nl4 requires l1\n"
        ),
        "{rank1}"
    );
    // No collectives are delayed without --sync-collectives, and every
    // rank's calcs add up to its run time (+ start skew).
    let sum = |r: &str| -> u64 {
        r.lines()
            .filter_map(|l| {
                l.split_once(": calc ")
                    .map(|(_, v)| v.parse::<u64>().unwrap())
            })
            .sum()
    };
    let run = |f: &str| {
        let text = std::fs::read_to_string(data(f)).unwrap();
        let init: u64 = text
            .lines()
            .find(|l| l.starts_with("MPI_Init"))
            .unwrap()
            .rsplit(':')
            .next()
            .unwrap()
            .parse()
            .unwrap();
        let fin: u64 = text
            .lines()
            .find(|l| l.starts_with("MPI_Finalize"))
            .unwrap()
            .split(':')
            .nth(1)
            .unwrap()
            .parse()
            .unwrap();
        (fin - init) * 1_000_000
    };
    assert_eq!(sum(rank0), run("ltest/pmpi-trace-rank-0.txt") + 51_201_736);
    assert_eq!(sum(rank1), run("ltest/pmpi-trace-rank-1.txt"));
}

#[test]
fn sync_p2p_leaves_wildcard_receivers_alone() {
    // Rank 0 receives 110 -> 150, rank 1 sends 130 -> 160 (same clock, same
    // start): both operations go to 130, the Recv splits into 20 + 20 us,
    // the Send into 0 + 30 us.
    let dir = tempfile::tempdir().unwrap();
    let r0 = dir.path().join("pmpi-trace-rank-0.txt");
    let r1 = dir.path().join("pmpi-trace-rank-1.txt");
    let recv = "MPI_Recv:110:4096:1:1,4,4:1:5:0,0,2:6000:150\n";
    let fin = "MPI_Finalize:200:-\n";
    std::fs::write(&r0, format!("MPI_Init:-:1:2:100\n{recv}{fin}")).unwrap();
    std::fs::write(
        &r1,
        format!("MPI_Init:-:1:2:100\nMPI_Send:130:4096:1:1,4,4:0:5:0,1,2:160\n{fin}"),
    )
    .unwrap();
    let o = TraceOptions {
        durations: Some(LinkLayer::None),
        sync_p2p: true,
        ..thesis_opts()
    };
    let t = translate(&r0, &o).unwrap();
    assert_eq!(
        t.goal,
        "num_ranks 2\n\nrank 0 {\nl1: recv 4b from 1 tag 5\nl2: calc 10000000\nl1 requires l2\n\
         l3: calc 20000000\nl1 requires l3\nl3 requires l2\nl4: calc 20000000\nl4 requires l1\n\
         l5: calc 50000000\nl5 requires l4\n}\n\nrank 1 {\nl1: send 4b to 0 tag 5\n\
         l2: calc 30000000\nl1 requires l2\nl3: calc 0\nl1 requires l3\nl3 requires l2\n\
         l4: calc 30000000\nl4 requires l1\nl5: calc 40000000\nl5 requires l4\n}\n"
    );
    // A wildcard receive (source -1) on rank 0 makes its channel order
    // unknown: its blocking Recv keeps its whole 40 us before the operation.
    let irecv = "MPI_Irecv:102:4096:1:1,4,4:-1:6:0,0,2:7000:103\n";
    std::fs::write(&r0, format!("MPI_Init:-:1:2:100\n{irecv}{recv}{fin}")).unwrap();
    let t = translate(&r0, &o).unwrap();
    let rank0 = t.goal.split("rank 1 {").next().unwrap();
    assert!(rank0.contains(": calc 40000000\n"), "{rank0}");
    assert!(!rank0.contains(": calc 20000000\n"), "{rank0}");
}

/// A work directory whose path contains `-0` (e.g. `run-0/`) must
/// not confuse the trace naming: only the file name's `-0` is replaced.
#[test]
fn trace_names_replace_the_file_names_rank_only() {
    use schedgen::trace::trace_file_names;
    let p = std::path::Path::new("/tmp/run-0/job-00/pmpi-trace-rank-0.txt");
    assert_eq!(
        trace_file_names(p, 3).unwrap(),
        PathBuf::from("/tmp/run-0/job-00/pmpi-trace-rank-3.txt")
    );
    assert_eq!(
        trace_file_names(std::path::Path::new("t-0.txt"), 12).unwrap(),
        PathBuf::from("t-12.txt")
    );
    let err = trace_file_names(std::path::Path::new("/x-0/trace.txt"), 1)
        .unwrap_err()
        .to_string();
    assert!(err.contains("exactly once (found 0)"), "{err}");
    // and a whole translation from such a directory works
    let ex = example_dir();
    let sub = ex.path().join("work-0");
    std::fs::create_dir(&sub).unwrap();
    for r in 0..2 {
        let n = format!("pmpi-trace-rank-{r}.txt");
        std::fs::copy(ex.path().join(&n), sub.join(&n)).unwrap();
    }
    let direct = translate(
        &ex.path().join("pmpi-trace-rank-0.txt"),
        &TraceOptions::default(),
    )
    .unwrap();
    let r = translate(&sub.join("pmpi-trace-rank-0.txt"), &TraceOptions::default());
    assert!(r.is_ok(), "{:?}", r.err());
    assert_eq!(r.unwrap().files.len(), direct.files.len());
}
