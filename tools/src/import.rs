//! `ginex-import`: datasets in — `files`, `ogb`, `dgl`. Each ends in a
//! verified store written atomically (nothing or a complete store at
//! `--out`).

use std::io::Write;
use std::path::PathBuf;
use std::time::Instant;

use clap::{Args, Parser, Subcommand};

use ginex::internals::error::{Error, Result};
use ginex::internals::import::dgl::{import_dgl, DglImport};
use ginex::internals::import::files::{import_files, FilesImport};
use ginex::internals::import::ogb::{import_ogb, OgbImport};
use ginex::internals::import::pipeline::{
    CommonOptions, EdgeSplitFiles, EdgeSplitSource, ImportReport,
};
use ginex::internals::store::edges::CscOptions;

/// Import a dataset into a ginex store (written atomically, verified).
#[derive(Debug, Parser)]
#[command(name = "ginex-import", version)]
pub struct ImportCli {
    /// The input format.
    #[command(subcommand)]
    pub command: ImportCommand,
}

/// Input formats.
#[derive(Debug, Subcommand)]
pub enum ImportCommand {
    /// An edge list (CSV/TSV/space text, optionally .gz, or .npy (E,2)/(2,E))
    /// plus optional features (.npy), labels and splits.
    ///
    /// Example: ginex-import files --edges edges.npy --features feat.npy --labels labels.npy
    ///          --train-ids train.npy --valid-ids valid.npy --test-ids test.npy --out STORE
    Files(FilesArgs),
    /// An OGB node-property dataset directory as downloaded: raw/*.csv.gz
    /// (arxiv/products style) or raw/data.npz + raw/node-label.npz
    /// (papers100M style), with split/<name>/{train,valid,test}.csv.gz;
    /// or a heterogeneous one (ogbn-mag: raw/num-node-dict.csv.gz,
    /// raw/relations/), which becomes a typed store.
    ///
    /// Example: ginex-import ogb dataset/ogbn_arxiv --out STORE
    Ogb(OgbArgs),
    /// DGL's chunked graph format (metadata.json + edge and node-data
    /// chunks), homogeneous graphs.
    ///
    /// Example: ginex-import dgl chunked/metadata.json --out STORE
    Dgl(DglArgs),
    /// An existing store, renumbered into a new one (what `ginex-dump` and
    /// `ginex epoch` suggest when a store's layout costs pages): with
    /// --reorder auto (the default) only where an order reads 1.10x fewer
    /// pages across its sampled batches, else nothing is written.
    ///
    /// Example: ginex-import reorder STORE --out STORE-bfs
    Reorder(ReorderArgs),
    /// An existing store with its features re-encoded in another dtype
    /// (f32, f16, bf16 or q8), into a new store: the topology, labels and
    /// splits are copied, nothing is re-imported. q8 is lossy (an error
    /// of at most half a step, 1/510 of each row's range; see
    /// docs/ginex-import.md).
    ///
    /// Example: ginex-import convert STORE --dtype q8 --out STORE-q8
    Convert(ConvertArgs),
}

/// `ginex-import convert`.
#[derive(Debug, Args)]
pub struct ConvertArgs {
    /// The store to convert (left as it is).
    pub store: PathBuf,
    /// The new dtype of the features: f32, f16, bf16 or q8 (every featured
    /// node type of a typed store).
    #[arg(long)]
    pub dtype: String,
    /// Keep NaN/inf (as import does; refused with q8, which cannot store
    /// them).
    #[arg(long)]
    pub allow_nonfinite: bool,
    /// No progress bar.
    #[arg(long)]
    pub quiet: bool,
    /// The new store; refused, before anything is written, if it exists.
    #[arg(long)]
    pub out: PathBuf,
}

