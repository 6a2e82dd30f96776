//! The part every importer shares: a [`Build`] wraps the store builder and
//! takes edges (checked, optionally remapped and mirrored, spilled to the
//! out-of-core bucketer), feature rows (checked for NaN/Inf, converted to
//! the store dtype, streamed), labels, splits and original ids, then
//! commits and verifies. The format readers ([`edges_from`],
//! [`features_from_npy`], [`labels_from_npy`], [`read_ids`]) stream their
//! inputs in blocks, so resident memory stays near one block plus the
//! bucketer's sort buffer. Typed stores share one build as well
//! (`typed.rs`: relations, node type ranges, topology and features).

use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::error::{Error, Result};
use crate::format::csc::DEFAULT_SEGMENT_BYTES;
use crate::format::pages::{Dtype, FeatureLayout};
use crate::format::schema::Schema;
use crate::import::reorder::{check_target_free, reorder_store, Reorder, TempStore};
use crate::progress::Bar;
use crate::store::edges::{CscOptions, CscStats};
use crate::store::{Store, StoreBuilder, StoreSpec};

mod edge_input;
mod edge_splits;
mod edges;
mod features;
mod tables;
pub(crate) mod typed;

pub use edge_input::{check_passes, edges_from, node_id, EdgeEnds, EdgeInput, SQUARE_EDGE_ARRAY};
pub use edge_splits::{EdgeSplitFiles, EdgeSplitSource, SplitRelation};
pub use edges::EdgeSink;
pub use features::{feature_shape, features_from_npy, FeatureSink};
pub use tables::{for_each_id, label_value, labels_from_npy, random_split, read_ids, read_ids_by};

/// Options every importer takes.
#[derive(Debug, Clone)]
pub struct CommonOptions {
    /// Store dtype of the features.
    pub dtype: Dtype,
    /// Typed imports: the dtype of named node types' features, where it
    /// is not `dtype` (`--dtype f16,author=f32`).
    pub type_dtypes: Vec<(String, Dtype)>,
    /// Add the reverse of every edge.
    pub undirected: bool,
    /// CSC options (dedup, self-loops).
    pub csc: CscOptions,
    /// Accept NaN/Inf features.
    pub allow_nonfinite: bool,
    /// Memory budget in bytes.
    pub memory: u64,
    /// No progress bars.
    pub quiet: bool,
    /// The store to create.
    pub out: PathBuf,
    /// Target bytes per CSC segment of the store (a build parameter, not
    /// data: only a byte-exact rebuild of a store made with another value
    /// needs to change it).
    pub segment_bytes: u64,
    /// Node order of the store (`--reorder`, default `auto`); anything but
    /// `none` builds the store beside `out`, then writes it renumbered or
    /// (`auto` where no order pays) renames it into place (see
    /// [`crate::import::reorder`]).
    pub reorder: Reorder,
    /// The batches `--reorder auto` measures on.
    pub reorder_sample: crate::import::locality::Sample,
    /// Link-prediction edge splits (`--edge-split` or edge files;
    /// format/edge-splits.md): the held-out edges are left out of the CSC.
    pub edge_splits: Option<EdgeSplitSource>,
    /// The edge splits are undirected pairs although the edges are not
    /// mirrored (`--undirected-splits`: an edge input that already holds
    /// both directions, as `ginex-export` writes an undirected store);
    /// implied by `undirected`.
    pub undirected_splits: bool,
    /// The relation of a typed graph the edge split is of
    /// (`--target-relation SRC:REL:DST`; required with edge splits on a
    /// typed graph, refused on a homogeneous one).
    pub target_relation: Option<String>,
}

impl CommonOptions {
    /// Parses `--dtype`: a dtype, then optionally `TYPE=DTYPE` entries
    /// (`f16,author=f32`; `author=f32` alone keeps f32 for the others).
    pub fn parse_dtypes(text: &str) -> Result<(Dtype, Vec<(String, Dtype)>)> {
        let mut default = Dtype::F32;
        let mut types: Vec<(String, Dtype)> = Vec::new();
        for (i, part) in text.split(',').map(str::trim).enumerate() {
            match part.split_once('=') {
                None if i == 0 => default = Dtype::parse(part)?,
                None => {
                    return Err(Error::invalid_argument(format!(
                        "--dtype {text:?}: {part:?} must be TYPE=DTYPE (only the first entry may be a bare dtype)"
                    )))
                }
                Some((name, d)) => {
                    let name = name.trim();
                    if types.iter().any(|(t, _)| t == name) {
                        return Err(Error::invalid_argument(format!(
                            "--dtype {text:?}: node type {name:?} is given twice"
                        )));
                    }
                    types.push((name.to_string(), Dtype::parse(d.trim())?));
                }
            }
        }
        Ok((default, types))
    }

    /// The dtype node type `name`'s features are stored in.
    pub fn dtype_of(&self, name: &str) -> Dtype {
        self.type_dtypes
            .iter()
            .find(|(t, _)| t == name)
            .map_or(self.dtype, |(_, d)| *d)
    }

