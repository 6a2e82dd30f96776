//! The pipeline's runtime files under every schedule, written straight
//! into a directory of the test's (no [`RunDir`](crate::exec::run_dir::RunDir)
//! cleans up after the pipeline here): removed once each superbatch
//! executes, and when a run fails or panics, unless the run keeps them.

use std::path::{Path, PathBuf};

use super::*;
use crate::error::Error;
use crate::exec::config::CacheConfig;
use crate::exec::sampler::make_sampler;
use crate::import::synth::{generate_store, NoProgress, SynthParams};
use crate::sample::source::StoreSource;

/// A store of 15 batches of 40 seeds: three superbatches of five; rows
/// of 512 bytes, wide enough that `full` prepares two ahead.
fn small_store(dir: &Path) -> Store {
    store_of_dim(dir, 128)
}

/// [`small_store`]'s graph with `dim` f32 features a node, in `dir/s{dim}`.
fn store_of_dim(dir: &Path, dim: u32) -> Store {
    let params = SynthParams {
        nodes: 3000,
        avg_degree: 10.0,
        dim,
        classes: 4,
        seed: 8,
        split: [0.2, 0.1, 0.1],
        ..SynthParams::default()
    };
    let path = dir.join(format!("s{dim}"));
    generate_store(&params, &path, &NoProgress).unwrap();
    Store::open(path).unwrap()
}

const SUPERBATCH: u64 = 5;

fn config(pipeline: Pipeline, keep_runs: bool) -> EpochConfig {
    EpochConfig {
        feature_cache_rows: 300,
        batch_size: 40,
        fanouts: vec![6, 4].into(),
        cache: CacheConfig::Ginex(GinexOptions {
            superbatch: SUPERBATCH,
            pipeline,
            keep_runs,
            ..GinexOptions::default()
        }),
        seed: 3,
        epoch: 1,
        workers: 2,
        ..EpochConfig::default()
    }
}