/// `ginex-import reorder`.
#[derive(Debug, Args)]
pub struct ReorderArgs {
    /// The store to renumber (left as it is).
    pub store: PathBuf,
    /// auto, bfs or degree (see the import subcommands' --reorder).
    #[arg(long, default_value = "auto", value_parser = crate::args::reorder)]
    pub reorder: ginex::internals::import::reorder::Reorder,
    /// The batches auto measures on.
    #[command(flatten)]
    pub layout: crate::args::LayoutSampleArgs,
    /// The new store; refused, before anything is written, if it exists.
    #[arg(long)]
    pub out: PathBuf,
}

/// Options of every subcommand.
#[derive(Debug, Args)]
pub struct CommonArgs {
    /// Store dtype for the features: f32, f16, bf16 or q8 (8-bit codes with
    /// a per-row scale; lossy, see docs/ginex-import.md). A typed import may
    /// give node types their own after it: `f16,author=f32` (the types not
    /// named get the first; `author=f32` alone leaves the others f32).
    #[arg(long, default_value = "f32", value_name = "DTYPE[,TYPE=DTYPE...]")]
    pub dtype: String,
    /// Add the reverse of every edge.
    #[arg(long)]
    pub undirected: bool,
    /// Drop edges from a node to itself.
    #[arg(long)]
    pub remove_self_loops: bool,
    /// Keep one copy of repeated edges.
    #[arg(long)]
    pub dedup: bool,
    /// Keep NaN/Inf feature values instead of refusing them.
    #[arg(long)]
    pub allow_nonfinite: bool,
    /// Memory budget (the CSC build spills to disk beyond it).
    #[arg(long, default_value = "2GiB", value_parser = crate::args::bytes)]
    pub memory: u64,
    /// Node order of the store: auto (measure the pages a few sampled
    /// batches read together under the input's order and under bfs and
    /// degree, and renumber by the best where it reads 1.10x fewer pages
    /// or better; the decision and the figures are printed), none (the
    /// input's), degree (descending in-degree) or bfs (breadth-first over
    /// in-neighbour lists from the hubs, so a node's in-neighbours get
    /// consecutive ids, hottest first, and share feature pages). A reordered store keeps every node's
    /// original id, and the ids passed in or handed back (predict, sample,
    /// Python) stay original. It is built, then written again renumbered
    /// (twice the disk space while both exist). Typed stores keep their
    /// order (auto) or refuse degree and bfs.
    #[arg(long, default_value = "auto", value_parser = crate::args::reorder)]
    pub reorder: ginex::internals::import::reorder::Reorder,
    /// The batches --reorder auto measures on.
    #[command(flatten)]
    pub layout: crate::args::LayoutSampleArgs,
    /// Link prediction: a random transductive split of the edges (the
    /// GAE protocol), TRAIN,VALID,TEST fractions summing to 1, e.g.
    /// 0.85,0.05,0.10. Each edge (each pair with --undirected) is held out
    /// as a valid or test edge with those probabilities, decided by a hash
    /// of the pair and --split-seed; held-out edges are left out of the
    /// graph, and each gets one random non-edge pair as its negative.
    /// Self-loops always stay.
    #[arg(long, value_name = "TRAIN,VALID,TEST", conflicts_with_all = ["train_edges", "valid_edges", "test_edges"])]
    pub edge_split: Option<String>,
    /// Seed of --edge-split (default 0).
    #[arg(long, requires = "edge_split")]
    pub split_seed: Option<u64>,
    /// Link prediction: training positive edges (.npy (E,2)/(2,E) or text,
    /// like --edges; each must be an edge of the graph). Default: every
    /// edge left in the graph.
    #[arg(long, requires_all = ["valid_edges", "test_edges"])]
    pub train_edges: Option<PathBuf>,
    /// Link prediction: validation edges (like --edges). Each must be an
    /// edge of the graph; it is left out of the stored graph.
    #[arg(long, requires = "test_edges")]
    pub valid_edges: Option<PathBuf>,
    /// Link prediction: test edges (like --valid-edges).
    #[arg(long, requires = "valid_edges")]
    pub test_edges: Option<PathBuf>,
    /// Negatives of the validation edges: .npy of shape (P, K), K
    /// destination candidates for each of the P validation edges, whose
    /// source is the edge's (the OGB ogbl-citation2 protocol).
    #[arg(long, requires = "valid_edges")]
    pub valid_negatives: Option<PathBuf>,
    /// Negatives of the test edges (like --valid-negatives).
    #[arg(long, requires = "test_edges")]
    pub test_negatives: Option<PathBuf>,
    /// The edge input already leaves the valid and test edges out (OGB's
    /// ogbl-* datasets, ginex-export): each must then be absent from it.
    /// Without it each must be an edge of it, and is taken out.
    #[arg(long, requires = "valid_edges")]
    pub held_out_excluded: bool,
    /// The split edges are undirected pairs ((u, v) and (v, u) are one
    /// edge; both directions are held out) although the edges are not
    /// mirrored: for an edge input that already holds both directions,
    /// as ginex-export writes an undirected store. Implied by --undirected.
    #[arg(long)]
    pub undirected_splits: bool,
    /// Link prediction on a typed graph (dgl, ogb of a heterogeneous
    /// dataset): the relation SRC:REL:DST the edge split is of (required
    /// there, refused on a homogeneous graph). Only its edges are split;
    /// every other relation stays whole. Its split files (--train-edges,
    /// --valid-edges, --test-edges and their negatives) hold type-local
    /// ids, sources of its source type and destinations of its
    /// destination type, as its edge files do; --edge-split draws each
    /// negative from those types too.
    #[arg(long, value_name = "SRC:REL:DST")]
    pub target_relation: Option<String>,
    /// No progress bars on stderr.
    #[arg(long, short)]
    pub quiet: bool,
    /// The store to create. Refused, before anything is written, if it
    /// exists; built in a staging directory beside it and renamed into place
    /// (a failed or killed import leaves nothing at the path).
    #[arg(long)]
    pub out: PathBuf,
}

