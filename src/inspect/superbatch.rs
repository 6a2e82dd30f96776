//! One superbatch of the inspector: sample `S` batches with `W` workers into
//! a samples file (records in batch order, byte-identical for any `W`), then
//! precompute the changesets into a changes file.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use rayon::prelude::*;

use crate::cache::belady::{cheapest_plan, Changesets, PageGroups, ReusePrior, Update};
use crate::error::{Error, Result};
use crate::format::header::FileKind;
use crate::format::runtime::{LinkStamp, RecordKind, RelationFanoutsStamp, RunStamp};
pub use crate::inspect::lockstep::Lockstep;
use crate::inspect::runfile::{Record, RunReader, RunWriter};
use crate::io::durable::refuse_existing;
use crate::sample::link::LinkLabels;

/// One sampled batch as the runtime files hold it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SampledRecord {
    /// Sampled node ids, seeds first (the gather order).
    pub ids: Vec<u64>,
    /// The hop adjacencies, encoded by the sampler.
    pub adj: Vec<u8>,
    /// A link batch's edges over its seeds (None: a node batch).
    pub link: Option<LinkLabels>,
}

/// Produces batch `b` of an epoch; must be a pure function of `b` (and the
/// source's own seed and epoch) so any worker count gives the same files.
pub trait BatchSource: Sync {
    /// Samples batch `batch`.
    fn sample(&self, batch: u64) -> Result<SampledRecord>;

    /// Samples `batches`, in order, on the current rayon pool: the same
    /// records as [`sample`](Self::sample) gives one by one (the default
    /// does just that, in parallel).
    fn sample_round(&self, batches: std::ops::Range<u64>) -> Result<Vec<SampledRecord>> {
        batches.into_par_iter().map(|b| self.sample(b)).collect()
    }
}

/// Batches of a lockstep sampling round ([`BatchSource::sample_round`]):
/// four per worker, and at least [`MIN_SAMPLING_ROUND`]. A round's lists
/// are read once and in file order, so larger rounds read less (rounds of
/// 16 against 8 at 2.3 B edges: `docs/lab/performance-journal.md`, "Lockstep
/// sampling"); the plan counts every batch of a round in memory.
pub fn sampling_round(workers: usize) -> u64 {
    (workers.max(1) as u64 * 4).max(MIN_SAMPLING_ROUND)
}

/// Fewest batches of a lockstep sampling round.
pub const MIN_SAMPLING_ROUND: u64 = 16;

/// What to inspect.
#[derive(Debug, Clone)]
pub struct SuperbatchSpec {
    /// Superbatch number (names the files).
    pub index: u64,
    /// First batch of the superbatch within the epoch.
    pub first_batch: u64,
    /// Batches in the superbatch.
    pub num_batches: u64,
    /// Sampling worker threads.
    pub workers: usize,
    /// How many of its batches are sampled in lockstep
    /// ([`round`](Self::round); `Auto` samples in rounds).
    pub lockstep: Lockstep,
    /// Feature cache capacity in rows.
    pub capacity: usize,
    /// k of the k-hop approximation (1 = exact).
    pub every: usize,
    /// Rows per feature page when the changesets may admit page companions
    /// (exact changesets only; see [`plan_superbatch`]); None: rows only.
    pub page_companions: Option<PageGroups>,
    /// The store and run the files belong to (recorded in them, checked
    /// when they are read back).
    pub run: RunParams,
}

/// The store, run and sampling parameters every superbatch of a run shares
/// (with the superbatch's own fields they make its files' [`RunStamp`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RunParams {
    /// `sample::neighbor_cache::store_identity` of the store.
    pub store_id: u32,
    /// Run seed.
    pub seed: u64,
    /// Epoch.
    pub epoch: u64,
    /// CRC-32 of a given seed-node order (0: the training split).
    pub seed_order: u32,
    /// Seeds per batch.
    pub batch_size: u64,
    /// Fanouts, one count per hop for all relations (empty when
    /// per relation).
    pub fanouts: Vec<i64>,
    /// Per-relation fanouts (None: one count per hop).
    pub relation_fanouts: Option<RelationFanoutsStamp>,
    /// The LABOR sampler (None: neighbor sampling).
    pub sampler: Option<crate::format::runtime::SamplerStamp>,
    /// Whether caches carry over between superbatches.
    pub carry_over: bool,
    /// Whether the changesets rank nodes beyond the superbatch by a reuse
    /// prior (see [`ReusePrior`]).
    pub reuse_prior: bool,
    /// Link batches' negatives and exclusion (None: node batches).
    pub link: Option<LinkStamp>,
}

