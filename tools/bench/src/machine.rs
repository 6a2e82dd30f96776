//! What every benchmark prints and needs about the machine it runs on: a
//! one-line description, dropping the page cache, and the peak RSS.

use ginex::internals::error::{Error, Result};

/// One line naming the machine: CPU model, cores, memory.
pub fn machine_description() -> String {
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split(':').nth(1))
                .map(|s| s.trim().to_string())
        })
        .unwrap_or_else(|| "unknown cpu".into());
    let cores = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1);
    let mem_kib = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("MemTotal"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|v| v.parse::<u64>().ok())
        })
        .unwrap_or(0);
    format!(
        "{cpu}, {cores} cores, {:.1} GiB RAM",
        mem_kib as f64 / (1 << 20) as f64
    )
}

/// Writes back dirty pages and drops the whole OS page cache (needs root),
/// so the next read measures the device.
pub fn drop_caches() -> Result<()> {
    ginex::internals::io::durable::sync_all();
    std::fs::write("/proc/sys/vm/drop_caches", b"3\n")
        .map_err(|e| Error::io("write", "/proc/sys/vm/drop_caches", e))
}

/// Peak resident set size of this process in bytes (`VmHWM`), if known.
pub fn peak_rss_bytes() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/self/status").ok()?;
    let kib: u64 = s
        .lines()
        .find(|l| l.starts_with("VmHWM"))?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()?;
    Some(kib * 1024)
}

/// The 1, 5 and 15 minute load averages (`/proc/loadavg`), if known.
pub fn load_average() -> Option<[f64; 3]> {
    let s = std::fs::read_to_string("/proc/loadavg").ok()?;
    let mut it = s.split_whitespace().map(|v| v.parse::<f64>().ok());
    Some([it.next()??, it.next()??, it.next()??])
}
