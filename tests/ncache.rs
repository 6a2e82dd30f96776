//! The neighbor cache: every codec serves exactly the store's lists within
//! its budget, is tied to its store, detects damage, and never changes a
//! sampled batch.

mod common;

use ginex::internals::format::neighbor_cache::Codec;
use ginex::internals::import::synth::SynthParams;
use ginex::internals::io::Backend;
use ginex::internals::sample::neighbor_cache::{build, NeighborCache};
use ginex::internals::sample::sampler::EpochSampler;
use ginex::internals::sample::source::{InMemoryTopology, ListCache, StoreSource};
use ginex::internals::store::gather::GatherOptions;
use ginex::Store;

fn store(dir: &std::path::Path, name: &str, seed: u64) -> Store {
    let p = SynthParams {
        nodes: 4000,
        avg_degree: 20.0,
        dim: 4,
        classes: 4,
        seed,
        split: [0.3, 0.1, 0.1],
        ..SynthParams::default()
    };
    common::open_synth_store(dir, name, &p)
}

#[test]
fn every_codec_serves_the_stores_lists_within_budget() {
    let dir = tempfile::tempdir().unwrap();
    let s = store(dir.path(), "s", 1);
    let topo = InMemoryTopology::load(&s).unwrap();
    let budget = 120_000;
    let mut lists_held = Vec::new();
    for codec in Codec::ALL {
        let path = dir.path().join(codec.name());
        let r = build(&s, budget, codec, &path).unwrap();
        assert!(
            r.bytes <= budget,
            "{codec:?}: {} bytes over the {budget} budget",
            r.bytes
        );
        assert_eq!(std::fs::metadata(&path).unwrap().len(), r.bytes);
        let cache = NeighborCache::open(&path, &s).unwrap();
        assert_eq!(cache.verify_lists(&s).unwrap(), r.lists);
        assert!(
            cache
                .cached_nodes()
                .iter()
                .all(|&v| !topo.list(v).is_empty()),
            "{codec:?}: an empty list was cached (indptr already answers it)"
        );
        let mut out = Vec::new();
        let held = (0..s.num_nodes()).filter(|&v| {
            out.clear();
            cache.lookup(v, &mut out).unwrap()
        });
        assert_eq!(held.count() as u64, r.lists);
        lists_held.push((codec, r.lists, r.bytes));
    }
    let get = |c: Codec| lists_held.iter().find(|(x, ..)| *x == c).unwrap().1;
    let bytes = |c: Codec| lists_held.iter().find(|(x, ..)| *x == c).unwrap().2;
    for c in [Codec::DeltaBitpack, Codec::BlockBitpack] {
        assert!(
            get(c) as f64 >= 1.5 * get(Codec::ZstdList) as f64,
            "{c:?} should hold at least 1.5x the lists of zstd-list: {lists_held:?}"
        );
    }
    let (block, delta) = (Codec::BlockBitpack, Codec::DeltaBitpack);
    assert!(
        get(block) > get(delta) || (get(block) == get(delta) && bytes(block) < bytes(delta)),
        "the block table should beat a u64 offset per list: {lists_held:?}"
    );
}

#[test]
fn a_cache_is_refused_for_another_store_and_damage_is_detected() {
    let dir = tempfile::tempdir().unwrap();
    let a = store(dir.path(), "a", 1);
    let b = store(dir.path(), "b", 2);
    for codec in Codec::ALL {
        let path = dir.path().join(format!("cache-{}", codec.name()));
        build(&a, 60_000, codec, &path).unwrap();
        let err = NeighborCache::open(&path, &b).err().unwrap().to_string();
        assert!(err.contains("another store"), "{codec:?}: {err}");
        let original = std::fs::read(&path).unwrap();
        for pos in (0..original.len()).step_by(211) {
            let mut d = original.clone();
            d[pos] ^= 0x01;
            std::fs::write(&path, &d).unwrap();
            assert!(
                NeighborCache::open(&path, &a).is_err(),
                "{codec:?}: flip at {pos} unnoticed"
            );
        }
    }
    let path = dir.path().join("cache");
    build(&a, 60_000, Codec::DeltaBitpack, &path).unwrap();
    let err = NeighborCache::open(&path, &b).err().unwrap().to_string();
    assert!(err.contains("another store"), "{err}");
    assert!(
        build(&a, 60_000, Codec::Raw, &path).is_err(),
        "overwrote an existing cache"
    );
    assert!(
        build(&a, 10, Codec::Raw, &dir.path().join("tiny")).is_err(),
        "budget below an empty cache"
    );

    let original = std::fs::read(&path).unwrap();
    for pos in (0..original.len())
        .step_by(97)
        .chain([0, 63, 64, original.len() - 1])
    {
        let mut d = original.clone();
        d[pos] ^= 0x40;
        std::fs::write(&path, &d).unwrap();
        assert!(
            NeighborCache::open(&path, &a).is_err(),
            "flip at {pos} unnoticed"
        );
    }
    std::fs::write(&path, &original[..original.len() - 3]).unwrap();
    assert!(NeighborCache::open(&path, &a).is_err());
}

