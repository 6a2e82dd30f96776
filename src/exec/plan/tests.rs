//! The memory planner's tests: the plan's JSON, its buffers, the staged
//! init's price, the superbatch within its quarter, the neighbor cache's build.

use super::*;
use crate::exec::cache_split::CacheSplit;
use crate::exec::config::FirstSuperbatch;

fn sample_plan() -> MemoryPlan {
    MemoryPlan {
        memory: 1 << 30,
        fixed: 40 << 20,
        batch_buffers: 12 << 20,
        page_cache_reserve: PAGE_CACHE_RESERVE,
        superbatch_bytes: 3 << 20,
        superbatch: 41,
        lockstep_bytes: 5 << 20,
        lockstep: crate::exec::lockstep::choose(
            crate::exec::config::Lockstep::Auto,
            41,
            16,
            1 << 20,
            1 << 30,
        ),
        neighbor_cache_bytes: 64 << 16,
        feature_cache_rows: 123_456,
        feature_cache_bytes: 123_456 * 524,
        working_set: WorkingSet {
            batches: 2,
            max_ids: 9_000,
            mean_ids: 8_765.5,
            mean_edges: 20_000.25,
            mean_candidates: 0.0,
        },
        split: Some(CacheSplit {
            neighbor_bytes: 64 << 16,
            share: 0.125,
            priced: vec![crate::exec::cache_split::PricedShare {
                share: 0.125,
                neighbor_bytes: 64 << 16,
                feature_rows: 123_456,
                list_reads: 10.5,
                row_reads: 20.25,
            }],
            compression: 0.5,
            lookups: 100,
            rows: 200,
        }),
        reuse_prior: None,
        superbatch_fit: None,
        lists_dwarf_memory: false,
    }
}

#[test]
fn the_plans_json_has_the_reports_keys() {
    let p = sample_plan();
    let want = serde_json::json!({
        "memory": p.memory, "fixed": p.fixed, "batch_buffers": p.batch_buffers,
        "page_cache_reserve": p.page_cache_reserve, "superbatch_bytes": p.superbatch_bytes,
        "superbatch": p.superbatch, "lockstep_bytes": 5 << 20,
        "lockstep": {"mode": "superbatch", "batches": 41, "bytes": 41 << 20, "note": ""},
        "neighbor_cache_bytes": p.neighbor_cache_bytes,
        "feature_cache_rows": p.feature_cache_rows, "feature_cache_bytes": p.feature_cache_bytes,
        "lists_dwarf_memory": false,
        "working_set": {"batches": 2, "max_ids": 9_000, "mean_ids": 8_765.5, "mean_edges": 20_000.25,
            "mean_candidates": 0.0},
        "neighbor_cache_split": {"neighbor_cache_bytes": 64 << 16, "share": 0.125, "compression": 0.5,
            "lookups": 100, "rows": 200,
            "priced": [{"share": 0.125, "neighbor_cache_bytes": 64 << 16, "feature_cache_rows": 123_456,
                "list_reads": 10.5, "row_reads": 20.25}]},
    });
    assert_eq!(p.to_json(), want);
}

#[test]
fn a_plan_round_trips_through_json() {
    let p = sample_plan();
    let text = serde_json::to_string(&p).unwrap();
    assert_eq!(serde_json::from_str::<MemoryPlan>(&text).unwrap(), p);
    let ws: WorkingSet =
        serde_json::from_value(serde_json::to_value(p.working_set).unwrap()).unwrap();
    assert_eq!(ws, p.working_set);
}

