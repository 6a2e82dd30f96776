//! `ginex gen --raw`: the dataset as `.npy` files and an edge list instead
//! of a store.

use std::path::{Path, PathBuf};
use std::time::Instant;

use super::*;
use crate::error::{Error, Result};
use crate::format::pages::Dtype;
use crate::import::npy_write::{write_i64_array, NpyWriter};
use crate::io::durable::StagingDir;
use crate::store::ListSink;

/// Writes edges `[src, dst]` in CSC order as `.npy` or CSV.
struct RawEdgeSink {
    npy: Option<NpyWriter>,
    csv: Option<std::io::BufWriter<std::fs::File>>,
    csv_path: PathBuf,
    wide: bool,
    node: u64,
    buf: Vec<u8>,
}

impl ListSink for RawEdgeSink {
    fn push_list(&mut self, list: &[u64]) -> Result<()> {
        use std::io::Write;
        let dst = self.node;
        self.node += 1;
        self.buf.clear();
        if let Some(npy) = &mut self.npy {
            for &src in list {
                if self.wide {
                    self.buf.extend_from_slice(&(src as i64).to_le_bytes());
                    self.buf.extend_from_slice(&(dst as i64).to_le_bytes());
                } else {
                    self.buf.extend_from_slice(&(src as i32).to_le_bytes());
                    self.buf.extend_from_slice(&(dst as i32).to_le_bytes());
                }
            }
            npy.write(&self.buf, 2 * list.len() as u64)?;
        } else if let Some(csv) = &mut self.csv {
            for &src in list {
                writeln!(self.buf, "{src},{dst}")
                    .map_err(|e| Error::io("write", &self.csv_path, e))?;
            }
            csv.write_all(&self.buf)
                .map_err(|e| Error::io("write", &self.csv_path, e))?;
        }
        Ok(())
    }
}

/// Writes the dataset as raw files into the directory `dir` (which must not
/// exist; created atomically like a store): `features.npy`, `labels.npy`,
/// `edges.npy` or `edges.csv`, `train_ids.npy`, `valid_ids.npy`,
/// `test_ids.npy` and `meta.json`. bf16 features are written as `<f4`
/// holding the bf16-rounded values, so importing them as bf16 is exact.
pub fn generate_raw(
    p: &SynthParams,
    dir: &Path,
    edges: RawEdgeFormat,
    progress: &dyn Progress,
) -> Result<SynthReport> {
    p.validate()?;
    super::check_space(p, dir, Some(edges))?;
    let staging = StagingDir::create(dir)?;
    let root = staging.path().to_path_buf();
    let mut phases = Vec::new();
    let started = Instant::now();
    let planted = Planted::new(p);
    phases.push(("plant classes", started.elapsed()));

    let wide = p.nodes > i32::MAX as u64;
    let mut sink = RawEdgeSink {
        npy: None,
        csv: None,
        csv_path: root.join("edges.csv"),
        wide,
        node: 0,
        buf: Vec::new(),
    };
    match edges {
        RawEdgeFormat::Npy => {
            sink.npy = Some(NpyWriter::create(
                &root.join("edges.npy"),
                if wide { "<i8" } else { "<i4" },
                &[2],
            )?)
        }
        RawEdgeFormat::Csv => {
            use std::io::Write;
            let f = std::fs::File::options()
                .write(true)
                .create_new(true)
                .open(&sink.csv_path)
                .map_err(|e| Error::io("create", &sink.csv_path, e))?;
            let mut w = std::io::BufWriter::with_capacity(1 << 20, f);
            w.write_all(b"src,dst\n")
                .map_err(|e| Error::io("write", &sink.csv_path, e))?;
            sink.csv = Some(w);
        }
    }
    let stats = build_topology(
        p,
        &planted,
        &root.join("scratch"),
        &mut sink,
        progress,
        &mut phases,
    )?;
    if let Some(npy) = sink.npy.take() {
        npy.finish()?;
    }
    if let Some(csv) = sink.csv.take() {
        let f = csv
            .into_inner()
            .map_err(|e| Error::io("write", &sink.csv_path, e.into_error()))?;
        f.sync_all()
            .map_err(|e| Error::io("fsync", &sink.csv_path, e))?;
    }

    let started = Instant::now();
    let (descr, export) = match p.dtype {
        Dtype::F16 => ("<f2", Dtype::F16),
        Dtype::F32 | Dtype::Bf16 | Dtype::Q8 => ("<f4", Dtype::F32),
    };
    let mut features = NpyWriter::create(&root.join("features.npy"), descr, &[u64::from(p.dim)])?;
    let mut values = Vec::new();
    let mut exported = Vec::new();
    for_each_feature_block(p, &planted, progress, |bytes, count, _| {
        if export == p.dtype {
            return features.write(bytes, count * u64::from(p.dim));
        }
        // bf16 or q8 store dtype: export the rounded values as f32.
        values.resize(count as usize * p.dim as usize, 0f32);
        p.dtype.decode_to_f32(p.dim as usize, bytes, &mut values);
        exported.resize(values.len() * 4, 0u8);
        Dtype::F32.encode_f32(p.dim as usize, &values, &mut exported);
        features.write(&exported, values.len() as u64)
    })?;
    features.finish()?;
    phases.push(("features", started.elapsed()));

    let started = Instant::now();
    let labels: Vec<i64> = labels(p, &planted).into_iter().map(i64::from).collect();
    write_i64_array(&root.join("labels.npy"), &labels)?;
    let s = splits(p);
    for (name, list) in [
        ("train_ids.npy", &s.train),
        ("valid_ids.npy", &s.valid),
        ("test_ids.npy", &s.test),
    ] {
        let ids: Vec<i64> = list.iter().map(|&v| v as i64).collect();
        write_i64_array(&root.join(name), &ids)?;
    }
    let meta = serde_json::json!({
        "num_nodes": p.nodes,
        "num_edges": stats.edges_out,
        "num_classes": p.classes,
        "dim": p.dim,
        "dtype": p.dtype.name(),
        "seed": p.seed,
        "avg_degree": p.avg_degree,
        "homophily": p.homophily,
        "feature_noise": p.feature_noise,
        "split": p.split,
        "edges": match edges { RawEdgeFormat::Npy => "edges.npy", RawEdgeFormat::Csv => "edges.csv" },
    });
    let meta_path = root.join("meta.json");
    std::fs::write(
        &meta_path,
        serde_json::to_vec_pretty(&meta).unwrap_or_default(),
    )
    .map_err(|e| Error::io("write", &meta_path, e))?;
    std::fs::File::open(&meta_path)
        .and_then(|f| f.sync_all())
        .map_err(|e| Error::io("fsync", &meta_path, e))?;
    let path = staging.commit()?;
    phases.push(("labels + splits + commit", started.elapsed()));
    Ok(report(p, stats, phases, path))
}