#[test]
fn batches_with_and_without_the_cache_are_identical() {
    let dir = tempfile::tempdir().unwrap();
    let s = store(dir.path(), "s", 3);
    let topo = InMemoryTopology::load(&s).unwrap();
    let train = s.splits().unwrap().unwrap().train;
    let without = EpochSampler::new(&topo, &train, 50, vec![10, 10], 4, 1).unwrap();
    for codec in Codec::ALL {
        let path = dir.path().join(codec.name());
        build(&s, 30_000, codec, &path).unwrap();
        let cache = NeighborCache::open(&path, &s).unwrap();
        let opts = GatherOptions {
            backend: Backend::Auto,
            queue_depth: 16,
            direct: false,
            ..GatherOptions::default()
        };
        let cached = StoreSource::new(&s, Some(&cache), &opts).unwrap();
        let with = EpochSampler::new(&cached, &train, 50, vec![10, 10], 4, 1).unwrap();
        for b in 0..5 {
            assert_eq!(
                with.sample(b).unwrap(),
                without.sample(b).unwrap(),
                "{codec:?}: batch {b}"
            );
        }
        let c = cached.counters();
        assert!(c.cache_hits > 0 && c.cache_misses > 0, "{codec:?}: {c:?}");
    }
}

/// A neighbor cache is built once and reused: the second open finds it;
/// a cache at a named path is refused for another store, codec or budget
/// (saying which); a store rebuilt in place gets a cache of its own at the
/// default location, and the old one is left alone.
#[test]
fn a_built_cache_is_reused_and_a_mismatched_one_refused() {
    use ginex::internals::sample::neighbor_cache_reuse::{
        default_path, open_or_build, NcacheOrigin,
    };
    let dir = tempfile::tempdir().unwrap();
    let a = store(dir.path(), "a", 1);
    let b = store(dir.path(), "b", 2);
    let (_, path, origin) = open_or_build(&a, Codec::BlockBitpack, 60_000, None).unwrap();
    assert!(matches!(origin, NcacheOrigin::Built(_)));
    assert_eq!(path, default_path(&a, Codec::BlockBitpack, 60_000));
    assert!(path.starts_with(dir.path().join("a.ncache")));
    let bytes = std::fs::read(&path).unwrap();
    let (_, again, origin) = open_or_build(&a, Codec::BlockBitpack, 60_000, None).unwrap();
    assert_eq!(
        (again.as_path(), origin),
        (path.as_path(), NcacheOrigin::Reused)
    );
    assert_eq!(
        std::fs::read(&path).unwrap(),
        bytes,
        "reuse leaves the file alone"
    );

    for (store, codec, budget, why) in [
        (&b, Codec::BlockBitpack, 60_000, "another store"),
        (&a, Codec::Raw, 60_000, "codec is block-bitpack, not raw"),
        (
            &a,
            Codec::BlockBitpack,
            50_000,
            "budget of 60000 bytes, not 50000",
        ),
    ] {
        let err = open_or_build(store, codec, budget, Some(&path))
            .err()
            .unwrap()
            .to_string();
        assert!(err.contains(why), "{err}");
        assert!(err.contains("ginex cache build"), "{err}");
    }
    assert_eq!(
        std::fs::read(&path).unwrap(),
        bytes,
        "a refused cache is left alone"
    );

    // The store is rebuilt in place: its default-location cache is stale.
    std::fs::remove_dir_all(dir.path().join("a")).unwrap();
    let a2 = store(dir.path(), "a", 7);
    let (_, fresh, origin) = open_or_build(&a2, Codec::BlockBitpack, 60_000, None).unwrap();
    assert!(
        matches!(origin, NcacheOrigin::Built(_)),
        "a cache built for the new store"
    );
    assert_ne!(fresh, path, "under the new store's identity");
    NeighborCache::open(&fresh, &a2).unwrap();
    assert_eq!(
        std::fs::read(&path).unwrap(),
        bytes,
        "the old store's cache is left alone (this run did not create it)"
    );

    // A damaged cache at the default location is refused, not replaced.
    let mut damaged = bytes.clone();
    let at = damaged.len() - 5;
    damaged[at] ^= 1;
    std::fs::remove_file(&fresh).unwrap();
    std::fs::write(&fresh, &damaged).unwrap();
    let err = open_or_build(&a2, Codec::BlockBitpack, 60_000, None)
        .err()
        .map(|e| e.to_string());
    assert!(err.is_some(), "a damaged cache is used");
    assert_eq!(std::fs::read(&fresh).unwrap(), damaged, "and left alone");
}