impl CommonArgs {
    fn options(&self) -> Result<CommonOptions> {
        if self.held_out_excluded && self.edge_split.is_some() {
            return Err(Error::invalid_argument(
                "--held-out-excluded says the edge input already leaves given --valid-edges and --test-edges out; --edge-split draws the held-out edges from the input itself, so there is nothing it could apply to: leave one out",
            ));
        }
        crate::create_parent_dirs(&self.out)?;
        let (dtype, type_dtypes) = CommonOptions::parse_dtypes(&self.dtype)?;
        let edge_splits = match (&self.edge_split, &self.valid_edges, &self.test_edges) {
            (Some(text), _, _) => {
                Some(EdgeSplitSource::random(text, self.split_seed.unwrap_or(0))?)
            }
            (None, Some(valid), Some(test)) => Some(EdgeSplitSource::Files(EdgeSplitFiles {
                train: self.train_edges.clone(),
                valid: valid.clone(),
                test: test.clone(),
                valid_negatives: self.valid_negatives.clone(),
                test_negatives: self.test_negatives.clone(),
                held_out_excluded: self.held_out_excluded,
            })),
            _ => None,
        };
        if let (Some(r), None) = (&self.target_relation, &edge_splits) {
            return Err(Error::invalid_argument(format!(
                "--target-relation {r} names the relation an edge split is of: give --edge-split or --valid-edges and --test-edges with it"
            )));
        }
        Ok(CommonOptions {
            edge_splits,
            undirected_splits: self.undirected_splits,
            target_relation: self.target_relation.clone(),
            dtype,
            type_dtypes,
            undirected: self.undirected,
            csc: CscOptions {
                dedup: self.dedup,
                remove_self_loops: self.remove_self_loops,
            },
            allow_nonfinite: self.allow_nonfinite,
            memory: self.memory,
            quiet: self.quiet,
            reorder: self.reorder,
            reorder_sample: self.layout.sample()?,
            ..CommonOptions::new(self.out.clone())
        })
    }
}

