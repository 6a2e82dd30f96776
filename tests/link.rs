//! Link batches (#40): every policy gathers the same link batches and the
//! ginex policy's misses are the exact Belady optimum (the trace
//! simulator agrees), every schedule and worker count writes the same
//! runtime files, and a batch's own edges are left out of its sampled
//! neighbourhoods.

mod common;

use std::collections::{BTreeSet, HashSet};
use std::sync::Arc;

use ginex::internals::cache::belady::{PageGroups, ReusePrior};
use ginex::internals::cache::Policy;
use ginex::internals::exec::config::FirstSuperbatch;
use ginex::internals::exec::curves::{replay, CurvePolicy, ReplayConfig, StaticRanks, Trace};
use ginex::internals::exec::epoch::{run_epoch, EpochConfig, EpochReport};
use ginex::internals::exec::pipeline::Pipeline;
use ginex::internals::sample::link::{
    EdgeOrder, LinkEpoch, LinkExclude, LinkPositives, LinkTask, NegMode, NegSource,
};
use ginex::internals::sample::sampler::EpochSampler;
use ginex::internals::sample::source::{InMemoryTopology, NeighborSource};
use ginex::{LinkLabels, Store};

const NEG: usize = 2;

fn link_config(policy: Policy, runs: &std::path::Path) -> EpochConfig {
    local_config(policy, runs, (NegSource::Uniform, EdgeOrder::Random))
}

/// [`link_config`] with negatives from `negatives` in edge order `order`.
fn local_config(
    policy: Policy,
    runs: &std::path::Path,
    (negatives, order): (NegSource, EdgeOrder),
) -> EpochConfig {
    let mut cfg = common::epoch_config(policy, runs);
    cfg.link = Some(LinkTask {
        neg: NEG,
        mode: NegMode::Binary,
        undirected: false,
        exclude: LinkExclude::Own,
        negatives,
        order,
    });
    cfg.max_batches = Some(12);
    cfg
}

/// The negative sources and edge orders the Belady test runs.
fn sources_and_orders() -> [(NegSource, EdgeOrder); 3] {
    [
        (NegSource::Uniform, EdgeOrder::Random),
        (NegSource::Batch, EdgeOrder::Blocked { ranges: 4 }),
        (
            NegSource::parse("mixed:0.5").unwrap(),
            EdgeOrder::Blocked { ranges: 16 },
        ),
    ]
}

/// One gathered link batch: ids, seeds, labels, rows' CRC.
type Seen = (Vec<u64>, usize, LinkLabels, u32);

fn run(store: &Store, cfg: &EpochConfig) -> (EpochReport, Vec<Seen>) {
    let mut seen = Vec::new();
    let r = run_epoch(store, cfg, &mut |b| {
        let mut want = vec![0u8; b.rows.len()];
        store.read_feature_rows(b.ids, &mut want).unwrap();
        assert_eq!(b.rows, &want[..], "batch {}: rows", b.batch);
        let link = b.link.expect("a link epoch gives link batches").clone();
        link.check(b.num_seeds, "batch").unwrap();
        seen.push((
            b.ids.to_vec(),
            b.num_seeds,
            link,
            ginex::internals::format::crc32(b.rows),
        ));
        Ok(())
    })
    .unwrap();
    (r, seen)
}

/// The inspector plans a link batch's endpoints like any seeds: every
/// policy gathers the same batches, ginex's misses are the inspector's
/// optimum and at most every policy's, and the trace simulator's exact
/// Belady (and LRU) replay of the link trace gives the measured misses;
/// so with negatives drawn from the batch and in blocked edge orders.
#[test]
fn every_policy_gathers_identical_link_batches_and_ginex_is_belady_optimal() {
    for local in sources_and_orders() {
        belady_optimal_with(local);
    }
}

