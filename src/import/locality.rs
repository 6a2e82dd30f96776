//! How local a store's layout is, measured on sampled batches: the
//! distinct feature pages their rows lie on, under the store's order and
//! under each candidate order of [`crate::import::reorder`]. This is
//! what `--reorder auto` (the default of `ginex-import` and `ginex gen`)
//! decides by ([`decide`]), and what `ginex-dump` and `ginex epoch` warn
//! by ([`Scatter`]).
//!
//! The batches are the ones a default run reads: [`Sample::default`]
//! shuffles the training nodes (every node where the store has no
//! splits) as `ginex epoch` does and samples `batches` batches of
//! `batch_size` seeds with the run's default fanouts, from the store
//! itself (no neighbour cache). Rows' pages under an order are the
//! distinct `new_id / rows_per_page` of the sampled nodes: the same nodes
//! are read whatever the order, only the pages they fall on change, so
//! one sample prices every candidate.
//!
//! `decide` counts the pages the sampled batches touch *together* (8
//! batches of 1000 seeds: about one superbatch), not per batch: ginex
//! reads a superbatch's misses at once (its init and changesets), so two
//! batches' rows on one page cost one read, and the rows a cache holds
//! are read once whatever their order. Counting per batch chose the
//! degree order on random node ids (1.29x fewer pages a batch, against
//! BFS's 1.26x): it packs the hot rows, which the cache holds anyway, and
//! ginex's epoch on it ran 0.98-1.01x the unreordered store's. Together,
//! BFS (hottest neighbours first, [`crate::import::node_order`]) cuts the
//! pages 1.66x and degree 1.37x, and ginex's epoch on the BFS order ran
//! 1.25x faster by medians (docs/lab/performance-journal.md, "BFS, hottest neighbours
//! first"). [`Scatter`] still counts per batch: it compares a layout
//! with random placement, which per batch is what a reader sees.
//!
//! Why a margin ([`AUTO_MARGIN`], 1.10): a reorder writes the whole store
//! a second time, so it should buy a clear cut in pages, not a sample's
//! noise (other samples, batches of 990 and 1010 seeds, moved the pages
//! by under 0.5 % and none of the ratios). On the generator's own order
//! (3M nodes x 256 f32) BFS cuts the pages together by 1.14x (its epoch
//! ran 1.11x faster), on its 8M and 200k-node stores by 1.18x and 1.21x,
//! and on random node ids by 1.66x (degree 1.37x).
#![deny(clippy::unwrap_used, clippy::indexing_slicing)]

use std::fmt;
use std::time::{Duration, Instant};

use crate::error::Result;
use crate::format::pages::FeatureLayout;
use crate::import::node_order::{node_order, Reorder};
use crate::sample::sampler::{batch_seed, epoch_order, sample_batch};
use crate::sample::source::StoreSource;
use crate::store::gather::GatherOptions;
use crate::store::Store;

/// `--reorder auto` reorders when the best candidate's pages
/// are at most the store order's divided by this (see the module docs).
pub const AUTO_MARGIN: f64 = 1.10;

/// Below this many feature pages (4 MiB) `--reorder auto` keeps the
/// input's order without measuring: after the first batches every page
/// of so small a file is in the page cache or the feature cache, so no
/// order changes what an epoch reads from the device.
pub const AUTO_MIN_PAGES: u64 = 1024;

/// A layout whose batches read at least this fraction of the pages the
/// same rows would need if placed at random is flagged by `ginex-dump` and
/// `ginex epoch` (see [`Scatter::is_scattered`]).
pub const SCATTERED: f64 = 0.9;

/// The orders `--reorder auto` tries against the store's own.
pub const CANDIDATES: [Reorder; 2] = [Reorder::Bfs, Reorder::Degree];

/// Which batches to measure on.
#[derive(Debug, Clone, PartialEq)]
pub struct Sample {
    /// Batches sampled.
    pub batches: usize,
    /// Seeds a batch.
    pub batch_size: usize,
    /// Per-hop fanouts.
    pub fanouts: Vec<i64>,
    /// Seed of the shuffle and the draws.
    pub seed: u64,
}

impl Default for Sample {
    /// 8 batches of 1000 seeds, fanouts 10,10,10 (a default run's).
    fn default() -> Self {
        Sample {
            batches: 8,
            batch_size: 1000,
            fanouts: vec![10, 10, 10],
            seed: 0,
        }
    }
}

