//! One epoch under every policy: caching never changes what a batch
//! gathers, and the Belady policy achieves the inspector's optimum.

mod common;

use ginex::internals::cache::Policy;
use ginex::internals::exec::epoch::{run_epoch, EpochConfig, EpochReport};
use ginex::internals::exec::pipeline::Pipeline;
use ginex::internals::sample::fanouts::Fanouts;
use ginex::internals::sample::sampler::{batch_seed, sample_batch_with, EpochSampler};
use ginex::internals::sample::source::{InMemoryTopology, StoreSource};
use ginex::Store;

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
        seen.push((
            b.batch,
            b.ids.len(),
            ginex::internals::format::crc32(b.rows),
        ));
        Ok(())
    })
    .unwrap();
    (r, seen)
}

#[test]
fn every_policy_gathers_identical_batches_and_ginex_is_optimal() {
    let (dir, store) = common::small_epoch_store();
    let runs = dir.path().join("runs");
    every_policy_agrees(&store, &runs, None);
    // Runtime files are deleted after each superbatch, and the run
    // directory the epoch created goes with them.
    assert!(!runs.exists(), "left behind: {runs:?}");
}

/// A typed store (features derived for its featureless types) is one id
/// space to every policy: identical batches, ginex optimal.
#[test]
fn every_policy_gathers_identical_typed_batches() {
    let dir = tempfile::tempdir().unwrap();
    let store = common::typed_store(dir.path(), 3000);
    assert_eq!(store.schema().unwrap().node_types.len(), 3);
    let runs = dir.path().join("runs");
    every_policy_agrees(&store, &runs, None);
    assert!(!runs.exists(), "left behind: {runs:?}");
}

/// Per-relation fanouts on a typed store: every policy gathers the same
/// batches, whatever the sampling workers and the pipeline schedule, and
/// they are not the batches of one list for all.
#[test]
fn every_policy_gathers_identical_typed_batches_with_relation_fanouts() {
    let dir = tempfile::tempdir().unwrap();
    let store = common::typed_store(dir.path(), 3000);
    let runs = dir.path().join("runs");
    let fanouts = Fanouts::parse("cites=3:2,writes=2:1,*=1:0").unwrap();
    let seen = every_policy_agrees(&store, &runs, Some(&fanouts));
    for (workers, pipeline) in [(1, Pipeline::Serial), (3, Pipeline::Overlap)] {
        let mut cfg = common::epoch_config(Policy::Ginex, &runs);
        cfg.fanouts = fanouts.clone();
        cfg.workers = workers;
        common::ginex_options(&mut cfg).pipeline = pipeline;
        assert_eq!(run(&store, &cfg).1, seen, "{workers} workers, {pipeline:?}");
    }
    let uniform = run(&store, &common::epoch_config(Policy::None, &runs)).1;
    assert_ne!(uniform, seen);
    assert!(!runs.exists(), "left behind: {runs:?}");
}

/// With per-relation fanouts every target draws min(k, degree) distinct
/// neighbours of each relation into its type, none of a relation at 0,
/// and the batches are the same from memory and from the store.
#[test]
fn relation_fanouts_draw_each_relations_own_count() {
    let dir = tempfile::tempdir().unwrap();
    let store = common::typed_store(dir.path(), 3000);
    let schema = store.schema().unwrap().clone();
    let topo = InMemoryTopology::load(&store).unwrap();
    let train = store.splits().unwrap().unwrap().train;
    // Hop 1 (seeds' hop): cites 3, writes 2, topic_of all; hop 2: cites 1,
    // written_by 2, the rest 0.
    let fanouts = Fanouts::parse("cites=3:1,writes=2:0,topic_of=-1:0,written_by=0:2").unwrap();
    let resolved = fanouts.resolve(Some(&schema)).unwrap();
    let k = |hop: usize, rel: &str| -> i64 {
        let Fanouts::PerRelation(p) = &fanouts else {
            unreachable!()
        };
        p.relations
            .iter()
            .find(|r| r.0 == rel)
            .map_or(0, |r| r.1[hop])
    };
    let sampler = EpochSampler::new(&topo, &train, 50, resolved.clone(), 5, 0).unwrap();
    let source = StoreSource::new(&store, None, &Default::default()).unwrap();
    let (mut exact, mut targets) = (0, 0);
    for b in 0..sampler.num_batches().min(4) {
        let batch = sampler.sample(b).unwrap();
        let seed = batch_seed(5, 0, b);
        let again = sample_batch_with(&source, sampler.seeds(b), &resolved, seed).unwrap();
        assert_eq!(again, batch, "batch {b}: the store's lists draw otherwise");
        for (hop, h) in batch.hops.iter().rev().enumerate() {
            for target in 0..h.num_dst {
                targets += 1;
                let v = batch.ids[target];
                let ty = schema.type_of(v);
                let list = topo.list(v);
                // One relation per type pair: an edge into `v` from a
                // source of type s is relation (s, type of v)'s.
                for r in schema.relations.iter().filter(|r| r.dst as usize == ty) {
                    let src = schema.node_types[r.src as usize].ids();
                    let got = h
                        .dst
                        .iter()
                        .zip(&h.src)
                        .filter(|(&d, &s)| {
                            d as usize == target && src.contains(&batch.ids[s as usize])
                        })
                        .count();
                    if r.dst as usize != ty {
                        assert!(
                            r.src as usize != schema.type_of(v)
                                || got == 0
                                || schema.relation_between(r.src as usize, ty).is_some()
                        );
                        continue;
                    }
                    let mut run: Vec<u64> =
                        list.iter().copied().filter(|u| src.contains(u)).collect();
                    let degree = run.len();
                    run.dedup();
                    let want = match k(hop, &r.name) {
                        -1 => run.len(),
                        k => (k as usize).min(run.len()),
                    };
                    if run.len() == degree {
                        assert_eq!(
                            got, want,
                            "batch {b} hop {hop} node {v} relation {}",
                            r.name
                        );
                        exact += usize::from(want > 0);
                    } else {
                        assert!(
                            got <= want,
                            "batch {b} hop {hop} node {v} relation {}",
                            r.name
                        );
                    }
                }
            }
        }
    }
    assert!(
        exact > 100 && targets > 100,
        "checked {exact} draws of {targets} targets"
    );
}

