//! `ginex._ginex`: the native half of the Python package (PyO3 + numpy).
//!
//! * [`PyStore`] (`ginex.Store`) opens a store and reads it into numpy.
//! * [`import_files`] (`ginex._import_files`) runs `ginex-import files`;
//!   `ginex.import_arrays` (Python, ginex/__init__.py) checks the arrays,
//!   stages them as `.npy` and calls it.
//! * [`Loader`] (`ginex.Loader`) makes one [`ginex::Loader`] per epoch
//!   ([`Epoch`]): the executor of `ginex epoch` on a native thread, batches
//!   through a bounded channel. `__next__` waits for a batch and converts it
//!   (f32 rows, int64 ids, PyG's layer order) with the GIL released, so
//!   Python only wraps finished buffers (no copy). Dropping the iterator (a
//!   `break`, an exception, garbage collection) or `close()` stops and joins
//!   the thread; the epoch's runtime files go with it.
//! * `Batch.hetero()` on a typed store's batch builds the typed view
//!   ([`ginex::TypedBatch`]) from the batch's own arrays and hands it to
//!   `ginex.hetero.HeteroBatch` (Python), which lays it out as PyG's
//!   heterogeneous `NeighborLoader` does.
//!
//! Library errors become Python exceptions with the CLI's message (see
//! [`to_py`]).

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

mod link;
use link::{LinkArrays, LinkOut};

use ginex::internals::format::schema::Schema;
use ginex::internals::sample::fanouts::Fanouts;
use ginex::internals::sample::labor::{Sampler, SamplerConfig};
use ginex::{Dtype, Error, FilesImport, NegMode, NodeIds, Policy, Split, Store, TypedBatch};
use numpy::ndarray::{Array1, Array2};
use numpy::{IntoPyArray, PyArray1, PyArray2, PyArrayMethods, PyReadonlyArray1, PyReadonlyArray2};
use pyo3::create_exception;
use pyo3::exceptions::{PyException, PyFileExistsError, PyMemoryError, PyOSError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyTuple};

create_exception!(
    ginex,
    GinexError,
    PyException,
    "An error of the ginex library (the message is the CLI's)."
);
create_exception!(
    ginex,
    CorruptStoreError,
    GinexError,
    "A store file failed a checksum or structure check."
);

/// A library error as the Python exception that fits it, with the message
/// the CLI prints: bad input → `ValueError`, I/O → `OSError`, an existing
/// output → `FileExistsError`, a damaged store → `CorruptStoreError`, an
/// allocation that failed → `MemoryError`, anything else → `GinexError`.
fn to_py(e: Error) -> PyErr {
    let msg = e.to_string();
    match e {
        Error::Io { .. } | Error::ReadFailed { .. } => PyOSError::new_err(msg),
        Error::AlreadyExists { .. } => PyFileExistsError::new_err(msg),
        Error::InvalidInput { .. } | Error::InvalidArgument(_) | Error::OutOfRange(_) => {
            PyValueError::new_err(msg)
        }
        Error::OutOfMemory(_) => PyMemoryError::new_err(msg),
        Error::Corrupt { .. }
        | Error::ChecksumMismatch { .. }
        | Error::UnsupportedVersion { .. } => CorruptStoreError::new_err(msg),
        _ => GinexError::new_err(msg),
    }
}

/// A `ValueError` naming the argument.
fn arg_err(arg: &str, reason: impl std::fmt::Display) -> PyErr {
    PyValueError::new_err(format!("{arg}: {reason}"))
}

/// `fanouts`: a list of counts per hop (`[10, 5]`, -1 = all), or per
/// relation on a typed store: the `--fanouts` text
/// (`"cites=10:5,writes=5:5,*=2:0"`), a list of `{relation: count}` dicts,
/// one per hop (DGL's form; `"*"` for the relations not named), or a
/// `{relation: [count per hop]}` dict (PyG's form).
fn parse_fanouts(v: &Bound<'_, PyAny>) -> PyResult<Fanouts> {
    let refused = |e: Error| fanouts_err(&e);
    if let Ok(text) = v.extract::<String>() {
        return Fanouts::parse(&text).map_err(refused);
    }
    if let Ok(d) = v.cast::<PyDict>() {
        let relations = d
            .iter()
            .map(|(k, c)| Ok((k.extract::<String>()?, c.extract::<Vec<i64>>()?)))
            .collect::<PyResult<Vec<_>>>()
            .map_err(|_| {
                arg_err(
                    "fanouts",
                    "a dict maps relation names to a list of counts per hop",
                )
            })?;
        return Fanouts::per_relation(relations).map_err(refused);
    }
    if let Ok(counts) = v.extract::<Vec<i64>>() {
        return Fanouts::per_hop_counts(counts).map_err(refused);
    }
    let hops = v
        .try_iter()
        .and_then(|it| {
            it.map(|hop| {
                let hop = hop?;
                let d = hop.cast::<PyDict>()?;
                d.iter()
                    .map(|(k, c)| Ok((k.extract::<String>()?, c.extract::<i64>()?)))
                    .collect::<PyResult<Vec<(String, i64)>>>()
            })
            .collect::<PyResult<Vec<_>>>()
        })
        .map_err(|_| {
            arg_err(
                "fanouts",
                "expected a list of counts per hop ([10, 5]), the --fanouts text \
                 (\"cites=10:5,writes=5:5\"), a list of {relation: count} dicts (one per hop) \
                 or a {relation: [counts per hop]} dict",
            )
        })?;
    Fanouts::per_hop(hops).map_err(refused)
}