    /// Defaults for `out`: f32, directed, keep duplicates and self-loops, 2 GiB.
    pub fn new(out: impl Into<PathBuf>) -> Self {
        CommonOptions {
            dtype: Dtype::F32,
            type_dtypes: Vec::new(),
            undirected: false,
            csc: CscOptions::default(),
            allow_nonfinite: false,
            memory: 2 << 30,
            quiet: true,
            out: out.into(),
            segment_bytes: DEFAULT_SEGMENT_BYTES,
            reorder: Reorder::Auto,
            reorder_sample: crate::import::locality::Sample::default(),
            edge_splits: None,
            target_relation: None,
            undirected_splits: false,
        }
    }
}

/// What an import did.
#[derive(Debug, Clone, Default)]
pub struct ImportReport {
    /// The store written.
    pub path: PathBuf,
    /// Nodes.
    pub nodes: u64,
    /// Edges read from the input.
    pub edges_read: u64,
    /// CSC statistics (before held-out edges are taken out).
    pub csc: CscStats,
    /// Edges taken out of the CSC as held-out link-prediction edges
    /// (every copy, both directions of an undirected pair).
    pub edges_held_out: u64,
    /// Wall time per phase.
    pub phases: Vec<(&'static str, Duration)>,
    /// What the output says about the inputs (a dropped weight column).
    pub notes: Vec<String>,
    /// `--reorder auto`'s decision and the pages it measured.
    pub layout: Option<crate::import::locality::Decision>,
}

/// An error about `path` at 1-based position `at` (line or element).
pub fn bad(path: &Path, at: Option<u64>, reason: impl Into<String>) -> Error {
    Error::InvalidInput {
        source_file: path.to_path_buf(),
        line: at,
        reason: reason.into(),
    }
}

/// The progress of one import phase (see [`crate::progress`]); `total` 0
/// gives a counter without a bar.
pub fn progress(total: u64, what: &str, quiet: bool) -> Bar {
    Bar::new(total, what, quiet)
}

/// Bytes a store of `n` nodes with `layout` features and `edges` input
/// edges (doubled when undirected) needs at least: the feature pages and
/// their checksums, `indptr` and `indices`. `None` when the count
/// overflows `u64` (certainly too large).
pub fn store_bytes(layout: &FeatureLayout, n: u64, edges: u64, undirected: bool) -> Option<u64> {
    let pages = layout.num_pages(n).ok()?;
    let features = pages.checked_mul(crate::format::PAGE_SIZE as u64 + 4)?;
    let indptr = n.checked_add(1)?.checked_mul(8)?;
    let width = if n <= u64::from(u32::MAX) { 4 } else { 8 };
    let edges = if undirected {
        edges.checked_mul(2)?
    } else {
        edges
    };
    let indices = edges.checked_mul(width)?;
    features.checked_add(indptr)?.checked_add(indices)
}

/// Bytes an import of `edges` edges needs at its peak on top of
/// [`store_bytes`]: the out-of-core CSC build spills every edge to bucket
/// files in the staging directory (a destination and a source, `2 ×
/// width` bytes) before the first list is written, and each bucket is
/// removed only as its lists go out (`width` bytes an edge), so at the
/// moment spilling ends the scratch holds twice the indices the store
/// will. `None` on overflow.
pub fn import_scratch_bytes(n: u64, edges: u64, undirected: bool) -> Option<u64> {
    let width = if n <= u64::from(u32::MAX) { 4 } else { 8 };
    let edges = if undirected {
        edges.checked_mul(2)?
    } else {
        edges
    };
    edges.checked_mul(2 * width)
}

/// Refuses, before anything is written, a store larger than the free
/// space of the directory it goes to (see [`crate::io::space::free_space`]):
/// at the peak the feature pages, `indptr` and the edge spill (see
/// [`import_scratch_bytes`]), which is larger than the store's indices.
fn check_space(
    opts: &CommonOptions,
    layout: &FeatureLayout,
    n: u64,
    edges: u64,
    note: Option<&str>,
) -> Result<()> {
    let parent = match opts.out.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    if !parent.is_dir() {
        return Ok(()); // the builder names what is wrong with the parent
    }
    let free = crate::io::space::free_space(&parent)?;
    let need = store_bytes(layout, n, edges, opts.undirected).and_then(|store| {
        let indices = store_bytes(layout, n, 0, false)
            .map_or(store, |no_edges| store.saturating_sub(no_edges));
        import_scratch_bytes(n, edges, opts.undirected)
            .and_then(|scratch| store.checked_sub(indices)?.checked_add(scratch))
    });
    if need.is_some_and(|b| b <= free) {
        if let Some(note) = note {
            tracing::warn!("{}: {note}", opts.out.display());
        }
        return Ok(());
    }
    let need = need.map_or_else(
        || "more than 2^64 bytes".to_string(),
        |b| format!("at least {b} bytes ({})", crate::size::format_bytes(b)),
    );
    let mut reason = format!(
        "the store needs {need} for {n} nodes × {} bytes of {} features{}, but {} has {free} bytes ({}) free; nothing was written",
        layout.row_bytes(),
        opts.dtype.name(),
        if edges > 0 {
            format!(", {edges} edges")
        } else {
            String::new()
        },
        parent.display(),
        crate::size::format_bytes(free)
    );
    if let Some(note) = note {
        reason.push_str("; ");
        reason.push_str(note);
    }
    Err(bad(&opts.out, None, reason))
}

/// A store under construction; see the module docs.
pub struct Build {
    builder: StoreBuilder,
    opts: CommonOptions,
    n: u64,
    dim: u64,
    report: ImportReport,
    /// Shared by the edge and feature halves of [`Build::overlapped`].
    cancel: Arc<AtomicBool>,
    /// The scratch directories [`Build::scratch`] handed out (removed by
    /// [`Build::finish`]: only these, never by name).
    scratch: std::sync::Mutex<Vec<PathBuf>>,
    /// Where the unordered store is built when `opts.reorder` is not `none`.
    unordered: Option<TempStore>,
}

impl Build {
    /// Starts a store of `n` nodes with `dim`-wide features at `opts.out`,
    /// after checking that the store fits: `edges` (the edges read, when
    /// known before the build, else 0) sizes the topology, and `note` is
    /// added to the refusal (e.g. that the ids look sparse).
    pub fn create(
        opts: &CommonOptions,
        n: u64,
        dim: u64,
        dim_source: &Path,
        edges: u64,
        note: Option<&str>,
    ) -> Result<Self> {
        if let Some((name, _)) = opts.type_dtypes.first() {
            return Err(Error::invalid_argument(format!(
                "--dtype {name}=…: dtypes per node type apply to typed imports only (a chunked graph or ogbn-mag with several node types)"
            )));
        }
        let dim32 = u32::try_from(dim).map_err(|_| {
            bad(
                dim_source,
                None,
                format!("feature dimension {dim} is too large"),
            )
        })?;
        let layout = FeatureLayout::new(dim32, opts.dtype)
            .map_err(|e| bad(dim_source, None, e.to_string()))?;
        check_space(opts, &layout, n, edges, note)?;
        let spec = StoreSpec {
            segment_bytes: opts.segment_bytes,
            ..StoreSpec::new(n, layout)
        };
        let unordered = match opts.reorder {
            Reorder::None => None,
            _ => {
                check_target_free(&opts.out)?;
                Some(TempStore::beside(&opts.out))
            }
        };
        let target = unordered
            .as_ref()
            .map_or(opts.out.as_path(), TempStore::path);
        let builder = StoreBuilder::create(target, spec)?;
        Ok(Build {
            builder,
            opts: opts.clone(),
            n,
            dim,
            report: ImportReport {
                nodes: n,
                ..ImportReport::default()
            },
            cancel: Arc::default(),
            scratch: std::sync::Mutex::default(),
            unordered,
        })
    }

