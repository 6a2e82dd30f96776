//! Progress of long library work (imports, generation), reported to
//! whatever the application shows it with.
//!
//! The library draws nothing itself: an application installs one
//! [`ProgressSink`] for the process (the CLI installs terminal bars; an
//! embedding program may install nothing, and every report is dropped),
//! much as `tracing` routes log events to a subscriber. Code that reports
//! asks for a [`Bar`] per phase and moves it forward, and may say how it
//! goes in a short message (a training epoch: running loss, seeds/s).

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
    /// How the phase goes, shown beside it (e.g. `loss 0.6931, 12.3 k
    /// seeds/s`); ignored by sinks that show positions only.
    fn set_message(&self, _message: &str) {}
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

    /// Whether a sink shows this bar (build messages only then).
    pub fn is_shown(&self) -> bool {
        self.0.is_some()
    }

    /// Sets the message shown beside the bar.
    pub fn set_message(&self, message: &str) {
        if let Some(p) = &self.0 {
            p.set_message(message);
        }
    }

    /// `n` more units are done.
    pub fn inc(&self, n: u64) {
        let pos = self.1.fetch_add(n, Ordering::Relaxed) + n;
        if let Some(p) = &self.0 {
            p.set_position(pos);
        }
    }

    /// One more unit is done; the message beside the bar becomes
    /// `message()`, built only when the bar is shown.
    pub fn inc_with_message(&self, message: impl FnOnce() -> String) {
        self.inc(1);
        if self.is_shown() {
            self.set_message(&message());
        }
    }

    /// The phase ended.
    pub fn finish_and_clear(&self) {
        if let Some(p) = &self.0 {
            p.finish();
        }
    }
}

/// A rate for people: three significant digits and an SI prefix, `unit`
/// per second (`1.35 M/s`, `12.3 k seeds/s`, `950 /s`), never the raw
/// float.
pub fn human_rate(per_sec: f64, unit: &str) -> String {
    let (number, prefix) = if !per_sec.is_finite() || per_sec < 0.0 {
        ("-".to_string(), "")
    } else {
        let (value, prefix) = [(1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")]
            .into_iter()
            .find(|&(scale, _)| per_sec >= scale * 0.9995)
            .map_or((per_sec, ""), |(scale, p)| (per_sec / scale, p));
        let digits = if value >= 99.95 || (prefix.is_empty() && value.fract() == 0.0) {
            0
        } else if value >= 9.995 {
            1
        } else {
            2
        };
        (format!("{value:.digits$}"), prefix)
    };
    let suffix: Vec<&str> = [prefix, unit]
        .into_iter()
        .filter(|s| !s.is_empty())
        .collect();
    if suffix.is_empty() {
        format!("{number}/s")
    } else {
        format!("{number} {}/s", suffix.join(" "))
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_read_like_numbers() {
        assert_eq!(human_rate(1_345_699.546_1, ""), "1.35 M/s");
        assert_eq!(human_rate(12_345.0, "seeds"), "12.3 k seeds/s");
        assert_eq!(human_rate(950.0, "seeds"), "950 seeds/s");
        assert_eq!(human_rate(950.0, ""), "950/s");
        assert_eq!(human_rate(3.5, "batches"), "3.50 batches/s");
        assert_eq!(human_rate(999.9, ""), "1.00 k/s");
        assert_eq!(human_rate(f64::NAN, ""), "-/s");
    }
}
