//! Building a store: stream features and topology into a staging directory,
//! write the manifest last, then commit atomically.

use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::format::csc::{IndexWidth, Segment, SegmentPlanner, DEFAULT_SEGMENT_BYTES};
use crate::format::edge_splits::EdgeSplits;
use crate::format::header::{FileHeader, FileKind};
use crate::format::manifest::{store_file_name, FileEntry, Manifest, REQUIRED_FILES};
use crate::format::pages::{Dtype, FeatureLayout};
use crate::format::q8::Q8Error;
use crate::format::schema::Schema;
use crate::format::sections::{FeatureSections, Section};
use crate::format::tables::{encode_labels, encode_original_ids, encode_out_degrees, Splits};
use crate::format::version::V1_11;
use crate::format::PAGE_SIZE;
use crate::io::durable::StagingDir;
use crate::io::writer::{write_file, write_file_as, ChecksummedWriter};

/// What a new store will hold, fixed before any data is written.
#[derive(Debug, Clone, Copy)]
pub struct StoreSpec {
    /// Number of nodes.
    pub num_nodes: u64,
    /// Feature dimension and dtype.
    pub layout: FeatureLayout,
    /// Target bytes per CSC segment.
    pub segment_bytes: u64,
}

impl StoreSpec {
    /// A spec with the default segment size.
    pub fn new(num_nodes: u64, layout: FeatureLayout) -> Self {
        StoreSpec {
            num_nodes,
            layout,
            segment_bytes: DEFAULT_SEGMENT_BYTES,
        }
    }
}

/// Builds a store in a staging directory; nothing appears at the target
/// until [`finish`](Self::finish) succeeds.
///
/// Rows go in node order through a [`FeatureWriter`], sorted in-neighbor
/// lists in node order through a [`TopologyWriter`] (a [`ListSink`]);
/// labels, splits and original ids are optional. The importers
/// ([`import_files`](crate::import_files) and the others) are built on it.
///
/// ```
/// use ginex::{Dtype, FeatureLayout, ListSink, Splits, Store, StoreBuilder, StoreSpec};
/// # fn main() -> ginex::Result<()> {
/// # let tmp = tempfile::tempdir().unwrap();
/// let path = tmp.path().join("tiny");
/// // 4 nodes with 2 features each; edges 0→1, 0→2, 1→2, 3→0.
/// let features: Vec<f32> = vec![0., 1., 1., 0., 1., 1., 0., 0.];
/// let in_neighbors: [&[u64]; 4] = [&[3], &[0], &[0, 1], &[]];
///
/// let layout = FeatureLayout::new(2, Dtype::F32)?;
/// let mut b = StoreBuilder::create(&path, StoreSpec::new(4, layout))?;
/// let mut rows = b.feature_writer()?;
/// let mut bytes = vec![0u8; features.len() * 4];
/// Dtype::F32.encode_f32(2, &features, &mut bytes);
/// rows.push_rows(&bytes)?;
/// b.add_features(rows)?;
/// let mut topology = b.topology_writer()?;
/// for list in in_neighbors {
///     topology.push_list(list)?;
/// }
/// b.add_topology(topology)?;
/// b.write_labels(&[0, 1, 1, -1], 2)?; // -1: no label
/// b.write_splits(&Splits { train: vec![0, 1], valid: vec![2], test: vec![] })?;
/// b.finish()?;
///
/// let store = Store::open(&path)?;
/// assert_eq!((store.num_nodes(), store.num_edges()), (4, 4));
/// assert_eq!(store.in_neighbors(2)?, vec![0, 1]);
/// # Ok(()) }
/// ```
pub struct StoreBuilder {
    staging: StagingDir,
    spec: StoreSpec,
    files: Vec<FileEntry>,
    num_edges: Option<u64>,
    num_classes: u32,
    schema: Option<Schema>,
}

