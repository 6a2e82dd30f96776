//! `ginex-import ogb` of a heterogeneous OGB dataset (ogbn-mag) as
//! downloaded: a typed store (format/schema.md), built by the typed build
//! the DGL importer uses (`pipeline/typed.rs`). The raw layout (OGB's
//! `read_csv_heterograph_raw`):
//!
//! * `raw/num-node-dict.csv.gz`: a header row of node type names and one
//!   row of their node counts;
//! * `raw/triplet-type-list.csv.gz`: one `src,rel,dst` per line;
//! * `raw/relations/<src>___<rel>___<dst>/edge.csv.gz` (`src,dst` per line,
//!   each type's own ids) and `num-edge-list.csv.gz` (their count);
//!   `edge_reltype.csv.gz` and `edge-feat.csv.gz` are not read;
//! * `raw/node-feat/<type>/node-feat.csv.gz`: feature rows of the types
//!   that have them (one dimension for all); `node_year.csv.gz` is not read;
//! * `raw/node-label/<type>/node-label.csv.gz`: labels, on the types
//!   `raw/nodetype-has-label.csv.gz` marks (or, without it, those with a
//!   file); nodes of the other types get -1;
//! * `split/<name>/<type>/{train,valid,test}.csv.gz`: type-local ids, on
//!   the types `split/<name>/nodetype-has-split.csv.gz` marks (or those
//!   with a directory).
//!
//! Node types take id ranges in name order and relations the order of
//! their `(src, rel, dst)` names: the order OGB's loader sorts them in
//! (and DGL's `ntypes` / `canonical_etypes`). Each node keeps its id
//! within its type as its original id. Every refusal names the file, the
//! line where there is one, and the reason.

use std::path::{Path, PathBuf};

use super::shared::{
    check_edge_count, csv_count, csv_feature_width, feed_csv_features, missing, read_csv_labels,
    split_dir, split_file, OgbImport,
};
use crate::error::{Error, Result};
use crate::format::schema::{check_name, Schema};
use crate::format::tables::{Splits, MISSING_LABEL};
use crate::import::pipeline::typed::{
    build_typed, edge_ends, node_types, read_type_ids, relations, type_local_ids, Declared,
    TypeDecl, TypedEdges, TypedFeatures,
};
use crate::import::pipeline::{bad, Build, CommonOptions, EdgeInput, FeatureSink, ImportReport};
use crate::import::reorder::REORDER_REFUSED;
use crate::import::text::Lines;

/// Whether `raw` holds a heterogeneous dataset.
pub(super) fn is_hetero(raw: &Path) -> bool {
    raw.join("num-node-dict.csv.gz").is_file()
        || raw.join("triplet-type-list.csv.gz").is_file()
        || raw.join("relations").is_dir()
}

/// The comma-separated fields of a line, trimmed.
fn fields(line: &str) -> Vec<String> {
    line.split(',').map(|f| f.trim().to_string()).collect()
}

/// A file of a header row (node type names) and one row of values, as
/// `num-node-dict.csv.gz` and `nodetype-has-label.csv.gz`: the pairs, the
/// row's line, each value parsed by `parse` (an error names the line).
fn read_type_row<T>(
    path: &Path,
    what: &str,
    parse: impl Fn(&str) -> Option<T>,
) -> Result<Vec<(String, T)>> {
    let mut lines = Lines::open(path)?;
    let header = match lines.next_line()? {
        Some(l) => fields(l),
        None => {
            return Err(bad(
                path,
                None,
                "empty; expected a header row of node type names",
            ))
        }
    };
    let values = match lines.next_line()? {
        Some(l) => fields(l),
        None => {
            return Err(bad(
                path,
                Some(lines.line()),
                format!("no row of {what} under the header of node type names"),
            ))
        }
    };
    if values.len() != header.len() {
        return Err(lines.bad(format!(
            "{} values for the {} node types of the header",
            values.len(),
            header.len()
        )));
    }
    let mut out = Vec::with_capacity(header.len());
    for (name, v) in header.into_iter().zip(&values) {
        let parsed = parse(v)
            .ok_or_else(|| lines.bad(format!("{v:?} (node type {name:?}) is not {what}")))?;
        out.push((name, parsed));
    }
    if lines.next_line()?.is_some() {
        return Err(lines.bad("a second row; node-property datasets hold one graph"));
    }
    Ok(out)
}