/// `ginex-import files`.
#[derive(Debug, Args)]
pub struct FilesArgs {
    /// Edge list: text (`src dst` per line; `#`/`%` comments, header line,
    /// CRLF, BOM and .gz handled) or .npy of integer ids.
    #[arg(long)]
    pub edges: PathBuf,
    /// Feature matrix .npy (rows x dim; float16/32/64, C order). Without
    /// it the store gets all-zero features of --feature-dim.
    #[arg(long)]
    pub features: Option<PathBuf>,
    /// Width of the all-zero features when --features is not given.
    #[arg(long, default_value_t = 1, conflicts_with = "features")]
    pub feature_dim: u64,
    /// Labels .npy, shape (N,) or (N,1): integers (-1 = missing) or floats (NaN = missing).
    #[arg(long)]
    pub labels: Option<PathBuf>,
    /// Number of classes (default: largest label + 1).
    #[arg(long)]
    pub num_classes: Option<u32>,
    /// Training node ids (.npy or one per line).
    #[arg(long)]
    pub train_ids: Option<PathBuf>,
    /// Validation node ids.
    #[arg(long)]
    pub valid_ids: Option<PathBuf>,
    /// Test node ids.
    #[arg(long)]
    pub test_ids: Option<PathBuf>,
    /// Random split fractions instead of id files, e.g. 0.8,0.1,0.1
    /// (a value starting with `-` is taken as the value, and refused as a
    /// fraction outside [0, 1]).
    #[arg(long, allow_hyphen_values = true, conflicts_with_all = ["train_ids", "valid_ids", "test_ids"])]
    pub split: Option<String>,
    /// Seed of --split.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Node count (must equal the feature rows; without features, nodes
    /// beyond the largest id are isolated).
    #[arg(long)]
    pub num_nodes: Option<u64>,
    /// Renumber non-contiguous ids (SNAP) to 0..N in sorted order; the
    /// original ids are kept in the store. Features, labels and split ids
    /// are then indexed by original id.
    #[arg(long, conflicts_with = "num_nodes")]
    pub remap: bool,
    /// Original ids of the nodes (.npy or one per line, in node order),
    /// kept in the store like --remap keeps them (re-importing an export
    /// of a remapped store).
    #[arg(long, conflicts_with = "remap")]
    pub orig_ids: Option<PathBuf>,
    /// Options of every format.
    #[command(flatten)]
    pub common: CommonArgs,
}

/// `ginex-import ogb`.
#[derive(Debug, Args)]
pub struct OgbArgs {
    /// The dataset directory (holding raw/ and split/).
    pub dir: PathBuf,
    /// Which split/<name> to import (default: the only one).
    #[arg(long)]
    pub split_name: Option<String>,
    /// Add reverse edges: auto (ogbn-products and ogbn-proteins store each
    /// undirected edge once), yes or no. In a heterogeneous dataset, yes
    /// (like --undirected) symmetrises relations within one type and adds
    /// dst:rev_<rel>:src for the others.
    #[arg(long, default_value = "auto")]
    pub add_inverse_edges: String,
    /// Options of every format.
    #[command(flatten)]
    pub common: CommonArgs,
}

/// `ginex-import dgl`.
#[derive(Debug, Args)]
pub struct DglArgs {
    /// The metadata.json of the chunked graph.
    pub metadata: PathBuf,
    /// node_data key of the features.
    #[arg(long, default_value = "feat")]
    pub feat_key: String,
    /// node_data key of the labels.
    #[arg(long, default_value = "label")]
    pub label_key: String,
    /// node_data keys of the train/valid/test masks (or id lists).
    #[arg(long, default_value = "train_mask,val_mask,test_mask")]
    pub mask_keys: String,
    /// node_data key of the original node ids, kept in the store when present.
    #[arg(long, default_value = "orig_id")]
    pub orig_id_key: String,
    /// Number of classes (default: largest label + 1).
    #[arg(long)]
    pub num_classes: Option<u32>,
    /// Options of every format.
    #[command(flatten)]
    pub common: CommonArgs,
}

