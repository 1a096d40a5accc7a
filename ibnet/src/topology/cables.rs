//! Cables of a network file that lists every cable from both of its ends
//! (IBDM `.topo`, `ibnetdiscover` output): the second listing must agree
//! with the first, and no port may carry two cables.

use std::collections::HashMap;
use std::hash::Hash;

/// The cables read so far. `E` names one cable end (a node and a port, in
/// the loader's own terms).
#[derive(Debug)]
pub(crate) struct Cables<E> {
    /// cable end -> (the other end, the line that first listed the cable)
    ends: HashMap<E, (E, usize)>,
    /// The cables in the order of their first listing.
    pub(crate) links: Vec<(E, E)>,
}

impl<E: Copy + Eq + Hash> Cables<E> {
    pub(crate) fn new() -> Cables<E> {
        Cables {
            ends: HashMap::new(),
            links: Vec::new(),
        }
    }

    /// Record a cable the file implies without listing it (the internal
    /// cables of a director chassis), at `line`; both ends must be free.
    pub(crate) fn insert(&mut self, a: E, b: E, line: usize) {
        self.ends.insert(a, (b, line));
        self.ends.insert(b, (a, line));
        self.links.push((a, b));
    }

    /// The cable `a`-`b` listed at `line`: new, or the same cable listed
    /// from its other end (then nothing changes). The error (a message
    /// for that line, ends written by `show`) when a port is cabled to
    /// itself or one end already has another cable.
    pub(crate) fn add(
        &mut self,
        a: E,
        b: E,
        line: usize,
        show: impl Fn(E) -> String,
    ) -> Result<(), String> {
        match (self.ends.get(&a).copied(), self.ends.get(&b).copied()) {
            (None, None) if a == b => Err(format!("{} is cabled to itself", show(a))),
            (None, None) => {
                self.insert(a, b, line);
                Ok(())
            }
            // the same cable seen from the other end
            (Some((pa, _)), Some((pb, _))) if pa == b && pb == a => Ok(()),
            (Some((other, l)), _) if other != b => Err(format!(
                "{} is already cabled to {} (line {l})",
                show(a),
                show(other)
            )),
            (_, Some((other, l))) => Err(format!(
                "{} is already cabled to {} (line {l})",
                show(b),
                show(other)
            )),
            _ => unreachable!("one end known means the other is known too"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn show(e: (char, u16)) -> String {
        format!("{}[{}]", e.0, e.1)
    }

    #[test]
    fn a_cable_listed_from_both_ends_counts_once() {
        let mut c = Cables::new();
        c.add(('a', 1), ('b', 2), 3, show).unwrap();
        c.add(('b', 2), ('a', 1), 7, show).unwrap();
        c.insert(('c', 1), ('d', 1), 9);
        assert_eq!(c.links, [(('a', 1), ('b', 2)), (('c', 1), ('d', 1))]);
    }

    #[test]
    fn a_port_carries_one_cable() {
        let mut c = Cables::new();
        c.add(('a', 1), ('b', 2), 3, show).unwrap();
        assert_eq!(
            c.add(('a', 1), ('c', 1), 5, show).unwrap_err(),
            "a[1] is already cabled to b[2] (line 3)"
        );
        assert_eq!(
            c.add(('c', 1), ('b', 2), 5, show).unwrap_err(),
            "b[2] is already cabled to a[1] (line 3)"
        );
        assert_eq!(
            c.add(('c', 4), ('c', 4), 6, show).unwrap_err(),
            "c[4] is cabled to itself"
        );
        assert_eq!(c.links.len(), 1);
    }
}