impl Sample {
    /// `N batches of B seeds, fanouts F` for messages, `batches` the
    /// number taken (fewer than asked where the seeds run out).
    pub fn describe(&self, batches: u64) -> String {
        let f: Vec<String> = self.fanouts.iter().map(i64::to_string).collect();
        format!(
            "{batches} batches of up to {} seeds, fanouts {}",
            self.batch_size,
            f.join(",")
        )
    }

    /// The sampled node ids of each batch (sorted, distinct).
    pub fn batches(&self, store: &Store) -> Result<Vec<Vec<u64>>> {
        let seeds = match store.splits()? {
            Some(s) if !s.train.is_empty() => s.train,
            _ => (0..store.num_nodes()).collect(),
        };
        let order = epoch_order(&seeds, self.seed, 0);
        let source = StoreSource::new(store, None, &GatherOptions::default())?;
        let mut out = Vec::new();
        for (b, seeds) in order
            .chunks(self.batch_size.max(1))
            .take(self.batches)
            .enumerate()
        {
            let batch = sample_batch(
                &source,
                seeds,
                &self.fanouts,
                batch_seed(self.seed, 0, b as u64),
            )?;
            let mut ids = batch.ids;
            ids.sort_unstable();
            ids.dedup();
            out.push(ids);
        }
        Ok(out)
    }
}

/// Distinct pages of `ids` (one batch's nodes) under the order `new_of`
/// (`new_of[old] = new`; `None`: the store's order); `rows_per_page >= 1`.
pub fn batch_pages(ids: &[u64], new_of: Option<&[u64]>, rows_per_page: u64) -> u64 {
    let rpp = rows_per_page.max(1);
    let mut pages: Vec<u64> = ids
        .iter()
        .map(|&v| {
            let at = new_of.and_then(|m| m.get(v as usize).copied()).unwrap_or(v);
            at / rpp
        })
        .collect();
    pages.sort_unstable();
    pages.dedup();
    pages.len() as u64
}

/// The distinct rows of `batches` together, sorted.
fn union(batches: &[Vec<u64>]) -> Vec<u64> {
    let mut rows = batches.concat();
    rows.sort_unstable();
    rows.dedup();
    rows
}

/// Expected distinct pages of `rows` rows placed uniformly at random on
/// `pages` pages of `rows_per_page` rows: `P (1 - (1 - 1/P)^r)`.
pub fn random_pages(rows: u64, pages: u64) -> f64 {
    if pages == 0 {
        return 0.0;
    }
    let p = pages as f64;
    p * (1.0 - (1.0 - 1.0 / p).powf(rows as f64))
}

/// How scattered a layout is: batches' pages against the pages of the
/// same rows placed at random. Cheap (no candidate order is computed):
/// what `ginex-dump` and `ginex epoch` check.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Scatter {
    /// Batches counted.
    pub batches: u64,
    /// Distinct rows a batch, mean.
    pub rows_per_batch: f64,
    /// Distinct pages a batch under the store's order, mean.
    pub pages_per_batch: f64,
    /// Expected pages a batch with its rows placed at random, mean.
    pub random_pages_per_batch: f64,
}

impl Scatter {
    /// Adds one batch's sampled nodes (any order, repeats allowed).
    pub fn add(&mut self, ids: &[u64], layout: &FeatureLayout, rows: u64) -> Result<()> {
        let rpp = layout.rows_per_page() as u64;
        if rpp < 2 {
            return Ok(());
        }
        let mut distinct = ids.to_vec();
        distinct.sort_unstable();
        distinct.dedup();
        let k = self.batches as f64;
        let mean = |old: f64, new: f64| (old * k + new) / (k + 1.0);
        self.rows_per_batch = mean(self.rows_per_batch, distinct.len() as f64);
        self.pages_per_batch = mean(
            self.pages_per_batch,
            batch_pages(&distinct, None, rpp) as f64,
        );
        self.random_pages_per_batch = mean(
            self.random_pages_per_batch,
            random_pages(distinct.len() as u64, layout.num_pages(rows)?),
        );
        self.batches += 1;
        Ok(())
    }

    /// Pages per batch over random placement's (1.0: no better than
    /// random ids).
    pub fn ratio(&self) -> f64 {
        self.pages_per_batch / self.random_pages_per_batch.max(1e-9)
    }

    /// At least [`SCATTERED`] of random placement's pages, on a store big
    /// enough to matter (`pages >= AUTO_MIN_PAGES`).
    pub fn is_scattered(&self, pages: u64) -> bool {
        self.batches > 0 && pages >= AUTO_MIN_PAGES && self.ratio() >= SCATTERED
    }

