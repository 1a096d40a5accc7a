//! Holder crate for the workspace's end-to-end tests (see `tests/`).
//! It has no code: the tests drive the `loggopsim` and `ibnet` binaries
//! and `scripts/cosim` as a user would.
