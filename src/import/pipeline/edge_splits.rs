//! Edge splits at import (format/edge-splits.md): a random transductive
//! split (`--edge-split`, the GAE protocol) or explicit files
//! (`--train-edges`, `--valid-edges`, `--test-edges`, optional negatives,
//! the OGB `ogbl-citation2` protocol). The held-out edges are taken out of
//! the CSC while its lists stream to the topology writer ([`SplitSink`]);
//! the random split's negatives are sampled afterwards against the whole
//! graph (the written CSC plus the held-out edges); then the builder
//! writes the file.

use std::collections::HashSet;
use std::fs::File;
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::format::csc::IndexWidth;
use crate::format::edge_splits::{edge_key, EdgeSplit, EdgeSplits, Negatives};
use crate::format::header::FileKind;
use crate::format::manifest::store_file_name;
use crate::import::npy::NpyFile;
use crate::import::remap::IdMap;
use crate::io::read::{open, read_exact_at};
use crate::rng::{purpose_key, stream_seed, stream_seed_keyed, Wyrand};
use crate::store::{read_checked_file, ListSink, StoreBuilder};

use super::edge_input::{typed_id, EdgeEnds};
use super::{bad, edges_from, node_id, EdgeInput};
use crate::format::schema::Schema;

/// Random-stream purpose of the split decision of an edge.
const PURPOSE_EDGE_SPLIT: u64 = 41;
/// Random-stream purpose of the negative pairs.
const PURPOSE_NEGATIVE: u64 = 42;

/// Where an import's edge splits come from.
#[derive(Debug, Clone, PartialEq)]
pub enum EdgeSplitSource {
    /// `--edge-split TRAIN,VALID,TEST [--split-seed S]`: each edge (each
    /// pair of an undirected graph) goes to valid with probability VALID,
    /// to test with probability TEST, else it stays a training edge; one
    /// random non-edge negative per held-out edge.
    Random {
        /// Train, valid and test fractions (summing to 1).
        fractions: [f64; 3],
        /// Seed of the split and the negatives.
        seed: u64,
    },
    /// Explicit edge files.
    Files(EdgeSplitFiles),
}

/// `--train-edges`, `--valid-edges`, `--test-edges` and their negatives.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EdgeSplitFiles {
    /// Training positives (default: every edge of the CSC).
    pub train: Option<PathBuf>,
    /// Validation edges.
    pub valid: PathBuf,
    /// Test edges.
    pub test: PathBuf,
    /// Validation negatives, (P, K) destinations.
    pub valid_negatives: Option<PathBuf>,
    /// Test negatives, (P, K) destinations.
    pub test_negatives: Option<PathBuf>,
    /// The edge input already leaves the valid and test edges out (the
    /// layout of OGB's `ogbl-*` datasets and of `ginex-export`): each must
    /// then be absent from it, instead of present.
    pub held_out_excluded: bool,
}

impl EdgeSplitSource {
    /// Parses `--edge-split` (`0.85,0.05,0.10`).
    pub fn random(text: &str, seed: u64) -> Result<Self> {
        let err = |why: &str| {
            Error::invalid_argument(format!(
                "--edge-split {text:?}: {why}; expected three fractions TRAIN,VALID,TEST summing to 1, e.g. 0.85,0.05,0.10"
            ))
        };
        let v: Vec<f64> = text
            .split(',')
            .map(|x| x.trim().parse::<f64>())
            .collect::<std::result::Result<_, _>>()
            .map_err(|_| err("not a list of numbers"))?;
        let fractions: [f64; 3] = v.try_into().map_err(|_| err("not three fractions"))?;
        if fractions.iter().any(|f| !(0.0..=1.0).contains(f)) {
            return Err(err("each fraction must be in [0, 1]"));
        }
        if (fractions.iter().sum::<f64>() - 1.0).abs() > 1e-6 {
            return Err(err(
                "the fractions do not sum to 1 (every edge not held out is a training edge)",
            ));
        }
        if fractions[1] + fractions[2] <= 0.0 {
            return Err(err("nothing would be held out"));
        }
        Ok(EdgeSplitSource::Random { fractions, seed })
    }
}

