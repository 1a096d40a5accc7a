//! Rules over the test sources themselves.

use crate::util::{repo_root, run, stdout};

/// `scripts/test` runs no ignored test: a test is ignored only under a
/// condition that says why it cannot run here (`cfg_attr(not(reference_data),
/// ...)` when the reference data is absent, `cfg_attr(not(optimized), ...)`
/// in an unoptimised build; refdata/src/lib.rs). A bare `#[ignore]` would
/// be skipped by every run, CI's included, without anyone noticing.
#[test]
fn no_test_is_ignored_unconditionally() {
    let out = run(std::process::Command::new("git")
        .arg("-C")
        .arg(repo_root())
        .args(["grep", "-n", "-E", r"^\s*#\[ignore", "--", "*.rs"]));
    // git grep exits 1 when nothing matches
    assert!(
        out.status.code() == Some(1) || out.status.code() == Some(0),
        "git grep failed: {out:?}"
    );
    let hits = stdout(&out);
    assert!(
        hits.trim().is_empty(),
        "tests ignored unconditionally (use cfg_attr with a reason, see refdata/src/lib.rs):\n{hits}"
    );
}
