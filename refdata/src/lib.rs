//! Where the reference data lives, decided once at build time.
//!
//! Some tests compare against data that is not part of the repository: the
//! reference IB model's networks and the thesis's traces and programs
//! (GPL or third-party material, read in place, never copied). It lives in
//! `../shared/data` beside the checkout, or wherever the environment
//! variable `IBCOSIM_REFERENCE_DATA` points. A plain clone has none of it.
//!
//! A crate whose tests need it calls [`configure`] from its build script.
//! That sets, for every target of the crate:
//! - the cfg `reference_data` when the directory exists, so that a test
//!   needing it is marked
//!   `#[cfg_attr(not(reference_data), ignore = "needs the reference data: ...")]`
//!   and is reported by the test harness as ignored, with that reason,
//!   instead of passing without having run or failing;
//! - the cfg `optimized` when the profile optimises (`--release`, or the
//!   `ci` profile of `scripts/test`), for tests too slow to run unoptimised;
//! - the environment variable `IBCOSIM_REFERENCE_DATA_DIR` (read with
//!   `env!`): the directory's absolute path, also when it is absent, so that
//!   messages can name it.
//!
//! The decision is remade when `IBCOSIM_REFERENCE_DATA` changes (the test
//! command, `scripts/test`, always sets it) or when the directory changes or
//! disappears. A plain `cargo test` that was first built without the data
//! keeps skipping until the variable changes: set
//! `IBCOSIM_REFERENCE_DATA=/path/to/shared/data` once the data is there.

use std::path::{Path, PathBuf};

/// The variable that names the reference data directory; empty or `none`
/// means "there is none" (what `scripts/test` sets on a plain clone).
pub const ENV: &str = "IBCOSIM_REFERENCE_DATA";

/// The default place: `shared/data` beside the workspace's directory.
pub fn default_dir() -> PathBuf {
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the refdata crate lives inside the workspace");
    workspace.join("..").join("shared").join("data")
}

/// Where the reference data is expected: `IBCOSIM_REFERENCE_DATA` when it
/// is set, else [`default_dir`]. `None` when the variable says there is none.
pub fn expected_dir(var: Option<&str>) -> Option<PathBuf> {
    match var {
        Some(v) if v.is_empty() || v == "none" => None,
        Some(v) => Some(PathBuf::from(v)),
        None => Some(default_dir()),
    }
}

/// Emit the cargo directives described in the crate documentation. Call it
/// from a build script.
pub fn configure() {
    println!("cargo:rustc-check-cfg=cfg(reference_data)");
    println!("cargo:rustc-check-cfg=cfg(optimized)");
    println!("cargo:rerun-if-env-changed={ENV}");

    let opt = std::env::var("OPT_LEVEL").unwrap_or_default();
    if opt != "0" {
        println!("cargo:rustc-cfg=optimized");
    }

    let var = std::env::var(ENV).ok();
    let expected = expected_dir(var.as_deref());
    let present = expected.as_deref().filter(|d| d.is_dir());
    match present {
        Some(dir) => {
            let dir = dir.canonicalize().unwrap_or_else(|_| dir.to_path_buf());
            println!("cargo:rustc-cfg=reference_data");
            println!(
                "cargo:rustc-env=IBCOSIM_REFERENCE_DATA_DIR={}",
                dir.display()
            );
            // Rerun when the data changes or goes away (cargo scans the
            // directory's files; it is a few megabytes).
            println!("cargo:rerun-if-changed={}", dir.display());
        }
        None => {
            let named = expected.unwrap_or_else(default_dir);
            println!(
                "cargo:rustc-env=IBCOSIM_REFERENCE_DATA_DIR={}",
                named.display()
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_variable_overrides_the_default_and_can_say_none() {
        assert_eq!(expected_dir(Some("none")), None);
        assert_eq!(expected_dir(Some("")), None);
        assert_eq!(
            expected_dir(Some("/data/ref")),
            Some(PathBuf::from("/data/ref"))
        );
        assert_eq!(expected_dir(None), Some(default_dir()));
        assert!(default_dir().ends_with("shared/data"));
    }
}
