//! The reference's binary schedule layout (docs/model/loggops.md section 3).
//!
//! Little-endian, packed: u64 magic 4223; then, relative to file offset 8
//! ("base"): u32 num_ranks, u8 max_cpu, u8 max_nic, u64 `table[2P]` (rank r's
//! block is `[table[2r], table[2r+1])` relative to base). A rank block: u32
//! num_nodes, u32 num_roots, u32 `roots[num_roots]`, num_nodes records of 39
//! bytes, then the u32 appendix. `deps_index` / `start_deps_index` are
//! element indices into that rank's appendix array (our reading of the
//! layout; the spec only says "starting at deps_index").

use crate::goal::LoadError;
use crate::schedule::{Kind, Op, Schedule, ScheduleBuilder, ANY};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::Path;

pub const MAGIC: u64 = 4223;
/// A schedule with one-sided operations (node types 4 put, 5 get,
/// 6 poll) is written with this magic instead, so the reference simulator
/// (and any reader of the original layout) refuses it instead of
/// misreading it; the layout is otherwise identical. Plain schedules are
/// still written with [`MAGIC`], byte for byte as before.
pub const MAGIC_ONE_SIDED: u64 = 4224;
/// Written by the reference into a file it consumed destructively.
pub const MAGIC_CONSUMED: u64 = 2342;
pub const NODE_BYTES: usize = 39;

fn berr(file: &str, offset: u64, msg: impl Into<String>) -> LoadError {
    LoadError::Binary {
        file: file.to_string(),
        offset,
        msg: msg.into(),
    }
}

struct Cur<'a> {
    b: &'a [u8],
    pos: usize,
    /// file offset of `b[0]`, for messages
    base: u64,
    file: &'a str,
}

impl<'a> Cur<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], LoadError> {
        if self.pos + n > self.b.len() {
            return Err(berr(
                self.file,
                self.base + self.pos as u64,
                "unexpected end of rank block",
            ));
        }
        let s = &self.b[self.pos..self.pos + n];
        self.pos += n;
        Ok(s)
    }
    fn u32(&mut self) -> Result<u32, LoadError> {
        Ok(u32::from_le_bytes(self.take(4)?.try_into().unwrap()))
    }
}

/// The little-endian u32 at byte `at` of a node record.
#[inline]
fn le32(rec: &[u8; NODE_BYTES], at: usize) -> u32 {
    u32::from_le_bytes(rec[at..at + 4].try_into().unwrap())
}

struct RawNode {
    depcount: u32,
    n_deps: u32,
    deps_index: u32,
    n_start: u32,
    start_index: u32,
}

pub fn read_file(path: &Path) -> Result<Schedule, LoadError> {
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    read_file_threads(path, threads.min(MAX_THREADS), PARALLEL_MIN_BYTES)
}

/// A file at least this large is read by several threads (on one of a
/// few hundred kilobytes a thread's start costs about what it saves).
pub const PARALLEL_MIN_BYTES: u64 = 1 << 20;
/// At most this many reading threads (the blocks are read from the page
/// cache; more threads mostly wait on each other's memory traffic).
const MAX_THREADS: usize = 4;

/// [`read_file`] with up to `threads` threads when the file has at least
/// `min_bytes` bytes. Each thread decodes a run of consecutive ranks into
/// a schedule of its own, and the runs are joined in rank order
/// (`Schedule::join`): the result is the schedule the sequential reader
/// builds, field for field. Any problem (a damaged block, a limit) sends
/// the whole file through the sequential reader, which reports the first
/// error in file order exactly as before (tests: `parallel_read_*`).
pub fn read_file_threads(
    path: &Path,
    threads: usize,
    min_bytes: u64,
) -> Result<Schedule, LoadError> {
    let name = path.display().to_string();
    let (f, len) = schedgen::input::open_regular(path).map_err(|msg| LoadError::Io {
        file: name.clone(),
        msg,
    })?;
    if threads > 1 && len >= min_bytes {
        if let Some(s) = read_parallel(&name, &f, len, threads) {
            return Ok(s);
        }
    }
    let mut r = std::io::BufReader::new(f);
    r.seek(SeekFrom::Start(0)).map_err(|e| LoadError::Io {
        file: name.clone(),
        msg: e.to_string(),
    })?;
    read(&name, r, len)
}

