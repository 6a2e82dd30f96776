//! Superbatches where the neighbour lists dwarf the memory budget.
//!
//! A lockstep round reads each list its batches need once per hop, in
//! file order, merging lists that lie close together
//! ([`crate::exec::lockstep`]). On a graph whose topology is several times
//! the budget, a round's last hop needs a list on most pages of the
//! topology file however few batches it holds: on 50 M nodes and 2.3 B
//! edges (9.3 GB of indices) under `--memory 4GiB`, 200 batches of 1000
//! seeds read 40.7 GB of lists in nine rounds of 2 to 40 batches and 25.5
//! GB in two rounds of 100 (`docs/lab/performance-journal.md`, "Fewer, larger rounds
//! where the lists dwarf memory"). There the epoch
//! is bound by the number of rounds, not by the caches: the neighbor
//! cache's hit ratio stayed at 0.38–0.41 from 341 to 922 MiB, and the
//! feature misses did not move. So where the topology is larger than the
//! whole budget, the plan makes the superbatch as large as its lockstep
//! round may be (up to [`SUPERBATCH_SHARE`] of what is left for it and
//! the caches), and the run samples it in one round from the first
//! superbatch on ([`FirstSuperbatch::Auto`] resolves to `full`, without the
//! early first init's ramp of short rounds).
//!
//! [`FirstSuperbatch::Auto`]: crate::exec::config::FirstSuperbatch::Auto

use crate::exec::lockstep::LOCKSTEP_CACHE_SHARE;
use crate::store::Store;

/// The share of what is left after the fixed part, the batch buffers and
/// the reserve that superbatches in flight and their lockstep round may
/// take where the lists dwarf memory (a quarter elsewhere).
pub const SUPERBATCH_SHARE: f64 = 0.75;

/// The bytes of `store`'s topology: its in-neighbour ids and offsets.
pub fn topology_bytes(store: &Store) -> u64 {
    store.num_edges() * store.index_width().bytes() as u64 + 8 * store.num_nodes()
}

/// Whether lists of `topology_bytes` ([`topology_bytes`]) dwarf a budget
/// of `memory` bytes: the topology alone is larger.
pub fn lists_dwarf_memory(topology_bytes: u64, memory: u64) -> bool {
    topology_bytes > memory
}

/// The longest superbatch where the lists dwarf memory: `left` bytes for
/// superbatches and caches, `per_batch` bytes of changeset state and
/// `sampling_bytes` of lockstep batches a batch of superbatch. At most
/// [`SUPERBATCH_SHARE`] of `left`, and short enough that its lockstep
/// round takes at most [`LOCKSTEP_CACHE_SHARE`] of the caches left beside
/// it (so the plan samples it whole); at least 1.
pub fn longest_superbatch(left: u64, per_batch: u64, sampling_bytes: u64) -> u64 {
    let (left, per_batch, sampling) = (left as f64, per_batch as f64, sampling_bytes as f64);
    let by_share = SUPERBATCH_SHARE * left / (per_batch + sampling).max(1.0);
    // S × sampling ≤ share × (left − S × per_batch).
    let by_lockstep =
        LOCKSTEP_CACHE_SHARE * left / (sampling + LOCKSTEP_CACHE_SHARE * per_batch).max(1.0);
    (by_share.min(by_lockstep).floor() as u64).max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_longest_superbatch_keeps_its_round_within_the_lockstep_share() {
        let mib = 1u64 << 20;
        // The 2.3 B-edge run's plan: 3,188 MiB left, 10.2 MiB of changeset
        // state and 8.0 MiB of lockstep batches a batch: 121 batches (the
        // plan evens 200 batches out to two of 100).
        let (left, per_batch, sampling) = (3188 * mib, 10_700_000, 8_400_000);
        let s = longest_superbatch(left, per_batch, sampling);
        assert_eq!(s, 121);
        let caches = left - s * per_batch;
        assert!(s * sampling <= (LOCKSTEP_CACHE_SHARE * caches as f64) as u64);
        assert!(s * (per_batch + sampling) <= (SUPERBATCH_SHARE * left as f64) as u64);
        // One more batch would break one of the two bounds.
        let t = s + 1;
        let caches = left - t * per_batch;
        assert!(
            t * sampling > (LOCKSTEP_CACHE_SHARE * caches as f64) as u64
                || t * (per_batch + sampling) > (SUPERBATCH_SHARE * left as f64) as u64
        );
        // Three times the quarter the plan gives elsewhere, or the lockstep
        // bound: here more than twice the quarter's 40.
        assert!(s > 2 * (left / 4 / (per_batch + sampling)), "{s}");
        // Nothing left still plans one batch.
        assert_eq!(longest_superbatch(0, per_batch, sampling), 1);
        assert_eq!(longest_superbatch(left, 0, 0), left / 2);
    }
}
