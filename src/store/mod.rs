//! The on-disk graph store: open, read, verify; build with [`StoreBuilder`].
//!
//! A store is a directory (`format/README.md`: its files and the creation
//! protocol; one spec per file kind beside it). Opening checks the manifest
//! and every file's header and length and loads the small tables (`indptr`,
//! the segment table, page CRCs); feature rows and neighbor lists stay on
//! disk and every read from disk is checked against its page or segment CRC.

mod builder;
pub mod edge_splits;
pub mod edges;
pub mod gather;
mod node_ids;
mod out_degrees;
pub mod read_cost;
pub mod relation_counts;
pub mod row_targets;
pub mod segments;
mod verify;

pub(crate) use builder::TOPOLOGY_WRITER_BYTES_PER_NODE;
pub use builder::{FeatureWriter, ListSink, StoreBuilder, StoreSpec, TopologyWriter};
pub use node_ids::NodeIds;
pub use segments::STREAM_CHUNK_BYTES;
pub use verify::VerifyReport;

use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::error::{Error, Result};
use crate::format::bytes::{le_u32, le_u64};
use crate::format::csc::{decode_segment_table, validate_indptr, IndexWidth, Segment};
use crate::format::header::{FileHeader, FileKind, HEADER_SIZE};
use crate::format::manifest::{store_file_name, Manifest};
use crate::format::pages::{Dtype, FeatureLayout};
use crate::format::q8::Q8Error;
use crate::format::schema::Schema;
use crate::format::sections::FeatureSections;
use crate::format::tables::{decode_labels, decode_original_ids, Splits};
use crate::format::PAGE_SIZE;
use crate::io::read::{open, read_exact_at};

/// An open store: counts, feature rows of any ids, in-neighbor lists,
/// labels and splits; every read from disk is checked against its CRC.
///
/// ```
/// # fn main() -> ginex::Result<()> {
/// # let tmp = tempfile::tempdir().unwrap();
/// # let path = tmp.path().join("store");
/// # ginex::generate_store(&ginex::SynthParams { nodes: 1000, dim: 8, classes: 4, ..Default::default() },
/// #     &path, &ginex::NoProgress)?;
/// let store = ginex::Store::open(&path)?;
/// println!("{} nodes, {} edges, {} × {}", store.num_nodes(), store.num_edges(),
///     store.feature_dim(), store.dtype().name());
/// let ids = [0, 7, 42];
/// let mut x = vec![0f32; ids.len() * store.feature_dim() as usize];
/// store.read_feature_rows_f32(&ids, &mut x)?;
/// let neighbors = store.in_neighbors(42)?; // sorted
/// assert_eq!(neighbors.len() as u64, store.in_degree(42)?);
/// let labels = store.labels()?.expect("a labelled store"); // -1 = missing
/// let splits = store.splits()?.expect("a store with splits");
/// assert!(splits.train.iter().all(|&v| labels[v as usize] >= 0));
/// store.verify()?; // every byte of every file against its checksum
/// # Ok(()) }
/// ```
///
/// Cloning is cheap: clones share the in-memory tables and the open files
/// (reference counted), so a clone can be moved to another thread (the
/// [`Loader`](crate::Loader) does) without reading anything again.
#[derive(Debug, Clone)]
pub struct Store {
    dir: PathBuf,
    manifest: Arc<Manifest>,
    indptr: Arc<[u64]>,
    segments: Arc<[Segment]>,
    page_crcs: Arc<[u32]>,
    features: Arc<File>,
    indices: Arc<File>,
    schema: Option<Arc<Schema>>,
    sections: Arc<FeatureSections>,
    q8_error: Option<Q8Error>,
}

/// A small file read whole and checked: its header and payload.
#[derive(Debug)]
pub struct CheckedFile {
    /// The decoded header.
    pub header: FileHeader,
    /// The payload, its CRC checked.
    pub payload: Vec<u8>,
}

