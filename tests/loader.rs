//! The embedded `Loader`: the same batches, checksums and cache counters as
//! `run_epoch` (what `ginex epoch` runs), seeds from any split, memory
//! planning, and a clean stop when dropped mid-epoch.

mod common;

use std::path::Path;

use ginex::internals::exec::epoch::run_epoch;
use ginex::{Batch, Loader, Policy, Split, Store};

fn loader<'a>(store: &'a Store, policy: Policy, run_dir: &Path) -> ginex::LoaderBuilder<'a> {
    Loader::builder(store)
        .policy(policy)
        .feature_cache_bytes(300 * 24 * 4)
        .neighbor_cache_bytes(40_000)
        .batch_size(40)
        .fanouts([6, 4])
        .superbatch(5)
        .seed(3)
        .epoch(1)
        .workers(2)
        .run_dir(run_dir)
}

#[test]
fn loader_yields_run_epochs_batches_checksums_and_counters() {
    let (dir, store) = common::small_epoch_store();
    let runs = dir.path().join("runs");
    let labels = store.labels().unwrap().unwrap();
    for policy in [Policy::Ginex, Policy::Lru, Policy::Degree, Policy::Mmap] {
        let mut want = Vec::new();
        let want_report = run_epoch(&store, &common::epoch_config(policy, &runs), &mut |b| {
            want.push((b.batch, b.ids.to_vec(), b.num_seeds, b.hops.to_vec()));
            Ok(())
        })
        .unwrap();
        let mut loader = loader(&store, policy, &runs).build().unwrap();
        assert_eq!(loader.len(), want.len());
        assert_eq!(loader.feature_cache_rows(), 300);
        assert!(loader.report().is_none());
        let got: Vec<Batch> = (&mut loader).map(|b| b.unwrap()).collect();
        assert_eq!(got.len(), want.len(), "{policy:?}");
        for (b, (index, ids, num_seeds, hops)) in got.iter().zip(&want) {
            assert_eq!(
                (b.index, &b.ids, b.num_seeds, &b.hops),
                (*index, ids, *num_seeds, hops)
            );
            assert_eq!(b.checksum, want_report.batches[b.index as usize].checksum);
            assert_eq!(b.checksum, ginex::internals::format::crc32(&b.rows));
            let mut rows = vec![0f32; b.ids.len() * 24];
            store.read_feature_rows_f32(&b.ids, &mut rows).unwrap();
            assert_eq!(b.rows_f32(), rows, "batch {} rows are the store's", b.index);
            let seed_labels: Vec<i32> = b.seeds().iter().map(|&v| labels[v as usize]).collect();
            assert_eq!(b.labels.as_ref(), Some(&seed_labels));
        }
        let report = loader.report().expect("a finished epoch has its report");
        // Same executor: same hits, misses and checksums per batch.
        assert_eq!(report.batches, want_report.batches, "{policy:?}");
        assert_eq!(report.init_reads, want_report.init_reads);
        assert!(loader.next().is_none(), "fused after the end");
    }
    assert!(!runs.exists(), "no runtime files left behind");
}

#[test]
fn dropping_a_loader_mid_epoch_stops_it_and_removes_its_runtime_files() {
    let (dir, store) = common::small_epoch_store();
    let runs = dir.path().join("runs");
    // Nothing runs before the first batch is asked for.
    drop(loader(&store, Policy::Ginex, &runs).build().unwrap());
    assert!(!runs.exists());
    for take in [1, 6] {
        let mut l = loader(&store, Policy::Ginex, &runs)
            .superbatch(3)
            .build()
            .unwrap();
        for _ in 0..take {
            l.next().unwrap().unwrap();
        }
        assert!(runs.exists(), "the epoch is running");
        drop(l);
        assert!(
            !runs.exists(),
            "after a drop at batch {take} the run directory holds nothing of this run"
        );
    }
    // A kept run directory (created beforehand) stays, empty.
    std::fs::create_dir(&runs).unwrap();
    let mut l = loader(&store, Policy::Ginex, &runs).build().unwrap();
    l.next().unwrap().unwrap();
    drop(l);
    assert_eq!(std::fs::read_dir(&runs).unwrap().count(), 0);
}

