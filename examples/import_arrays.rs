//! Build a store from vectors in memory: an edge list, a feature matrix,
//! labels and a split, through `StoreBuilder`; then open it, verify it and
//! run one epoch of batches over it.
//!
//! ```text
//! cargo run -p ginex --example import_arrays
//! ```
//!
//! For data already in files (`.npy` arrays, CSV / TSV edge lists, OGB and
//! DGL datasets) use `ginex::import_files` and the other importers (or the
//! `ginex-import` tool), which also check every input value and build the
//! topology out of core.

use ginex::{Dtype, FeatureLayout, ListSink, Loader, Splits, Store, StoreBuilder, StoreSpec};

/// A tiny deterministic random stream (the example needs no dependency).
struct Lcg(u64);
impl Lcg {
    fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        self.0 >> 33
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    fn unit(&mut self) -> f32 {
        self.next() as f32 / (1u64 << 31) as f32 - 0.5
    }
}

fn main() -> ginex::Result<()> {
    // A graph of two communities: most edges stay inside one; features are
    // the community's centre plus noise; the label is the community.
    let n: u64 = 1_200;
    let dim = 8usize;
    let mut rng = Lcg(7);
    let community = |v: u64| (v % 2) as i32;
    let mut edges: Vec<(u64, u64)> = Vec::new(); // (source, destination)
    for v in 0..n {
        for _ in 0..6 {
            let mut u = rng.below(n);
            if rng.below(10) < 8 && community(u) != community(v) {
                u = (u + 1) % n; // the same community
            }
            edges.push((u, v));
        }
    }
    let mut features = vec![0f32; n as usize * dim];
    for v in 0..n {
        for j in 0..dim {
            let centre = if (j % 2) as i32 == community(v) {
                1.0
            } else {
                0.0
            };
            features[v as usize * dim + j] = centre + rng.unit();
        }
    }
    let labels: Vec<i32> = (0..n).map(community).collect();
    let splits = Splits {
        train: (0..n).filter(|v| v % 10 < 6).collect(),
        valid: (0..n).filter(|v| v % 10 == 6 || v % 10 == 7).collect(),
        test: (0..n).filter(|v| v % 10 >= 8).collect(),
    };

    // The store wants in-neighbor lists in node order, each sorted.
    let mut in_neighbors = vec![Vec::new(); n as usize];
    for &(u, v) in &edges {
        in_neighbors[v as usize].push(u);
    }
    for list in &mut in_neighbors {
        list.sort_unstable();
        list.dedup();
    }

    let tmp = tempfile::tempdir().map_err(|e| ginex::Error::io("create", "a temp dir", e))?;
    let path = tmp.path().join("arrays");
    let layout = FeatureLayout::new(dim as u32, Dtype::F32)?;
    let mut builder = StoreBuilder::create(&path, StoreSpec::new(n, layout))?;
    let mut rows = builder.feature_writer()?;
    let mut bytes = vec![0u8; features.len() * Dtype::F32.size()];
    Dtype::F32.encode_f32(dim, &features, &mut bytes);
    rows.push_rows(&bytes)?;
    builder.add_features(rows)?;
    let mut topology = builder.topology_writer()?;
    for list in &in_neighbors {
        topology.push_list(list)?;
    }
    builder.add_topology(topology)?;
    builder.write_labels(&labels, 2)?;
    builder.write_splits(&splits)?;
    builder.finish()?; // atomic: the store appears whole or not at all

    let store = Store::open(&path)?;
    let report = store.verify()?;
    println!(
        "built {}: {} nodes, {} edges (after removing duplicates), {} files verified",
        store.dir().display(),
        store.num_nodes(),
        store.num_edges(),
        report.files
    );
    let mut row = vec![0f32; dim];
    store.read_feature_rows_f32(&[5], &mut row)?;
    assert_eq!(&row[..], &features[5 * dim..6 * dim]);

    // One epoch of batches over the new store.
    let mut loader = Loader::builder(&store)
        .fanouts([5, 5])
        .batch_size(64)
        .memory("128MiB")
        .build()?;
    let mut rows_seen = 0;
    for batch in &mut loader {
        rows_seen += batch?.ids.len();
    }
    let r = loader.report().expect("the epoch ended");
    println!(
        "one epoch: {} batches, {rows_seen} rows gathered, miss ratio {:.3}",
        r.batches.len(),
        r.miss_ratio()
    );
    Ok(())
}