impl CheckedFile {
    /// Runs a payload decoder of `crate::format`, reporting its error
    /// offsets as file offsets.
    pub fn decode<T>(&self, decode: impl FnOnce(&[u8]) -> Result<T>) -> Result<T> {
        decode(&self.payload).map_err(|e| e.in_payload_at(u64::from(self.header.header_len)))
    }
}

/// Reads a whole small file, checks its header, kind and payload CRC, and
/// returns it. The payload is read straight into its buffer (no copy), so
/// peak memory is the payload size.
pub fn read_checked_file(path: &Path, kind: FileKind) -> Result<CheckedFile> {
    let file = open(path)?;
    let file_len = file
        .metadata()
        .map_err(|e| Error::io("stat", path, e))?
        .len();
    let mut head = [0u8; HEADER_SIZE];
    let head_len = (file_len as usize).min(HEADER_SIZE);
    read_exact_at(&file, path, 0, &mut head[..head_len])?;
    let header = FileHeader::decode(&head[..head_len], path)?.expect_kind(kind, path)?;
    let start = u64::from(header.header_len);
    let on_disk = file_len.saturating_sub(start);
    if file_len < start || on_disk != header.payload_len {
        return Err(Error::corrupt(
            path,
            start,
            format!(
                "payload is {on_disk} bytes but the header says {}",
                header.payload_len
            ),
        ));
    }
    let mut payload = vec![0u8; on_disk as usize];
    read_exact_at(&file, path, start, &mut payload)?;
    let got = crate::format::crc32(&payload);
    Error::check_crc(path, "payload", start, header.payload_crc, got)?;
    Ok(CheckedFile { header, payload })
}

impl Store {
    /// Opens the store at `dir`: manifest (checksum, version), every listed
    /// file (exists, length, header, kind, CRC agrees with the manifest), and
    /// the in-memory tables (each checked against its CRC).
    pub fn open(dir: impl AsRef<Path>) -> Result<Store> {
        let dir = dir.as_ref().to_path_buf();
        let manifest_path = dir.join(store_file_name(FileKind::Manifest));
        if !manifest_path.exists() {
            return Err(Error::invalid_argument(format!(
                "{} is not a ginex store: it has no {} file",
                dir.display(),
                store_file_name(FileKind::Manifest)
            )));
        }
        let manifest = read_checked_file(&manifest_path, FileKind::Manifest)?
            .decode(|p| Manifest::decode(p, &manifest_path))?;
        let mut q8_error = None;
        for entry in &manifest.files {
            let path = dir.join(entry.name());
            let file = open(&path)?;
            let len = file
                .metadata()
                .map_err(|e| Error::io("stat", &path, e))?
                .len();
            if len != entry.len {
                return Err(Error::corrupt(
                    &path,
                    len.min(entry.len),
                    format!("file is {len} bytes, the manifest says {}", entry.len),
                ));
            }
            let mut head = [0u8; HEADER_SIZE];
            read_exact_at(&file, &path, 0, &mut head)?;
            let header = FileHeader::decode(&head, &path)?.expect_kind(entry.kind, &path)?;
            if header.file_len() != len || header.payload_crc != entry.payload_crc {
                return Err(Error::corrupt(
                    &path,
                    0,
                    "header disagrees with the manifest (length or checksum)",
                ));
            }
            if entry.kind == FileKind::FeaturePages {
                q8_error = check_layout_record(&file, &path, header.version, &manifest)?;
            }
        }
        let n = manifest.num_nodes;
        let path_of = |k: FileKind| dir.join(store_file_name(k));

        let indptr_file = read_checked_file(&path_of(FileKind::Indptr), FileKind::Indptr)?;
        expect_len(
            &path_of(FileKind::Indptr),
            indptr_file.payload.len() as u64,
            n.checked_add(1).and_then(|x| x.checked_mul(8)),
        )?;
        let indptr = indptr_file.decode(|p| {
            let indptr: Vec<u64> = p.chunks_exact(8).map(|c| le_u64(c, 0)).collect();
            validate_indptr(&indptr, manifest.num_edges, &path_of(FileKind::Indptr))?;
            Ok(indptr)
        })?;
        drop(indptr_file);

        let segments = read_checked_file(&path_of(FileKind::SegmentTable), FileKind::SegmentTable)?
            .decode(|p| decode_segment_table(p, &indptr, &path_of(FileKind::SegmentTable)))?;

        let schema = match manifest.file(FileKind::Schema) {
            None => None,
            Some(_) => {
                let path = path_of(FileKind::Schema);
                let file = read_checked_file(&path, FileKind::Schema)?;
                let store = (n, manifest.num_edges, manifest.layout);
                Some(Arc::new(file.decode(|p| {
                    Schema::decode(p, &path, store, file.header.version)
                })?))
            }
        };
        let sections =
            FeatureSections::of(schema.as_deref(), manifest.layout, n).map_err(|_| {
                Error::corrupt(&manifest_path, 0, "node count overflows the page space")
            })?;
        let num_pages = sections.num_pages();
        let p =
            read_checked_file(&path_of(FileKind::PageChecksums), FileKind::PageChecksums)?.payload;
        expect_len(
            &path_of(FileKind::PageChecksums),
            p.len() as u64,
            num_pages.checked_mul(4),
        )?;
        let page_crcs: Vec<u32> = p.chunks_exact(4).map(|c| le_u32(c, 0)).collect();

        let features_len = manifest
            .file(FileKind::FeaturePages)
            .map(|f| f.len)
            .unwrap_or(0);
        expect_len(
            &path_of(FileKind::FeaturePages),
            features_len,
            num_pages
                .checked_mul(PAGE_SIZE as u64)
                .and_then(|x| x.checked_add(PAGE_SIZE as u64)),
        )?;
        let indices_len = manifest.file(FileKind::Indices).map(|f| f.len).unwrap_or(0);
        let expected_indices = manifest
            .index_width
            .edge_offset(manifest.num_edges)
            .and_then(|x| x.checked_add(PAGE_SIZE as u64));
        expect_len(&path_of(FileKind::Indices), indices_len, expected_indices)?;

        Ok(Store {
            features: Arc::new(open(&path_of(FileKind::FeaturePages))?),
            indices: Arc::new(open(&path_of(FileKind::Indices))?),
            dir,
            manifest: Arc::new(manifest),
            indptr: indptr.into(),
            segments: segments.into(),
            page_crcs: page_crcs.into(),
            schema,
            sections: Arc::new(sections),
            q8_error,
        })
    }

