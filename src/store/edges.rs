//! Out-of-core CSC construction from edges in any order.
//!
//! Edges are spilled to bucket files by destination range; each bucket is
//! then loaded, sorted by (destination, source) and emitted as in-neighbor
//! lists in node order to a [`ListSink`]. A bucket larger than the memory
//! budget is split again by a narrower destination range, so skewed
//! (power-law) graphs stay within budget. Only one bucket is in memory at a
//! time, plus one write buffer per bucket while spilling.

use std::fs::{self, File};
use std::io::{BufReader, BufWriter, Read, Write};
use std::path::{Path, PathBuf};

use rayon::slice::ParallelSliceMut;

use crate::error::{Error, Result};
use crate::format::csc::IndexWidth;
use crate::io::space::Metered;
use crate::store::ListSink;

/// What to do with duplicate edges and self-loops while building.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CscOptions {
    /// Keep one copy of each (source, destination) pair.
    pub dedup: bool,
    /// Drop edges whose source equals their destination.
    pub remove_self_loops: bool,
}

/// Counts from a finished build.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CscStats {
    /// Edges pushed.
    pub edges_in: u64,
    /// Edges emitted.
    pub edges_out: u64,
    /// Duplicates dropped.
    pub duplicates_removed: u64,
    /// Self-loops dropped.
    pub self_loops_removed: u64,
    /// Buckets sorted (after splitting).
    pub buckets_sorted: u64,
}

const SPILL_BUFFER: usize = 256 << 10;
const MAX_BUCKETS: u64 = 1024;

/// Spills edges to destination-range buckets; see the module docs.
pub struct EdgeBucketer {
    scratch: PathBuf,
    num_nodes: u64,
    width: IndexWidth,
    bucket_nodes: u64,
    writers: Vec<BufWriter<Metered<File>>>,
    counts: Vec<u64>,
    memory_budget: u64,
    edges_in: u64,
    record: Vec<u8>,
}

/// Bytes one edge takes in memory while sorting.
fn memory_per_edge(width: IndexWidth) -> u64 {
    match width {
        IndexWidth::U32 => 8,
        IndexWidth::U64 => 16,
    }
}

impl EdgeBucketer {
    /// Starts a build for `num_nodes` nodes with scratch files under
    /// `scratch` (created here, so it must not exist, and removed by
    /// `finish`: a directory this build owns). `expected_edges` sizes
    /// the initial bucket count; `memory_budget` bounds the sort buffer.
    pub fn new(
        scratch: &Path,
        num_nodes: u64,
        expected_edges: u64,
        memory_budget: u64,
    ) -> Result<Self> {
        fs::create_dir(scratch).map_err(|e| Error::io("create directory", scratch, e))?;
        let width = IndexWidth::for_nodes(num_nodes);
        let budget = memory_budget.max(1 << 20);
        let wanted =
            (expected_edges.saturating_mul(memory_per_edge(width)) / budget + 1).saturating_mul(2);
        let buckets = wanted.clamp(1, MAX_BUCKETS).min(num_nodes.max(1));
        let bucket_nodes = num_nodes.div_ceil(buckets).max(1);
        let count = num_nodes.div_ceil(bucket_nodes).max(1) as usize;
        let mut writers = Vec::with_capacity(count);
        for i in 0..count {
            let path = scratch.join(format!("bucket-{i}"));
            let f = File::create(&path).map_err(|e| Error::io("create", &path, e))?;
            writers.push(BufWriter::with_capacity(SPILL_BUFFER, Metered::new(f)));
        }
        Ok(EdgeBucketer {
            scratch: scratch.to_path_buf(),
            num_nodes,
            width,
            bucket_nodes,
            writers,
            counts: vec![0; count],
            memory_budget: budget,
            edges_in: 0,
            record: Vec::with_capacity(16),
        })
    }

    /// Adds one edge `src -> dst` (so `src` is an in-neighbor of `dst`).
    pub fn push(&mut self, src: u64, dst: u64) -> Result<()> {
        if src >= self.num_nodes || dst >= self.num_nodes {
            return Err(Error::OutOfRange(format!(
                "edge {src} -> {dst} has an id not below the node count {}",
                self.num_nodes
            )));
        }
        let b = (dst / self.bucket_nodes) as usize;
        self.record.clear();
        self.width.push(dst, &mut self.record);
        self.width.push(src, &mut self.record);
        let path = &self.scratch;
        self.writers[b]
            .write_all(&self.record)
            .map_err(|e| Error::io("write", path.join(format!("bucket-{b}")), e))?;
        self.counts[b] += 1;
        self.edges_in += 1;
        Ok(())
    }

    /// Edges pushed so far.
    pub fn edges_pushed(&self) -> u64 {
        self.edges_in
    }

