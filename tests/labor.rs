//! LABOR sampling end to end: the sampler's batches are the same from any
//! source, thread count and round; they need fewer vertices than neighbor
//! sampling; batch dependency makes consecutive batches share vertices;
//! per-relation fanouts stay in their relation runs; weights survive the
//! runtime files; every policy gathers the same LABOR batches and ginex
//! stays optimal.

mod common;

use std::collections::HashSet;

use ginex::internals::cache::Policy;
use ginex::internals::exec::epoch::{run_epoch, EpochReport};
use ginex::internals::exec::pipeline::Pipeline;
use ginex::internals::sample::fanouts::{Fanouts, ResolvedFanouts};
use ginex::internals::sample::labor::{Sampler, SamplerConfig};
use ginex::internals::sample::sampler::{
    decode_hops, decode_hops_with, encode_hops_with, EpochSampler, SampledBatch,
};
use ginex::internals::sample::source::{InMemoryTopology, NeighborSource, StoreSource};
use ginex::internals::store::gather::GatherOptions;
use ginex::Store;

fn labor(sampler: Sampler, layer: bool, batch: u64) -> SamplerConfig {
    SamplerConfig {
        sampler,
        layer_dependency: layer,
        batch_dependency: batch,
    }
}

fn fanouts(f: &[i64], s: SamplerConfig) -> ResolvedFanouts {
    ResolvedFanouts::from(f).with_sampler(s).unwrap()
}

fn unique_per_batch(batches: &[SampledBatch]) -> f64 {
    batches.iter().map(|b| b.ids.len()).sum::<usize>() as f64 / batches.len() as f64
}

/// Every LABOR hop is well formed: each target's kept neighbours are
/// distinct in-neighbours of it, and its weights are positive and sum to 1.
fn check_labor(b: &SampledBatch, topo: &InMemoryTopology) {
    for hop in &b.hops {
        assert_eq!(hop.weights.len(), hop.src.len());
        let mut sums = vec![0f32; hop.num_dst];
        let mut seen = HashSet::new();
        for ((&s, &d), &w) in hop.src.iter().zip(&hop.dst).zip(&hop.weights) {
            assert!(w > 0.0 && w <= 1.0 + 1e-6, "{w}");
            sums[d as usize] += w;
            let (u, v) = (b.ids[s as usize], b.ids[d as usize]);
            assert!(topo.list(v).contains(&u), "{u} is no in-neighbour of {v}");
            assert!(seen.insert((s, d)), "edge {u}->{v} twice");
        }
        for (d, sum) in sums.iter().enumerate() {
            let has = hop.dst.contains(&(d as u32));
            assert!(!has || (sum - 1.0).abs() < 1e-4, "target {d}: {sum}");
        }
    }
}

#[test]
fn labor_batches_are_the_same_from_every_source_thread_count_and_round() {
    let (_dir, s) = common::small_epoch_store();
    let topo = InMemoryTopology::load(&s).unwrap();
    let opts = GatherOptions {
        direct: false,
        ..GatherOptions::default()
    };
    let disk = StoreSource::new(&s, None, &opts).unwrap();
    let train = s.splits().unwrap().unwrap().train;
    for config in [
        labor(Sampler::Labor0, false, 1),
        labor(Sampler::LaborStar, true, 3),
    ] {
        let f = fanouts(&[8, 4, -1], config);
        let reference: Vec<SampledBatch> = {
            let sampler = EpochSampler::new(&topo, &train, 64, f.clone(), 5, 1).unwrap();
            (0..sampler.num_batches())
                .map(|b| sampler.sample(b).unwrap())
                .collect()
        };
        for b in &reference {
            check_labor(b, &topo);
        }
        let sources: [&dyn NeighborSource; 2] = [&topo, &disk];
        for src in sources {
            let sampler = EpochSampler::new(src, &train, 64, f.clone(), 5, 1).unwrap();
            let n = sampler.num_batches();
            for threads in [1, 3] {
                let pool = rayon::ThreadPoolBuilder::new()
                    .num_threads(threads)
                    .build()
                    .unwrap();
                let rounds: Vec<SampledBatch> = pool.install(|| {
                    (0..n)
                        .step_by(4)
                        .flat_map(|b| sampler.sample_round(b..(b + 4).min(n)).unwrap())
                        .collect()
                });
                assert_eq!(rounds, reference, "{config:?}, {threads} threads");
            }
        }
        // The weights survive the runtime encoding; a reader that expects
        // none refuses a weighted record, and the other way round.
        let hops = &reference[0].hops;
        let p = encode_hops_with(hops, true).unwrap();
        assert_eq!(&decode_hops_with(&p, true).unwrap(), hops);
        assert!(decode_hops(&p).is_err());
        let plain = encode_hops_with(hops, false).unwrap();
        assert!(decode_hops_with(&plain, true).is_err());
        let mut torn = p.clone();
        torn.truncate(p.len() - 2);
        assert!(decode_hops_with(&torn, true).is_err());
    }
}

