//! The schema of a typed (heterogeneous) store: node types as contiguous
//! global id ranges, and relations between them. Spec: `format/schema.md`.
//!
//! A store without a `schema` file is a one-type graph. With one, node
//! type `t` owns the global ids `offset..offset + count`, in the order the
//! types are listed; a relation `src:name:dst` holds every edge from a
//! `src` node to a `dst` node (one relation per ordered type pair, so an
//! edge's relation follows from its endpoints' types). Feature rows exist
//! for the types with features only: the feature matrix holds the rows of
//! the featured types, back to back in type order, each type in its own
//! dimension and dtype (`format/features.md`, "Sections").

use std::path::Path;

use crate::error::{Error, Result};
use crate::format::bytes::{le_u32, le_u64};
use crate::format::pages::{Dtype, FeatureLayout};
use crate::format::version::{Version, V1_3, V1_5};

/// Offset of the node type count (`u32`) in the payload.
pub const NUM_TYPES_OFFSET: usize = 0;
/// Offset of the relation count (`u32`).
pub const NUM_RELATIONS_OFFSET: usize = NUM_TYPES_OFFSET + 4;
/// Offset of the first node type entry.
pub const TYPE_ENTRIES_OFFSET: usize = NUM_RELATIONS_OFFSET + 4;
/// Bytes of a node type entry before its name in a 1.3 schema: offset
/// `u64`, count `u64`, dim `u32`, name length `u8`.
pub const TYPE_ENTRY_HEAD: usize = 8 + 8 + 4 + 1;
/// The same in a 1.5 schema, which adds the type's dtype (`u8`) after
/// `dim`.
pub const TYPE_ENTRY_HEAD_V1_5: usize = TYPE_ENTRY_HEAD + 1;
/// Bytes of a relation entry before its name: src `u32`, dst `u32`, edges
/// `u64`, name length `u8`.
pub const RELATION_ENTRY_HEAD: usize = 4 + 4 + 8 + 1;
/// Most node types or relations a schema holds.
pub const MAX_TYPES: usize = 1 << 16;

/// One node type.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct NodeType {
    /// The type's name (`paper`).
    pub name: String,
    /// First global id of the type.
    pub offset: u64,
    /// Number of nodes of the type.
    pub count: u64,
    /// Feature dimension, or 0 for a featureless type.
    pub dim: u32,
    /// Element type of the features; `None` for a featureless type. (A
    /// 1.3 schema has no dtype: its featured types have the manifest's.)
    pub dtype: Option<Dtype>,
}

impl NodeType {
    /// The type's global id range.
    pub fn ids(&self) -> std::ops::Range<u64> {
        self.offset..self.offset + self.count
    }

    /// Whether the type has feature rows.
    pub fn has_features(&self) -> bool {
        self.dim > 0
    }

    /// The layout of the type's feature rows on disk (None: featureless).
    pub fn layout(&self) -> Option<FeatureLayout> {
        match (self.dim, self.dtype) {
            (0, _) | (_, None) => None,
            (dim, Some(dtype)) => Some(FeatureLayout { dim, dtype }),
        }
    }
}

/// One relation `src:name:dst`.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Relation {
    /// Index of the source node type.
    pub src: u32,
    /// The relation's name (`writes`).
    pub name: String,
    /// Index of the destination node type.
    pub dst: u32,
    /// Number of edges of the relation.
    pub num_edges: u64,
}

/// The decoded schema.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Schema {
    /// Node types in id order.
    pub node_types: Vec<NodeType>,
    /// Relations.
    pub relations: Vec<Relation>,
}

impl Schema {
    /// The index of the type that owns global id `v` (types partition
    /// `0..num_nodes`; `v` past the end gives the last type).
    pub fn type_of(&self, v: u64) -> usize {
        self.node_types
            .partition_point(|t| t.offset + t.count <= v)
            .min(self.node_types.len().saturating_sub(1))
    }

    /// The type named `name`.
    pub fn type_index(&self, name: &str) -> Option<usize> {
        self.node_types.iter().position(|t| t.name == name)
    }

