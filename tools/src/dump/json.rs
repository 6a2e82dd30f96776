//! `ginex-dump --json PATH`: any single file, or a store's summary, as
//! JSON (schema: `format/dump-json.md`).

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::Value;

use ginex::internals::error::{Error, Result};
use ginex::internals::format::bytes::{le_u32, le_u64};
use ginex::internals::format::csc::decode_segment_table;
use ginex::internals::format::edge_splits::EdgeSplits;
use ginex::internals::format::header::{FileHeader, FileKind};
use ginex::internals::format::manifest::{store_file_name, Manifest};
use ginex::internals::format::pages::FeatureLayout;
use ginex::internals::format::schema::Schema;
use ginex::internals::format::sections::FeatureSections;
use ginex::internals::format::tables::{
    decode_labels, decode_original_ids, decode_out_degrees, Splits,
};
use ginex::internals::format::PAGE_SIZE;
use ginex::internals::store::Store;

use super::docs::{
    DegreeDoc, EdgeSplitCounts, EdgeSplitDoc, EdgeSplitsDoc, FileDoc, HeaderDoc, ListDoc,
    ManifestDoc, NeighborCacheDoc, Q8ErrorDoc, RecordDoc, RowDoc, RunDoc, SegmentDoc, SplitCounts,
    SplitsDoc, SummaryDoc,
};
use super::summary::degree_stats;
use crate::sorted_json;

pub(super) fn summary_json(store: &Store, limit: Option<usize>) -> Result<Value> {
    let m = store.manifest();
    let (min, mean, p50, p99, max) = degree_stats(store.indptr());
    let splits = store.splits()?;
    // A remapped store: the original id of every node (--limit cuts the list).
    let (original_ids, truncated) = match store.original_ids()? {
        Some(ids) => {
            let (items, truncated) = limited(ids, limit);
            (Some(items), truncated)
        }
        None => (None, false),
    };
    Ok(sorted_json(&SummaryDoc {
        path: store.dir(),
        kind: "store",
        manifest: ManifestDoc::of(m),
        rows_per_page: m.layout.rows_per_page(),
        pages_per_row: m.layout.pages_per_row(),
        in_degree: DegreeDoc {
            min,
            mean,
            p50,
            p99,
            max,
        },
        splits: splits.as_ref().map(SplitCounts::of),
        edge_splits: store
            .edge_splits()?
            .as_ref()
            .map(|s| EdgeSplitCounts::of(s, store.schema())),
        truncated,
        schema: store.schema(),
        original_ids,
        q8_error: store.q8_error().as_ref().map(Q8ErrorDoc::of),
    }))
}

/// Truncates a list to `limit` items, returning whether it was cut.
fn limited<T>(mut items: Vec<T>, limit: Option<usize>) -> (Vec<T>, bool) {
    match limit {
        Some(l) if items.len() > l => {
            items.truncate(l);
            (items, true)
        }
        _ => (items, false),
    }
}

/// The manifest of the store a file belongs to (its directory).
fn sibling_manifest(path: &Path) -> Result<Manifest> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let mpath = dir.join(store_file_name(FileKind::Manifest));
    ginex::internals::store::read_checked_file(&mpath, FileKind::Manifest)
        .map_err(|e| {
            Error::invalid_argument(format!(
                "{} needs its store's MANIFEST beside it to be decoded: {e}",
                path.display()
            ))
        })?
        .decode(|p| Manifest::decode(p, &mpath))
}

fn sibling_payload(path: &Path, kind: FileKind) -> Result<Vec<u8>> {
    let dir = path.parent().unwrap_or(Path::new("."));
    ginex::internals::store::read_checked_file(&dir.join(store_file_name(kind)), kind)
        .map(|f| f.payload)
}