impl StoreBuilder {
    /// Starts a store at `target`, which must not exist.
    pub fn create(target: &Path, spec: StoreSpec) -> Result<Self> {
        let staging = StagingDir::create(target)?;
        Ok(StoreBuilder {
            staging,
            spec,
            files: Vec::new(),
            num_edges: None,
            num_classes: 0,
            schema: None,
        })
    }

    /// The staging directory; builders may keep scratch files in it (they
    /// must remove them before `finish`).
    #[doc(hidden)]
    pub fn staging_path(&self) -> &Path {
        self.staging.path()
    }

    /// The spec the store was started with.
    pub fn spec(&self) -> &StoreSpec {
        &self.spec
    }

    fn file_path(&self, kind: FileKind) -> PathBuf {
        self.staging.path().join(store_file_name(kind))
    }

    /// Writes a small file of `kind` whose payload `encode` appends, and
    /// records it for the manifest.
    fn write_small(&mut self, kind: FileKind, encode: impl FnOnce(&mut Vec<u8>)) -> Result<()> {
        let mut payload = Vec::new();
        encode(&mut payload);
        let h = write_file(&self.file_path(kind), kind, &payload)?;
        self.record(h);
        Ok(())
    }

    fn record(&mut self, header: FileHeader) {
        self.files.push(FileEntry {
            kind: header.kind,
            len: header.file_len(),
            payload_crc: header.payload_crc,
        });
    }

    /// Makes the store typed (format/schema.md): node types as id ranges
    /// and relations. Set it before [`feature_writer`](Self::feature_writer)
    /// (rows then come for the featured types only, in type order); the
    /// relations' edge counts may be set later with
    /// [`set_relation_edges`](Self::set_relation_edges). `finish` checks
    /// the schema against the store and writes it.
    pub fn set_schema(&mut self, schema: Schema) {
        self.schema = Some(schema);
    }

    /// Sets the edge count of each relation of the schema, in order.
    pub fn set_relation_edges(&mut self, counts: &[u64]) -> Result<()> {
        let schema = self
            .schema
            .as_mut()
            .ok_or_else(|| Error::internal("relation edge counts set on a store with no schema"))?;
        if counts.len() != schema.relations.len() {
            return Err(Error::internal(format!(
                "{} relation edge counts for {} relations",
                counts.len(),
                schema.relations.len()
            )));
        }
        for (r, &c) in schema.relations.iter_mut().zip(counts) {
            r.num_edges = c;
        }
        Ok(())
    }

    /// The schema set with [`set_schema`](Self::set_schema).
    pub fn schema(&self) -> Option<&Schema> {
        self.schema.as_ref()
    }

    /// A writer for the feature rows, pushed in node order (in a typed
    /// store, the rows of the types that have features).
    pub fn feature_writer(&self) -> Result<FeatureWriter> {
        let sections =
            FeatureSections::of(self.schema.as_ref(), self.spec.layout, self.spec.num_nodes)?;
        FeatureWriter::create(
            &self.file_path(FileKind::FeaturePages),
            &self.file_path(FileKind::PageChecksums),
            sections,
        )
    }

    /// Finishes the feature files.
    pub fn add_features(&mut self, writer: FeatureWriter) -> Result<()> {
        let (pages, crcs) = writer.finish()?;
        self.record(pages);
        self.record(crcs);
        Ok(())
    }

    /// A writer for in-neighbor lists, pushed in node order.
    pub fn topology_writer(&self) -> Result<TopologyWriter> {
        TopologyWriter::create(self)
    }

    /// Finishes the topology files.
    pub fn add_topology(&mut self, writer: TopologyWriter) -> Result<()> {
        let (headers, num_edges) = writer.finish()?;
        for h in headers {
            self.record(h);
        }
        self.num_edges = Some(num_edges);
        Ok(())
    }

