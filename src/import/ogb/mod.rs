//! `ginex-import ogb DIR`: an OGB node-property dataset directory as
//! downloaded and unpacked, in either layout:
//!
//! * CSV (ogbn-arxiv, ogbn-products): `raw/edge.csv.gz` (`src,dst` per
//!   line), `raw/num-node-list.csv.gz` (the node count), optional
//!   `raw/node-feat.csv.gz` (one comma-separated row per node) and
//!   `raw/node-label.csv.gz` (one label per node; empty or `nan` = missing);
//! * binary (ogbn-papers100M): `raw/data.npz` (`edge_index` (2, E),
//!   `num_nodes_list`, optional `node_feat` (N, dim)) and optional
//!   `raw/node-label.npz` (`node_label`, float with NaN = missing);
//!
//! plus `split/<name>/{train,valid,test}.csv.gz` (one node id per line).
//! OGB stores the edges of some undirected graphs once (its `master.csv`
//! `add_inverse_edge`): ogbn-products and ogbn-proteins get reverse edges
//! unless told otherwise. A heterogeneous dataset (ogbn-mag:
//! `raw/num-node-dict.csv.gz`, `raw/relations/`) becomes a typed store
//! (`hetero.rs`). Multi-label datasets (ogbn-proteins labels) are
//! refused with a message.
//!
//! The files: this one (the entry and the homogeneous layouts), `shared.rs`
//! (the options and the readers both kinds use) and `hetero.rs` (ogbn-mag).

mod hetero;
mod shared;

use std::path::{Path, PathBuf};

use crate::error::Result;
use crate::format::tables::Splits;
use crate::import::npy::{decode_ints, parse_header};
use crate::import::npz::NpzArchive;
use crate::import::pipeline::{
    bad, features_from_npy, labels_from_npy, read_ids, Build, CommonOptions, EdgeInput,
    ImportReport,
};
use hetero::{import_hetero, is_hetero};
pub use shared::OgbImport;
use shared::{
    check_edge_count, csv_count, csv_feature_width, feed_csv_features, missing, read_csv_labels,
    split_dir, split_file,
};

/// Datasets whose edges OGB stores once and mirrors on load.
const INVERSE_EDGE_DATASETS: [&str; 2] = ["products", "proteins"];

/// The node count from `raw/num-node-list.csv.gz`.
fn csv_node_count(path: &Path) -> Result<u64> {
    csv_count(path, "node")
}

/// Imports an OGB dataset directory; see the module docs.
pub fn import_ogb(opts: &OgbImport) -> Result<ImportReport> {
    let raw = opts.dir.join("raw");
    if !raw.is_dir() {
        return Err(missing(&raw, "the raw/ directory"));
    }
    let name = opts
        .dir
        .file_name()
        .map(|s| s.to_string_lossy().to_lowercase())
        .unwrap_or_default();
    let mut common = opts.common.clone();
    common.undirected |= opts
        .add_inverse_edges
        .unwrap_or_else(|| INVERSE_EDGE_DATASETS.iter().any(|d| name.contains(d)));
    if is_hetero(&raw) {
        return import_hetero(opts, &common);
    }
    let npz_path = raw.join("data.npz");
    let mut build = if npz_path.is_file() {
        binary_layout(&raw, &npz_path, &common)?
    } else {
        csv_layout(&raw, &common)?
    };

    if let Some(sd) = split_dir(&opts.dir, opts.split_name.as_deref())? {
        let n = build.nodes();
        let mut lists: [Vec<u64>; 3] = Default::default();
        for (list, part) in lists.iter_mut().zip(["train", "valid", "test"]) {
            let f = split_file(&sd, part).ok_or_else(|| {
                let empty = std::fs::read_dir(&sd).is_ok_and(|mut e| e.next().is_none());
                if empty {
                    bad(
                        &sd,
                        None,
                        "the split directory is empty; expected train, valid and test (.csv.gz, .csv or .npy)",
                    )
                } else {
                    missing(&sd.join(format!("{part}.csv.gz")), "a split file")
                }
            })?;
            *list = read_ids(&f, n, None)?;
        }
        let s = Splits::from_lists(lists);
        if let Some(id) = s.first_overlap() {
            return Err(bad(
                &sd,
                None,
                format!("node {id} is in more than one of train/valid/test"),
            ));
        }
        build.splits(&s)?;
    }
    build.finish()
}