#[test]
fn seeds_come_from_any_split_or_list_in_order_unless_shuffled() {
    let (dir, store) = common::small_epoch_store();
    let runs = dir.path().join("runs");
    let splits = store.splits().unwrap().unwrap();
    let seeds_of = |b: ginex::LoaderBuilder<'_>| -> Vec<u64> {
        b.build()
            .unwrap()
            .flat_map(|b| b.unwrap().seeds().to_vec())
            .collect()
    };
    let base = || loader(&store, Policy::Lru, &runs);
    assert_eq!(seeds_of(base().split(Split::Valid)), splits.valid);
    assert_eq!(seeds_of(base().split(Split::Test)), splits.test);
    assert_eq!(
        seeds_of(base().split(Split::Train).shuffle(false)),
        splits.train
    );
    let shuffled = seeds_of(base().split(Split::Valid).shuffle(true));
    assert_ne!(shuffled, splits.valid);
    let mut sorted = shuffled.clone();
    sorted.sort_unstable();
    let mut valid = splits.valid.clone();
    valid.sort_unstable();
    assert_eq!(sorted, valid);
    // The training split shuffled is `ginex epoch`'s order; another epoch
    // reorders it.
    let train = seeds_of(base());
    assert_ne!(train, seeds_of(base().epoch(2)));
    let all = base().split(Split::All).batch_size(1000).build().unwrap();
    assert_eq!(all.len(), 3);
    assert_eq!(
        base()
            .split(Split::All)
            .max_batches(7)
            .build()
            .unwrap()
            .len(),
        7
    );
    assert_eq!(
        seeds_of(base().seed_nodes(vec![5, 2, 2999])),
        vec![5, 2, 2999]
    );
    let err = base()
        .seed_nodes(vec![3000])
        .build()
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("seed node 3000 is not below the node count 3000"),
        "{err}"
    );
    let err = base().seed_nodes(vec![]).build().unwrap_err().to_string();
    assert!(err.contains("no seed nodes"), "{err}");
}

#[test]
fn a_memory_budget_is_planned_and_a_too_small_one_refused() {
    let (dir, store) = common::small_epoch_store();
    let runs = dir.path().join("runs");
    let l = Loader::builder(&store)
        .fanouts([6, 4])
        .batch_size(40)
        .run_dir(&runs)
        .memory("128MiB")
        .build()
        .unwrap();
    let plan = l.memory_plan().expect("planned");
    assert_eq!(plan.memory, 128 << 20);
    assert!(plan.total() <= 128 << 20, "{}", plan.describe());
    assert_eq!(l.feature_cache_rows() as u64, plan.feature_cache_rows);
    assert_eq!(l.neighbor_cache_bytes(), plan.neighbor_cache_bytes);
    assert_eq!(l.superbatch(), plan.superbatch);
    // A dynamic policy's state is planned too (S3-FIFO's ghost queue).
    let s3fifo = Loader::builder(&store)
        .fanouts([6, 4])
        .batch_size(40)
        .policy(Policy::S3fifo)
        .memory("128MiB")
        .build()
        .unwrap();
    let s3plan = s3fifo.memory_plan().unwrap();
    assert!(s3plan.total() <= 128 << 20, "{}", s3plan.describe());
    assert_eq!(
        s3plan.feature_cache_bytes,
        ginex::Policy::S3fifo.dynamic().unwrap().cache_bytes(
            s3plan.feature_cache_rows,
            store.num_nodes(),
            store.layout().row_bytes() as u64
        )
    );
    // The planner counts the loader's batches in flight and the labels.
    let by_bytes = Loader::builder(&store)
        .fanouts([6, 4])
        .batch_size(40)
        .run_dir(&runs)
        .memory_bytes(128 << 20)
        .reserve_bytes(1 << 20)
        .build()
        .unwrap();
    assert!(by_bytes.memory_plan().unwrap().fixed >= plan.fixed + (1 << 20));
    let n = by_bytes.count();
    assert_eq!(n, 15, "600 training seeds in batches of 40");

    let err = Loader::builder(&store).memory("1MiB").build().unwrap_err();
    assert!(err.to_string().contains("give at least --memory"), "{err}");
    let err = Loader::builder(&store).memory("lots").build().unwrap_err();
    assert!(err.to_string().contains("is not a size"), "{err}");
    let err = Loader::builder(&store).fanouts([3, 0]).build().unwrap_err();
    assert!(err.to_string().contains("fanout 0"), "{err}");
}

