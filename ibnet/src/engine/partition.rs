//! Which thread of a parallel run owns which node (parallel.rs): by switch
//! groups, so that most links stay inside one thread.
//!
//! An HCA goes with the switch it is attached to (its *leaf*). The leaf
//! switches are cut, in node order, into contiguous runs of about equal
//! work, which on the built-in and imported networks are pods of a fat
//! tree, groups of a dragonfly and slabs of a torus (their generators
//! number the switches that way). The other switches follow, nearest to
//! the leaves first: each goes to the thread that holds most of its
//! neighbours, or, on a tie (a spine of a fat tree sees every pod alike),
//! to the thread with the least work so far; but a thread already at its
//! share of the work (plus 1/`SLACK`) gives way to the neighbouring
//! thread with most neighbours that is not. Work is counted in connected
//! ports, the unit the fabric's events scale with. (By neighbours alone,
//! the reference's 1944-node network, whose node order is not pod by pod,
//! went 6,912 to 4,752 ports in two, and its threads waited for each
//! other.)

use super::fabric::{Fabric, NONE};

/// A thread may take up to 1/SLACK more than its share of the work when
/// the switches are placed by their neighbours.
const SLACK: usize = 20;

/// The partition and what it looks like.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Partition {
    /// owner thread per topology node
    pub owner: Vec<u16>,
    /// per thread: (switches, HCAs, connected ports)
    pub sizes: Vec<(usize, usize, usize)>,
    /// links between two threads, and all links
    pub cut_links: usize,
    pub links: usize,
}

impl Partition {
    /// One line per thread and one for the cut, for the user.
    pub fn describe(&self) -> Vec<String> {
        let mut v: Vec<String> = self
            .sizes
            .iter()
            .enumerate()
            .map(|(k, (s, h, p))| {
                format!("process {k}: {s} switches, {h} HCAs, {p} connected ports")
            })
            .collect();
        v.push(format!(
            "{} of {} links join two processes",
            self.cut_links, self.links
        ));
        v
    }
}

impl Fabric {
    /// A partition given by the user: one line per switch, `NAME PROCESS`
    /// (process 0 to `threads` - 1; `#` starts a comment), every switch
    /// once; an HCA goes with the switch it is attached to unless it has
    /// a line of its own. Errors name `file` and the line.
    pub fn partition_from(
        &self,
        text: &str,
        file: &str,
        threads: usize,
    ) -> Result<Partition, String> {
        let n = threads.max(1);
        let index: rustc_hash::FxHashMap<&str, usize> = self
            .node_names
            .iter()
            .enumerate()
            .map(|(i, s)| (s.as_str(), i))
            .collect();
        const UNSET: u16 = u16::MAX;
        let mut owner = vec![UNSET; self.node_names.len()];
        for (i, line) in text.lines().enumerate() {
            let at = |what: String| format!("{file}:{}: {what}", i + 1);
            let line = line.split('#').next().unwrap_or("").trim();
            if line.is_empty() {
                continue;
            }
            let w: Vec<&str> = line.split_whitespace().collect();
            if w.len() != 2 {
                return Err(at(format!("expected `NODE PROCESS`, found `{line}`")));
            }
            let Some(&node) = index.get(w[0]) else {
                return Err(at(format!("no node `{}` in this network", w[0])));
            };
            let k: usize = w[1]
                .parse()
                .ok()
                .filter(|&k| k < n)
                .ok_or_else(|| at(format!("process `{}`: expected 0 to {}", w[1], n - 1)))?;
            if owner[node] != UNSET {
                return Err(at(format!("node `{}` is listed twice", w[0])));
            }
            owner[node] = k as u16;
        }
        let (is_switch, _, nbrs) = self.node_links();
        for x in 0..owner.len() {
            if owner[x] != UNSET {
                continue;
            }
            if is_switch[x] {
                return Err(format!(
                    "{file}: switch `{}` has no line (every switch needs one)",
                    self.node_names[x]
                ));
            }
            owner[x] = nbrs[x]
                .iter()
                .find(|&&y| is_switch[y as usize])
                .map_or(0, |&y| owner[y as usize]);
        }
        Ok(self.describe_partition(owner, n))
    }

    /// Per node: whether it is a switch, its connected ports, its
    /// neighbours (one entry per link).
    fn node_links(&self) -> (Vec<bool>, Vec<usize>, Vec<Vec<u32>>) {
        let nodes = self.node_names.len();
        let mut is_switch = vec![false; nodes];
        let mut ports_of = vec![0usize; nodes];
        let mut nbrs: Vec<Vec<u32>> = vec![Vec::new(); nodes];
        for p in &self.ports {
            if p.sw != NONE {
                is_switch[p.node as usize] = true;
            }
            if p.peer != NONE {
                ports_of[p.node as usize] += 1;
                nbrs[p.node as usize].push(self.ports[p.peer as usize].node);
            }
        }
        (is_switch, ports_of, nbrs)
    }