impl RunParams {
    /// The seed-order field for `seed_nodes` (None: the training split).
    pub fn seed_order_of(seed_nodes: Option<&[u64]>) -> u32 {
        seed_nodes.map_or(0, |ids| {
            let mut h = crc32fast::Hasher::new();
            h.update(&(ids.len() as u64).to_le_bytes());
            for id in ids {
                h.update(&id.to_le_bytes());
            }
            h.finalize().max(1)
        })
    }
}

impl SuperbatchSpec {
    /// Batches sampled in lockstep at a time: the whole superbatch under
    /// [`Lockstep::Superbatch`], otherwise [`sampling_round`] of the
    /// workers. The files are the same either way.
    pub fn round(&self) -> u64 {
        match self.lockstep {
            Lockstep::Superbatch => self.num_batches.max(1),
            Lockstep::Auto | Lockstep::Rounds => sampling_round(self.workers),
        }
    }

    /// What this superbatch's files record and must hold when read back.
    pub fn stamp(&self) -> RunStamp {
        RunStamp {
            store_id: self.run.store_id,
            seed: self.run.seed,
            epoch: self.run.epoch,
            seed_order: self.run.seed_order,
            superbatch: self.index,
            first_batch: self.first_batch,
            num_batches: self.num_batches,
            batch_size: self.run.batch_size,
            fanouts: self.run.fanouts.clone(),
            cache_rows: self.capacity as u64,
            changeset_every: self.every as u64,
            carry_over: self.run.carry_over,
            reuse_prior: self.run.reuse_prior,
            relation_fanouts: self.run.relation_fanouts.clone(),
            link: self.run.link,
            sampler: self.run.sampler,
        }
    }
}

/// The files of one superbatch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SuperbatchFiles {
    /// Per-batch ids and adjacencies.
    pub samples: PathBuf,
    /// Cache init and per-batch updates.
    pub changes: PathBuf,
}

impl SuperbatchFiles {
    /// The file names of superbatch `index` inside `dir`.
    pub fn in_dir(dir: &Path, index: u64) -> Self {
        SuperbatchFiles {
            samples: dir.join(format!("sb-{index:06}.samples")),
            changes: dir.join(format!("sb-{index:06}.changes")),
        }
    }

    /// Deletes both files (after the superbatch executed). Only for the
    /// files a run wrote into its own [`RunDir`](crate::exec::run_dir::RunDir):
    /// it removes by name.
    pub fn remove(&self) -> Result<()> {
        for p in [&self.samples, &self.changes] {
            match std::fs::remove_file(p) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(Error::io("remove", p, e)),
            }
        }
        Ok(())
    }
}

/// A superbatch's files that this run wrote: both are removed when it is
/// dropped (once executed, after an error or a panic, or by a stage that
/// gave up), unless kept: now ([`keep`](Self::keep)), or when dropped
/// ([`keep_on_drop`](Self::keep_on_drop), a run that keeps its runtime
/// files). Only for files the run created itself (the inspector refuses
/// existing ones before writing).
#[derive(Debug)]
pub struct OwnedFiles {
    files: Option<SuperbatchFiles>,
    keep: bool,
}

impl OwnedFiles {
    fn new(files: SuperbatchFiles) -> Self {
        OwnedFiles {
            files: Some(files),
            keep: false,
        }
    }

    /// The file names.
    pub fn paths(&self) -> &SuperbatchFiles {
        self.files.as_ref().expect("present until consumed")
    }

    /// Keeps the files on disk; returns their names.
    pub fn keep(mut self) -> SuperbatchFiles {
        self.files.take().expect("present until consumed")
    }

    /// Leaves the files on disk when this is dropped.
    pub fn keep_on_drop(&mut self) {
        self.keep = true;
    }
}

impl Drop for OwnedFiles {
    fn drop(&mut self) {
        if self.keep {
            return;
        }
        if let Some(Err(e)) = self.files.take().map(|files| files.remove()) {
            tracing::warn!("could not remove a superbatch's runtime file: {e}");
        }
    }
}