    /// Writes labels (`-1` = missing; others in `0..num_classes`).
    pub fn write_labels(&mut self, labels: &[i32], num_classes: u32) -> Result<()> {
        if labels.len() as u64 != self.spec.num_nodes {
            return Err(Error::invalid_argument(format!(
                "{} labels for {} nodes",
                labels.len(),
                self.spec.num_nodes
            )));
        }
        if num_classes == 0 || num_classes > i32::MAX as u32 {
            return Err(Error::invalid_argument(format!(
                "number of classes {num_classes} must be in 1..2^31"
            )));
        }
        for (i, &l) in labels.iter().enumerate() {
            crate::format::tables::check_label(i as u64, l, num_classes)
                .map_err(Error::invalid_argument)?;
        }
        self.write_small(FileKind::Labels, |p| encode_labels(labels, p))?;
        self.num_classes = num_classes;
        Ok(())
    }

    /// Writes train/valid/test splits (each sorted, in range, disjoint).
    pub fn write_splits(&mut self, splits: &Splits) -> Result<()> {
        let n = self.spec.num_nodes;
        for (name, list) in [
            ("train", &splits.train),
            ("valid", &splits.valid),
            ("test", &splits.test),
        ] {
            if let Some(w) = list.windows(2).find(|w| w[1] <= w[0]) {
                return Err(Error::invalid_argument(format!(
                    "{name} ids must be strictly increasing ({} then {})",
                    w[0], w[1]
                )));
            }
            if let Some(&id) = list.iter().find(|&&id| id >= n) {
                return Err(Error::invalid_argument(format!(
                    "{name} id {id} is not below the node count {n}"
                )));
            }
        }
        if let Some(id) = splits.first_overlap() {
            return Err(Error::invalid_argument(format!(
                "node {id} is in more than one split"
            )));
        }
        self.write_small(FileKind::Splits, |p| splits.encode(p))
    }

    /// Writes the link-prediction edge splits (format/edge-splits.md):
    /// checked first ([`EdgeSplits::validate`]: lengths, ids in range, no
    /// edge twice in a split or in two splits), nothing written on error.
    /// That the held-out edges are absent from the CSC and the listed
    /// training edges present is the caller's to ensure (the importer
    /// removes them while it builds the CSC; `Store::verify` checks it).
    pub fn write_edge_splits(&mut self, splits: &EdgeSplits) -> Result<()> {
        splits
            .validate(self.spec.num_nodes)
            .and_then(|()| splits.check_relation(self.schema.as_ref()))
            .map_err(|what| Error::invalid_argument(format!("edge splits: {what}")))?;
        let header = write_file_as(
            &self.file_path(FileKind::EdgeSplits),
            FileKind::EdgeSplits,
            splits.written_version(),
            &splits.encode(),
        )?;
        self.record(header);
        Ok(())
    }

    /// Writes the original id of every node (for inputs whose ids were remapped).
    pub fn write_original_ids(&mut self, ids: &[u64]) -> Result<()> {
        if ids.len() as u64 != self.spec.num_nodes {
            return Err(Error::invalid_argument(format!(
                "{} original ids for {} nodes",
                ids.len(),
                self.spec.num_nodes
            )));
        }
        self.write_small(FileKind::OriginalIds, |p| encode_original_ids(ids, p))
    }

    /// Writes the manifest and commits the store to its target path.
    pub fn finish(mut self) -> Result<PathBuf> {
        for kind in REQUIRED_FILES {
            if !self.files.iter().any(|f| f.kind == kind) {
                return Err(Error::invalid_argument(format!(
                    "store is incomplete: {} was not written",
                    store_file_name(kind)
                )));
            }
        }
        if let Some(schema) = self.schema.take() {
            schema.validate(
                self.spec.num_nodes,
                self.num_edges.unwrap_or(0),
                self.spec.layout,
            )?;
            let path = self.file_path(FileKind::Schema);
            let header = write_file_as(
                &path,
                FileKind::Schema,
                schema.written_version(),
                &schema.encode(),
            )?;
            self.record(header);
        }
        self.files.sort_by_key(|f| f.kind as u32);
        let manifest = Manifest {
            num_nodes: self.spec.num_nodes,
            num_edges: self.num_edges.unwrap_or(0),
            layout: self.spec.layout,
            index_width: IndexWidth::for_nodes(self.spec.num_nodes),
            num_classes: self.num_classes,
            files: std::mem::take(&mut self.files),
        };
        write_file(
            &self.file_path(FileKind::Manifest),
            FileKind::Manifest,
            &manifest.encode(),
        )?;
        self.staging.commit()
    }
}

