//! How the inspector's superbatches reach the executor: on its thread
//! between superbatches ([`Inline`]), or on threads of their own ahead of
//! it ([`Ahead`]).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::time::Duration;

use super::inspector::Inspector;
use super::timed;
use crate::cache::belady::{fresh_init, FreshInit};
use crate::error::{Error, Result};
use crate::exec::prepared::{Prepared, PriorTime};
use crate::inspect::superbatch::SampledSuperbatch;
use crate::io::cpu_time::{Role, RoleGuard};

/// The inspector's side of a schedule: superbatches with their changesets
/// computed, in order, for the executor.
pub(super) trait Feed {
    /// The first superbatch's init, known before its changesets
    /// ([`fresh_init`]); only a feed ahead of the executor has it in time.
    fn first_init(&mut self) -> Option<Vec<u64>>;
    /// Superbatch `s`, prepared, with its exposed times charged.
    fn next(&mut self, s: usize) -> Result<Prepared>;
    /// The init of the superbatch after the one executing, without waiting:
    /// `None` while its changesets are not computed.
    fn poll_next_init(&mut self) -> Option<Vec<u64>>;
    /// The superbatch handed last executed, and its files are gone.
    fn executed(&mut self);
}

/// The inspector on the executor's thread, between superbatches
/// ([`Pipeline::Serial`], [`Pipeline::Overlap`]).
pub(super) struct Inline<'i, 'a> {
    pub(super) inspector: &'i Inspector<'a>,
    /// C(s) while S(s+1) samples.
    pub(super) beside_sampling: bool,
    /// The next superbatch, sampled beside the changesets before it.
    pub(super) sampled: Option<SampledSuperbatch>,
    /// The cache the last superbatch prepared ends with.
    pub(super) carried: Vec<u64>,
    /// The reuse prior's time, for the first superbatch.
    pub(super) prior: Option<PriorTime>,
}

impl<'i, 'a> Inline<'i, 'a> {
    /// Computes the reuse prior: beside S(0) when the schedule samples
    /// beside, first otherwise.
    pub(super) fn start(inspector: &'i Inspector<'a>, beside_sampling: bool) -> Result<Self> {
        let (prior, sampled) = if beside_sampling {
            let (prior, first) = inspector.prior_beside_first()?;
            (prior, Some(first))
        } else {
            (PriorTime::alone(inspector.compute_prior()?.0), None)
        };
        Ok(Inline {
            inspector,
            beside_sampling,
            sampled,
            carried: Vec::new(),
            prior: Some(prior),
        })
    }
}

impl Feed for Inline<'_, '_> {
    fn first_init(&mut self) -> Option<Vec<u64>> {
        None
    }

    fn next(&mut self, s: usize) -> Result<Prepared> {
        let sampled = match self.sampled.take() {
            Some(sampled) => sampled,
            None => self.inspector.sample(s)?,
        };
        let (mut p, following) = self.inspector.prepare_beside_next(
            sampled,
            s,
            &mut self.carried,
            self.beside_sampling,
        )?;
        self.sampled = following;
        if let Some(prior) = self.prior.take() {
            p.prior = prior;
        }
        Ok(p)
    }

    fn poll_next_init(&mut self) -> Option<Vec<u64>> {
        None
    }

    fn executed(&mut self) {}
}

/// Superbatches whose files exist at once under [`Pipeline::Full`] for
/// feature rows of `row_bytes`: the one executed, the next one prepared,
/// and, where the plan affords it ([`prepares_two_ahead`]), the one
/// after it being sampled and prepared. With two, C(s + 1) starts with
/// E(s), so a superbatch whose init was read ahead whole runs its batches
/// before the next init is known, and the device idles through them and
/// the wait for C(s + 1) (random ids at 2.9×: 12 superbatches of 5
/// batches, every second one; `docs/lab/performance-journal.md`, "The next init known
/// a superbatch earlier"). The prepared superbatch's init and access
/// summary are what the third costs in memory
/// ([`PREPARED_AHEAD_BYTES_PER_CACHE_ROW`](crate::exec::plan::PREPARED_AHEAD_BYTES_PER_CACHE_ROW)).
///
/// [`prepares_two_ahead`]: crate::exec::plan::prepares_two_ahead
pub(crate) fn full_superbatches_of_files(row_bytes: usize) -> usize {
    if crate::exec::plan::prepares_two_ahead(row_bytes as u64) {
        3
    } else {
        2
    }
}

/// [`Pipeline::Full`]: a sampling thread and a changeset thread run ahead of
/// the executor. S(s) starts once E(s − k) has removed its files, so at
/// most k superbatches of files exist ([`full_superbatches_of_files`]);
/// C(s) runs as soon as S(s) and C(s−1) are done; the executor takes
/// superbatches as they are ready. Dropped, it stops both threads (what
/// they prepared is dropped with its files).
pub(super) struct Ahead {
    pub(super) ready: mpsc::Receiver<Result<Prepared>>,
    /// A superbatch executed (the sampler may start the one k later).
    pub(super) done: Option<mpsc::Sender<()>>,
    /// `C[0]` of the first superbatch, which starts from an empty cache.
    pub(super) first_init: mpsc::Receiver<Vec<u64>>,
    /// A superbatch received while the one before it runs.
    pub(super) pending: Option<Result<Prepared>>,
}

