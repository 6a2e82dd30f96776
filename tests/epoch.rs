//! One epoch under every policy: caching never changes what a batch
//! gathers, and the Belady policy achieves the inspector's optimum.

use ginex::exec::epoch::{run_epoch, EpochConfig, EpochReport};
use ginex::exec::policy::Policy;
use ginex::import::synth::{generate_store, NoProgress, SynthParams};
use ginex::Store;

fn config(policy: Policy, run_dir: &std::path::Path) -> EpochConfig {
    EpochConfig {
        policy,
        feature_cache_rows: 300,
        neighbor_cache_bytes: 40_000,
        batch_size: 40,
        fanouts: vec![6, 4],
        superbatch: 5,
        changeset_every: 1,
        seed: 3,
        epoch: 1,
        presc_rounds: 1,
        workers: 2,
        run_dir: run_dir.to_path_buf(),
        keep_runs: false,
        max_batches: None,
        seed_nodes: None,
    }
}

fn setup() -> (tempfile::TempDir, Store) {
    let dir = tempfile::tempdir().unwrap();
    let p = SynthParams {
        nodes: 3000,
        avg_degree: 10.0,
        dim: 24,
        classes: 4,
        seed: 8,
        split: [0.2, 0.1, 0.1],
        ..SynthParams::default()
    };
    generate_store(&p, &dir.path().join("s"), &NoProgress).unwrap();
    let store = Store::open(dir.path().join("s")).unwrap();
    (dir, store)
}

fn run(store: &Store, cfg: &EpochConfig) -> (EpochReport, Vec<(u64, usize, u32)>) {
    let mut seen = Vec::new();
    let r = run_epoch(store, cfg, &mut |b| {
        assert_eq!(b.rows.len(), b.ids.len() * store.layout().row_bytes());
        assert_eq!(b.hops.last().map(|h| h.num_dst), Some(b.num_seeds));
        // Rows are the store's rows, in ids order.
        let mut want = vec![0u8; b.rows.len()];
        store.read_feature_rows(b.ids, &mut want).unwrap();
        assert_eq!(
            b.rows,
            &want[..],
            "batch {} rows differ from the store's",
            b.batch
        );
        seen.push((b.batch, b.ids.len(), ginex::format::crc32(b.rows)));
        Ok(())
    })
    .unwrap();
    (r, seen)
}

#[test]
fn every_policy_gathers_identical_batches_and_ginex_is_optimal() {
    let (dir, store) = setup();
    let runs = dir.path().join("runs");
    let mut reports = Vec::new();
    for policy in Policy::ALL {
        let (r, seen) = run(&store, &config(policy, &runs));
        assert_eq!(r.batches.len(), seen.len());
        reports.push((policy, r, seen));
    }
    let (_, ginex, reference) = &reports[0];
    for (policy, r, seen) in &reports {
        assert_eq!(seen, reference, "{policy:?} gathered different batches");
        assert_eq!(
            r.batches.iter().map(|b| b.checksum).collect::<Vec<_>>(),
            ginex.batches.iter().map(|b| b.checksum).collect::<Vec<_>>()
        );
        assert!(
            ginex.misses() <= r.misses(),
            "ginex {} misses > {policy:?} {}",
            ginex.misses(),
            r.misses()
        );
    }
    let per_batch: Vec<u64> = ginex.batches.iter().map(|b| b.misses).collect();
    assert_eq!(
        per_batch, ginex.optimal_misses,
        "executor misses differ from the inspector's optimum"
    );
    assert!(
        ginex.misses()
            < reports
                .iter()
                .find(|(p, ..)| *p == Policy::Lru)
                .unwrap()
                .1
                .misses()
    );
    // Runtime files are deleted after each superbatch.
    let left: Vec<_> = std::fs::read_dir(&runs)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert!(left.is_empty(), "left behind: {left:?}");
}

#[test]
fn k_hop_and_keep_runs() {
    let (dir, store) = setup();
    let runs = dir.path().join("runs");
    let exact = run(&store, &config(Policy::Ginex, &runs)).0;
    let mut cfg = config(Policy::Ginex, &runs);
    cfg.changeset_every = 3;
    cfg.keep_runs = true;
    let (khop, _) = run(&store, &cfg);
    assert_eq!(
        khop.batches.iter().map(|b| b.checksum).collect::<Vec<_>>(),
        exact.batches.iter().map(|b| b.checksum).collect::<Vec<_>>()
    );
    assert_eq!(
        khop.batches.iter().map(|b| b.misses).collect::<Vec<_>>(),
        khop.optimal_misses
    );
    let kept = std::fs::read_dir(&runs)
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .file_name()
                .to_string_lossy()
                .starts_with("sb-")
        })
        .count();
    assert!(kept >= 2, "--keep-runs kept {kept} files");
}