/// `sampler`, `layer_dependency`, `batch_dependency` as one sampler
/// configuration, checked as `--sampler` is (`ValueError` naming the
/// argument).
fn sampler_config(
    sampler: &str,
    layer_dependency: bool,
    batch_dependency: u64,
) -> PyResult<SamplerConfig> {
    let config = SamplerConfig {
        sampler: Sampler::parse(sampler).map_err(|e| arg_err("sampler", e))?,
        layer_dependency,
        batch_dependency,
    };
    config.check().map_err(|e| {
        let which = if layer_dependency && batch_dependency > 0 {
            "layer_dependency"
        } else {
            "batch_dependency"
        };
        arg_err(which, e)
    })?;
    Ok(config)
}

/// A `ValueError` for refused fanouts: `fanouts: "citez=2": the store has
/// no relation ...` (the library names the CLI's flag, dropped here).
fn fanouts_err(e: &Error) -> PyErr {
    let msg = e.to_string();
    arg_err("fanouts", msg.strip_prefix("--fanouts ").unwrap_or(&msg))
}

/// A byte size: an int, or a string such as `4096`, `512MiB`, `2GiB`,
/// `1.5G` (binary multiples, as the CLI's `--memory`).
fn parse_bytes(arg: &str, v: &Bound<'_, PyAny>) -> PyResult<u64> {
    if let Ok(n) = v.extract::<u64>() {
        return Ok(n);
    }
    let s: String = v
        .extract()
        .map_err(|_| arg_err(arg, "expected a byte count or a size such as \"2GiB\""))?;
    ginex::internals::size::parse_bytes(&s).map_err(|e| match e {
        ginex::Error::InvalidArgument(reason) => arg_err(arg, reason),
        other => arg_err(arg, other),
    })
}

/// A store opened read-only: `ginex.Store(path)`.
#[pyclass(name = "Store", module = "ginex", frozen)]
struct PyStore {
    store: Store,
    /// Original ids ↔ store ids: every id in or out is an original id.
    ids: Arc<NodeIds>,
}

impl PyStore {
    /// The store node of the user's (original) id `id`.
    fn store_id(&self, arg: &str, id: u64) -> PyResult<u64> {
        self.ids.store_id(id).map_err(|_| {
            let n = self.store.num_nodes();
            let dir = self.store.dir().display();
            if self.ids.is_identity() {
                arg_err(
                    arg,
                    format!("node id {id} is out of range ({dir} has {n} nodes)"),
                )
            } else {
                arg_err(
                    arg,
                    format!("node id {id} is not an original id of {dir} ({n} nodes)"),
                )
            }
        })
    }
}

/// Node ids from a 1-D numpy array of any integer dtype or a sequence of
/// ints; a negative or non-integer id is a `ValueError` naming `arg`.
fn node_ids(arg: &str, v: &Bound<'_, PyAny>) -> PyResult<Vec<u64>> {
    fn signed<T: Copy + Into<i64> + numpy::Element>(
        arg: &str,
        a: PyReadonlyArray1<'_, T>,
    ) -> PyResult<Vec<u64>> {
        a.as_array()
            .iter()
            .map(|&x| {
                let x: i64 = x.into();
                u64::try_from(x).map_err(|_| arg_err(arg, format!("node id {x} is negative")))
            })
            .collect()
    }
    if let Ok(a) = v.extract::<PyReadonlyArray1<'_, u64>>() {
        return Ok(a.as_array().to_vec());
    }
    if let Ok(a) = v.extract::<PyReadonlyArray1<'_, u32>>() {
        return Ok(a.as_array().iter().map(|&x| u64::from(x)).collect());
    }
    if let Ok(a) = v.extract::<PyReadonlyArray1<'_, i64>>() {
        return signed(arg, a);
    }
    if let Ok(a) = v.extract::<PyReadonlyArray1<'_, i32>>() {
        return signed(arg, a);
    }
    if v.cast::<numpy::PyUntypedArray>().is_err() {
        if let Ok(list) = v.extract::<Vec<i64>>() {
            return list
                .into_iter()
                .map(|x| {
                    u64::try_from(x).map_err(|_| arg_err(arg, format!("node id {x} is negative")))
                })
                .collect();
        }
    }
    Err(arg_err(
        arg,
        "expected a 1-D array (uint64, int64, uint32 or int32) or a list of node ids",
    ))
}

fn ids_array<'py>(py: Python<'py>, v: Vec<u64>) -> Bound<'py, PyArray1<i64>> {
    v.into_iter()
        .map(|x| x as i64)
        .collect::<Vec<_>>()
        .into_pyarray(py)
}

#[pymethods]
impl PyStore {
    #[new]
    fn new(py: Python<'_>, path: PathBuf) -> PyResult<Self> {
        let (store, ids) = py
            .detach(|| {
                let store = Store::open(&path)?;
                let ids = NodeIds::of(&store)?;
                Ok::<_, Error>((store, ids))
            })
            .map_err(to_py)?;
        Ok(PyStore {
            store,
            ids: Arc::new(ids),
        })
    }

