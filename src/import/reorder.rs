//! Locality-aware layout (`--reorder`): a finished store's nodes are
//! renumbered so that rows read together share feature pages, and the
//! store keeps the original id of every node (`orig_ids`, as `--remap`
//! does), so results can be given back in the user's ids.
//!
//! The orders (`none`, `degree`, `bfs`, and `auto`, which measures
//! first) and what they cost to compute are [`crate::import::node_order`]'s;
//! this file writes a store in one of them. Under `auto` the store is
//! built in the input's order, measured ([`crate::import::locality`]) and
//! renumbered only where that pays.
//!
//! Cost of the rewrite: the order and its inverse (8 bytes a node each);
//! nothing is `O(E)`. The renumbered store is then written beside it:
//! feature rows are read in the new order, and each new node's list is the
//! old list mapped through the inverse and sorted (one list in memory at a
//! time).
//! So a reordered import writes the store twice and needs room for both
//! until the first is removed.
#![deny(clippy::unwrap_used, clippy::indexing_slicing)]

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::error::{Error, Result};
use crate::format::tables::Splits;
use crate::import::locality::{decide, Decision, Sample, AUTO_MIN_PAGES};
use crate::import::node_order::invert;
pub use crate::import::node_order::{node_order, Reorder};
use crate::io::durable::{fsync_dir, rename_no_replace};
use crate::store::{ListSink, Store, StoreBuilder, StoreSpec};

/// Rows read and written per block.
const FEATURE_BLOCK_ROWS: usize = 4096;

/// Why a typed store or import refuses `--reorder`.
pub const REORDER_REFUSED: &str = "--reorder renumbers nodes across the whole graph, which would break the node types' id ranges; import typed graphs without it";

/// Writes `src` with its nodes renumbered by `order` (`order[new] = old`)
/// to a new store at `out`: features, topology, labels, splits, edge
/// splits, and the
/// original ids (the source's original ids where it has them, else its
/// ids). Returns the committed path.
pub fn write_reordered(
    src: &Store,
    order: &[u64],
    out: &Path,
    segment_bytes: u64,
) -> Result<PathBuf> {
    if src.schema().is_some() {
        return Err(Error::invalid_argument(format!(
            "{}: {}",
            src.dir().display(),
            REORDER_REFUSED
        )));
    }
    let n = src.num_nodes();
    let new_of = invert(order, n)?;
    let map = |old: u64| -> Result<u64> {
        new_of
            .get(old as usize)
            .copied()
            .ok_or_else(|| Error::OutOfRange(format!("node {old} is not below the node count {n}")))
    };
    let spec = StoreSpec {
        segment_bytes,
        ..StoreSpec::new(n, src.layout())
    };
    let mut b = StoreBuilder::create(out, spec)?;

    let row_bytes = src.layout().row_bytes();
    let mut rows = b.feature_writer()?;
    // The same rows in another order: a q8 store's measured error holds.
    if let Some(e) = src.q8_error() {
        rows.record_q8_error(e);
    }
    let mut buf = Vec::new();
    for block in order.chunks(FEATURE_BLOCK_ROWS) {
        buf.resize(block.len() * row_bytes, 0);
        src.read_feature_rows(block, &mut buf)?;
        rows.push_rows(&buf)?;
    }
    b.add_features(rows)?;

    let mut topo = b.topology_writer()?;
    let mut list = Vec::new();
    for &old in order {
        list.clear();
        for u in src.in_neighbors(old)? {
            list.push(map(u)?);
        }
        list.sort_unstable();
        topo.push_list(&list)?;
    }
    b.add_topology(topo)?;

    if let Some(labels) = src.labels()? {
        let moved = order
            .iter()
            .map(|&old| labels.get(old as usize).copied().unwrap_or(-1))
            .collect::<Vec<i32>>();
        b.write_labels(&moved, src.num_classes())?;
    }
    if let Some(s) = src.splits()? {
        let mut lists: [Vec<u64>; 3] = Default::default();
        for (dst, list) in lists.iter_mut().zip([&s.train, &s.valid, &s.test]) {
            *dst = list.iter().map(|&v| map(v)).collect::<Result<_>>()?;
            dst.sort_unstable();
        }
        b.write_splits(&Splits::from_lists(lists))?;
    }
    if let Some(es) = src.edge_splits()? {
        b.write_edge_splits(&es.map_ids(map)?)?;
    }
    let orig = src.original_ids()?;
    let ids = order
        .iter()
        .map(|&old| match &orig {
            Some(t) => t.get(old as usize).copied().unwrap_or(old),
            None => old,
        })
        .collect::<Vec<u64>>();
    b.write_original_ids(&ids)?;
    b.finish()
}

/// A store directory this process made as a step towards another (the
/// unordered build of a reordered import): removed when dropped.
#[derive(Debug)]
pub struct TempStore {
    path: PathBuf,
}

