//! Open a store and look inside: counts, dtype, labels, splits, a node's
//! neighbors and features, and a full verification.
//!
//! ```text
//! cargo run -p ginex --example open_and_inspect [STORE]
//! ```
//!
//! Without a path, a small synthetic store is generated in a temporary
//! directory first (`ginex gen` does the same from the command line).

fn main() -> ginex::Result<()> {
    let tmp = tempfile::tempdir().map_err(|e| ginex::Error::io("create", "a temp dir", e))?;
    let path = match std::env::args_os().nth(1) {
        Some(p) => p.into(),
        None => {
            let path = tmp.path().join("store");
            let params = ginex::SynthParams {
                nodes: 5_000,
                dim: 16,
                classes: 4,
                ..Default::default()
            };
            ginex::generate_store(&params, &path, &ginex::NoProgress)?;
            path
        }
    };

    let store = ginex::Store::open(&path)?;
    println!("store {}", store.dir().display());
    println!(
        "  {} nodes, {} edges, features {} × {}",
        store.num_nodes(),
        store.num_edges(),
        store.feature_dim(),
        store.dtype().name()
    );

    let labels = store.labels()?;
    match &labels {
        Some(l) => {
            let missing = l.iter().filter(|&&c| c < 0).count();
            println!(
                "  labels: {} classes, {missing} nodes unlabelled",
                store.num_classes()
            );
        }
        None => println!("  no labels"),
    }
    match store.splits()? {
        Some(s) => println!(
            "  splits: {} train, {} valid, {} test",
            s.train.len(),
            s.valid.len(),
            s.test.len()
        ),
        None => println!("  no splits"),
    }

    // The node with the most in-neighbors, its list and its feature row.
    let indptr = store.indptr();
    let (hub, degree) = (0..store.num_nodes())
        .map(|v| (v, indptr[v as usize + 1] - indptr[v as usize]))
        .max_by_key(|&(_, d)| d)
        .unwrap_or((0, 0));
    let neighbors = store.in_neighbors(hub)?;
    println!(
        "  node {hub} has the most in-neighbors ({degree}): {:?}{}",
        &neighbors[..neighbors.len().min(8)],
        if neighbors.len() > 8 { " …" } else { "" }
    );
    let mut row = vec![0f32; store.feature_dim() as usize];
    store.read_feature_rows_f32(&[hub], &mut row)?;
    println!(
        "  its features: {:?}{}",
        &row[..row.len().min(6)],
        if row.len() > 6 { " …" } else { "" }
    );
    if let Some(l) = &labels {
        println!("  its label: {}", l[hub as usize]);
    }

    let report = store.verify()?;
    println!(
        "  verified: {} files, {} bytes, {} feature pages, {} segments, every checksum matches",
        report.files, report.bytes, report.pages, report.segments
    );
    Ok(())
}
