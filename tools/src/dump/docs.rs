//! The serde types of `ginex-dump --json` (schema: `format/dump-json.md`):
//! each object of the documents as a struct, serialized through
//! [`crate::sorted_json`] so that keys print sorted.

use std::collections::BTreeMap;
use std::path::Path;

use serde::Serialize;
use serde_json::Value;

use ginex::internals::format::csc::Segment;
use ginex::internals::format::edge_splits::{EdgeSplit, EdgeSplits};
use ginex::internals::format::header::FileHeader;
use ginex::internals::format::manifest::Manifest;
use ginex::internals::format::runtime::RunStamp;
use ginex::internals::format::schema::Schema;
use ginex::internals::format::tables::Splits;
use ginex::internals::inspect::runfile::Record;

/// A store's summary.
#[derive(Serialize)]
pub(super) struct SummaryDoc<'a> {
    pub path: &'a Path,
    pub kind: &'static str,
    pub manifest: ManifestDoc<'a>,
    pub rows_per_page: usize,
    pub pages_per_row: u64,
    pub in_degree: DegreeDoc,
    pub splits: Option<SplitCounts>,
    pub edge_splits: Option<EdgeSplitCounts>,
    pub truncated: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub schema: Option<&'a Schema>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub original_ids: Option<Vec<u64>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub q8_error: Option<Q8ErrorDoc>,
}

/// The reconstruction error a q8 store recorded when it was encoded.
#[derive(Serialize)]
pub(super) struct Q8ErrorDoc {
    pub rows: u64,
    pub max_abs: f32,
    pub mean_abs: f32,
    pub low: f32,
    pub high: f32,
    pub max_rel: f64,
    pub mean_rel: f64,
}

impl Q8ErrorDoc {
    pub fn of(e: &ginex::internals::format::q8::Q8Error) -> Q8ErrorDoc {
        Q8ErrorDoc {
            rows: e.rows,
            max_abs: e.max_abs,
            mean_abs: e.mean_abs(),
            low: e.low,
            high: e.high,
            max_rel: e.relative(e.max_abs),
            mean_rel: e.relative(e.mean_abs()),
        }
    }
}

/// In-degree statistics.
#[derive(Serialize)]
pub(super) struct DegreeDoc {
    pub min: u64,
    pub mean: f64,
    pub p50: u64,
    pub p99: u64,
    pub max: u64,
}

/// Nodes per split.
#[derive(Serialize)]
pub(super) struct SplitCounts {
    pub train: usize,
    pub valid: usize,
    pub test: usize,
}

impl SplitCounts {
    pub fn of(s: &Splits) -> SplitCounts {
        SplitCounts {
            train: s.train.len(),
            valid: s.valid.len(),
            test: s.test.len(),
        }
    }
}

/// A manifest.
#[derive(Serialize)]
pub(super) struct ManifestDoc<'a> {
    pub num_nodes: u64,
    pub num_edges: u64,
    pub feature_dim: u32,
    pub dtype: &'static str,
    pub index_width: usize,
    pub num_classes: u32,
    pub files: Vec<ManifestFileDoc<'a>>,
}

impl<'a> ManifestDoc<'a> {
    pub fn of(m: &'a Manifest) -> ManifestDoc<'a> {
        ManifestDoc {
            num_nodes: m.num_nodes,
            num_edges: m.num_edges,
            feature_dim: m.layout.dim,
            dtype: m.layout.dtype.name(),
            index_width: m.index_width.bytes(),
            num_classes: m.num_classes,
            files: m
                .files
                .iter()
                .map(|f| ManifestFileDoc {
                    name: f.name(),
                    kind: f.kind.name(),
                    len: f.len,
                    payload_crc: f.payload_crc,
                })
                .collect(),
        }
    }
}

/// One file the manifest lists.
#[derive(Serialize)]
pub(super) struct ManifestFileDoc<'a> {
    pub name: &'a str,
    pub kind: &'static str,
    pub len: u64,
    pub payload_crc: u32,
}

/// Any single file: its header, whether its payload checks, and its
/// content under a key of its kind (`content`, one entry).
#[derive(Serialize)]
pub(super) struct FileDoc<'a> {
    pub path: &'a Path,
    pub header: HeaderDoc,
    pub payload_crc_ok: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub run: Option<RunDoc<'a>>,
    #[serde(flatten)]
    pub content: BTreeMap<&'static str, Value>,
    pub truncated: bool,
}

