//! How long the block device under a file was busy: the kernel's
//! `io_ticks`, milliseconds with at least one request in flight
//! (`/sys/dev/block/MAJ:MIN/stat`, its tenth field). An epoch's I/O stages
//! time our reads; this says how much of its wall the device itself
//! worked, for whoever asked it (other processes' reads count too).

use std::path::{Path, PathBuf};
use std::time::Duration;

/// The busy counter of one block device, read at a start.
#[derive(Debug, Clone)]
pub struct DeviceBusy {
    stat: PathBuf,
    start_ms: u64,
}

impl DeviceBusy {
    /// The counter of the device holding `path`, now; None where the file
    /// system has no block device in sysfs (tmpfs, overlay, not Linux) or
    /// its stat file cannot be read.
    pub fn start(path: &Path) -> Option<Self> {
        let stat = stat_file(path)?;
        let start_ms = read_io_ticks_ms(&stat)?;
        Some(DeviceBusy { stat, start_ms })
    }

    /// Busy time since [`start`](Self::start) (None if the counter cannot
    /// be read again).
    pub fn elapsed(&self) -> Option<Duration> {
        let now = read_io_ticks_ms(&self.stat)?;
        Some(Duration::from_millis(now.saturating_sub(self.start_ms)))
    }
}

/// `/sys/dev/block/MAJ:MIN/stat` of the device holding `path`.
#[cfg(target_os = "linux")]
fn stat_file(path: &Path) -> Option<PathBuf> {
    use std::os::unix::fs::MetadataExt;
    let dev = std::fs::metadata(path).ok()?.dev();
    let (major, minor) = (libc::major(dev), libc::minor(dev));
    let stat = PathBuf::from(format!("/sys/dev/block/{major}:{minor}/stat"));
    stat.exists().then_some(stat)
}

#[cfg(not(target_os = "linux"))]
fn stat_file(_path: &Path) -> Option<PathBuf> {
    None
}

fn read_io_ticks_ms(stat: &Path) -> Option<u64> {
    io_ticks_ms(&std::fs::read_to_string(stat).ok()?)
}

/// The `io_ticks` field (the tenth) of a block device's stat line.
fn io_ticks_ms(line: &str) -> Option<u64> {
    line.split_whitespace().nth(9)?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn io_ticks_is_the_tenth_field() {
        // reads merged sectors ms, writes merged sectors ms, in flight,
        // io_ticks, time in queue, then discards and flushes.
        let line = "  395442 120 15487952 812345 10 2 300 40 0 7844 823456 0 0 0 0 5 6\n";
        assert_eq!(io_ticks_ms(line), Some(7844));
        assert_eq!(io_ticks_ms("1 2 3"), None);
        assert_eq!(io_ticks_ms("1 2 3 4 5 6 7 8 9 busy"), None);
    }

    /// Where the device has a counter it reads again; a missing file, or
    /// a stat file that is gone, gives none.
    #[test]
    fn the_busy_time_is_none_or_counts_up() {
        let tmp = tempfile::tempdir().unwrap();
        let file = tmp.path().join("f");
        std::fs::write(&file, b"x").unwrap();
        if let Some(busy) = DeviceBusy::start(&file) {
            assert!(busy.stat.ends_with("stat"));
            assert!(busy.elapsed().is_some());
        }
        assert!(DeviceBusy::start(&tmp.path().join("missing")).is_none());
        let gone = DeviceBusy {
            stat: tmp.path().join("no-stat"),
            start_ms: 0,
        };
        assert_eq!(gone.elapsed(), None);
    }
}