/// The node types and their counts from `num-node-dict.csv.gz`, in name
/// order.
fn read_node_counts(path: &Path) -> Result<Vec<(String, u64)>> {
    let mut types = read_type_row(path, "a node count", |v| v.parse::<u64>().ok())?;
    for (i, (name, _)) in types.iter().enumerate() {
        check_name(name).map_err(|r| bad(path, Some(1), format!("node type {r}")))?;
        if types.iter().take(i).any(|(o, _)| o == name) {
            return Err(bad(
                path,
                Some(1),
                format!("node type {name:?} is listed twice"),
            ));
        }
    }
    if types.is_empty() {
        return Err(bad(path, Some(1), "no node types"));
    }
    types.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(types)
}

/// The relations of `triplet-type-list.csv.gz` in `(src, rel, dst)` name
/// order, each with the line that declares it.
fn read_triplets(path: &Path, names: &[String], counts: &Path) -> Result<Vec<(Declared, u64)>> {
    let mut lines = Lines::open(path)?;
    let mut out: Vec<(Declared, u64)> = Vec::new();
    while let Some(line) = lines.next_line()? {
        let f = fields(line);
        let [src, rel, dst] = f.as_slice() else {
            let reason = format!(
                "{:?} is not a relation src,rel,dst ({} fields)",
                f.join(","),
                f.len()
            );
            return Err(lines.bad(reason));
        };
        let ty = |t: &str| {
            names.iter().position(|n| n == t).ok_or_else(|| {
                lines.bad(format!(
                    "{src}:{rel}:{dst} names node type {t:?}, which {} does not list ({names:?})",
                    counts.display()
                ))
            })
        };
        let d = Declared {
            src: ty(src)?,
            rel: rel.clone(),
            dst: ty(dst)?,
        };
        check_name(rel).map_err(|r| lines.bad(format!("relation {r}")))?;
        if out.iter().any(|(o, _)| o == &d) {
            return Err(lines.bad(format!("{src}:{rel}:{dst} is listed twice")));
        }
        out.push((d, lines.line()));
    }
    out.sort_by(|(a, _), (b, _)| (a.src, &a.rel, a.dst).cmp(&(b.src, &b.rel, b.dst)));
    Ok(out)
}

/// Refuses a directory under `dir` (`node-feat/`, `node-label/`, a split)
/// that names no node type: its data would be silently dropped.
fn check_type_dirs(dir: &Path, names: &[String], counts: &Path) -> Result<()> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Ok(());
    };
    for e in entries.flatten() {
        let p = e.path();
        let name = e.file_name().to_string_lossy().into_owned();
        if p.is_dir() && !names.contains(&name) {
            return Err(bad(
                &p,
                None,
                format!(
                    "data for node type {name:?}, which {} does not list ({names:?})",
                    counts.display()
                ),
            ));
        }
    }
    Ok(())
}

/// Which node types a `nodetype-has-*.csv.gz` file marks, or `None`
/// without one (then the types with data are taken).
fn marked_types(path: &Path, names: &[String], counts: &Path) -> Result<Option<Vec<String>>> {
    if !path.is_file() {
        return Ok(None);
    }
    let flags = read_type_row(path, "True or False", |v| {
        match v.to_ascii_lowercase().as_str() {
            "true" | "1" => Some(true),
            "false" | "0" => Some(false),
            _ => None,
        }
    })?;
    let mut out = Vec::new();
    for (name, on) in flags {
        if !names.contains(&name) {
            return Err(bad(
                path,
                Some(1),
                format!("node type {name:?} is not listed in {}", counts.display()),
            ));
        }
        if on {
            out.push(name);
        }
    }
    Ok(Some(out))
}

/// The error for a type `marks` says has data under `want`, which is absent.
fn marked_missing(want: &Path, marks: &Path, ty: &str) -> Error {
    missing(
        want,
        &format!("data of node type {ty}, which {} marks", marks.display()),
    )
}

