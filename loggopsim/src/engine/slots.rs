//! Reusing the freed slots of the engine's tables (messages in flight,
//! groups of blocked events): a freed slot is taken again before a table
//! grows, so a table stays as large as the most entries ever in use at
//! once.

/// Stores `x` in the slot of `table` freed last, else in a new slot at
/// its end; returns the slot.
#[inline(always)]
pub(super) fn store<T>(table: &mut Vec<T>, free: &mut Vec<u32>, x: T) -> u32 {
    match free.pop() {
        Some(s) => {
            table[s as usize] = x;
            s
        }
        None => {
            table.push(x);
            table.len() as u32 - 1
        }
    }
}

#[cfg(test)]
mod tests {
    use super::store;

    #[test]
    fn freed_slots_are_reused_last_freed_first() {
        let (mut table, mut free) = (Vec::new(), Vec::new());
        assert_eq!(store(&mut table, &mut free, 'a'), 0);
        assert_eq!(store(&mut table, &mut free, 'b'), 1);
        assert_eq!(store(&mut table, &mut free, 'c'), 2);
        free.extend([0, 2]);
        assert_eq!(store(&mut table, &mut free, 'd'), 2);
        assert_eq!(store(&mut table, &mut free, 'e'), 0);
        assert_eq!(store(&mut table, &mut free, 'f'), 3);
        assert_eq!(table, ['e', 'b', 'd', 'f']);
        assert!(free.is_empty());
    }
}