    /// The store directory.
    #[getter]
    fn path(&self) -> PathBuf {
        self.store.dir().to_path_buf()
    }
    #[getter]
    fn num_nodes(&self) -> u64 {
        self.store.num_nodes()
    }
    #[getter]
    fn num_edges(&self) -> u64 {
        self.store.num_edges()
    }
    #[getter]
    fn feature_dim(&self) -> u32 {
        self.store.feature_dim()
    }
    /// The feature dtype on disk: "f32", "f16" or "bf16".
    #[getter]
    fn dtype(&self) -> &'static str {
        self.store.dtype().name()
    }
    #[getter]
    fn num_classes(&self) -> u32 {
        self.store.num_classes()
    }

    /// Feature rows of `ids` (node ids of the input: original ids of a
    /// --remap or --reorder store; each checked) as float32
    /// `(len(ids), feature_dim)`; every page's CRC is checked.
    fn features<'py>(
        &self,
        py: Python<'py>,
        ids: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyArray2<f32>>> {
        let ids = node_ids("ids", ids)?
            .into_iter()
            .map(|id| self.store_id("ids", id))
            .collect::<PyResult<Vec<u64>>>()?;
        let dim = self.store.feature_dim() as usize;
        let mut out = vec![0f32; ids.len() * dim];
        py.detach(|| self.store.read_feature_rows_f32(&ids, &mut out))
            .map_err(to_py)?;
        let arr = Array2::from_shape_vec((ids.len(), dim), out)
            .map_err(|e| GinexError::new_err(e.to_string()))?;
        Ok(arr.into_pyarray(py))
    }

    /// Labels as int32 (`-1` = none) in ascending node id (original ids
    /// where the store keeps them: entry `k` is the label of
    /// `original_ids()[k]`), or None when the store has none.
    fn labels<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyArray1<i32>>>> {
        Ok(self
            .store
            .labels()
            .map_err(to_py)?
            .map(|l| self.ids.to_user_order(&l).into_pyarray(py)))
    }

    /// `{"train": ids, "valid": ids, "test": ids}` (int64), or None.
    fn splits<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyDict>>> {
        let Some(s) = self.store.splits().map_err(to_py)? else {
            return Ok(None);
        };
        let d = PyDict::new(py);
        let user = |list: &[u64]| {
            let mut v = self.ids.originals(list);
            v.sort_unstable();
            ids_array(py, v)
        };
        d.set_item("train", user(&s.train))?;
        d.set_item("valid", user(&s.valid))?;
        d.set_item("test", user(&s.test))?;
        Ok(Some(d))
    }

    /// The original ids (int64, ascending) kept by a --remap or --reorder
    /// import — the ids every other method takes and returns — or None
    /// when the store's ids are the input's.
    fn original_ids<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyArray1<i64>>>> {
        Ok((!self.ids.is_identity()).then(|| ids_array(py, self.ids.sorted_originals())))
    }

    /// The node types and relations of a typed store (format/schema.md),
    /// or None: `{"node_types": [{"name", "offset", "count", "dim", "dtype"}],
    /// "relations": [{"src", "name", "dst", "num_edges", "canonical"}]}`.
    /// Type `t` owns the node ids `offset .. offset + count` (a typed
    /// store's ids are its global ids); `src`/`dst` index `node_types`;
    /// `dim` 0 = no features (and `dtype` None); each featured type has its
    /// own `dim` and `dtype`, and batches return its rows widened to the
    /// store's row format (its `dim` first, then zeros).
    fn schema<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyDict>>> {
        let Some(schema) = self.store.schema() else {
            return Ok(None);
        };
        let types = PyList::empty(py);
        for t in &schema.node_types {
            let d = PyDict::new(py);
            d.set_item("name", &t.name)?;
            d.set_item("offset", t.offset)?;
            d.set_item("count", t.count)?;
            d.set_item("dim", t.dim)?;
            d.set_item("dtype", t.dtype.map(|d| d.name()))?;
            types.append(d)?;
        }
        let relations = PyList::empty(py);
        for r in &schema.relations {
            let d = PyDict::new(py);
            d.set_item("src", r.src)?;
            d.set_item("name", &r.name)?;
            d.set_item("dst", r.dst)?;
            d.set_item("num_edges", r.num_edges)?;
            d.set_item("canonical", schema.canonical(r))?;
            relations.append(d)?;
        }
        let out = PyDict::new(py);
        out.set_item("node_types", types)?;
        out.set_item("relations", relations)?;
        Ok(Some(out))
    }

    /// In-neighbors of `node` (int64, ascending; original ids where the
    /// store keeps them).
    fn in_neighbors<'py>(&self, py: Python<'py>, node: u64) -> PyResult<Bound<'py, PyArray1<i64>>> {
        let v = self.store_id("node", node)?;
        let mut list = self
            .ids
            .originals(&self.store.in_neighbors(v).map_err(to_py)?);
        list.sort_unstable();
        Ok(ids_array(py, list))
    }

    /// Checks every file's checksum (as `ginex verify`); raises
    /// `CorruptStoreError` naming the file and offset on a mismatch.
    fn verify<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let r = py.detach(|| self.store.verify()).map_err(to_py)?;
        let d = PyDict::new(py);
        d.set_item("files", r.files)?;
        d.set_item("bytes", r.bytes)?;
        d.set_item("pages", r.pages)?;
        d.set_item("segments", r.segments)?;
        Ok(d)
    }

    fn __repr__(&self) -> String {
        format!(
            "ginex.Store({:?}, num_nodes={}, num_edges={}, feature_dim={}, dtype={:?})",
            self.store.dir().display().to_string(),
            self.store.num_nodes(),
            self.store.num_edges(),
            self.store.feature_dim(),
            self.store.dtype().name()
        )
    }
}

/// `ginex-import files` from staged `.npy` files (see
/// `ginex.import_arrays`); returns the node and edge counts.
#[pyfunction]
#[pyo3(signature = (out, edges, features=None, feature_dim=1, labels=None, num_classes=None,
    train=None, valid=None, test=None, num_nodes=None, undirected=false, dtype="f32",
    memory=None, quiet=true, reorder="none"))]