/// Streams feature rows into `features.pages` and their page CRCs into
/// `features.crc`, each row in the layout of its section (one section, in
/// the row format, unless a typed store's types differ: format/features.md,
/// "Sections").
pub struct FeatureWriter {
    pages: ChecksummedWriter,
    crcs: ChecksummedWriter,
    sections: FeatureSections,
    expected_rows: u64,
    rows: u64,
    page: Vec<u8>,
    fill: usize,
    narrowed: Vec<u8>,
    /// The reconstruction error of the q8 rows measured so far (a q8 row
    /// format only).
    q8: Option<Q8Error>,
}

impl FeatureWriter {
    fn create(pages_path: &Path, crcs_path: &Path, sections: FeatureSections) -> Result<Self> {
        let buf_len = sections.max_pages_per_row().max(1) as usize * PAGE_SIZE;
        let q8 = sections.row_format().dtype == Dtype::Q8;
        let mut pages = match q8 {
            // q8 rows and their error record are from 1.11.
            true => ChecksummedWriter::create_as(pages_path, FileKind::FeaturePages, V1_11)?,
            false => ChecksummedWriter::create(pages_path, FileKind::FeaturePages)?,
        };
        // The header names the row format the pages hold (v1.7).
        pages.set_header_extra(&sections.row_format().encode_record())?;
        Ok(FeatureWriter {
            pages,
            crcs: ChecksummedWriter::create(crcs_path, FileKind::PageChecksums)?,
            expected_rows: sections.sections().iter().map(|s| s.rows).sum(),
            sections,
            rows: 0,
            page: vec![0u8; buf_len],
            fill: 0,
            narrowed: Vec::new(),
            q8: q8.then(Q8Error::default),
        })
    }

    /// Adds the measured reconstruction error of q8 rows pushed (or about
    /// to be) to what the q8 error record will hold; ignored for other
    /// dtypes. Rows pushed without a measurement are not counted in the
    /// record's rows.
    pub fn record_q8_error(&mut self, measured: Q8Error) {
        if let Some(e) = &mut self.q8 {
            *e = e.merge(measured);
        }
    }

    /// The section the next row pushed belongs to.
    fn next_section(&self) -> Section {
        *self.sections.section_of(self.rows)
    }

    /// The layout the rows given to [`push_rows`](Self::push_rows) next
    /// must have: the row format, or in a store of several layouts the
    /// layout of the type whose rows come next.
    pub fn next_layout(&self) -> FeatureLayout {
        self.next_section().layout
    }

    /// Appends rows given as encoded bytes of [`next_layout`](Self::next_layout)
    /// (a multiple of its `row_bytes`); they may not run into a section of
    /// another layout.
    pub fn push_rows(&mut self, rows: &[u8]) -> Result<()> {
        let section = self.next_section();
        let row_bytes = section.layout.row_bytes();
        if rows.len() % row_bytes != 0 {
            return Err(Error::invalid_argument(format!(
                "{} bytes is not a whole number of {row_bytes}-byte rows",
                rows.len()
            )));
        }
        let count = (rows.len() / row_bytes) as u64;
        if self.rows + count > self.expected_rows {
            return Err(Error::invalid_argument(format!(
                "more than {} feature rows pushed",
                self.expected_rows
            )));
        }
        let section_end = section.first_row + section.rows;
        if self.rows + count > section_end {
            return Err(Error::invalid_argument(format!(
                "feature rows {}..{} run past row {section_end}, where the rows of another layout start; push each layout's rows apart",
                self.rows,
                self.rows + count
            )));
        }
        if self.rows == section.first_row && self.fill > 0 {
            self.flush_page()?; // a section starts on a page of its own
        }
        let span = section.layout.pages_per_row() as usize * PAGE_SIZE;
        for row in rows.chunks_exact(row_bytes) {
            if self.fill + row_bytes > span {
                self.flush_page()?;
            }
            self.page[self.fill..self.fill + row_bytes].copy_from_slice(row);
            self.fill += row_bytes;
            if row_bytes > PAGE_SIZE {
                self.flush_page()?;
            }
        }
        self.rows += count;
        Ok(())
    }