#[test]
fn errors_of_the_executor_come_out_of_the_iterator() {
    let (dir, store) = common::small_epoch_store();
    // A run directory that cannot be created: the ginex policy fails when
    // the epoch starts, and the iterator says why, then ends.
    let file = dir.path().join("a-file");
    std::fs::write(&file, b"x").unwrap();
    let mut l = loader(&store, Policy::Ginex, &file.join("runs"))
        .build()
        .unwrap();
    let err = l.next().unwrap().unwrap_err().to_string();
    assert!(err.contains("a-file"), "{err}");
    assert!(l.next().is_none());
    assert!(l.report().is_none());
}

/// The typed view of a typed store's batches: every edge maps back to an
/// edge of the untyped batch, with the relation its endpoints' types
/// name; the counts add up; each type's seeds come first; rows and labels
/// are the store's. Seeds of two types exercise the per-type seed counts.
#[test]
fn typed_batches_map_back_to_the_untyped_batch() {
    let dir = tempfile::tempdir().unwrap();
    let store = common::typed_store(dir.path(), 600);
    let schema = store.schema().unwrap().clone();
    let labels = store.labels().unwrap().unwrap();
    let (author, paper) = (
        schema.type_index("author").unwrap(),
        schema.type_index("paper").unwrap(),
    );
    let mut seeds: Vec<u64> = schema.node_types[paper].ids().step_by(7).collect();
    seeds.extend(schema.node_types[author].ids().step_by(11));
    let mut typed_seeds = [0usize; 3];
    let mut batches = 0;
    for (split_seeds, fanouts) in [(None, vec![4, 3]), (Some(seeds), vec![3, 2, 2])] {
        let mut b = Loader::builder(&store)
            .fanouts(fanouts.clone())
            .batch_size(50)
            .policy(Policy::Lru)
            .run_dir(dir.path().join("runs"))
            .seed(5);
        if let Some(s) = split_seeds {
            b = b.seed_nodes(s);
        }
        for batch in b.build().unwrap() {
            let batch = batch.unwrap();
            let t = batch.typed(&store).unwrap();
            batches += 1;
            assert_eq!(t.num_hops(), fanouts.len());
            assert_eq!(t.nodes.len(), schema.node_types.len());
            assert_eq!(t.edges.len(), schema.relations.len());
            assert_eq!(
                t.nodes.iter().map(|n| n.len()).sum::<usize>(),
                batch.ids.len()
            );
            for (ti, n) in t.nodes.iter().enumerate() {
                assert_eq!(n.num_sampled.iter().sum::<usize>(), n.len());
                let seeds = n.num_seeds();
                typed_seeds[ti] += seeds;
                for (i, (&p, &v)) in n.positions.iter().zip(&n.ids).enumerate() {
                    assert_eq!(batch.ids[p as usize], v);
                    assert_eq!(schema.type_of(v), ti);
                    // The type's seeds first, then the rest in batch order.
                    assert_eq!((p as usize) < batch.num_seeds, i < seeds, "{}", n.name);
                }
                assert!(n.positions.windows(2).all(|w| w[0] < w[1]));
                assert_eq!(
                    n.local_ids(),
                    n.ids
                        .iter()
                        .map(|&v| v - schema.node_types[ti].offset)
                        .collect::<Vec<_>>()
                );
                let want: Vec<i32> = n.ids[..seeds].iter().map(|&v| labels[v as usize]).collect();
                assert_eq!(n.seed_labels.as_deref(), Some(&want[..]));
                let mut rows = vec![0f32; n.len() * batch.dim];
                store.read_feature_rows_f32(&n.ids, &mut rows).unwrap();
                assert_eq!(batch.type_rows_f32(n), Some(rows));
            }
            assert_eq!(
                t.nodes.iter().map(|n| n.num_seeds()).sum::<usize>(),
                batch.num_seeds
            );
            // Hop k from the seeds is batch.hops[L - 1 - k].
            for (k, hop) in batch.hops.iter().rev().enumerate() {
                let mut untyped: Vec<(u64, u64)> = hop
                    .src
                    .iter()
                    .zip(&hop.dst)
                    .map(|(&s, &d)| (batch.ids[s as usize], batch.ids[d as usize]))
                    .collect();
                let mut typed = Vec::new();
                for (r, e) in t.edges.iter().enumerate() {
                    assert_eq!(e.num_sampled.len(), fanouts.len());
                    let (src, dst) = e.hop(k);
                    let (src_nodes, dst_nodes) = (&t.nodes[e.src_type], &t.nodes[e.dst_type]);
                    let (num_src, _) = t.hop_size(e.src_type, k);
                    let (_, num_dst) = t.hop_size(e.dst_type, k);
                    for (&s, &d) in src.iter().zip(dst) {
                        assert!((s as usize) < num_src && (d as usize) < num_dst);
                        let (u, v) = (src_nodes.ids[s as usize], dst_nodes.ids[d as usize]);
                        let rel = schema.relation_between(schema.type_of(u), schema.type_of(v));
                        assert_eq!(rel, Some(r), "{u} -> {v}");
                        typed.push((u, v));
                    }
                }
                untyped.sort_unstable();
                typed.sort_unstable();
                assert_eq!(typed, untyped, "batch {} hop {k}", batch.index);
                // A type's targets are a prefix of its nodes.
                for (ti, n) in t.nodes.iter().enumerate() {
                    let of_type = |upto: usize| {
                        batch.ids[..upto]
                            .iter()
                            .filter(|&&v| schema.type_of(v) == ti)
                            .count()
                    };
                    assert_eq!(
                        t.hop_size(ti, k),
                        (of_type(hop.num_src), of_type(hop.num_dst)),
                        "{}",
                        n.name
                    );
                }
            }
            let total: usize = t.edges.iter().map(|e| e.len()).sum();
            assert_eq!(total, batch.hops.iter().map(|h| h.src.len()).sum::<usize>());
        }
    }
    assert_eq!(
        batches, 4,
        "96 training papers and 63 chosen seeds, 50 a batch"
    );
    assert!(
        typed_seeds[paper] > 0 && typed_seeds[author] > 0,
        "{typed_seeds:?}"
    );
    let (_dir, untyped) = common::small_epoch_store();
    let batch = Loader::builder(&untyped)
        .max_batches(1)
        .build()
        .unwrap()
        .next()
        .unwrap()
        .unwrap();
    let err = batch.typed(&untyped).unwrap_err().to_string();
    assert!(err.contains("is not a typed store"), "{err}");
}