/// Timings and the changesets' statistics.
#[derive(Debug, Clone)]
pub struct InspectReport {
    /// The files written.
    pub files: SuperbatchFiles,
    /// Time to sample and write the samples file.
    pub sample_time: Duration,
    /// Time to compute the changesets (one core).
    pub changeset_time: Duration,
    /// The changesets (misses per batch included).
    pub changesets: Changesets,
}

/// Samples a superbatch into `dir` and precomputes its changesets from an
/// empty cache, with no reuse prior (`spec.run.reuse_prior` should say
/// so). Refuses when `dir` already holds either file, before writing; on
/// a later error removes the files this call created (and no others), so
/// a half-written superbatch never lingers.
pub fn inspect_superbatch(
    source: &dyn BatchSource,
    spec: &SuperbatchSpec,
    dir: &Path,
) -> Result<InspectReport> {
    // Both files are removed if the changesets fail.
    let sampled = sample_superbatch(source, spec, dir)?;
    let sample_time = sampled.sample_time;
    let (changesets, changeset_time) =
        precompute_changesets(&sampled, spec, &[], &ReusePrior::none())?;
    Ok(InspectReport {
        files: sampled.files.keep(),
        sample_time,
        changeset_time,
        changesets,
    })
}

/// A superbatch sampled to its samples file, with its access trace.
#[derive(Debug)]
pub struct SampledSuperbatch {
    /// The superbatch's files (the changes file is not written yet),
    /// removed when dropped unless kept.
    pub files: OwnedFiles,
    /// The ids each batch gathers.
    pub trace: Vec<Vec<u64>>,
    /// Time to sample and write the samples file.
    pub sample_time: Duration,
    /// When sampling finished (what a computation beside it is measured
    /// against).
    pub sampled_at: Instant,
}

/// The inspector's first half: samples `spec`'s batches into `dir`.
/// Refuses (before writing anything) when `dir` already holds either file
/// of the superbatch; on a later error removes the samples file it created.
pub fn sample_superbatch(
    source: &dyn BatchSource,
    spec: &SuperbatchSpec,
    dir: &Path,
) -> Result<SampledSuperbatch> {
    sample_superbatch_with(source, spec, dir, false, &mut |_| {})
}

/// [`sample_superbatch`], calling `sampled(ids)` with each lockstep
/// round's batches (their ids, in batch order) as soon as the round is
/// sampled: what a caller may start on before the whole superbatch is.
/// With `ramp_up` the first rounds are short (`--workers` batches, then
/// twice as many each round up to a full [`sampling_round`]), so the
/// first ids come early; the records are the same either way.
pub fn sample_superbatch_with(
    source: &dyn BatchSource,
    spec: &SuperbatchSpec,
    dir: &Path,
    ramp_up: bool,
    sampled: &mut dyn FnMut(&[Vec<u64>]),
) -> Result<SampledSuperbatch> {
    let files = SuperbatchFiles::in_dir(dir, spec.index);
    // Refused before anything is written: a file of an earlier run is
    // never replaced, and never removed by this run's cleanup.
    refuse_existing(&files.samples)?;
    refuse_existing(&files.changes)?;
    let started = Instant::now();
    // On error the writer removes the samples file it created (only it).
    let trace = sample_to_file(source, spec, &files.samples, ramp_up, sampled)?;
    Ok(SampledSuperbatch {
        files: OwnedFiles::new(files),
        trace,
        sample_time: started.elapsed(),
        sampled_at: Instant::now(),
    })
}

/// The inspector's second half: the changesets of a sampled superbatch
/// whose cache starts holding `carried` (the previous superbatch's
/// `final_cache`; empty for the first), ranking nodes beyond the
/// superbatch by `prior`, written to its changes file. On error the
/// changes file is removed if this call created it (and both files once
/// `sampled` is dropped).
pub fn precompute_changesets(
    sampled: &SampledSuperbatch,
    spec: &SuperbatchSpec,
    carried: &[u64],
    prior: &ReusePrior,
) -> Result<(Changesets, Duration)> {
    let started = Instant::now();
    let changesets = plan_superbatch(&sampled.trace, spec, carried, prior)?;
    let took = started.elapsed();
    // On error the writer removes the changes file if it created it; an
    // existing file is refused and left alone.
    write_changes(&changesets, &spec.stamp(), &sampled.files.paths().changes)?;
    Ok((changesets, took))
}

