//! The build of a typed (heterogeneous) store, shared by the importers
//! that make one (`dgl/typed.rs`, `ogb/hetero.rs`): the relations a
//! store holds ([`relations`]: declared ones, and with `--undirected` the
//! reverse of each that joins two types), the node types' id ranges and
//! their one feature dimension ([`node_types`]), and the build itself
//! ([`build_typed`]: topology from type-local edge inputs, feature rows of
//! the featured types alongside it). Each importer reads its own layout
//! and adds its own tables (labels, splits, original ids) to the returned
//! [`Build`]. Errors go through the caller's `err`, which names the
//! caller's file and position.

use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::format::pages::Dtype;
use crate::format::schema::{NodeType, Relation, Schema};

use super::edge_input::typed_id;
use super::{read_ids_by, Build, CommonOptions, EdgeEnds, EdgeInput, FeatureSink};

/// A declared relation `src:rel:dst` (indices into the node types).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Declared {
    /// Source node type.
    pub src: usize,
    /// Relation name.
    pub rel: String,
    /// Destination node type.
    pub dst: usize,
}

/// The relations of the store: the `declared` ones in order, then with
/// `undirected` the reverse `dst:rev_<rel>:src` of each that joins two
/// different types (a relation within one type is symmetrised in place).
/// A second relation for an ordered type pair is refused through
/// `err(index of the declared relation, reason)`.
pub fn relations(
    type_names: &[String],
    declared: &[Declared],
    undirected: bool,
    err: &dyn Fn(usize, String) -> Error,
) -> Result<Vec<Relation>> {
    let name = |t: u32| type_names.get(t as usize).map_or("?", String::as_str);
    let mut out: Vec<Relation> = Vec::new();
    let mut push = |r: Relation, i: usize, what: &str| -> Result<()> {
        if let Some(other) = out.iter().find(|o| o.src == r.src && o.dst == r.dst) {
            return Err(err(
                i,
                format!(
                    "{what} {}:{}:{} joins {} to {} like the relation {:?} does; a ginex store holds one relation per ordered pair of node types (format/schema.md): merge them, or give one its own node type",
                    name(r.src),
                    r.name,
                    name(r.dst),
                    name(r.src),
                    name(r.dst),
                    other.name
                ),
            ));
        }
        out.push(r);
        Ok(())
    };
    for (i, d) in declared.iter().enumerate() {
        let r = Relation {
            src: d.src as u32,
            name: d.rel.clone(),
            dst: d.dst as u32,
            num_edges: 0,
        };
        push(r, i, "edge type")?;
    }
    if undirected {
        for (i, d) in declared.iter().enumerate() {
            if d.src != d.dst {
                let r = Relation {
                    src: d.dst as u32,
                    name: format!("rev_{}", d.rel),
                    dst: d.src as u32,
                    num_edges: 0,
                };
                push(r, i, "the reverse edges (--undirected) add the relation")?;
            }
        }
    }
    Ok(out)
}

/// A node type as an importer found it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TypeDecl {
    /// The type's name.
    pub name: String,
    /// Its node count.
    pub count: u64,
    /// Its feature dimension, `None` when it has no features.
    pub dim: Option<u64>,
    /// The dtype its features are stored in (`CommonOptions::dtype_of`).
    pub dtype: Dtype,
}

/// The schema's node types: contiguous id ranges in the order given, each
/// featured one in its own dimension and dtype (format/features.md,
/// "Sections"). A dimension past `u32` or an id range past 2^64 is
/// refused through `err(type index, reason)`.
pub fn node_types(
    types: &[TypeDecl],
    err: &dyn Fn(usize, String) -> Error,
) -> Result<Vec<NodeType>> {
    let mut out = Vec::with_capacity(types.len());
    let mut offset = 0u64;
    for (i, t) in types.iter().enumerate() {
        let dim = match t.dim {
            Some(d) => u32::try_from(d)
                .ok()
                .filter(|d| *d > 0)
                .ok_or_else(|| err(i, format!("feature dimension {d} is not in 1..2^32")))?,
            None => 0,
        };
        out.push(NodeType {
            name: t.name.clone(),
            offset,
            count: t.count,
            dim,
            dtype: t.dim.map(|_| t.dtype),
        });
        offset = offset
            .checked_add(t.count)
            .ok_or_else(|| err(i, "node counts overflow 64 bits".into()))?;
    }
    Ok(out)
}

