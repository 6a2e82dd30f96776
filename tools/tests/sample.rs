//! The sampler: reproducibility, bounds, uniformity, and that the neighbor
//! source (memory, disk, cached disk) never changes a batch.

#[path = "../../tests/common/mod.rs"]
mod common;

use std::collections::HashMap;

use ginex::internals::import::synth::{NoProgress, SynthParams};
use ginex::internals::io::Backend;
use ginex::internals::sample::fanouts::Fanouts;
use ginex::internals::sample::neighbor_cache::NeighborCache;
use ginex::internals::sample::sampler::{
    batch_seed, decode_hops, encode_hops, sample_batch, sample_in_lockstep, EpochSampler,
    SampledBatch,
};
use ginex::internals::sample::source::{InMemoryTopology, ListCache, NeighborSource, StoreSource};
use ginex::internals::store::gather::GatherOptions;
use ginex::Store;

fn store(dir: &std::path::Path) -> Store {
    let p = SynthParams {
        nodes: 5000,
        avg_degree: 15.0,
        dim: 4,
        classes: 4,
        seed: 21,
        split: [0.3, 0.1, 0.1],
        ..SynthParams::default()
    };
    common::open_synth_store(dir, "s", &p)
}

fn check_structure(b: &SampledBatch, seeds: &[u64], fanouts: &[i64], topo: &InMemoryTopology) {
    assert_eq!(&b.ids[..b.num_seeds], seeds, "seeds first");
    let mut seen = std::collections::HashSet::new();
    assert!(
        b.ids.iter().all(|id| seen.insert(*id)),
        "an id appears twice in ids"
    );
    assert_eq!(b.hops.len(), fanouts.len());
    assert_eq!(b.hops.last().unwrap().num_dst, b.num_seeds);
    assert_eq!(b.hops[0].num_src, b.ids.len());
    for (h, hop) in b.hops.iter().enumerate() {
        if h + 1 < b.hops.len() {
            assert_eq!(
                hop.num_dst,
                b.hops[h + 1].num_src,
                "targets of a hop are the sources of the next"
            );
        }
        let k = fanouts[fanouts.len() - 1 - h];
        let mut per_target: HashMap<u32, Vec<u64>> = HashMap::new();
        for (&s, &d) in hop.src.iter().zip(&hop.dst) {
            assert!((s as usize) < hop.num_src && (d as usize) < hop.num_dst);
            per_target.entry(d).or_default().push(b.ids[s as usize]);
        }
        for t in 0..hop.num_dst as u32 {
            let drawn = per_target.remove(&t).unwrap_or_default();
            let list = topo.list(b.ids[t as usize]);
            let mut distinct = list.to_vec();
            distinct.dedup();
            let want = if k < 0 {
                distinct.len()
            } else {
                (k as usize).min(distinct.len())
            };
            assert!(drawn.len() <= want, "fanout bound");
            let mut sorted = drawn.clone();
            sorted.sort_unstable();
            sorted.dedup();
            assert_eq!(
                sorted.len(),
                drawn.len(),
                "duplicate neighbor within one draw"
            );
            assert!(
                drawn.iter().all(|u| list.binary_search(u).is_ok()),
                "drew a non-neighbor"
            );
            if list.len() == distinct.len() {
                assert_eq!(drawn.len(), want);
            }
        }
    }
}

#[test]
fn batches_are_well_formed_and_reproducible_across_threads() {
    let dir = tempfile::tempdir().unwrap();
    let s = store(dir.path());
    let topo = InMemoryTopology::load(&s).unwrap();
    let train = s.splits().unwrap().unwrap().train;
    let fanouts = vec![10, 5, -1];
    let sampler = EpochSampler::new(&topo, &train, 64, fanouts.clone(), 7, 2).unwrap();
    let run = |threads: usize| -> Vec<SampledBatch> {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap();
        pool.install(|| {
            use rayon::prelude::*;
            (0..sampler.num_batches())
                .into_par_iter()
                .map(|b| sampler.sample(b).unwrap())
                .collect()
        })
    };
    let one = run(1);
    assert_eq!(one, run(4));
    for (b, batch) in one.iter().enumerate().take(5) {
        check_structure(batch, sampler.seeds(b as u64), &fanouts, &topo);
    }
    // Another epoch shuffles differently; the same epoch again does not.
    let again = EpochSampler::new(&topo, &train, 64, fanouts.clone(), 7, 2).unwrap();
    assert_eq!(again.order, sampler.order);
    let next = EpochSampler::new(&topo, &train, 64, fanouts, 7, 3).unwrap();
    assert_ne!(next.order, sampler.order);
    let mut a = next.order.clone();
    a.sort_unstable();
    assert_eq!(a, train);
}