/// Imports a heterogeneous OGB dataset; see the module docs. `common`
/// already says whether to add reverse edges.
pub(super) fn import_hetero(opts: &OgbImport, common: &CommonOptions) -> Result<ImportReport> {
    let raw = opts.dir.join("raw");
    let counts = raw.join("num-node-dict.csv.gz");
    if !counts.is_file() {
        return Err(missing(
            &counts,
            "raw/num-node-dict.csv.gz (heterogeneous layout)",
        ));
    }
    if common.reorder.renumbers() {
        return Err(bad(&counts, None, REORDER_REFUSED));
    }
    let types = read_node_counts(&counts)?;
    let names: Vec<String> = types.iter().map(|(n, _)| n.clone()).collect();
    let triplet_file = raw.join("triplet-type-list.csv.gz");
    if !triplet_file.is_file() {
        return Err(missing(&triplet_file, "raw/triplet-type-list.csv.gz"));
    }
    let triplets = read_triplets(&triplet_file, &names, &counts)?;
    let declared: Vec<Declared> = triplets.iter().map(|(d, _)| d.clone()).collect();
    let relations = relations(&names, &declared, common.undirected, &|i, reason| {
        bad(&triplet_file, triplets.get(i).map(|t| t.1), reason)
    })?;

    // Features: `node-feat/<type>/node-feat.csv.gz`, one dimension.
    check_type_dirs(&raw.join("node-feat"), &names, &counts)?;
    let feat_file = |t: &str| raw.join("node-feat").join(t).join("node-feat.csv.gz");
    let mut decls = Vec::with_capacity(types.len());
    for (name, count) in &types {
        let f = feat_file(name);
        let dim = match f.is_file().then(|| csv_feature_width(&f)).transpose()? {
            Some(None) if *count > 0 => {
                return Err(bad(
                    &f,
                    None,
                    "empty; expected one row per node of the type",
                ))
            }
            Some(width) => width,
            None => None,
        };
        decls.push(TypeDecl {
            name: name.clone(),
            count: *count,
            dim,
            dtype: common.dtype_of(name),
        });
    }
    let node_types = node_types(&decls, &|i, reason| {
        bad(
            &feat_file(names.get(i).map_or("", String::as_str)),
            None,
            reason,
        )
    })?;
    let schema = Schema {
        node_types,
        relations,
    };

    let (inputs, wants) = edge_inputs(&raw, &names, &declared)?;
    let ends: Vec<_> = declared
        .iter()
        .map(|d| edge_ends(&schema, d.src, d.dst))
        .collect();
    let expected = wants
        .iter()
        .flatten()
        .fold(0u64, |a, (_, w)| a.saturating_add(*w));
    let check = |got: &[u64]| -> Result<()> {
        for ((input, want), got) in inputs.iter().zip(&wants).zip(got) {
            if let Some((file, want)) = want {
                check_edge_count(input.path(), file, *want, *got)?;
            }
        }
        Ok(())
    };
    let featured: Vec<(PathBuf, u64, String)> = schema
        .node_types
        .iter()
        .filter(|t| t.has_features())
        .map(|t| (feat_file(&t.name), t.count, t.name.clone()))
        .collect();
    let features = featured.first().map(|(source, _, _)| TypedFeatures {
        source: source.clone(),
        feed: Box::new(|sink: &mut FeatureSink| feed_types(&featured, &counts, sink)),
    });
    let edges = TypedEdges {
        inputs: &inputs,
        ends: &ends,
        expected,
        check: &check,
    };
    let mut build = build_typed(common, schema.clone(), &counts, edges, features)?;
    labels(&raw, &schema, &counts, &mut build)?;
    splits(opts, &schema, &counts, &mut build)?;
    build.original_ids(&type_local_ids(&schema))?;
    build.finish()
}

/// A relation's declared edge count and the file that declares it.
type DeclaredCount = Option<(PathBuf, u64)>;

/// The edge file of each relation, with its declared count when
/// `num-edge-list.csv.gz` is there.
fn edge_inputs(
    raw: &Path,
    names: &[String],
    declared: &[Declared],
) -> Result<(Vec<EdgeInput>, Vec<DeclaredCount>)> {
    let name = |t: usize| names.get(t).map_or("?", String::as_str);
    let mut inputs = Vec::with_capacity(declared.len());
    let mut wants = Vec::with_capacity(declared.len());
    for d in declared {
        let dir =
            raw.join("relations")
                .join(format!("{}___{}___{}", name(d.src), d.rel, name(d.dst)));
        let path = dir.join("edge.csv.gz");
        if !path.is_file() {
            return Err(missing(
                &path,
                &format!(
                    "the edges of {}:{}:{}, which raw/triplet-type-list.csv.gz lists",
                    name(d.src),
                    d.rel,
                    name(d.dst)
                ),
            ));
        }
        let count_file = dir.join("num-edge-list.csv.gz");
        wants.push(if count_file.is_file() {
            let want = csv_count(&count_file, "edge")?;
            Some((count_file, want))
        } else {
            None
        });
        inputs.push(EdgeInput::Text {
            path,
            delimiter: Some(b','),
        });
    }
    Ok((inputs, wants))
}