/// The parallel read alone, with `threads` threads, whatever the file's
/// size: `None` where [`read_file_threads`] falls back to the sequential
/// reader (tests: the parallel path must have run).
#[doc(hidden)]
pub fn read_file_parallel(path: &Path, threads: usize) -> Option<Schedule> {
    let (f, len) = schedgen::input::open_regular(path).ok()?;
    read_parallel(&path.display().to_string(), &f, len, threads)
}

/// The parallel read of [`read_file_threads`]; `None` for anything but a
/// clean file (the caller then reads it sequentially).
fn read_parallel(name: &str, f: &std::fs::File, len: u64, threads: usize) -> Option<Schedule> {
    use std::os::unix::fs::FileExt;
    let mut fr = f;
    fr.seek(SeekFrom::Start(0)).ok()?;
    let (one_sided_ok, p, table) = read_head(name, &mut fr, len).ok()?;
    if p < 2 {
        return None;
    }
    let blocks: Vec<(u64, usize)> = (0..p)
        .map(|rank| block_of(name, &table, rank, len))
        .collect::<Result<_, _>>()
        .ok()?;
    let data_end = blocks
        .iter()
        .map(|&(off, n)| off + n as u64)
        .fold(14 + 16 * p as u64, u64::max);
    if data_end < len {
        return None;
    }
    let total: u64 = blocks.iter().map(|&(_, n)| n as u64).sum();
    // runs of consecutive ranks with about the same number of bytes each
    let k = threads.min(p as usize);
    let mut cuts = vec![0u32];
    let mut acc = 0u64;
    for (rank, &(_, n)) in (0..p).zip(&blocks) {
        acc += n as u64;
        if cuts.len() < k && acc * k as u64 >= total * cuts.len() as u64 && rank + 1 < p {
            cuts.push(rank + 1);
        }
    }
    cuts.push(p);
    let run = |a: u32, b: u32| -> Option<Schedule> {
        let mut sb = ScheduleBuilder::new(p);
        let mut block = Vec::new();
        let mut raw = Vec::new();
        for rank in a..b {
            let (off, n) = blocks[rank as usize];
            block.resize(n, 0);
            f.read_exact_at(&mut block, off).ok()?;
            parse_rank(name, &block, off, rank, p, one_sided_ok, &mut sb, &mut raw).ok()?;
        }
        Some(sb.finish())
    };
    let parts: Vec<Option<Schedule>> = std::thread::scope(|sc| {
        let hs: Vec<_> = cuts[1..cuts.len() - 1]
            .iter()
            .zip(&cuts[2..])
            .map(|(&a, &b)| {
                std::thread::Builder::new()
                    .name("schedule-read".into())
                    .spawn_scoped(sc, move || run(a, b))
            })
            .collect();
        let mut parts = vec![run(cuts[0], cuts[1])];
        for h in hs {
            parts.push(match h {
                Ok(h) => h.join().ok().flatten(),
                // no thread to be had: the sequential reader takes over
                Err(_) => None,
            });
        }
        parts
    });
    let parts: Option<Vec<Schedule>> = parts.into_iter().collect();
    Schedule::join(p, parts?)
}