/// Runs an epoch under every policy: the same batches everywhere, and
/// ginex at the inspector's optimum with fewer misses than LRU. Returns
/// the batches (`fanouts` replace the configuration's when given).
fn every_policy_agrees(
    store: &Store,
    runs: &std::path::Path,
    fanouts: Option<&Fanouts>,
) -> Vec<(u64, usize, u32)> {
    let store = store.clone();
    let mut reports = Vec::new();
    for policy in Policy::ALL {
        let mut cfg = common::epoch_config(policy, runs);
        if let Some(f) = fanouts {
            cfg.fanouts = f.clone();
        }
        let (r, seen) = run(&store, &cfg);
        assert_eq!(r.batches.len(), seen.len());
        reports.push((policy, r, seen));
    }
    for name in ["lru", "sieve", "s3fifo", "clock"] {
        assert!(
            reports.iter().any(|(p, ..)| p.name() == name),
            "{name} is not in Policy::ALL"
        );
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
    reference.clone()
}

#[test]
fn k_hop_and_keep_runs() {
    let (dir, store) = common::small_epoch_store();
    let runs = dir.path().join("runs");
    let exact = run(&store, &common::epoch_config(Policy::Ginex, &runs)).0;
    let mut cfg = common::epoch_config(Policy::Ginex, &runs);
    common::ginex_options(&mut cfg).changeset_every = 3;
    common::ginex_options(&mut cfg).keep_runs = true;
    let (khop, _) = run(&store, &cfg);
    assert_eq!(
        khop.batches.iter().map(|b| b.checksum).collect::<Vec<_>>(),
        exact.batches.iter().map(|b| b.checksum).collect::<Vec<_>>()
    );
    assert_eq!(
        khop.batches.iter().map(|b| b.misses).collect::<Vec<_>>(),
        khop.optimal_misses
    );
    // Kept in the run's own directory under --run-dir.
    let kept_dir = khop.kept_runs.clone().expect("kept runs are named");
    assert_eq!(kept_dir.parent(), Some(runs.as_path()));
    let kept = std::fs::read_dir(&kept_dir)
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

/// The runtime files of every superbatch of a kept run, by file name.
fn kept_files(r: &EpochReport) -> Vec<(String, Vec<u8>)> {
    let dir = r.kept_runs.clone().expect("kept runs are named");
    let mut files: Vec<(String, Vec<u8>)> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            (
                e.file_name().to_string_lossy().into_owned(),
                std::fs::read(e.path()).unwrap(),
            )
        })
        .collect();
    files.sort();
    files
}

/// Every schedule of the superbatch pipeline writes byte-identical runtime
/// files and gathers byte-identical batches, exact and k-hop; and the
/// misses, init reads included (read ahead or not), are the optimum of the
/// schedule.
#[test]
fn pipelined_and_serial_runs_are_byte_identical() {
    let (dir, store) = common::small_epoch_store();
    for every in [1, 3] {
        let mut results = Vec::new();
        for pipeline in Pipeline::ALL {
            let mut cfg = common::epoch_config(Policy::Ginex, &dir.path().join(pipeline.name()));
            common::ginex_options(&mut cfg).pipeline = pipeline;
            common::ginex_options(&mut cfg).changeset_every = every;
            common::ginex_options(&mut cfg).keep_runs = true;
            let (r, seen) = run(&store, &cfg);
            assert!(
                r.batches.len() > 2 * cfg.cache.ginex().unwrap().superbatch as usize,
                "several superbatches"
            );
            assert_eq!(
                r.misses(),
                r.optimal_total(),
                "{pipeline:?}: misses vs optimum"
            );
            assert_eq!(r.init_reads, r.optimal_init_reads);
            // Only `full` reads a superbatch's init while the one before
            // runs (some superbatch of the dozen finds the next one's
            // changesets ready); the reads are the same.
            assert_eq!(
                r.read_ahead > 0,
                pipeline == Pipeline::Full,
                "{pipeline:?}: {} init rows read ahead",
                r.read_ahead
            );
            results.push((pipeline, seen, kept_files(&r), r));
        }
        let (_, seen0, files0, r0) = &results[0];
        assert!(files0.len() >= 6, "{} runtime files", files0.len());
        for (pipeline, seen, files, r) in &results[1..] {
            assert_eq!(seen, seen0, "{pipeline:?}: batches differ from serial");
            assert!(
                files == files0,
                "{pipeline:?}: runtime files differ from serial"
            );
            assert_eq!(r.misses(), r0.misses());
        }
    }
}

