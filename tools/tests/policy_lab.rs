//! The policy lab: the trace simulator is exact (its per-batch misses are
//! what `run_epoch` measures, for every policy), Belady is a lower bound of
//! every policy on random traces, traces round-trip through `.npy`, and
//! `ginex bench curves` writes its table, JSON and plot.

#[path = "../../tests/common/mod.rs"]
mod common;

use ginex::internals::cache::belady::{PageGroups, ReusePrior};
use ginex::internals::cache::Policy;
use ginex::internals::exec::config::{CacheConfig, FirstSuperbatch, GinexOptions};
use ginex::internals::exec::curves::{
    offsets_path, replay, sample_trace, CurvePolicy, ReplayConfig, StaticRanks, Trace, TraceSpec,
};
use ginex::internals::exec::epoch::{run_epoch, EpochConfig};
use ginex::internals::import::synth::SynthParams;
use ginex::internals::sample::source::InMemoryTopology;
use ginex::Store;
use ginex_cli::bench::curves::{run_curves_bench_to, CurvesBenchArgs};
use proptest::prelude::*;

fn setup() -> (tempfile::TempDir, Store) {
    common::temp_synth_store(&SynthParams {
        nodes: 3000,
        avg_degree: 10.0,
        dim: 8,
        classes: 4,
        seed: 5,
        split: [0.2, 0.1, 0.1],
        ..SynthParams::default()
    })
}

const SEED: u64 = 7;
const EPOCH: u64 = 2;

fn epoch_config(policy: Policy, rows: usize, run_dir: &std::path::Path) -> EpochConfig {
    let ginex = GinexOptions {
        superbatch: 4,
        ..GinexOptions::default()
    };
    EpochConfig {
        cache: CacheConfig::new(policy, ginex, 1),
        feature_cache_rows: rows,
        neighbor_cache_bytes: 30_000,
        batch_size: 50,
        fanouts: vec![5, 3].into(),
        seed: SEED,
        epoch: EPOCH,
        workers: 2,
        run_dir: run_dir.to_path_buf(),
        max_batches: Some(10),
        ..EpochConfig::default()
    }
}

#[test]
fn simulator_equals_the_executor_for_every_policy_at_two_sizes() {
    let (dir, store) = setup();
    let topo = InMemoryTopology::load(&store).unwrap();
    let spec = TraceSpec {
        batch_size: 50,
        fanouts: vec![5, 3].into(),
        seed: SEED,
        epoch: EPOCH,
        epochs: 1,
        max_batches: Some(10),
        workers: 2,
    };
    let trace = sample_trace(&store, &topo, &spec).unwrap();
    assert_eq!(trace.num_batches(), 10);
    trace.validate(store.num_nodes(), "t".as_ref()).unwrap();
    let mut all = vec![
        (Policy::Ginex, CurvePolicy::Ginex { every: 1 }, 1),
        (Policy::Ginex, CurvePolicy::Ginex { every: 3 }, 3),
    ];
    // Every other policy with a feature cache, from the policy table:
    // degree, presc and every dynamic policy.
    all.extend(
        Policy::ALL
            .into_iter()
            .filter(|&p| p != Policy::Ginex)
            .filter_map(|p| CurvePolicy::of(p).map(|c| (p, c, 1))),
    );
    assert!(all.len() >= 8, "{all:?}");
    let curve_policies: Vec<CurvePolicy> = all.iter().map(|a| a.1).collect();
    let ranks = StaticRanks::compute(&store, &topo, &spec, 1, 900, &curve_policies).unwrap();
    let config = ReplayConfig {
        num_nodes: store.num_nodes(),
        superbatch: 4,
        first_superbatch: FirstSuperbatch::Full,
        prior: ReusePrior::of_store(&store).unwrap(),
        // The executor's default on this layout.
        page_companions: PageGroups::of(store.layout().rows_per_page() as u64),
    };
    for rows in [150, 900] {
        let mut distinct = std::collections::BTreeSet::new();
        for &(policy, curve, every) in &all {
            let mut cfg = epoch_config(policy, rows, &dir.path().join("runs"));
            if let Some(ginex) = cfg.cache.ginex_mut() {
                ginex.changeset_every = every;
            }
            let mut gathered = Vec::new();
            let report = run_epoch(&store, &cfg, &mut |b| {
                gathered.push(b.ids.to_vec());
                Ok(())
            })
            .unwrap();
            assert_eq!(
                Trace::from_batches(&gathered),
                trace,
                "{policy:?}: the executor gathered another trace"
            );
            let sim = replay(&trace, curve, rows, &config, &ranks).unwrap();
            let measured: Vec<u64> = report.batches.iter().map(|b| b.misses).collect();
            assert_eq!(
                sim.batch_misses,
                measured,
                "{} at {rows} rows: simulator vs run_epoch",
                curve.name()
            );
            assert_eq!(
                (sim.init_misses, sim.total_misses()),
                (report.init_reads, report.misses()),
                "{} at {rows} rows: init reads and total misses, simulator vs run_epoch",
                curve.name()
            );
            distinct.insert(sim.total_misses());
            match curve {
                CurvePolicy::Degree | CurvePolicy::Presc => {
                    assert_eq!(sim.init_misses, rows as u64)
                }
                CurvePolicy::Dynamic(_) => assert_eq!(sim.init_misses, 0),
                CurvePolicy::Ginex { .. } => {
                    assert!(sim.init_misses > 0 && sim.init_misses <= 3 * rows as u64)
                }
            }
        }
        assert!(
            distinct.len() >= 4,
            "policies should differ at {rows} rows: {distinct:?}"
        );
    }
}

