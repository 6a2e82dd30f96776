//! The typed schema of a DGL chunked graph (issue #31, step 1 of the
//! heterogeneous import): node types as contiguous global id ranges, one
//! canonical edge type `src:rel:dst` per relation, chunk counts checked
//! against each other, and `node_data` / `edge_data` keys checked against
//! the declared types. Pure validation of `metadata.json`; no data file is
//! read here (the homogeneous importer in [`crate::import::dgl`] is
//! unchanged and does not use this module yet).
//!
//! Every refusal names the metadata file and the field
//! (`edge_type[1]`, `num_edges_per_chunk[0]`, `node_data.venue`, ...).

use std::collections::HashMap;
use std::path::Path;

use serde_json::{Map, Value};

use crate::error::{Error, Result};
use crate::import::pipeline::bad;

/// A node type: its name, chunk sizes and global id range.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeTypeSpec {
    /// The type's name (`paper`).
    pub name: String,
    /// Nodes per chunk, in chunk order.
    pub chunk_sizes: Vec<u64>,
    /// First global id of the type: types occupy contiguous ranges in the
    /// order `node_type` lists them.
    pub offset: u64,
    /// Number of nodes of the type.
    pub count: u64,
}

/// A canonical edge type `src:rel:dst`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EdgeTypeSpec {
    /// Index of the source node type in [`TypedSchema::node_types`].
    pub src: usize,
    /// The relation name (`writes`).
    pub rel: String,
    /// Index of the destination node type.
    pub dst: usize,
    /// Edges per chunk, in chunk order.
    pub chunk_sizes: Vec<u64>,
    /// Number of edges of the type.
    pub count: u64,
}

/// The validated schema of a chunked graph.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TypedSchema {
    /// Node types in `node_type` order.
    pub node_types: Vec<NodeTypeSpec>,
    /// Edge types in `edge_type` order.
    pub edge_types: Vec<EdgeTypeSpec>,
    /// Number of chunks (the same for every type).
    pub num_chunks: usize,
    /// `node_data` keys per node type index, sorted.
    pub node_data: Vec<Vec<String>>,
}

impl TypedSchema {
    /// Total number of nodes over all types.
    pub fn num_nodes(&self) -> u64 {
        self.node_types.last().map_or(0, |t| t.offset + t.count)
    }

    /// The canonical name `src:rel:dst` of edge type `e`.
    pub fn canonical(&self, e: &EdgeTypeSpec) -> String {
        let name = |i: usize| self.node_types.get(i).map_or("?", |t| t.name.as_str());
        format!("{}:{}:{}", name(e.src), e.rel, name(e.dst))
    }
}

struct Ctx<'a> {
    path: &'a Path,
}