impl Ahead {
    /// Starts the sampling and changeset threads in `scope`, at most
    /// `files` superbatches' files at once.
    pub(super) fn spawn<'scope>(
        scope: &'scope std::thread::Scope<'scope, '_>,
        inspector: &'scope Inspector<'_>,
        files: usize,
    ) -> Ahead {
        let n = inspector.specs.len();
        let (sampled_tx, sampled_rx) = mpsc::sync_channel::<Result<SampledSuperbatch>>(1);
        let (ready_tx, ready_rx) = mpsc::sync_channel::<Result<Prepared>>(1);
        let (done_tx, done_rx) = mpsc::channel::<()>();
        let (first_init_tx, first_init_rx) = mpsc::sync_channel::<Vec<u64>>(1);
        // The first init goes to the executor once: from the sampling
        // thread as soon as S(0)'s first rounds fix it, else from the
        // changeset thread once S(0) is sampled.
        let first_init_sent = Arc::new(AtomicBool::new(false));
        let (early_tx, early_sent) = (first_init_tx.clone(), first_init_sent.clone());
        scope.spawn(move || {
            let _cpu = RoleGuard::start(Role::Sampling);
            for s in 0..n {
                if s >= files && done_rx.recv().is_err() {
                    return; // the executor stopped
                }
                let sampled = if s == 0 && inspector.early_first_init {
                    let mut fresh = Some(FreshInit::new(inspector.specs[0].capacity));
                    // Short first rounds: the init is known sooner.
                    inspector.sample_with(0, true, &mut |round| {
                        send_known_init(&mut fresh, round, inspector, &early_tx, &early_sent);
                    })
                } else {
                    inspector.sample(s)
                };
                if !hand_on(&sampled_tx, sampled) {
                    return;
                }
            }
        });
        scope.spawn(move || {
            let _cpu = RoleGuard::start(Role::Changesets);
            // The prior, while S(0) samples: its count (4 bytes a node) is
            // gone before the first init's rows fill the cache.
            let mut prior = match inspector.compute_prior() {
                Ok(prior) => Some(prior),
                Err(e) => {
                    let _ = ready_tx.send(Err(e));
                    return;
                }
            };
            let mut carried = Vec::new();
            for s in 0..n {
                let Ok(sampled) = sampled_rx.recv() else {
                    return;
                };
                if let (0, Ok(sampled)) = (s, &sampled) {
                    if !first_init_sent.swap(true, Ordering::SeqCst) {
                        let capacity = inspector.specs[0].capacity;
                        let _ = first_init_tx.send(fresh_init(&sampled.trace, capacity));
                    }
                }
                let prepared = sampled.and_then(|sampled| {
                    let sampled_at = sampled.sampled_at;
                    let mut p = inspector.prepare(sampled, s, &mut carried)?;
                    if let Some((took, ended)) = prior.take() {
                        p.prior = PriorTime::beside(took, ended, sampled_at);
                    }
                    Ok(p)
                });
                if !hand_on(&ready_tx, prepared) {
                    return;
                }
            }
        });
        Ahead {
            ready: ready_rx,
            done: Some(done_tx),
            first_init: first_init_rx,
            pending: None,
        }
    }
}

impl Feed for Ahead {
    /// None arrives when the inspector failed first.
    fn first_init(&mut self) -> Option<Vec<u64>> {
        self.first_init.recv().ok()
    }

    /// The time the executor waited for C(s) is its exposed time.
    fn next(&mut self, _s: usize) -> Result<Prepared> {
        let mut waited = Duration::ZERO;
        let mut p = timed(&mut waited, || match self.pending.take() {
            Some(received) => received,
            None => self
                .ready
                .recv()
                .map_err(|_| Error::internal("the inspector stopped"))?,
        })?;
        p.changeset_exposed = waited.min(p.changeset_time);
        Ok(p)
    }

    fn poll_next_init(&mut self) -> Option<Vec<u64>> {
        if self.pending.is_none() {
            self.pending = Some(self.ready.try_recv().ok()?);
        }
        match &self.pending {
            Some(Ok(next)) => Some(next.init.clone()),
            _ => None,
        }
    }

    fn executed(&mut self) {
        if let Some(done) = &self.done {
            let _ = done.send(());
        }
    }
}

impl Drop for Ahead {
    /// Unblocks the inspector threads (also when the executor failed or
    /// panicked), so that their scope can join them; what they prepared
    /// is dropped with its files.
    fn drop(&mut self) {
        self.pending = None;
        self.done = None;
        while self.ready.recv().is_ok() {}
    }
}

/// Adds a round of S(0) to the first superbatch's init (`fresh`; None
/// once sent) and sends the init to the executor (`tx`) as soon as it is
/// known and the reuse prior is (the prior's count, 4 bytes a node, is
/// gone before the init's rows fill the cache), unless `sent` says it
/// went already. The reads then start while the rest of S(0) samples.
pub(super) fn send_known_init(
    fresh: &mut Option<FreshInit>,
    round: &[Vec<u64>],
    inspector: &Inspector<'_>,
    tx: &mpsc::SyncSender<Vec<u64>>,
    sent: &AtomicBool,
) {
    let Some(init) = fresh.as_mut() else {
        return;
    };
    let mut known = init.is_known();
    for ids in round {
        known = init.extend(ids);
        if known {
            break;
        }
    }
    if !known || inspector.prior.get().is_none() {
        return;
    }
    if let Some(init) = fresh.take() {
        if !sent.swap(true, Ordering::SeqCst) {
            let _ = tx.send(init.into_ids());
        }
    }
}

/// Hands a stage's result to the next stage; returns whether the stage
/// goes on: not after an error, nor when the next stage is gone (then the
/// superbatch, which nobody will execute, is dropped with its files).
pub(super) fn hand_on<T>(tx: &mpsc::SyncSender<Result<T>>, item: Result<T>) -> bool {
    let failed = item.is_err();
    tx.send(item).is_ok() && !failed
}