    /// Nodes of this fabric's network for `threads` threads, by switch
    /// groups (module doc).
    pub fn partition(&self, threads: usize) -> Partition {
        let n = threads.max(1);
        let nodes = self.node_names.len();
        let (is_switch, ports_of, nbrs) = self.node_links();
        const UNSET: u16 = u16::MAX;
        let mut owner = vec![UNSET; nodes];
        let mut load = vec![0usize; n];
        // leaves and the work of their groups (the leaf and its HCAs)
        let mut leaves = Vec::new();
        let mut group = vec![0usize; nodes];
        for h in &self.hcas {
            let leaf = nbrs[h.node as usize]
                .iter()
                .copied()
                .find(|&x| is_switch[x as usize]);
            if let Some(l) = leaf {
                group[l as usize] += ports_of[h.node as usize];
            }
        }
        for s in 0..nodes {
            if is_switch[s] && group[s] > 0 {
                group[s] += ports_of[s];
                leaves.push(s);
            }
        }
        let total: usize = leaves.iter().map(|&s| group[s]).sum();
        let mut acc = 0usize;
        for &s in &leaves {
            // the thread whose share the middle of this group falls in
            let k = ((acc + group[s] / 2) * n / total.max(1)).min(n - 1);
            acc += group[s];
            owner[s] = k as u16;
            load[k] += ports_of[s];
        }
        for h in &self.hcas {
            let hn = h.node as usize;
            let leaf = nbrs[hn].iter().copied().find(|&x| is_switch[x as usize]);
            let k = match leaf {
                Some(l) if owner[l as usize] != UNSET => owner[l as usize],
                // an HCA without a switch: the least loaded thread
                _ => (0..n).min_by_key(|&k| load[k]).unwrap() as u16,
            };
            owner[hn] = k;
            load[k as usize] += ports_of[hn];
        }
        // the other switches, breadth first from the assigned nodes
        let share = ports_of.iter().sum::<usize>().div_ceil(n);
        let mut frontier: Vec<usize> = (0..nodes).filter(|&x| owner[x] != UNSET).collect();
        let mut seen = owner.iter().map(|&o| o != UNSET).collect::<Vec<_>>();
        loop {
            let mut next = Vec::new();
            for &x in &frontier {
                for &y in &nbrs[x] {
                    if !seen[y as usize] {
                        seen[y as usize] = true;
                        next.push(y as usize);
                    }
                }
            }
            if next.is_empty() {
                break;
            }
            next.sort_unstable();
            for &s in &next {
                let mut count = vec![0usize; n];
                for &y in &nbrs[s] {
                    if owner[y as usize] != UNSET {
                        count[owner[y as usize] as usize] += 1;
                    }
                }
                // the thread with most neighbours, unless that would take
                // it past its share of the work by more than `SLACK` while
                // another neighbouring thread is below its share
                let fits =
                    |k: usize| count[k] > 0 && load[k] + ports_of[s] <= share + share / SLACK;
                let some_fit = (0..n).any(fits);
                let k = (0..n)
                    .filter(|&k| !some_fit || fits(k))
                    .min_by_key(|&k| (std::cmp::Reverse(count[k]), load[k], k))
                    .unwrap();
                owner[s] = k as u16;
                load[k] += ports_of[s];
            }
            frontier = next;
        }
        // nodes not connected to anything
        for x in 0..nodes {
            if owner[x] == UNSET {
                owner[x] = 0;
            }
        }
        self.describe_partition(owner, n)
    }

    /// The sizes and the cut of a partition.
    fn describe_partition(&self, owner: Vec<u16>, n: usize) -> Partition {
        let (is_switch, ports_of, _) = self.node_links();
        let mut sizes = vec![(0usize, 0usize, 0usize); n];
        for x in 0..owner.len() {
            let e = &mut sizes[owner[x] as usize];
            if is_switch[x] {
                e.0 += 1;
            } else {
                e.1 += 1;
            }
            e.2 += ports_of[x];
        }
        let (mut links, mut cut) = (0, 0);
        for (i, p) in self.ports.iter().enumerate() {
            // each link once, from its lower-numbered port
            if p.peer != NONE && p.peer as usize > i {
                links += 1;
                if owner[p.node as usize] != owner[self.ports[p.peer as usize].node as usize] {
                    cut += 1;
                }
            }
        }
        Partition {
            owner,
            sizes,
            cut_links: cut,
            links,
        }
    }
}