/// The changesets of a superbatch whose cache starts holding `carried`:
/// [`cheapest_plan`] with the spec's capacity, k and page companions.
pub fn plan_superbatch<B: AsRef<[u64]>>(
    trace: &[B],
    spec: &SuperbatchSpec,
    carried: &[u64],
    prior: &ReusePrior,
) -> Result<Changesets> {
    cheapest_plan(
        trace,
        spec.capacity,
        spec.every,
        carried,
        prior,
        spec.page_companions.clone(),
    )
    .map_err(|e| Error::internal(format!("superbatch {}: {e}", spec.index)))
}

/// Samples the batches with `spec.workers` threads, appending records in
/// batch order, and returns each batch's ids (the access trace); each
/// round's ids go to `sampled` as soon as they are written (the first
/// rounds short with `ramp_up`).
fn sample_to_file(
    source: &dyn BatchSource,
    spec: &SuperbatchSpec,
    path: &Path,
    ramp_up: bool,
    sampled: &mut dyn FnMut(&[Vec<u64>]),
) -> Result<Vec<Vec<u64>>> {
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(spec.workers.max(1))
        .build()
        .map_err(|e| Error::threads(&format!("{} sampling workers", spec.workers), e))?;
    let mut writer = RunWriter::create(path, FileKind::RunSamples, &spec.stamp())?;
    let mut trace = Vec::with_capacity(spec.num_batches as usize);
    // Rounds sampled in lockstep (a hop's lists read once for the round,
    // in node order): bounded memory, records in order.
    let full_round = spec.round();
    let mut round = if ramp_up {
        (spec.workers.max(1) as u64).min(full_round)
    } else {
        full_round
    };
    let end = spec.first_batch + spec.num_batches;
    let mut next = spec.first_batch;
    while next < end {
        let upto = (next + round).min(end);
        let round_records = pool.install(|| source.sample_round(next..upto))?;
        if round_records.len() as u64 != upto - next {
            return Err(Error::internal(format!(
                "batches {next}..{upto}: sampled {} records",
                round_records.len()
            )));
        }
        let round_start = trace.len();
        for (b, rec) in (next..upto).zip(round_records) {
            writer.append_ids(b, &rec.ids)?;
            writer.append(RecordKind::Adj, b, &rec.adj)?;
            match (&rec.link, spec.run.link.is_some()) {
                (Some(link), true) => writer.append_link(b, link)?,
                (None, false) => {}
                (link, _) => {
                    return Err(Error::internal(format!(
                        "batch {b}: a {} batch in a {} run",
                        if link.is_some() { "link" } else { "node" },
                        if link.is_some() { "node" } else { "link" }
                    )))
                }
            }
            trace.push(rec.ids);
        }
        sampled(&trace[round_start..]);
        next = upto;
        round = (round * 2).min(full_round);
    }
    // The workers' CPU time (the pool's threads are this superbatch's own).
    let workers: std::time::Duration = pool
        .broadcast(|_| crate::io::cpu_time::thread_cpu())
        .into_iter()
        .sum();
    crate::io::cpu_time::charge(crate::io::cpu_time::Role::Sampling, workers);
    writer.finish()?;
    Ok(trace)
}

fn write_changes(cs: &Changesets, stamp: &RunStamp, path: &Path) -> Result<()> {
    let first_batch = stamp.first_batch;
    let mut w = RunWriter::create(path, FileKind::RunChanges, stamp)?;
    w.append_init(first_batch, &cs.init)?;
    for (i, u) in cs.updates.iter().enumerate() {
        w.append_update(first_batch + i as u64, u)?;
    }
    w.finish()?;
    Ok(())
}

/// Reads a superbatch back: per batch (ids, adj payload), the init and the
/// updates (all of it in memory: tests and tools; the executor streams it
/// with a [`SuperbatchReader`]).
pub fn read_superbatch(
    files: &SuperbatchFiles,
    expected: &RunStamp,
) -> Result<(Vec<SampledRecord>, Vec<u64>, Vec<Update>)> {
    let mut reader = SuperbatchReader::open(files, expected)?;
    let init = reader.take_init();
    let (mut batches, mut updates) = (Vec::new(), Vec::new());
    while let Some((record, update)) = reader.next_batch()? {
        batches.push(record);
        updates.push(update);
    }
    Ok((batches, init, updates))
}

