//! `ginex derive-features`: features for a featureless node type of a
//! typed store, as the mean of its neighbours' features over one relation
//! (the OGB-LSC MAG240M baseline's preprocessing: authors from the papers
//! they write, institutions from their authors).
//!
//! The result is a new store (stores are immutable once committed): the
//! same topology, labels, splits and original ids, and a feature matrix
//! with the derived type's rows inserted in type order. A node without a
//! neighbour over the relation gets a zero row.
//!
//! `Reduce::Zero` gives the type zero rows instead, with no neighbour read:
//! the input of a learnable embedding for a small featureless type
//! (`ginex train --embed TYPE` adds the embedding to these rows).
//!
//! Out of core: the derived rows are accumulated in `f32` for a range of
//! the type's nodes at a time, sized to fit `memory`, each range in one
//! streaming pass over the topology (segment runs, CRC-checked); the
//! neighbours' rows are read in batches of sorted ids (page-checked) and
//! the finished rows go to a scratch file in the staging directory, which
//! the feature stream then copies in place.

use std::io::{BufReader, BufWriter, Read, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::error::{Error, Result};
use crate::format::pages::FeatureLayout;
use crate::format::schema::Schema;
use crate::store::relation_counts::RelationCounts;
use crate::store::{Store, StoreBuilder, StoreSpec};

/// What to derive.
#[derive(Debug, Clone)]
pub struct DeriveOptions {
    /// The typed store to read.
    pub store: PathBuf,
    /// The new store to write (must not exist).
    pub out: PathBuf,
    /// The featureless node type to give features.
    pub target: String,
    /// The featured node type to average (`Reduce::Mean` only).
    pub from: String,
    /// The relation joining them, either direction (`Reduce::Mean` only).
    pub via: String,
    /// How the rows are made.
    pub reduce: Reduce,
    /// Memory budget in bytes.
    pub memory: u64,
}

/// How derived rows are made.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Reduce {
    /// The mean of the neighbours' rows.
    #[default]
    Mean,
    /// Zero rows (for a learnable embedding added by the model).
    Zero,
}

impl Reduce {
    /// Every reduction.
    pub const ALL: [Reduce; 2] = [Reduce::Mean, Reduce::Zero];

    /// Name on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Reduce::Mean => "mean",
            Reduce::Zero => "zero",
        }
    }

    /// Parses a name.
    pub fn parse(s: &str) -> Result<Reduce> {
        Error::parse_name(s, "reduction", &Reduce::ALL, Reduce::name)
    }
}

/// What a derivation did.
#[derive(Debug, Clone, Default)]
pub struct DeriveReport {
    /// The store written.
    pub path: PathBuf,
    /// Rows derived.
    pub rows: u64,
    /// Derived rows with no neighbour (zero rows).
    pub isolated: u64,
    /// Passes over the topology.
    pub passes: u64,
    /// Wall time per phase.
    pub phases: Vec<(&'static str, Duration)>,
}

/// Which way the relation runs from the derived type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Direction {
    /// `from -> target`: the target's in-neighbours.
    In,
    /// `target -> from`: the target's out-neighbours, found in the lists
    /// of the `from` nodes.
    Out,
}

struct Plan {
    target: (usize, u64, u64),
    from: (u64, u64),
    direction: Direction,
    /// Width of the derived rows as computed (the store's row format).
    dim: usize,
    /// The layout the derived rows are stored in: the `--from` type's
    /// (a mean of its rows), or for zero rows the store's row format.
    layout: FeatureLayout,
}

fn plan(store: &Store, schema: &Schema, o: &DeriveOptions) -> Result<Plan> {
    let find = |name: &str, flag: &str| {
        schema.type_index(name).ok_or_else(|| {
            let names: Vec<&str> = schema.node_types.iter().map(|t| t.name.as_str()).collect();
            Error::invalid_argument(format!(
                "{flag} {name:?}: {} has no such node type (it has {names:?})",
                store.dir().display()
            ))
        })
    };
    let t = find(&o.target, "--type")?;
    let tt = &schema.node_types[t];
    if tt.has_features() {
        return Err(Error::invalid_argument(format!(
            "--type {}: the type already has features",
            tt.name
        )));
    }
    if o.reduce == Reduce::Zero {
        return Ok(Plan {
            target: (t, tt.offset, tt.count),
            from: (0, 0),
            direction: Direction::In,
            dim: store.feature_dim() as usize,
            layout: store.layout(),
        });
    }
    let f = find(&o.from, "--from")?;
    let ft = &schema.node_types[f];
    if !ft.has_features() {
        return Err(Error::invalid_argument(format!(
            "--from {}: the type has no features to average (derive them first)",
            ft.name
        )));
    }
    let joins = |src: usize, dst: usize| {
        schema
            .relations
            .iter()
            .any(|r| r.name == o.via && r.src as usize == src && r.dst as usize == dst)
    };
    let direction = if joins(f, t) {
        Direction::In
    } else if joins(t, f) {
        Direction::Out
    } else {
        let names: Vec<String> = schema
            .relations
            .iter()
            .map(|r| schema.canonical(r))
            .collect();
        return Err(Error::invalid_argument(format!(
            "--via {}: no relation of that name joins {} and {} (the relations are {names:?})",
            o.via, tt.name, ft.name
        )));
    };
    Ok(Plan {
        target: (t, tt.offset, tt.count),
        from: (ft.offset, ft.count),
        direction,
        dim: store.feature_dim() as usize,
        layout: ft.layout().unwrap_or(store.layout()),
    })
}