/// The endpoints of edges of `src` to `dst` (type indices of `schema`), for
/// [`Build::typed_topology`].
pub fn edge_ends(schema: &Schema, src: usize, dst: usize) -> EdgeEnds {
    let ty = |i: usize| {
        schema.node_types.get(i).map_or((String::new(), 0, 0), |t| {
            (t.name.clone(), t.offset, t.count)
        })
    };
    EdgeEnds {
        src: ty(src),
        dst: ty(dst),
    }
}

/// The edges of a typed build: input `i` joins the types `ends[i]` with
/// type-local ids; `expected` (the edges declared, 0 when unknown) sizes
/// the buckets; `check` gets the edges read per input.
pub struct TypedEdges<'a> {
    /// The edge files.
    pub inputs: &'a [EdgeInput],
    /// The types each input joins.
    pub ends: &'a [EdgeEnds],
    /// The edges declared in all.
    pub expected: u64,
    /// Checks the edges read per input against what the layout declares.
    pub check: &'a dyn Fn(&[u64]) -> Result<()>,
}

/// Pushes feature rows into the sink (on the feature thread).
pub type FeatureFeed<'a> = Box<dyn FnOnce(&mut FeatureSink) -> Result<()> + Send + 'a>;

/// The feature rows of the featured types: `feed` pushes them back to back
/// in type order; `source` names them in errors.
pub struct TypedFeatures<'a> {
    /// The first feature file (names the features in errors).
    pub source: PathBuf,
    /// Pushes every featured type's rows, in type order.
    pub feed: FeatureFeed<'a>,
}

/// Starts the typed store `schema` at `common.out` and writes its topology
/// and features (alongside each other; when no type has features the
/// store has dimension 1 and no feature rows). `dim_source` names the
/// schema's source in errors. The caller adds labels, splits and original ids, then
/// calls [`Build::finish`].
pub fn build_typed(
    common: &CommonOptions,
    schema: Schema,
    dim_source: &Path,
    edges: TypedEdges<'_>,
    features: Option<TypedFeatures<'_>>,
) -> Result<Build> {
    if let Some((name, _)) = common
        .type_dtypes
        .iter()
        .find(|(name, _)| schema.type_index(name).is_none())
    {
        let known: Vec<&str> = schema.node_types.iter().map(|t| t.name.as_str()).collect();
        return Err(Error::invalid_argument(format!(
            "--dtype names node type {name:?}, which {} does not have (its types: {known:?})",
            dim_source.display()
        )));
    }
    let n = schema.node_types.last().map_or(0, |t| t.offset + t.count);
    // The store's row format: the widest type and a dtype every type's
    // values fit exactly (format/features.md, "Sections").
    let (dim, dtype) = schema
        .row_format()
        .map_or((1, common.dtype), |r| (u64::from(r.dim), r.dtype));
    let common = CommonOptions {
        dtype,
        type_dtypes: Vec::new(),
        ..common.clone()
    };
    let mut build = Build::create(&common, n, dim, dim_source, edges.expected, None)?;
    build.set_schema(schema);
    let topology = |b: &mut Build| -> Result<()> {
        let got = b.typed_topology(edges.inputs, edges.ends, edges.expected)?;
        (edges.check)(&got)
    };
    match features {
        Some(f) => build.overlapped(&f.source, f.feed, topology)?,
        None => {
            topology(&mut build)?;
            build.zero_features()?;
        }
    }
    Ok(build)
}

/// The ids of an id file (one per line, or `.npy`) that are type-local
/// ids of type `ty` (name, first global id, count), checked against the
/// type's range and made global; sorted, repeats refused.
pub fn read_type_ids(path: &Path, ty: &(String, u64, u64)) -> Result<Vec<u64>> {
    read_ids_by(path, &|v, at| typed_id(v, ty, path, at, "id"))
}

/// Each node's id within its type (`0..count` per type, in type order):
/// the original ids of a typed store whose input numbers each type apart.
pub fn type_local_ids(schema: &Schema) -> Vec<u64> {
    schema.node_types.iter().flat_map(|t| 0..t.count).collect()
}