    /// The node types and relations of a typed store (None: a one-type
    /// graph; see `format/schema.md`).
    pub fn schema(&self) -> Option<&Schema> {
        self.schema.as_deref()
    }

    /// Rows in the feature matrix: every node, or in a typed store the
    /// nodes of the types that have features.
    pub fn feature_rows(&self) -> u64 {
        self.schema
            .as_ref()
            .map_or(self.num_nodes(), |s| s.feature_rows())
    }

    /// The feature row of node `v` (`v` itself unless a typed store has
    /// featureless types before it); an error for a node of a featureless
    /// type.
    pub fn feature_row(&self, v: u64) -> Result<u64> {
        self.check_node(v)?;
        let Some(schema) = &self.schema else {
            return Ok(v);
        };
        schema.feature_row(v).ok_or_else(|| {
            let t = schema.node_types.get(schema.type_of(v));
            Error::invalid_argument(format!(
                "node {v} is of type {}, which has no features",
                t.map_or("?", |t| t.name.as_str())
            ))
        })
    }

    /// Refuses a store whose feature rows are not its node ids (a typed
    /// store with a featureless type) for `what`, which reads rows by id.
    pub fn require_rows_are_ids(&self, what: &str) -> Result<()> {
        match &self.schema {
            Some(s) if !s.rows_are_ids() => {
                let featureless: Vec<&str> = s
                    .node_types
                    .iter()
                    .filter(|t| !t.has_features())
                    .map(|t| t.name.as_str())
                    .collect();
                Err(Error::invalid_argument(format!(
                    "{}: {what} needs features on every node, but the node types {featureless:?} have none; give them features first (`ginex derive-features STORE --type T --from F --via RELATION --out NEW`)",
                    self.dir.display()
                )))
            }
            _ => Ok(()),
        }
    }