/// Reads the binary layout from a seekable reader of total length `len`.
pub fn read<R: Read + Seek>(name: &str, mut r: R, len: u64) -> Result<Schedule, LoadError> {
    let io = |e: std::io::Error| LoadError::Io {
        file: name.to_string(),
        msg: e.to_string(),
    };
    let (one_sided_ok, p, table) = read_head(name, &mut r, len)?;
    let table_bytes = 16u64 * p as u64;
    let mut b = ScheduleBuilder::new(p);
    let mut block = Vec::new();
    let mut raw: Vec<RawNode> = Vec::new();
    let mut data_end = 14 + table_bytes;
    for rank in 0..p {
        let (off, n) = block_of(name, &table, rank, len)?;
        data_end = data_end.max(off + n as u64);
        block.resize(n, 0);
        r.seek(SeekFrom::Start(off)).map_err(io)?;
        r.read_exact(&mut block).map_err(io)?;
        parse_rank(name, &block, off, rank, p, one_sided_ok, &mut b, &mut raw)?;
    }
    // Nothing may follow the last block: trailing bytes mean a damaged or
    // concatenated file, not something to ignore.
    if data_end < len {
        return Err(berr(
            name,
            data_end,
            format!(
                "{} bytes of trailing data after the last rank block",
                len - data_end
            ),
        ));
    }
    Ok(b.finish())
}

/// The header and rank table, checked: whether one-sided operations are
/// allowed (magic 4224), the number of ranks and the table (two u64 per
/// rank, relative to offset 8).
fn read_head<R: Read>(name: &str, r: &mut R, len: u64) -> Result<(bool, u32, Vec<u64>), LoadError> {
    let io = |e: std::io::Error| LoadError::Io {
        file: name.to_string(),
        msg: e.to_string(),
    };
    let mut head = [0u8; 14];
    r.read_exact(&mut head)
        .map_err(|_| berr(name, 0, "file too short for a binary schedule header"))?;
    let magic = u64::from_le_bytes(head[0..8].try_into().unwrap());
    if magic == MAGIC_CONSUMED {
        return Err(berr(
            name,
            0,
            "magic 2342: this binary schedule was consumed by the reference simulator and is no longer valid; regenerate it",
        ));
    }
    if magic != MAGIC && magic != MAGIC_ONE_SIDED {
        return Err(berr(
            name,
            0,
            format!("bad magic {magic} (expected 4223, or 4224 for a schedule with put/get/poll)"),
        ));
    }
    let p = u32::from_le_bytes(head[8..12].try_into().unwrap());
    if p == 0 {
        return Err(berr(name, 8, "num_ranks is 0: the schedule is empty"));
    }
    let table_bytes = 16u64 * p as u64;
    if 14 + table_bytes > len {
        return Err(berr(
            name,
            14,
            format!("rank table for {p} ranks does not fit in the file"),
        ));
    }
    let mut tb = vec![0u8; table_bytes as usize];
    r.read_exact(&mut tb).map_err(io)?;
    let table: Vec<u64> = tb
        .chunks_exact(8)
        .map(|c| u64::from_le_bytes(c.try_into().unwrap()))
        .collect();
    Ok((magic == MAGIC_ONE_SIDED, p, table))
}

/// Rank `rank`'s block from the rank table: its file offset and length,
/// checked against the file's length `len`.
fn block_of(name: &str, table: &[u64], rank: u32, len: u64) -> Result<(u64, usize), LoadError> {
    let (s, e) = (table[2 * rank as usize], table[2 * rank as usize + 1]);
    if e < s || e > len.saturating_sub(8) {
        return Err(berr(
            name,
            14 + 16 * rank as u64,
            format!("rank {rank}: block [{s}, {e}) lies outside the file"),
        ));
    }
    Ok((8 + s, (e - s) as usize))
}