impl Ctx<'_> {
    fn err(&self, field: &str, reason: impl Into<String>) -> Error {
        bad(self.path, None, format!("{field}: {}", reason.into()))
    }

    fn names(&self, v: &Value, field: &str) -> Result<Vec<String>> {
        let list = v
            .as_array()
            .ok_or_else(|| self.err(field, "expected a list of names"))?;
        let mut out: Vec<String> = Vec::with_capacity(list.len());
        for (i, x) in list.iter().enumerate() {
            let s = x
                .as_str()
                .ok_or_else(|| self.err(&format!("{field}[{i}]"), "names must be strings"))?;
            if s.is_empty() {
                return Err(self.err(&format!("{field}[{i}]"), "empty name"));
            }
            if out.iter().any(|o| o == s) {
                return Err(self.err(&format!("{field}[{i}]"), format!("{s:?} is listed twice")));
            }
            out.push(s.to_string());
        }
        Ok(out)
    }

    /// One list of per-chunk counts per declared type, every list `chunks`
    /// long (the first list sets `chunks` when it is `None`).
    fn chunk_lists(
        &self,
        v: &Value,
        field: &str,
        types: &[String],
        chunks: &mut Option<usize>,
    ) -> Result<Vec<Vec<u64>>> {
        let lists = v
            .as_array()
            .ok_or_else(|| self.err(field, "expected one list of chunk sizes per type"))?;
        if lists.len() != types.len() {
            return Err(self.err(
                field,
                format!("{} lists for {} types", lists.len(), types.len()),
            ));
        }
        let mut out = Vec::with_capacity(lists.len());
        for (i, (list, ty)) in lists.iter().zip(types).enumerate() {
            let at = format!("{field}[{i}]");
            let sizes = list
                .as_array()
                .ok_or_else(|| self.err(&at, format!("expected a list of integers for {ty:?}")))?
                .iter()
                .map(|x| {
                    x.as_u64()
                        .ok_or_else(|| self.err(&at, format!("{x} is not a non-negative integer")))
                })
                .collect::<Result<Vec<u64>>>()?;
            match *chunks {
                None => *chunks = Some(sizes.len()),
                Some(n) if n != sizes.len() => {
                    return Err(self.err(
                        &at,
                        format!(
                            "{ty:?} has {} chunks but the other types have {n}; every type must be chunked alike",
                            sizes.len()
                        ),
                    ))
                }
                Some(_) => {}
            }
            out.push(sizes);
        }
        Ok(out)
    }

    fn sum(&self, sizes: &[u64], field: &str) -> Result<u64> {
        sizes
            .iter()
            .try_fold(0u64, |a, &b| a.checked_add(b))
            .ok_or_else(|| self.err(field, "counts overflow 64 bits"))
    }

    /// Checks a ChunkFileSpec's format and that it lists `chunks` files.
    fn file_spec(&self, spec: &Value, field: &str, chunks: usize) -> Result<()> {
        let name = spec
            .get("format")
            .and_then(|f| f.get("name"))
            .and_then(Value::as_str)
            .ok_or_else(|| self.err(field, "no \"format\" with a \"name\""))?;
        match name {
            "csv" | "numpy" => {}
            "parquet" => {
                return Err(self.err(
                    field,
                    "parquet chunks are not supported by this build; convert them to numpy (.npy) or csv",
                ))
            }
            other => {
                return Err(self.err(field, format!("unknown format {other:?} (csv, numpy or parquet)")))
            }
        }
        let data = spec
            .get("data")
            .and_then(Value::as_array)
            .ok_or_else(|| self.err(field, "no \"data\" list of files"))?;
        if data.len() != chunks {
            return Err(self.err(
                &format!("{field}.data"),
                format!("{} files but the graph has {chunks} chunks", data.len()),
            ));
        }
        Ok(())
    }

    fn object<'v>(&self, v: &'v Value, field: &str) -> Result<&'v Map<String, Value>> {
        v.as_object()
            .ok_or_else(|| self.err(field, "expected an object keyed by type"))
    }
}