/// Under either superbatch layout (a short first superbatch that doubles
/// up to the configured size, or every superbatch full) the simulator
/// cuts the trace where the executor does, so its misses are the
/// executor's, batch for batch; the short layout cuts more superbatches.
#[test]
fn simulator_equals_the_executor_under_both_superbatch_layouts() {
    let (dir, store) = setup();
    let topo = InMemoryTopology::load(&store).unwrap();
    // Batches of 10 seeds: 60 batches, in superbatches of 40.
    let spec = TraceSpec {
        batch_size: 10,
        fanouts: vec![5, 3].into(),
        seed: SEED,
        epoch: EPOCH,
        epochs: 1,
        max_batches: Some(60),
        workers: 2,
    };
    let trace = sample_trace(&store, &topo, &spec).unwrap();
    assert_eq!(trace.num_batches(), 60);
    let mut superbatches = Vec::new();
    for layout in FirstSuperbatch::ALL {
        let config = ReplayConfig {
            num_nodes: store.num_nodes(),
            superbatch: 40,
            first_superbatch: layout,
            prior: ReusePrior::of_store(&store).unwrap(),
            page_companions: PageGroups::of(store.layout().rows_per_page() as u64),
        };
        for (rows, every) in [(150, 1), (600, 1), (150, 3)] {
            let mut cfg = epoch_config(Policy::Ginex, rows, &dir.path().join("runs"));
            cfg.batch_size = 10;
            cfg.max_batches = Some(60);
            let g = cfg.cache.ginex_mut().unwrap();
            (g.superbatch, g.first_superbatch, g.changeset_every) = (40, layout, every);
            let mut gathered = Vec::new();
            let report = run_epoch(&store, &cfg, &mut |b| {
                gathered.push(b.ids.to_vec());
                Ok(())
            })
            .unwrap();
            assert_eq!(Trace::from_batches(&gathered), trace, "{layout:?}");
            let sim = replay(
                &trace,
                CurvePolicy::Ginex { every },
                rows,
                &config,
                &StaticRanks::default(),
            )
            .unwrap();
            let measured: Vec<u64> = report.batches.iter().map(|b| b.misses).collect();
            assert_eq!(
                sim.batch_misses, measured,
                "{layout:?} at {rows} rows, every {every}"
            );
            assert_eq!(
                sim.init_misses, report.init_reads,
                "{layout:?} at {rows} rows"
            );
            assert_eq!(report.superbatches, layout.bounds(60, 40).len() as u64);
        }
        superbatches.push(layout.bounds(60, 40).len());
    }
    // Auto (no plan resolves it: short) and short: 16, 32, 12 batches;
    // full: 40, 20.
    assert_eq!(superbatches, vec![3, 3, 2]);
}

/// Random traces: batches of distinct ids below 40.
fn traces() -> impl Strategy<Value = Vec<Vec<u64>>> {
    proptest::collection::vec(
        proptest::collection::vec(0u64..40, 0..15).prop_map(|v| {
            let mut seen = std::collections::HashSet::new();
            v.into_iter().filter(|x| seen.insert(*x)).collect()
        }),
        1..30,
    )
}