/// The common header.
#[derive(Serialize)]
pub(super) struct HeaderDoc {
    pub kind: &'static str,
    pub version: String,
    pub header_len: u32,
    pub payload_len: u64,
    pub payload_crc: u32,
}

impl HeaderDoc {
    pub fn of(h: &FileHeader) -> HeaderDoc {
        HeaderDoc {
            kind: h.kind.name(),
            version: h.version.to_string(),
            header_len: h.header_len,
            payload_len: h.payload_len,
            payload_crc: h.payload_crc,
        }
    }
}

/// A runtime file's run stamp.
#[derive(Serialize)]
pub(super) struct RunDoc<'a> {
    pub store_manifest_crc: u32,
    pub seed: u64,
    pub epoch: u64,
    pub seed_order_crc: u32,
    pub superbatch: u64,
    pub first_batch: u64,
    pub batches: u64,
    pub batch_size: u64,
    /// The uniform list, or the per-relation text.
    pub fanouts: Value,
    pub feature_cache_rows: u64,
    pub changeset_every: u64,
    pub carry_over: bool,
    pub reuse_prior: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub relation_fanouts: Option<RelationFanoutsDoc<'a>>,
}

/// Per-relation fanouts of a run stamp.
#[derive(Serialize)]
pub(super) struct RelationFanoutsDoc<'a> {
    pub relations: &'a [String],
    pub hops: &'a [Vec<i64>],
}

impl<'a> RunDoc<'a> {
    pub fn of(s: &'a RunStamp) -> RunDoc<'a> {
        RunDoc {
            store_manifest_crc: s.store_id,
            seed: s.seed,
            epoch: s.epoch,
            seed_order_crc: s.seed_order,
            superbatch: s.superbatch,
            first_batch: s.first_batch,
            batches: s.num_batches,
            batch_size: s.batch_size,
            fanouts: match &s.relation_fanouts {
                Some(r) => Value::from(r.describe()),
                None => Value::from(s.fanouts.clone()),
            },
            feature_cache_rows: s.cache_rows,
            changeset_every: s.changeset_every,
            carry_over: s.carry_over,
            reuse_prior: s.reuse_prior,
            relation_fanouts: s.relation_fanouts.as_ref().map(|r| RelationFanoutsDoc {
                relations: &r.relations,
                hops: &r.hops,
            }),
        }
    }
}

/// A runtime-file record.
#[derive(Serialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub(super) enum RecordDoc<'a> {
    Ids {
        batch: u64,
        ids: &'a [u64],
    },
    Adj {
        batch: u64,
        payload_len: usize,
    },
    Init {
        batch: u64,
        init: &'a [u64],
    },
    Update {
        batch: u64,
        in_ids: &'a [u64],
        out_ids: &'a [u64],
        in_positions: &'a [u64],
    },
    Link {
        batch: u64,
        src: &'a [u32],
        dst: &'a [u32],
        neg: usize,
        neg_dst: &'a [u32],
    },
}