/// Sums of neighbour rows for the target nodes `lo..hi`.
struct Accumulator<'s> {
    store: &'s Store,
    lo: u64,
    dim: usize,
    sums: Vec<f32>,
    counts: Vec<u32>,
    /// (target index - lo, neighbour id) pairs waiting for their rows.
    pending: Vec<(u32, u64)>,
    max_pending: usize,
    rows: Vec<f32>,
}

impl Accumulator<'_> {
    fn add(&mut self, target: u64, neighbour: u64) -> Result<()> {
        self.pending.push(((target - self.lo) as u32, neighbour));
        if self.pending.len() >= self.max_pending {
            self.flush()?;
        }
        Ok(())
    }

    /// Reads the pending neighbours' rows (sorted, each once) and adds them.
    fn flush(&mut self) -> Result<()> {
        if self.pending.is_empty() {
            return Ok(());
        }
        self.pending.sort_unstable_by_key(|p| p.1);
        let mut ids: Vec<u64> = self.pending.iter().map(|p| p.1).collect();
        ids.dedup();
        self.rows.resize(ids.len() * self.dim, 0.0);
        self.store.read_feature_rows_f32(&ids, &mut self.rows)?;
        let mut k = 0usize;
        for &(t, u) in &self.pending {
            while ids.get(k) != Some(&u) {
                k += 1;
            }
            let row = self
                .rows
                .get(k * self.dim..(k + 1) * self.dim)
                .unwrap_or_default();
            let t = t as usize;
            if let Some(sum) = self.sums.get_mut(t * self.dim..(t + 1) * self.dim) {
                sum.iter_mut().zip(row).for_each(|(s, x)| *s += x);
            }
            if let Some(c) = self.counts.get_mut(t) {
                *c += 1;
            }
        }
        self.pending.clear();
        Ok(())
    }
}

/// The ids of the sorted `list` in `a..b`.
fn id_window(list: &[u64], a: u64, b: u64) -> &[u64] {
    let i = list.partition_point(|&u| u < a);
    let j = list.partition_point(|&u| u < b);
    list.get(i..j).unwrap_or_default()
}

/// Zero rows of the plan's target type in `scratch` (a sparse file: no
/// bytes written); returns (isolated rows = all, passes = 0).
fn zero_rows(plan: &Plan, scratch: &Path) -> Result<(u64, u64)> {
    let file = std::fs::File::create(scratch).map_err(|e| Error::io("create", scratch, e))?;
    file.set_len(plan.target.2 * plan.dim as u64 * 4)
        .map_err(|e| Error::io("extend", scratch, e))?;
    Ok((plan.target.2, 0))
}

/// Derives the rows of the plan's target type into `scratch` (f32, in node
/// order); returns (isolated rows, passes).
fn derive_rows(store: &Store, plan: &Plan, memory: u64, scratch: &Path) -> Result<(u64, u64)> {
    let (_, t_off, t_count) = plan.target;
    let (f_off, f_count) = plan.from;
    let dim = plan.dim;
    // Half the budget for the sums, a quarter for pending pairs and rows.
    let per_target = (dim * 4 + 4) as u64;
    let range = ((memory / 2) / per_target).clamp(1, u64::from(u32::MAX));
    let max_pending = ((memory / 4) / (16 + dim as u64 * 4)).clamp(1024, 1 << 24) as usize;
    let file = std::fs::File::create(scratch).map_err(|e| Error::io("create", scratch, e))?;
    let mut out = BufWriter::new(file);
    let (mut isolated, mut passes) = (0u64, 0u64);
    let mut lo = t_off;
    while lo < t_off + t_count {
        let hi = (lo + range).min(t_off + t_count);
        let n = (hi - lo) as usize;
        let mut acc = Accumulator {
            store,
            lo,
            dim,
            sums: vec![0.0; n * dim],
            counts: vec![0; n],
            pending: Vec::new(),
            max_pending,
            rows: Vec::new(),
        };
        store.for_each_list(32 << 20, &mut |v, list| {
            match plan.direction {
                Direction::In if (lo..hi).contains(&v) => {
                    for &u in id_window(list, f_off, f_off + f_count) {
                        acc.add(v, u)?;
                    }
                }
                Direction::Out if (f_off..f_off + f_count).contains(&v) => {
                    for &t in id_window(list, lo, hi) {
                        acc.add(t, v)?;
                    }
                }
                _ => {}
            }
            Ok(())
        })?;
        acc.flush()?;
        for (sum, &c) in acc.sums.chunks_exact_mut(dim).zip(&acc.counts) {
            if c == 0 {
                isolated += 1;
            } else {
                sum.iter_mut().for_each(|s| *s /= c as f32);
            }
            for x in sum.iter() {
                out.write_all(&x.to_le_bytes())
                    .map_err(|e| Error::io("write", scratch, e))?;
            }
        }
        passes += 1;
        lo = hi;
    }
    out.flush().map_err(|e| Error::io("write", scratch, e))?;
    Ok((isolated, passes))
}