/// The streaming pass behind the offline build visits every node's list in
/// order at any run size, and a flipped bit in `indices` stops it.
#[test]
fn streaming_the_topology_gives_every_list_and_catches_damage() {
    let dir = tempfile::tempdir().unwrap();
    let s = store(dir.path(), "s", 5);
    let topo = InMemoryTopology::load(&s).unwrap();
    for chunk in [1, 4096, 1 << 30] {
        let mut next = 0u64;
        s.for_each_list(chunk, &mut |v, list| {
            assert_eq!(v, next);
            assert_eq!(list, topo.list(v), "node {v}, chunk {chunk}");
            next += 1;
            Ok(())
        })
        .unwrap();
        assert_eq!(next, s.num_nodes());
    }
    let path = s.dir().join("indices");
    let mut bytes = std::fs::read(&path).unwrap();
    let at = bytes.len() - 3;
    bytes[at] ^= 0x10;
    std::fs::write(&path, &bytes).unwrap();
    let err = s
        .for_each_list(4096, &mut |_, _| Ok(()))
        .err()
        .unwrap()
        .to_string();
    assert!(err.contains("segment"), "{err}");
}

/// The lists the greedy choice takes, computed the plain way (as `build`
/// did before it chose in bounded memory): every node with a list sorted
/// by out-degree / in-degree descending, ties by id; taken while each
/// list's bytes and table share fit; then the lowest-ranked dropped until
/// the laid-out file fits.
fn reference_choice(s: &Store, budget: u64, codec: Codec) -> Vec<u64> {
    use ginex::internals::format::neighbor_cache::BLOCK_LISTS;
    use ginex::internals::sample::neighbor_cache::{empty_cache_bytes, encoded_size, out_degrees};
    let out = out_degrees(s).unwrap();
    let lists: Vec<Vec<u64>> = (0..s.num_nodes())
        .map(|v| s.in_neighbors(v).unwrap())
        .collect();
    let enc_len = |v: u64| {
        let mut e = Vec::new();
        codec
            .encode(&lists[v as usize], s.index_width(), &mut e)
            .unwrap();
        e.len() as u64
    };
    let score = |v: u64| f64::from(out[v as usize]) / lists[v as usize].len() as f64;
    let mut ranked: Vec<u64> = (0..s.num_nodes())
        .filter(|&v| !lists[v as usize].is_empty())
        .collect();
    ranked.sort_by(|&a, &b| score(b).total_cmp(&score(a)).then(a.cmp(&b)));
    let empty = empty_cache_bytes(s);
    let mut used = empty;
    let mut chosen = Vec::new();
    for v in ranked {
        let table = if codec == Codec::BlockBitpack {
            2 + if chosen.len() as u64 % BLOCK_LISTS == 0 {
                8
            } else {
                0
            }
        } else {
            8
        };
        if used + enc_len(v) + table > budget {
            break;
        }
        used += enc_len(v) + table;
        chosen.push(v);
    }
    loop {
        let mut by_id = chosen.clone();
        by_id.sort_unstable();
        let laid_out = by_id.iter().map(|&v| lists[v as usize].as_slice());
        let size = empty + encoded_size(codec, s.index_width(), laid_out).unwrap();
        if size <= budget || chosen.is_empty() {
            return by_id;
        }
        let mut excess = size - budget;
        while let Some(v) = chosen.pop() {
            let freed = enc_len(v) + 2;
            if freed >= excess {
                break;
            }
            excess -= freed;
        }
    }
}

