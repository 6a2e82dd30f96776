//! How many batches the inspector samples in lockstep, as the memory plan
//! chooses it: the whole superbatch where its batches fit beside the
//! caches, otherwise rounds of workers × 4 (at least
//! [`MIN_SAMPLING_ROUND`](crate::inspect::superbatch::MIN_SAMPLING_ROUND)).
//!
//! A lockstep round asks, per hop, for the lists of all its batches'
//! targets at once, in node order (the topology file's order): each list
//! is read once for the round, and lists that lie close together are read
//! in one request ([`Gatherer::visit_lists`](crate::store::gather::Gatherer::visit_lists)).
//! A round of the whole superbatch reads each list once per superbatch
//! and hop, in the densest requests; it holds every batch of the
//! superbatch while they are sampled, so the plan counts them all and
//! takes the bytes from the caches' budget, at most
//! [`LOCKSTEP_CACHE_SHARE`] of it. The batches are the same either way.

use serde::{Deserialize, Serialize};

use crate::exec::config::Lockstep;

/// The largest share of the caches' budget the plan gives to sampling a
/// whole superbatch in lockstep (beyond the round it counts anyway).
pub const LOCKSTEP_CACHE_SHARE: f64 = 0.5;

/// The plan's choice of lockstep round; its serde form is the report's
/// `memory_plan.lockstep` object.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LockstepPlan {
    /// `superbatch` (one round of the whole superbatch) or `rounds`.
    pub mode: String,
    /// Batches per round.
    pub batches: u64,
    /// Bytes the plan counts for the round's batches while they are
    /// sampled (in `batch_buffers` up to the per-worker rounds, the rest
    /// in `lockstep_bytes`).
    pub bytes: u64,
    /// Why the run samples in rounds where the whole superbatch was
    /// wanted (empty otherwise).
    #[serde(default)]
    pub note: String,
}

impl Default for LockstepPlan {
    fn default() -> Self {
        LockstepPlan {
            mode: Lockstep::Rounds.name().to_string(),
            batches: 0,
            bytes: 0,
            note: String::new(),
        }
    }
}

impl LockstepPlan {
    /// The mode a run applies.
    pub fn lockstep(&self) -> Lockstep {
        if self.mode == Lockstep::Superbatch.name() {
            Lockstep::Superbatch
        } else {
            Lockstep::Rounds
        }
    }

    /// Bytes beyond the rounds the plan counts in its batch buffers.
    pub fn extra_bytes(&self, round_bytes: u64) -> u64 {
        self.bytes.saturating_sub(round_bytes)
    }

    /// One line for people.
    pub fn describe(&self) -> String {
        let mib = |b: u64| b as f64 / (1u64 << 20) as f64;
        let what = match self.lockstep() {
            Lockstep::Superbatch => format!(
                "lockstep sampling over the whole superbatch ({} batches, {:.0} MiB)",
                self.batches,
                mib(self.bytes)
            ),
            _ => format!(
                "lockstep sampling in rounds of {} batches ({:.0} MiB)",
                self.batches,
                mib(self.bytes)
            ),
        };
        if self.note.is_empty() {
            what
        } else {
            format!("{what}: {}", self.note)
        }
    }
}

/// The lockstep round of a `ginex` run asking for `wanted`, with
/// superbatches of `superbatch` batches, rounds of `round` batches
/// (counted before the caches), `batch_bytes` per batch while it is
/// sampled and `caches` bytes left for the caches: the whole superbatch
/// when `wanted` is [`Lockstep::Auto`] or [`Lockstep::Superbatch`] and its
/// batches beyond the round take at most [`LOCKSTEP_CACHE_SHARE`] of
/// `caches`; rounds otherwise, with the reason.
pub fn choose(
    wanted: Lockstep,
    superbatch: u64,
    round: u64,
    batch_bytes: u64,
    caches: u64,
) -> LockstepPlan {
    let rounds = |note: String| LockstepPlan {
        mode: Lockstep::Rounds.name().to_string(),
        batches: round,
        bytes: round.saturating_mul(batch_bytes),
        note,
    };
    if wanted == Lockstep::Rounds {
        return rounds(String::new());
    }
    if superbatch <= round {
        // One round covers the superbatch already; it holds the
        // superbatch's batches, no more.
        return LockstepPlan {
            mode: Lockstep::Superbatch.name().to_string(),
            batches: superbatch.max(1),
            bytes: superbatch.max(1).saturating_mul(batch_bytes),
            note: String::new(),
        };
    }
    let whole = superbatch.saturating_mul(batch_bytes);
    let extra = (superbatch - round).saturating_mul(batch_bytes);
    let allowed = (caches as f64 * LOCKSTEP_CACHE_SHARE) as u64;
    if extra <= allowed {
        return LockstepPlan {
            mode: Lockstep::Superbatch.name().to_string(),
            batches: superbatch,
            bytes: whole,
            note: String::new(),
        };
    }
    let mib = |b: u64| b.div_ceil(1 << 20);
    rounds(format!(
        "the superbatch's {superbatch} batches would need {} MiB more than rounds, \
         over the {} MiB ({:.0} % of the caches' {} MiB) the plan gives them",
        mib(extra),
        allowed >> 20,
        100.0 * LOCKSTEP_CACHE_SHARE,
        caches >> 20
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_whole_superbatch_only_where_its_batches_fit_half_the_caches() {
        // 67 batches of 20 MB against rounds of 16: 1,020 MB more.
        let (sb, round, per) = (67u64, 16u64, 20_000_000u64);
        let extra = (sb - round) * per;
        let fits = choose(Lockstep::Auto, sb, round, per, 2 * extra);
        assert_eq!(fits.lockstep(), Lockstep::Superbatch);
        assert_eq!((fits.batches, fits.bytes), (sb, sb * per));
        assert!(fits.note.is_empty());
        let short = choose(Lockstep::Superbatch, sb, round, per, 2 * extra - 2);
        assert_eq!(short.lockstep(), Lockstep::Rounds);
        assert_eq!((short.batches, short.bytes), (round, round * per));
        assert!(short.note.contains("67 batches"), "{}", short.note);
        assert!(
            short.describe().contains("rounds of 16"),
            "{}",
            short.describe()
        );
        // Asked for rounds: rounds, whatever fits.
        let asked = choose(Lockstep::Rounds, sb, round, per, u64::MAX);
        assert_eq!((asked.lockstep(), asked.batches), (Lockstep::Rounds, round));
        assert!(asked.note.is_empty());
        // A superbatch no longer than a round is one round, at no extra cost.
        let small = choose(Lockstep::Auto, 10, round, per, 0);
        assert_eq!(
            (small.lockstep(), small.batches),
            (Lockstep::Superbatch, 10)
        );
        assert_eq!(small.extra_bytes(round * per), 0);
        // It holds its own 10 batches, which a plan that counted no round
        // counts in full.
        assert_eq!(small.bytes, 10 * per);
        assert_eq!(small.extra_bytes(0), 10 * per);
    }

    #[test]
    fn a_plan_round_trips_through_json() {
        let p = choose(Lockstep::Auto, 67, 16, 20_000_000, 1 << 30);
        let text = serde_json::to_string(&p).unwrap();
        assert_eq!(serde_json::from_str::<LockstepPlan>(&text).unwrap(), p);
        assert_eq!(
            serde_json::from_str::<LockstepPlan>(r#"{"mode":"rounds","batches":16,"bytes":9}"#)
                .unwrap()
                .note,
            ""
        );
    }
}