/// Star graph: node 0 has in-neighbors 1..=20. Drawing 5 of them 40k times
/// must hit each about equally. Seeds are fixed, so the statistic is a
/// fixed number: the test cannot flake; the bound is the p = 1e-6 critical
/// value of chi-square with 19 degrees of freedom (~ 57.0).
#[test]
fn draws_are_uniform_chi_square() {
    let d = 20u64;
    let mut indptr = vec![0u64, d];
    indptr.extend(std::iter::repeat_n(d, d as usize));
    let topo = InMemoryTopology::from_csc(indptr, (1..=d).collect());
    let trials = 40_000u64;
    let mut counts = vec![0u64; d as usize + 1];
    for t in 0..trials {
        let b = sample_batch(&topo, &[0], &[5], batch_seed(99, 0, t)).unwrap();
        for &s in &b.hops[0].src {
            counts[b.ids[s as usize] as usize] += 1;
        }
    }
    let expected = (trials * 5) as f64 / d as f64;
    let chi2: f64 = counts[1..]
        .iter()
        .map(|&c| (c as f64 - expected).powi(2) / expected)
        .sum();
    assert!(
        chi2 < 57.0,
        "chi-square {chi2} over 19 dof: draws are not uniform ({counts:?})"
    );
}

/// A cache holding every third node's list.
struct EveryThird(HashMap<u64, Vec<u64>>);
impl EveryThird {
    fn of(topo: &InMemoryTopology, nodes: u64) -> Self {
        EveryThird(
            (0..nodes)
                .filter(|v| v % 3 == 0)
                .map(|v| (v, topo.list(v).to_vec()))
                .collect(),
        )
    }
}
impl ListCache for EveryThird {
    fn lookup(&self, v: u64, out: &mut Vec<u64>) -> ginex::Result<bool> {
        Ok(match self.0.get(&v) {
            Some(l) => {
                out.extend_from_slice(l);
                true
            }
            None => false,
        })
    }
}

#[test]
fn memory_disk_and_cached_sources_give_identical_batches() {
    let dir = tempfile::tempdir().unwrap();
    let s = store(dir.path());
    let topo = InMemoryTopology::load(&s).unwrap();
    let cache = EveryThird::of(&topo, s.num_nodes());
    let opts = GatherOptions {
        backend: Backend::Auto,
        queue_depth: 32,
        direct: false,
        ..GatherOptions::default()
    };
    let disk = StoreSource::new(&s, None, &opts).unwrap();
    let cached = StoreSource::new(&s, Some(&cache), &opts).unwrap();
    let train = s.splits().unwrap().unwrap().train;
    let sources: [&dyn NeighborSource; 3] = [&topo, &disk, &cached];
    let batches: Vec<Vec<SampledBatch>> = sources
        .iter()
        .map(|src| {
            let sampler = EpochSampler::new(*src, &train, 100, vec![10, 10], 3, 0).unwrap();
            (0..4).map(|b| sampler.sample(b).unwrap()).collect()
        })
        .collect();
    assert_eq!(batches[0], batches[1]);
    assert_eq!(batches[0], batches[2]);
    let c = cached.counters();
    assert!(c.cache_hits > 0 && c.cache_misses > 0, "{c:?}");
    assert_eq!(disk.counters().cache_hits, 0);
}

/// FNV-1a over every batch's ids and hops: a fingerprint of the draws.
fn fingerprint(batches: &[SampledBatch]) -> u64 {
    let mut h = 0xcbf2_9ce4_8422_2325u64;
    let mut eat = |x: u64| {
        for byte in x.to_le_bytes() {
            h = (h ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3);
        }
    };
    for b in batches {
        eat(b.num_seeds as u64);
        b.ids.iter().for_each(|&v| eat(v));
        for hop in &b.hops {
            eat(hop.num_dst as u64);
            eat(hop.num_src as u64);
            hop.src
                .iter()
                .chain(&hop.dst)
                .for_each(|&x| eat(u64::from(x)));
        }
    }
    h
}