fn belady_optimal_with(local: (NegSource, EdgeOrder)) {
    let (dir, store) = common::small_epoch_store();
    let runs = dir.path().join("runs");
    let mut reports = Vec::new();
    for policy in Policy::ALL {
        let (r, seen) = run(&store, &local_config(policy, &runs, local));
        assert_eq!(seen.len(), 12, "{policy:?}");
        reports.push((policy, r, seen));
    }
    if local.0 == NegSource::Batch {
        // In-batch negatives add no seed: every seed is a positive's end.
        for (ids, seeds, labels, _) in &reports[0].2 {
            let ends: HashSet<u32> = labels.src.iter().chain(&labels.dst).copied().collect();
            assert_eq!(ends.len(), *seeds, "{local:?}");
            assert!(labels.neg_dst.iter().all(|i| ends.contains(i)));
            assert!(ids.len() >= *seeds);
        }
    }
    let (_, ginex, reference) = &reports[0];
    for (policy, r, seen) in &reports {
        assert!(seen == reference, "{policy:?} gathered other link batches");
        assert!(
            ginex.misses() <= r.misses(),
            "ginex {} misses > {policy:?} {}",
            ginex.misses(),
            r.misses()
        );
    }
    let per_batch: Vec<u64> = ginex.batches.iter().map(|b| b.misses).collect();
    assert_eq!(per_batch, ginex.optimal_misses, "ginex vs the inspector");

    let trace = Trace::from_batches(&reference.iter().map(|s| s.0.clone()).collect::<Vec<_>>());
    let config = ReplayConfig {
        num_nodes: store.num_nodes(),
        superbatch: 5,
        first_superbatch: FirstSuperbatch::Full,
        prior: ReusePrior::of_store(&store).unwrap(),
        page_companions: PageGroups::of(store.layout().rows_per_page() as u64),
    };
    let rows = common::epoch_config(Policy::Ginex, &runs).feature_cache_rows;
    for (policy, curve) in [
        (Policy::Ginex, CurvePolicy::Ginex { every: 1 }),
        (Policy::Lru, CurvePolicy::of(Policy::Lru).unwrap()),
    ] {
        let sim = replay(&trace, curve, rows, &config, &StaticRanks::default()).unwrap();
        let r = &reports.iter().find(|(p, ..)| *p == policy).unwrap().1;
        let measured: Vec<u64> = r.batches.iter().map(|b| b.misses).collect();
        assert_eq!(
            sim.batch_misses, measured,
            "{policy:?}: simulator vs run_epoch"
        );
    }
    let lru = &reports.iter().find(|(p, ..)| *p == Policy::Lru).unwrap().1;
    assert!(
        ginex.misses() < lru.misses(),
        "ginex should beat LRU ({local:?})"
    );
}

/// The link batches and the runtime files holding them (run record v1.6,
/// a `link` record per batch) are byte-identical under every schedule and
/// worker count.
#[test]
fn link_batches_are_identical_for_every_schedule_and_worker_count() {
    let (dir, store) = common::small_epoch_store();
    let mut results = Vec::new();
    for pipeline in Pipeline::ALL {
        for workers in [1, 3] {
            let runs = dir.path().join(format!("{}-{workers}", pipeline.name()));
            let mut cfg = link_config(Policy::Ginex, &runs);
            cfg.workers = workers;
            common::ginex_options(&mut cfg).pipeline = pipeline;
            common::ginex_options(&mut cfg).keep_runs = true;
            let (r, seen) = run(&store, &cfg);
            assert_eq!(r.misses(), r.optimal_total(), "{pipeline:?}");
            let kept = r.kept_runs.clone().unwrap();
            let mut files: Vec<(String, Vec<u8>)> = std::fs::read_dir(&kept)
                .unwrap()
                .map(|e| {
                    let e = e.unwrap();
                    let name = e.file_name().to_string_lossy().into_owned();
                    (name, std::fs::read(e.path()).unwrap())
                })
                .collect();
            files.sort();
            results.push(((pipeline, workers), seen, files));
        }
    }
    let (_, seen0, files0) = &results[0];
    assert!(files0.len() >= 4, "{} files", files0.len());
    // The samples files are link runs' (format version 1.6 in the header).
    let (name, bytes) = files0.iter().find(|f| f.0.ends_with(".samples")).unwrap();
    assert_eq!(&bytes[12..16], [1, 0, 6, 0], "{name}: version");
    for (what, seen, files) in &results[1..] {
        assert!(seen == seen0, "{what:?}: batches differ");
        assert!(files == files0, "{what:?}: runtime files differ");
    }
}

/// The edges of a hop as (source id, target id).
fn hop_edges(ids: &[u64], hop: &ginex::Hop) -> Vec<(u64, u64)> {
    hop.src
        .iter()
        .zip(&hop.dst)
        .map(|(&s, &d)| (ids[s as usize], ids[d as usize]))
        .collect()
}