/// The choice made in bounded memory (a radix select over rank keys, see
/// `sample::neighbor_cache_pick`) takes exactly the lists of the plain
/// sort-and-take, for every codec, at budgets from nearly empty to the
/// whole topology, and on a store whose large lists make wide blocks.
#[test]
fn the_bounded_choice_takes_the_lists_the_sorted_greedy_choice_takes() {
    let dir = tempfile::tempdir().unwrap();
    let s = store(dir.path(), "s", 3);
    let skewed = common::open_synth_store(
        dir.path(),
        "skewed",
        &SynthParams {
            nodes: 3000,
            avg_degree: 60.0,
            dim: 4,
            classes: 4,
            seed: 9,
            ..SynthParams::default()
        },
    );
    for (name, st) in [("s", &s), ("skewed", &skewed)] {
        for codec in Codec::ALL {
            for budget in [2_000, 9_000, 40_000, 120_000, 400_000, 4_000_000] {
                let path = dir.path().join(format!("{name}-{}-{budget}", codec.name()));
                let Ok(r) = build(st, budget, codec, &path) else {
                    assert!(budget < 4_000, "{name} {codec:?} {budget}: refused");
                    continue;
                };
                assert!(
                    r.bytes <= budget,
                    "{name} {codec:?} {budget}: {} bytes",
                    r.bytes
                );
                let cache = NeighborCache::open(&path, st).unwrap();
                assert_eq!(
                    cache.cached_nodes(),
                    reference_choice(st, budget, codec),
                    "{name} {codec:?} {budget}"
                );
                assert_eq!(cache.verify_lists(st).unwrap(), r.lists);
            }
        }
    }
}

/// Counts the CSC segments a cache's misses read: a miss reads the whole
/// segment holding its list, once per sampled batch whichever of its lists
/// the batch needs.
struct MissBytes<'a> {
    cache: &'a NeighborCache<'a>,
    store: &'a Store,
    batch_segments: std::sync::Mutex<std::collections::BTreeSet<usize>>,
    list_bytes: std::sync::atomic::AtomicU64,
}

impl ListCache for MissBytes<'_> {
    fn lookup(&self, v: u64, out: &mut Vec<u64>) -> ginex::internals::error::Result<bool> {
        let hit = self.cache.lookup(v, out)?;
        if !hit {
            let seg = self.store.segments().partition_point(|s| s.end_node() <= v);
            self.batch_segments.lock().unwrap().insert(seg);
            let ip = self.store.indptr();
            let bytes = (ip[v as usize + 1] - ip[v as usize]) * 4;
            self.list_bytes
                .fetch_add(bytes, std::sync::atomic::Ordering::Relaxed);
        }
        Ok(hit)
    }
}

/// The list misses, their lists' bytes and the segment bytes read of one
/// epoch over `train` with the cache at `path`.
fn epoch_misses(
    s: &Store,
    path: &std::path::Path,
    train: &[u64],
    fanouts: &[i64],
) -> (u64, u64, u64) {
    let cache = NeighborCache::open(path, s).unwrap();
    let counting = MissBytes {
        cache: &cache,
        store: s,
        batch_segments: Default::default(),
        list_bytes: 0.into(),
    };
    let source = StoreSource::new(s, Some(&counting), &GatherOptions::default()).unwrap();
    let sampler = EpochSampler::new(&source, train, 20, fanouts.to_vec(), 4, 0).unwrap();
    let mut bytes = 0;
    for b in 0..sampler.num_batches() {
        sampler.sample(b).unwrap();
        let segments = std::mem::take(&mut *counting.batch_segments.lock().unwrap());
        bytes += segments
            .iter()
            .map(|&i| s.segments()[i].edge_count * 4)
            .sum::<u64>();
    }
    (
        source.counters().cache_misses,
        counting.list_bytes.into_inner(),
        bytes,
    )
}