#[test]
fn io_and_staged_buffers_follow_the_batch_and_the_store() {
    // A page per row, two gatherers, capped at 32 MiB each.
    assert_eq!(io_buffer_bytes(10, 1), 2 * 10 * 4096);
    assert_eq!(io_buffer_bytes(10, 3), 2 * 30 * 4096);
    assert_eq!(io_buffer_bytes(1 << 20, 1), IO_BUFFER_BYTES);
    // Five chunks of 1/128 of the cache's rows (at least 64), at most
    // 8 MiB each.
    use crate::exec::staged_init::{buffer_bytes, STAGED_INIT_BYTES};
    assert_eq!(buffer_bytes(1000, 1024), 5 * 64 * 1024);
    assert_eq!(buffer_bytes(64_000, 100), 5 * 500 * 100);
    assert_eq!(buffer_bytes(8_000_000, 1024), STAGED_INIT_BYTES);
    // A 70 MiB cache of 1 KiB rows: 2.7 MiB, not 40.
    assert_eq!(buffer_bytes(71_680, 1024), 5 * 560 * 1024);
}

#[test]
fn a_staged_ginex_cache_is_priced_with_its_init_chunks_and_inverted_exactly() {
    use crate::exec::config::GinexOptions;
    use crate::exec::staged_init::buffer_bytes;
    let full = CacheConfig::Ginex(GinexOptions::default());
    let serial = CacheConfig::Ginex(GinexOptions {
        pipeline: Pipeline::Serial,
        ..GinexOptions::default()
    });
    let (n, rb) = (3_000_000u64, 1024u64);
    let plain =
        |rows: u64| FeatureCache::slot_bytes(rows, rb) + rows * SUPERBATCH_BYTES_PER_CACHE_ROW;
    assert_eq!(feature_cache_bytes(&full, 0, n, rb), 0);
    for rows in [1u64, 64, 2_048, 69_301, 122_409, 1 << 20, n] {
        assert_eq!(
            feature_cache_bytes(&full, rows, n, rb),
            plain(rows) + buffer_bytes(rows, rb) + rows * PREPARED_AHEAD_BYTES_PER_CACHE_ROW
        );
        assert_eq!(feature_cache_bytes(&serial, rows, n, rb), plain(rows));
        // Narrow rows: one superbatch prepared ahead, nothing charged for
        // a second.
        let narrow = 64;
        assert_eq!(
            feature_cache_bytes(&full, rows, n, narrow),
            FeatureCache::slot_bytes(rows, narrow)
                + rows * SUPERBATCH_BYTES_PER_CACHE_ROW
                + buffer_bytes(rows, narrow)
        );
    }
    // The most rows that fit, and not one more, whatever the budget.
    for cache in [&full, &serial, &CacheConfig::Degree] {
        for budget in [
            0u64,
            300_000,
            1 << 20,
            70 << 20,
            126 << 20,
            1 << 30,
            8 << 30,
        ] {
            let rows = feature_cache_rows_within(cache, budget, n, rb);
            assert!(rows == 0 || feature_cache_bytes(cache, rows, n, rb) <= budget);
            assert!(rows == n || feature_cache_bytes(cache, rows + 1, n, rb) > budget);
        }
    }
    // A 126 MiB budget: the chunks take 5/128 of the rows' bytes (about
    // 4.4 MiB), not the 40 MiB a 3 M-node store's inits would be charged.
    let rows = feature_cache_rows_within(&full, 126 << 20, n, rb);
    let staged = buffer_bytes(rows, rb);
    assert!(staged < 5 << 20 && staged > 4 << 20, "{staged}");
}

/// A 2000-node store (64-dim rows) and a working set of 400-row batches.
fn small_store_and_batches(dir: &std::path::Path) -> (Store, WorkingSet) {
    let path = dir.join("store");
    let synth = crate::import::synth::SynthParams {
        nodes: 2000,
        dim: 64,
        ..Default::default()
    };
    crate::import::synth::generate_store(&synth, &path, &crate::progress::NoProgress).unwrap();
    let ws = WorkingSet {
        batches: 2,
        max_ids: 500,
        mean_ids: 400.0,
        mean_edges: 2000.0,
        mean_candidates: 0.0,
    };
    (Store::open(&path).unwrap(), ws)
}