/// The relation of a typed graph an edge split is of (`--target-relation
/// SRC:REL:DST`): only its edges are split (held out, or listed), the
/// others all stay in the graph; its split files hold type-local ids, as
/// the relation's own edge files do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SplitRelation {
    /// Its index in the schema.
    pub index: u32,
    /// Its canonical name.
    pub name: String,
    /// Its source and destination types.
    pub ends: EdgeEnds,
}

impl SplitRelation {
    /// The relation `text` of `schema` (None: a homogeneous graph), or
    /// why there is none: `text` is required on a typed graph and refused
    /// on a homogeneous one; it must name one of the schema's relations.
    pub fn resolve(schema: Option<&Schema>, text: Option<&str>) -> Result<Option<SplitRelation>> {
        let (schema, text) = match (schema, text) {
            (None, None) => return Ok(None),
            (None, Some(t)) => {
                return Err(Error::invalid_argument(format!(
                    "--target-relation {t}: the graph is homogeneous (one node type, no relations); an edge split of one relation needs a typed graph (ginex-import dgl or ogb of a heterogeneous dataset)"
                )))
            }
            (Some(s), t) => (s, t),
        };
        let names: Vec<String> = schema
            .relations
            .iter()
            .map(|r| schema.canonical(r))
            .collect();
        let Some(text) = text else {
            return Err(Error::invalid_argument(format!(
                "the graph is typed: an edge split is of one relation; give --target-relation SRC:REL:DST, one of {}",
                names.join(", ")
            )));
        };
        let r = names.iter().position(|n| n == text).ok_or_else(|| {
            Error::invalid_argument(format!(
                "--target-relation {text}: the graph has no such relation; its relations: {}",
                names.join(", ")
            ))
        })?;
        let rel = &schema.relations[r];
        let ty = |t: u32| {
            let t = &schema.node_types[t as usize];
            (t.name.clone(), t.offset, t.count)
        };
        Ok(Some(SplitRelation {
            index: r as u32,
            name: text.to_string(),
            ends: EdgeEnds {
                src: ty(rel.src),
                dst: ty(rel.dst),
            },
        }))
    }

    fn src_ids(&self) -> std::ops::Range<u64> {
        self.ends.src.1..self.ends.src.1 + self.ends.src.2
    }

    fn dst_ids(&self) -> std::ops::Range<u64> {
        self.ends.dst.1..self.ends.dst.1 + self.ends.dst.2
    }

    /// The positive edge `s -> d` is, source type end first: itself when
    /// it is an edge of the relation, its reverse when `undirected` and
    /// the reverse is; None for an edge of another relation.
    fn oriented(&self, s: u64, d: u64, undirected: bool) -> Option<(u64, u64)> {
        let (src, dst) = (self.src_ids(), self.dst_ids());
        if src.contains(&s) && dst.contains(&d) {
            Some((s, d))
        } else if undirected && src.contains(&d) && dst.contains(&s) {
            Some((d, s))
        } else {
            None
        }
    }
}

/// How the ids of split files become store ids: global ids (through the
/// import's id map), or a relation's type-local ids.
#[derive(Clone, Copy)]
enum Ids<'a> {
    Global(u64, Option<&'a IdMap>),
    Typed(&'a SplitRelation),
}

impl Ids<'_> {
    /// The store id of an edge source (`src`) or destination.
    fn id(&self, raw: i128, src: bool, path: &Path, at: u64, what: &str) -> Result<u64> {
        match *self {
            Ids::Global(n, map) => node_id(raw, n, map, path, at, what),
            Ids::Typed(r) => {
                let ty = if src { &r.ends.src } else { &r.ends.dst };
                typed_id(raw, ty, path, at, &format!("{what} (of {})", r.name))
            }
        }
    }
}