/// The report's timeline: the first feature read comes no later than the
/// first batch (its rows are read by then), both within the epoch; the
/// epoch's CPU time is charged to the roles that spent it.
#[test]
fn the_timeline_says_when_reads_and_batches_started_and_whose_cpu_it_was() {
    use ginex::internals::io::cpu_time::Role;
    let (dir, store) = common::small_epoch_store();
    let mut runs = Vec::new();
    for pipeline in Pipeline::ALL {
        let mut cfg = common::epoch_config(Policy::Ginex, &dir.path().join(pipeline.name()));
        common::ginex_options(&mut cfg).pipeline = pipeline;
        runs.push((format!("ginex {}", pipeline.name()), run(&store, &cfg).0));
    }
    let cfg = common::epoch_config(Policy::Degree, &dir.path().join("degree"));
    runs.push(("degree".into(), run(&store, &cfg).0));
    for (name, r) in &runs {
        let t = &r.timeline;
        let (read, batch) = (t.first_read.unwrap(), t.first_batch.unwrap());
        assert!(
            read <= batch && batch <= r.wall,
            "{name}: {t:?}, wall {:?}",
            r.wall
        );
        assert!(
            t.role_cpu[Role::Executor as usize] > std::time::Duration::ZERO,
            "{name}: {t:?}"
        );
        assert!(
            t.cpu_user + t.cpu_system > std::time::Duration::ZERO,
            "{name}: {t:?}"
        );
        if name == "ginex full" {
            for role in [Role::Sampling, Role::Changesets, Role::InitReader] {
                assert!(
                    t.role_cpu[role as usize] > std::time::Duration::ZERO,
                    "{name} {role:?}: {t:?}"
                );
            }
        }
    }
}

/// The reuse prior runs beside the first superbatch's sampling (or first,
/// serially): it is timed, what of it was not hidden is at most its time,
/// and a damaged topology segment that its pass reads fails the run under
/// every schedule with an error naming the segment, leaving no runtime
/// file behind.
#[test]
fn the_reuse_prior_is_timed_and_its_failure_leaves_no_runtime_file() {
    let (dir, store) = common::small_epoch_store();
    for pipeline in Pipeline::ALL {
        let mut cfg = common::epoch_config(Policy::Ginex, &dir.path().join("runs"));
        common::ginex_options(&mut cfg).pipeline = pipeline;
        let (r, _) = run(&store, &cfg);
        assert!(r.reuse_prior > std::time::Duration::ZERO, "{pipeline:?}");
        assert!(r.reuse_prior_exposed <= r.reuse_prior, "{pipeline:?}");
        if pipeline == Pipeline::Serial {
            assert_eq!(r.reuse_prior_exposed, r.reuse_prior);
        }
    }
    let indices = store.dir().join("indices");
    let mut bytes = std::fs::read(&indices).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 1;
    std::fs::write(&indices, &bytes).unwrap();
    let damaged = Store::open(store.dir()).unwrap();
    for pipeline in Pipeline::ALL {
        let runs = dir.path().join(format!("damaged-{}", pipeline.name()));
        let mut cfg = common::epoch_config(Policy::Ginex, &runs);
        common::ginex_options(&mut cfg).pipeline = pipeline;
        cfg.neighbor_cache_bytes = 0;
        let err = run_epoch(&damaged, &cfg, &mut |_| Ok(()))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("segment") && err.contains("indices"),
            "{pipeline:?}: {err}"
        );
        let left: Vec<_> = std::fs::read_dir(&runs)
            .map(|d| d.map(|e| e.unwrap().path()).collect())
            .unwrap_or_default();
        assert!(left.is_empty(), "{pipeline:?}: left {left:?}");
    }
}

/// Carry-over: the same batches as rebuilding the cache at every
/// superbatch, never more rows read, strictly fewer init reads here.
#[test]
fn carry_over_gives_identical_batches_and_never_more_reads() {
    let (dir, store) = common::small_epoch_store();
    for every in [1, 2] {
        let mut cfg = common::epoch_config(Policy::Ginex, &dir.path().join("runs"));
        common::ginex_options(&mut cfg).changeset_every = every;
        let (carried, seen_carried) = run(&store, &cfg);
        common::ginex_options(&mut cfg).carry_over = false;
        let (reset, seen_reset) = run(&store, &cfg);
        assert_eq!(seen_carried, seen_reset, "k = {every}");
        assert!(
            carried.misses() <= reset.misses(),
            "k = {every}: carry-over {} > reset {}",
            carried.misses(),
            reset.misses()
        );
        assert!(carried.init_reads < reset.init_reads, "k = {every}");
        assert_eq!(carried.misses(), carried.optimal_total());
    }
}