    /// The relation from type `src` to type `dst`, if any.
    pub fn relation_between(&self, src: usize, dst: usize) -> Option<usize> {
        self.relations
            .iter()
            .position(|r| r.src as usize == src && r.dst as usize == dst)
    }

    /// The canonical name `src:rel:dst` of relation `r`.
    pub fn canonical(&self, r: &Relation) -> String {
        let name = |i: u32| {
            self.node_types
                .get(i as usize)
                .map_or("?", |t| t.name.as_str())
        };
        format!("{}:{}:{}", name(r.src), r.name, name(r.dst))
    }

    /// The feature row of global id `v`: rows hold the featured types back
    /// to back in type order. None for a node of a featureless type.
    pub fn feature_row(&self, v: u64) -> Option<u64> {
        let t = self.type_of(v);
        let ty = self.node_types.get(t)?;
        if !ty.has_features() || !ty.ids().contains(&v) {
            return None;
        }
        Some(self.feature_row_base(t) + (v - ty.offset))
    }

    /// The first feature row of type `t` (the rows of the featured types
    /// listed before it).
    pub fn feature_row_base(&self, t: usize) -> u64 {
        self.node_types
            .iter()
            .take(t)
            .filter(|ty| ty.has_features())
            .map(|ty| ty.count)
            .sum()
    }

    /// Rows in the feature matrix: the nodes of the featured types.
    pub fn feature_rows(&self) -> u64 {
        self.node_types
            .iter()
            .filter(|t| t.has_features())
            .map(|t| t.count)
            .sum()
    }

    /// Whether feature rows are the global ids (every type has features).
    pub fn rows_are_ids(&self) -> bool {
        self.node_types.iter().all(NodeType::has_features)
    }

    /// The row format of a store with these types (the manifest's `dim`
    /// and dtype, in which readers return every row): the widest featured
    /// dimension, and the featured types' dtype when they share one, else
    /// `f32` (which holds f16 and bf16 values exactly). None when no type
    /// has features.
    pub fn row_format(&self) -> Option<FeatureLayout> {
        let featured = || self.node_types.iter().filter_map(NodeType::layout);
        let dim = featured().map(|l| l.dim).max()?;
        let first = featured().next()?.dtype;
        let dtype = if featured().all(|l| l.dtype == first) {
            first
        } else {
            Dtype::F32
        };
        Some(FeatureLayout { dim, dtype })
    }

    /// Whether every featured type has the same layout (then that layout
    /// is the row format and the schema is written as 1.3, as before
    /// per-type layouts existed).
    pub fn is_uniform(&self) -> bool {
        let mut layouts = self.node_types.iter().filter_map(NodeType::layout);
        let first = layouts.next();
        layouts.all(|l| Some(l) == first)
    }

    /// The version the schema is written with: 1.3 when
    /// [uniform](Self::is_uniform) (byte for byte as before), else 1.5,
    /// whose node type entries carry a dtype.
    pub fn written_version(&self) -> Version {
        if self.is_uniform() {
            V1_3
        } else {
            V1_5
        }
    }

    /// Encodes the payload in the layout of its
    /// [`written_version`](Self::written_version).
    pub fn encode(&self) -> Vec<u8> {
        let with_dtype = self.written_version() >= V1_5;
        let mut b = Vec::new();
        b.extend_from_slice(&(self.node_types.len() as u32).to_le_bytes());
        b.extend_from_slice(&(self.relations.len() as u32).to_le_bytes());
        for t in &self.node_types {
            b.extend_from_slice(&t.offset.to_le_bytes());
            b.extend_from_slice(&t.count.to_le_bytes());
            b.extend_from_slice(&t.dim.to_le_bytes());
            if with_dtype {
                b.push(t.dtype.map_or(0, |d| d as u8));
            }
            b.push(t.name.len() as u8);
            b.extend_from_slice(t.name.as_bytes());
        }
        for r in &self.relations {
            b.extend_from_slice(&r.src.to_le_bytes());
            b.extend_from_slice(&r.dst.to_le_bytes());
            b.extend_from_slice(&r.num_edges.to_le_bytes());
            b.push(r.name.len() as u8);
            b.extend_from_slice(r.name.as_bytes());
        }
        b
    }