/// Validates the typed schema of `metadata` (the parsed `metadata.json` at
/// `path`, used to name the file in errors).
pub fn parse_schema(path: &Path, metadata: &Value) -> Result<TypedSchema> {
    let cx = Ctx { path };
    let get = |k: &str| metadata.get(k).ok_or_else(|| cx.err(k, "missing"));

    let ntype_names = cx.names(get("node_type")?, "node_type")?;
    if ntype_names.is_empty() {
        return Err(cx.err("node_type", "no node types"));
    }
    for (i, n) in ntype_names.iter().enumerate() {
        if n.contains(':') {
            return Err(cx.err(&format!("node_type[{i}]"), format!("{n:?} contains ':'")));
        }
    }
    let mut chunks = None;
    let node_sizes = cx.chunk_lists(
        get("num_nodes_per_chunk")?,
        "num_nodes_per_chunk",
        &ntype_names,
        &mut chunks,
    )?;
    let mut node_types = Vec::with_capacity(ntype_names.len());
    let mut offset = 0u64;
    for (i, (name, sizes)) in ntype_names.iter().zip(node_sizes).enumerate() {
        let field = format!("num_nodes_per_chunk[{i}]");
        let count = cx.sum(&sizes, &field)?;
        node_types.push(NodeTypeSpec {
            name: name.clone(),
            chunk_sizes: sizes,
            offset,
            count,
        });
        offset = offset
            .checked_add(count)
            .ok_or_else(|| cx.err(&field, "node counts overflow 64 bits"))?;
    }
    let index: HashMap<&str, usize> = ntype_names
        .iter()
        .enumerate()
        .map(|(i, n)| (n.as_str(), i))
        .collect();

    let etype_names = cx.names(get("edge_type")?, "edge_type")?;
    let mut parsed = Vec::with_capacity(etype_names.len());
    for (i, canonical) in etype_names.iter().enumerate() {
        let field = format!("edge_type[{i}]");
        let parts: Vec<&str> = canonical.split(':').collect();
        let [src, rel, dst] = parts.as_slice() else {
            return Err(cx.err(
                &field,
                format!("{canonical:?} is not a canonical edge type src:rel:dst"),
            ));
        };
        if rel.is_empty() {
            return Err(cx.err(&field, format!("{canonical:?} has an empty relation name")));
        }
        let ty = |t: &str| {
            index.get(t).copied().ok_or_else(|| {
                cx.err(
                    &field,
                    format!(
                        "{canonical:?} names node type {t:?}, which node_type does not declare ({ntype_names:?})"
                    ),
                )
            })
        };
        parsed.push((ty(src)?, rel.to_string(), ty(dst)?));
    }
    let edge_sizes = cx.chunk_lists(
        get("num_edges_per_chunk")?,
        "num_edges_per_chunk",
        &etype_names,
        &mut chunks,
    )?;
    let num_chunks = chunks.unwrap_or(0);
    let mut edge_types = Vec::with_capacity(parsed.len());
    for (i, ((src, rel, dst), sizes)) in parsed.into_iter().zip(edge_sizes).enumerate() {
        let count = cx.sum(&sizes, &format!("num_edges_per_chunk[{i}]"))?;
        edge_types.push(EdgeTypeSpec {
            src,
            rel,
            dst,
            chunk_sizes: sizes,
            count,
        });
    }

    let edges = cx.object(get("edges")?, "edges")?;
    for key in edges.keys() {
        if !etype_names.contains(key) {
            return Err(cx.err(
                &format!("edges.{key}"),
                format!("{key:?} is not declared in edge_type ({etype_names:?})"),
            ));
        }
    }
    for name in &etype_names {
        let spec = edges
            .get(name)
            .ok_or_else(|| cx.err("edges", format!("no entry for edge type {name:?}")))?;
        cx.file_spec(spec, &format!("edges.{name}"), num_chunks)?;
    }

    let mut node_data = vec![Vec::new(); node_types.len()];
    if let Some(nd) = metadata.get("node_data") {
        for (ty, keys) in cx.object(nd, "node_data")? {
            let field = format!("node_data.{ty}");
            let &t = index.get(ty.as_str()).ok_or_else(|| {
                cx.err(
                    &field,
                    format!("data for node type {ty:?}, which node_type does not declare ({ntype_names:?})"),
                )
            })?;
            let mut names = Vec::new();
            for (key, spec) in cx.object(keys, &field)? {
                cx.file_spec(spec, &format!("{field}.{key}"), num_chunks)?;
                names.push(key.clone());
            }
            names.sort();
            if let Some(slot) = node_data.get_mut(t) {
                *slot = names;
            }
        }
    }

    if let Some(ed) = metadata.get("edge_data") {
        for (ty, keys) in cx.object(ed, "edge_data")? {
            let field = format!("edge_data.{ty}");
            if !etype_names.contains(ty) {
                return Err(cx.err(
                    &field,
                    format!("data for edge type {ty:?}, which edge_type does not declare"),
                ));
            }
            if let Some((key, _)) = cx.object(keys, &field)?.iter().next() {
                return Err(cx.err(
                    &format!("{field}.{key}"),
                    "edge features are not stored by ginex; remove edge_data (it is refused rather than silently dropped)",
                ));
            }
        }
    }

    Ok(TypedSchema {
        node_types,
        edge_types,
        num_chunks,
        node_data,
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The reference document's MAG240M metadata at small scale.
    fn mag() -> Value {
        json!({
            "graph_name": "MAG-small",
            "node_type": ["author", "paper", "institution"],
            "num_nodes_per_chunk": [[3, 2], [4, 4], [1, 1]],
            "edge_type": ["author:writes:paper", "author:affiliated_with:institution", "paper:cites:paper"],
            "num_edges_per_chunk": [[5, 5], [2, 1], [6, 0]],
            "edges": {
                "author:writes:paper": {"format": {"name": "csv", "delimiter": " "}, "data": ["w1.csv", "w2.csv"]},
                "author:affiliated_with:institution": {"format": {"name": "csv", "delimiter": " "}, "data": ["a1.csv", "a2.csv"]},
                "paper:cites:paper": {"format": {"name": "numpy"}, "data": ["c1.npy", "c2.npy"]}
            },
            "node_data": {
                "paper": {
                    "feat": {"format": {"name": "numpy"}, "data": ["f1.npy", "f2.npy"]},
                    "label": {"format": {"name": "numpy"}, "data": ["l1.npy", "l2.npy"]}
                }
            },
            "edge_data": {}
        })
    }

    fn refused(meta: &Value) -> String {
        let e = parse_schema(Path::new("/d/metadata.json"), meta).unwrap_err();
        let s = e.to_string();
        assert!(s.starts_with("/d/metadata.json"), "{s}");
        s
    }

    #[test]
    fn mag_like_schema_equals_hand_built() {
        let s = parse_schema(Path::new("m.json"), &mag()).unwrap();
        let nt = |name: &str, sizes: &[u64], offset, count| NodeTypeSpec {
            name: name.into(),
            chunk_sizes: sizes.to_vec(),
            offset,
            count,
        };
        let et = |src, rel: &str, dst, sizes: &[u64], count| EdgeTypeSpec {
            src,
            rel: rel.into(),
            dst,
            chunk_sizes: sizes.to_vec(),
            count,
        };
        let want = TypedSchema {
            node_types: vec![
                nt("author", &[3, 2], 0, 5),
                nt("paper", &[4, 4], 5, 8),
                nt("institution", &[1, 1], 13, 2),
            ],
            edge_types: vec![
                et(0, "writes", 1, &[5, 5], 10),
                et(0, "affiliated_with", 2, &[2, 1], 3),
                et(1, "cites", 1, &[6, 0], 6),
            ],
            num_chunks: 2,
            node_data: vec![vec![], vec!["feat".into(), "label".into()], vec![]],
        };
        assert_eq!(s, want);
        assert_eq!(s.num_nodes(), 15);
        assert_eq!(
            s.canonical(&s.edge_types[1]),
            "author:affiliated_with:institution"
        );
    }

    #[test]
    fn unknown_type_in_edge_type_is_refused() {
        let mut m = mag();
        m["edge_type"][2] = json!("paper:cites:venue");
        let s = refused(&m);
        assert!(s.contains("edge_type[2]") && s.contains("\"venue\""), "{s}");
        m["edge_type"][2] = json!("paper:cites");
        assert!(refused(&m).contains("src:rel:dst"));
    }

    #[test]
    fn disagreeing_chunk_counts_are_refused() {
        let mut m = mag();
        m["num_nodes_per_chunk"][2] = json!([2]);
        let s = refused(&m);
        assert!(
            s.contains("num_nodes_per_chunk[2]") && s.contains("\"institution\" has 1 chunks"),
            "{s}"
        );

        let mut m = mag();
        m["num_edges_per_chunk"][0] = json!([5, 5, 0]);
        assert!(refused(&m).contains("num_edges_per_chunk[0]"));

        let mut m = mag();
        m["num_edges_per_chunk"] = json!([[5, 5], [2, 1]]);
        assert!(refused(&m).contains("2 lists for 3 types"));

        let mut m = mag();
        m["edges"]["paper:cites:paper"]["data"] = json!(["c1.npy"]);
        let s = refused(&m);
        assert!(
            s.contains("edges.paper:cites:paper.data") && s.contains("1 files"),
            "{s}"
        );
    }

    #[test]
    fn data_for_undeclared_types_is_refused() {
        let mut m = mag();
        m["node_data"]["venue"] =
            json!({"feat": {"format": {"name": "numpy"}, "data": ["v1.npy", "v2.npy"]}});
        let s = refused(&m);
        assert!(
            s.contains("node_data.venue") && s.contains("does not declare"),
            "{s}"
        );

        let mut m = mag();
        m["edges"]["paper:cites:author"] = json!({"format": {"name": "csv"}, "data": ["x", "y"]});
        assert!(refused(&m).contains("edges.paper:cites:author"));

        let mut m = mag();
        m["edges"]
            .as_object_mut()
            .unwrap()
            .remove("paper:cites:paper");
        assert!(refused(&m).contains("no entry for edge type \"paper:cites:paper\""));
    }

    #[test]
    fn edge_data_and_parquet_are_refused_not_dropped() {
        let mut m = mag();
        m["edge_data"]["author:writes:paper"] =
            json!({"year": {"format": {"name": "numpy"}, "data": ["y1.npy", "y2.npy"]}});
        let s = refused(&m);
        assert!(
            s.contains("edge_data.author:writes:paper.year") && s.contains("refused"),
            "{s}"
        );

        let mut m = mag();
        m["node_data"]["paper"]["feat"]["format"]["name"] = json!("parquet");
        let s = refused(&m);
        assert!(
            s.contains("node_data.paper.feat") && s.contains("parquet"),
            "{s}"
        );
    }

    #[test]
    fn duplicate_and_malformed_names_are_refused() {
        let mut m = mag();
        m["node_type"][2] = json!("author");
        assert!(refused(&m).contains("listed twice"));
        let mut m = mag();
        m["node_type"][0] = json!("au:thor");
        assert!(refused(&m).contains("node_type[0]"));
        let mut m = mag();
        m["edge_type"][0] = json!("author::paper");
        assert!(refused(&m).contains("empty relation"));
    }
}
