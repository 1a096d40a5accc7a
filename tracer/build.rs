//! Builds the PMPI tracer (c/liballprof.c) into a shared library with the
//! system's MPI compiler wrapper. Without an MPI compiler the tracer is
//! skipped with a warning and the rest of the workspace still builds; the
//! library path is then absent (`mpi_tracer::LIBRARY` is `None`).
//!
//! The compiler is `$MPICC` if set, else the first `mpicc` on `PATH`.

use std::env;
use std::path::PathBuf;
use std::process::Command;

const SOURCES: &[&str] = &["c/liballprof.c"];
const LIB_NAME: &str = "libmpitracer.so";

fn find_in_path(name: &str) -> Option<PathBuf> {
    let path = env::var_os("PATH")?;
    env::split_paths(&path)
        .map(|dir| dir.join(name))
        .find(|p| p.is_file())
}

fn main() {
    // whether the reference data is there, for the tests (refdata/src/lib.rs)
    refdata::configure();
    for src in SOURCES {
        println!("cargo:rerun-if-changed={src}");
    }
    println!("cargo:rerun-if-env-changed=MPICC");

    let mpicc = match env::var_os("MPICC") {
        Some(cc) if !cc.is_empty() => Some(PathBuf::from(cc)),
        _ => find_in_path("mpicc"),
    };
    let Some(mpicc) = mpicc else {
        println!(
            "cargo:warning=mpi-tracer: no MPI C compiler (mpicc) found; the PMPI tracer is \
             NOT built (install Open MPI with scripts/install-mpi, or set MPICC)"
        );
        // Re-run on every build until MPI appears: a path that never exists
        // keeps this script stale (watching /usr/bin/mpicc is not enough: a
        // package installs it with its build date, older than this run, so
        // cargo would call the old result fresh). Finding no mpicc is cheap.
        let out_dir = PathBuf::from(env::var_os("OUT_DIR").expect("OUT_DIR is set by cargo"));
        println!(
            "cargo:rerun-if-changed={}",
            out_dir.join("rerun-until-mpicc-is-found").display()
        );
        return;
    };
    println!("cargo:rerun-if-changed={}", mpicc.display());

    let out_dir = PathBuf::from(env::var_os("OUT_DIR").expect("OUT_DIR is set by cargo"));
    let lib = out_dir.join(LIB_NAME);
    let manifest = PathBuf::from(env::var_os("CARGO_MANIFEST_DIR").expect("CARGO_MANIFEST_DIR"));
    let mut cmd = Command::new(&mpicc);
    cmd.args([
        "-shared", "-fPIC", "-O2", "-g", "-Wall", "-Wextra", "-pthread", "-o",
    ])
    .arg(&lib)
    .args(SOURCES.iter().map(|s| manifest.join(s)));
    match cmd.status() {
        Ok(status) if status.success() => {
            println!("cargo:rustc-env=MPI_TRACER_LIB={}", lib.display());
        }
        Ok(status) => panic!(
            "mpi-tracer: `{}` failed ({status}) compiling {}; fix the C source or unset MPICC",
            mpicc.display(),
            SOURCES.join(" ")
        ),
        Err(e) => {
            println!(
                "cargo:warning=mpi-tracer: cannot run {} ({e}); the PMPI tracer is NOT built",
                mpicc.display()
            );
        }
    }
}