/// Runs the pipeline of `config` on `store`, its files in `dir`.
fn run_in(
    store: &Store,
    config: &EpochConfig,
    dir: &Path,
    consume: &mut dyn FnMut(&EpochBatch<'_>) -> Result<()>,
) -> Result<EpochReport> {
    let options = GatherOptions::default();
    let source = StoreSource::new(store, None, &options)?;
    let train = store.splits()?.map(|s| s.train).unwrap_or_default();
    let link = crate::exec::sampler::link_epoch(&source, store, config)?;
    let sampler = make_sampler(&source, store, config, &train, link.as_ref())?;
    let rows = GatherRows::new(store, &options)?;
    let run = GinexRun {
        config,
        ginex: config.cache.ginex().unwrap(),
        store,
        options: &options,
        sampler: &sampler,
        rows: &rows,
        dir,
    };
    let mut report = EpochReport::default();
    run_ginex(&run, &mut report, consume)?;
    Ok(report)
}

/// The files in `dir`, by name.
fn files_in(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    files
}

/// The superbatch a runtime file belongs to (`sb-000002.samples`: 2).
fn superbatch_of(path: &Path) -> u64 {
    let name = path.file_stem().unwrap().to_str().unwrap();
    name.strip_prefix("sb-").unwrap().parse().unwrap()
}

/// Whether `done` holds within a minute (polled every 10 ms).
fn eventually(done: impl Fn() -> bool) -> bool {
    let until = Instant::now() + Duration::from_secs(60);
    while !done() {
        if Instant::now() > until {
            return false;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    true
}

#[test]
fn runtime_files_go_after_each_superbatch_unless_kept() {
    let tmp = tempfile::tempdir().unwrap();
    let store = small_store(tmp.path());
    for pipeline in Pipeline::ALL {
        let dir = tmp.path().join(format!("run-{}", pipeline.name()));
        std::fs::create_dir(&dir).unwrap();
        let cfg = config(pipeline, false);
        // While superbatch s runs, only its files and those of the ones
        // prepared ahead of it exist: the ones before it are gone.
        let row_bytes = store.layout().row_bytes();
        let ahead = match pipeline {
            Pipeline::Full => full_superbatches_of_files(row_bytes) as u64 - 1,
            Pipeline::Serial | Pipeline::Overlap => 1,
        };
        assert_eq!(
            ahead == 2,
            pipeline == Pipeline::Full,
            "{row_bytes}-byte rows"
        );
        let mut seen = 0;
        let report = run_in(&store, &cfg, &dir, &mut |b| {
            let s = b.batch / SUPERBATCH;
            if pipeline == Pipeline::Full && b.batch == 0 {
                // Two ahead: the third superbatch is sampled and prepared
                // while the first runs, so its init is known before the
                // second starts.
                assert!(
                    eventually(|| files_in(&dir).iter().any(|f| superbatch_of(f) == 2)),
                    "{:?}",
                    files_in(&dir)
                );
            }
            for f in files_in(&dir) {
                let of = superbatch_of(&f);
                assert!(
                    (s..=s + ahead).contains(&of),
                    "{pipeline:?}, batch {}: {f:?}",
                    b.batch
                );
            }
            seen += 1;
            Ok(())
        })
        .unwrap();
        assert_eq!(report.superbatches, 3, "{pipeline:?}");
        assert_eq!(seen, 15);
        assert!(
            files_in(&dir).is_empty(),
            "{pipeline:?}: {:?}",
            files_in(&dir)
        );

        // A kept run keeps both files of every superbatch.
        let dir = tmp.path().join(format!("kept-{}", pipeline.name()));
        std::fs::create_dir(&dir).unwrap();
        run_in(&store, &config(pipeline, true), &dir, &mut |_| Ok(())).unwrap();
        let names: Vec<String> = files_in(&dir)
            .iter()
            .map(|f| f.file_name().unwrap().to_string_lossy().into_owned())
            .collect();
        let want: Vec<String> = (0..3)
            .flat_map(|s| [format!("sb-{s:06}.changes"), format!("sb-{s:06}.samples")])
            .collect();
        assert_eq!(names, want, "{pipeline:?}");
    }
}

#[test]
fn full_prepares_one_superbatch_ahead_where_rows_are_narrow() {
    let tmp = tempfile::tempdir().unwrap();
    // 96-byte rows: the plan charges no second prepared superbatch, so
    // the pipeline must not hold one.
    let store = store_of_dim(tmp.path(), 24);
    assert_eq!(full_superbatches_of_files(store.layout().row_bytes()), 2);
    let dir = tmp.path().join("run");
    std::fs::create_dir(&dir).unwrap();
    run_in(&store, &config(Pipeline::Full, false), &dir, &mut |b| {
        let s = b.batch / SUPERBATCH;
        if b.batch % SUPERBATCH == 0 {
            // Time for the inspector to run further ahead, were it let.
            std::thread::sleep(Duration::from_millis(200));
        }
        for f in files_in(&dir) {
            assert!(
                (s..=s + 1).contains(&superbatch_of(&f)),
                "batch {}: {f:?}",
                b.batch
            );
        }
        Ok(())
    })
    .unwrap();
}

#[test]
fn a_failed_or_panicking_run_leaves_no_runtime_file() {
    let tmp = tempfile::tempdir().unwrap();
    let store = small_store(tmp.path());
    for pipeline in Pipeline::ALL {
        let cfg = config(pipeline, false);
        // The first batch, one in the middle superbatch, the last.
        for stop_at in [0, 7, 14] {
            let dir = tmp
                .path()
                .join(format!("fail-{}-{stop_at}", pipeline.name()));
            std::fs::create_dir(&dir).unwrap();
            let err = run_in(&store, &cfg, &dir, &mut |b| {
                if b.batch == stop_at {
                    return Err(Error::invalid_argument("the consumer stops"));
                }
                Ok(())
            })
            .unwrap_err();
            assert!(err.to_string().contains("the consumer stops"), "{err}");
            assert!(
                files_in(&dir).is_empty(),
                "{pipeline:?}, {stop_at}: {:?}",
                files_in(&dir)
            );

            let dir = tmp
                .path()
                .join(format!("panic-{}-{stop_at}", pipeline.name()));
            std::fs::create_dir(&dir).unwrap();
            let panicked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                run_in(&store, &cfg, &dir, &mut |b| {
                    assert_ne!(b.batch, stop_at, "the consumer panics");
                    Ok(())
                })
            }));
            assert!(panicked.is_err(), "{pipeline:?}, {stop_at}: no panic");
            assert!(
                files_in(&dir).is_empty(),
                "{pipeline:?}, {stop_at}: {:?}",
                files_in(&dir)
            );
        }
    }
}