/// Streams a superbatch's files one batch at a time (the executor's view:
/// it holds one batch's records, not the superbatch's), checking that
/// both files belong to `expected` (store, run, superbatch and parameters:
/// a stale or foreign file is refused, naming what differs), that batches
/// are consecutive and complete, and every record's checksum as it goes
/// (each file's whole-payload checksum once it ends).
pub struct SuperbatchReader {
    files: SuperbatchFiles,
    samples: RunReader,
    changes: RunReader,
    init: Vec<u64>,
    /// An update read while looking for the init (a file without one).
    held_update: Option<Record>,
    first_batch: u64,
    num_batches: u64,
    /// Whether each batch has a `link` record after its `adj`.
    link: bool,
    /// Batches read so far.
    read: u64,
}

impl SuperbatchReader {
    /// Opens both files and reads the init (the changes file's first record).
    pub fn open(files: &SuperbatchFiles, expected: &RunStamp) -> Result<Self> {
        let samples = RunReader::open(&files.samples, FileKind::RunSamples)?;
        samples.stamp().check(expected, &files.samples)?;
        let mut changes = RunReader::open(&files.changes, FileKind::RunChanges)?;
        changes.stamp().check(expected, &files.changes)?;
        let (init, held_update) = match changes.next_record()? {
            Some(Record::Init { init, .. }) => (init, None),
            other => (Vec::new(), other),
        };
        Ok(SuperbatchReader {
            files: files.clone(),
            samples,
            changes,
            init,
            held_update,
            first_batch: expected.first_batch,
            num_batches: expected.num_batches,
            link: expected.link.is_some(),
            read: 0,
        })
    }

    /// The cache init (`C[0]`), once.
    pub fn take_init(&mut self) -> Vec<u64> {
        std::mem::take(&mut self.init)
    }

    /// The next batch's record and update; `None` after the last one,
    /// once both files are checked to end there.
    pub fn next_batch(&mut self) -> Result<Option<(SampledRecord, Update)>> {
        let batch = self.first_batch + self.read;
        if self.read == self.num_batches {
            if let Some(extra) = self.samples.next_record()? {
                return Err(self.bad_samples(format!(
                    "unexpected {} past the run record's batches {}..{batch}",
                    describe(&extra),
                    self.first_batch
                )));
            }
            match self.next_change()? {
                None => return Ok(None),
                Some(Record::Update { .. }) => {
                    return Err(Error::corrupt(
                        &self.files.changes,
                        0,
                        format!("more updates than the {} batches", self.num_batches),
                    ))
                }
                Some(other) => return Err(self.unexpected_change(&other)),
            }
        }
        let ids = match self.samples.next_record()? {
            Some(Record::Ids { batch: b, ids }) if b == batch => ids,
            Some(Record::Ids { batch: b, .. }) => {
                return Err(self.bad_samples(format!(
                    "ids record of batch {b} where batch {batch} was expected"
                )))
            }
            Some(Record::Adj { batch: b, .. }) => {
                return Err(self.bad_samples(format!("adj record of batch {b} out of order")))
            }
            Some(other) => {
                return Err(
                    self.bad_samples(format!("unexpected {} in a samples file", describe(&other)))
                )
            }
            None => {
                return Err(self.bad_samples(format!(
                    "batches {}..{batch} where its run record says {}..{}",
                    self.first_batch,
                    self.first_batch,
                    self.first_batch + self.num_batches
                )))
            }
        };
        let adj = match self.samples.next_record()? {
            Some(Record::Adj { batch: b, payload }) if b == batch => payload,
            _ => {
                return Err(self.bad_samples(format!(
                    "the adj record of batch {batch} does not follow its ids"
                )))
            }
        };
        let link = if self.link {
            match self.samples.next_record()? {
                Some(Record::Link { batch: b, labels }) if b == batch => {
                    labels
                        .check(ids.len(), &format!("link record of batch {batch}"))
                        .map_err(|e| self.bad_samples(e.to_string()))?;
                    Some(labels)
                }
                _ => {
                    return Err(self.bad_samples(format!(
                        "the link record of batch {batch} does not follow its adj"
                    )))
                }
            }
        } else {
            None
        };
        let update = match self.next_change()? {
            Some(Record::Update { batch: b, update }) if b == batch => update,
            Some(Record::Update { batch: b, .. }) => {
                return Err(Error::corrupt(
                    &self.files.changes,
                    0,
                    format!("update of batch {b} where batch {batch} was expected"),
                ))
            }
            Some(other) => return Err(self.unexpected_change(&other)),
            None => {
                return Err(Error::corrupt(
                    &self.files.changes,
                    0,
                    format!("{} updates for {} batches", self.read, self.num_batches),
                ))
            }
        };
        self.read += 1;
        Ok(Some((SampledRecord { ids, adj, link }, update)))
    }