fn parse_split(s: &str) -> Result<[f64; 3]> {
    let err = || Error::invalid_argument(format!("--split {s:?}: expected three fractions"));
    let v: Vec<f64> = s
        .split(',')
        .map(|x| x.trim().parse::<f64>())
        .collect::<std::result::Result<_, _>>()
        .map_err(|_| err())?;
    let arr: [f64; 3] = v.try_into().map_err(|_| err())?;
    if let Some(f) = arr.iter().find(|f| !(0.0..=1.0).contains(*f)) {
        return Err(Error::invalid_argument(format!(
            "--split {s:?}: {f} is not a fraction: a fraction must be in [0, 1]"
        )));
    }
    if arr.iter().sum::<f64>() > 1.0 + 1e-9 {
        return Err(Error::invalid_argument(format!(
            "--split {s:?}: the fractions sum to {}; they must sum to at most 1",
            arr.iter().sum::<f64>()
        )));
    }
    Ok(arr)
}

fn print_report(out: &mut dyn Write, r: &ImportReport, secs: f64) -> Result<()> {
    let w = |e| Error::io("write", "<stdout>", e);
    writeln!(out, "imported {} (verified)", r.path.display()).map_err(w)?;
    writeln!(
        out,
        "  {} nodes, {} edges read, {} kept ({} duplicates, {} self-loops dropped)",
        r.nodes, r.edges_read, r.csc.edges_out, r.csc.duplicates_removed, r.csc.self_loops_removed
    )
    .map_err(w)?;
    for note in &r.notes {
        writeln!(out, "  note: {note}").map_err(w)?;
    }
    if r.edges_held_out > 0 {
        writeln!(
            out,
            "  {} edges held out for link prediction, {} left in the stored graph (ginex-dump shows the edge splits)",
            r.edges_held_out,
            r.csc.edges_out.saturating_sub(r.edges_held_out)
        )
        .map_err(w)?;
    }
    if let Some(d) = &r.layout {
        writeln!(out, "  {d}").map_err(w)?;
    }
    for (phase, d) in &r.phases {
        writeln!(out, "  {phase:<26} {:>9.2} s", d.as_secs_f64()).map_err(w)?;
    }
    writeln!(
        out,
        "  total {secs:.2} s, {:.2}M edges/s",
        r.edges_read as f64 / 1e6 / secs.max(1e-9)
    )
    .map_err(w)
}

/// Runs `ginex-import`.
pub fn run(cli: &ImportCli, out: &mut dyn Write) -> Result<()> {
    let started = Instant::now();
    let report = match &cli.command {
        ImportCommand::Files(a) => {
            let opts = FilesImport {
                edges: a.edges.clone(),
                features: a.features.clone(),
                feature_dim: a.feature_dim,
                labels: a.labels.clone(),
                num_classes: a.num_classes,
                split_files: [a.train_ids.clone(), a.valid_ids.clone(), a.test_ids.clone()],
                split: a.split.as_deref().map(parse_split).transpose()?,
                seed: a.seed,
                num_nodes: a.num_nodes,
                remap: a.remap,
                orig_ids: a.orig_ids.clone(),
                common: a.common.options()?,
            };
            import_files(&opts)?
        }
        ImportCommand::Ogb(a) => {
            let inverse = match a.add_inverse_edges.as_str() {
                "auto" => None,
                "yes" | "true" => Some(true),
                "no" | "false" => Some(false),
                other => {
                    return Err(Error::invalid_argument(format!(
                        "--add-inverse-edges {other:?}: expected auto, yes or no"
                    )))
                }
            };
            import_ogb(&OgbImport {
                dir: a.dir.clone(),
                split_name: a.split_name.clone(),
                add_inverse_edges: inverse,
                common: a.common.options()?,
            })?
        }
        ImportCommand::Dgl(a) => import_dgl(&DglImport {
            metadata: a.metadata.clone(),
            feat_key: a.feat_key.clone(),
            label_key: a.label_key.clone(),
            mask_keys: a
                .mask_keys
                .split(',')
                .map(|s| s.trim().to_string())
                .collect::<Vec<_>>()
                .try_into()
                .map_err(|keys: Vec<String>| {
                    Error::invalid_argument(format!(
                        "--mask-keys {:?}: expected three keys (train,valid,test), got {}",
                        a.mask_keys,
                        keys.len()
                    ))
                })?,
            orig_id_key: Some(a.orig_id_key.clone()),
            num_classes: a.num_classes,
            common: a.common.options()?,
        })?,
        ImportCommand::Reorder(a) => return reorder_existing(a, out),
        ImportCommand::Convert(a) => return convert_existing(a, out),
    };
    print_report(out, &report, started.elapsed().as_secs_f64())
}