/// The edges of one split file: store ids and their 1-based rows.
#[derive(Debug)]
struct Listed {
    path: PathBuf,
    edges: Vec<(u64, u64)>,
    rows: Vec<u64>,
}

/// Reads one split edge file (as `--edges`: text, or `.npy` of shape
/// (E, 2) or (2, E); a (2, 2) array is read as (E, 2), one edge a row).
fn read_listed(path: &Path, ids: Ids) -> Result<Listed> {
    let input = EdgeInput::from_path(path)?;
    let (mut edges, mut rows) = (Vec::new(), Vec::new());
    edges_from(&input, &mut |s, d, at| {
        edges.push((
            ids.id(s, true, path, at, "edge source")?,
            ids.id(d, false, path, at, "edge target")?,
        ));
        rows.push(at);
        Ok(())
    })?;
    if edges.is_empty() {
        return Err(bad(
            path,
            None,
            "holds no edges; a split edge file needs at least one",
        ));
    }
    Ok(Listed {
        path: path.to_path_buf(),
        edges,
        rows,
    })
}

/// Refuses an edge listed twice in one file or in two files (on an
/// undirected graph `(u, v)` and `(v, u)` are one edge), naming both rows.
fn check_disjoint(files: &[&Listed], undirected: bool) -> Result<()> {
    let mut keys: Vec<((u64, u64), usize, usize)> = Vec::new();
    for (f, l) in files.iter().enumerate() {
        for (i, &(s, d)) in l.edges.iter().enumerate() {
            keys.push((edge_key(undirected, s, d), f, i));
        }
    }
    keys.sort_unstable();
    for w in keys.windows(2) {
        let [(k, f0, i0), (k1, f1, i1)] = match w {
            [x, y] => [*x, *y],
            _ => continue,
        };
        if k != k1 {
            continue;
        }
        let (Some(a), Some(b)) = (files.get(f0), files.get(f1)) else {
            continue;
        };
        let (row0, row1) = (
            a.rows.get(i0).copied().unwrap_or(0),
            b.rows.get(i1).copied().unwrap_or(0),
        );
        let what = if undirected {
            "the undirected edge"
        } else {
            "the edge"
        };
        return Err(if f0 == f1 {
            bad(
                &b.path,
                Some(row1),
                format!(
                    "{what} {} - {} repeats row {row0}; each edge may be listed once",
                    k.0, k.1
                ),
            )
        } else {
            bad(
                &b.path,
                Some(row1),
                format!(
                    "{what} {} - {} is also in {} (row {row0}); the splits must not overlap",
                    k.0,
                    k.1,
                    a.path.display()
                ),
            )
        });
    }
    Ok(())
}