    /// Appends rows given in the row format (as [`Store::read_feature_rows`](crate::store::Store::read_feature_rows)
    /// returns them), each narrowed to its section's layout.
    pub fn push_row_format(&mut self, rows: &[u8]) -> Result<()> {
        if self.sections.is_uniform() {
            return self.push_rows(rows);
        }
        let row_bytes = self.sections.row_format().row_bytes();
        if rows.len() % row_bytes != 0 {
            return Err(Error::invalid_argument(format!(
                "{} bytes is not a whole number of {row_bytes}-byte rows",
                rows.len()
            )));
        }
        let mut narrowed = std::mem::take(&mut self.narrowed);
        for row in rows.chunks_exact(row_bytes) {
            narrowed.resize(self.next_layout().row_bytes(), 0);
            self.sections.narrow_row(self.rows, row, &mut narrowed);
            self.push_rows(&narrowed)?;
        }
        self.narrowed = narrowed;
        Ok(())
    }

    /// Writes the page buffer up to the end of its last row's pages, zero
    /// padded.
    fn flush_page(&mut self) -> Result<()> {
        let used = self.fill.div_ceil(PAGE_SIZE).max(1) * PAGE_SIZE;
        self.page[self.fill..used].fill(0);
        for page in self.page[..used].chunks_exact(PAGE_SIZE) {
            self.crcs
                .write_payload(&crate::format::crc32(page).to_le_bytes())?;
        }
        self.pages.write_payload(&self.page[..used])?;
        self.fill = 0;
        Ok(())
    }

    fn finish(mut self) -> Result<(FileHeader, FileHeader)> {
        if self.rows != self.expected_rows {
            return Err(Error::invalid_argument(format!(
                "{} feature rows pushed, expected {}",
                self.rows, self.expected_rows
            )));
        }
        if self.fill > 0 {
            self.flush_page()?;
        }
        debug_assert_eq!(
            self.pages.payload_len(),
            self.sections.num_pages() * PAGE_SIZE as u64
        );
        if let Some(e) = self.q8 {
            let mut head = self.sections.row_format().encode_record().to_vec();
            head.extend_from_slice(&e.encode_record());
            self.pages.set_header_extra(&head)?;
        }
        Ok((self.pages.finish()?, self.crcs.finish()?))
    }
}

/// Something that consumes in-neighbor lists in node order: the store's
/// topology writer, or a raw edge-list writer.
pub trait ListSink {
    /// The next node's sorted in-neighbor list.
    fn push_list(&mut self, list: &[u64]) -> Result<()>;
}

/// What a [`TopologyWriter`] holds per node: the out-degree count.
pub const TOPOLOGY_WRITER_BYTES_PER_NODE: u64 = 4;

/// Streams in-neighbor lists into `indptr`, `indices` and `indices.seg`,
/// and counts every node's out-degree for `out_degrees` (4 bytes a node
/// while the lists are pushed).
pub struct TopologyWriter {
    indptr: ChecksummedWriter,
    indices: ChecksummedWriter,
    seg_path: PathBuf,
    out_degrees_path: PathBuf,
    out_degrees: Vec<u32>,
    planner: SegmentPlanner,
    segments: Vec<Segment>,
    width: IndexWidth,
    num_nodes: u64,
    node: u64,
    edges: u64,
    scratch: Vec<u8>,
}

