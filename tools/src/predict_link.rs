//! `ginex predict --task link` (cargo feature `train`): node embeddings of
//! a link-prediction checkpoint from layer-wise inference (exact, within
//! --memory), the decoder's scores of given pairs, and the test edges'
//! AUC, AP, MRR and Hits@K beside an in-degree popularity baseline that
//! ranks the same candidates.

use std::io::Write;
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::predict::PredictArgs;
use ginex::internals::error::{Error, Result};
use ginex::internals::exec::epoch::EpochConfig;
use ginex::internals::import::npy::NpyFile;
use ginex::internals::import::npy_write::NpyWriter;
use ginex::internals::link_metrics::LinkMetrics;
use ginex::internals::sample::link::link_relation;
use ginex::internals::store::Store;
use ginex::internals::train::layerwise::LayerwiseOptions;
use ginex::internals::train::link::{
    held_out_pairs, link_embeddings, popularity_scores, relation_splits, Edges, Embeddings,
};
use ginex::internals::train::options::TrainOptions;
use ginex::internals::train::trainer::TrainConfig;

fn say(out: &mut dyn Write, line: &str) -> Result<()> {
    writeln!(out, "{line}").map_err(|e| Error::io("write", "<stdout>", e))
}

/// Runs `ginex predict` for the link checkpoint `stem` (metadata `meta`,
/// model `config`) of `args.checkpoint`.
pub fn run(
    args: &PredictArgs,
    store: &Store,
    (stem, meta): (&str, &Value),
    config: TrainConfig,
    out: &mut dyn Write,
) -> Result<()> {
    if args.fanouts.is_some() {
        return Err(Error::invalid_argument(
            "--task link computes embeddings layer-wise with full neighbourhoods: --fanouts does not apply",
        ));
    }
    if args.score.is_some() != args.out.is_some() {
        return Err(Error::invalid_argument(
            "--task link: --score PAIRS.npy writes the pairs' scores to --out FILE.npy; give both or neither",
        ));
    }
    if args.test_neg == Some(0) {
        return Err(Error::invalid_argument(
            "--test-neg 0: a test edge is ranked against at least one negative",
        ));
    }
    let ids = ginex::NodeIds::of(store)?;
    let embed: Vec<u64> = match (&args.embeddings, &args.nodes) {
        (None, _) => Vec::new(),
        (Some(_), None) => ids.user_order(),
        (Some(_), Some(path)) => crate::read_node_ids(&ids, path)?,
    };
    let pairs = args
        .score
        .as_deref()
        .map(|p| read_pairs(&ids, p))
        .transpose()?;
    let splits = store.edge_splits()?;
    let relation = link_relation(store, args.target_relation.as_deref(), splits.as_ref())?;
    let neg_range = match (relation, store.schema()) {
        (Some(r), Some(schema)) => schema.node_types[schema.relations[r].dst as usize].ids(),
        _ => 0..store.num_nodes(),
    };
    let test = splits
        .map(|s| match relation {
            Some(r) => relation_splits(store, r, s),
            None => s,
        })
        .filter(|s| !s.test.src.is_empty());
    if let (Some(k), Some(t)) = (args.test_neg, &test) {
        check_test_neg(k, t.test.src.len(), args.memory)?;
    }
    let test = test.map(|s| held_out_pairs(&s.test, neg_range.clone(), args.test_neg));
    let mut nodes = embed.clone();
    for e in pairs.iter().chain(test.iter().flat_map(|t| [&t.0, &t.1])) {
        nodes.extend(e.src.iter().chain(&e.dst));
    }
    if nodes.is_empty() {
        return Err(Error::invalid_argument(format!(
            "nothing to predict: {} has no test edges; pass --embeddings FILE.npy or --score PAIRS.npy --out FILE.npy",
            store.dir().display()
        )));
    }
    let mut opts = TrainOptions::new(config, EpochConfig::default(), 0);
    opts.checkpoint = Some(args.checkpoint.clone());
    opts.device = args.device;
    say(
        out,
        &format!(
            "predicting links with {stem} of {} ({} encoder, {} decoder, hidden {}; {}), layer-wise over {} nodes",
            args.checkpoint.display(),
            opts.model.model.name(),
            opts.model.task.decoder().map_or("-", |d| d.name()),
            opts.model.hidden,
            if meta["best_epoch"].is_null() {
                "latest epoch"
            } else {
                "best epoch by validation score"
            },
            store.num_nodes()
        ),
    )?;
    let layerwise = LayerwiseOptions {
        memory: args.memory.unwrap_or(2 << 30),
        spill_dir: args.run_dir.clone().unwrap_or_else(|| {
            let mut dir = store.dir().as_os_str().to_owned();
            dir.push(".runs");
            PathBuf::from(dir)
        }),
        quiet: false,
    };
    let started = std::time::Instant::now();
    let z = link_embeddings(store, &opts, &nodes, &layerwise)?;
    for (i, s) in z.stats.iter().enumerate() {
        say(
            out,
            &format!(
                "layer {}: {} nodes, {} edges in {} chunks, {:.1} s",
                i + 1,
                s.nodes,
                s.edges,
                s.chunks,
                s.seconds
            ),
        )?;
    }
    say(
        out,
        &format!(
            "embeddings of {} nodes (width {}) in {:.1} s",
            z.nodes.len(),
            z.width,
            started.elapsed().as_secs_f64()
        ),
    )?;
    if let Some(path) = &args.embeddings {
        write_rows(path, &z, &embed)?;
        say(
            out,
            &format!(
                "wrote {} ({} nodes x {} values)",
                path.display(),
                embed.len(),
                z.width
            ),
        )?;
    }
    if let (Some(pairs), Some(path)) = (&pairs, &args.out) {
        let scores = z.score(pairs)?;
        write_f32(path, &scores, &[])?;
        say(
            out,
            &format!("wrote {} ({} pair scores)", path.display(), scores.len()),
        )?;
    }
    if let Some((pos, neg, k)) = &test {
        let model = LinkMetrics::compute(&z.score(pos)?, &z.score(neg)?, *k)?;
        let popularity = LinkMetrics::compute(
            &popularity_scores(store, pos),
            &popularity_scores(store, neg),
            *k,
        )?;
        let of = match (relation, store.schema()) {
            (Some(r), Some(schema)) => format!(" of {}", schema.canonical(&schema.relations[r])),
            _ => String::new(),
        };
        say(out, &format!("test edges{of}, model: {}", model.describe()))?;
        say(
            out,
            &format!(
                "test edges{of}, popularity (destination in-degree) on the same candidates: {}",
                popularity.describe()
            ),
        )?;
    }
    Ok(())
}