/// Reads a negatives file: `.npy` of shape (P, K), integer destination
/// ids whose source is their positive's, or (P, K, 2), (source,
/// destination) pairs; one row per positive of `of`.
fn read_negatives(path: &Path, of: &Listed, ids: Ids) -> Result<Negatives> {
    let f = NpyFile::open(path)?;
    let p = of.edges.len() as u64;
    let (rows, k, pairs) = match f.header.shape.as_slice() {
        [rows, k] if !f.header.fortran_order => (*rows, *k, false),
        [rows, k, 2] if !f.header.fortran_order => (*rows, *k, true),
        s => {
            return Err(bad(
                path,
                None,
                format!(
                    "negatives have shape {s:?}{}; expected (P, K) in C order, K destination candidates for each of the {p} edges of {} (or (P, K, 2): source-destination pairs)",
                    if f.header.fortran_order { " in Fortran order" } else { "" },
                    of.path.display()
                ),
            ))
        }
    };
    if rows != p || k == 0 {
        return Err(bad(
            path,
            None,
            format!(
                "negatives have shape ({rows}, {k}) but {} holds {p} edges; expected ({p}, K) with K >= 1 (one row of K candidates per edge)",
                of.path.display()
            ),
        ));
    }
    let (mut raw, mut vals) = (Vec::new(), Vec::new());
    let width = if pairs { 2 } else { 1 };
    let mut dst = Vec::with_capacity((p * k) as usize);
    let mut src = Vec::with_capacity(if pairs { (p * k) as usize } else { 0 });
    let total = p * k * width;
    for first in (0..total).step_by(1 << 20) {
        let c = (1u64 << 20).min(total - first) as usize;
        if !f.read_ints(first, c, &mut raw, &mut vals)? {
            return Err(bad(
                path,
                None,
                "negatives must be integer node ids, the array holds floats",
            ));
        }
        for (i, &v) in vals.iter().enumerate() {
            let at = first + i as u64;
            let row = at / (k * width) + 1;
            let src_end = pairs && at % 2 == 0;
            let id = ids.id(v, src_end, path, row, "negative")?;
            if src_end {
                src.push(id);
            } else {
                dst.push(id);
            }
        }
    }
    let k = k as usize;
    if !pairs {
        src = of
            .edges
            .iter()
            .flat_map(|&(s, _)| std::iter::repeat_n(s, k))
            .collect();
    }
    Ok(Negatives { k, src, dst })
}

/// What the CSC stream does with each edge.
enum Plan {
    /// The random split: the decision is a hash of the edge (the pair).
    Random {
        fractions: [f64; 3],
        key: u64,
        seed: u64,
        /// Held-out positives found so far: valid, test.
        held: [Vec<(u64, u64)>; 2],
    },
    /// Listed edges.
    Files(Box<FilePlan>),
}

/// The plan of listed edges (see [`Plan::Files`]).
struct FilePlan {
    /// train (if given), valid, test.
    lists: [Option<Listed>; 3],
    negatives: [Option<Negatives>; 2],
    /// Directed edges to remove: (dst, src, split 1|2, index), sorted.
    absent: Vec<(u64, u64, usize, usize)>,
    /// Training edges that must be kept: (dst, src, index), sorted.
    present: Vec<(u64, u64, usize)>,
    /// Whether each valid and test edge was found in the graph.
    found: [Vec<bool>; 2],
    /// The edge input leaves the held-out edges out.
    excluded: bool,
    train_found: Vec<bool>,
    next_absent: usize,
    next_present: usize,
}

/// The edge splits of one import, from planning to the written file.
pub struct SplitBuild {
    plan: Plan,
    undirected: bool,
    n: u64,
    /// Edges kept in the CSC and edges removed from it.
    kept: u64,
    removed: u64,
    /// The edge input, named when the split leaves no edges.
    source: PathBuf,
    /// The relation split on a typed graph.
    relation: Option<SplitRelation>,
}

impl SplitBuild {
    /// Plans the splits of a graph of `n` nodes (of `relation` on a typed
    /// graph); explicit files are read and checked here, before any edge
    /// is spilled.
    pub fn new(
        source: &EdgeSplitSource,
        (n, undirected): (u64, bool),
        map: Option<&IdMap>,
        relation: Option<SplitRelation>,
        edges_input: &Path,
    ) -> Result<Self> {
        let ids = match &relation {
            Some(r) => Ids::Typed(r),
            None => Ids::Global(n, map),
        };
        let plan = match source {
            EdgeSplitSource::Random { fractions, seed } => Plan::Random {
                fractions: *fractions,
                key: purpose_key(*seed, PURPOSE_EDGE_SPLIT),
                seed: *seed,
                held: Default::default(),
            },
            EdgeSplitSource::Files(files) => Self::plan_files(files, undirected, ids)?,
        };
        Ok(SplitBuild {
            plan,
            undirected,
            n,
            kept: 0,
            removed: 0,
            source: edges_input.to_path_buf(),
            relation,
        })
    }