/// Derives features; see the module docs.
pub fn derive_features(o: &DeriveOptions) -> Result<DeriveReport> {
    let store = Store::open(&o.store)?;
    let schema = store.schema().cloned().ok_or_else(|| {
        Error::invalid_argument(format!(
            "{} is not a typed store (it has no node types to derive features for)",
            store.dir().display()
        ))
    })?;
    let plan = plan(&store, &schema, o)?;
    let mut report = DeriveReport::default();
    let spec = StoreSpec::new(store.num_nodes(), store.layout());
    let mut builder = StoreBuilder::create(&o.out, spec)?;
    let mut new_schema = schema.clone();
    if let Some(t) = new_schema.node_types.get_mut(plan.target.0) {
        t.dim = plan.layout.dim;
        t.dtype = Some(plan.layout.dtype);
    }
    builder.set_schema(new_schema.clone());

    let started = Instant::now();
    let scratch = builder.staging_path().join("derive-rows.f32");
    let (isolated, passes) = match o.reduce {
        Reduce::Mean => derive_rows(&store, &plan, o.memory, &scratch)?,
        Reduce::Zero => zero_rows(&plan, &scratch)?,
    };
    report.phases.push(("derive rows", started.elapsed()));
    report.rows = plan.target.2;
    report.isolated = isolated;
    report.passes = passes;

    let started = Instant::now();
    write_features(&store, &new_schema, &plan, &scratch, &mut builder)?;
    std::fs::remove_file(&scratch).map_err(|e| Error::io("remove", &scratch, e))?;
    report.phases.push(("features", started.elapsed()));

    let started = Instant::now();
    let mut topo = builder.topology_writer()?;
    let mut counting = crate::store::relation_counts::CountingSink {
        inner: &mut topo,
        counts: RelationCounts::new(&new_schema),
        next: 0,
    };
    store.for_each_list(32 << 20, &mut |_, list| {
        crate::store::ListSink::push_list(&mut counting, list)
    })?;
    let counts = counting.counts.counts().to_vec();
    builder.add_topology(topo)?;
    builder.set_relation_edges(&counts)?;
    if let Some(labels) = store.labels()? {
        builder.write_labels(&labels, store.num_classes())?;
    }
    if let Some(splits) = store.splits()? {
        builder.write_splits(&splits)?;
    }
    if let Some(ids) = store.original_ids()? {
        builder.write_original_ids(&ids)?;
    }
    let path = builder.finish()?;
    Store::open(&path)?.verify()?;
    report
        .phases
        .push(("topology + tables + verify", started.elapsed()));
    report.path = path;
    Ok(report)
}

/// Streams the new feature matrix: each featured type's rows in type
/// order, the old store's or (for the plan's target) the scratch file's
/// (row-format-wide `f32`, stored as the plan's layout).
fn write_features(
    store: &Store,
    schema: &Schema,
    plan: &Plan,
    scratch: &Path,
    builder: &mut StoreBuilder,
) -> Result<()> {
    let (derived, layout, dim) = (plan.target.0, plan.layout, plan.dim);
    let mut writer = builder.feature_writer()?;
    let block = 1u64 << 14;
    let (mut pages, mut raw) = (Vec::new(), Vec::new());
    for (i, t) in schema.node_types.iter().enumerate() {
        if !t.has_features() {
            continue;
        }
        if i == derived {
            let file = std::fs::File::open(scratch).map_err(|e| Error::io("open", scratch, e))?;
            let mut input = BufReader::new(file);
            let mut bytes = vec![0u8; dim * 4];
            let mut values = vec![0f32; dim];
            let mut row = vec![0u8; layout.row_bytes()];
            for _ in 0..t.count {
                input
                    .read_exact(&mut bytes)
                    .map_err(|e| Error::io("read", scratch, e))?;
                for (v, b) in values.iter_mut().zip(bytes.chunks_exact(4)) {
                    *v = f32::from_le_bytes([b[0], b[1], b[2], b[3]]);
                }
                layout.dtype.encode_f32(
                    layout.dim as usize,
                    &values[..layout.dim as usize],
                    &mut row,
                );
                writer.push_rows(&row)?;
            }
            continue;
        }
        let mut first = t.offset;
        while first < t.offset + t.count {
            let end = (first + block).min(t.offset + t.count);
            raw.clear();
            store.read_feature_range(first..end, &mut pages, &mut raw)?;
            writer.push_row_format(&raw)?;
            first = end;
        }
    }
    builder.add_features(writer)
}