#[allow(clippy::too_many_arguments)]
fn import_files(
    py: Python<'_>,
    out: PathBuf,
    edges: PathBuf,
    features: Option<PathBuf>,
    feature_dim: u64,
    labels: Option<PathBuf>,
    num_classes: Option<u32>,
    train: Option<PathBuf>,
    valid: Option<PathBuf>,
    test: Option<PathBuf>,
    num_nodes: Option<u64>,
    undirected: bool,
    dtype: &str,
    memory: Option<&Bound<'_, PyAny>>,
    quiet: bool,
    reorder: &str,
) -> PyResult<(u64, u64)> {
    let dtype = Dtype::parse(dtype).map_err(|e| arg_err("dtype", e))?;
    let reorder = ginex::Reorder::parse(reorder).map_err(|e| arg_err("reorder", e))?;
    let memory = match memory {
        Some(m) => parse_bytes("memory", m)?,
        None => 2 << 30,
    };
    let mut opts = FilesImport::new(edges, out);
    opts.features = features;
    opts.feature_dim = feature_dim;
    opts.labels = labels;
    opts.num_classes = num_classes;
    opts.split_files = [train, valid, test];
    opts.num_nodes = num_nodes;
    opts.common.dtype = dtype;
    opts.common.undirected = undirected;
    opts.common.memory = memory;
    opts.common.quiet = quiet;
    opts.common.reorder = reorder;
    let r = py.detach(|| ginex::import_files(&opts)).map_err(to_py)?;
    Ok((r.nodes, r.csc.edges_out))
}

/// One batch in numpy's layout, converted with the GIL released.
struct BatchOut {
    index: u64,
    ids: Vec<i64>,
    num_seeds: usize,
    x: Vec<f32>,
    dim: usize,
    y: Option<Vec<i64>>,
    /// Per layer, in the loader's order: `[src..., dst...]` (local ids),
    /// the edge count, and `(num_src, num_dst)`.
    layers: Vec<(Vec<i64>, usize, (usize, usize))>,
    /// Per layer, in the same order: the edges' LABOR weights (None:
    /// neighbor sampling).
    weights: Vec<Option<Vec<f32>>>,
    checksum: u32,
    /// A link batch's labels.
    link: Option<LinkOut>,
}

fn convert(b: ginex::Batch, input_layer_first: bool, ids: &NodeIds, mode: NegMode) -> BatchOut {
    let hop = |h: &ginex::Hop| {
        let mut ei = Vec::with_capacity(h.src.len() * 2);
        ei.extend(h.src.iter().map(|&v| i64::from(v)));
        ei.extend(h.dst.iter().map(|&v| i64::from(v)));
        (ei, h.src.len(), (h.num_src, h.num_dst))
    };
    // ginex's hops are input layer first; PyG's NeighborLoader counts hops
    // from the seeds outwards (input layer last).
    let ordered: Vec<&ginex::Hop> = if input_layer_first {
        b.hops.iter().collect()
    } else {
        b.hops.iter().rev().collect()
    };
    let layers: Vec<_> = ordered.iter().map(|h| hop(h)).collect();
    let weights = ordered
        .iter()
        .map(|h| (!h.weights.is_empty()).then(|| h.weights.clone()))
        .collect();
    BatchOut {
        index: b.index,
        x: b.rows_f32(),
        dim: b.dim,
        ids: b.ids.iter().map(|&v| ids.original(v) as i64).collect(),
        num_seeds: b.num_seeds,
        y: b.labels.map(|l| l.into_iter().map(i64::from).collect()),
        layers,
        weights,
        checksum: b.checksum,
        link: b.link.as_ref().map(|l| LinkOut::of(l, mode)),
    }
}

/// One epoch of a [`Loader`]: an iterator of `ginex.Batch`, over
/// [`ginex::Loader`] (whose thread runs the executor of `ginex epoch`).
/// Dropping it, `close()` or leaving its `with` block stops and joins that
/// thread; the epoch's runtime files go with it.
#[pyclass(module = "ginex", frozen)]
struct Epoch {
    loader: Mutex<Option<ginex::Loader>>,
    /// Batch ids go out as original ids.
    ids: Arc<NodeIds>,
    /// A typed store's schema, for `Batch.hetero()`.
    schema: Option<Arc<Schema>>,
    input_layer_first: bool,
    /// How link batches present their negatives.
    neg_mode: NegMode,
    /// The report once the epoch finished, as JSON.
    report: Mutex<Option<String>>,
    /// The Python loader's slot for its last report.
    shared_report: Arc<Mutex<Option<String>>>,
}

impl Drop for Epoch {
    fn drop(&mut self) {
        // ginex::Loader's Drop cancels and joins its thread.
        if let Ok(mut l) = self.loader.lock() {
            l.take();
        }
    }
}

/// One batch: `ids` (int64, seeds first; the original ids of a --remap
/// or --reorder store), `x` (float32 rows of `ids`), `y` (int64 labels of the seeds, or None), `edge_index` (per layer, (2, E)
/// int64 local ids: row 0 the neighbor (source), row 1 the target, both
/// indexing `ids`), `size` (per layer, `(num_src, num_dst)`), `batch_size`
/// (the number of seeds), `checksum` (CRC-32 of the rows as stored, the
/// `checksum` of `ginex epoch --report`), `index` (batch number),
/// `edge_weight` (per layer, float32 importance weights of the edges,
/// each target's summing to 1, with `sampler="labor-…"`; None per layer
/// with neighbor sampling). `hetero()`: the typed view of a typed store's
/// batch. A link batch (`ginex.LinkLoader`) also has, as PyG's
/// `LinkNeighborLoader`, indices into `ids`: in binary mode
/// `edge_label_index` ((2, P(1+K)) int64: the P positives, then the P×K
/// negatives, each negative's source its positive's) and `edge_label`
/// (float32, 1 then 0); in triplet mode `src_index`, `dst_pos_index` (P
/// each) and `dst_neg_index` ((P, K)); the fields of the other mode, and
/// all of them on a node batch, are None.
#[pyclass(module = "ginex", frozen)]
struct Batch {
    #[pyo3(get)]
    index: u64,
    #[pyo3(get)]
    ids: Py<PyArray1<i64>>,
    #[pyo3(get)]
    x: Py<PyArray2<f32>>,
    #[pyo3(get)]
    y: Option<Py<PyArray1<i64>>>,
    #[pyo3(get)]
    edge_index: Py<PyList>,
    #[pyo3(get)]
    size: Py<PyList>,
    #[pyo3(get)]
    edge_weight: Py<PyList>,
    #[pyo3(get)]
    batch_size: usize,
    #[pyo3(get)]
    checksum: u32,
    #[pyo3(get)]
    edge_label_index: Option<Py<PyArray2<i64>>>,
    #[pyo3(get)]
    edge_label: Option<Py<PyArray1<f32>>>,
    #[pyo3(get)]
    src_index: Option<Py<PyArray1<i64>>>,
    #[pyo3(get)]
    dst_pos_index: Option<Py<PyArray1<i64>>>,
    #[pyo3(get)]
    dst_neg_index: Option<Py<PyArray2<i64>>>,
    /// The store's schema when it is typed.
    schema: Option<Arc<Schema>>,
    /// The order of `edge_index` / `size`.
    input_layer_first: bool,
}