proptest! {
    #[test]
    fn belady_is_a_lower_bound_of_every_policy(
        batches in traces(),
        ranking in Just((0u64..40).collect::<Vec<u64>>()).prop_shuffle(),
        capacity in 1usize..50,
    ) {
        let trace = Trace::from_batches(&batches);
        let config = ReplayConfig {
            num_nodes: 40,
            superbatch: 0,
            first_superbatch: FirstSuperbatch::Full,
            prior: ReusePrior::none(),
            page_companions: None,
        };
        let ranks = StaticRanks { degree: ranking.clone(), presc: ranking.into_iter().rev().collect() };
        let belady = replay(&trace, CurvePolicy::Ginex { every: 1 }, capacity, &config, &ranks)
            .unwrap()
            .total_misses();
        // (Not k-hop: the rows gathered during a window act as a free
        // buffer, so k-hop can beat batch-granular Belady on some traces.)
        // Degree, presc and every dynamic policy of the policy table.
        for policy in CurvePolicy::DEFAULT
            .into_iter()
            .filter(|p| !matches!(p, CurvePolicy::Ginex { .. }))
        {
            let other = replay(&trace, policy, capacity, &config, &ranks).unwrap().total_misses();
            prop_assert!(belady <= other, "{}: {} < Belady {}", policy.name(), other, belady);
        }
    }
}

#[test]
fn traces_round_trip_through_npy_and_bad_traces_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let t = Trace::from_batches(&[vec![3u64, 1, 4], vec![], vec![1, 5, 9, 2]]);
    let p = dir.path().join("t.npy");
    t.write_npy(&p).unwrap();
    assert!(offsets_path(&p).ends_with("t.offsets.npy"));
    let back = Trace::read_npy(&p).unwrap();
    assert_eq!(back, t);
    back.validate(10, &p).unwrap();

    let err = |t: &Trace, n: u64| t.validate(n, &p).unwrap_err().to_string();
    assert!(err(&t, 9).contains("node 9"), "{}", err(&t, 9));
    let dup = Trace::from_batches(&[vec![1u64, 2], vec![2, 7, 2]]);
    assert!(err(&dup, 10).contains("batch 1 lists node 2 twice"));
    let bad = Trace {
        ids: vec![1, 2, 3],
        offsets: vec![0, 2, 1, 3],
    };
    assert!(err(&bad, 10).contains("below the previous"));
    let short = Trace {
        ids: vec![1, 2, 3],
        offsets: vec![0, 2],
    };
    assert!(err(&short, 10).contains("holds 3 ids"));
    // A missing offsets file is an error naming it.
    std::fs::remove_file(offsets_path(&p)).unwrap();
    let e = Trace::read_npy(&p).unwrap_err().to_string();
    assert!(e.contains("t.offsets.npy"), "{e}");
}

fn args(store: &std::path::Path, dir: &std::path::Path) -> CurvesBenchArgs {
    CurvesBenchArgs {
        store: store.to_path_buf(),
        sizes: vec![0.02, 0.1, 0.3],
        policies: CurvePolicy::DEFAULT.iter().map(|p| p.name()).collect(),
        batch_size: 50,
        fanouts: vec![5, 3].into(),
        seed: 1,
        epoch: 0,
        epochs: 2,
        batches: None,
        superbatch: 0,
        first_superbatch: FirstSuperbatch::Short,
        no_reuse_prior: false,
        no_page_companions: false,
        presc_rounds: 1,
        threads: Some(2),
        trace_out: None,
        trace_in: None,
        plot: dir.join("curves.svg"),
        json: true,
    }
}