/// The reads pick ranks lists by the reads the run's sampling makes of
/// them per byte cached: with one hop only the seeds' lists are ever
/// read, with two their sampled neighbors' too, and on a store whose train
/// split is a small part of the nodes the degree pick (out-degree /
/// in-degree, blind to the seeds and the fanouts) caches lists that are
/// never read. At a budget of about a quarter of the lists, the reads pick
/// misses nothing with one hop, and fewer lists with two. Either pick's
/// cache serves the same batches (tested above for the degree pick; the
/// lists it holds are exact whatever the pick).
#[test]
fn the_reads_pick_reads_fewer_list_bytes_than_the_degree_pick() {
    use ginex::internals::sample::neighbor_cache::{build_picked, Pick, ReadsModel};
    let dir = tempfile::tempdir().unwrap();
    let p = SynthParams {
        nodes: 6000,
        avg_degree: 20.0,
        dim: 4,
        classes: 4,
        seed: 5,
        split: [0.05, 0.05, 0.05],
        ..SynthParams::default()
    };
    let s = common::open_synth_store(dir.path(), "s", &p);
    let train = s.splits().unwrap().unwrap().train;
    let codec = Codec::BlockBitpack;
    // A quarter of the lists' bytes.
    let budget = s.num_edges() + 3 * s.num_nodes() + 4096;
    let mut results = Vec::new();
    for fanouts in [vec![5i64], vec![5, 5]] {
        let model = ReadsModel::new(fanouts.clone(), Some(&train), train.len() as u64, 20, 1);
        let degree = dir.path().join(format!("degree-{}", fanouts.len()));
        let reads = dir.path().join(format!("reads-{}", fanouts.len()));
        build_picked(&s, budget, codec, &degree, &Pick::Degree).unwrap();
        let r = build_picked(&s, budget, codec, &reads, &Pick::Reads(model)).unwrap();
        assert!(r.bytes <= budget);
        let by_degree = epoch_misses(&s, &degree, &train, &fanouts);
        let by_reads = epoch_misses(&s, &reads, &train, &fanouts);
        results.push((fanouts.len(), by_degree, by_reads));
    }
    eprintln!("(hops, (misses, list bytes, segment bytes) degree, reads): {results:?}");
    let (_, one_degree, one_reads) = results[0];
    assert_eq!(one_reads, (0, 0, 0), "{results:?}");
    assert!(one_degree.0 > 0 && one_degree.1 > 0, "{results:?}");
    let (_, two_degree, two_reads) = results[1];
    assert!(two_reads.0 < two_degree.0, "{results:?}");
    assert!(two_reads.1 < two_degree.1, "{results:?}");

    // A run of the reads pick builds its own file beside the store, and
    // opens it again; where `ginex cache build` wrote one (the degree
    // pick's name) and the run's own is missing, it uses that one.
    use ginex::internals::sample::neighbor_cache_reuse::{
        default_path, open_or_build, open_or_build_picked, NcacheOrigin,
    };
    let fanouts = vec![5i64, 5];
    let model = ReadsModel::new(fanouts, Some(&train), train.len() as u64, 20, 1);
    let pick = Pick::Reads(model);
    let (_, own, origin) = open_or_build_picked(&s, codec, budget, None, &pick).unwrap();
    assert!(matches!(origin, NcacheOrigin::Built(_)));
    assert_ne!(own, default_path(&s, codec, budget));
    let (_, again, origin) = open_or_build_picked(&s, codec, budget, None, &pick).unwrap();
    assert_eq!((again, origin), (own.clone(), NcacheOrigin::Reused));
    std::fs::remove_file(&own).unwrap();
    let (_, built, _) = open_or_build(&s, codec, budget, None).unwrap();
    let (_, used, origin) = open_or_build_picked(&s, codec, budget, None, &pick).unwrap();
    assert_eq!((used, origin), (built, NcacheOrigin::Reused));
}