    fn plan_files(files: &EdgeSplitFiles, undirected: bool, ids: Ids) -> Result<Plan> {
        let train = files
            .train
            .as_deref()
            .map(|p| read_listed(p, ids))
            .transpose()?;
        let valid = read_listed(&files.valid, ids)?;
        let test = read_listed(&files.test, ids)?;
        let all: Vec<&Listed> = train.iter().chain([&valid, &test]).collect();
        check_disjoint(&all, undirected)?;
        let negatives = [
            files
                .valid_negatives
                .as_deref()
                .map(|p| read_negatives(p, &valid, ids))
                .transpose()?,
            files
                .test_negatives
                .as_deref()
                .map(|p| read_negatives(p, &test, ids))
                .transpose()?,
        ];
        let mut absent = Vec::new();
        for (split, l) in [(1, &valid), (2, &test)] {
            for (i, &(s, d)) in l.edges.iter().enumerate() {
                absent.push((d, s, split, i));
                if undirected && s != d {
                    absent.push((s, d, split, i));
                }
            }
        }
        absent.sort_unstable();
        let mut present: Vec<(u64, u64, usize)> = train.as_ref().map_or(Vec::new(), |t| {
            t.edges
                .iter()
                .enumerate()
                .map(|(i, &(s, d))| (d, s, i))
                .collect()
        });
        present.sort_unstable();
        Ok(Plan::Files(Box::new(FilePlan {
            excluded: files.held_out_excluded,
            found: [
                vec![false; valid.edges.len()],
                vec![false; test.edges.len()],
            ],
            train_found: vec![false; train.as_ref().map_or(0, |t| t.edges.len())],
            lists: [train, Some(valid), Some(test)],
            negatives,
            absent,
            present,
            next_absent: 0,
            next_present: 0,
        })))
    }

    /// Filters the in-neighbor list of `dst` into `out` (the edges that
    /// stay in the CSC).
    fn filter(&mut self, dst: u64, list: &[u64], out: &mut Vec<u64>) {
        out.clear();
        let undirected = self.undirected;
        let relation = self.relation.as_ref();
        // The edges of the split relation (every edge without one), as
        // positives (source type end first).
        let scope = |s: u64| match relation {
            None => Some((s, dst)),
            Some(r) => r.oriented(s, dst, undirected),
        };
        let mut in_scope = 0u64;
        let mut kept_in_scope = 0u64;
        match &mut self.plan {
            Plan::Random {
                fractions,
                key,
                held,
                ..
            } => {
                let mut prev: Option<(u64, bool)> = None;
                for &s in list {
                    let pos = scope(s);
                    in_scope += u64::from(pos.is_some());
                    let keep = match prev {
                        Some((p, keep)) if p == s => keep, // a repeat of the edge
                        _ => {
                            let keep = if s == dst {
                                true // self-loops are never held out
                            } else if let Some(pos) = pos {
                                let (a, b) = edge_key(undirected, pos.0, pos.1);
                                let h = stream_seed_keyed(stream_seed_keyed(*key, a), b);
                                let u = (h >> 11) as f64 / (1u64 << 53) as f64;
                                let split = if u < fractions[0] {
                                    0
                                } else if u < fractions[0] + fractions[1] {
                                    1
                                } else {
                                    2
                                };
                                // Keyed by the pair: on an undirected graph
                                // both directions push it (deduplicated in
                                // `finish`), so a pair with one direction
                                // only is held out too.
                                // A relation's positive keeps its orientation.
                                let held_as = match relation {
                                    Some(r) if r.ends.src != r.ends.dst => pos,
                                    _ => (a, b),
                                };
                                if split > 0 {
                                    if let Some(h) = held.get_mut(split - 1) {
                                        h.push(held_as);
                                    }
                                }
                                split == 0
                            } else {
                                true // an edge of another relation
                            };
                            prev = Some((s, keep));
                            keep
                        }
                    };
                    if keep {
                        kept_in_scope += u64::from(pos.is_some());
                        out.push(s);
                    }
                }
            }
            Plan::Files(plan) => {
                let FilePlan {
                    absent,
                    present,
                    found,
                    train_found,
                    next_absent,
                    next_present,
                    ..
                } = &mut **plan;
                let start = *next_absent;
                while absent.get(*next_absent).is_some_and(|a| a.0 <= dst) {
                    *next_absent += 1;
                }
                let drop = absent.get(start..*next_absent).unwrap_or_default();
                let mut j = 0;
                for &s in list {
                    while drop.get(j).is_some_and(|a| a.1 < s) {
                        j += 1;
                    }
                    match drop.get(j) {
                        Some(&(d, src, split, i)) if d == dst && src == s => {
                            if let Some(f) = found.get_mut(split - 1).and_then(|f| f.get_mut(i)) {
                                *f = true;
                            }
                        }
                        _ => {
                            kept_in_scope += u64::from(scope(s).is_some());
                            out.push(s);
                        }
                    }
                }
                in_scope = list.iter().filter(|&&s| scope(s).is_some()).count() as u64;
                while let Some(&(d, s, i)) = present.get(*next_present) {
                    if d > dst {
                        break;
                    }
                    *next_present += 1;
                    if d == dst && list.binary_search(&s).is_ok() {
                        if let Some(f) = train_found.get_mut(i) {
                            *f = true;
                        }
                    }
                }
            }
        }
        self.kept += kept_in_scope;
        self.removed += in_scope - kept_in_scope;
    }

