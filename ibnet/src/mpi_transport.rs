//! The [`Transport`] of a distributed run over MPI (cargo feature `mpi`,
//! Open MPI through the `mpi` crate): `mpirun -n K ibnet run ...
//! --distributed` runs the fabric's K logical processes as K ranks
//! (engine/distributed.rs). MPI launches the ranks, moves the bytes and
//! ends every rank when one dies; the engine's protocol does the
//! synchronisation.
//!
//! A round is one message to and from every other rank, each received at
//! the size it has (a probe, then the receive). The end is a gather of
//! the counts, then a gather-v of the bytes, at rank 0.

use mpi::datatype::PartitionMut;
use mpi::topology::{Communicator, SimpleCommunicator};
use mpi::traits::*;
use mpi::Count;

use crate::engine::Transport;

/// MPI's world, once initialised (at most once per program).
pub struct Mpi {
    _universe: mpi::environment::Universe,
    world: SimpleCommunicator,
}

impl Mpi {
    /// Initialise MPI; an error if it was initialised before.
    pub fn init() -> Result<Mpi, String> {
        let universe =
            mpi::initialize().ok_or_else(|| "MPI was initialised already".to_string())?;
        let world = universe.world();
        Ok(Mpi {
            _universe: universe,
            world,
        })
    }

    /// Abort every rank (after an error in this one that the others
    /// cannot learn from the protocol).
    pub fn abort(&self, code: i32) -> ! {
        self.world.abort(code)
    }
}

/// Byte counts and their offsets, as MPI's counts.
fn layout(lens: impl Iterator<Item = usize>) -> Result<(Vec<Count>, Vec<Count>), String> {
    let (mut counts, mut displs, mut at) = (Vec::new(), Vec::new(), 0usize);
    for len in lens {
        let c = Count::try_from(len)
            .map_err(|_| format!("a message of {len} bytes is too long for MPI"))?;
        counts.push(c);
        displs.push(Count::try_from(at).map_err(|_| "a round of more than 2 GiB".to_string())?);
        at += len;
    }
    Ok((counts, displs))
}

/// Cut `buf` into the pieces of `counts`.
fn split(buf: &[u8], counts: &[Count]) -> Vec<Vec<u8>> {
    let mut at = 0usize;
    counts
        .iter()
        .map(|&c| {
            let v = buf[at..at + c as usize].to_vec();
            at += c as usize;
            v
        })
        .collect()
}

impl Transport for Mpi {
    fn rank(&self) -> usize {
        self.world.rank() as usize
    }

    fn size(&self) -> usize {
        self.world.size() as usize
    }

    fn exchange(&mut self, out: Vec<Vec<u8>>) -> Result<Vec<Vec<u8>>, String> {
        let n = out.len();
        let me = self.world.rank() as usize;
        let mut got = vec![Vec::new(); n];
        // One message to and from every other rank: sent without waiting,
        // then each received at the size it has (MPI keeps the order of
        // the messages between two ranks, so rounds do not mix).
        mpi::request::scope(|scope| {
            let sends: Vec<_> = (0..n)
                .filter(|&k| k != me)
                .map(|k| {
                    self.world
                        .process_at_rank(k as i32)
                        .immediate_send(scope, &out[k][..])
                })
                .collect();
            for (k, slot) in got.iter_mut().enumerate() {
                if k != me {
                    let probed = self.world.process_at_rank(k as i32).matched_probe();
                    *slot = probed.matched_receive_vec::<u8>().0;
                }
            }
            for s in sends {
                s.wait();
            }
        });
        Ok(got)
    }

    fn gather(&mut self, mine: Vec<u8>) -> Result<Option<Vec<Vec<u8>>>, String> {
        let root = self.world.process_at_rank(0);
        let len = Count::try_from(mine.len())
            .map_err(|_| format!("results of {} bytes are too long for MPI", mine.len()))?;
        if self.world.rank() != 0 {
            root.gather_into(&len);
            root.gather_varcount_into(&mine[..]);
            return Ok(None);
        }
        let mut counts = vec![0 as Count; self.world.size() as usize];
        root.gather_into_root(&len, &mut counts[..]);
        let total: usize = counts.iter().map(|&c| c as usize).sum();
        let (_, displs) = layout(counts.iter().map(|&c| c as usize))?;
        let mut all = vec![0u8; total + 1];
        {
            let mut rp = PartitionMut::new(&mut all[..], &counts[..], &displs[..]);
            root.gather_varcount_into_root(&mine[..], &mut rp);
        }
        Ok(Some(split(&all, &counts)))
    }
}
