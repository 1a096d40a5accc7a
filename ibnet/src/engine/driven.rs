//! What a driver sees of the fabric: injections between runs, runs to the
//! next completion under the deadlock rule, the clock and the messages in
//! flight. The sequential engine ([`Fabric`]) and the parallel one
//! ([`Parallel`], engine/parallel_drive.rs) give the same answers, so a
//! closed-loop traffic pattern (`crate::traffic`) runs on either and
//! gives the same report.

use super::app::MsgId;
use super::fabric::{Fabric, FabricError};
use super::parallel::Parallel;
use super::rdma::OpKind;
use super::run::RunOutcome;
use crate::Time;

/// A fabric that a driver injects into and runs to its completions.
pub trait Driven {
    /// The clock.
    fn now(&self) -> Time;
    /// Events processed, as the sequential engine counts them.
    fn events_processed(&self) -> u64;
    /// Messages injected and not completed.
    fn in_flight(&self) -> usize;
    /// Their numbers.
    fn in_flight_ids(&self) -> Vec<MsgId>;
    /// The fatal error that stopped the run.
    fn error(&self) -> Option<&FabricError>;
    /// The HCA (its number among the HCAs) that has this LID.
    fn hca_of_lid(&self, lid: u16) -> Option<usize>;
    /// As [`Fabric::inject`].
    fn inject(
        &mut self,
        at: Time,
        src_hca: usize,
        dst_hca: usize,
        bytes: u64,
    ) -> Result<MsgId, FabricError>;
    /// As [`Fabric::inject_op`].
    fn inject_op(
        &mut self,
        at: Time,
        src_hca: usize,
        dst_hca: usize,
        bytes: u64,
        kind: OpKind,
    ) -> Result<MsgId, FabricError>;
    /// As [`Fabric::run_until_completion_or`].
    fn run_until_completion_or(&mut self, limit: Time) -> RunOutcome;
}

/// `Driven` by the engine's own methods of the same names.
macro_rules! driven_by_own_methods {
    ($engine:ty) => {
        impl Driven for $engine {
            fn now(&self) -> Time {
                <$engine>::now(self)
            }
            fn events_processed(&self) -> u64 {
                <$engine>::events_processed(self)
            }
            fn in_flight(&self) -> usize {
                <$engine>::in_flight(self)
            }
            fn in_flight_ids(&self) -> Vec<MsgId> {
                <$engine>::in_flight_ids(self)
            }
            fn error(&self) -> Option<&FabricError> {
                <$engine>::error(self)
            }
            fn hca_of_lid(&self, lid: u16) -> Option<usize> {
                <$engine>::hca_of_lid(self, lid)
            }
            fn inject(
                &mut self,
                at: Time,
                src_hca: usize,
                dst_hca: usize,
                bytes: u64,
            ) -> Result<MsgId, FabricError> {
                <$engine>::inject(self, at, src_hca, dst_hca, bytes)
            }
            fn inject_op(
                &mut self,
                at: Time,
                src_hca: usize,
                dst_hca: usize,
                bytes: u64,
                kind: OpKind,
            ) -> Result<MsgId, FabricError> {
                <$engine>::inject_op(self, at, src_hca, dst_hca, bytes, kind)
            }
            fn run_until_completion_or(&mut self, limit: Time) -> RunOutcome {
                <$engine>::run_until_completion_or(self, limit)
            }
        }
    };
}

driven_by_own_methods!(Fabric);
driven_by_own_methods!(Parallel);
