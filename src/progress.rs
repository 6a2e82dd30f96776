//! Progress of long library work (imports, generation), reported to
//! whatever the application shows it with.
//!
//! The library draws nothing itself: an application installs one
//! [`ProgressSink`] for the process (the CLI installs terminal bars; an
//! embedding program may install nothing, and every report is dropped),
//! much as `tracing` routes log events to a subscriber. Code that reports
//! asks for a [`Bar`] per phase and moves it forward.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;

/// Shows phases of work; installed once per process with [`install`].
pub trait ProgressSink: Send + Sync {
    /// A phase called `what` starts with `total` units of work (0: unknown,
    /// show a counter).
    fn phase(&self, what: &str, total: u64) -> Box<dyn PhaseProgress>;
}

/// One phase being shown.
pub trait PhaseProgress: Send + Sync {
    /// `pos` units are done.
    fn set_position(&self, pos: u64);
    /// The phase ended; remove it from the display.
    fn finish(&self);
}

static SINK: OnceLock<Box<dyn ProgressSink>> = OnceLock::new();

/// Installs the process's progress sink; false if one was installed before
/// (the first stays).
pub fn install(sink: Box<dyn ProgressSink>) -> bool {
    SINK.set(sink).is_ok()
}

/// The progress of one phase; shows nothing when `quiet` or when no sink is
/// installed.
#[doc(hidden)]
pub struct Bar(Option<Box<dyn PhaseProgress>>, AtomicU64);

impl Bar {
    /// A bar for `total` units of `what` (0: a counter without a bar).
    pub fn new(total: u64, what: &str, quiet: bool) -> Bar {
        match SINK.get() {
            Some(sink) if !quiet => Bar(Some(sink.phase(what, total)), AtomicU64::new(0)),
            _ => Bar::hidden(),
        }
    }

    /// A bar that shows nothing.
    pub fn hidden() -> Bar {
        Bar(None, AtomicU64::new(0))
    }

    /// `pos` units are done.
    pub fn set_position(&self, pos: u64) {
        self.1.store(pos, Ordering::Relaxed);
        if let Some(p) = &self.0 {
            p.set_position(pos);
        }
    }

    /// `n` more units are done.
    pub fn inc(&self, n: u64) {
        let pos = self.1.fetch_add(n, Ordering::Relaxed) + n;
        if let Some(p) = &self.0 {
            p.set_position(pos);
        }
    }

    /// The phase ended.
    pub fn finish_and_clear(&self) {
        if let Some(p) = &self.0 {
            p.finish();
        }
    }
}

/// Receives progress of long phases passed explicitly (`begin` with a
/// total, then `advance`), as the synthetic generator does.
pub trait Progress: Sync {
    /// A phase starts; `total` units of work.
    fn begin(&self, phase: &'static str, total: u64);
    /// `done` more units finished.
    fn advance(&self, done: u64);
    /// The phase ended.
    fn end(&self);
}

/// Progress that shows nothing.
pub struct NoProgress;

impl Progress for NoProgress {
    fn begin(&self, _: &'static str, _: u64) {}
    fn advance(&self, _: u64) {}
    fn end(&self) {}
}