/// LABOR needs fewer distinct vertices than neighbor sampling at the same
/// fanouts, the fixed-point variants fewer still; batch dependency makes
/// consecutive batches share more of them.
#[test]
fn labor_needs_fewer_vertices_and_batch_dependency_shares_them() {
    let (_dir, s) = common::small_epoch_store();
    let topo = InMemoryTopology::load(&s).unwrap();
    let train = s.splits().unwrap().unwrap().train;
    let epoch = |config: SamplerConfig| -> Vec<SampledBatch> {
        let sampler =
            EpochSampler::new(&topo, &train, 100, fanouts(&[10, 10], config), 2, 0).unwrap();
        (0..sampler.num_batches())
            .map(|b| sampler.sample(b).unwrap())
            .collect()
    };
    let neighbor = unique_per_batch(&epoch(SamplerConfig::default()));
    let zero = unique_per_batch(&epoch(labor(Sampler::Labor0, false, 1)));
    let star = unique_per_batch(&epoch(labor(Sampler::LaborStar, false, 1)));
    assert!(
        zero < 0.9 * neighbor,
        "labor-0 {zero} vs neighbor {neighbor}"
    );
    assert!(star < zero, "labor-* {star} vs labor-0 {zero}");
    let overlap = |batches: &[SampledBatch]| -> usize {
        batches
            .windows(2)
            .map(|w| {
                let a: HashSet<u64> = w[0].ids[w[0].num_seeds..].iter().copied().collect();
                w[1].ids[w[1].num_seeds..]
                    .iter()
                    .filter(|v| a.contains(v))
                    .count()
            })
            .sum()
    };
    let independent = overlap(&epoch(labor(Sampler::Labor0, false, 1)));
    let dependent = overlap(&epoch(labor(Sampler::Labor0, false, 4)));
    assert!(
        dependent as f64 > 1.1 * independent as f64,
        "batch dependency 4: {dependent} shared vertices, independent {independent}"
    );
}

/// On a typed store each relation run draws with its own count: a
/// relation with count 0 keeps no edge, every kept edge is an in-edge of
/// its target.
#[test]
fn per_relation_fanouts_keep_working_with_labor() {
    let dir = tempfile::tempdir().unwrap();
    let typed = common::typed_store(dir.path(), 2000);
    let schema = typed.schema().unwrap().clone();
    let topo = InMemoryTopology::load(&typed).unwrap();
    let resolved = Fanouts::parse("cites=3:1,writes=0:2,*=1:1")
        .unwrap()
        .resolve(Some(&schema))
        .unwrap()
        .with_sampler(Sampler::Labor1)
        .unwrap();
    let train = typed.splits().unwrap().unwrap().train;
    let sampler = EpochSampler::new(&topo, &train, 50, resolved, 1, 0).unwrap();
    let writes = schema
        .relations
        .iter()
        .find(|r| schema.canonical(r).contains(":writes:"))
        .unwrap();
    let authors = schema.node_types[writes.src as usize].ids();
    let papers = schema.node_types[writes.dst as usize].ids();
    let mut seed_hop_edges = 0;
    for b in 0..sampler.num_batches().min(6) {
        let batch = sampler.sample(b).unwrap();
        check_labor(&batch, &topo);
        // The seeds' hop (last): `writes` has count 0 there.
        let hop = batch.hops.last().unwrap();
        for (&s, &d) in hop.src.iter().zip(&hop.dst) {
            let (u, v) = (batch.ids[s as usize], batch.ids[d as usize]);
            assert!(
                !(authors.contains(&u) && papers.contains(&v)),
                "writes edge {u}->{v} at a hop whose writes count is 0"
            );
            seed_hop_edges += 1;
        }
    }
    assert!(seed_hop_edges > 0);
}