    /// Sorts every bucket and emits all `num_nodes` lists in node order.
    pub fn finish(self, opts: CscOptions, sink: &mut dyn ListSink) -> Result<CscStats> {
        let EdgeBucketer {
            scratch,
            num_nodes,
            width,
            bucket_nodes,
            writers,
            counts,
            memory_budget,
            edges_in,
            ..
        } = self;
        let mut paths = Vec::with_capacity(writers.len());
        for (i, w) in writers.into_iter().enumerate() {
            let path = scratch.join(format!("bucket-{i}"));
            w.into_inner()
                .map_err(|e| Error::io("write", &path, e.into_error()))?;
            paths.push(path);
        }
        let mut job = SortJob {
            width,
            memory_budget,
            opts,
            stats: CscStats {
                edges_in,
                ..CscStats::default()
            },
            sink,
            scratch: scratch.clone(),
            next_split: 0,
        };
        for (i, (path, count)) in paths.iter().zip(counts).enumerate() {
            let lo = i as u64 * bucket_nodes;
            let hi = (lo + bucket_nodes).min(num_nodes);
            job.bucket(path, count, lo, hi)?;
        }
        fs::remove_dir_all(&scratch).map_err(|e| Error::io("remove directory", &scratch, e))?;
        Ok(job.stats)
    }
}

struct SortJob<'a> {
    width: IndexWidth,
    memory_budget: u64,
    opts: CscOptions,
    stats: CscStats,
    sink: &'a mut dyn ListSink,
    scratch: PathBuf,
    next_split: u64,
}

impl SortJob<'_> {
    /// Emits the lists of nodes `lo..hi` from the bucket at `path`.
    fn bucket(&mut self, path: &Path, count: u64, lo: u64, hi: u64) -> Result<()> {
        if count.saturating_mul(memory_per_edge(self.width)) > self.memory_budget {
            if hi - lo == 1 {
                return Err(Error::invalid_argument(format!(
                    "node {lo} has {count} in-edges, more than fit the memory budget of {} bytes; raise --memory",
                    self.memory_budget
                )));
            }
            return self.split(path, count, lo, hi);
        }
        let edges = self.load(path, count)?;
        fs::remove_file(path).map_err(|e| Error::io("remove", path, e))?;
        self.stats.buckets_sorted += 1;
        self.emit(edges, lo, hi)
    }

    /// Re-buckets an oversized bucket into narrower destination ranges.
    fn split(&mut self, path: &Path, count: u64, lo: u64, hi: u64) -> Result<()> {
        let parts = (count.saturating_mul(memory_per_edge(self.width)) / self.memory_budget + 1)
            .saturating_mul(2)
            .min(hi - lo)
            .min(MAX_BUCKETS);
        let part_nodes = (hi - lo).div_ceil(parts);
        let parts = (hi - lo).div_ceil(part_nodes) as usize;
        let id = self.next_split;
        self.next_split += 1;
        let sub_paths: Vec<PathBuf> = (0..parts)
            .map(|p| self.scratch.join(format!("split-{id}-{p}")))
            .collect();
        let mut writers = Vec::with_capacity(parts);
        for p in &sub_paths {
            writers.push(BufWriter::with_capacity(
                SPILL_BUFFER,
                Metered::new(File::create(p).map_err(|e| Error::io("create", p, e))?),
            ));
        }
        let mut counts = vec![0u64; parts];
        self.read_spill(path, count, 4096, |r, pair| {
            let p = ((pair[0] - lo) / part_nodes) as usize;
            writers[p]
                .write_all(r)
                .map_err(|e| Error::io("write", &sub_paths[p], e))?;
            counts[p] += 1;
            Ok(())
        })?;
        fs::remove_file(path).map_err(|e| Error::io("remove", path, e))?;
        for (w, p) in writers.into_iter().zip(&sub_paths) {
            w.into_inner()
                .map_err(|e| Error::io("write", p, e.into_error()))?;
        }
        for (i, (p, c)) in sub_paths.iter().zip(counts).enumerate() {
            let sub_lo = lo + i as u64 * part_nodes;
            self.bucket(p, c, sub_lo, (sub_lo + part_nodes).min(hi))?;
        }
        Ok(())
    }

    /// Loads a bucket as `(dst, src)` pairs packed for sorting.
    fn load(&self, path: &Path, count: u64) -> Result<Edges> {
        let mut edges = match self.width {
            IndexWidth::U32 => Edges::Packed(Vec::with_capacity(count as usize)),
            IndexWidth::U64 => Edges::Wide(Vec::with_capacity(count as usize)),
        };
        self.read_spill(path, count, 8192, |_, pair| {
            match &mut edges {
                Edges::Packed(v) => v.push(pair[0] << 32 | pair[1]),
                Edges::Wide(v) => v.push((pair[0], pair[1])),
            }
            Ok(())
        })?;
        Ok(edges)
    }

    /// Streams the `count` `(dst, src)` records of a spill file, `chunk`
    /// records per read, calling `visit(record bytes, [dst, src])` on each.
    fn read_spill(
        &self,
        path: &Path,
        count: u64,
        chunk: usize,
        mut visit: impl FnMut(&[u8], &[u64]) -> Result<()>,
    ) -> Result<()> {
        let rec = 2 * self.width.bytes();
        let mut reader = BufReader::with_capacity(
            SPILL_BUFFER,
            File::open(path).map_err(|e| Error::io("open", path, e))?,
        );
        let mut buf = vec![0u8; rec * chunk];
        let mut left = count;
        let mut pair = Vec::with_capacity(2);
        while left > 0 {
            let n = left.min(chunk as u64) as usize;
            reader
                .read_exact(&mut buf[..n * rec])
                .map_err(|e| Error::io("read", path, e))?;
            for r in buf[..n * rec].chunks_exact(rec) {
                pair.clear();
                self.width.decode(r, &mut pair);
                visit(r, &pair)?;
            }
            left -= n as u64;
        }
        Ok(())
    }

    fn emit(&mut self, mut edges: Edges, lo: u64, hi: u64) -> Result<()> {
        match &mut edges {
            Edges::Packed(v) => v.par_sort_unstable(),
            Edges::Wide(v) => v.par_sort_unstable(),
        }
        let len = edges.len();
        let mut i = 0usize;
        let mut list = Vec::new();
        for v in lo..hi {
            list.clear();
            while i < len {
                let (dst, src) = edges.get(i);
                if dst != v {
                    break;
                }
                i += 1;
                if self.opts.remove_self_loops && src == dst {
                    self.stats.self_loops_removed += 1;
                    continue;
                }
                if self.opts.dedup && list.last() == Some(&src) {
                    self.stats.duplicates_removed += 1;
                    continue;
                }
                list.push(src);
            }
            self.stats.edges_out += list.len() as u64;
            self.sink.push_list(&list)?;
        }
        Ok(())
    }
}