    /// The one-line hint for `store_path` when the layout is scattered
    /// (`ginex epoch`'s, which cannot afford to compute an order: it
    /// names the commands that measure one and write it).
    pub fn hint(&self, store_path: &std::path::Path, pages: u64) -> Option<String> {
        self.is_scattered(pages).then(|| {
            format!(
                "layout: a batch's rows lie on {:.2}x the pages random placement would use ({:.0} of {:.0} pages/batch, {:.0} rows): the node order is not local; `ginex-dump {}` measures what a BFS order saves and `ginex-import reorder {} --out NEW` writes it where it reads {AUTO_MARGIN:.2}x fewer pages",
                self.ratio(),
                self.pages_per_batch,
                self.random_pages_per_batch,
                self.rows_per_batch,
                store_path.display(),
                store_path.display(),
            )
        })
    }
}

/// The store's [`Scatter`] on `sample`'s batches; `None` where it means
/// nothing (a typed store, rows of a page or more, no nodes).
pub fn scatter(store: &Store, sample: &Sample) -> Result<Option<Scatter>> {
    let layout = store.layout();
    if store.schema().is_some() || layout.rows_per_page() < 2 || store.num_nodes() == 0 {
        return Ok(None);
    }
    let mut s = Scatter::default();
    for ids in sample.batches(store)? {
        s.add(&ids, &layout, store.num_nodes())?;
    }
    Ok(Some(s))
}

/// The pages the sampled batches touch together under the store's order
/// and each candidate.
#[derive(Debug, Clone, PartialEq)]
pub struct Measured {
    /// What was sampled.
    pub sample: Sample,
    /// Batches taken.
    pub batches: u64,
    /// Distinct rows the batches touch together.
    pub rows: u64,
    /// The pages those rows lie on under the store's order.
    pub current: f64,
    /// The pages they lie on under each candidate.
    pub candidates: Vec<(Reorder, f64)>,
    /// Time to sample and to compute the candidate orders.
    pub took: Duration,
}

impl Measured {
    /// The candidate with the fewest pages.
    pub fn best(&self) -> Option<(Reorder, f64)> {
        self.candidates
            .iter()
            .copied()
            .min_by(|a, b| a.1.total_cmp(&b.1))
    }
}

/// What `--reorder auto` chose, and why.
#[derive(Debug, Clone, PartialEq)]
pub struct Decision {
    /// The order applied (`none`: the store keeps its order).
    pub chosen: Reorder,
    /// Why, when nothing was measured (typed store, big rows, small file).
    pub skipped: Option<String>,
    /// The measurement, when taken.
    pub measured: Option<Measured>,
}

impl Decision {
    /// The hint for a store whose layout costs pages (the decision picks
    /// a reorder): the measured ratio and the command that fixes it.
    pub fn hint(&self, store_path: &std::path::Path) -> Option<String> {
        let m = self.measured.as_ref()?;
        let (how, pages) = m.best()?;
        (self.chosen != Reorder::None).then(|| {
            format!(
                "the layout costs pages: a {} order puts a superbatch's rows on {:.2}x fewer pages ({:.0} instead of {:.0}); `ginex-import reorder {} --out NEW` writes it",
                how.name(),
                m.current / pages.max(1e-9),
                pages,
                m.current,
                store_path.display()
            )
        })
    }
}

impl fmt::Display for Decision {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "reorder auto: {}", self.chosen.name())?;
        if let Some(why) = &self.skipped {
            return write!(f, " ({why})");
        }
        let Some(m) = &self.measured else {
            return Ok(());
        };
        write!(
            f,
            "; pages of the sampled batches together: none {:.0}",
            m.current
        )?;
        for (how, pages) in &m.candidates {
            write!(
                f,
                ", {} {:.0} (none/{} {:.2}x)",
                how.name(),
                pages,
                how.name(),
                m.current / pages.max(1e-9)
            )?;
        }
        write!(
            f,
            "; reorders at {AUTO_MARGIN:.2}x or more; {} ({} distinct rows), measured in {:.1} s",
            m.sample.describe(m.batches),
            m.rows,
            m.took.as_secs_f64()
        )
    }
}