/// Sequential passes read more bytes in fewer reads, never other rows: for
/// every policy that reads through the gather engine, `always`, `never`
/// and `auto` give the same batches and misses.
#[test]
fn sequential_passes_give_identical_batches() {
    use ginex::internals::store::read_cost::SequentialReads;
    let (dir, store) = common::small_epoch_store();
    for policy in [Policy::Ginex, Policy::Lru, Policy::None] {
        let mut cfg = common::epoch_config(policy, &dir.path().join("runs"));
        cfg.sequential_reads = SequentialReads::Never;
        let (never, seen_never) = run(&store, &cfg);
        assert_eq!(never.sequential_passes, 0);
        cfg.sequential_reads = SequentialReads::Always;
        let (always, seen_always) = run(&store, &cfg);
        assert_eq!(seen_always, seen_never, "{policy:?}");
        assert_eq!(always.misses(), never.misses(), "{policy:?}");
        if policy != Policy::Ginex {
            // (ginex's read-ahead starts when the next init is ready, so
            // where its chunks split a page varies from run to run.)
            assert_eq!(always.pages_read, never.pages_read, "{policy:?}");
        }
        assert!(always.sequential_passes > 0, "{policy:?}");
        assert!(always.feature_reads < never.feature_reads, "{policy:?}");
        assert!(always.bytes_read >= never.bytes_read, "{policy:?}");
        assert!(always.predicted_read > std::time::Duration::ZERO);
        cfg.sequential_reads = SequentialReads::Auto;
        assert_eq!(run(&store, &cfg).1, seen_never, "{policy:?}");
    }
}

/// The list reads' depth changes when the device serves them, never what
/// is read: every policy's batches, misses and list reads are the same at
/// depth 1 as at the default depth.
/// Under `--pipeline full` the report counts list reads issued beside a
/// feature read (at most all of them); a policy without an inspector
/// samples between its gathers, so none of its are.
#[test]
fn list_read_depth_gives_identical_batches() {
    let (dir, store) = common::small_epoch_store();
    for policy in [Policy::Ginex, Policy::Degree, Policy::Lru] {
        let mut cfg = common::epoch_config(policy, &dir.path().join("runs"));
        // Every list read from the store (no neighbor cache in front).
        cfg.neighbor_cache_bytes = 0;
        let (deep, seen_deep) = run(&store, &cfg);
        cfg.list_queue_depth = 1;
        let (shallow, seen_shallow) = run(&store, &cfg);
        assert_eq!(seen_shallow, seen_deep, "{policy:?}");
        assert_eq!(shallow.misses(), deep.misses(), "{policy:?}");
        assert_eq!(
            (shallow.list_reads, shallow.list_bytes_read),
            (deep.list_reads, deep.list_bytes_read),
            "{policy:?}"
        );
        for r in [&deep, &shallow] {
            assert!(r.list_reads > 0, "{policy:?}: {}", r.list_reads);
            assert!(r.list_reads_beside_gathers <= r.list_reads, "{policy:?}");
            assert!(
                r.list_bytes_beside_gathers <= r.list_bytes_read,
                "{policy:?}"
            );
            assert!(r.pages_beside_lists <= r.pages_read, "{policy:?}");
            assert!(r.feature_read_beside_lists <= r.feature_read, "{policy:?}");
            assert!(
                r.pages_beside_init + r.init_reader_pages <= r.pages_read,
                "{policy:?}"
            );
            assert!(r.feature_read_beside_init <= r.feature_read, "{policy:?}");
            if policy != Policy::Ginex {
                assert_eq!(r.list_reads_beside_gathers, 0, "{policy:?}");
                assert_eq!(r.pages_beside_lists, 0, "{policy:?}");
                assert_eq!(r.pages_beside_init, 0, "{policy:?}");
                assert_eq!(r.init_reader_pages, 0, "{policy:?}");
            } else {
                assert!(r.init_reader_pages <= r.pages_read);
                assert!(r.init_reader_read <= r.feature_read);
            }
        }
    }
}

/// The feature reads' depth changes when the device serves them, never
/// what is read: every policy's batches and misses (and, but for ginex's
/// read-ahead, whose chunks split pages by timing, its pages) are the same
/// with one feature read in flight as at the default depth.
#[test]
fn feature_read_depth_gives_identical_batches() {
    use ginex::internals::exec::config::DEFAULT_FEATURE_QUEUE_DEPTH;
    let (dir, store) = common::small_epoch_store();
    for policy in [Policy::Ginex, Policy::Degree, Policy::Lru] {
        let mut cfg = common::epoch_config(policy, &dir.path().join("runs"));
        assert_eq!(cfg.feature_queue_depth, DEFAULT_FEATURE_QUEUE_DEPTH);
        let (deep, seen_deep) = run(&store, &cfg);
        cfg.feature_queue_depth = 1;
        let (one, seen_one) = run(&store, &cfg);
        assert_eq!(seen_one, seen_deep, "{policy:?}");
        assert_eq!(one.misses(), deep.misses(), "{policy:?}");
        assert!(one.pages_read > 0, "{policy:?}");
        if policy != Policy::Ginex {
            assert_eq!(one.pages_read, deep.pages_read, "{policy:?}");
        }
    }
}