    /// Checks a schema against the store it describes: `num_nodes` nodes,
    /// `num_edges` edges, the manifest's row format `row`. The same rules
    /// as [`decode`](Self::decode) (which calls it), for writers.
    pub fn validate(&self, num_nodes: u64, num_edges: u64, row: FeatureLayout) -> Result<()> {
        SchemaRules {
            num_nodes,
            num_edges,
            row,
            version: self.written_version(),
        }
        .check(self)
        .map_err(|(_, reason)| Error::invalid_argument(format!("invalid schema: {reason}")))
    }

    /// Decodes and validates a payload of version `version` of a store
    /// with `num_nodes` nodes, `num_edges` edges and the manifest's row
    /// format `row`. `path` is for errors; every refusal names its payload
    /// offset.
    pub fn decode(
        p: &[u8],
        path: &Path,
        store: (u64, u64, FeatureLayout),
        version: Version,
    ) -> Result<Schema> {
        let (num_nodes, num_edges, row) = store;
        let mut r = Reader { p, at: 0 };
        let parsed = (|| -> std::result::Result<Schema, (usize, String)> {
            let num_types = r.u32("the node type count")? as usize;
            let num_relations = r.u32("the relation count")? as usize;
            let mut node_types = Vec::new();
            for i in 0..num_types.min(MAX_TYPES + 1) {
                let what = format!("node type {i}");
                let offset = r.u64(&what)?;
                let count = r.u64(&what)?;
                let dim = r.u32(&what)?;
                let dtype = if version >= V1_5 {
                    let at = r.at;
                    let code = r.take(1, &what)?.first().copied().unwrap_or(0);
                    match (code, Dtype::from_u8(code)) {
                        (0, _) => None,
                        (_, Some(d)) => Some(d),
                        (_, None) => {
                            return Err((at, format!("{what}: unknown dtype code {code}")))
                        }
                    }
                } else {
                    (dim > 0).then_some(row.dtype)
                };
                let name = r.name(&what)?;
                node_types.push(NodeType {
                    name,
                    offset,
                    count,
                    dim,
                    dtype,
                });
            }
            let mut relations = Vec::new();
            for i in 0..num_relations.min(MAX_TYPES + 1) {
                let src = r.u32(&format!("relation {i}"))?;
                let dst = r.u32(&format!("relation {i}"))?;
                let num_edges = r.u64(&format!("relation {i}"))?;
                let name = r.name(&format!("relation {i}"))?;
                relations.push(Relation {
                    src,
                    name,
                    dst,
                    num_edges,
                });
            }
            if r.at != p.len() {
                return Err((
                    r.at,
                    format!("{} bytes follow the last relation", p.len() - r.at),
                ));
            }
            let schema = Schema {
                node_types,
                relations,
            };
            SchemaRules {
                num_nodes,
                num_edges,
                row,
                version,
            }
            .check(&schema)?;
            Ok(schema)
        })();
        parsed.map_err(|(at, reason)| Error::corrupt(path, at as u64, reason))
    }
}

struct Reader<'a> {
    p: &'a [u8],
    at: usize,
}

impl Reader<'_> {
    fn take(&mut self, n: usize, what: &str) -> std::result::Result<&[u8], (usize, String)> {
        let at = self.at;
        let bytes = self
            .p
            .get(at..at + n)
            .ok_or_else(|| (at, format!("{what} is truncated")))?;
        self.at += n;
        Ok(bytes)
    }

    fn u32(&mut self, what: &str) -> std::result::Result<u32, (usize, String)> {
        Ok(le_u32(self.take(4, what)?, 0))
    }

    fn u64(&mut self, what: &str) -> std::result::Result<u64, (usize, String)> {
        Ok(le_u64(self.take(8, what)?, 0))
    }

    fn name(&mut self, what: &str) -> std::result::Result<String, (usize, String)> {
        let len = self.take(1, what)?.first().copied().unwrap_or(0) as usize;
        let at = self.at;
        let bytes = self.take(len, what)?;
        String::from_utf8(bytes.to_vec()).map_err(|_| (at, format!("{what}: name is not UTF-8")))
    }
}

