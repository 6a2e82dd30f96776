//! What `train` and `predict` keep for the model beside the data path,
//! measured on the model actually built instead of a fixed allowance.
//!
//! [`measure`] builds the run's model, samples the epoch's first batch,
//! and runs [`PROBE_STEPS`] training steps on it (forward passes for
//! prediction) while watching the process's resident memory: the model's
//! state (parameters, optimizer moments), then the steps' peak (gradients,
//! activations, libtorch's thread pools and allocator slack). The
//! [`ModelFootprint`] it returns prices a batch by its rows, so the memory
//! planner ([`crate::exec::plan::plan_epoch_with`]) charges the largest
//! batch it measures, not the probe's. What the planner charged a round-3
//! SAGE run as a constant (1 GiB) is now the measured figure: a small
//! R-GCN run fits `--memory 512MiB`.
//!
//! Resident memory is read from `/proc/self/status`; the peak is reset
//! through `/proc/self/clear_refs` before the step. Where either is
//! unavailable (not Linux, or a kernel that refuses the reset), the
//! footprint falls back to [`FALLBACK_BYTES`], the old constant.

use std::io::Write;

use crate::error::{Error, Result};
use crate::exec::epoch::EpochConfig;
use crate::exec::plan::WorkingSet;
use crate::exec::report::EpochBatch;
use crate::store::Store;
use crate::train::trainer::{TrainConfig, Trainer};

/// The allowance used where memory cannot be measured: what round 3
/// charged every run (a SAGE run on batches of ~146k rows of 256 f32
/// peaked ~700 MiB above its data path).
pub const FALLBACK_BYTES: u64 = 1 << 30;

/// Footprints are rounded up to this, so that two runs of one command plan
/// the same sizes (and find the neighbor cache the first one built).
const ROUND_TO: u64 = 32 << 20;

/// Steps the probe runs on its batch. The first step's peak is not the
/// run's: a SAGE model (hidden 256, 1M × 64 f32 store, 73,834 rows) peaked
/// 190 MiB above its state in its first step, 242 in its second and 261 in
/// each of the third to fifth, the heap that later steps allocate in being
/// the one the earlier steps left (`docs/lab/performance-journal.md`, "The model's
/// step, measured in its steady state").
pub const PROBE_STEPS: usize = 3;

/// Headroom over the measured steps: a later step's allocations land in a
/// heap the probe did not leave in the same shape (the same SAGE probe
/// peaked 185 MiB above its state over three steps in some processes and
/// 242 in others).
const HEADROOM: f64 = 1.25;

/// What the model holds, measured on one batch.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ModelFootprint {
    /// The model's state: parameters and optimizer moments (bytes).
    pub state_bytes: u64,
    /// The step's peak above the state, per row of the probed batch
    /// (bytes): gradients, activations, libtorch's pools.
    pub step_bytes_per_row: f64,
    /// The step's peak above the state on the probed batch (bytes).
    pub step_bytes: u64,
    /// Rows of the probed batch.
    pub probe_rows: u64,
    /// Whether the figures were measured (false: [`FALLBACK_BYTES`]).
    pub measured: bool,
}

impl ModelFootprint {
    /// The fallback: [`FALLBACK_BYTES`] whatever the batches.
    pub fn fallback() -> Self {
        ModelFootprint {
            state_bytes: FALLBACK_BYTES,
            step_bytes_per_row: 0.0,
            step_bytes: 0,
            probe_rows: 0,
            measured: false,
        }
    }

    /// What to plan beside the data path for batches like `ws`: the state,
    /// and the step priced at the largest measured batch (never below the
    /// probe's own), with headroom, rounded up to 32 MiB.
    pub fn bytes_for(&self, ws: &WorkingSet) -> u64 {
        if !self.measured {
            return self.state_bytes;
        }
        let rows = ws.max_ids.max(self.probe_rows);
        let step = (self.step_bytes_per_row * rows as f64).max(self.step_bytes as f64);
        let total = self.state_bytes as f64 + HEADROOM * step;
        (total as u64).div_ceil(ROUND_TO) * ROUND_TO
    }

    /// One line for people.
    pub fn describe(&self) -> String {
        let mib = |b: u64| b as f64 / (1u64 << 20) as f64;
        if self.measured {
            format!(
                "model memory measured on the first batch ({} rows): state {:.0} MiB, step {:.0} MiB ({:.0} bytes a row)",
                self.probe_rows,
                mib(self.state_bytes),
                mib(self.step_bytes),
                self.step_bytes_per_row
            )
        } else {
            format!(
                "model memory not measurable here (no /proc/self/clear_refs): {:.0} MiB allowed",
                mib(self.state_bytes)
            )
        }
    }
}