/// `--reorder auto` on a finished store: the order to write it in, with
/// the measurement, and the order itself (`order[new] = old`) when it is
/// not `none`. `min_pages` is [`AUTO_MIN_PAGES`] outside tests.
pub fn decide(
    store: &Store,
    sample: &Sample,
    min_pages: u64,
) -> Result<(Decision, Option<Vec<u64>>)> {
    let layout = store.layout();
    let pages = layout.num_pages(store.feature_rows())?;
    let skip = |why: String| {
        Ok((
            Decision {
                chosen: Reorder::None,
                skipped: Some(why),
                measured: None,
            },
            None,
        ))
    };
    if store.schema().is_some() {
        return skip(
            "a typed store keeps its order: renumbering would break the node types' id ranges"
                .into(),
        );
    }
    let rpp = layout.rows_per_page() as u64;
    if rpp < 2 {
        return skip(format!(
            "a {}-byte row fills its own page(s): no order shares pages",
            layout.row_bytes()
        ));
    }
    if pages < min_pages {
        return skip(format!(
            "{pages} feature pages, under the {min_pages} where an order can change what an epoch reads"
        ));
    }
    let started = Instant::now();
    let batches = sample.batches(store)?;
    let rows = union(&batches);
    let current = batch_pages(&rows, None, rpp) as f64;
    let mut candidates = Vec::new();
    let mut best: Option<(f64, Reorder, Vec<u64>)> = None;
    for how in CANDIDATES {
        let order = node_order(store, how)?;
        let new_of = crate::import::node_order::invert(&order, store.num_nodes())?;
        let p = batch_pages(&rows, Some(&new_of), rpp) as f64;
        candidates.push((how, p));
        if best.as_ref().is_none_or(|(bp, _, _)| p < *bp) {
            best = Some((p, how, order));
        }
    }
    let measured = Measured {
        sample: sample.clone(),
        batches: batches.len() as u64,
        rows: rows.len() as u64,
        current,
        candidates,
        took: started.elapsed(),
    };
    let (chosen, order) = match best {
        Some((p, how, order)) if current >= p * AUTO_MARGIN => (how, Some(order)),
        _ => (Reorder::None, None),
    };
    Ok((
        Decision {
            chosen,
            skipped: None,
            measured: Some(measured),
        },
        order,
    ))
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing)]
mod tests {
    use super::*;
    use crate::format::pages::{Dtype, FeatureLayout};
    use crate::store::{ListSink, StoreBuilder, StoreSpec};
    use std::path::Path;

    /// A ring of `n` nodes, in-neighbours at ring distance 1..=3, with
    /// ring position `i` stored as node `perm[i]`; 64 f32 a row (16 rows
    /// a page).
    fn ring(path: &Path, perm: &[u64]) -> Store {
        let n = perm.len() as u64;
        let mut pos = vec![0u64; n as usize];
        for (i, &v) in perm.iter().enumerate() {
            pos[v as usize] = i as u64;
        }
        let layout = FeatureLayout::new(64, Dtype::F32).unwrap();
        let mut b = StoreBuilder::create(path, StoreSpec::new(n, layout)).unwrap();
        let mut rows = b.feature_writer().unwrap();
        rows.push_rows(&vec![0u8; n as usize * 256]).unwrap();
        b.add_features(rows).unwrap();
        let mut topo = b.topology_writer().unwrap();
        for v in 0..n {
            let i = pos[v as usize];
            let mut list: Vec<u64> = (1..=3)
                .flat_map(|d| [(i + d) % n, (i + n - d) % n])
                .map(|j| perm[j as usize])
                .collect();
            list.sort_unstable();
            topo.push_list(&list).unwrap();
        }
        b.add_topology(topo).unwrap();
        Store::open(b.finish().unwrap()).unwrap()
    }

    fn shuffled(n: u64, seed: u64) -> Vec<u64> {
        let mut perm: Vec<u64> = (0..n).collect();
        let mut rng = crate::rng::Wyrand(seed);
        for i in (1..perm.len()).rev() {
            perm.swap(i, rng.below(i as u64 + 1) as usize);
        }
        perm
    }

    fn sample() -> Sample {
        Sample {
            batches: 6,
            batch_size: 8,
            fanouts: vec![3, 3],
            seed: 0,
        }
    }

