//! The thesis's calibration methods (chapter 5), see docs/calibration.md:
//! memory pinning ([`pinning`]), processing overheads ([`overheads`]), MPI
//! call durations minus link-layer time ([`linkmodel`]); synchronised
//! collectives live in the translator (`trace::translate`).
pub mod linkmodel;
pub mod overheads;
pub mod pinning;
