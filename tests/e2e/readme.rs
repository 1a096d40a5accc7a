//! The README's commands, run as written on a fresh copy of the repository.
//!
//! Every line of every ```sh block of README.md is a command a user may
//! paste; the tests below take them out of the README and run them in
//! order, block by block, from the root of a copy of the repository that
//! has no `../shared` beside it and no `target/`. Each must exit 0. The
//! only substitution: `B=target/release` points at the binaries under test
//! (the same code, built in the test profile), and scripts find them through
//! `IBCOSIM_BIN_DIR`.
//!
//! Commands whose comment says `needs ../shared` read the reference data:
//! they run in their own test, which is skipped (reported as ignored) when
//! the data is absent. A few commands are not run here, for a stated reason
//! (see [`NOT_RUN_HERE`]).

use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use crate::util::{bin, ipc_lock, reference_data_dir, repo_copy, repo_root, run_with_timeout};

/// Marks a README command that reads the reference data.
const NEEDS_DATA: &str = "# needs ../shared";

/// Commands the README shows that these tests do not run, and why.
const NOT_RUN_HERE: &[(&str, &str)] = &[
    ("scripts/test", "it is the command that runs these tests"),
    (
        "scripts/install-deps",
        "scripts/test runs it before the tests",
    ),
    (
        "cargo build --release",
        "the tests run the same code built in the test profile",
    ),
    (
        "mpirun",
        "it needs an ibnet built with the feature mpi: ibnet/tests/distributed.rs runs it",
    ),
];

/// One command of the README: its text (continuation lines joined) and the
/// line of the README where it starts.
#[derive(Debug, Clone)]
struct ReadmeCommand {
    line: usize,
    text: String,
}

/// The commands of README.md's ```sh blocks, a block per vector.
fn readme_blocks(readme: &str) -> Vec<Vec<ReadmeCommand>> {
    let mut blocks = Vec::new();
    let mut current: Option<Vec<ReadmeCommand>> = None;
    let mut pending: Option<ReadmeCommand> = None;
    for (i, raw) in readme.lines().enumerate() {
        let trimmed = raw.trim_end();
        if current.is_none() {
            if trimmed == "```sh" {
                current = Some(Vec::new());
            }
            continue;
        }
        if trimmed == "```" {
            assert!(
                pending.is_none(),
                "README.md:{}: a command ends in '\\'",
                i + 1
            );
            blocks.push(current.take().unwrap());
            continue;
        }
        let mut cmd = pending.take().unwrap_or(ReadmeCommand {
            line: i + 1,
            text: String::new(),
        });
        if let Some(head) = trimmed.strip_suffix('\\') {
            cmd.text.push_str(head);
            cmd.text.push(' ');
            pending = Some(cmd);
            continue;
        }
        cmd.text.push_str(trimmed);
        let t = cmd.text.trim();
        if !t.is_empty() && !t.starts_with('#') {
            current.as_mut().unwrap().push(cmd);
        }
    }
    assert!(current.is_none(), "README.md: a ```sh block is not closed");
    blocks
}

/// Why a command is not run here, when it is one of [`NOT_RUN_HERE`]
/// (possibly after environment assignments: `X=1 scripts/test`).
fn not_run_reason(cmd: &str) -> Option<&'static str> {
    NOT_RUN_HERE
        .iter()
        .find(|(prefix, _)| cmd.starts_with(prefix) || cmd.contains(&format!(" {prefix}")))
        .map(|(_, why)| *why)
}

/// The README's `B=...` line: the directory of the binaries.
fn is_bin_dir_assignment(cmd: &str) -> bool {
    cmd.starts_with("B=")
}