fn csv_layout(raw: &Path, common: &CommonOptions) -> Result<Build> {
    let edges = raw.join("edge.csv.gz");
    if !edges.is_file() {
        return Err(missing(&edges, "raw/edge.csv.gz or raw/data.npz"));
    }
    let count_file = raw.join("num-node-list.csv.gz");
    if !count_file.is_file() {
        return Err(missing(&count_file, "raw/num-node-list.csv.gz"));
    }
    let n = csv_node_count(&count_file)?;
    let feat_path = raw.join("node-feat.csv.gz");
    let dim = if feat_path.is_file() {
        match csv_feature_width(&feat_path)? {
            Some(width) => Some(width),
            None if n > 0 => return Err(bad(&feat_path, None, "empty; expected one row per node")),
            None => Some(1),
        }
    } else {
        None
    };
    // `num-edge-list.csv.gz` (when present): the edge count the edge file
    // must hold.
    let edge_count_file = raw.join("num-edge-list.csv.gz");
    let want_edges = if edge_count_file.is_file() {
        Some(csv_count(&edge_count_file, "edge")?)
    } else {
        None
    };
    let mut build = Build::create(
        common,
        n,
        dim.unwrap_or(1),
        &feat_path,
        want_edges.unwrap_or(0),
        None,
    )?;
    let input = EdgeInput::Text {
        path: edges.clone(),
        delimiter: Some(b','),
    };
    let got = build.topology(std::slice::from_ref(&input), None, want_edges.unwrap_or(0))?;
    if let (Some(want), Some(&got)) = (want_edges, got.first()) {
        check_edge_count(&edges, &edge_count_file, want, got)?;
    }
    if dim.is_some() {
        build.features(&feat_path, |sink| {
            feed_csv_features(&feat_path, sink, n, &format!("{n} nodes")).map(|_| ())
        })?;
    } else {
        build.zero_features()?;
    }
    let label_path = raw.join("node-label.csv.gz");
    if label_path.is_file() {
        let labels = read_csv_labels(&label_path)?;
        build.labels(&labels, None, &label_path)?;
    }
    Ok(build)
}

/// The integer array `member` of the archive (a per-graph count list such
/// as `num_nodes_list`), with the label that names it in errors.
fn count_list(archive: &NpzArchive, npz_path: &Path, member: &str) -> Result<(PathBuf, Vec<i128>)> {
    let bytes = archive.member_prefix(member, 1 << 20)?;
    let label = PathBuf::from(format!("{}:{member}", npz_path.display()));
    let h = parse_header(&bytes, &label)?;
    let counts = bytes
        .get(h.data_offset as usize..)
        .and_then(|d| decode_ints(&h, d))
        .ok_or_else(|| bad(&label, None, "expected an integer array"))?;
    Ok((label, counts))
}

fn binary_layout(raw: &Path, npz_path: &Path, common: &CommonOptions) -> Result<Build> {
    let archive = NpzArchive::open(npz_path)?;
    let feat_header = archive
        .member("node_feat")
        .map(|_| archive.header("node_feat"))
        .transpose()?;
    let n = if archive.member("num_nodes_list").is_some() {
        let (label, counts) = count_list(&archive, npz_path, "num_nodes_list")?;
        match counts.as_slice() {
            [c] => u64::try_from(*c)
                .map_err(|_| bad(&label, Some(1), format!("node count {c} is negative")))?,
            other => {
                return Err(bad(
                    &label,
                    None,
                    format!("{} graphs; node-property datasets hold one", other.len()),
                ))
            }
        }
    } else if let Some(h) = &feat_header {
        h.shape.first().copied().unwrap_or(0)
    } else {
        return Err(bad(
            npz_path,
            None,
            "neither num_nodes_list nor node_feat: the node count is unknown",
        ));
    };
    let dim = match feat_header.as_ref().map(|h| h.shape.as_slice()) {
        Some([_, d]) => *d,
        Some([_]) => 1,
        Some(s) => {
            return Err(bad(
                npz_path,
                None,
                format!("node_feat has shape {s:?}; expected (nodes, dim)"),
            ))
        }
        None => 1,
    };
    let edge_header = archive.header("edge_index")?;
    let header_edges = match edge_header.shape.as_slice() {
        [2, e] | [e, 2] => *e,
        _ => 0,
    };
    let mut build = Build::create(common, n, dim, npz_path, header_edges, None)?;
    let scratch = build.scratch("npz");
    let edges = archive.array("edge_index", &scratch)?;
    let expected = edges.len() / 2;
    if archive.member("num_edges_list").is_some() {
        let (label, counts) = count_list(&archive, npz_path, "num_edges_list")?;
        if let [c] = counts.as_slice() {
            if *c != i128::from(expected) {
                return Err(bad(
                    &label,
                    None,
                    format!("says {c} edges but edge_index holds {expected}: the archive is inconsistent"),
                ));
            }
        }
    }
    let inputs = [EdgeInput::Array(edges)];
    if feat_header.is_some() {
        let f = archive.array("node_feat", &scratch)?;
        build.overlapped(
            &f.path,
            |sink| features_from_npy(&f, None, sink),
            |b| b.topology(&inputs, None, expected),
        )?;
    } else {
        build.topology(&inputs, None, expected)?;
        build.zero_features()?;
    }
    let label_path = raw.join("node-label.npz");
    if label_path.is_file() {
        let la = NpzArchive::open(&label_path)?;
        let f = la.array("node_label", &scratch)?;
        let mut labels = Vec::with_capacity(n as usize);
        labels_from_npy(&f, &mut labels)?;
        build.labels(&labels, None, &f.path)?;
    }
    Ok(build)
}