impl TopologyWriter {
    fn create(b: &StoreBuilder) -> Result<Self> {
        let width = IndexWidth::for_nodes(b.spec.num_nodes);
        let mut indptr =
            ChecksummedWriter::create(&b.file_path(FileKind::Indptr), FileKind::Indptr)?;
        indptr.write_payload(&0u64.to_le_bytes())?;
        Ok(TopologyWriter {
            indptr,
            indices: ChecksummedWriter::create(&b.file_path(FileKind::Indices), FileKind::Indices)?,
            seg_path: b.file_path(FileKind::SegmentTable),
            out_degrees_path: b.file_path(FileKind::OutDegrees),
            out_degrees: vec![
                0;
                usize::try_from(b.spec.num_nodes).map_err(|_| {
                    Error::invalid_argument(format!(
                        "{} nodes do not fit this machine's address space",
                        b.spec.num_nodes
                    ))
                })?
            ],
            planner: SegmentPlanner::new(width, b.spec.segment_bytes),
            segments: Vec::new(),
            width,
            num_nodes: b.spec.num_nodes,
            node: 0,
            edges: 0,
            scratch: Vec::new(),
        })
    }

    /// Nodes whose lists were pushed so far.
    pub fn nodes_written(&self) -> u64 {
        self.node
    }

    fn finish(mut self) -> Result<(Vec<FileHeader>, u64)> {
        if self.node != self.num_nodes {
            return Err(Error::invalid_argument(format!(
                "{} neighbor lists pushed, expected {}",
                self.node, self.num_nodes
            )));
        }
        self.segments.extend(self.planner.close());
        let mut table =
            Vec::with_capacity(self.segments.len() * crate::format::csc::SEGMENT_ENTRY_SIZE);
        for s in &self.segments {
            s.encode(&mut table);
        }
        let seg = write_file(&self.seg_path, FileKind::SegmentTable, &table)?;
        let degrees = write_out_degrees(&self.out_degrees_path, &self.out_degrees)?;
        Ok((
            vec![self.indptr.finish()?, self.indices.finish()?, seg, degrees],
            self.edges,
        ))
    }
}

impl ListSink for TopologyWriter {
    fn push_list(&mut self, list: &[u64]) -> Result<()> {
        let node = self.node;
        if node >= self.num_nodes {
            return Err(Error::invalid_argument(format!(
                "more than {} neighbor lists pushed",
                self.num_nodes
            )));
        }
        if let Some(w) = list.windows(2).find(|w| w[1] < w[0]) {
            return Err(Error::invalid_argument(format!(
                "in-neighbors of node {node} are not sorted ({} before {})",
                w[0], w[1]
            )));
        }
        if let Some(&bad) = list.last().filter(|&&l| l >= self.num_nodes) {
            return Err(Error::invalid_argument(format!(
                "node {node} has in-neighbor {bad}, not below {}",
                self.num_nodes
            )));
        }
        self.scratch.clear();
        for &id in list {
            self.width.push(id, &mut self.scratch);
            // In range: the last (largest) id was checked above.
            if let Some(d) = self.out_degrees.get_mut(id as usize) {
                *d = d.saturating_add(1);
            }
        }
        let start = self.edges;
        self.edges += list.len() as u64;
        self.indices.write_payload(&self.scratch)?;
        self.indptr.write_payload(&self.edges.to_le_bytes())?;
        self.segments
            .extend(self.planner.push_node(node, start, &self.scratch));
        self.node += 1;
        Ok(())
    }
}

/// Writes `out_degrees` (format/out-degrees.md) a block at a time, so the
/// table is never copied whole.
fn write_out_degrees(path: &Path, degrees: &[u32]) -> Result<FileHeader> {
    const BLOCK_NODES: usize = 1 << 16;
    let mut w = ChecksummedWriter::create(path, FileKind::OutDegrees)?;
    let mut bytes = Vec::with_capacity(4 * BLOCK_NODES);
    for block in degrees.chunks(BLOCK_NODES) {
        bytes.clear();
        encode_out_degrees(block, &mut bytes);
        w.write_payload(&bytes)?;
    }
    w.finish()
}