#[pymethods]
impl Batch {
    /// `[(edge_index, size), ...]`, PyG `NeighborSampler`'s `adjs` shape.
    #[getter]
    fn adjs<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let ei = self.edge_index.bind(py);
        let sz = self.size.bind(py);
        let out = PyList::empty(py);
        for (e, s) in ei.iter().zip(sz.iter()) {
            out.append(PyTuple::new(py, [e, s])?)?;
        }
        Ok(out)
    }

    /// The typed (heterogeneous) view of a typed store's batch, in PyG's
    /// heterogeneous `NeighborLoader` layout: a `ginex.HeteroBatch` with
    /// `x_dict`, `n_id_dict`, `edge_index_dict`, `num_sampled_nodes_dict`,
    /// `num_sampled_edges_dict`, `y_dict`, the per-layer split and
    /// `to_hetero_data()` (see its docstring). Built from this batch's
    /// arrays on each call. A batch of an untyped store raises
    /// `ValueError`.
    fn hetero<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyAny>> {
        let py = slf.py();
        let this = slf.get();
        let Some(schema) = this.schema.clone() else {
            return Err(PyValueError::new_err(
                "hetero(): the batch's store is not a typed store (it has no schema), so its batches have one node type; use edge_index / adjs as they are",
            ));
        };
        let ids: Vec<u64> = this
            .ids
            .bind(py)
            .readonly()
            .as_array()
            .iter()
            .map(|&v| {
                u64::try_from(v).map_err(|_| arg_err("ids", format!("node id {v} is negative")))
            })
            .collect::<PyResult<_>>()?;
        let layers = this.edge_index.bind(py);
        let sizes = this.size.bind(py);
        if layers.len() != sizes.len() {
            return Err(arg_err(
                "edge_index",
                format!("{} layers but size has {}", layers.len(), sizes.len()),
            ));
        }
        let mut hops = Vec::with_capacity(layers.len());
        for (e, size) in layers.iter().zip(sizes.iter()) {
            let a: PyReadonlyArray2<'_, i64> = e
                .extract()
                .map_err(|_| arg_err("edge_index", "expected int64 arrays of shape (2, E)"))?;
            let a = a.as_array();
            if a.nrows() != 2 {
                return Err(arg_err(
                    "edge_index",
                    format!("expected shape (2, E), got {:?}", a.shape()),
                ));
            }
            let (num_src, num_dst): (usize, usize) = size.extract()?;
            let local = |row: usize| -> PyResult<Vec<u32>> {
                a.row(row)
                    .iter()
                    .map(|&x| {
                        u32::try_from(x).map_err(|_| {
                            arg_err("edge_index", format!("local id {x} is out of range"))
                        })
                    })
                    .collect()
            };
            hops.push(ginex::Hop {
                num_dst,
                num_src,
                src: local(0)?,
                dst: local(1)?,
                weights: Vec::new(),
            });
        }
        if !this.input_layer_first {
            hops.reverse();
        }
        let num_seeds = this.batch_size;
        let typed = py
            .detach(|| TypedBatch::new(&schema, &ids, num_seeds, &hops, None))
            .map_err(to_py)?;
        let node_types = PyList::empty(py);
        for n in &typed.nodes {
            let d = PyDict::new(py);
            d.set_item("name", &n.name)?;
            d.set_item("offset", n.offset)?;
            d.set_item("has_features", n.has_features)?;
            d.set_item("dim", n.dim)?;
            let pos: Vec<i64> = n.positions.iter().map(|&p| i64::from(p)).collect();
            d.set_item("positions", pos.into_pyarray(py))?;
            d.set_item("num_sampled_nodes", n.num_sampled.clone())?;
            node_types.append(d)?;
        }
        let relations = PyList::empty(py);
        for (r, e) in typed.edges.iter().enumerate() {
            let d = PyDict::new(py);
            d.set_item("key", typed.edge_type(r))?;
            let mut ei = Vec::with_capacity(2 * e.len());
            ei.extend(e.src.iter().map(|&v| i64::from(v)));
            ei.extend(e.dst.iter().map(|&v| i64::from(v)));
            let ei = Array2::from_shape_vec((2, e.len()), ei)
                .map_err(|e| GinexError::new_err(e.to_string()))?;
            d.set_item("edge_index", ei.into_pyarray(py))?;
            d.set_item("num_sampled_edges", e.num_sampled.clone())?;
            relations.append(d)?;
        }
        py.import("ginex.hetero")?.getattr("HeteroBatch")?.call1((
            slf,
            node_types,
            relations,
            this.input_layer_first,
        ))
    }

    fn __repr__(&self, py: Python<'_>) -> String {
        format!(
            "ginex.Batch(index={}, nodes={}, batch_size={}, layers={})",
            self.index,
            self.ids.bind(py).len().unwrap_or(0),
            self.batch_size,
            self.edge_index.bind(py).len()
        )
    }
}