/// Pushes each featured type's rows (`(file, count, type)`, in type
/// order), each file holding exactly its type's count.
fn feed_types(
    featured: &[(PathBuf, u64, String)],
    counts: &Path,
    sink: &mut FeatureSink,
) -> Result<()> {
    for (path, count, name) in featured {
        let whose = format!("{count} nodes of type {name} ({} says)", counts.display());
        let got = feed_csv_features(path, sink, *count, &whose)?;
        if got != *count {
            return Err(bad(
                path,
                None,
                format!("{got} feature rows for the {whose}"),
            ));
        }
    }
    Ok(())
}

/// Labels of the labelled types at their global ids, -1 elsewhere.
fn labels(raw: &Path, schema: &Schema, counts: &Path, build: &mut Build) -> Result<()> {
    let names: Vec<String> = schema.node_types.iter().map(|t| t.name.clone()).collect();
    let dir = raw.join("node-label");
    check_type_dirs(&dir, &names, counts)?;
    let marks = raw.join("nodetype-has-label.csv.gz");
    let marked = marked_types(&marks, &names, counts)?;
    let mut all: Option<Vec<i32>> = None;
    let mut source = dir.clone();
    for t in &schema.node_types {
        let f = dir.join(&t.name).join("node-label.csv.gz");
        let wanted = marked.as_ref().map_or(f.is_file(), |m| m.contains(&t.name));
        if !wanted {
            continue;
        }
        if !f.is_file() {
            return Err(marked_missing(&f, &marks, &t.name));
        }
        let these = read_csv_labels(&f)?;
        if these.len() as u64 != t.count {
            return Err(bad(
                &f,
                None,
                format!(
                    "{} labels for the {} nodes of type {} ({} says)",
                    these.len(),
                    t.count,
                    t.name,
                    counts.display()
                ),
            ));
        }
        let n = schema.node_types.last().map_or(0, |l| l.offset + l.count);
        let all = all.get_or_insert_with(|| vec![MISSING_LABEL; n as usize]);
        let start = t.offset as usize;
        if let Some(slot) = all.get_mut(start..start + these.len()) {
            slot.copy_from_slice(&these);
        }
        source = f;
    }
    match all {
        Some(all) => build.labels(&all, None, &source),
        None => Ok(()),
    }
}

/// The split `split/<name>/<type>/{train,valid,test}` of each split type,
/// made global ids.
fn splits(opts: &OgbImport, schema: &Schema, counts: &Path, build: &mut Build) -> Result<()> {
    let Some(sd) = split_dir(&opts.dir, opts.split_name.as_deref())? else {
        return Ok(());
    };
    let names: Vec<String> = schema.node_types.iter().map(|t| t.name.clone()).collect();
    check_type_dirs(&sd, &names, counts)?;
    let marks = sd.join("nodetype-has-split.csv.gz");
    let marked = marked_types(&marks, &names, counts)?;
    let mut lists: [Vec<u64>; 3] = Default::default();
    let mut any = false;
    for t in &schema.node_types {
        let td = sd.join(&t.name);
        let wanted = marked.as_ref().map_or(td.is_dir(), |m| m.contains(&t.name));
        if !wanted {
            continue;
        }
        if !td.is_dir() {
            return Err(marked_missing(&td, &marks, &t.name));
        }
        any = true;
        let ty = (t.name.clone(), t.offset, t.count);
        for (list, part) in lists.iter_mut().zip(["train", "valid", "test"]) {
            let f = split_file(&td, part)
                .ok_or_else(|| missing(&td.join(format!("{part}.csv.gz")), "a split file"))?;
            list.extend(read_type_ids(&f, &ty)?);
        }
    }
    if !any {
        return Err(bad(
            &sd,
            None,
            "no split of any node type: a heterogeneous dataset's splits are split/<name>/<type>/{train,valid,test}.csv.gz",
        ));
    }
    let s = Splits::from_lists(lists);
    if let Some(id) = s.first_overlap() {
        let t = schema.node_types.get(schema.type_of(id));
        let (name, local) = t.map_or(("?", id), |t| (t.name.as_str(), id - t.offset));
        return Err(bad(
            &sd,
            None,
            format!("{name} {local} (node {id}) is in more than one of train/valid/test"),
        ));
    }
    build.splits(&s)
}