    /// Edges taken out of the CSC (every copy, both directions).
    pub fn removed(&self) -> u64 {
        self.removed
    }

    /// After the CSC is written: checks what only the whole stream shows,
    /// samples the random split's negatives and writes the file.
    pub fn finish(self, builder: &mut StoreBuilder) -> Result<EdgeSplits> {
        if self.kept == 0 {
            let of = self
                .relation
                .as_ref()
                .map_or(String::new(), |r| format!(" of {}", r.name));
            return Err(bad(
                &self.source,
                None,
                format!(
                    "the edge split leaves no edges{of} in the message-passing graph ({} held out); a link-prediction store needs training edges",
                    self.removed
                ),
            ));
        }
        let relation = self.relation.as_ref().map(|r| r.index);
        let (neg_src, neg_dst) = match &self.relation {
            Some(r) => (r.src_ids(), r.dst_ids()),
            None => (0..self.n, 0..self.n),
        };
        let undirected = self.undirected;
        let splits = match self.plan {
            Plan::Random {
                fractions,
                seed,
                held: [mut valid, mut test],
                ..
            } => {
                for list in [&mut valid, &mut test] {
                    list.sort_unstable();
                    list.dedup();
                }
                for (name, f, list) in [
                    ("valid", fractions[1], &valid),
                    ("test", fractions[2], &test),
                ] {
                    if f > 0.0 && list.is_empty() {
                        return Err(bad(
                            &self.source,
                            None,
                            format!(
                                "the random edge split put no edge in {name} (fraction {f}): the graph has too few edges for it"
                            ),
                        ));
                    }
                }
                let mut held: HashSet<(u64, u64)> = valid.iter().chain(&test).copied().collect();
                let negs = sample_negatives(
                    builder.staging_path(),
                    (self.n, neg_src, neg_dst),
                    undirected,
                    seed,
                    &mut held,
                    valid.len() + test.len(),
                )?;
                let (vn, tn) = negs.split_at(valid.len());
                let split = |pos: &[(u64, u64)], neg: &[(u64, u64)]| EdgeSplit {
                    src: pos.iter().map(|e| e.0).collect(),
                    dst: pos.iter().map(|e| e.1).collect(),
                    negatives: Some(Negatives {
                        k: 1,
                        src: neg.iter().map(|e| e.0).collect(),
                        dst: neg.iter().map(|e| e.1).collect(),
                    }),
                };
                EdgeSplits {
                    undirected,
                    train: None,
                    valid: split(&valid, vn),
                    test: split(&test, tn),
                    relation,
                }
            }
            Plan::Files(plan) => {
                let FilePlan {
                    lists: [train, valid, test],
                    negatives: [valid_neg, test_neg],
                    found,
                    train_found,
                    excluded,
                    ..
                } = *plan;
                for (l, found) in [&valid, &test].into_iter().zip(&found) {
                    let Some(l) = l else { continue };
                    if let Some(i) = found.iter().position(|&f| f == excluded) {
                        let (s, d) = l.edges.get(i).copied().unwrap_or_default();
                        let why = if excluded {
                            "is an edge of the graph, but --held-out-excluded says the edge input leaves the held-out edges out"
                        } else {
                            "is not an edge of the graph; held-out edges are taken out of it, so they must be in it (give --held-out-excluded when the edge input already leaves them out)"
                        };
                        return Err(bad(
                            &l.path,
                            l.rows.get(i).copied(),
                            format!(
                                "the held-out edge {s} -> {d} {why} ({})",
                                self.source.display()
                            ),
                        ));
                    }
                }
                if let (Some(t), Some(i)) = (&train, train_found.iter().position(|f| !f)) {
                    let (s, d) = t.edges.get(i).copied().unwrap_or_default();
                    return Err(bad(
                        &t.path,
                        t.rows.get(i).copied(),
                        format!(
                            "the training edge {s} -> {d} is not an edge of the graph ({}); training edges must be edges of the message-passing graph",
                            self.source.display()
                        ),
                    ));
                }
                let edges = |l: Option<Listed>, negatives| {
                    let l = l.unwrap_or(Listed {
                        path: PathBuf::new(),
                        edges: Vec::new(),
                        rows: Vec::new(),
                    });
                    EdgeSplit {
                        src: l.edges.iter().map(|e| e.0).collect(),
                        dst: l.edges.iter().map(|e| e.1).collect(),
                        negatives,
                    }
                };
                EdgeSplits {
                    undirected,
                    train: train.map(|t| edges(Some(t), None)),
                    valid: edges(valid, valid_neg),
                    test: edges(test, test_neg),
                    relation,
                }
            }
        };
        builder.write_edge_splits(&splits)?;
        Ok(splits)
    }
}