    /// The store directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The decoded manifest.
    #[doc(hidden)]
    pub fn manifest(&self) -> &Manifest {
        &self.manifest
    }

    /// Number of nodes.
    pub fn num_nodes(&self) -> u64 {
        self.manifest.num_nodes
    }

    /// Number of edges.
    pub fn num_edges(&self) -> u64 {
        self.manifest.num_edges
    }

    /// Elements per feature row.
    pub fn feature_dim(&self) -> u32 {
        self.manifest.layout.dim
    }

    /// Feature element type.
    pub fn dtype(&self) -> Dtype {
        self.manifest.layout.dtype
    }

    /// The row format: the dimension and dtype every feature row is
    /// returned in (the only layout on disk too, unless a typed store's
    /// types differ; see [`feature_sections`](Self::feature_sections)).
    pub fn layout(&self) -> FeatureLayout {
        self.manifest.layout
    }

    /// Where each feature row lives in the feature pages.
    #[doc(hidden)]
    pub fn feature_sections(&self) -> &FeatureSections {
        &self.sections
    }

    /// Width of ids in `indices`.
    #[doc(hidden)]
    pub fn index_width(&self) -> IndexWidth {
        self.manifest.index_width
    }

    /// Number of label classes (0 without labels).
    pub fn num_classes(&self) -> u32 {
        self.manifest.num_classes
    }

    /// Bytes the open store keeps in memory whatever a run does: `indptr`
    /// (8 per node and one), the page CRCs (4 per feature page) and the
    /// segment table (a `Segment`, 40 bytes, each); the memory planner's
    /// share for it.
    pub fn resident_bytes(&self) -> u64 {
        8 * self.indptr.len() as u64
            + 4 * self.page_crcs.len() as u64
            + std::mem::size_of::<Segment>() as u64 * self.segments.len() as u64
    }

    /// The CSC offsets (`num_nodes + 1` entries), resident in memory.
    pub fn indptr(&self) -> &[u64] {
        &self.indptr
    }

    /// The segment table.
    #[doc(hidden)]
    pub fn segments(&self) -> &[Segment] {
        &self.segments
    }

    /// In-degree of `v`.
    pub fn in_degree(&self, v: u64) -> Result<u64> {
        self.check_node(v)?;
        Ok(self.indptr[v as usize + 1] - self.indptr[v as usize])
    }

    fn check_node(&self, v: u64) -> Result<()> {
        if v >= self.num_nodes() {
            return Err(Error::OutOfRange(format!(
                "node {v} is not below the node count {}",
                self.num_nodes()
            )));
        }
        Ok(())
    }

    /// The path of the store's file of `kind` (the one place that builds
    /// it from the directory and the file name).
    #[doc(hidden)]
    pub fn path_of(&self, kind: FileKind) -> PathBuf {
        self.dir.join(store_file_name(kind))
    }

    /// The sorted in-neighbor list of `v`, read from disk; the segment that
    /// holds it is checked against its CRC.
    pub fn in_neighbors(&self, v: u64) -> Result<Vec<u64>> {
        self.check_node(v)?;
        let seg_index = self.segments.partition_point(|s| s.end_node() <= v);
        let seg = self.segments[seg_index];
        let width = self.index_width();
        let path = self.path_of(FileKind::Indices);
        let start = width.edge_file_offset(seg.edge_start);
        let mut buf = vec![0u8; seg.edge_count as usize * width.bytes()];
        read_exact_at(&self.indices, &path, start, &mut buf)?;
        segments::check_segment(&path, seg_index, &seg, start, &buf)?;
        let lo = (self.indptr[v as usize] - seg.edge_start) as usize * width.bytes();
        let hi = (self.indptr[v as usize + 1] - seg.edge_start) as usize * width.bytes();
        let mut out = Vec::with_capacity((hi - lo) / width.bytes());
        width.decode(&buf[lo..hi], &mut out);
        Ok(out)
    }

