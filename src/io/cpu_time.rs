//! CPU time: of the whole process (`getrusage`), of the calling thread
//! (`CLOCK_THREAD_CPUTIME_ID`), and a process-wide ledger of the CPU the
//! threads of each role of an epoch spent ([`Role`], [`RoleGuard`]).
//!
//! On a machine that other work loads, wall time says little about where
//! a run's own time goes; CPU seconds by role do. The ledger is
//! process-wide: epochs running at once in one process (tests) share it,
//! so its figures are diagnostics, never inputs to a decision.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// User and system CPU time of the whole process so far (every thread,
/// those that exited included); zero where `getrusage` fails.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ProcessCpu {
    /// Time in user mode.
    pub user: Duration,
    /// Time in the kernel.
    pub system: Duration,
}

impl ProcessCpu {
    /// The process's CPU time now.
    pub fn now() -> ProcessCpu {
        let mut usage = std::mem::MaybeUninit::<libc::rusage>::zeroed();
        // `usage` is writable memory of a `rusage`'s size and RUSAGE_SELF a
        // valid `who`; a failed call leaves the zeros, a valid `rusage`.
        // SAFETY: so getrusage writes in bounds and `assume_init` is sound.
        let usage = unsafe {
            libc::getrusage(libc::RUSAGE_SELF, usage.as_mut_ptr());
            usage.assume_init()
        };
        let of = |t: libc::timeval| {
            Duration::from_secs(t.tv_sec.max(0) as u64)
                + Duration::from_micros(t.tv_usec.max(0) as u64)
        };
        ProcessCpu {
            user: of(usage.ru_utime),
            system: of(usage.ru_stime),
        }
    }

    /// User plus system time.
    pub fn total(&self) -> Duration {
        self.user + self.system
    }

    /// The time spent since `earlier` (zero where the clock went back).
    pub fn since(&self, earlier: &ProcessCpu) -> ProcessCpu {
        ProcessCpu {
            user: self.user.saturating_sub(earlier.user),
            system: self.system.saturating_sub(earlier.system),
        }
    }
}

/// CPU time (user and system) the calling thread has used since it
/// started; zero where the clock is not available.
pub fn thread_cpu() -> Duration {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec; CLOCK_THREAD_CPUTIME_ID
    // is a clock every Linux kernel since 2.6.12 has. On failure `ts`
    // keeps its zeros.
    unsafe {
        libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts);
    }
    Duration::from_secs(ts.tv_sec.max(0) as u64) + Duration::from_nanos(ts.tv_nsec.max(0) as u64)
}

/// What a thread of an epoch does, for the CPU ledger.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// The thread that runs the batches: gathers, cache updates, the
    /// consumer.
    Executor,
    /// A staged-init or read-ahead reader thread.
    InitReader,
    /// Sampling: the inspector's sampling thread and its workers.
    Sampling,
    /// The changeset computation (and the reuse prior beside it).
    Changesets,
}

impl Role {
    /// Every role, in the ledger's order.
    pub const ALL: [Role; 4] = [
        Role::Executor,
        Role::InitReader,
        Role::Sampling,
        Role::Changesets,
    ];

    fn slot(self) -> &'static AtomicU64 {
        &LEDGER[self as usize]
    }
}

static LEDGER: [AtomicU64; 4] = [
    AtomicU64::new(0),
    AtomicU64::new(0),
    AtomicU64::new(0),
    AtomicU64::new(0),
];

/// Adds `cpu` to `role`'s ledger entry.
pub fn charge(role: Role, cpu: Duration) {
    role.slot()
        .fetch_add(cpu.as_nanos() as u64, Ordering::Relaxed);
}

/// The ledger's entries now, in [`Role::ALL`]'s order (nanoseconds since
/// the process started; subtract an earlier snapshot for a run's own).
pub fn ledger() -> [u64; 4] {
    Role::ALL.map(|r| r.slot().load(Ordering::Relaxed))
}

/// Charges the calling thread's CPU time from its creation to the drop of
/// this guard to `role`: for a thread that does nothing else.
pub struct RoleGuard {
    role: Role,
    started: Duration,
}

impl RoleGuard {
    /// Starts counting the calling thread's time for `role`.
    pub fn start(role: Role) -> RoleGuard {
        RoleGuard {
            role,
            started: thread_cpu(),
        }
    }
}

impl Drop for RoleGuard {
    fn drop(&mut self) {
        charge(self.role, thread_cpu().saturating_sub(self.started));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Busy work the optimiser cannot remove.
    fn spin(ms: u64) -> u64 {
        let until = std::time::Instant::now() + Duration::from_millis(ms);
        let mut x = 1u64;
        while std::time::Instant::now() < until {
            x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
        }
        x
    }

    #[test]
    fn busy_work_shows_in_the_thread_the_process_and_the_ledger() {
        let process = ProcessCpu::now();
        let before = ledger()[Role::Changesets as usize];
        let thread = std::thread::spawn(|| {
            let _guard = RoleGuard::start(Role::Changesets);
            spin(60);
            thread_cpu()
        })
        .join()
        .unwrap();
        // Wall time bounds CPU time from above only; a loaded machine may
        // give the thread less than its 60 ms of wall time, but some.
        assert!(thread > Duration::from_millis(1), "{thread:?}");
        let charged = ledger()[Role::Changesets as usize] - before;
        assert!(charged >= 1_000_000, "{charged} ns charged");
        assert!(ProcessCpu::now().since(&process).total() >= Duration::from_millis(1));
    }
}