/// The rules a schema obeys against its store (format/schema.md,
/// "Reader algorithm"). Errors carry a payload offset for the decoder.
struct SchemaRules {
    num_nodes: u64,
    num_edges: u64,
    row: FeatureLayout,
    version: Version,
}

impl SchemaRules {
    fn check(&self, s: &Schema) -> std::result::Result<(), (usize, String)> {
        let at = |i: usize| self.type_entry_offset(s, i);
        if s.node_types.is_empty() || s.node_types.len() > MAX_TYPES {
            return Err((
                NUM_TYPES_OFFSET,
                format!("{} node types (1..={MAX_TYPES})", s.node_types.len()),
            ));
        }
        if s.relations.len() > MAX_TYPES {
            return Err((
                NUM_RELATIONS_OFFSET,
                format!("{} relations (at most {MAX_TYPES})", s.relations.len()),
            ));
        }
        let mut next = 0u64;
        for (i, t) in s.node_types.iter().enumerate() {
            check_name(&t.name).map_err(|r| (at(i), format!("node type {i}: {r}")))?;
            if s.node_types.iter().take(i).any(|o| o.name == t.name) {
                return Err((
                    at(i),
                    format!("node type {i}: name {:?} is used twice", t.name),
                ));
            }
            if t.offset != next {
                return Err((
                    at(i),
                    format!(
                        "node type {i} ({}) starts at id {} but the types before it end at {next}",
                        t.name, t.offset
                    ),
                ));
            }
            next = t.offset.checked_add(t.count).ok_or_else(|| {
                (
                    at(i),
                    format!("node type {i} ({}): id range overflows", t.name),
                )
            })?;
            if self.version < V1_5 && t.dim != 0 && t.dim != self.row.dim {
                return Err((
                    at(i),
                    format!(
                        "node type {i} ({}): feature dimension {} is neither 0 (featureless) nor the store's {}",
                        t.name, t.dim, self.row.dim
                    ),
                ));
            }
            if t.has_features() != t.dtype.is_some() {
                return Err((
                    at(i),
                    format!(
                        "node type {i} ({}): feature dimension {} with dtype code {}; a featured type needs a dtype and a featureless one has none (0)",
                        t.name,
                        t.dim,
                        t.dtype.map_or(0, |d| d as u8)
                    ),
                ));
            }
        }
        if next != self.num_nodes {
            return Err((
                NUM_TYPES_OFFSET,
                format!(
                    "node types cover {next} ids but the store has {} nodes",
                    self.num_nodes
                ),
            ));
        }
        if let Some(want) = s.row_format().filter(|w| *w != self.row) {
            return Err((
                NUM_TYPES_OFFSET,
                format!(
                    "the featured types' row format is {} x {} (the widest dimension; their one dtype, else f32) but the manifest's is {} x {}",
                    want.dim,
                    want.dtype.name(),
                    self.row.dim,
                    self.row.dtype.name()
                ),
            ));
        }
        let mut edges = 0u64;
        for (i, r) in s.relations.iter().enumerate() {
            let at = self.relation_entry_offset(s, i);
            check_name(&r.name).map_err(|e| (at, format!("relation {i}: {e}")))?;
            for (end, t) in [("source", r.src), ("destination", r.dst)] {
                if t as usize >= s.node_types.len() {
                    return Err((
                        at,
                        format!(
                            "relation {i} ({}): {end} type {t} does not exist ({} node types)",
                            r.name,
                            s.node_types.len()
                        ),
                    ));
                }
            }
            if let Some((j, other)) = s
                .relations
                .iter()
                .enumerate()
                .take(i)
                .find(|(_, o)| o.src == r.src && o.dst == r.dst)
            {
                return Err((
                    at,
                    format!(
                        "relations {j} ({}) and {i} ({}) join the same node types; a store holds one relation per ordered type pair",
                        s.canonical(other),
                        s.canonical(r)
                    ),
                ));
            }
            edges = edges.saturating_add(r.num_edges);
        }
        if edges != self.num_edges {
            return Err((
                NUM_RELATIONS_OFFSET,
                format!(
                    "relations hold {edges} edges but the store has {}",
                    self.num_edges
                ),
            ));
        }
        Ok(())
    }