/// Decodes any single file as JSON.
pub fn file_json(path: &Path, limit: Option<usize>) -> Result<Value> {
    let file = ginex::internals::io::read::open(path)?;
    let file_len = file
        .metadata()
        .map_err(|e| Error::io("stat", path, e))?
        .len();
    let mut head = vec![0u8; ginex::internals::format::header::HEADER_SIZE.min(file_len as usize)];
    ginex::internals::io::read::read_exact_at(&file, path, 0, &mut head)?;
    let header = FileHeader::decode(&head, path)?;
    // The payload CRC is streamed; large files (feature pages, indices) are
    // then read only as far as the rows or lists printed.
    let start = u64::from(header.header_len);
    let streamed = file_len.saturating_sub(start);
    let crc = ginex::internals::io::read::stream_crc(&file, path, start, streamed, |_, _| Ok(()))?;
    let large = matches!(header.kind, FileKind::FeaturePages | FileKind::Indices);
    let mut bytes = Vec::new();
    if !large {
        bytes.resize(streamed as usize, 0);
        ginex::internals::io::read::read_exact_at(
            &file,
            path,
            u64::from(header.header_len),
            &mut bytes,
        )?;
    }
    let payload = &bytes[..];
    // Decoder errors carry payload offsets; report file offsets.
    let at = |e: Error| e.in_payload_at(u64::from(header.header_len));
    let payload_crc_ok = crc == header.payload_crc && streamed == header.payload_len;
    let mut run = None;
    let (key, content, truncated) = match header.kind {
        FileKind::Manifest => (
            "manifest",
            sorted_json(&ManifestDoc::of(
                &Manifest::decode(payload, path).map_err(at)?,
            )),
            false,
        ),
        FileKind::Indptr => {
            let (items, t) = limited(
                payload.chunks_exact(8).map(|c| le_u64(c, 0)).collect(),
                limit,
            );
            ("indptr", sorted_json(&items), t)
        }
        FileKind::PageChecksums => {
            let (items, t) = limited(
                payload.chunks_exact(4).map(|c| le_u32(c, 0)).collect(),
                limit,
            );
            ("page_crcs", sorted_json(&items), t)
        }
        FileKind::SegmentTable => {
            let indptr: Vec<u64> = sibling_payload(path, FileKind::Indptr)?
                .chunks_exact(8)
                .map(|c| le_u64(c, 0))
                .collect();
            let segs = decode_segment_table(payload, &indptr, path).map_err(at)?;
            let (segs, t) = limited(segs, limit);
            (
                "segments",
                sorted_json(&segs.iter().map(SegmentDoc::of).collect::<Vec<_>>()),
                t,
            )
        }
        FileKind::Indices => indices_json(path, &file, limit)?,
        FileKind::FeaturePages => pages_json(path, &file, limit)?,
        FileKind::Labels => {
            let m = sibling_manifest(path)?;
            let (items, t) = limited(
                decode_labels(payload, m.num_nodes, m.num_classes, path).map_err(at)?,
                limit,
            );
            ("labels", sorted_json(&items), t)
        }
        FileKind::Schema => {
            let m = sibling_manifest(path)?;
            let schema = Schema::decode(
                payload,
                path,
                (m.num_nodes, m.num_edges, m.layout),
                header.version,
            )
            .map_err(at)?;
            ("schema", sorted_json(&schema), false)
        }
        FileKind::Splits => {
            let m = sibling_manifest(path)?;
            let s = Splits::decode(payload, m.num_nodes, path).map_err(at)?;
            let (train, t1) = limited(s.train, limit);
            let (valid, t2) = limited(s.valid, limit);
            let (test, t3) = limited(s.test, limit);
            (
                "splits",
                sorted_json(&SplitsDoc { train, valid, test }),
                t1 || t2 || t3,
            )
        }
        FileKind::NeighborCache => neighbor_cache_json(path, limit)?,
        FileKind::RunSamples | FileKind::RunChanges => {
            let (stamp, records) = ginex::internals::inspect::runfile::read_all(path, header.kind)?;
            run = Some(stamp);
            let (records, t) = limited(records, limit);
            (
                "records",
                sorted_json(&records.iter().map(RecordDoc::of).collect::<Vec<_>>()),
                t,
            )
        }
        FileKind::EdgeSplits => edge_splits_json((payload, header.version), path, limit, at)?,
        FileKind::OriginalIds => {
            let m = sibling_manifest(path)?;
            let (items, t) = limited(
                decode_original_ids(payload, m.num_nodes, path).map_err(at)?,
                limit,
            );
            ("original_ids", sorted_json(&items), t)
        }
        FileKind::OutDegrees => {
            let m = sibling_manifest(path)?;
            let (items, t) = limited(
                decode_out_degrees(payload, m.num_nodes, path).map_err(at)?,
                limit,
            );
            ("out_degrees", sorted_json(&items), t)
        }
    };
    Ok(sorted_json(&FileDoc {
        path,
        header: HeaderDoc::of(&header),
        payload_crc_ok,
        run: run.as_ref().map(RunDoc::of),
        content: BTreeMap::from([(key, content)]),
        truncated,
    }))
}