/// A 20,000-node store for the planner's tests (`train` of its nodes in
/// the training split, the synthesizer's `seed`) and a `policy` epoch over
/// it in batches of `batch_size`.
fn planner_store(
    policy: Policy,
    (seed, train): (u64, f64),
    batch_size: usize,
) -> (tempfile::TempDir, Store, EpochConfig) {
    let (dir, store) = common::temp_synth_store(&ginex::internals::import::synth::SynthParams {
        nodes: 20_000,
        avg_degree: 12.0,
        dim: 64,
        classes: 4,
        seed,
        split: [train, 0.1, 0.1],
        ..ginex::internals::import::synth::SynthParams::default()
    });
    let mut cfg = common::epoch_config(policy, &dir.path().join("runs"));
    cfg.batch_size = batch_size;
    (dir, store, cfg)
}

/// What a plan for `cfg` holds besides its caches and superbatches where
/// no cache split is priced (every buffer charged: the minimum a plan
/// checks): the fixed part, the batch buffers and the page-cache reserve.
fn unsplit_base(store: &Store, cfg: &EpochConfig) -> u64 {
    use ginex::internals::exec::plan::{plan_epoch, ExplicitSizes};
    let no_split = ExplicitSizes {
        neighbor_cache_bytes: Some(0),
        ..ExplicitSizes::default()
    };
    let p = plan_epoch(store, cfg, 1 << 30, no_split, 0).unwrap();
    p.fixed + p.batch_buffers + p.page_cache_reserve
}

/// The planner prices every split of the caches' budget on the probed
/// batches and takes the cheapest (or the default, within `MIN_GAIN`):
/// list reads fall and row reads rise as the neighbor cache's share grows,
/// and the neighbor cache's hit ratio predicted for the share it takes is
/// near what the epoch then measures.
#[test]
fn the_planner_splits_the_caches_by_predicted_reads() {
    use ginex::internals::exec::cache_split::{MIN_GAIN, NEIGHBOR_SHARES};
    use ginex::internals::exec::plan::{plan_epoch, ExplicitSizes};
    let (_dir, store, cfg) = planner_store(Policy::Degree, (5, 0.3), 500);
    let base = unsplit_base(&store, &cfg);
    for caches in [1u64 << 20, 3 << 20] {
        let mut c = cfg.clone();
        let p = plan_epoch(&store, &c, base + caches, ExplicitSizes::default(), 0).unwrap();
        p.apply(&mut c);
        assert!(p.total() <= base + caches, "{}", p.describe());
        let split = p.split.clone().expect("the split is measured");
        assert_eq!(split.priced.len(), NEIGHBOR_SHARES.len());
        for w in split.priced.windows(2) {
            assert!(w[1].list_reads <= w[0].list_reads + 1e-9, "{split:?}");
            assert!(w[1].row_reads >= w[0].row_reads - 1e-9, "{split:?}");
        }
        let best = split
            .priced
            .iter()
            .map(|p| p.reads())
            .fold(f64::MAX, f64::min);
        let chosen = split
            .priced
            .iter()
            .find(|p| p.share == split.share)
            .unwrap();
        assert!(
            chosen.reads() * (1.0 - MIN_GAIN) <= best + 1e-9,
            "{split:?}"
        );
        assert_eq!(c.neighbor_cache_bytes, split.neighbor_bytes);
        if split.serves_every_list() {
            // The list reader's buffer went to the feature cache.
            assert!(c.feature_cache_rows as u64 >= chosen.feature_rows);
        } else {
            assert_eq!(c.feature_cache_rows as u64, chosen.feature_rows);
        }
        let (report, _) = run(&store, &c);
        let predicted = 1.0 - chosen.list_reads / split.lookups as f64;
        let measured = report.neighbor_hit_ratio.unwrap();
        assert!(
            (predicted - measured).abs() < 0.1,
            "neighbor-cache hit ratio: predicted {predicted}, measured {measured}: {split:?}"
        );
    }
    // An explicit neighbor-cache size is kept, and nothing is priced.
    let explicit = ExplicitSizes {
        neighbor_cache_bytes: Some(1 << 16),
        ..ExplicitSizes::default()
    };
    let p = plan_epoch(&store, &cfg, base + (1 << 20), explicit, 0).unwrap();
    assert_eq!((p.neighbor_cache_bytes, p.split), (1 << 16, None));
}