/// Refuses a `--test-neg` whose pairs cannot fit `memory` (None: this
/// machine's): `tests` test edges × `k` negatives, each two ids and a score.
fn check_test_neg(k: usize, tests: usize, memory: Option<u64>) -> Result<()> {
    ginex::internals::size::PerItemCount {
        option: "--test-neg",
        value: k as u64,
        items: (tests as u64, "test edges"),
        entry: (20, "a negative pair's ids and score"),
    }
    .check(memory)
}

/// Writes the rows of `nodes` (store ids among `z`'s) as an .npy.
fn write_rows(path: &Path, z: &Embeddings, nodes: &[u64]) -> Result<()> {
    crate::create_parent_dirs(path)?;
    let mut w = NpyWriter::create_output(path, "<f4", &[z.width as u64])?;
    let mut bytes = Vec::with_capacity(z.width * 4);
    for v in nodes {
        let r = z.rows[v];
        bytes.clear();
        for x in &z.values[r * z.width..(r + 1) * z.width] {
            bytes.extend_from_slice(&x.to_le_bytes());
        }
        w.write(&bytes, z.width as u64)?;
    }
    w.finish()
}

/// Writes `values` as an .npy of rows of `row_shape`.
fn write_f32(path: &Path, values: &[f32], row_shape: &[u64]) -> Result<()> {
    crate::create_parent_dirs(path)?;
    let mut w = NpyWriter::create_output(path, "<f4", row_shape)?;
    let bytes: Vec<u8> = values.iter().flat_map(|x| x.to_le_bytes()).collect();
    w.write(&bytes, values.len() as u64)?;
    w.finish()
}

/// The pairs of an integer .npy of shape (P, 2) in original ids, as store
/// ids; a bad row is an error naming the file and the row.
pub fn read_pairs(ids: &ginex::NodeIds, path: &Path) -> Result<Edges> {
    let npy = NpyFile::open(path)?;
    let bad = |row: Option<u64>, reason: String| Error::InvalidInput {
        source_file: path.to_path_buf(),
        line: row,
        reason,
    };
    let shape = &npy.header.shape;
    if shape.len() != 2 || shape[1] != 2 || npy.header.fortran_order {
        return Err(bad(
            None,
            format!(
                "pairs must be a C-order array of shape (P, 2), not {shape:?}{}",
                if npy.header.fortran_order {
                    " in Fortran order"
                } else {
                    ""
                }
            ),
        ));
    }
    let (mut raw, mut values) = (Vec::new(), Vec::new());
    if !npy.read_ints(0, npy.len() as usize, &mut raw, &mut values)? {
        return Err(bad(None, "pairs must be integers (node ids)".into()));
    }
    let mut edges = Edges::default();
    for (row, pair) in values.chunks_exact(2).enumerate() {
        let row = row as u64;
        let id = |x: i128| -> Result<u64> {
            let v =
                u64::try_from(x).map_err(|_| bad(Some(row), format!("{x} is not a node id")))?;
            ids.store_id(v).map_err(|e| match e {
                Error::OutOfRange(m) => bad(Some(row), m),
                other => other,
            })
        };
        edges.src.push(id(pair[0])?);
        edges.dst.push(id(pair[1])?);
    }
    Ok(edges)
}