    #[test]
    fn auto_reorders_random_ids_and_keeps_a_local_order() {
        let dir = tempfile::tempdir().unwrap();
        let n = 16384;
        let local = ring(&dir.path().join("local"), &(0..n).collect::<Vec<_>>());
        let random = ring(&dir.path().join("random"), &shuffled(n, 7));

        let (d, order) = decide(&local, &sample(), 0).unwrap();
        assert_eq!(d.chosen, Reorder::None, "{d}");
        assert!(order.is_none());
        assert!(d.hint(Path::new("s")).is_none());

        let (d, order) = decide(&random, &sample(), 0).unwrap();
        assert_eq!(d.chosen, Reorder::Bfs, "{d}");
        let m = d.measured.as_ref().unwrap();
        let (_, bfs) = m.best().unwrap();
        assert!(m.current >= 3.0 * bfs, "{d}");
        // The order handed back is the one measured: its pages are bfs's.
        let order = order.unwrap();
        let new_of = crate::import::node_order::invert(&order, n).unwrap();
        let rows = union(&sample().batches(&random).unwrap());
        assert_eq!(batch_pages(&rows, Some(&new_of), 16) as f64, bfs);
        let hint = d.hint(Path::new("STORE")).unwrap();
        assert!(
            hint.contains("ginex-import reorder STORE --out NEW"),
            "{hint}"
        );
        assert!(format!("{d}").contains(&format!("none {:.0}", m.current)));

        // The cheap check agrees: random ids scatter, the ring does not.
        let s = scatter(&random, &sample()).unwrap().unwrap();
        assert!(s.ratio() > 0.9 && s.is_scattered(AUTO_MIN_PAGES), "{s:?}");
        let s = scatter(&local, &sample()).unwrap().unwrap();
        assert!(s.ratio() < 0.5 && !s.is_scattered(AUTO_MIN_PAGES), "{s:?}");
        assert!(s.hint(Path::new("s"), AUTO_MIN_PAGES).is_none());
    }

    /// Rows of two batches on one page are one page: the measure is the
    /// batches' pages together, as a superbatch reads them, not the sum
    /// of each batch's (which would count that page twice).
    #[test]
    fn the_sampled_batches_are_priced_together() {
        let batches = vec![vec![0, 5], vec![1, 6], vec![9]];
        let rows = union(&batches);
        assert_eq!(rows, [0, 1, 5, 6, 9]);
        // Four rows a page: pages 0, 1 and 2 together, 2 + 2 + 1 apart.
        assert_eq!(batch_pages(&rows, None, 4), 3);
        let apart: u64 = batches.iter().map(|b| batch_pages(b, None, 4)).sum();
        assert_eq!(apart, 5);
        // Under an order that puts 5, 6 beside 0, 1: two pages.
        let new_of: Vec<u64> = (0..10)
            .map(|v| match v {
                5 => 2,
                6 => 3,
                2 => 5,
                3 => 6,
                v => v,
            })
            .collect();
        assert_eq!(batch_pages(&rows, Some(&new_of), 4), 2);
    }

    #[test]
    fn auto_skips_small_files_and_page_sized_rows() {
        let dir = tempfile::tempdir().unwrap();
        let random = ring(&dir.path().join("random"), &shuffled(512, 3));
        // 32 pages, under the floor: kept unmeasured.
        let (d, order) = decide(&random, &sample(), AUTO_MIN_PAGES).unwrap();
        assert_eq!(d.chosen, Reorder::None);
        assert!(order.is_none() && d.measured.is_none());
        assert!(d.skipped.as_deref().unwrap().contains("32 feature pages"));
        // A row of a whole page: no order can share pages.
        let layout = FeatureLayout::new(1024, Dtype::F32).unwrap();
        let mut b =
            StoreBuilder::create(&dir.path().join("wide"), StoreSpec::new(4, layout)).unwrap();
        let mut rows = b.feature_writer().unwrap();
        rows.push_rows(&vec![0u8; 4 * 4096]).unwrap();
        b.add_features(rows).unwrap();
        let mut topo = b.topology_writer().unwrap();
        for _ in 0..4 {
            topo.push_list(&[]).unwrap();
        }
        b.add_topology(topo).unwrap();
        let wide = Store::open(b.finish().unwrap()).unwrap();
        let (d, _) = decide(&wide, &sample(), 0).unwrap();
        assert!(
            d.skipped.as_deref().unwrap().contains("its own page"),
            "{d}"
        );
        assert!(scatter(&wide, &sample()).unwrap().is_none());
    }

    #[test]
    fn random_placement_matches_a_count() {
        // r rows on P pages: P (1 - (1 - 1/P)^r); one row one page, and
        // many rows fill every page.
        assert!((random_pages(1, 100) - 1.0).abs() < 1e-9);
        assert!((random_pages(2, 2) - 1.5).abs() < 1e-9);
        assert!(random_pages(100_000, 100) > 99.99);
        assert_eq!(batch_pages(&[0, 1, 2, 3, 4], None, 4), 2);
        assert_eq!(batch_pages(&[0, 1], Some(&[0, 4]), 4), 2);
    }
}
