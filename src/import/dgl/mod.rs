//! `ginex-import dgl METADATA.json`: DGL's chunked graph format (DGL user
//! guide §7.1, "Chunked Graph Format"). `graph_name`, `node_type`,
//! `num_nodes_per_chunk`, `edge_type` (`src:rel:dst`),
//! `num_edges_per_chunk`, `edges` (per edge type: `format` `csv` with a
//! `delimiter`, or `numpy` arrays of shape (E, 2)) and `node_data` (per node
//! type and key: `numpy` chunks, concatenated in order).
//!
//! Homogeneous graphs (one node type; any number of edge types, merged)
//! are imported fully; graphs with several node types are refused with a
//! message (ginex stores homogeneous graphs; `dgl.to_homogeneous` converts).
//! Paths are relative to the metadata file unless absolute; empty chunk
//! files are allowed. Every edge chunk's count is checked against
//! `num_edges_per_chunk`, and the node-data chunks against the node count.
//! `parquet` chunks are refused with a message (no parquet reader in this
//! build); `edge_data` is ignored. A `node_data` key of original ids
//! (`orig_id`, as `ginex-export dgl` writes it) is kept as the store's
//! original ids, and `num_classes` overrides the largest label + 1, so an
//! export re-imports to the identical store.
//!
//! The files: `shared.rs` (the options, the metadata document's reader and
//! the checks both graph kinds use), `homogeneous.rs` (one node type) and
//! `typed.rs` (several node types: a typed store).

mod homogeneous;
mod shared;
mod typed;

use std::path::Path;

use serde_json::Value;

use crate::error::Result;
use crate::import::pipeline::{bad, ImportReport};
use shared::{read_metadata, Meta};
pub use shared::{DglImport, MAX_METADATA};

/// Imports a DGL chunked graph; see the module docs.
pub fn import_dgl(opts: &DglImport) -> Result<ImportReport> {
    let path = opts.metadata.as_path();
    let text = read_metadata(path)?;
    let root: Value = serde_json::from_str(&text)
        .map_err(|e| bad(path, Some(e.line() as u64), format!("not valid JSON: {e}")))?;
    let meta = Meta {
        path,
        dir: path.parent().map(Path::to_path_buf).unwrap_or_default(),
    };
    let get = |k: &str| root.get(k).ok_or_else(|| meta.err(k, "missing key"));

    let node_types = meta.str_list(get("node_type")?, "node_type")?;
    let [ntype] = node_types.as_slice() else {
        return typed::import_typed(opts, &root, &meta);
    };
    homogeneous::import_homogeneous(opts, &root, &meta, ntype)
}