fn make_batch(
    py: Python<'_>,
    b: BatchOut,
    schema: Option<Arc<Schema>>,
    input_layer_first: bool,
) -> PyResult<Batch> {
    let n = b.ids.len();
    let x =
        Array2::from_shape_vec((n, b.dim), b.x).map_err(|e| GinexError::new_err(e.to_string()))?;
    let edge_index = PyList::empty(py);
    let size = PyList::empty(py);
    for (ei, e, (num_src, num_dst)) in b.layers {
        let a =
            Array2::from_shape_vec((2, e), ei).map_err(|e| GinexError::new_err(e.to_string()))?;
        edge_index.append(a.into_pyarray(py))?;
        size.append((num_src, num_dst))?;
    }
    let link = LinkArrays::wrap(py, b.link)?;
    let edge_weight = PyList::empty(py);
    for w in b.weights {
        match w {
            Some(w) => edge_weight.append(Array1::from(w).into_pyarray(py))?,
            None => edge_weight.append(py.None())?,
        }
    }
    Ok(Batch {
        index: b.index,
        ids: Array1::from(b.ids).into_pyarray(py).unbind(),
        x: x.into_pyarray(py).unbind(),
        y: b.y.map(|y| y.into_pyarray(py).unbind()),
        edge_index: edge_index.unbind(),
        size: size.unbind(),
        edge_weight: edge_weight.unbind(),
        batch_size: b.num_seeds,
        checksum: b.checksum,
        edge_label_index: link.edge_label_index,
        edge_label: link.edge_label,
        src_index: link.src_index,
        dst_pos_index: link.dst_pos_index,
        dst_neg_index: link.dst_neg_index,
        schema,
        input_layer_first,
    })
}

fn report_dict<'py>(py: Python<'py>, json: &str) -> PyResult<Bound<'py, PyAny>> {
    py.import("json")?.call_method1("loads", (json,))
}

#[pymethods]
impl Epoch {
    fn __iter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    fn __next__(&self, py: Python<'_>) -> PyResult<Option<Batch>> {
        let first = self.input_layer_first;
        let mode = self.neg_mode;
        let next = py.detach(|| {
            let mut g = self.loader.lock().ok()?;
            let loader = g.as_mut()?;
            match loader.next() {
                Some(Ok(b)) => Some(Ok(convert(b, first, &self.ids, mode))),
                Some(Err(e)) => {
                    g.take();
                    Some(Err(e))
                }
                None => {
                    let report = loader.report().map(|r| r.to_json().to_string());
                    g.take();
                    if let Some(json) = report {
                        if let Ok(mut slot) = self.shared_report.lock() {
                            *slot = Some(json.clone());
                        }
                        if let Ok(mut mine) = self.report.lock() {
                            *mine = Some(json);
                        }
                    }
                    None
                }
            }
        });
        match next {
            Some(Ok(b)) => make_batch(py, b, self.schema.clone(), first).map(Some),
            Some(Err(e)) => Err(to_py(e)),
            None => Ok(None),
        }
    }

    /// Stops the epoch now: the thread ends and its runtime files go.
    fn close(&self, py: Python<'_>) {
        py.detach(|| {
            if let Ok(mut l) = self.loader.lock() {
                l.take();
            }
        });
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    fn __exit__(
        &self,
        py: Python<'_>,
        _t: Option<&Bound<'_, PyAny>>,
        _v: Option<&Bound<'_, PyAny>>,
        _tb: Option<&Bound<'_, PyAny>>,
    ) -> bool {
        self.close(py);
        false
    }

    /// The epoch report (dict) once the epoch finished, else None.
    #[getter]
    fn report<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyAny>>> {
        let json = self.report.lock().ok().and_then(|g| g.clone());
        json.map(|j| report_dict(py, &j)).transpose()
    }
}

/// The knobs of a loader's epochs (everything but the epoch number).
#[derive(Clone)]
struct LoaderArgs {
    fanouts: Fanouts,
    sampler: SamplerConfig,
    batch_size: usize,
    policy: Policy,
    split: Split,
    shuffle: bool,
    seed: u64,
    workers: Option<usize>,
    run_dir: Option<PathBuf>,
    max_batches: Option<u64>,
    /// Seeds given as node ids (store ids), in place of `split`.
    seeds: Option<Arc<Vec<u64>>>,
    /// Link batches: (negatives per positive, their presentation,
    /// undirected).
    link: Option<(usize, NegMode, bool)>,
    /// Link batches: where their negatives come from, their edge order.
    link_local: (ginex::NegSource, ginex::EdgeOrder),
}

impl LoaderArgs {
    fn builder<'s>(&self, store: &'s Store, epoch: u64) -> ginex::LoaderBuilder<'s> {
        let mut b = ginex::Loader::builder(store)
            .relation_fanouts(self.fanouts.clone())
            .sampler(self.sampler)
            .batch_size(self.batch_size)
            .policy(self.policy)
            .split(self.split)
            .shuffle(self.shuffle)
            .seed(self.seed)
            .epoch(epoch);
        if let Some(w) = self.workers {
            b = b.workers(w);
        }
        if let Some(d) = &self.run_dir {
            b = b.run_dir(d.clone());
        }
        if let Some(m) = self.max_batches {
            b = b.max_batches(m);
        }
        if let Some(s) = &self.seeds {
            b = b.seed_nodes(s.to_vec());
        }
        if let Some((neg, mode, undirected)) = self.link {
            b = b.link(neg).neg_mode(mode).undirected(undirected);
            b = b.negatives(self.link_local.0).edge_order(self.link_local.1);
        }
        b
    }
}

