//! The native half of `ginex.pyg` (PyG's `GraphStore`): whole CSCs as
//! numpy arrays, for PyG code that asks a graph store for the structure
//! (`graph_store.csc()`, `get_edge_index`). The sampled path does not use
//! them (`ginex.pyg.NeighborLoader` samples natively).
//!
//! The lists are streamed segment by segment ([`Source::in_lists_range`])
//! and every segment is checked against its CRC, so the arrays are copies
//! (8 bytes an edge and a node): the on-disk segments carry CRCs and
//! another index width, so they cannot be handed out memory-mapped
//! without skipping the checks.

use ginex::internals::export::hetero::RelationSplitter;
use ginex::internals::export::source::Source;
use numpy::IntoPyArray;
use numpy::PyArray1;
use pyo3::prelude::*;

use super::{arg_err, to_py, PyStore};
use ginex::Error;

/// Streaming block budget on top of the store's resident `indptr`.
const STREAM_BYTES: u64 = 64 << 20;

type Csc<'py> = (Bound<'py, PyArray1<i64>>, Bound<'py, PyArray1<i64>>);

/// `_pyg_csc(store)`: an untyped store's CSC in user ids, `(colptr, row)`
/// (int64; `colptr` has `num_nodes + 1` entries, `row[colptr[v]:colptr[v+1]]`
/// the sorted in-neighbours of `v`). A store with original ids
/// (`--reorder`, `--remap`) is re-sorted by them; they must be `0..N`
/// (PyG indexes nodes densely), else `ValueError`.
#[pyfunction]
#[pyo3(name = "_pyg_csc")]
fn pyg_csc<'py>(py: Python<'py>, store: &Bound<'py, PyStore>) -> PyResult<Csc<'py>> {
    let s = store.get();
    if s.store.schema().is_some() {
        return Err(arg_err(
            "store",
            "a typed store has one CSC per relation; use _pyg_relation_csc",
        ));
    }
    let n = s.store.num_nodes();
    let ids = s.ids.clone();
    if !ids.is_identity() && ids.sorted_originals().last().is_some_and(|&m| m >= n) {
        return Err(arg_err(
            "store",
            format!(
                "{}: its original ids are not 0..{n} (a --remap store), and PyG numbers nodes densely; re-import it with dense ids",
                s.store.dir().display()
            ),
        ));
    }
    let (colptr, row) = py
        .detach(|| {
            let src = Source::new(&s.store, (n + 1) * 8 + STREAM_BYTES)?;
            let indptr = s.store.indptr();
            let e = indptr.last().copied().unwrap_or(0) as usize;
            // colptr in user order: the user node orig(v) has v's list.
            let mut colptr = vec![0i64; n as usize + 1];
            for v in 0..n {
                let deg = indptr[v as usize + 1] - indptr[v as usize];
                colptr[ids.original(v) as usize + 1] = deg as i64;
            }
            for i in 0..n as usize {
                colptr[i + 1] += colptr[i];
            }
            let mut row = vec![0i64; e];
            src.in_lists(&mut |dst, srcs| {
                let at = colptr[ids.original(dst) as usize] as usize;
                let out = row
                    .get_mut(at..at + srcs.len())
                    .ok_or_else(|| Error::invalid_argument("in-list longer than indptr says"))?;
                for (o, &u) in out.iter_mut().zip(srcs) {
                    *o = ids.original(u) as i64;
                }
                if !ids.is_identity() {
                    out.sort_unstable();
                }
                Ok(())
            })?;
            Ok::<_, Error>((colptr, row))
        })
        .map_err(to_py)?;
    Ok((colptr.into_pyarray(py), row.into_pyarray(py)))
}

/// `_pyg_relation_csc(store, relation)`: relation `relation` (an index
/// into `schema()["relations"]`) of a typed store as a CSC in type-local
/// ids, `(colptr, row)`: `colptr` has one entry per node of the
/// destination type and one more, `row` holds source-type-local ids,
/// ascending per destination.
#[pyfunction]
#[pyo3(name = "_pyg_relation_csc")]
fn pyg_relation_csc<'py>(
    py: Python<'py>,
    store: &Bound<'py, PyStore>,
    relation: usize,
) -> PyResult<Csc<'py>> {
    let s = store.get();
    let Some(schema) = s.store.schema() else {
        return Err(arg_err(
            "store",
            "not a typed store (it has no relations); use _pyg_csc",
        ));
    };
    let Some(rel) = schema.relations.get(relation) else {
        return Err(arg_err(
            "relation",
            format!(
                "{relation}: the store has {} relations",
                schema.relations.len()
            ),
        ));
    };
    let dst_type = rel.dst as usize;
    let range = schema
        .node_types
        .get(dst_type)
        .map(|t| t.ids())
        .ok_or_else(|| arg_err("relation", "its destination type is not in the schema"))?;
    let n = s.store.num_nodes();
    let (colptr, row) = py
        .detach(|| {
            let src = Source::new(&s.store, (n + 1) * 8 + STREAM_BYTES)?;
            let mut splitter = RelationSplitter::new(&src, schema, dst_type);
            let slot = splitter
                .relations()
                .position(|r| r == relation)
                .ok_or_else(|| Error::invalid_argument("relation not into its destination type"))?;
            let mut colptr: Vec<i64> = Vec::with_capacity((range.end - range.start) as usize + 1);
            colptr.push(0);
            let mut row: Vec<i64> = Vec::new();
            src.in_lists_range(range.clone(), &mut |dst, srcs| {
                splitter.split(dst, srcs, &mut |k, _local_dst, locals| {
                    if k == slot {
                        row.extend(locals.iter().map(|&u| u as i64));
                    }
                    Ok(())
                })?;
                colptr.push(row.len() as i64);
                Ok(())
            })?;
            Ok::<_, Error>((colptr, row))
        })
        .map_err(to_py)?;
    Ok((colptr.into_pyarray(py), row.into_pyarray(py)))
}

/// Adds this module's functions to `ginex._ginex`.
pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(pyg_csc, m)?)?;
    m.add_function(wrap_pyfunction!(pyg_relation_csc, m)?)?;
    Ok(())
}