/// Decode rank `rank`'s block (read from file offset `off`) into `b`
/// (`raw`: scratch space, reused from rank to rank).
#[allow(clippy::too_many_arguments)]
fn parse_rank(
    name: &str,
    block: &[u8],
    off: u64,
    rank: u32,
    p: u32,
    one_sided_ok: bool,
    b: &mut ScheduleBuilder,
    raw: &mut Vec<RawNode>,
) -> Result<(), LoadError> {
    let mut c = Cur {
        b: block,
        pos: 0,
        base: off,
        file: name,
    };
    let n = c.u32()?;
    let nroots = c.u32()?;
    c.take(4 * nroots as usize)?;
    let nodes_at = c.pos;
    if (block.len() - nodes_at) / NODE_BYTES < n as usize {
        return Err(berr(
            name,
            off,
            format!("rank {rank}: {n} nodes do not fit in the block"),
        ));
    }
    raw.clear();
    raw.reserve(n as usize);
    b.begin_rank();
    // The records are known to fit (checked above): decode each from a
    // fixed-size array at constant offsets, without a bounds check and
    // an error path per field.
    let app_at = nodes_at + n as usize * NODE_BYTES;
    let recs = block[nodes_at..app_at].chunks_exact(NODE_BYTES);
    for (i, rec) in recs.enumerate() {
        let rec: &[u8; NODE_BYTES] = rec.try_into().unwrap();
        let i = i as u32;
        let at = off + (nodes_at + i as usize * NODE_BYTES) as u64;
        let depcount = le32(rec, 0);
        let ty = rec[4];
        let peer = le32(rec, 5);
        let size = u64::from_le_bytes(rec[9..17].try_into().unwrap());
        let tag = le32(rec, 17);
        let cpu = rec[21];
        let nic = rec[22];
        let n_deps = le32(rec, 23);
        let deps_index = le32(rec, 27);
        let n_start = le32(rec, 31);
        let start_index = le32(rec, 35);
        let kind = Kind::from_u8(ty)
            .filter(|k| one_sided_ok || !k.is_one_sided())
            .ok_or_else(|| {
                berr(
                    name,
                    at,
                    if (4..=6).contains(&ty) {
                        format!("rank {rank} node {i}: type {ty} (put/get/poll) in a file with magic 4223; such schedules carry magic 4224")
                    } else {
                        format!("rank {rank} node {i}: bad type {ty}")
                    },
                )
            })?;
        if kind.is_one_sided() && tag == ANY {
            return Err(berr(
                name,
                at,
                format!("rank {rank} node {i}: a put/get/poll with any-tag ({ANY})"),
            ));
        }
        if kind != Kind::Calc {
            let ok = peer < p || (kind == Kind::Recv && peer == ANY);
            if !ok {
                return Err(berr(
                    name,
                    at,
                    format!("rank {rank} node {i}: peer {peer} outside 0..{}", p - 1),
                ));
            }
        }
        let op = Op {
            kind,
            size,
            peer: if kind == Kind::Calc { 0 } else { peer },
            tag: if kind == Kind::Calc { 0 } else { tag },
            cpu,
            nic: if matches!(kind, Kind::Calc | Kind::Poll) {
                0
            } else {
                nic
            },
        };
        b.add_op(op).map_err(|e| berr(name, at, e.to_string()))?;
        raw.push(RawNode {
            depcount,
            n_deps,
            deps_index,
            n_start,
            start_index,
        });
    }
    let app_len = (block.len() - app_at) / 4;
    let mut indeg = vec![0u32; n as usize];
    for (i, rn) in raw.iter().enumerate() {
        for (cnt, idx, imm) in [
            (rn.n_deps, rn.deps_index, false),
            (rn.n_start, rn.start_index, true),
        ] {
            if idx as u64 + cnt as u64 > app_len as u64 {
                return Err(berr(
                    name,
                    off,
                    format!("rank {rank} node {i}: dependency list outside the appendix"),
                ));
            }
            let list = &block[app_at + 4 * idx as usize..app_at + 4 * (idx + cnt) as usize];
            for d in list.chunks_exact(4) {
                let d = u32::from_le_bytes(d.try_into().unwrap());
                if d >= n {
                    return Err(berr(
                        name,
                        off,
                        format!("rank {rank} node {i}: dependent {d} does not exist"),
                    ));
                }
                indeg[d as usize] += 1;
                b.add_dep(d, i as u32, imm)
                    .map_err(|e| berr(name, off, e.to_string()))?;
            }
        }
    }
    for (i, rn) in raw.iter().enumerate() {
        if rn.depcount != indeg[i] {
            return Err(berr(
                name,
                off,
                format!(
                    "rank {rank} node {i}: depcount {} but {} dependency edges point to it",
                    rn.depcount, indeg[i]
                ),
            ));
        }
    }
    b.end_rank().map_err(|c| {
        let mut m = format!("rank {rank}: dependency cycle: ");
        for (i, (&op, &imm)) in c.ops.iter().zip(&c.immediate).enumerate().take(16) {
            let w = if imm { "irequires" } else { "requires" };
            m.push_str(&format!("node {op} {w} "));
            if i == 15 && c.ops.len() > 16 {
                m.push_str(&format!("... ({} more) ... ", c.ops.len() - 16));
            }
        }
        m.push_str(&format!(
            "node {}; {}",
            c.ops[0],
            if c.ops.len() == 1 {
                "the operation can never start"
            } else {
                "none of these operations can ever start"
            }
        ));
        berr(name, off, m)
    })
}