/// `ginex.Loader(store, fanouts, batch_size=1000, policy="ginex",
/// memory=None, superbatch=None, seed=0, split="train", shuffle=True,
/// epoch=0, max_batches=None, workers=None, run_dir=None,
/// input_layer_first=False, seeds=None, neg=None, neg_mode="binary",
/// undirected=False, sampler="neighbor", layer_dependency=False,
/// batch_dependency=1, negatives=None, edge_order=None)`: batches of a
/// store under a cache policy, from the executor of `ginex epoch`
/// ([`ginex::Loader`]). `neg` (K) makes link batches of `batch_size`
/// positive edges with K negatives each (`ginex.LinkLoader`); `split`,
/// `seeds` and `shuffle` are then unused (every edge, shuffled per epoch),
/// and `negatives` ("uniform", "batch", "mixed:F") and `edge_order`
/// ("random", "blocked[:P]") are `--negatives` and `--edge-order`.
///
/// `store` is a `ginex.Store` or a path; `fanouts` a list of counts per
/// hop (`[10, 5]`, -1 = all) or, on a typed store, per relation: the
/// `--fanouts` text `"cites=10:5,writes=5:5,*=2:0"`, a list of
/// `{relation: count}` dicts (one per hop, `"*"` for the relations not
/// named) or a `{relation: [count per hop]}` dict; a relation not covered
/// is not sampled. `policy` one of `ginex.POLICIES`;
/// `sampler` "neighbor", "labor-0", "labor-1" or "labor-*" (`ginex epoch
/// --sampler`; a LABOR batch's `edge_weight` holds the importance
/// weights), with LABOR's `layer_dependency` and `batch_dependency` (K);
/// `memory` one budget for the data path ("4GiB" or bytes), planned as
/// `ginex epoch --memory` plans it (without it: a 256 MiB feature cache, no
/// neighbor cache, superbatches of 100); `split` "train", "valid", "test"
/// or "all"; `seeds` node ids (original ids; an int array or list, no
/// repeats) to draw the seeds from instead of `split`, in that order
/// unless shuffled; `run_dir` where runtime files go (default STORE.runs).
///
/// Iterating starts an epoch — the next epoch number each time, so each
/// pass reshuffles, as PyG's loaders do; the sizes planned for the first
/// epoch are kept. Each batch's `edge_index` / `size` lists are in PyG
/// NeighborLoader's hop order (edges into the seeds first, the input layer
/// last); `input_layer_first=True` reverses them.
#[pyclass(module = "ginex")]
struct Loader {
    store: Store,
    ids: Arc<NodeIds>,
    schema: Option<Arc<Schema>>,
    args: LoaderArgs,
    input_layer_first: bool,
    /// The first epoch, built (and planned) by the constructor.
    first: Mutex<Option<ginex::Loader>>,
    next_epoch: u64,
    len: usize,
    /// Cache sizes and superbatch as planned or given, for later epochs.
    sizes: (u64, u64, u64),
    plan: Option<String>,
    report: Arc<Mutex<Option<String>>>,
}