/// Where the split predicts that the neighbor cache serves every list the
/// probed batches look up, the plan does not charge the sampler's list
/// reader's buffer (never filled) and gives it to the feature cache; the
/// epoch then reads no list.
#[test]
fn a_neighbor_cache_that_serves_every_list_frees_the_list_readers_buffer() {
    use ginex::internals::exec::plan::{plan_epoch, ExplicitSizes};
    use ginex::internals::store::gather::DEFAULT_CHUNK_BYTES;
    let (_dir, store, cfg) = planner_store(Policy::Ginex, (5, 0.3), 500);
    // Room for every list, and for some of the 20,000 rows.
    let memory = unsplit_base(&store, &cfg) + (4 << 20);
    let planned = plan_epoch(&store, &cfg, memory, ExplicitSizes::default(), 0).unwrap();
    let split = planned.split.clone().expect("the split is measured");
    assert!(split.serves_every_list(), "{split:?}");
    // The same neighbor cache given explicitly: no split, the buffer charged.
    let explicit = ExplicitSizes {
        neighbor_cache_bytes: Some(planned.neighbor_cache_bytes),
        ..ExplicitSizes::default()
    };
    let charged = plan_epoch(&store, &cfg, memory, explicit, 0).unwrap();
    assert!(charged.split.is_none());
    let list_buffer = (DEFAULT_CHUNK_BYTES as u64).min(planned.working_set.max_ids * 4096);
    assert_eq!(
        charged.batch_buffers - planned.batch_buffers,
        list_buffer,
        "{} / {}",
        charged.describe(),
        planned.describe()
    );
    assert!(
        planned.feature_cache_rows > charged.feature_cache_rows,
        "{} / {}",
        charged.describe(),
        planned.describe()
    );
    assert!(planned.total() <= memory, "{}", planned.describe());
    let mut c = cfg.clone();
    planned.apply(&mut c);
    let (report, _) = run(&store, &c);
    assert_eq!(report.list_reads, 0, "the prediction: every list cached");
}

/// Where a shorter automatic superbatch's first batches have no more
/// distinct rows than the feature cache planned beside it, the planner
/// shortens the superbatch to the longest such (at least
/// `MIN_FITTED_SUPERBATCH` batches), and the epoch then reads every miss
/// at a superbatch's init, none at gather time.
#[test]
fn a_superbatch_shortened_to_fit_the_cache_reads_every_miss_at_init() {
    use ginex::internals::exec::plan::{plan_epoch, ExplicitSizes};
    use ginex::internals::exec::superbatch_fit::MIN_FITTED_SUPERBATCH;
    let (_dir, store, cfg) = planner_store(Policy::Ginex, (5, 0.5), 100);
    let base = unsplit_base(&store, &cfg);
    let mut fitted = 0;
    for caches in (1..=16).map(|k| k << 19) {
        let p = plan_epoch(&store, &cfg, base + caches, ExplicitSizes::default(), 0).unwrap();
        let Some(fit) = p.superbatch_fit else {
            continue;
        };
        fitted += 1;
        assert!(fit.batches >= MIN_FITTED_SUPERBATCH, "{}", p.describe());
        assert!(p.superbatch <= fit.batches, "{}", p.describe());
        assert!(
            fit.distinct_rows <= p.feature_cache_rows,
            "{}",
            p.describe()
        );
        assert!(p.total() <= base + caches, "{}", p.describe());
        let mut c = cfg.clone();
        p.apply(&mut c);
        let (report, _) = run(&store, &c);
        // The first superbatch is checked; later ones differ a little.
        let first = report.batches[..p.superbatch as usize]
            .iter()
            .map(|b| b.misses)
            .sum::<u64>();
        assert_eq!(
            first,
            0,
            "misses at gather in the first superbatch: {}",
            p.describe()
        );
    }
    assert!(fitted > 0, "no budget gave a fitted superbatch");
}

/// The planner's cache split counts the out-degrees; under `ginex` with
/// the reuse prior it hands the prior it derives from them to the run
/// (`MemoryPlan::apply`), which then does not count them again: the same
/// prior as the run computes itself, the same batches, reads and final
/// caches, and no time spent on it in the run.
#[test]
fn the_planned_reuse_prior_is_the_one_the_run_would_count() {
    use ginex::internals::cache::belady::ReusePrior;
    use ginex::internals::exec::plan::{plan_epoch, ExplicitSizes};
    let (_dir, store, cfg) = planner_store(Policy::Ginex, (8, 0.3), 500);
    let memory = unsplit_base(&store, &cfg) + (3 << 20);
    let plan = plan_epoch(&store, &cfg, memory, ExplicitSizes::default(), 0).unwrap();
    assert!(plan.split.is_some(), "{}", plan.describe());
    let prior = plan
        .reuse_prior
        .clone()
        .expect("the split's out-degrees give the prior");
    assert_eq!(*prior, ReusePrior::of_store(&store).unwrap());
    let mut planned = cfg.clone();
    plan.apply(&mut planned);
    assert!(planned.out_degree_prior.is_some());
    let mut counted = planned.clone();
    counted.out_degree_prior = None;
    let (with_plan, seen_with_plan) = run(&store, &planned);
    let (with_count, seen_with_count) = run(&store, &counted);
    assert_eq!(seen_with_plan, seen_with_count);
    assert_eq!(with_plan.batches, with_count.batches);
    assert_eq!(with_plan.init_reads, with_count.init_reads);
    assert_eq!(with_plan.reuse_prior, std::time::Duration::ZERO);
    assert!(with_count.reuse_prior > std::time::Duration::ZERO);
    // Without the prior (or under another policy) the plan brings none.
    let mut none = cfg.clone();
    if let Some(g) = none.cache.ginex_mut() {
        g.reuse_prior = false;
    }
    let p = plan_epoch(&store, &none, memory, ExplicitSizes::default(), 0).unwrap();
    assert!(p.split.is_some() && p.reuse_prior.is_none());
}