/// A request for 1000 batches of `cache` under 128 MiB on `store`, whose
/// topology is said to be `topology_bytes`.
fn request(cache: CacheConfig, superbatch: Option<u64>, topology_bytes: u64) -> PlanRequest {
    PlanRequest {
        memory: 128 << 20,
        cache,
        workers: 1,
        batches: 1000,
        seeds: 20_000,
        superbatch,
        feature_cache_bytes: None,
        neighbor_cache_bytes: None,
        extra_bytes: 0,
        probe: None,
        degrees: None,
        longest_superbatch: None,
        topology_bytes,
        split_basis: Default::default(),
    }
}

#[test]
fn where_the_lists_dwarf_memory_superbatches_are_as_long_as_their_round_fits() {
    use crate::exec::config::{EpochConfig, GinexOptions};
    let tmp = tempfile::tempdir().unwrap();
    let (store, ws) = small_store_and_batches(tmp.path());
    let ginex = |lockstep| {
        CacheConfig::Ginex(GinexOptions {
            lockstep,
            ..GinexOptions::default()
        })
    };
    let memory = 128u64 << 20;
    let real = list_bound::topology_bytes(&store);
    assert!(real < memory);
    let plain = plan(&store, &request(ginex(Lockstep::Auto), None, real), ws).unwrap();
    let dwarfed = plan(
        &store,
        &request(ginex(Lockstep::Auto), None, memory + 1),
        ws,
    )
    .unwrap();
    assert!(!plain.lists_dwarf_memory, "{}", plain.describe());
    assert!(dwarfed.lists_dwarf_memory, "{}", dwarfed.describe());
    assert!(dwarfed
        .describe()
        .contains("topology is larger than the budget"));
    // The longest superbatch whose lockstep round fits, evened out.
    let left = memory - dwarfed.fixed - dwarfed.batch_buffers - dwarfed.page_cache_reserve;
    let per_batch = (ws.mean_ids * CHANGESET_BYTES_PER_ACCESS as f64) as u64;
    let longest = list_bound::longest_superbatch(left, per_batch, ws.sampling_bytes());
    assert_eq!(
        dwarfed.superbatch,
        evened_superbatch(1000, longest.min(MAX_AUTO_SUPERBATCH))
    );
    assert!(
        dwarfed.superbatch >= 2 * plain.superbatch,
        "{} against {}",
        dwarfed.superbatch,
        plain.superbatch
    );
    // Sampled whole, within the plan.
    assert_eq!(dwarfed.lockstep.lockstep(), Lockstep::Superbatch);
    assert_eq!(dwarfed.lockstep.batches, dwarfed.superbatch);
    assert!(dwarfed.total() <= memory, "{}", dwarfed.describe());
    // Rounds, or a superbatch the caller fixed, keep the quarter's rule.
    for (lockstep, superbatch) in [(Lockstep::Rounds, None), (Lockstep::Auto, Some(7))] {
        let p = plan(
            &store,
            &request(ginex(lockstep), superbatch, memory + 1),
            ws,
        )
        .unwrap();
        assert!(!p.lists_dwarf_memory, "{lockstep:?} {superbatch:?}");
    }
    // The plan resolves an automatic first superbatch: one full round
    // where the lists dwarf memory, short elsewhere; a chosen one stays.
    let resolved = |p: &MemoryPlan, first: FirstSuperbatch| {
        let mut config = EpochConfig {
            cache: CacheConfig::Ginex(GinexOptions {
                first_superbatch: first,
                ..GinexOptions::default()
            }),
            ..EpochConfig::default()
        };
        p.apply(&mut config);
        let g = config.cache.ginex().unwrap();
        (g.first_superbatch, g.early_first_init)
    };
    use FirstSuperbatch::{Auto, Full, Short};
    assert_eq!(resolved(&dwarfed, Auto), (Full, false));
    assert_eq!(resolved(&plain, Auto), (Short, true));
    assert_eq!(resolved(&dwarfed, Short), (Short, true));
    assert_eq!(resolved(&plain, Full), (Full, true));
}