/// `ginex-import reorder`: a copy of the store to renumber (hard links
/// where the file system allows, so no bytes are copied) goes through the
/// import's reorder step.
fn reorder_existing(a: &ReorderArgs, out: &mut dyn Write) -> Result<()> {
    use ginex::internals::import::locality::{decide, AUTO_MIN_PAGES};
    use ginex::internals::import::reorder::{
        check_target_free, node_order, write_reordered, Reorder,
    };
    use ginex::internals::store::Store;
    let w = |e| Error::io("write", "<stdout>", e);
    if a.reorder == Reorder::None {
        return Err(Error::invalid_argument(
            "--reorder none: a store already has its own order; use auto, bfs or degree",
        ));
    }
    check_target_free(&a.out)?;
    crate::create_parent_dirs(&a.out)?;
    let started = Instant::now();
    let src = Store::open(&a.store)?;
    let order = if a.reorder == Reorder::Auto {
        let (decision, order) = decide(&src, &a.layout.sample()?, AUTO_MIN_PAGES)?;
        writeln!(out, "{}: {decision}", a.store.display()).map_err(w)?;
        match order {
            Some(o) => o,
            None => {
                return writeln!(out, "  the layout does not cost pages; nothing written")
                    .map_err(w)
            }
        }
    } else {
        if src.schema().is_some() {
            return Err(Error::invalid_argument(format!(
                "{}: a typed store keeps its order: renumbering would break the node types' id ranges",
                a.store.display()
            )));
        }
        node_order(&src, a.reorder)?
    };
    let path = write_reordered(
        &src,
        &order,
        &a.out,
        ginex::internals::format::csc::DEFAULT_SEGMENT_BYTES,
    )?;
    Store::open(&path)?.verify()?;
    writeln!(
        out,
        "reordered {} -> {} (verified) in {:.2} s",
        a.store.display(),
        path.display(),
        started.elapsed().as_secs_f64()
    )
    .map_err(w)
}

/// `ginex-import convert`: the store's features in another dtype, as a
/// new store, verified.
fn convert_existing(a: &ConvertArgs, out: &mut dyn Write) -> Result<()> {
    use ginex::internals::import::convert::{convert_store, ConvertOptions};
    use ginex::internals::store::Store;
    let w = |e| Error::io("write", "<stdout>", e);
    crate::create_parent_dirs(&a.out)?;
    let done = convert_store(&ConvertOptions {
        store: a.store.clone(),
        out: a.out.clone(),
        dtype: ginex::Dtype::parse(&a.dtype)?,
        allow_nonfinite: a.allow_nonfinite,
        quiet: a.quiet,
    })?;
    let store = Store::open(&done.path)?;
    store.verify()?;
    writeln!(
        out,
        "converted {} ({}) -> {} ({}, verified) in {:.2} s",
        a.store.display(),
        done.from.describe(),
        done.path.display(),
        done.to.describe(),
        done.seconds
    )
    .map_err(w)?;
    if let Some(e) = store.q8_error() {
        writeln!(
            out,
            "  q8 error: max {:.3e} mean {:.3e} abs ({:.3e} and {:.3e} of the feature range)",
            e.max_abs,
            e.mean_abs(),
            e.relative(e.max_abs),
            e.relative(e.mean_abs())
        )
        .map_err(w)?;
    }
    Ok(())
}