/// A neighbor cache's header and its first `limit` lists.
fn neighbor_cache_json(path: &Path, limit: Option<usize>) -> Result<(&'static str, Value, bool)> {
    let cache = ginex::internals::sample::neighbor_cache::NeighborCache::open_unbound(path)?;
    let h = *cache.header();
    let (nodes, t) = limited(cache.cached_nodes(), limit);
    let mut lists = Vec::with_capacity(nodes.len());
    let mut ids = Vec::new();
    for v in nodes {
        ids.clear();
        ginex::internals::sample::source::ListCache::lookup(&cache, v, &mut ids)?;
        lists.push(ListDoc {
            node: v,
            in_neighbors: ids.clone(),
        });
    }
    let doc = NeighborCacheDoc {
        num_nodes: h.num_nodes,
        store_manifest_crc: h.store_crc,
        codec: h.codec.name(),
        index_width: h.width.bytes(),
        lists: h.count,
        blob_len: h.blob_len,
        cached: lists,
    };
    Ok(("neighbor_cache", sorted_json(&doc), t))
}

/// A store's edge splits, each split's first `limit` edges (`at` turns
/// the decoder's payload offsets into file offsets).
fn edge_splits_json(
    (payload, version): (&[u8], ginex::internals::format::version::Version),
    path: &Path,
    limit: Option<usize>,
    at: impl Fn(Error) -> Error,
) -> Result<(&'static str, Value, bool)> {
    let m = sibling_manifest(path)?;
    let s = EdgeSplits::decode(payload, m.num_nodes, path, version).map_err(at)?;
    let train = s.train.as_ref().map(|t| EdgeSplitDoc::of(t, limit));
    let (valid, t1) = EdgeSplitDoc::of(&s.valid, limit);
    let (test, t2) = EdgeSplitDoc::of(&s.test, limit);
    let t0 = train.as_ref().is_some_and(|t| t.1);
    let doc = EdgeSplitsDoc {
        undirected: s.undirected,
        relation: s.relation,
        train: train.map(|t| t.0),
        valid,
        test,
    };
    Ok(("edge_splits", sorted_json(&doc), t0 || t1 || t2))
}

/// The first `len` payload bytes of a page-header file (fewer if the file
/// is shorter: the decoders then report the damage).
fn read_prefix(file: &std::fs::File, path: &Path, len: u64) -> Result<Vec<u8>> {
    let file_len = file
        .metadata()
        .map_err(|e| Error::io("stat", path, e))?
        .len();
    let avail = file_len.saturating_sub(PAGE_SIZE as u64).min(len);
    let mut out = vec![0u8; avail as usize];
    ginex::internals::io::read::read_exact_at(file, path, PAGE_SIZE as u64, &mut out)?;
    Ok(out)
}