/// Batches sampled in lockstep (a hop's lists asked for once, in node
/// order, for all the round's batches, and drawn in parallel chunks) are
/// the batches sampled one by one, from memory, the store and a cached
/// store, with fanouts for all relations and per relation; and they are
/// the batches the sampler drew before lockstep sampling existed (the
/// fingerprint was taken with the one-batch-at-a-time sampler of commit
/// 7db521a: a changed draw would change every runtime file and every
/// saved neighbor cache's reuse).
#[test]
fn lockstep_rounds_sample_the_batches_one_by_one_sampling_does() {
    let dir = tempfile::tempdir().unwrap();
    let s = store(dir.path());
    let topo = InMemoryTopology::load(&s).unwrap();
    let cache = EveryThird::of(&topo, s.num_nodes());
    let opts = GatherOptions {
        direct: false,
        ..GatherOptions::default()
    };
    let disk = StoreSource::new(&s, None, &opts).unwrap();
    let cached = StoreSource::new(&s, Some(&cache), &opts).unwrap();
    let train = s.splits().unwrap().unwrap().train;
    let one_by_one: Vec<SampledBatch> = {
        let sampler = EpochSampler::new(&topo, &train, 100, vec![10, 5, -1], 3, 1).unwrap();
        (0..sampler.num_batches())
            .map(|b| sampler.sample(b).unwrap())
            .collect()
    };
    assert_eq!(fingerprint(&one_by_one), 0x6a44_096f_91b2_3cab);
    let sources: [&dyn NeighborSource; 3] = [&topo, &disk, &cached];
    for src in sources {
        let sampler = EpochSampler::new(src, &train, 100, vec![10, 5, -1], 3, 1).unwrap();
        let n = sampler.num_batches();
        for threads in [1, 3] {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap();
            // Rounds of 4 (the last one short), and the whole epoch at once.
            let rounds: Vec<SampledBatch> = pool.install(|| {
                (0..n)
                    .step_by(4)
                    .flat_map(|b| sampler.sample_round(b..(b + 4).min(n)).unwrap())
                    .collect()
            });
            assert_eq!(rounds, one_by_one, "{threads} threads");
            let whole = pool.install(|| sampler.sample_round(0..n).unwrap());
            assert_eq!(whole, one_by_one, "{threads} threads, one round");
        }
        // The plan's probe: one round on the calling thread.
        assert_eq!(sampler.sample_together(0..n).unwrap(), one_by_one);
        assert_eq!(sampler.sample_together(1..3).unwrap(), one_by_one[1..3]);
    }
    // Per-relation fanouts on a typed store, chunked by hand.
    let typed_dir = dir.path().join("t");
    std::fs::create_dir(&typed_dir).unwrap();
    let typed = common::typed_store(&typed_dir, 2000);
    let resolved = Fanouts::parse("cites=3:1,writes=2:0,topic_of=-1:0,written_by=0:2")
        .unwrap()
        .resolve(Some(typed.schema().unwrap()))
        .unwrap();
    let source = StoreSource::new(&typed, None, &opts).unwrap();
    let train = typed.splits().unwrap().unwrap().train;
    let sampler = EpochSampler::new(&source, &train, 40, resolved.clone(), 9, 0).unwrap();
    let seeds: Vec<(&[u64], u64)> = (0..6)
        .map(|b| (sampler.seeds(b), batch_seed(9, 0, b)))
        .collect();
    let alone: Vec<SampledBatch> = (0..6).map(|b| sampler.sample(b).unwrap()).collect();
    for chunks in [1, 2, 7] {
        let together = sample_in_lockstep(&source, &seeds, &resolved, chunks).unwrap();
        assert_eq!(together, alone, "{chunks} chunks");
    }
}