/// A [`ListSink`] that passes each list on without the held-out edges.
pub struct SplitSink<'a> {
    /// The topology writer (or another sink).
    pub inner: &'a mut dyn ListSink,
    /// The splits being made.
    pub split: &'a mut SplitBuild,
    /// The next node.
    pub node: u64,
    /// Scratch.
    pub kept: Vec<u64>,
}

impl ListSink for SplitSink<'_> {
    fn push_list(&mut self, list: &[u64]) -> Result<()> {
        let mut kept = std::mem::take(&mut self.kept);
        self.split.filter(self.node, list, &mut kept);
        self.node += 1;
        let r = self.inner.push_list(&kept);
        self.kept = kept;
        r
    }
}

/// `need` random non-edge pairs of a graph of `n` nodes (GAE protocol),
/// sources drawn from `srcs`, destinations from `dsts` (a relation's
/// types; every node without one): no self-loop, not an edge of the CSC
/// written in `staging` nor of `held` (the held-out positives), no pair
/// twice (on an undirected graph neither orientation). Deterministic from
/// `seed`.
fn sample_negatives(
    staging: &Path,
    (n, srcs, dsts): (u64, std::ops::Range<u64>, std::ops::Range<u64>),
    undirected: bool,
    seed: u64,
    held: &mut HashSet<(u64, u64)>,
    need: usize,
) -> Result<Vec<(u64, u64)>> {
    let csc = StagedCsc::open(staging, n)?;
    let mut slots: Vec<Option<(u64, u64)>> = vec![None; need];
    let mut draws = 0u64;
    let max_draws = 64 * need as u64 + 4096;
    // `held` grows with every pair drawn, so no pair is drawn twice.
    loop {
        let mut pending: Vec<(u64, u64, usize)> = Vec::new();
        for (i, slot) in slots.iter().enumerate() {
            if slot.is_some() {
                continue;
            }
            loop {
                if draws >= max_draws {
                    return Err(Error::invalid_argument(format!(
                        "the random edge split could not find {need} distinct non-edge pairs for negatives in {draws} draws: the graph of {n} nodes is too dense for the GAE protocol"
                    )));
                }
                let mut rng = Wyrand(stream_seed(seed, PURPOSE_NEGATIVE, draws));
                draws += 1;
                let a = srcs.start + rng.below(srcs.end - srcs.start);
                let b = dsts.start + rng.below(dsts.end - dsts.start);
                let key = edge_key(undirected, a, b);
                if a != b && held.insert(key) {
                    pending.push((b, a, i));
                    break;
                }
            }
        }
        if pending.is_empty() {
            break;
        }
        // Both directions on an undirected graph (its CSC is symmetric when
        // the import mirrored it, but not necessarily with
        // --undirected-splits).
        let mut queries = pending.clone();
        if undirected {
            queries.extend(pending.iter().map(|&(b, a, i)| (a, b, i)));
        }
        queries.sort_unstable();
        let mut rejected = vec![false; need];
        for (&(_, _, i), edge) in queries.iter().zip(csc.contains_sorted(&queries)?) {
            if edge {
                if let Some(r) = rejected.get_mut(i) {
                    *r = true;
                }
            }
        }
        for &(b, a, i) in &pending {
            if !rejected.get(i).copied().unwrap_or(true) {
                if let Some(s) = slots.get_mut(i) {
                    *s = Some((a, b));
                }
            }
        }
    }
    Ok(slots.into_iter().flatten().collect())
}