fn indices_json(
    path: &Path,
    file: &std::fs::File,
    limit: Option<usize>,
) -> Result<(&'static str, Value, bool)> {
    let m = sibling_manifest(path)?;
    let indptr: Vec<u64> = sibling_payload(path, FileKind::Indptr)?
        .chunks_exact(8)
        .map(|c| le_u64(c, 0))
        .collect();
    let wb = m.index_width.bytes();
    let nodes = limit.map_or(m.num_nodes, |l| (l as u64).min(m.num_nodes));
    let end = indptr.get(nodes as usize).copied().unwrap_or(0) * wb as u64;
    let payload = read_prefix(file, path, end)?;
    let payload = &payload[..];
    let mut lists = Vec::with_capacity(nodes as usize);
    let mut ids = Vec::new();
    for v in 0..nodes as usize {
        let (lo, hi) = (
            indptr.get(v).copied().unwrap_or(0) as usize * wb,
            indptr.get(v + 1).copied().unwrap_or(0) as usize * wb,
        );
        let bytes = payload.get(lo..hi).ok_or_else(|| {
            Error::corrupt(
                path,
                (PAGE_SIZE + lo) as u64,
                format!("list of node {v} lies outside the file"),
            )
        })?;
        ids.clear();
        m.index_width.decode(bytes, &mut ids);
        lists.push(ListDoc {
            node: v as u64,
            in_neighbors: ids.clone(),
        });
    }
    Ok(("lists", sorted_json(&lists), nodes < m.num_nodes))
}

fn pages_json(
    path: &Path,
    file: &std::fs::File,
    limit: Option<usize>,
) -> Result<(&'static str, Value, bool)> {
    let m = sibling_manifest(path)?;
    let crcs: Vec<u32> = sibling_payload(path, FileKind::PageChecksums)?
        .chunks_exact(4)
        .map(|c| le_u32(c, 0))
        .collect();
    let sections = sibling_sections(path, &m)?;
    let all_rows: u64 = sections.sections().iter().map(|s| s.rows).sum();
    let rows = limit.map_or(all_rows, |l| (l as u64).min(all_rows));
    let end = if rows == 0 {
        0
    } else {
        let last = sections.locate(rows - 1);
        (last.page + last.pages) * PAGE_SIZE as u64
    };
    let payload = read_prefix(file, path, end)?;
    let payload = &payload[..];
    let mut out = Vec::with_capacity(rows as usize);
    let mut values = Vec::new();
    for r in 0..rows {
        let layout: FeatureLayout = sections.section_of(r).layout;
        values.resize(layout.dim as usize, 0f32);
        let loc = sections.locate(r);
        let start = loc.page as usize * PAGE_SIZE + loc.offset_in_page;
        let bytes = payload
            .get(start..start + layout.row_bytes())
            .ok_or_else(|| {
                Error::corrupt(
                    path,
                    (PAGE_SIZE + start) as u64,
                    format!("row {r} lies outside the file"),
                )
            })?;
        layout
            .dtype
            .decode_to_f32(layout.dim as usize, bytes, &mut values);
        let page_ok = (0..loc.pages).all(|i| {
            let p = (loc.page + i) as usize;
            let page = payload
                .get(p * PAGE_SIZE..(p + 1) * PAGE_SIZE)
                .unwrap_or_default();
            crcs.get(p).copied() == Some(ginex::internals::format::crc32(page))
        });
        out.push(RowDoc {
            node: r,
            page: loc.page,
            offset_in_page: loc.offset_in_page,
            page_crc_ok: page_ok,
            values: values.clone(),
        });
    }
    Ok(("rows", sorted_json(&out), rows < all_rows))
}

/// Where the rows of the store beside `path` (manifest `m`) live: its
/// schema's sections when it is typed.
fn sibling_sections(path: &Path, m: &Manifest) -> Result<FeatureSections> {
    let schema = match m.file(FileKind::Schema) {
        None => None,
        Some(_) => {
            let dir = path.parent().unwrap_or(Path::new("."));
            let spath = dir.join(store_file_name(FileKind::Schema));
            let file = ginex::internals::store::read_checked_file(&spath, FileKind::Schema)?;
            let store = (m.num_nodes, m.num_edges, m.layout);
            Some(file.decode(|p| Schema::decode(p, &spath, store, file.header.version))?)
        }
    };
    FeatureSections::of(schema.as_ref(), m.layout, m.num_nodes)
}