    /// Reads the rows of `ids` (in that order) as raw little-endian bytes of
    /// the store dtype into `out` (`ids.len() * row_bytes` bytes). Every page
    /// read is checked against its CRC.
    pub fn read_feature_rows(&self, ids: &[u64], out: &mut [u8]) -> Result<()> {
        let sections = self.feature_sections();
        let row_bytes = self.layout().row_bytes();
        Error::check_output_len(out.len(), ids.len(), row_bytes, "bytes")?;
        let mut page_buf = vec![0u8; sections.max_pages_per_row() as usize * PAGE_SIZE];
        let mut loaded: Option<u64> = None;
        for (&id, dst) in ids.iter().zip(out.chunks_exact_mut(row_bytes)) {
            let row = self.feature_row(id)?;
            let loc = sections.locate(row);
            if loaded != Some(loc.page) {
                self.read_pages(loc.page, &mut page_buf[..loc.pages as usize * PAGE_SIZE])?;
                loaded = Some(loc.page);
            }
            sections.copy_row(&page_buf, loc.page, row, dst)?;
        }
        Ok(())
    }

    /// Appends the consecutive rows `rows` as raw little-endian bytes of
    /// the store dtype to `out`, their pages read with one read into the
    /// scratch buffer `pages` (the exporters' sequential reads). Every page
    /// read is checked against its CRC.
    #[doc(hidden)]
    pub fn read_feature_range(
        &self,
        rows: std::ops::Range<u64>,
        pages: &mut Vec<u8>,
        out: &mut Vec<u8>,
    ) -> Result<()> {
        let Some(last) = rows.end.checked_sub(1).filter(|_| !rows.is_empty()) else {
            return Ok(());
        };
        let (first, last_row) = (self.feature_row(rows.start)?, self.feature_row(last)?);
        if last_row - first != last - rows.start {
            return Err(Error::invalid_argument(format!(
                "nodes {}..={last} span node types; read each type's range on its own",
                rows.start
            )));
        }
        let sections = self.feature_sections();
        let (head, tail) = (sections.locate(first), sections.locate(last_row));
        pages.resize((tail.page + tail.pages - head.page) as usize * PAGE_SIZE, 0);
        self.read_pages(head.page, pages)?;
        let row_bytes = self.layout().row_bytes();
        let at = out.len();
        out.resize(at + (last_row - first + 1) as usize * row_bytes, 0);
        for (row, dst) in (first..=last_row).zip(out[at..].chunks_exact_mut(row_bytes)) {
            sections.copy_row(pages, head.page, row, dst)?;
        }
        Ok(())
    }

    /// Like [`read_feature_rows`](Self::read_feature_rows), converting to `f32`
    /// (`ids.len() * dim` values).
    pub fn read_feature_rows_f32(&self, ids: &[u64], out: &mut [f32]) -> Result<()> {
        let mut raw = vec![0u8; ids.len() * self.layout().row_bytes()];
        Error::check_output_len(out.len(), ids.len(), self.feature_dim() as usize, "values")?;
        self.read_feature_rows(ids, &mut raw)?;
        self.dtype()
            .decode_to_f32(self.feature_dim() as usize, &raw, out);
        Ok(())
    }

    /// Reads consecutive feature pages starting at `first` and checks each
    /// against its CRC.
    #[doc(hidden)]
    pub fn read_pages(&self, first: u64, buf: &mut [u8]) -> Result<()> {
        let path = self.path_of(FileKind::FeaturePages);
        let offset = FeatureLayout::page_offset(first);
        read_exact_at(&self.features, &path, offset, buf)?;
        for (i, page) in buf.chunks_exact(PAGE_SIZE).enumerate() {
            let index = first + i as u64;
            let expected =
                self.page_crcs.get(index as usize).copied().ok_or_else(|| {
                    Error::OutOfRange(format!("feature page {index} does not exist"))
                })?;
            Error::check_crc(
                &path,
                format_args!("feature page {index}"),
                FeatureLayout::page_offset(index),
                expected,
                crate::format::crc32(page),
            )?;
        }
        Ok(())
    }