/// The CSC written into a staging directory, read back for membership
/// queries (the store is not committed yet, so there is no `Store`).
struct StagedCsc {
    indptr: Vec<u64>,
    indices: File,
    path: PathBuf,
    width: IndexWidth,
}

impl StagedCsc {
    fn open(staging: &Path, n: u64) -> Result<Self> {
        let ipath = staging.join(store_file_name(FileKind::Indptr));
        let indptr = read_checked_file(&ipath, FileKind::Indptr)?
            .payload
            .chunks_exact(8)
            .map(|c| crate::format::bytes::le_u64(c, 0))
            .collect::<Vec<u64>>();
        if indptr.len() as u64 != n + 1 {
            return Err(Error::internal(format!(
                "{}: {} offsets for {n} nodes",
                ipath.display(),
                indptr.len()
            )));
        }
        let path = staging.join(store_file_name(FileKind::Indices));
        Ok(StagedCsc {
            indptr,
            indices: open(&path)?,
            path,
            width: IndexWidth::for_nodes(n),
        })
    }

    /// Whether each `(dst, src, _)` of `queries` (sorted) is an edge.
    fn contains_sorted(&self, queries: &[(u64, u64, usize)]) -> Result<Vec<bool>> {
        let mut out = Vec::with_capacity(queries.len());
        let (mut buf, mut list) = (Vec::new(), Vec::new());
        let mut loaded = None;
        for &(d, s, _) in queries {
            if loaded != Some(d) {
                let lo = self.indptr.get(d as usize).copied().unwrap_or(0);
                let hi = self.indptr.get(d as usize + 1).copied().unwrap_or(lo);
                buf.resize((hi - lo) as usize * self.width.bytes(), 0);
                read_exact_at(
                    &self.indices,
                    &self.path,
                    self.width.edge_file_offset(lo),
                    &mut buf,
                )?;
                list.clear();
                self.width.decode(&buf, &mut list);
                loaded = Some(d);
            }
            out.push(list.binary_search(&s).is_ok());
        }
        Ok(out)
    }
}