/// Runs the README's commands in a fresh copy: those that need the
/// reference data when `with_data`, the others otherwise. Returns how many
/// ran.
fn run_readme_commands(with_data: bool) -> usize {
    let readme = std::fs::read_to_string(repo_root().join("README.md")).unwrap();
    let blocks = readme_blocks(&readme);
    assert!(
        blocks.len() >= 3,
        "README.md has {} sh blocks",
        blocks.len()
    );

    let copy = repo_copy();
    let root = copy.path().join("repo");
    if with_data {
        // configs/topologies/ibmodel-32n.toml names ../shared/data relative
        // to the repository, as on a checkout with the data beside it.
        std::fs::create_dir_all(copy.path().join("shared")).unwrap();
        std::os::unix::fs::symlink(reference_data_dir(), copy.path().join("shared/data")).unwrap();
    }
    let bindir: PathBuf = bin("loggopsim").parent().unwrap().to_path_buf();
    for b in ["ibnet", "ipc-proto", "cosim", "mpi-tracer", "study"] {
        bin(b);
    }
    let _ipc = ipc_lock();
    let _mpi = crate::tracer::MPI_RUNS
        .lock()
        .unwrap_or_else(|e| e.into_inner());

    let mut ran = 0;
    for block in &blocks {
        for cmd in block {
            let text = cmd.text.trim();
            if is_bin_dir_assignment(text) {
                continue; // B is the binaries under test (set below)
            }
            if let Some(why) = not_run_reason(text) {
                eprintln!("README.md:{}: not run here ({why}): {text}", cmd.line);
                continue;
            }
            if text.contains(NEEDS_DATA) != with_data {
                continue;
            }
            eprintln!("README.md:{}: {text}", cmd.line);
            let out = run_with_timeout(
                Command::new("bash")
                    .args(["-c", text])
                    .current_dir(&root)
                    .env("B", &bindir)
                    .env("IBCOSIM_BIN_DIR", &bindir),
                Duration::from_secs(300),
            );
            assert!(
                out.status.success(),
                "README.md:{}: `{text}` exited with {:?}\nstdout:\n{}\nstderr:\n{}",
                cmd.line,
                out.status.code(),
                tail(&out.stdout),
                tail(&out.stderr)
            );
            ran += 1;
        }
    }
    ran
}

/// The last lines of an output, for failure messages.
fn tail(bytes: &[u8]) -> String {
    let text = String::from_utf8_lossy(bytes);
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(30)..].join("\n")
}

#[test]
fn readme_commands_run_as_written_on_a_fresh_clone() {
    let ran = run_readme_commands(false);
    // The quick start, the build's install-deps, the tools, the studies.
    assert!(ran >= 20, "only {ran} README commands ran");
}

#[test]
#[cfg_attr(
    not(reference_data),
    ignore = "needs the reference data: the README's commands marked `needs ../shared`"
)]
fn readme_commands_that_need_the_reference_data_run() {
    let ran = run_readme_commands(true);
    assert!(ran >= 1, "no README command is marked '{NEEDS_DATA}'");
}

#[test]
fn readme_commands_are_extracted_with_their_lines() {
    let text = "intro\n```sh\nB=target/release\n# a comment\n$B/ibnet run \\\n    --until 1us   # x\n```\n```\nnot sh\n```\n```sh\nscripts/test -p ibnet\n```\n";
    let blocks = readme_blocks(text);
    assert_eq!(blocks.len(), 2);
    let texts: Vec<(usize, &str)> = blocks[0]
        .iter()
        .map(|c| (c.line, c.text.as_str()))
        .collect();
    assert_eq!(
        texts,
        vec![
            (3, "B=target/release"),
            (5, "$B/ibnet run      --until 1us   # x")
        ]
    );
    assert_eq!(blocks[1][0].line, 12);
    assert_eq!(
        not_run_reason(&blocks[1][0].text),
        Some("it is the command that runs these tests")
    );
    assert_eq!(
        not_run_reason("IBCOSIM_NO_INSTALL=1 scripts/test"),
        Some("it is the command that runs these tests")
    );
    assert_eq!(not_run_reason("scripts/cosim -f app.goal"), None);
    assert!(is_bin_dir_assignment("B=target/release"));
    assert!(!is_bin_dir_assignment("$B/ibnet run"));
}