    fn type_entry_offset(&self, s: &Schema, i: usize) -> usize {
        let head = if self.version >= V1_5 {
            TYPE_ENTRY_HEAD_V1_5
        } else {
            TYPE_ENTRY_HEAD
        };
        TYPE_ENTRIES_OFFSET
            + s.node_types
                .iter()
                .take(i)
                .map(|t| head + t.name.len())
                .sum::<usize>()
    }

    fn relation_entry_offset(&self, s: &Schema, i: usize) -> usize {
        self.type_entry_offset(s, s.node_types.len())
            + s.relations
                .iter()
                .take(i)
                .map(|r| RELATION_ENTRY_HEAD + r.name.len())
                .sum::<usize>()
    }
}

/// A type or relation name: 1..=255 bytes of UTF-8 without `:` (the
/// separator of canonical relation names) or control characters.
pub fn check_name(name: &str) -> std::result::Result<(), String> {
    if name.is_empty() || name.len() > 255 {
        return Err(format!("name {name:?} must be 1 to 255 bytes"));
    }
    if name.contains(':') || name.chars().any(char::is_control) {
        return Err(format!("name {name:?} contains ':' or a control character"));
    }
    Ok(())
}

/// A schema from `(name, offset, count, dim)` types and `(src, name, dst,
/// edges)` relations, for tests.
#[cfg(test)]
pub(crate) fn test_schema(
    types: &[(&str, u64, u64, u32)],
    relations: &[(u32, &str, u32, u64)],
) -> Schema {
    Schema {
        node_types: types
            .iter()
            .map(|&(name, offset, count, dim)| NodeType {
                name: name.into(),
                offset,
                count,
                dim,
                dtype: (dim > 0).then_some(Dtype::F32),
            })
            .collect(),
        relations: relations
            .iter()
            .map(|&(src, name, dst, num_edges)| Relation {
                src,
                name: name.into(),
                dst,
                num_edges,
            })
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f32_rows(dim: u32) -> FeatureLayout {
        FeatureLayout {
            dim,
            dtype: Dtype::F32,
        }
    }

    fn mag() -> Schema {
        test_schema(
            &[
                ("author", 0, 4, 0),
                ("paper", 4, 6, 8),
                ("institution", 10, 2, 0),
            ],
            &[
                (0, "writes", 1, 7),
                (0, "affiliated_with", 2, 3),
                (1, "cites", 1, 5),
            ],
        )
    }

    /// The worked example of format/schema.md, byte for byte.
    #[test]
    fn worked_example_matches_the_spec() {
        let mut s = mag();
        s.node_types = vec![
            NodeType {
                name: "author".into(),
                offset: 0,
                count: 4,
                dim: 0,
                dtype: None,
            },
            NodeType {
                name: "paper".into(),
                offset: 4,
                count: 5,
                dim: 3,
                dtype: Some(Dtype::F32),
            },
            NodeType {
                name: "institution".into(),
                offset: 9,
                count: 2,
                dim: 0,
                dtype: None,
            },
        ];
        s.relations[0].num_edges = 6;
        s.relations[2].num_edges = 4;
        let p = s.encode();
        assert_eq!(p.len(), 170);
        let entry = |file_offset: usize| file_offset - 64;
        assert_eq!(p[entry(0x48)..entry(0x48) + 8], 0u64.to_le_bytes());
        assert_eq!(
            &p[entry(0x7d) + TYPE_ENTRY_HEAD..entry(0x9d)],
            b"institution"
        );
        assert_eq!(p[entry(0x9d)..entry(0x9d) + 4], 0u32.to_le_bytes());
        assert_eq!(
            &p[entry(0xb4) + RELATION_ENTRY_HEAD..entry(0xd4)],
            b"affiliated_with"
        );
        assert_eq!(&p[entry(0xd4) + RELATION_ENTRY_HEAD..], b"cites");
        assert_eq!(
            (NUM_TYPES_OFFSET, NUM_RELATIONS_OFFSET, TYPE_ENTRIES_OFFSET),
            (0, 4, 8)
        );
        assert_eq!(
            Schema::decode(&p, Path::new("schema"), (11, 13, f32_rows(3)), V1_3).unwrap(),
            s
        );
    }

    #[test]
    fn round_trip_and_lookups() {
        let s = mag();
        let p = s.encode();
        assert_eq!(
            Schema::decode(&p, Path::new("schema"), (12, 15, f32_rows(8)), V1_3).unwrap(),
            s
        );
        assert_eq!(
            [s.type_of(0), s.type_of(3), s.type_of(4), s.type_of(11)],
            [0, 0, 1, 2]
        );
        assert_eq!(s.feature_row(3), None);
        assert_eq!(s.feature_row(4), Some(0));
        assert_eq!(s.feature_row(9), Some(5));
        assert_eq!(s.feature_row(10), None);
        assert_eq!(s.feature_rows(), 6);
        assert_eq!(s.relation_between(1, 1), Some(2));
        assert_eq!(s.relation_between(1, 0), None);
        assert_eq!(
            s.canonical(&s.relations[1]),
            "author:affiliated_with:institution"
        );
    }

    fn refusal(s: &Schema, n: u64, e: u64) -> String {
        Schema::decode(&s.encode(), Path::new("schema"), (n, e, f32_rows(8)), V1_3)
            .unwrap_err()
            .to_string()
    }

    #[test]
    fn inconsistent_schemas_are_refused_at_their_offset() {
        let mut s = mag();
        assert!(refusal(&s, 13, 15).contains("cover 12 ids but the store has 13"));
        assert!(refusal(&s, 12, 16).contains("hold 15 edges but the store has 16"));
        s.node_types[1].offset = 5;
        let m = refusal(&s, 12, 15);
        assert!(m.contains("node type 1 (paper) starts at id 5"), "{m}");
        assert!(m.contains("offset 35"), "{m}");
        let mut s = mag();
        s.relations[2].dst = 7;
        assert!(refusal(&s, 12, 15).contains("destination type 7 does not exist"));
        let mut s = mag();
        s.relations[2].src = 0;
        s.relations[2].dst = 1;
        assert!(refusal(&s, 12, 15).contains("join the same node types"));
        let mut s = mag();
        s.node_types[2].name = "author".into();
        assert!(refusal(&s, 12, 15).contains("is used twice"));
        let mut s = mag();
        s.node_types[1].dim = 3;
        assert!(refusal(&s, 12, 15).contains("neither 0 (featureless) nor the store's 8"));
        let mut s = mag();
        s.relations[0].name = "a:b".into();
        assert!(refusal(&s, 12, 15).contains("contains ':'"));
    }

    #[test]
    fn truncated_and_padded_payloads_are_refused() {
        let p = mag().encode();
        for cut in [0, 3, 7, 20, p.len() - 1] {
            let e = Schema::decode(&p[..cut], Path::new("schema"), (12, 15, f32_rows(8)), V1_3)
                .unwrap_err();
            assert!(e.to_string().contains("truncated"), "{cut}: {e}");
        }
        let mut long = p.clone();
        long.push(0);
        let e =
            Schema::decode(&long, Path::new("schema"), (12, 15, f32_rows(8)), V1_3).unwrap_err();
        assert!(
            e.to_string().contains("1 bytes follow the last relation"),
            "{e}"
        );
    }
}
