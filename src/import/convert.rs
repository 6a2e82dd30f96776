//! `ginex-import convert`: an existing store's features re-encoded in
//! another dtype (f32, f16, bf16, q8), into a new store.
//!
//! Stores are immutable once committed, so the result is a new store: the
//! same topology, labels, splits, edge splits and original ids, copied as
//! they are, and the feature matrix decoded to f32 and encoded again, a
//! block of rows at a time (bounded memory), through the import's feature
//! sink: NaN/inf and f16/bf16 overflow are refused naming the row and
//! column as an import refuses them; a q8 target records its measured
//! error against the source's (decoded) values. Nothing is re-imported from
//! the original input. The new store is staged and committed by
//! [`StoreBuilder`], so a failure leaves nothing at the target.

use std::path::PathBuf;
use std::time::Instant;

use crate::error::{Error, Result};
use crate::format::header::FileKind;
use crate::format::pages::{Dtype, FeatureLayout};
use crate::import::pipeline::FeatureSink;
use crate::import::reorder::check_target_free;
use crate::store::relation_counts::{CountingSink, RelationCounts};
use crate::store::{ListSink, Store, StoreBuilder, StoreSpec};

/// Rows read and re-encoded at a time (at most 8 MiB of f32 values).
fn block_rows(dim: u32) -> u64 {
    ((8u64 << 20) / (u64::from(dim) * 4).max(1)).max(1)
}

/// What to convert.
#[derive(Debug, Clone)]
pub struct ConvertOptions {
    /// The store to read (left as it is).
    pub store: PathBuf,
    /// The new store (must not exist).
    pub out: PathBuf,
    /// The dtype of every featured type's rows in the new store.
    pub dtype: Dtype,
    /// Keep NaN/inf (not with q8, which cannot store them).
    pub allow_nonfinite: bool,
    /// No progress bar.
    pub quiet: bool,
}

/// What [`convert_store`] did.
#[derive(Debug, Clone)]
pub struct Converted {
    /// The committed store.
    pub path: PathBuf,
    /// The source's row format.
    pub from: FeatureLayout,
    /// The new store's row format.
    pub to: FeatureLayout,
    /// Seconds spent.
    pub seconds: f64,
}

/// Writes `o.out`: the store `o.store` with its features in `o.dtype`.
pub fn convert_store(o: &ConvertOptions) -> Result<Converted> {
    check_target_free(&o.out)?;
    let started = Instant::now();
    let src = Store::open(&o.store)?;
    let schema = src.schema().cloned().map(|mut s| {
        for t in s.node_types.iter_mut().filter(|t| t.has_features()) {
            t.dtype = Some(o.dtype);
        }
        s
    });
    let layout = match &schema {
        Some(s) => s.row_format().unwrap_or(src.layout()),
        None => FeatureLayout::new(src.feature_dim(), o.dtype)?,
    };
    let unchanged = match (&schema, src.schema()) {
        (Some(new), Some(old)) => new == old,
        _ => layout == src.layout(),
    };
    if unchanged {
        return Err(Error::invalid_argument(format!(
            "{}: its features are {} already; nothing to convert",
            o.store.display(),
            o.dtype.name()
        )));
    }
    let mut builder = StoreBuilder::create(&o.out, StoreSpec::new(src.num_nodes(), layout))?;
    if let Some(s) = &schema {
        builder.set_schema(s.clone());
    }
    write_features(&src, o, &mut builder)?;

    let mut topo = builder.topology_writer()?;
    match &schema {
        Some(s) => {
            let mut counting = CountingSink {
                inner: &mut topo,
                counts: RelationCounts::new(s),
                next: 0,
            };
            src.for_each_list(32 << 20, &mut |_, list| counting.push_list(list))?;
            let counts = counting.counts.counts().to_vec();
            builder.add_topology(topo)?;
            builder.set_relation_edges(&counts)?;
        }
        None => {
            src.for_each_list(32 << 20, &mut |_, list| topo.push_list(list))?;
            builder.add_topology(topo)?;
        }
    }
    if let Some(labels) = src.labels()? {
        builder.write_labels(&labels, src.num_classes())?;
    }
    if let Some(splits) = src.splits()? {
        builder.write_splits(&splits)?;
    }
    if let Some(splits) = src.edge_splits()? {
        builder.write_edge_splits(&splits)?;
    }
    if let Some(ids) = src.original_ids()? {
        builder.write_original_ids(&ids)?;
    }
    let path = builder.finish()?;
    let to = Store::open(&path)?.layout();
    Ok(Converted {
        path,
        from: src.layout(),
        to,
        seconds: started.elapsed().as_secs_f64(),
    })
}

/// Streams every feature row of `src`, decoded to f32 and cut to its
/// type's dimension, into the new store's feature sink.
fn write_features(src: &Store, o: &ConvertOptions, builder: &mut StoreBuilder) -> Result<()> {
    let n = src.feature_rows();
    let mut sink = FeatureSink::new(builder.feature_writer()?, n, o.allow_nonfinite, o.quiet);
    let row = src.layout();
    let dim = row.dim as usize;
    // Each type's rows (or all rows of an untyped store): their first
    // row and count.
    let runs: Vec<(u64, u64)> = match src.schema() {
        Some(s) => {
            let mut first = 0;
            let mut runs = Vec::new();
            for t in s.node_types.iter().filter(|t| t.has_features()) {
                runs.push((first, t.count));
                first += t.count;
            }
            runs
        }
        None => vec![(0, n)],
    };
    let source = src.dir().join(crate::format::manifest::store_file_name(
        FileKind::FeaturePages,
    ));
    let (mut pages, mut raw, mut values, mut narrow) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for (first, count) in runs {
        let mut r = first;
        while r < first + count {
            let end = (r + block_rows(row.dim)).min(first + count);
            raw.clear();
            src.read_feature_range(r..end, &mut pages, &mut raw)?;
            values.resize((end - r) as usize * dim, 0f32);
            row.dtype.decode_to_f32(dim, &raw, &mut values);
            let type_dim = sink.dim() as usize;
            let rows: &[f32] = if type_dim == dim {
                &values
            } else {
                narrow.clear();
                for v in values.chunks_exact(dim) {
                    narrow.extend_from_slice(v.get(..type_dim).unwrap_or(v));
                }
                &narrow
            };
            sink.push_f32(rows, &source, r)?;
            r = end;
        }
    }
    if sink.rows() != n {
        return Err(Error::internal(format!(
            "{} feature rows converted of {n}",
            sink.rows()
        )));
    }
    builder.add_features(sink.into_writer())
}