/// DGL's `exclude="self"`: with every neighbour drawn (fanouts -1), each
/// target's sampled in-edges are exactly its in-list without the batch's
/// own positives (and their reverses when undirected); node batches over
/// the same seeds do sample those edges, so the check can fail.
#[test]
fn a_link_batch_leaves_its_own_edges_out_of_its_neighbourhoods() {
    let (_dir, store) = common::small_epoch_store();
    let topo = InMemoryTopology::load(&store).unwrap();
    for undirected in [false, true] {
        let positives =
            Arc::new(LinkPositives::from_csc(&topo, undirected, store.num_edges()).unwrap());
        if undirected {
            assert!(positives
                .src
                .iter()
                .zip(&positives.dst)
                .all(|(s, d)| s <= d));
        } else {
            assert_eq!(positives.len() as u64, store.num_edges());
        }
        let link = LinkEpoch {
            positives: positives.clone(),
            task: LinkTask {
                neg: 3,
                mode: NegMode::Triplet,
                undirected,
                exclude: LinkExclude::Own,
                ..LinkTask::default()
            },
            neg_range: 0..store.num_nodes(),
        };
        let sampler = EpochSampler::link(&topo, link, 25, vec![-1, -1], 9, 4).unwrap();
        let plain = |seeds: &[u64]| {
            EpochSampler::with_order(&topo, seeds.to_vec(), seeds.len(), vec![-1, -1], 9, 4)
                .unwrap()
                .sample(0)
                .unwrap()
        };
        let mut found_without = 0;
        for b in 0..5 {
            let batch = sampler.sample(b).unwrap();
            let l = batch.link.clone().unwrap();
            assert_eq!(l.neg, 3);
            assert_eq!(l.num_pos(), 25);
            // Seeds: the distinct endpoints in first-appearance order.
            let mut order = Vec::new();
            for i in 0..l.num_pos() {
                order.push(l.src[i]);
                order.push(l.dst[i]);
                order.extend_from_slice(&l.neg_dst[i * 3..i * 3 + 3]);
            }
            let mut firsts = Vec::new();
            for x in order {
                if !firsts.contains(&x) {
                    firsts.push(x);
                }
            }
            assert_eq!(firsts, (0..batch.num_seeds as u32).collect::<Vec<_>>());
            // Positives are the epoch order's edges.
            let mut own = HashSet::new();
            for (i, &e) in sampler.seeds(b).iter().enumerate() {
                let (s, d) = (positives.src[e as usize], positives.dst[e as usize]);
                assert_eq!(
                    (batch.ids[l.src[i] as usize], batch.ids[l.dst[i] as usize]),
                    (s, d)
                );
                own.insert((s, d));
                if undirected {
                    own.insert((d, s));
                }
            }
            for hop in &batch.hops {
                let edges = hop_edges(&batch.ids, hop);
                for e in &edges {
                    assert!(!own.contains(e), "batch {b}: own edge {e:?} sampled");
                }
                // Every other in-edge of every target is there.
                let got: BTreeSet<(u64, u64)> = edges.into_iter().collect();
                let targets = &batch.ids[..hop.num_dst];
                let mut want = BTreeSet::new();
                topo.with_lists(targets, &mut |i, list| {
                    for &u in list {
                        if !own.contains(&(u, targets[i])) {
                            want.insert((u, targets[i]));
                        }
                    }
                })
                .unwrap();
                assert_eq!(got, want, "batch {b}: sampled in-edges");
            }
            let without = plain(&batch.ids[..batch.num_seeds]);
            found_without += without
                .hops
                .iter()
                .flat_map(|h| hop_edges(&without.ids, h))
                .filter(|e| own.contains(e))
                .count();
            // Deterministic from (seed, epoch, batch).
            assert_eq!(sampler.sample(b).unwrap(), batch);
        }
        assert!(found_without > 0, "node batches sample the positives");
    }
}

/// The loader's link batches are `run_epoch`'s, one per `batch_size`
/// positives, and their binary view puts positives first.
#[test]
fn the_loader_yields_the_epochs_link_batches() {
    let (dir, store) = common::small_epoch_store();
    let runs = dir.path().join("runs");
    let builder = || {
        ginex::Loader::builder(&store)
            .fanouts([6, 4])
            .batch_size(40)
            .feature_cache_bytes(300 * store.layout().row_bytes() as u64)
            .superbatch(5)
            .seed(3)
            .epoch(1)
            .workers(2)
            .run_dir(&runs)
            .link(NEG)
            .neg_mode(NegMode::Triplet)
            .max_batches(12)
    };
    let batches = |loader: ginex::Loader| -> Vec<Seen> {
        loader
            .map(|b| {
                let b = b.unwrap();
                (b.ids.clone(), b.num_seeds, b.link.unwrap(), b.checksum)
            })
            .collect()
    };
    let (_, want) = run(&store, &link_config(Policy::Ginex, &runs));
    let loader = builder().build().unwrap();
    assert_eq!(
        loader.len(),
        12,
        "max_batches of {} positives",
        store.num_edges()
    );
    let got = batches(loader);
    assert!(got == want, "the loader's batches differ from run_epoch's");
    // The builder's negative source and edge order are the epoch's.
    for local in sources_and_orders() {
        let (_, want) = run(&store, &local_config(Policy::Ginex, &runs, local));
        let loader = builder()
            .negatives(local.0)
            .edge_order(local.1)
            .build()
            .unwrap();
        assert!(batches(loader) == want, "{local:?}: loader vs run_epoch");
    }
    let (s, d, y) = got[0].2.binary();
    let p = got[0].2.num_pos();
    assert_eq!(
        (s.len(), d.len(), y.len()),
        (p * (1 + NEG), p * (1 + NEG), p * (1 + NEG))
    );
    assert!(y[..p].iter().all(|&v| v == 1.0) && y[p..].iter().all(|&v| v == 0.0));
    let full = ginex::Loader::builder(&store)
        .batch_size(1000)
        .link(1)
        .build()
        .unwrap();
    assert_eq!(full.len() as u64, store.num_edges().div_ceil(1000));
}
