//! Where the sampler gets in-neighbor lists: the whole topology in memory,
//! or the store on disk through the batched reader (optionally in front of
//! a neighbor cache).

use std::sync::Mutex;

use crate::error::{Error, Result};
use crate::format::csc::IndexWidth;
use crate::format::header::FileKind;
use crate::store::gather::{GatherOptions, GatherStats, Gatherer};
use crate::store::segments::check_segment;
use crate::store::Store;

/// Serves the in-neighbor lists of many nodes at once (one hop's targets).
pub trait NeighborSource: Sync {
    /// Number of nodes.
    fn num_nodes(&self) -> u64;
    /// Calls `visit(i, list)` for each `nodes[i]` with its sorted list.
    fn with_lists(&self, nodes: &[u64], visit: &mut dyn FnMut(usize, &[u64])) -> Result<()>;
}

/// The whole CSC in memory (verified on load).
pub struct InMemoryTopology {
    indptr: Vec<u64>,
    indices: Vec<u64>,
}

impl InMemoryTopology {
    /// Loads every list of `store` (each segment checked against its CRC).
    pub fn load(store: &Store) -> Result<Self> {
        let path = store.path_of(FileKind::Indices);
        let bytes = std::fs::read(&path).map_err(|e| Error::io("read", &path, e))?;
        let width = store.index_width();
        let payload = bytes.get(crate::format::PAGE_SIZE..).unwrap_or_default();
        for (i, seg) in store.segments().iter().enumerate() {
            let lo = (seg.edge_start * width.bytes() as u64) as usize;
            let hi = lo + (seg.edge_count * width.bytes() as u64) as usize;
            let region = payload.get(lo..hi).ok_or_else(|| {
                Error::corrupt(
                    &path,
                    lo as u64,
                    format!("segment {i} lies outside the file"),
                )
            })?;
            check_segment(
                &path,
                i,
                seg,
                (crate::format::PAGE_SIZE + lo) as u64,
                region,
            )?;
        }
        let mut indices = Vec::with_capacity(store.num_edges() as usize);
        width.decode(payload, &mut indices);
        Ok(InMemoryTopology {
            indptr: store.indptr().to_vec(),
            indices,
        })
    }

    /// From raw CSC arrays (tests, small graphs).
    pub fn from_csc(indptr: Vec<u64>, indices: Vec<u64>) -> Self {
        InMemoryTopology { indptr, indices }
    }

    /// Bytes held.
    pub fn memory_bytes(&self) -> u64 {
        (self.indptr.len() + self.indices.len()) as u64 * 8
    }

    /// The list of `v`.
    pub fn list(&self, v: u64) -> &[u64] {
        let (lo, hi) = (
            self.indptr[v as usize] as usize,
            self.indptr[v as usize + 1] as usize,
        );
        &self.indices[lo..hi]
    }
}

impl NeighborSource for InMemoryTopology {
    fn num_nodes(&self) -> u64 {
        self.indptr.len().saturating_sub(1) as u64
    }
    fn with_lists(&self, nodes: &[u64], visit: &mut dyn FnMut(usize, &[u64])) -> Result<()> {
        let n = self.num_nodes();
        for (i, &v) in nodes.iter().enumerate() {
            if v >= n {
                return Err(Error::OutOfRange(format!(
                    "node {v} is not below the node count {n}"
                )));
            }
            visit(i, self.list(v));
        }
        Ok(())
    }
}

/// Something that may hold some nodes' lists in memory.
pub trait ListCache: Sync {
    /// Appends `v`'s list to `out` and returns true if cached.
    fn lookup(&self, v: u64, out: &mut Vec<u64>) -> Result<bool>;
}

/// Lists read from the store: empty lists answered from the resident
/// `indptr`, cache hits decoded, all misses of a call fetched in one
/// batched read.
pub struct StoreSource<'a> {
    store: &'a Store,
    gatherer: Mutex<Gatherer>,
    cache: Option<&'a dyn ListCache>,
    counters: Mutex<SourceCounters>,
}

/// Neighbor-source counters.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SourceCounters {
    /// Lists served from the cache.
    pub cache_hits: u64,
    /// Lists read from disk.
    pub cache_misses: u64,
    /// Empty lists, known from the resident `indptr` (neither cache nor
    /// disk is asked).
    pub empty: u64,
}

impl<'a> StoreSource<'a> {
    /// A source over `store`, with an optional neighbor cache in front.
    pub fn new(
        store: &'a Store,
        cache: Option<&'a dyn ListCache>,
        options: &GatherOptions,
    ) -> Result<Self> {
        Ok(StoreSource {
            store,
            gatherer: Mutex::new(Gatherer::new(store, options)?),
            cache,
            counters: Mutex::new(SourceCounters::default()),
        })
    }

    /// Counters so far.
    pub fn counters(&self) -> SourceCounters {
        self.counters.lock().map(|c| *c).unwrap_or_default()
    }

    /// The list reader's counters so far (lists, segments, reads, bytes).
    pub fn read_stats(&self) -> GatherStats {
        self.gatherer.lock().map(|g| g.stats()).unwrap_or_default()
    }

    /// Id width of the store.
    pub fn index_width(&self) -> IndexWidth {
        self.store.index_width()
    }
}

impl NeighborSource for StoreSource<'_> {
    fn num_nodes(&self) -> u64 {
        self.store.num_nodes()
    }

    fn with_lists(&self, nodes: &[u64], visit: &mut dyn FnMut(usize, &[u64])) -> Result<()> {
        let mut missing = Vec::new();
        let mut missing_at = Vec::new();
        let mut buf = Vec::new();
        let indptr = self.store.indptr();
        let mut empty = 0u64;
        for (i, &v) in nodes.iter().enumerate() {
            let at = usize::try_from(v).unwrap_or(usize::MAX);
            let (Some(lo), Some(hi)) = (indptr.get(at), indptr.get(at.saturating_add(1))) else {
                return Err(Error::OutOfRange(format!(
                    "node {v} is not below the node count {}",
                    self.store.num_nodes()
                )));
            };
            if lo == hi {
                empty += 1;
                visit(i, &[]);
                continue;
            }
            buf.clear();
            match self.cache {
                Some(c) if c.lookup(v, &mut buf)? => visit(i, &buf),
                _ => {
                    missing.push(v);
                    missing_at.push(i);
                }
            }
        }
        if let Ok(mut c) = self.counters.lock() {
            c.cache_hits += nodes.len() as u64 - empty - missing.len() as u64;
            c.cache_misses += missing.len() as u64;
            c.empty += empty;
        }
        if missing.is_empty() {
            return Ok(());
        }
        // Read and visited a buffer's worth at a time, never all at once.
        let mut g = self
            .gatherer
            .lock()
            .map_err(|_| Error::internal("neighbor reader poisoned by a panic"))?;
        g.visit_lists(self.store, &missing, &mut |k, list| {
            visit(missing_at[k], list)
        })
    }
}