impl TempStore {
    /// A path beside `out` (same directory, so the same file system) for
    /// the unordered store; nothing is created yet.
    pub fn beside(out: &Path) -> Self {
        let name = out
            .file_name()
            .map_or_else(|| "store".into(), |n| n.to_string_lossy().into_owned());
        let suffix = format!(".unordered-{}", std::process::id());
        // The unordered store is staged too: its name must leave room for
        // its own staging directory, whatever the target's length.
        let room = crate::io::durable::MAX_TARGET_NAME - 1 - suffix.len();
        let mut cut = name.len().min(room);
        while !name.is_char_boundary(cut) {
            cut -= 1;
        }
        let path = out.with_file_name(format!(".{}{suffix}", &name[..cut]));
        TempStore { path }
    }

    /// The path.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for TempStore {
    fn drop(&mut self) {
        if self.path.exists() {
            if let Err(e) = std::fs::remove_dir_all(&self.path) {
                tracing::warn!("could not remove {}: {e}", self.path.display());
            }
        }
    }
}

/// Refuses an existing `out`, or a name too long to stage, before any work
/// (the builder would refuse them only at the end of a reordered import).
pub fn check_target_free(out: &Path) -> Result<()> {
    crate::io::durable::check_target_name(out)?;
    if out.exists() {
        return Err(Error::invalid_argument(format!(
            "{} already exists; a store is written to a new path",
            out.display()
        )));
    }
    Ok(())
}

/// What [`reorder_store`] did.
#[derive(Debug, Clone)]
pub struct Reordered {
    /// The committed store.
    pub path: PathBuf,
    /// Time taken (measuring, renumbering, verifying).
    pub took: Duration,
    /// `auto`'s decision and measurement.
    pub decision: Option<Decision>,
}

/// Renumbers the finished store `unordered` by `how` into a new, verified
/// store at `out`; under `auto`, measures first ([`decide`], skipping
/// stores of under `min_pages` feature pages, [`AUTO_MIN_PAGES`] outside
/// tests) and renames `unordered` to `out` where no order pays.
pub fn reorder_store_with(
    unordered: &Path,
    out: &Path,
    how: Reorder,
    segment_bytes: u64,
    sample: &Sample,
    min_pages: u64,
) -> Result<Reordered> {
    let started = Instant::now();
    let src = Store::open(unordered)?;
    let (order, decision) = match how {
        Reorder::Auto => {
            let (decision, order) = decide(&src, sample, min_pages)?;
            tracing::info!("{decision}");
            (order, Some(decision))
        }
        _ => (Some(node_order(&src, how)?), None),
    };
    let path = match order {
        Some(order) => {
            tracing::info!(order = how.name(), "node order computed");
            let path = write_reordered(&src, &order, out, segment_bytes)?;
            Store::open(&path)?.verify()?;
            path
        }
        None => {
            drop(src);
            rename_no_replace(unordered, out)?;
            let parent = match out.parent() {
                Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
                _ => PathBuf::from("."),
            };
            fsync_dir(&parent)?;
            out.to_path_buf()
        }
    };
    Ok(Reordered {
        path,
        took: started.elapsed(),
        decision,
    })
}

/// [`reorder_store_with`] at [`AUTO_MIN_PAGES`]; `sample`: the batches
/// `auto` measures on.
pub fn reorder_store(
    unordered: &Path,
    out: &Path,
    how: Reorder,
    segment_bytes: u64,
    sample: &Sample,
) -> Result<Reordered> {
    reorder_store_with(unordered, out, how, segment_bytes, sample, AUTO_MIN_PAGES)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing)]
mod tests {
    use super::*;
    use crate::format::pages::{Dtype, FeatureLayout};
    use proptest::prelude::*;

    /// A store of `n` nodes: row `v` = `[v, -v, 0.5]` (3 f32, so rows share
    /// pages), in-neighbour lists `lists`, labels `v % 3` (node 0 none),
    /// train = even nodes, test = node 1; original ids `orig` if given.
    fn build(path: &Path, lists: &[Vec<u64>], orig: Option<&[u64]>) -> Store {
        let n = lists.len() as u64;
        let layout = FeatureLayout::new(3, Dtype::F32).unwrap();
        let mut b = StoreBuilder::create(path, StoreSpec::new(n, layout)).unwrap();
        let mut rows = b.feature_writer().unwrap();
        let values: Vec<f32> = (0..n).flat_map(|v| [v as f32, -(v as f32), 0.5]).collect();
        let mut bytes = vec![0u8; values.len() * 4];
        Dtype::F32.encode_f32(3, &values, &mut bytes);
        rows.push_rows(&bytes).unwrap();
        b.add_features(rows).unwrap();
        let mut topo = b.topology_writer().unwrap();
        for l in lists {
            topo.push_list(l).unwrap();
        }
        b.add_topology(topo).unwrap();
        let labels: Vec<i32> = (0..n)
            .map(|v| if v == 0 { -1 } else { (v % 3) as i32 })
            .collect();
        b.write_labels(&labels, 3).unwrap();
        let train = (0..n).filter(|v| v % 2 == 0).collect();
        let test = if n > 1 { vec![1] } else { vec![] };
        b.write_splits(&Splits::from_lists([train, vec![], test]))
            .unwrap();
        if let Some(o) = orig {
            b.write_original_ids(o).unwrap();
        }
        Store::open(b.finish().unwrap()).unwrap()
    }