enum Edges {
    /// `dst << 32 | src` for stores with 32-bit ids.
    Packed(Vec<u64>),
    /// `(dst, src)` otherwise.
    Wide(Vec<(u64, u64)>),
}

impl Edges {
    fn len(&self) -> usize {
        match self {
            Edges::Packed(v) => v.len(),
            Edges::Wide(v) => v.len(),
        }
    }

    fn get(&self, i: usize) -> (u64, u64) {
        match self {
            Edges::Packed(v) => (v[i] >> 32, v[i] & 0xffff_ffff),
            Edges::Wide(v) => v[i],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[derive(Default)]
    struct Collect(Vec<Vec<u64>>);
    impl ListSink for Collect {
        fn push_list(&mut self, list: &[u64]) -> Result<()> {
            self.0.push(list.to_vec());
            Ok(())
        }
    }

    fn reference(n: u64, edges: &[(u64, u64)], opts: CscOptions) -> Vec<Vec<u64>> {
        let mut lists = vec![Vec::new(); n as usize];
        for &(s, d) in edges {
            if !(opts.remove_self_loops && s == d) {
                lists[d as usize].push(s);
            }
        }
        for l in &mut lists {
            l.sort_unstable();
            if opts.dedup {
                l.dedup();
            }
        }
        lists
    }

    proptest! {
        /// Any edge set, any budget (tiny budgets force recursive splits):
        /// the lists equal a simple in-memory reference.
        #[test]
        fn matches_in_memory_reference(
            n in 1u64..300,
            raw in proptest::collection::vec((any::<u64>(), any::<u64>()), 0..2000),
            budget_kib in 1u64..64,
            dedup in any::<bool>(),
            loops in any::<bool>(),
        ) {
            let edges: Vec<(u64, u64)> = raw.iter().map(|&(s, d)| (s % n, (d % n) / 3 * 3 % n)).collect();
            let dir = tempfile::tempdir().unwrap();
            let opts = CscOptions { dedup, remove_self_loops: loops };
            let mut b = EdgeBucketer::new(&dir.path().join("scratch"), n, 16, budget_kib << 10).unwrap();
            // Budgets below 1 MiB are raised to 1 MiB; test tiny ones directly,
            // but large enough for the biggest single list (else it must fail).
            let max_in = reference(n, &edges, CscOptions::default()).iter().map(|l| l.len() as u64).max().unwrap_or(0);
            b.memory_budget = (budget_kib * 64).max(max_in * 8);
            for &(s, d) in &edges { b.push(s, d).unwrap(); }
            let mut out = Collect::default();
            let stats = b.finish(opts, &mut out).unwrap();
            prop_assert_eq!(&out.0, &reference(n, &edges, opts));
            prop_assert_eq!(stats.edges_out, out.0.iter().map(|l| l.len() as u64).sum::<u64>());
            prop_assert!(!dir.path().join("scratch").exists());
        }
    }

    #[test]
    fn one_node_over_budget_is_a_clear_error() {
        let dir = tempfile::tempdir().unwrap();
        let mut b = EdgeBucketer::new(&dir.path().join("s"), 4, 0, 0).unwrap();
        b.memory_budget = 64;
        for s in 0..100 {
            b.push(s % 4, 2).unwrap();
        }
        let err = b
            .finish(CscOptions::default(), &mut Collect::default())
            .unwrap_err()
            .to_string();
        assert!(err.contains("node 2") && err.contains("--memory"), "{err}");
    }

    #[test]
    fn out_of_range_edge_is_rejected() {
        let dir = tempfile::tempdir().unwrap();
        let mut b = EdgeBucketer::new(&dir.path().join("s"), 4, 0, 0).unwrap();
        assert!(b.push(4, 0).is_err());
    }
}