/// Per-relation fanouts: the loader of a typed store plans its memory and
/// yields `run_epoch`'s batches; unknown relations and per-relation
/// fanouts on an untyped store are refused before any work.
#[test]
fn loader_takes_per_relation_fanouts_on_a_typed_store() {
    let dir = tempfile::tempdir().unwrap();
    let store = common::typed_store(dir.path(), 3000);
    let runs = dir.path().join("runs");
    let fanouts: ginex::Fanouts = "cites=4:2,writes=2:1,*=1:0".parse().unwrap();
    let mut cfg = common::epoch_config(Policy::Ginex, &runs);
    cfg.fanouts = fanouts.clone();
    let mut want = Vec::new();
    run_epoch(&store, &cfg, &mut |b| {
        want.push((b.ids.to_vec(), b.hops.to_vec()));
        Ok(())
    })
    .unwrap();
    let got: Vec<_> = loader(&store, Policy::Ginex, &runs)
        .relation_fanouts(fanouts.clone())
        .build()
        .unwrap()
        .map(|b| {
            let b = b.unwrap();
            (b.ids.clone(), b.hops.clone())
        })
        .collect();
    assert_eq!(got, want);
    // The planner measures the epoch's first batches, as drawn per
    // relation.
    let planned = loader(&store, Policy::Ginex, &runs)
        .relation_fanouts(fanouts)
        .memory("256MiB")
        .build()
        .unwrap();
    let ws = planned.memory_plan().unwrap().working_set;
    let first_two = want.iter().take(2).map(|b| b.0.len() as u64);
    assert_eq!(ws.max_ids, first_two.max().unwrap());
    drop(planned);

    let unknown = ginex::Fanouts::per_hop([[("cites", 3), ("citez", 1)]]).unwrap();
    let err = Loader::builder(&store)
        .relation_fanouts(unknown)
        .build()
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("--fanouts")
            && err.contains("no relation `citez`")
            && err.contains("paper:cites:paper"),
        "{err}"
    );
    let (_untyped_dir, untyped) = common::small_epoch_store();
    let err = Loader::builder(&untyped)
        .relation_fanouts("cites=3".parse().unwrap())
        .build()
        .unwrap_err()
        .to_string();
    assert!(err.contains("need a typed store"), "{err}");
}