    /// Everything in original ids: sorted edges, rows, labels, splits.
    #[allow(clippy::type_complexity)]
    fn content(
        s: &Store,
    ) -> (
        Vec<(u64, u64)>,
        Vec<(u64, Vec<u8>)>,
        Vec<(u64, i32)>,
        Vec<Vec<u64>>,
    ) {
        let n = s.num_nodes();
        let orig = s
            .original_ids()
            .unwrap()
            .unwrap_or_else(|| (0..n).collect());
        let o = |v: u64| orig[v as usize];
        let mut edges = Vec::new();
        for v in 0..n {
            edges.extend(s.in_neighbors(v).unwrap().into_iter().map(|u| (o(u), o(v))));
        }
        edges.sort_unstable();
        let row = s.layout().row_bytes();
        let mut bytes = vec![0u8; n as usize * row];
        s.read_feature_rows(&(0..n).collect::<Vec<_>>(), &mut bytes)
            .unwrap();
        let mut rows: Vec<(u64, Vec<u8>)> = bytes
            .chunks(row)
            .enumerate()
            .map(|(v, r)| (o(v as u64), r.to_vec()))
            .collect();
        rows.sort();
        let mut labels: Vec<(u64, i32)> = s
            .labels()
            .unwrap()
            .unwrap()
            .iter()
            .enumerate()
            .map(|(v, &l)| (o(v as u64), l))
            .collect();
        labels.sort_unstable();
        let sp = s.splits().unwrap().unwrap();
        let splits = [&sp.train, &sp.valid, &sp.test]
            .map(|l| {
                let mut l: Vec<u64> = l.iter().map(|&v| o(v)).collect();
                l.sort_unstable();
                l
            })
            .to_vec();
        (edges, rows, labels, splits)
    }

    fn graph() -> impl Strategy<Value = Vec<Vec<u64>>> {
        (1u64..40).prop_flat_map(|n| {
            proptest::collection::vec(proptest::collection::btree_set(0..n, 0..6), n as usize)
                .prop_map(|lists| lists.into_iter().map(|l| l.into_iter().collect()).collect())
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(24))]
        #[test]
        fn every_order_is_a_permutation_and_keeps_the_graph(
            lists in graph(),
            shift in prop_oneof![Just(None), Just(Some(1000u64))],
        ) {
            let dir = tempfile::tempdir().unwrap();
            let n = lists.len() as u64;
            let orig: Option<Vec<u64>> = shift.map(|s| (0..n).map(|v| s + 7 * v).collect());
            let src = build(&dir.path().join("src"), &lists, orig.as_deref());
            let want = content(&src);
            for how in Reorder::ORDERS {
                let order = node_order(&src, how).unwrap();
                prop_assert!(invert(&order, n).is_ok(), "{how:?}");
                let out = dir.path().join(how.name());
                let path = write_reordered(&src, &order, &out, 4096).unwrap();
                let s = Store::open(&path).unwrap();
                s.verify().unwrap();
                prop_assert_eq!(content(&s), want.clone(), "{:?}", how);
                // Its original ids: the source's, moved with the nodes.
                let got = s.original_ids().unwrap().unwrap();
                let base = |v: u64| orig.as_ref().map_or(v, |o| o[v as usize]);
                prop_assert_eq!(got, order.iter().map(|&v| base(v)).collect::<Vec<_>>());
            }
        }
    }

    #[test]
    fn bfs_numbers_a_nodes_hottest_neighbours_first() {
        // Node 0 (most in-neighbours: the start) lists 1, 2, 3; node 3 is
        // in three lists, node 2 in two, node 1 in one.
        let lists = vec![vec![1, 2, 3], vec![], vec![], vec![], vec![3], vec![2, 3]];
        let dir = tempfile::tempdir().unwrap();
        let src = build(&dir.path().join("src"), &lists, None);
        assert_eq!(
            node_order(&src, Reorder::Bfs).unwrap(),
            vec![0, 3, 2, 1, 5, 4],
            "0's neighbours by descending out-degree, then the next start (5, then 4)"
        );
    }

    #[test]
    fn names_parse_back() {
        for r in Reorder::ALL {
            assert_eq!(Reorder::parse(r.name()).unwrap(), r);
        }
        let e = Reorder::parse("rcm").unwrap_err().to_string();
        assert!(e.contains("none, degree, bfs or auto"), "{e}");
    }

    #[test]
    fn invert_refuses_non_permutations() {
        assert_eq!(invert(&[2, 0, 1], 3).unwrap(), vec![1, 2, 0]);
        assert!(invert(&[0, 0, 1], 3).is_err());
        assert!(invert(&[0, 1], 3).is_err());
        assert!(invert(&[0, 1, 3], 3).is_err());
    }
}