/// No row policy reads fewer feature pages than the row-cache bound
/// (`exec::page_floor`), on a store in the generator's order, the same
/// graph with random node ids, and that one renumbered breadth-first: the
/// bound is a lower bound, not a reference a policy can beat (the old page
/// floor was beaten by 0.62× on random ids).
#[test]
fn no_policy_reads_fewer_pages_than_the_row_cache_bound() {
    use ginex::internals::exec::curves::Trace;
    use ginex::internals::exec::page_floor::page_floor;
    use ginex::internals::format::csc::DEFAULT_SEGMENT_BYTES;
    use ginex::internals::import::reorder::{node_order, write_reordered, Reorder};
    use ginex::internals::import::synth::SynthParams;

    // 1 KiB rows, four to a page: 2000 nodes on 500 pages, far more than
    // the 120-row cache's bound holds.
    let (dir, gen_order) = common::temp_synth_store(&SynthParams {
        nodes: 2000,
        avg_degree: 8.0,
        dim: 256,
        classes: 4,
        seed: 21,
        split: [0.3, 0.1, 0.1],
        ..SynthParams::default()
    });
    let mut random: Vec<u64> = (0..gen_order.num_nodes()).collect();
    let mut state = 99u64;
    for i in (1..random.len()).rev() {
        // A fixed LCG: the same random ids every run.
        state = state
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        random.swap(i, ((state >> 33) % (i as u64 + 1)) as usize);
    }
    let random_ids = write_reordered(
        &gen_order,
        &random,
        &dir.path().join("random"),
        DEFAULT_SEGMENT_BYTES,
    )
    .and_then(Store::open)
    .unwrap();
    let bfs = node_order(&random_ids, Reorder::Bfs).unwrap();
    let reordered = write_reordered(
        &random_ids,
        &bfs,
        &dir.path().join("bfs"),
        DEFAULT_SEGMENT_BYTES,
    )
    .and_then(Store::open)
    .unwrap();
    for (layout, store) in [
        ("gen order", &gen_order),
        ("random ids", &random_ids),
        ("bfs", &reordered),
    ] {
        for policy in Policy::ALL {
            if policy == Policy::Mmap {
                continue; // reads through the kernel's page cache, not a row cache
            }
            let mut cfg = common::epoch_config(policy, &dir.path().join("runs"));
            cfg.feature_cache_rows = 120;
            let mut trace = Trace::default();
            let r = run_epoch(store, &cfg, &mut |b| {
                trace.push(b.ids);
                Ok(())
            })
            .unwrap();
            let rows = cfg.feature_cache_rows as u64;
            let f = page_floor(&trace, store.feature_sections(), rows, rows * 1024);
            assert!(
                f.row_bound < f.pages_needed,
                "{layout}: the bound is trivial: {f:?}"
            );
            if policy == Policy::Ginex && layout == "random ids" {
                // Why the page-cache optimum is no bound: a row cache keeps
                // rows of more pages than a page cache of its bytes.
                assert!(r.pages_read < f.floor, "{} >= {}", r.pages_read, f.floor);
            }
            assert!(
                r.pages_read >= f.row_bound,
                "{layout}, {policy:?}: read {} pages, below the row-cache bound {}",
                r.pages_read,
                f.row_bound
            );
        }
    }
}