fn run(store: &Store, cfg: &ginex::internals::exec::epoch::EpochConfig) -> (EpochReport, Vec<u32>) {
    let mut seen = Vec::new();
    let r = run_epoch(store, cfg, &mut |b| {
        for hop in b.hops {
            assert_eq!(
                hop.weights.len(),
                hop.src.len(),
                "LABOR weights reach the consumer"
            );
        }
        let mut h = crc32fast::Hasher::new();
        h.update(b.rows);
        for hop in b.hops {
            h.update(
                &hop.src
                    .iter()
                    .flat_map(|x| x.to_le_bytes())
                    .collect::<Vec<_>>(),
            );
            h.update(
                &hop.weights
                    .iter()
                    .flat_map(|x| x.to_le_bytes())
                    .collect::<Vec<_>>(),
            );
        }
        seen.push(h.finalize());
        Ok(())
    })
    .unwrap();
    (r, seen)
}

/// Every policy gathers the same LABOR batches (their hops and weights
/// included), ginex's executor meets the inspector's optimum, and the
/// serial and full pipelines agree.
#[test]
fn every_policy_and_schedule_gathers_the_same_labor_batches() {
    let (dir, store) = common::small_epoch_store();
    let mut reference: Option<(EpochReport, Vec<u32>)> = None;
    for policy in Policy::ALL {
        let mut cfg = common::epoch_config(policy, &dir.path().join("runs"));
        cfg.sampler = labor(Sampler::LaborStar, false, 2);
        let (r, seen) = run(&store, &cfg);
        match &reference {
            None => {
                assert_eq!(policy, Policy::Ginex);
                let per_batch: Vec<u64> = r.batches.iter().map(|b| b.misses).collect();
                assert_eq!(
                    per_batch, r.optimal_misses,
                    "ginex vs the inspector's optimum"
                );
                reference = Some((r, seen));
            }
            Some((g, want)) => {
                assert_eq!(&seen, want, "{policy:?} gathered other batches");
                assert!(g.misses() <= r.misses(), "{policy:?}");
            }
        }
    }
    let want = reference.unwrap().1;
    for pipeline in [Pipeline::Serial, Pipeline::Full] {
        let mut cfg = common::epoch_config(Policy::Ginex, &dir.path().join(pipeline.name()));
        cfg.sampler = labor(Sampler::LaborStar, false, 2);
        cfg.workers = 3;
        common::ginex_options(&mut cfg).pipeline = pipeline;
        assert_eq!(run(&store, &cfg).1, want, "{pipeline:?}");
    }
}

/// The memory planner counts what LABOR reads: the candidates of its
/// probed batches are every in-list entry of each hop's targets, so with
/// all neighbours kept they are exactly the batches' edges, with fanout 2
/// more than the edges, and neighbor sampling has none; the plan's
/// minimum grows with them.
#[test]
fn the_memory_plan_counts_labors_candidates() {
    use ginex::internals::exec::plan::{plan_epoch, ExplicitSizes};
    let (dir, store) = common::small_epoch_store();
    let plan = |sampler: SamplerConfig, f: &[i64], memory: u64| {
        let mut cfg = common::epoch_config(Policy::Ginex, &dir.path().join("runs"));
        cfg.sampler = sampler;
        cfg.fanouts = Fanouts::Uniform(f.to_vec());
        plan_epoch(&store, &cfg, memory, ExplicitSizes::default(), 0)
    };
    let gib = 1u64 << 30;
    let labor0 = labor(Sampler::Labor0, false, 1);
    let all = plan(labor0, &[-1, -1], gib).unwrap().working_set;
    assert!(all.mean_edges > 0.0);
    assert_eq!(
        all.mean_candidates, all.mean_edges,
        "all kept: candidates = edges"
    );
    let two = plan(labor0, &[2, 2], gib).unwrap().working_set;
    assert!(
        two.mean_candidates > two.mean_edges,
        "fanout 2 reads more than it keeps: {two:?}"
    );
    let neighbor = plan(SamplerConfig::default(), &[2, 2], gib)
        .unwrap()
        .working_set;
    assert_eq!(neighbor.mean_candidates, 0.0);
    // The smallest budget each accepts: LABOR's is larger by its candidates.
    let minimum = |s: SamplerConfig| {
        let (mut lo, mut hi) = (1u64, gib);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if plan(s, &[2, 2], mid).is_ok() {
                hi = mid;
            } else {
                lo = mid + 1;
            }
        }
        lo
    };
    let extra = minimum(labor0) as f64 - minimum(SamplerConfig::default()) as f64;
    assert!(
        extra >= 8.0 * two.mean_candidates,
        "LABOR's minimum is {extra} bytes above neighbor sampling's for {} candidates a batch",
        two.mean_candidates
    );
}