/// Writes the binary layout.
pub fn write<W: Write>(s: &Schedule, w: &mut W) -> std::io::Result<()> {
    let p = s.num_ranks();
    let magic = if s.uses_one_sided() {
        MAGIC_ONE_SIDED
    } else {
        MAGIC
    };
    w.write_all(&magic.to_le_bytes())?;
    w.write_all(&p.to_le_bytes())?;
    w.write_all(&[s.max_cpu(), s.max_nic()])?;
    // block sizes first
    let header = 4 + 1 + 1 + 16 * p as u64;
    let mut pos = header;
    for r in 0..p {
        let nodes = s.rank_nodes(r);
        let n = nodes.len() as u64;
        let roots = nodes.clone().filter(|&x| s.depcount(x) == 0).count() as u64;
        let app: u64 = nodes.clone().map(|x| s.raw_edges(x).len() as u64).sum();
        let size = 8 + 4 * roots + NODE_BYTES as u64 * n + 4 * app;
        w.write_all(&pos.to_le_bytes())?;
        w.write_all(&(pos + size).to_le_bytes())?;
        pos += size;
    }
    let mut buf = Vec::new();
    for r in 0..p {
        buf.clear();
        let nodes = s.rank_nodes(r);
        let first = nodes.start;
        let roots: Vec<u32> = nodes
            .clone()
            .filter(|&x| s.depcount(x) == 0)
            .map(|x| x - first)
            .collect();
        buf.extend_from_slice(&(nodes.len() as u32).to_le_bytes());
        buf.extend_from_slice(&(roots.len() as u32).to_le_bytes());
        for x in &roots {
            buf.extend_from_slice(&x.to_le_bytes());
        }
        let mut app: Vec<u32> = Vec::new();
        for x in nodes.clone() {
            let op = s.op(x);
            let deps_index = app.len() as u32;
            app.extend(s.requires_dependents(x).map(|d| d - first));
            let n_deps = app.len() as u32 - deps_index;
            let start_index = app.len() as u32;
            app.extend(s.irequires_dependents(x).map(|d| d - first));
            let n_start = app.len() as u32 - start_index;
            buf.extend_from_slice(&s.depcount(x).to_le_bytes());
            buf.push(op.kind as u8);
            buf.extend_from_slice(&op.peer.to_le_bytes());
            buf.extend_from_slice(&op.size.to_le_bytes());
            buf.extend_from_slice(&op.tag.to_le_bytes());
            buf.push(op.cpu);
            buf.push(op.nic);
            for v in [n_deps, deps_index, n_start, start_index] {
                buf.extend_from_slice(&v.to_le_bytes());
            }
        }
        for a in app {
            buf.extend_from_slice(&a.to_le_bytes());
        }
        w.write_all(&buf)?;
    }
    Ok(())
}