/// Sampling a whole superbatch in lockstep (each hop's lists asked for
/// once for all its batches, in file order) writes the runtime files and
/// gathers the batches that rounds of 16 do, byte for byte, on a store
/// whose lists mostly miss the neighbor cache; it reads the topology in
/// fewer requests. The planner chooses it where the batches fit.
#[test]
fn superbatch_lockstep_gives_the_batches_of_rounds_and_reads_less() {
    use ginex::internals::exec::config::Lockstep;
    use ginex::internals::exec::plan::{plan_epoch, ExplicitSizes};
    let (dir, store) = common::small_epoch_store();
    let mut results = Vec::new();
    for lockstep in [Lockstep::Rounds, Lockstep::Superbatch] {
        let mut cfg = common::epoch_config(Policy::Ginex, &dir.path().join(lockstep.name()));
        // 60 batches in superbatches of up to 40 (16, 32 and 12 under the
        // short first layout): rounds of 16 against one round each.
        cfg.batch_size = 10;
        cfg.neighbor_cache_bytes = 4_000;
        cfg.neighbor_cache = Some(dir.path().join("small.ncache"));
        let g = common::ginex_options(&mut cfg);
        g.superbatch = 40;
        g.lockstep = lockstep;
        g.keep_runs = true;
        let (r, seen) = run(&store, &cfg);
        assert!(r.batches.len() > 40, "{} batches", r.batches.len());
        let hits = r.neighbor_hit_ratio.expect("a neighbor cache");
        assert!(hits < 0.5, "the lists should mostly miss: hit ratio {hits}");
        assert_eq!(r.misses(), r.optimal_total());
        results.push((seen, kept_files(&r), r.list_reads, r.list_bytes_read));
    }
    let (rounds, whole) = (&results[0], &results[1]);
    assert_eq!(whole.0, rounds.0, "batches differ");
    assert!(rounds.1.len() >= 4, "{} runtime files", rounds.1.len());
    assert!(whole.1 == rounds.1, "runtime files differ");
    assert!(
        whole.2 < rounds.2,
        "list reads: superbatch {} against rounds {}",
        whole.2,
        rounds.2
    );
    // The plan: the whole superbatch where its batches fit (and applied),
    // rounds where asked.
    let mut cfg = common::epoch_config(Policy::Ginex, &dir.path().join("planned"));
    cfg.batch_size = 10;
    let p = plan_epoch(&store, &cfg, 1 << 30, ExplicitSizes::default(), 0).unwrap();
    assert_eq!(p.lockstep.mode, "superbatch", "{}", p.describe());
    assert_eq!(p.lockstep.batches, p.superbatch);
    assert!(
        p.superbatch > 16 && p.lockstep_bytes > 0,
        "{}",
        p.describe()
    );
    p.apply(&mut cfg);
    assert_eq!(cfg.cache.ginex().unwrap().lockstep, Lockstep::Superbatch);
    common::ginex_options(&mut cfg).lockstep = Lockstep::Rounds;
    let p = plan_epoch(&store, &cfg, 1 << 30, ExplicitSizes::default(), 0).unwrap();
    assert_eq!((p.lockstep.mode.as_str(), p.lockstep_bytes), ("rounds", 0));
}

/// A short first superbatch (16 batches, then doubling up to
/// `--superbatch`) gathers the batches the full layout gathers, byte for
/// byte; its misses are Belady's optimum per superbatch of its own layout
/// (each superbatch planned alone, from an empty cache, equals
/// `compute_changesets` of that superbatch's batches), and with the
/// defaults (carry-over, the reuse prior, page companions) the inspector's
/// optimum; every superbatch writes its own pair of runtime files.
#[test]
fn a_short_first_superbatch_gives_the_same_batches_and_optimal_misses_per_superbatch() {
    use ginex::internals::cache::belady::compute_changesets;
    use ginex::internals::exec::config::FirstSuperbatch;

    let (dir, store) = common::small_epoch_store();
    let config = |layout: FirstSuperbatch, standalone: bool| {
        let mut cfg = common::epoch_config(Policy::Ginex, &dir.path().join(layout.name()));
        // 60 batches of 10 seeds, in superbatches of 40.
        (cfg.batch_size, cfg.max_batches) = (10, Some(60));
        let g = common::ginex_options(&mut cfg);
        (g.superbatch, g.first_superbatch, g.keep_runs) = (40, layout, true);
        if standalone {
            (g.carry_over, g.reuse_prior, g.page_companions) = (false, false, false);
        }
        cfg
    };
    let mut seen_by = Vec::new();
    for layout in FirstSuperbatch::ALL {
        let bounds = layout.bounds(60, 40);
        let (r, seen) = run(&store, &config(layout, false));
        assert_eq!(r.superbatches, bounds.len() as u64, "{layout:?}");
        assert_eq!(kept_files(&r).len(), 2 * bounds.len(), "{layout:?}");
        assert_eq!(r.misses(), r.optimal_total(), "{layout:?}");
        let per_batch: Vec<u64> = r.batches.iter().map(|b| b.misses).collect();
        assert_eq!(per_batch, r.optimal_misses, "{layout:?}");
        seen_by.push(seen);

        let cfg = config(layout, true);
        let mut ids = Vec::new();
        let alone = run_epoch(&store, &cfg, &mut |b| {
            ids.push(b.ids.to_vec());
            Ok(())
        })
        .unwrap();
        assert_eq!(ids.len(), 60);
        let (mut want_init, mut want_misses) = (0, Vec::new());
        for sb in &bounds {
            let cs = compute_changesets(
                &ids[sb.start as usize..sb.end as usize],
                cfg.feature_cache_rows,
                1,
            );
            want_init += cs.init_reads;
            want_misses.extend_from_slice(&cs.misses);
        }
        let got: Vec<u64> = alone.batches.iter().map(|b| b.misses).collect();
        assert_eq!(got, want_misses, "{layout:?}: misses per batch");
        // (The executor skips init rows its slots still hold, so it may
        // read fewer than the plan counts.)
        assert_eq!(
            alone.optimal_init_reads, want_init,
            "{layout:?}: init reads"
        );
        assert!(alone.init_reads <= want_init, "{layout:?}");
    }
    for (layout, seen) in FirstSuperbatch::ALL.iter().zip(&seen_by) {
        assert_eq!(seen, &seen_by[0], "{layout:?} gathered other batches");
    }
    assert_eq!(
        FirstSuperbatch::Short.bounds(60, 40).len(),
        3,
        "16, 32 and 12 batches"
    );
}
