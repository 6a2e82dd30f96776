//! Iterate a `Loader` and compute something real without a deep-learning
//! framework: a mean-aggregation baseline (the parameter-free core of SGC /
//! GraphSAGE-mean) with a nearest-centroid classifier.
//!
//! ```text
//! cargo run -p ginex --example train_loop
//! ```
//!
//! Each batch's features are averaged along its sampled hops (input layer
//! first: `hops[0]` aggregates into the nodes `hops[1]` reads, the last hop
//! into the seeds); one pass over the training split learns a centroid per
//! class; the validation and test splits are classified by the nearest
//! centroid. The same with the seeds' own features alone shows what the
//! graph adds.

use ginex::{Batch, Loader, Policy, Split, Store};

/// `x` (`ids.len() × dim`) averaged along every hop: each target's new
/// value is the mean of itself and its sampled in-neighbors. Returns the
/// seeds' rows (`num_seeds × dim`).
fn aggregate(batch: &Batch) -> Vec<f32> {
    let dim = batch.dim;
    let mut h = batch.rows_f32();
    for hop in &batch.hops {
        let mut next = h[..hop.num_dst * dim].to_vec(); // the self term
        let mut count = vec![1f32; hop.num_dst];
        for (&s, &d) in hop.src.iter().zip(&hop.dst) {
            let (s, d) = (s as usize, d as usize);
            for j in 0..dim {
                next[d * dim + j] += h[s * dim + j];
            }
            count[d] += 1.0;
        }
        for (t, c) in count.iter().enumerate() {
            for v in &mut next[t * dim..(t + 1) * dim] {
                *v /= c;
            }
        }
        h = next;
    }
    h.truncate(batch.num_seeds * dim);
    h
}

/// Per-class sums and counts of seed representations.
struct Centroids {
    dim: usize,
    sums: Vec<f64>,
    counts: Vec<u64>,
}

impl Centroids {
    fn new(classes: usize, dim: usize) -> Self {
        Centroids {
            dim,
            sums: vec![0.0; classes * dim],
            counts: vec![0; classes],
        }
    }

    fn add(&mut self, x: &[f32], labels: &[i32]) {
        for (row, &c) in x.chunks_exact(self.dim).zip(labels) {
            if c < 0 {
                continue; // unlabelled
            }
            let c = c as usize;
            self.counts[c] += 1;
            for (s, &v) in self.sums[c * self.dim..(c + 1) * self.dim]
                .iter_mut()
                .zip(row)
            {
                *s += f64::from(v);
            }
        }
    }

    fn predict(&self, row: &[f32]) -> i32 {
        let mut best = (f64::INFINITY, -1);
        for (c, &n) in self.counts.iter().enumerate() {
            if n == 0 {
                continue;
            }
            let centre = &self.sums[c * self.dim..(c + 1) * self.dim];
            let d: f64 = centre
                .iter()
                .zip(row)
                .map(|(s, &v)| (s / n as f64 - f64::from(v)).powi(2))
                .sum();
            if d < best.0 {
                best = (d, c as i32);
            }
        }
        best.1
    }
}

fn loader(store: &Store, split: Split) -> ginex::Result<Loader> {
    Loader::builder(store)
        .fanouts([10, 10])
        .batch_size(256)
        .policy(Policy::Ginex)
        .memory("256MiB")
        .split(split)
        .seed(0)
        .build()
}

/// Accuracy of `model` (graph-aggregated or seed-only) on `split`.
fn accuracy(
    store: &Store,
    split: Split,
    graph: &Centroids,
    plain: &Centroids,
) -> ginex::Result<(f64, f64)> {
    let (mut right, mut right_plain, mut total) = (0u64, 0u64, 0u64);
    for batch in loader(store, split)? {
        let batch = batch?;
        let labels = batch.labels.clone().unwrap_or_default();
        let dim = batch.dim;
        let agg = aggregate(&batch);
        let own = batch.rows_f32();
        for (i, &label) in labels.iter().enumerate() {
            if label < 0 {
                continue;
            }
            total += 1;
            right += u64::from(graph.predict(&agg[i * dim..(i + 1) * dim]) == label);
            right_plain += u64::from(plain.predict(&own[i * dim..(i + 1) * dim]) == label);
        }
    }
    let t = total.max(1) as f64;
    Ok((right as f64 / t, right_plain as f64 / t))
}

fn main() -> ginex::Result<()> {
    let tmp = tempfile::tempdir().map_err(|e| ginex::Error::io("create", "a temp dir", e))?;
    let path = tmp.path().join("store");
    // Noisy features, homophilous edges: the neighbors carry the signal.
    let params = ginex::SynthParams {
        nodes: 20_000,
        avg_degree: 12.0,
        dim: 32,
        classes: 8,
        homophily: 0.8,
        feature_noise: 2.0,
        seed: 1,
        split: [0.3, 0.1, 0.1],
        ..Default::default()
    };
    ginex::generate_store(&params, &path, &ginex::NoProgress)?;
    let store = Store::open(&path)?;
    let classes = store.num_classes() as usize;
    let dim = store.feature_dim() as usize;

    // "Training": one epoch over the training split.
    let mut graph = Centroids::new(classes, dim);
    let mut plain = Centroids::new(classes, dim);
    let mut train = loader(&store, Split::Train)?;
    println!(
        "training on {} batches (feature cache {} rows, neighbor cache {} KiB, superbatch {})",
        train.len(),
        train.feature_cache_rows(),
        train.neighbor_cache_bytes() >> 10,
        train.superbatch()
    );
    for batch in &mut train {
        let batch = batch?;
        let labels = batch.labels.as_deref().unwrap_or_default();
        graph.add(&aggregate(&batch), labels);
        let own = batch.rows_f32();
        plain.add(&own[..batch.num_seeds * dim], labels);
    }
    let report = train.report().expect("the epoch ended");
    println!(
        "  {} rows gathered, miss ratio {:.3} (the inspector's optimum: {} misses), {:.2} s",
        report.hits() + report.batch_misses(),
        report.miss_ratio(),
        report.optimal_total(),
        report.wall.as_secs_f64()
    );

    for split in [Split::Valid, Split::Test] {
        let (acc, acc_plain) = accuracy(&store, split, &graph, &plain)?;
        println!(
            "{} accuracy: mean aggregation over 2 hops {:.3}, seed features alone {:.3} (chance {:.3})",
            split.name(),
            acc,
            acc_plain,
            1.0 / classes as f64
        );
        assert!(
            acc > acc_plain,
            "the graph should help on a homophilous store"
        );
    }
    Ok(())
}