impl<'a> RecordDoc<'a> {
    pub fn of(r: &'a Record) -> RecordDoc<'a> {
        match r {
            Record::Ids { batch, ids } => RecordDoc::Ids { batch: *batch, ids },
            Record::Adj { batch, payload } => RecordDoc::Adj {
                batch: *batch,
                payload_len: payload.len(),
            },
            Record::Init { batch, init } => RecordDoc::Init {
                batch: *batch,
                init,
            },
            Record::Update { batch, update } => RecordDoc::Update {
                batch: *batch,
                in_ids: &update.in_ids,
                out_ids: &update.out_ids,
                in_positions: &update.in_positions,
            },
            Record::Link { batch, labels } => RecordDoc::Link {
                batch: *batch,
                src: &labels.src,
                dst: &labels.dst,
                neg: labels.neg,
                neg_dst: &labels.neg_dst,
            },
        }
    }
}

/// A CSC segment.
#[derive(Serialize)]
pub(super) struct SegmentDoc {
    pub first_node: u64,
    pub node_count: u64,
    pub edge_start: u64,
    pub edge_count: u64,
    pub crc: u32,
}

impl SegmentDoc {
    pub fn of(s: &Segment) -> SegmentDoc {
        SegmentDoc {
            first_node: s.first_node,
            node_count: s.node_count,
            edge_start: s.edge_start,
            edge_count: s.edge_count,
            crc: s.crc,
        }
    }
}

/// One node's in-neighbour list.
#[derive(Serialize)]
pub(super) struct ListDoc {
    pub node: u64,
    pub in_neighbors: Vec<u64>,
}

/// One feature row, with whether its pages check.
#[derive(Serialize)]
pub(super) struct RowDoc {
    pub node: u64,
    pub page: u64,
    pub offset_in_page: usize,
    pub page_crc_ok: bool,
    pub values: Vec<f32>,
}

/// A neighbor-cache file.
#[derive(Serialize)]
pub(super) struct NeighborCacheDoc {
    pub num_nodes: u64,
    pub store_manifest_crc: u32,
    pub codec: &'static str,
    pub index_width: usize,
    pub lists: u64,
    pub blob_len: u64,
    pub cached: Vec<ListDoc>,
}

/// A splits file's lists.
#[derive(Serialize)]
pub(super) struct SplitsDoc {
    pub train: Vec<u64>,
    pub valid: Vec<u64>,
    pub test: Vec<u64>,
}

/// The counts of one edge split (the store summary).
#[derive(Serialize)]
pub(super) struct EdgeSplitCount {
    pub edges: usize,
    pub k: usize,
}

/// The counts of a store's edge splits (the store summary).
#[derive(Serialize)]
pub(super) struct EdgeSplitCounts {
    pub undirected: bool,
    /// The relation's canonical name (v1.9; absent without one).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub relation: Option<String>,
    pub train: Option<EdgeSplitCount>,
    pub valid: EdgeSplitCount,
    pub test: EdgeSplitCount,
}

impl EdgeSplitCounts {
    pub fn of(
        s: &EdgeSplits,
        schema: Option<&ginex::internals::format::schema::Schema>,
    ) -> EdgeSplitCounts {
        let count = |s: &EdgeSplit| EdgeSplitCount {
            edges: s.len(),
            k: s.k(),
        };
        EdgeSplitCounts {
            undirected: s.undirected,
            relation: s.relation.map(|r| relation_name(schema, r)),
            train: s.train.as_ref().map(count),
            valid: count(&s.valid),
            test: count(&s.test),
        }
    }
}

/// The canonical name of relation `r` of `schema` (its index when the
/// schema has no such relation, which the store's reader refuses).
pub(super) fn relation_name(
    schema: Option<&ginex::internals::format::schema::Schema>,
    r: u32,
) -> String {
    schema
        .and_then(|s| s.relations.get(r as usize).map(|rel| s.canonical(rel)))
        .unwrap_or_else(|| format!("relation {r}"))
}

/// One edge split of an edge-splits file, its lists cut to `limit`
/// positives (and their negatives).
#[derive(Serialize)]
pub(super) struct EdgeSplitDoc {
    pub edges: usize,
    pub k: usize,
    pub src: Vec<u64>,
    pub dst: Vec<u64>,
    pub neg_src: Vec<u64>,
    pub neg_dst: Vec<u64>,
}

impl EdgeSplitDoc {
    /// The doc of `s` and whether it was cut.
    pub fn of(s: &EdgeSplit, limit: Option<usize>) -> (EdgeSplitDoc, bool) {
        let p = limit.map_or(s.len(), |l| l.min(s.len()));
        let k = s.k();
        let (neg_src, neg_dst) = s.negatives.as_ref().map_or((Vec::new(), Vec::new()), |n| {
            (n.src[..p * k].to_vec(), n.dst[..p * k].to_vec())
        });
        let doc = EdgeSplitDoc {
            edges: s.len(),
            k,
            src: s.src[..p].to_vec(),
            dst: s.dst[..p].to_vec(),
            neg_src,
            neg_dst,
        };
        (doc, p < s.len())
    }
}

/// An edge-splits file's content.
#[derive(Serialize)]
pub(super) struct EdgeSplitsDoc {
    pub undirected: bool,
    /// The relation's index in the schema (v1.9; absent without one).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub relation: Option<u32>,
    pub train: Option<EdgeSplitDoc>,
    pub valid: EdgeSplitDoc,
    pub test: EdgeSplitDoc,
}