/// A lockstep round reads each list its batches share once, and reads
/// neighbouring segments together: fewer reads than the same batches
/// sampled one by one.
#[test]
fn a_lockstep_round_reads_fewer_segments_than_its_batches_alone() {
    let dir = tempfile::tempdir().unwrap();
    let s = store(dir.path());
    let train = s.splits().unwrap().unwrap().train;
    let opts = GatherOptions {
        direct: false,
        ..GatherOptions::default()
    };
    let reads = |lockstep: bool| {
        let source = StoreSource::new(&s, None, &opts).unwrap();
        let sampler = EpochSampler::new(&source, &train, 50, vec![10, 10], 4, 0).unwrap();
        let batches = if lockstep {
            sampler.sample_round(0..8).unwrap()
        } else {
            (0..8).map(|b| sampler.sample(b).unwrap()).collect()
        };
        (batches, source.read_stats())
    };
    let (alone, alone_stats) = reads(false);
    let (together, together_stats) = reads(true);
    assert_eq!(together, alone);
    assert!(
        together_stats.segments < alone_stats.segments,
        "{together_stats:?} against {alone_stats:?}"
    );
    assert!(
        together_stats.list_reads * 2 < alone_stats.list_reads,
        "{together_stats:?} against {alone_stats:?}"
    );
}

#[test]
fn hop_encoding_round_trips_and_rejects_damage() {
    let dir = tempfile::tempdir().unwrap();
    let s = store(dir.path());
    let topo = InMemoryTopology::load(&s).unwrap();
    let b = sample_batch(&topo, &[1, 2, 3], &[4, 3], 5).unwrap();
    let bytes = encode_hops(&b.hops).unwrap();
    assert_eq!(decode_hops(&bytes).unwrap(), b.hops);
    for cut in [0, 7, 8, 20, bytes.len() - 1] {
        assert!(decode_hops(&bytes[..cut]).is_err(), "truncated to {cut}");
    }
    let mut bad = bytes.clone();
    let last = bad.len() - 4;
    bad[last..].copy_from_slice(&u32::MAX.to_le_bytes()); // a target index out of range
    assert!(decode_hops(&bad).is_err());
    assert!(
        sample_batch(&topo, &[1, 1], &[2], 0).is_err(),
        "duplicate seeds"
    );
    assert!(
        sample_batch(&topo, &[s.num_nodes()], &[2], 0).is_err(),
        "seed out of range"
    );
}

fn run_ginex(args: &[&str]) -> ginex::Result<String> {
    use clap::Parser;
    let cli = ginex_cli::commands::GinexCli::try_parse_from(
        std::iter::once("ginex").chain(args.iter().copied()),
    )
    .map_err(|e| ginex::Error::invalid_argument(e.to_string()))?;
    let mut out = Vec::new();
    ginex_cli::commands::run(cli, &mut out)?;
    Ok(String::from_utf8(out).unwrap())
}

fn run_dump(args: &[&str]) -> ginex::Result<String> {
    use clap::Parser;
    let a = ginex_cli::dump::DumpArgs::try_parse_from(
        std::iter::once("ginex-dump").chain(args.iter().copied()),
    )
    .map_err(|e| ginex::Error::invalid_argument(e.to_string()))?;
    let mut out = Vec::new();
    ginex_cli::dump::run(&a, &mut out)?;
    Ok(String::from_utf8(out).unwrap())
}