#[test]
fn bench_curves_writes_table_json_plot_and_replays_its_own_trace() {
    let (dir, _store) = setup();
    let store = dir.path().join("s");
    let mut a = args(&store, dir.path());
    a.trace_out = Some(dir.path().join("trace.npy"));
    let (mut out, mut table) = (Vec::new(), Vec::new());
    run_curves_bench_to(&a, &mut out, &mut table).unwrap();
    let table = String::from_utf8(table).unwrap();
    for name in [
        "ginex-k8",
        "presc",
        "sieve",
        "s3fifo",
        "clock",
        "miss ratio / ginex's (Belady with page companions",
        "the row-cache bound",
        "page opt",
    ] {
        assert!(table.contains(name), "{name} missing from\n{table}");
    }
    let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
    let points = v["points"].as_array().unwrap();
    assert_eq!(points.len(), 3 * CurvePolicy::DEFAULT.len());
    for p in points {
        let r = p["vs_belady"].as_f64().unwrap();
        if !p["policy"].as_str().unwrap().starts_with("ginex") {
            assert!(r >= 1.0 - 1e-12, "{p} below Belady");
        }
    }
    let svg = std::fs::read_to_string(dir.path().join("curves.svg")).unwrap();
    assert_eq!(svg.matches("<polyline").count(), CurvePolicy::DEFAULT.len());
    // A page floor per size: between the distinct pages and the pages the
    // batches touch, falling as the cache grows.
    assert_eq!(v["page_companions"], true);
    assert_eq!(v["first_superbatch"], "short");
    let floors = v["page_floor"].as_array().unwrap();
    assert_eq!(floors.len(), 3);
    let floor = |f: &serde_json::Value| f["floor"].as_u64().unwrap();
    for f in floors {
        assert!(f["distinct_pages"].as_u64().unwrap() <= floor(f), "{f}");
        assert!(floor(f) <= f["pages_needed"].as_u64().unwrap(), "{f}");
    }
    assert!(
        floors.windows(2).all(|w| floor(&w[1]) <= floor(&w[0])),
        "{floors:?}"
    );
    // The row-cache bound: at most the page-cache optimum (its cache has a
    // page for every row), at least the distinct pages, falling too.
    let bound = |f: &serde_json::Value| f["row_bound"].as_u64().unwrap();
    for f in floors {
        assert!(f["distinct_pages"].as_u64().unwrap() <= bound(f), "{f}");
        assert!(bound(f) <= floor(f), "{f}");
    }
    assert!(
        floors.windows(2).all(|w| bound(&w[1]) <= bound(&w[0])),
        "{floors:?}"
    );

    // The written trace replays to the same misses.
    let mut b = args(&store, dir.path());
    b.trace_in = a.trace_out.clone();
    let mut out2 = Vec::new();
    run_curves_bench_to(&b, &mut out2, &mut Vec::new()).unwrap();
    let v2: serde_json::Value = serde_json::from_slice(&out2).unwrap();
    let misses = |v: &serde_json::Value| -> Vec<u64> {
        v["points"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p["misses"].as_u64().unwrap())
            .collect()
    };
    assert_eq!(misses(&v), misses(&v2));
    assert_eq!(v["trace"]["accesses"], v2["trace"]["accesses"]);

    // Unknown policies and sizes outside [0, 1] are refused.
    let mut c = args(&store, dir.path());
    c.policies = vec!["arc".into()];
    let e = run_curves_bench_to(&c, &mut Vec::new(), &mut Vec::new()).unwrap_err();
    assert!(e.to_string().contains("unknown policy \"arc\""), "{e}");
    let mut d = args(&store, dir.path());
    d.sizes = vec![1.5];
    assert!(run_curves_bench_to(&d, &mut Vec::new(), &mut Vec::new()).is_err());
}

#[test]
fn k_hop_can_beat_batch_exact_belady_so_it_is_not_a_lower_bound_case() {
    // Capacity 1, windows of 2: [{y}, {z}], [{x}, {y}], [{x}]. Exact
    // Belady keeps y through batch 2 (x is used later than y) and misses x
    // twice; k-hop decides after the second window, when y is never used
    // again, and keeps x from the window's gathered rows.
    let trace = Trace::from_batches(&[vec![1u64], vec![2], vec![0], vec![1], vec![0]]);
    let config = ReplayConfig {
        num_nodes: 3,
        superbatch: 0,
        first_superbatch: FirstSuperbatch::Full,
        prior: ReusePrior::none(),
        page_companions: None,
    };
    let ranks = StaticRanks::default();
    let total = |every| {
        replay(&trace, CurvePolicy::Ginex { every }, 1, &config, &ranks)
            .unwrap()
            .total_misses()
    };
    assert_eq!(total(1), 4);
    assert_eq!(total(2), 3);
}