    fn next_change(&mut self) -> Result<Option<Record>> {
        match self.held_update.take() {
            Some(record) => Ok(Some(record)),
            None => self.changes.next_record(),
        }
    }

    fn bad_samples(&self, what: String) -> Error {
        Error::corrupt(&self.files.samples, 0, what)
    }

    fn unexpected_change(&self, record: &Record) -> Error {
        Error::corrupt(
            &self.files.changes,
            0,
            format!("unexpected {} in a changes file", describe(record)),
        )
    }
}

/// A record, by kind and batch, for an error message.
fn describe(record: &Record) -> String {
    let (kind, batch) = match record {
        Record::Ids { batch, .. } => ("ids", batch),
        Record::Adj { batch, .. } => ("adj", batch),
        Record::Init { batch, .. } => ("init", batch),
        Record::Update { batch, .. } => ("update", batch),
        Record::Link { batch, .. } => ("link", batch),
    };
    format!("{kind} record of batch {batch}")
}

impl BatchSource for crate::sample::sampler::EpochSampler<'_> {
    fn sample(&self, batch: u64) -> Result<SampledRecord> {
        let weighted = !self.fanouts.sampler().is_neighbor();
        record_of(
            crate::sample::sampler::EpochSampler::sample(self, batch)?,
            weighted,
        )
    }

    /// The round's batches in lockstep, each hop's lists read once.
    fn sample_round(&self, batches: std::ops::Range<u64>) -> Result<Vec<SampledRecord>> {
        let weighted = !self.fanouts.sampler().is_neighbor();
        crate::sample::sampler::EpochSampler::sample_round(self, batches)?
            .into_par_iter()
            .map(|b| record_of(b, weighted))
            .collect()
    }
}