    /// The CRC recorded for each feature page.
    #[doc(hidden)]
    pub fn page_crcs(&self) -> &[u32] {
        &self.page_crcs
    }

    /// Labels (`-1` = missing), if the store has them.
    pub fn labels(&self) -> Result<Option<Vec<i32>>> {
        if self.manifest.file(FileKind::Labels).is_none() {
            return Ok(None);
        }
        let path = self.path_of(FileKind::Labels);
        read_checked_file(&path, FileKind::Labels)?
            .decode(|p| decode_labels(p, self.num_nodes(), self.num_classes(), &path))
            .map(Some)
    }

    /// Train / valid / test splits, if the store has them.
    pub fn splits(&self) -> Result<Option<Splits>> {
        if self.manifest.file(FileKind::Splits).is_none() {
            return Ok(None);
        }
        let path = self.path_of(FileKind::Splits);
        read_checked_file(&path, FileKind::Splits)?
            .decode(|p| Splits::decode(p, self.num_nodes(), &path))
            .map(Some)
    }

    /// The reconstruction error recorded when a q8 store's features were
    /// encoded (its `features.pages` header); None for other dtypes.
    pub fn q8_error(&self) -> Option<Q8Error> {
        self.q8_error
    }

    /// Original ids of remapped inputs, if the store has them.
    pub fn original_ids(&self) -> Result<Option<Vec<u64>>> {
        if self.manifest.file(FileKind::OriginalIds).is_none() {
            return Ok(None);
        }
        let path = self.path_of(FileKind::OriginalIds);
        read_checked_file(&path, FileKind::OriginalIds)?
            .decode(|p| decode_original_ids(p, self.num_nodes(), &path))
            .map(Some)
    }
}

/// Refuses a `features.pages` whose header records another row format
/// than the manifest's (from v1.7; an older file records none): the same
/// bytes a row read as `dim 64 f16` instead of `dim 32 f32` would pass
/// every checksum.
///
/// Returns the q8 error record of a q8 store (v1.11), which a q8 manifest
/// needs: q8 pages in an older file are corrupt.
fn check_layout_record(
    file: &File,
    path: &Path,
    version: crate::format::version::Version,
    manifest: &Manifest,
) -> Result<Option<Q8Error>> {
    use crate::format::pages::{LAYOUT_DIM_OFFSET, LAYOUT_DTYPE_OFFSET};
    use crate::format::q8::Q8_RECORD_END;
    let q8 = manifest.layout.dtype == Dtype::Q8;
    if q8 && version < crate::format::version::V1_11 {
        return Err(Error::corrupt(
            path,
            LAYOUT_DTYPE_OFFSET as u64,
            format!("the manifest says q8 rows but the feature pages are a {version} file (q8 is from 1.11)"),
        ));
    }
    if version < crate::format::version::V1_7 {
        return Ok(None);
    }
    let mut head = [0u8; Q8_RECORD_END];
    read_exact_at(file, path, 0, &mut head)?;
    if let Some(recorded) = FeatureLayout::decode_record(&head, version, path)? {
        if recorded != manifest.layout {
            return Err(Error::corrupt(
                path,
                LAYOUT_DIM_OFFSET as u64,
                format!(
                    "the feature pages hold rows of {} (their header's layout record) but the manifest says {}: the manifest and the feature pages disagree (a manifest of another store, or edited)",
                    recorded.describe(),
                    manifest.layout.describe()
                ),
            ));
        }
    }
    if q8 {
        return Q8Error::decode_record(&head, path).map(Some);
    }
    Ok(None)
}

fn expect_len(path: &Path, got: u64, expected: Option<u64>) -> Result<()> {
    match expected {
        Some(e) if e == got => Ok(()),
        Some(e) => Err(Error::corrupt(
            path,
            got.min(e),
            format!("length {got} does not match the {e} the manifest implies"),
        )),
        None => Err(Error::corrupt(
            path,
            0,
            "size implied by the manifest overflows",
        )),
    }
}