    /// Node count.
    pub fn nodes(&self) -> u64 {
        self.n
    }

    /// Makes the store typed (see [`StoreBuilder::set_schema`]); before
    /// the features and the topology.
    pub fn set_schema(&mut self, schema: Schema) {
        self.builder.set_schema(schema);
    }

    /// Feature rows the store takes: every node, or in a typed store the
    /// nodes of the featured types.
    pub fn feature_rows(&self) -> u64 {
        self.builder.schema().map_or(self.n, Schema::feature_rows)
    }

    /// A scratch directory inside the staging directory (removed before
    /// the commit; gone with the staging directory on failure).
    pub fn scratch(&self, name: &str) -> PathBuf {
        let path = self.builder.staging_path().join(format!("import-{name}"));
        let mut handed = self.scratch.lock().unwrap_or_else(|e| e.into_inner());
        if !handed.contains(&path) {
            handed.push(path.clone());
        }
        path
    }

    /// The directories [`Build::scratch`] handed out that exist.
    fn scratch_dirs(&self) -> Result<Vec<PathBuf>> {
        let handed = self.scratch.lock().unwrap_or_else(|e| e.into_inner());
        Ok(handed.iter().filter(|p| p.exists()).cloned().collect())
    }

    /// Commits and verifies the store.
    pub fn finish(mut self) -> Result<ImportReport> {
        let started = Instant::now();
        for p in self.scratch_dirs()? {
            std::fs::remove_dir_all(&p).map_err(|e| Error::io("remove directory", &p, e))?;
        }
        let path = self.builder.finish()?;
        tracing::info!(store = %path.display(), "committed; verifying");
        self.report.phases.push(("commit", started.elapsed()));
        let started = Instant::now();
        Store::open(&path)?.verify()?;
        self.report.phases.push(("verify", started.elapsed()));
        self.report.path = path;
        if let Some(unordered) = self.unordered.take() {
            let done = reorder_store(
                unordered.path(),
                &self.opts.out,
                self.opts.reorder,
                self.opts.segment_bytes,
                &self.opts.reorder_sample,
            )?;
            let phase = match &done.decision {
                Some(d) if d.chosen == Reorder::None => "reorder auto (kept)",
                _ => "reorder + verify",
            };
            self.report.phases.push((phase, done.took));
            self.report.path = done.path;
            self.report.layout = done.decision;
        }
        Ok(self.report)
    }
}