#[test]
fn an_automatic_superbatch_and_its_lockstep_batches_take_at_most_a_quarter() {
    use crate::exec::config::GinexOptions;
    let tmp = tempfile::tempdir().unwrap();
    let (store, ws) = small_store_and_batches(tmp.path());
    let planned = |lockstep: Lockstep| {
        let cache = CacheConfig::Ginex(GinexOptions {
            lockstep,
            ..GinexOptions::default()
        });
        let req = request(cache, None, list_bound::topology_bytes(&store));
        plan(&store, &req, ws).unwrap()
    };
    let mut lengths = Vec::new();
    for lockstep in [Lockstep::Auto, Lockstep::Superbatch, Lockstep::Rounds] {
        let p = planned(lockstep);
        let left = p.memory - p.fixed - p.batch_buffers - p.page_cache_reserve;
        let sampled = match lockstep {
            Lockstep::Rounds => 0,
            _ => p.superbatch * ws.sampling_bytes(),
        };
        assert!(p.superbatch > 1, "{lockstep:?}: {}", p.describe());
        assert!(
            p.superbatch_bytes + sampled <= left / 4,
            "{lockstep:?}: {} + {sampled} > {} / 4",
            p.superbatch_bytes,
            left
        );
        assert!(p.total() <= p.memory, "{}", p.describe());
        if lockstep != Lockstep::Rounds {
            // Its batches are counted once, with it: no round beside.
            assert_eq!(p.lockstep.lockstep(), Lockstep::Superbatch);
            assert_eq!(p.lockstep_bytes, p.superbatch * ws.sampling_bytes());
        }
        lengths.push(p.superbatch);
    }
    // Sampled in rounds, the superbatch pays for its changesets only.
    assert_eq!(lengths[0], lengths[1]);
    assert!(lengths[2] > lengths[0], "{lengths:?}");
}

#[test]
fn a_neighbor_cache_is_planned_only_where_its_build_fits() {
    use crate::sample::neighbor_cache::build_bytes;
    // 50 M nodes: choosing the lists takes 8 bytes a node (400 MB),
    // more than a 256 MiB cache itself; the build runs beside the
    // fixed part and the page-cache reserve only.
    let (n, cache, fixed) = (50_000_000u64, 256u64 << 20, 1u64 << 30);
    let need = build_bytes(n, cache);
    assert!(need >= 8 * n, "{need}");
    assert!(
        need < 8 * n + cache,
        "{need}: the choice is freed before the cache is laid out"
    );
    let fits = fixed + PAGE_CACHE_RESERVE + need;
    assert_eq!(buildable_neighbor_cache(fits, fixed, n, cache), cache);
    assert_eq!(buildable_neighbor_cache(fits - 1, fixed, n, cache), 0);
    assert_eq!(buildable_neighbor_cache(0, fixed, n, 0), 0);
    // Once the cache outweighs the choice, the build holds the cache
    // and its bitmap, not twice the cache.
    let big = 2u64 << 30;
    assert!(
        build_bytes(n, big) < big + (16 << 20),
        "{}",
        build_bytes(n, big)
    );
}

#[test]
fn superbatches_are_evened_out_without_adding_one() {
    assert_eq!(evened_superbatch(81, 46), 41);
    assert_eq!(evened_superbatch(81, 15), 14);
    assert_eq!(evened_superbatch(81, 1000), 81);
    assert_eq!(evened_superbatch(0, 10), 1);
    for batches in 1..150u64 {
        for longest in 1..=batches + 2 {
            let s = evened_superbatch(batches, longest);
            let count = |len: u64| batches.div_ceil(len.min(batches));
            assert!(
                s >= 1 && s <= longest.min(batches),
                "{batches} {longest} -> {s}"
            );
            assert_eq!(count(s), count(longest), "{batches} {longest} -> {s}");
            assert!(
                s == 1 || count(s - 1) > count(s),
                "{batches} {longest} -> {s}"
            );
        }
    }
}