/// Resident bytes of this process: `VmRSS` (`peak` false) or `VmHWM`.
pub(crate) fn resident(peak: bool) -> Option<u64> {
    let key = if peak { "VmHWM:" } else { "VmRSS:" };
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let kib: u64 = status
        .lines()
        .find(|l| l.starts_with(key))?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()?;
    Some(kib * 1024)
}

/// Resets `VmHWM` to the current resident size (Linux 4.0+).
fn reset_peak() -> bool {
    std::fs::OpenOptions::new()
        .write(true)
        .open("/proc/self/clear_refs")
        .and_then(|mut f| f.write_all(b"5"))
        .is_ok()
}

/// Measures the model `config` builds for `store` on `device` on the first
/// batch of `data`'s epoch (`train`: [`PROBE_STEPS`] training steps; else
/// as many forward passes, as `predict` runs). `seeds` are the epoch's seeds (the training split,
/// or the nodes to predict). On a GPU the figures are the host's share
/// (the CUDA context, pinned buffers), which is what `--memory` bounds.
/// The model and the batch are dropped before it returns.
pub fn measure(
    store: &Store,
    config: &TrainConfig,
    data: &EpochConfig,
    seeds: &[u64],
    (train, device): (bool, tch::Device),
) -> Result<ModelFootprint> {
    if seeds.is_empty() || resident(false).is_none() || !reset_peak() {
        return Ok(ModelFootprint::fallback());
    }
    let batch = first_batch(store, data, seeds)?;
    crate::io::heap::release_free_memory();
    let before = resident(false).unwrap_or(0);
    let in_dim = i64::from(store.feature_dim());
    let classes = i64::from(store.num_classes().max(1));
    let mut trainer = Trainer::new(config.for_store(store)?, in_dim, classes, device);
    let with_state = resident(false).unwrap_or(before);
    if !reset_peak() {
        return Ok(ModelFootprint::fallback());
    }
    for _ in 0..PROBE_STEPS {
        if train {
            trainer.train_step(&batch)?;
        } else {
            trainer.predict(&batch)?;
        }
    }
    let peak = resident(true).unwrap_or(with_state);
    let rows = batch.ids.len() as u64;
    drop(trainer);
    drop(batch);
    crate::io::heap::release_free_memory();
    let step_bytes = peak.saturating_sub(with_state);
    Ok(ModelFootprint {
        state_bytes: with_state.saturating_sub(before),
        step_bytes_per_row: step_bytes as f64 / rows.max(1) as f64,
        step_bytes,
        probe_rows: rows,
        measured: true,
    })
}

/// The first batch of `data`'s epoch over `seeds`, gathered from `store`.
fn first_batch(
    store: &Store,
    data: &EpochConfig,
    seeds: &[u64],
) -> Result<crate::train::trainer::TrainBatch> {
    let options = crate::store::gather::GatherOptions::default();
    let source = crate::sample::source::StoreSource::new(store, None, &options)?;
    let sampler = crate::exec::sampler::make_sampler(&source, store, data, seeds, None)?;
    let sampled = sampler.sample(0)?;
    let mut rows = vec![0u8; sampled.ids.len() * store.layout().row_bytes()];
    store.read_feature_rows(&sampled.ids, &mut rows)?;
    let labels = store.labels()?.unwrap_or_default();
    let batch = EpochBatch {
        batch: 0,
        ids: &sampled.ids,
        num_seeds: sampled.num_seeds,
        hops: &sampled.hops,
        rows: &rows,
        link: sampled.link.as_ref(),
    };
    crate::train::pass::to_train_batch(&batch, store, &labels)
        .map_err(|e| Error::internal(format!("the model-memory probe batch: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn working_set(max_ids: u64) -> WorkingSet {
        WorkingSet {
            batches: 4,
            max_ids,
            mean_ids: max_ids as f64,
            mean_edges: 0.0,
            mean_candidates: 0.0,
        }
    }

    #[test]
    fn a_footprint_prices_the_largest_batch_with_headroom_in_32_mib_steps() {
        let f = ModelFootprint {
            state_bytes: 10 << 20,
            step_bytes_per_row: 1024.0,
            step_bytes: 100 << 20,
            probe_rows: 102_400,
            measured: true,
        };
        // 200k rows: 195.3 MiB of step, 244.1 with headroom, 254.1 with the
        // state, rounded up to 256 MiB.
        assert_eq!(f.bytes_for(&working_set(200_000)), 256 << 20);
        // A batch smaller than the probe is charged the probe's step:
        // 10 + 125 = 135 MiB, rounded up to 160.
        assert_eq!(f.bytes_for(&working_set(10)), 160 << 20);
        assert_eq!(
            ModelFootprint::fallback().bytes_for(&working_set(1 << 30)),
            FALLBACK_BYTES
        );
    }
}
