//! The `mmap` baseline (the paper's PyG+): features and indices memory-mapped
//! and read through the OS page cache, readahead disabled. No application
//! cache and — like the systems it stands for — no per-read checksum.

use memmap2::{Advice, Mmap};

use crate::error::{Error, Result};
use crate::format::header::FileKind;
use crate::format::pages::FeatureLayout;
use crate::format::PAGE_SIZE;
use crate::sample::source::NeighborSource;
use crate::store::Store;

/// What `--policy mmap` does not do, said once per run (a warning), in the
/// epoch report and in `--help`.
pub const MMAP_UNCHECKED: &str = "--policy mmap reads features and indices through the page cache without checking their CRCs (the fair PyG+ baseline): a damaged store gives wrong data silently; check it first with `ginex-dump --verify STORE`";

/// Memory-mapped features and indices of a store.
pub struct MmapStore<'a> {
    store: &'a Store,
    features: Mmap,
    indices: Mmap,
}

fn map(store: &Store, kind: FileKind) -> Result<Mmap> {
    let path = store.path_of(kind);
    let file = std::fs::File::open(&path).map_err(|e| Error::io("open", &path, e))?;
    let map = crate::io::read::map_readonly(&file, &path)?;
    map.advise(Advice::Random)
        .map_err(|e| Error::io("madvise", &path, e))?;
    Ok(map)
}

impl<'a> MmapStore<'a> {
    /// Maps `store`'s feature and indices files.
    pub fn open(store: &'a Store) -> Result<Self> {
        store.require_rows_are_ids("the mmap policy")?;
        tracing::warn!("{MMAP_UNCHECKED}");
        Ok(MmapStore {
            store,
            features: map(store, FileKind::FeaturePages)?,
            indices: map(store, FileKind::Indices)?,
        })
    }

    /// Copies the rows of `ids` into `out` from the mapped pages.
    pub fn gather(&self, ids: &[u64], out: &mut [u8]) -> Result<()> {
        let layout = self.store.feature_sections();
        let rb = self.store.layout().row_bytes();
        for (&id, dst) in ids.iter().zip(out.chunks_exact_mut(rb)) {
            if id >= self.store.num_nodes() {
                return Err(Error::OutOfRange(format!(
                    "node {id} is not below the node count {}",
                    self.store.num_nodes()
                )));
            }
            let loc = layout.locate(id);
            let at = FeatureLayout::page_offset(loc.page) as usize;
            let src = self
                .features
                .get(at..at + loc.pages as usize * PAGE_SIZE)
                .ok_or_else(|| {
                    Error::corrupt(self.store.dir(), at as u64, "row outside the mapped file")
                })?;
            layout.copy_row(src, loc.page, id, dst)?;
        }
        Ok(())
    }
}

impl NeighborSource for MmapStore<'_> {
    fn num_nodes(&self) -> u64 {
        self.store.num_nodes()
    }

    fn with_lists(&self, nodes: &[u64], visit: &mut dyn FnMut(usize, &[u64])) -> Result<()> {
        let width = self.store.index_width();
        let indptr = self.store.indptr();
        let mut list = Vec::new();
        for (i, &v) in nodes.iter().enumerate() {
            if v >= self.store.num_nodes() {
                return Err(Error::OutOfRange(format!(
                    "node {v} is not below the node count {}",
                    self.store.num_nodes()
                )));
            }
            let lo = width.edge_file_offset(indptr[v as usize]) as usize;
            let hi = width.edge_file_offset(indptr[v as usize + 1]) as usize;
            let bytes = self.indices.get(lo..hi).ok_or_else(|| {
                Error::corrupt(self.store.dir(), lo as u64, "list outside the mapped file")
            })?;
            list.clear();
            width.decode(bytes, &mut list);
            visit(i, &list);
        }
        Ok(())
    }
}