#[pymethods]
impl Loader {
    #[new]
    #[pyo3(signature = (store, fanouts, batch_size=1000, policy="ginex", memory=None,
        superbatch=None, seed=0, split="train", shuffle=true, epoch=0, max_batches=None,
        workers=None, run_dir=None, input_layer_first=false, seeds=None, neg=None,
        neg_mode="binary", undirected=false, sampler="neighbor", layer_dependency=false,
        batch_dependency=1, negatives=None, edge_order=None))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        store: &Bound<'_, PyAny>,
        fanouts: &Bound<'_, PyAny>,
        batch_size: i64,
        policy: &str,
        memory: Option<&Bound<'_, PyAny>>,
        superbatch: Option<i64>,
        seed: u64,
        split: &str,
        shuffle: bool,
        epoch: u64,
        max_batches: Option<u64>,
        workers: Option<usize>,
        run_dir: Option<PathBuf>,
        input_layer_first: bool,
        seeds: Option<&Bound<'_, PyAny>>,
        neg: Option<usize>,
        neg_mode: &str,
        undirected: bool,
        sampler: &str,
        layer_dependency: bool,
        batch_dependency: u64,
        negatives: Option<&str>,
        edge_order: Option<&str>,
    ) -> PyResult<Self> {
        let link_local = link::link_local(neg.is_some(), negatives, edge_order)?;
        let (store, ids): (Store, Arc<NodeIds>) = match store.cast::<PyStore>() {
            Ok(s) => (s.get().store.clone(), s.get().ids.clone()),
            Err(_) => {
                let path: PathBuf = store
                    .extract()
                    .map_err(|_| arg_err("store", "expected a ginex.Store or a path"))?;
                py.detach(|| {
                    let store = Store::open(&path)?;
                    let ids = NodeIds::of(&store)?;
                    Ok::<_, Error>((store, Arc::new(ids)))
                })
                .map_err(to_py)?
            }
        };
        let fanouts = parse_fanouts(fanouts)?;
        fanouts
            .resolve(store.schema())
            .map_err(|e| fanouts_err(&e))?;
        if batch_size <= 0 {
            return Err(arg_err(
                "batch_size",
                format!("{batch_size} must be positive"),
            ));
        }
        if superbatch.is_some_and(|s| s <= 0) {
            return Err(arg_err("superbatch", "must be positive"));
        }
        let seeds = seeds
            .map(|s| seed_store_ids(&ids, store.num_nodes(), s))
            .transpose()?;
        let args = LoaderArgs {
            fanouts,
            sampler: sampler_config(sampler, layer_dependency, batch_dependency)?,
            batch_size: batch_size as usize,
            policy: Policy::parse(policy).map_err(|e| arg_err("policy", e))?,
            split: Split::parse(split).map_err(|e| arg_err("split", e))?,
            shuffle,
            seed,
            workers,
            run_dir,
            max_batches,
            seeds,
            link: match neg {
                Some(k) => Some((
                    k,
                    NegMode::parse(neg_mode).map_err(|e| arg_err("neg_mode", e))?,
                    undirected,
                )),
                None => None,
            },
            link_local,
        };
        let memory = memory.map(|m| parse_bytes("memory", m)).transpose()?;
        let mut b = args.builder(&store, epoch);
        if let Some(m) = memory {
            b = b.memory_bytes(m);
        }
        if let Some(s) = superbatch {
            b = b.superbatch(s as u64);
        }
        let first = py.detach(|| b.build()).map_err(to_py)?;
        let row_bytes = store.layout().row_bytes() as u64;
        Ok(Loader {
            sizes: (
                first.feature_cache_rows() as u64 * row_bytes,
                first.neighbor_cache_bytes(),
                first.superbatch(),
            ),
            plan: first.memory_plan().map(|p| p.to_json().to_string()),
            len: first.len(),
            first: Mutex::new(Some(first)),
            schema: store.schema().cloned().map(Arc::new),
            store,
            ids,
            args,
            input_layer_first,
            next_epoch: epoch,
            report: Arc::new(Mutex::new(None)),
        })
    }

    /// Starts the next epoch.
    fn __iter__(&mut self, py: Python<'_>) -> PyResult<Epoch> {
        let epoch = self.next_epoch;
        let first = self.first.lock().ok().and_then(|mut f| f.take());
        let loader = match first {
            Some(l) => l,
            None => {
                let (feature_cache, neighbor_cache, superbatch) = self.sizes;
                let b = self
                    .args
                    .builder(&self.store, epoch)
                    .feature_cache_bytes(feature_cache)
                    .neighbor_cache_bytes(neighbor_cache)
                    .superbatch(superbatch);
                py.detach(|| b.build()).map_err(to_py)?
            }
        };
        self.next_epoch += 1;
        Ok(Epoch {
            loader: Mutex::new(Some(loader)),
            ids: self.ids.clone(),
            schema: self.schema.clone(),
            input_layer_first: self.input_layer_first,
            neg_mode: self.args.link.map_or(NegMode::Binary, |l| l.1),
            report: Mutex::new(None),
            shared_report: self.report.clone(),
        })
    }

    fn __len__(&self) -> usize {
        self.len
    }

    /// The report of the last epoch that ran to the end (dict: hits,
    /// misses, miss_ratio, seconds per stage, per_batch counters...), or None.
    #[getter]
    fn report<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyAny>>> {
        let json = self.report.lock().ok().and_then(|g| g.clone());
        json.map(|j| report_dict(py, &j)).transpose()
    }

    /// The memory plan (dict) when `memory` was given, else None.
    #[getter]
    fn memory_plan<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyAny>>> {
        self.plan.as_deref().map(|j| report_dict(py, j)).transpose()
    }

    /// The configuration the epochs run with (dict).
    #[getter]
    fn config<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let a = &self.args;
        let d = PyDict::new(py);
        d.set_item("policy", a.policy.name())?;
        d.set_item("feature_cache_bytes", self.sizes.0)?;
        d.set_item("neighbor_cache_bytes", self.sizes.1)?;
        d.set_item("superbatch", self.sizes.2)?;
        d.set_item("batch_size", a.batch_size)?;
        d.set_item("sampler", a.sampler.sampler.name())?;
        d.set_item("layer_dependency", a.sampler.layer_dependency)?;
        d.set_item("batch_dependency", a.sampler.batch_dependency)?;
        match a.fanouts.uniform() {
            Some(counts) => d.set_item("fanouts", counts.to_vec())?,
            None => d.set_item("fanouts", a.fanouts.to_string())?,
        }
        match &a.seeds {
            Some(s) => d.set_item("split", format!("seeds ({} nodes)", s.len()))?,
            None => d.set_item("split", a.split.name())?,
        }
        d.set_item("shuffle", a.shuffle)?;
        d.set_item("seed", a.seed)?;
        d.set_item("next_epoch", self.next_epoch)?;
        if let Some((neg, mode, undirected)) = a.link {
            d.set_item("neg", neg)?;
            d.set_item("neg_mode", mode.name())?;
            d.set_item("undirected", undirected)?;
            d.set_item("negatives", a.link_local.0.name())?;
            d.set_item("edge_order", a.link_local.1.name())?;
        }
        Ok(d)
    }
}

/// `seeds=`: user node ids as store ids, each checked (range, repeats).
fn seed_store_ids(ids: &NodeIds, n: u64, v: &Bound<'_, PyAny>) -> PyResult<Arc<Vec<u64>>> {
    let user = node_ids("seeds", v)?;
    let mut seen = vec![false; n as usize];
    let mut out = Vec::with_capacity(user.len());
    for id in user {
        let s = ids.store_id(id).map_err(|_| {
            arg_err(
                "seeds",
                format!("node id {id} is not a node of the store ({n} nodes)"),
            )
        })?;
        if std::mem::replace(&mut seen[s as usize], true) {
            return Err(arg_err("seeds", format!("node id {id} repeats")));
        }
        out.push(s);
    }
    Ok(Arc::new(out))
}

mod pyg;

#[pymodule]
fn _ginex(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add_class::<PyStore>()?;
    m.add_class::<Loader>()?;
    m.add_class::<Epoch>()?;
    m.add_class::<Batch>()?;
    m.add_function(wrap_pyfunction!(import_files, m)?)?;
    pyg::register(m)?;
    m.add("GinexError", py.get_type::<GinexError>())?;
    m.add("CorruptStoreError", py.get_type::<CorruptStoreError>())?;
    m.add("POLICIES", Policy::ALL.map(Policy::name).to_vec())?;
    Ok(())
}