/// `ginex sample` prints the same batch from memory, from disk and through
/// every codec's neighbor cache; `ginex cache build/verify` and
/// `ginex-dump --verify/--json` cover the cache file, and damage is named.
#[test]
fn cli_sample_cache_build_verify_and_dump() {
    let dir = tempfile::tempdir().unwrap();
    let s = store(dir.path());
    let st = s.dir().to_str().unwrap().to_string();
    let base = [
        "sample",
        st.as_str(),
        "--fanouts",
        "5,-1",
        "--batch-size",
        "20",
        "--batch",
        "3",
        "--seed",
        "9",
    ];
    let mem = run_ginex(&base).unwrap();
    let v: serde_json::Value = serde_json::from_str(&mem).unwrap();
    assert_eq!(v["num_seeds"], 20);
    assert_eq!(v["hops"].as_array().unwrap().len(), 2);
    assert_eq!(
        v["hops"][1]["num_dst"], 20,
        "input layer first: the last hop targets the seeds"
    );
    let disk = run_ginex(&[&base[..], &["--from-disk"]].concat()).unwrap();
    assert_eq!(mem, disk);
    for codec in ["raw", "zstd-list", "delta-bitpack", "block-bitpack"] {
        let cache = dir.path().join(format!("{codec}.ncache"));
        let c = cache.to_str().unwrap();
        let built = run_ginex(&[
            "cache", "build", &st, "--budget", "64KiB", "--codec", codec, "--out", c,
        ])
        .unwrap();
        assert!(built.contains(codec), "{built}");
        assert!(std::fs::metadata(&cache).unwrap().len() <= 64 * 1024);
        let verified = run_ginex(&["cache", "verify", c, "--store", &st]).unwrap();
        assert!(verified.starts_with("ok:"), "{verified}");
        assert!(run_dump(&["--verify", c]).unwrap().starts_with("ok:"));
        let j: serde_json::Value =
            serde_json::from_str(&run_dump(&["--json", "--limit", "3", c]).unwrap()).unwrap();
        assert_eq!(j["neighbor_cache"]["codec"], codec, "{j}");
        let cached = run_ginex(&[&base[..], &["--ncache", c]].concat()).unwrap();
        assert_eq!(mem, cached, "{codec}: the cache changed the batch");

        let mut bytes = std::fs::read(&cache).unwrap();
        let at = bytes.len() / 2;
        bytes[at] ^= 0x10;
        std::fs::write(&cache, &bytes).unwrap();
        let err = run_dump(&["--verify", c]).unwrap_err().to_string();
        assert!(err.contains(c), "the error names the file: {err}");
        assert!(run_ginex(&[&base[..], &["--ncache", c]].concat()).is_err());
    }
    // A cache is refused for another store, by name.
    let other = dir.path().join("other");
    ginex::internals::import::synth::generate_store(
        &SynthParams {
            nodes: 300,
            avg_degree: 4.0,
            dim: 2,
            classes: 2,
            seed: 5,
            split: [0.5, 0.1, 0.1],
            ..SynthParams::default()
        },
        &other,
        &NoProgress,
    )
    .unwrap();
    let c = dir.path().join("raw2.ncache");
    run_ginex(&[
        "cache",
        "build",
        &st,
        "--budget",
        "64KiB",
        "--codec",
        "raw",
        "--out",
        c.to_str().unwrap(),
    ])
    .unwrap();
    let err = run_ginex(&[
        "cache",
        "verify",
        c.to_str().unwrap(),
        "--store",
        other.to_str().unwrap(),
    ])
    .unwrap_err()
    .to_string();
    assert!(err.contains("another store"), "{err}");
}

/// `ginex cache build --memory` keeps the build within what it is given:
/// a `--budget` whose build (the store's resident tables, 8 bytes a node
/// while the lists are chosen, then the cache) would not fit is refused
/// before anything is written, and `--memory` alone builds the largest
/// cache that fits.
#[test]
fn cache_build_stays_within_memory() {
    let dir = tempfile::tempdir().unwrap();
    let path = common::synth_store(
        dir.path(),
        "s",
        &SynthParams {
            nodes: 3000,
            avg_degree: 8.0,
            dim: 4,
            classes: 3,
            seed: 4,
            ..SynthParams::default()
        },
    );
    let st = path.to_str().unwrap();
    let out = |name: &str| dir.path().join(name).to_str().unwrap().to_string();
    let refused = out("refused.ncache");
    let err = run_ginex(&[
        "cache", "build", st, "--budget", "64KiB", "--memory", "1MiB", "--out", &refused,
    ])
    .unwrap_err()
    .to_string();
    assert!(err.contains("above --memory 1 MiB"), "{err}");
    assert!(
        !std::path::Path::new(&refused).exists(),
        "refused, yet written"
    );
    let err = run_ginex(&["cache", "build", st, "--memory", "1MiB", "--out", &refused])
        .unwrap_err()
        .to_string();
    assert!(err.contains("cannot build a neighbor cache"), "{err}");

    let fitting = out("fitting.ncache");
    let built = run_ginex(&[
        "cache", "build", st, "--budget", "64KiB", "--memory", "1GiB", "--out", &fitting,
    ])
    .unwrap();
    assert!(built.starts_with("built"), "{built}");
    assert!(std::fs::metadata(&fitting).unwrap().len() <= 64 << 10);
    // --memory alone: the largest cache that fits, here the whole topology.
    let largest = out("largest.ncache");
    let built = run_ginex(&["cache", "build", st, "--memory", "1GiB", "--out", &largest]).unwrap();
    assert!(built.contains("lists of 3000"), "{built}");
    let store = Store::open(&path).unwrap();
    let cache = NeighborCache::open(std::path::Path::new(&largest), &store).unwrap();
    let with_lists = (0..3000)
        .filter(|&v| store.in_degree(v).unwrap() > 0)
        .count();
    assert_eq!(cache.cached_nodes().len(), with_lists);
}