/// A batch as its records hold it; `weighted` (a LABOR run): its `adj`
/// record with the edges' weights.
fn record_of(b: crate::sample::sampler::SampledBatch, weighted: bool) -> Result<SampledRecord> {
    Ok(SampledRecord {
        adj: crate::sample::sampler::encode_hops_with(&b.hops, weighted)?,
        ids: b.ids,
        link: b.link,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cache::belady::{compute_changesets_from, plan_page_reads};

    /// A deterministic toy source: batch b's ids are a hash-derived set.
    struct Toy;
    impl BatchSource for Toy {
        fn sample(&self, b: u64) -> Result<SampledRecord> {
            let mut ids: Vec<u64> = (0..20).map(|k| (b * 7919 + k * k * 31) % 97).collect();
            ids.sort_unstable();
            ids.dedup();
            ids.rotate_left((b % 5) as usize);
            Ok(SampledRecord {
                adj: ids.iter().map(|&x| x as u8).collect(),
                ids,
                link: None,
            })
        }
    }

    #[test]
    fn files_are_identical_for_any_worker_count_and_read_back() {
        let dir = tempfile::tempdir().unwrap();
        let mut bytes = Vec::new();
        let runs = [1usize, 2, 5]
            .into_iter()
            .flat_map(|w| Lockstep::ALL.map(|l| (w, l)));
        for (i, (workers, lockstep)) in runs.enumerate() {
            let sub = dir.path().join(format!("w{i}"));
            std::fs::create_dir(&sub).unwrap();
            let spec = SuperbatchSpec {
                index: 3,
                first_batch: 30,
                num_batches: 23,
                workers,
                lockstep,
                capacity: 25,
                every: 1,
                page_companions: None,
                run: RunParams::default(),
            };
            let report = inspect_superbatch(&Toy, &spec, &sub).unwrap();
            bytes.push((
                std::fs::read(&report.files.samples).unwrap(),
                std::fs::read(&report.files.changes).unwrap(),
            ));
            let (batches, init, updates) = read_superbatch(&report.files, &spec.stamp()).unwrap();
            assert_eq!(batches.len(), 23);
            assert_eq!(batches[4], Toy.sample(34).unwrap());
            assert_eq!(init, report.changesets.init);
            assert_eq!(updates, report.changesets.updates);
            report.files.remove().unwrap();
            assert!(!report.files.samples.exists() && !report.files.changes.exists());
        }
        assert!(
            bytes.windows(2).all(|w| w[0] == w[1]),
            "runtime files differ across worker counts and lockstep modes"
        );
    }

    #[test]
    fn short_first_rounds_write_the_same_files_and_hand_every_batch_on() {
        let dir = tempfile::tempdir().unwrap();
        let mut files = Vec::new();
        for (i, ramp_up) in [false, true].into_iter().enumerate() {
            let sub = dir.path().join(format!("r{i}"));
            std::fs::create_dir(&sub).unwrap();
            let spec = SuperbatchSpec {
                index: 0,
                first_batch: 5,
                num_batches: 40,
                workers: 2,
                capacity: 25,
                every: 1,
                page_companions: None,
                run: RunParams::default(),
                lockstep: Lockstep::Rounds,
            };
            let mut rounds = Vec::new();
            let mut handed = Vec::new();
            let sampled = sample_superbatch_with(&Toy, &spec, &sub, ramp_up, &mut |round| {
                rounds.push(round.len());
                handed.extend(round.iter().cloned());
            })
            .unwrap();
            assert_eq!(handed, sampled.trace, "ramp_up {ramp_up}");
            // 2, 4, 8, 16 and the rest when ramping; full rounds of 16 else.
            let want: &[usize] = if ramp_up {
                &[2, 4, 8, 16, 10]
            } else {
                &[16, 16, 8]
            };
            assert_eq!(rounds, want);
            files.push(std::fs::read(&sampled.files.paths().samples).unwrap());
        }
        assert_eq!(files[0], files[1], "short rounds changed the samples file");
    }

    struct Failing;
    impl BatchSource for Failing {
        fn sample(&self, b: u64) -> Result<SampledRecord> {
            if b == 5 {
                Err(Error::OutOfRange("batch 5 failed".into()))
            } else {
                Toy.sample(b)
            }
        }
    }

    #[test]
    fn a_failing_batch_fails_the_superbatch() {
        let dir = tempfile::tempdir().unwrap();
        let spec = SuperbatchSpec {
            index: 0,
            first_batch: 0,
            num_batches: 10,
            workers: 2,
            lockstep: Lockstep::Auto,
            capacity: 5,
            every: 1,
            page_companions: None,
            run: RunParams::default(),
        };
        let err = inspect_superbatch(&Failing, &spec, dir.path())
            .unwrap_err()
            .to_string();
        assert!(err.contains("batch 5"), "{err}");
        assert_eq!(
            std::fs::read_dir(dir.path()).unwrap().count(),
            0,
            "partial runtime files left behind"
        );
    }

    use proptest::prelude::*;

    proptest! {
        /// With page companions the superbatch's plan never reads more
        /// pages than the row plan, and says how many it reads.
        #[test]
        fn page_companions_never_read_more_pages(
            batches in proptest::collection::vec(
                proptest::collection::btree_set(0u64..40, 0..12)
                    .prop_map(|s| s.into_iter().rev().collect::<Vec<u64>>()),
                0..12),
            capacity in 0usize..14,
            carried in proptest::collection::btree_set(0u64..40, 0..6),
        ) {
            let groups = PageGroups::of(4).unwrap();
            let carried: Vec<u64> = carried.into_iter().take(capacity).collect();
            let spec = SuperbatchSpec {
                index: 0,
                first_batch: 0,
                num_batches: batches.len() as u64,
                workers: 1,
                lockstep: Lockstep::Auto,
                capacity,
                every: 1,
                page_companions: Some(groups.clone()),
                run: RunParams::default(),
            };
            let prior = ReusePrior::none();
            let chosen = plan_superbatch(&batches, &spec, &carried, &prior).unwrap();
            let rows = compute_changesets_from(&batches, capacity, 1, &carried, &prior);
            let row_pages = plan_page_reads(&batches, &carried, &rows, &groups).unwrap();
            prop_assert!(chosen.page_reads.unwrap() <= row_pages);
            prop_assert_eq!(
                chosen.page_reads,
                Some(plan_page_reads(&batches, &carried, &chosen, &groups).unwrap())
            );
        }
    }

    /// A changes file of `updates` (of batches `first..`) for `spec`.
    fn write_updates(spec: &SuperbatchSpec, path: &Path, first: u64, updates: &[Update]) {
        let _ = std::fs::remove_file(path);
        let mut w = RunWriter::create(path, FileKind::RunChanges, &spec.stamp()).unwrap();
        w.append_init(spec.first_batch, &[]).unwrap();
        for (i, u) in updates.iter().enumerate() {
            w.append_update(first + i as u64, u).unwrap();
        }
        w.finish().unwrap();
    }

    #[test]
    fn the_streaming_reader_refuses_missing_extra_and_misplaced_updates() {
        let dir = tempfile::tempdir().unwrap();
        let spec = SuperbatchSpec {
            index: 0,
            first_batch: 10,
            num_batches: 3,
            workers: 1,
            lockstep: Lockstep::Auto,
            capacity: 4,
            every: 1,
            page_companions: None,
            run: RunParams::default(),
        };
        let report = inspect_superbatch(&Toy, &spec, dir.path()).unwrap();
        let files = report.files;
        let stream = |files: &SuperbatchFiles| -> Result<usize> {
            let mut reader = SuperbatchReader::open(files, &spec.stamp())?;
            let mut batches = 0;
            while reader.next_batch()?.is_some() {
                batches += 1;
            }
            Ok(batches)
        };
        assert_eq!(stream(&files).unwrap(), 3);
        let empty = vec![Update::default(); 4];
        let cases: [(u64, &[Update], &str); 3] = [
            (10, &empty[..2], "2 updates for 3 batches"),
            (10, &empty[..4], "more updates than the 3 batches"),
            (
                11,
                &empty[..3],
                "update of batch 11 where batch 10 was expected",
            ),
        ];
        for (first, updates, want) in cases {
            write_updates(&spec, &files.changes, first, updates);
            let e = stream(&files).unwrap_err().to_string();
            assert!(e.contains(want) && e.contains("sb-000000.changes"), "{e}");
        }
    }

    fn run(store_id: u32, seed: u64) -> RunParams {
        RunParams {
            store_id,
            seed,
            epoch: 1,
            seed_order: 0,
            batch_size: 4,
            fanouts: vec![3, 2],
            relation_fanouts: None,
            sampler: None,
            carry_over: true,
            reuse_prior: false,
            link: None,
        }
    }

    #[test]
    fn files_of_another_store_run_or_superbatch_are_refused_on_read() {
        let dir = tempfile::tempdir().unwrap();
        let spec = |index: u64, run: RunParams| SuperbatchSpec {
            index,
            first_batch: index * 6,
            num_batches: 6,
            workers: 1,
            lockstep: Lockstep::Auto,
            capacity: 10,
            every: 1,
            page_companions: None,
            run,
        };
        let ours = spec(0, run(0x1111, 7));
        let files = inspect_superbatch(&Toy, &ours, dir.path()).unwrap().files;
        assert!(read_superbatch(&files, &ours.stamp()).is_ok());
        // The same files, expected by a run of another store, another seed,
        // another superbatch, other parameters.
        let mut other_params = ours.clone();
        other_params.capacity = 11;
        other_params.run.fanouts = vec![3, 3];
        for (expected, words) in [
            (
                spec(0, run(0x2222, 7)),
                &[
                    "another store",
                    "store: expected 0x00002222, found 0x00001111",
                ][..],
            ),
            (
                spec(0, run(0x1111, 8)),
                &["another run", "seed: expected 8, found 7"][..],
            ),
            (
                spec(1, run(0x1111, 7)),
                &[
                    "superbatch: expected 1, found 0",
                    "first batch: expected 6, found 0",
                ][..],
            ),
            (
                other_params,
                &[
                    "fanouts: expected 3,3, found 3,2",
                    "cache rows: expected 11, found 10",
                ][..],
            ),
        ] {
            let err = read_superbatch(&files, &expected.stamp())
                .unwrap_err()
                .to_string();
            assert!(err.contains("sb-000000.samples"), "{err}");
            for w in words {
                assert!(err.contains(w), "{w:?} missing from: {err}");
            }
        }
    }
}
