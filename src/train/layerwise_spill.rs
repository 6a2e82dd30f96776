//! What both layer-wise paths share ([`crate::train::layerwise`] gathers,
//! [`crate::train::layerwise_stream`] streams): the options of a pass, what
//! one layer did, and the spill files a layer's output rows go to when
//! they do not fit in memory.

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::PathBuf;

use crate::error::{Error, Result};

/// How a layer-wise pass may use memory and disk.
#[derive(Debug, Clone)]
pub struct LayerwiseOptions {
    /// The budget: a quarter for a chunk's working set, a quarter for each
    /// of a layer's input and output tables when held in memory.
    pub memory: u64,
    /// Where spill files go when a layer's rows do not fit in memory.
    pub spill_dir: PathBuf,
    /// No progress bar.
    pub quiet: bool,
}

/// What one layer of a pass did.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LayerStats {
    /// Target nodes computed.
    pub nodes: u64,
    /// Edges aggregated.
    pub edges: u64,
    /// Chunks the targets were taken in (the gather path; 0 streaming).
    pub chunks: u64,
    /// Passes over the layer's input, one per destination partition
    /// (streaming; 0 on the gather path).
    pub passes: u64,
    /// Bytes of output rows spilled to disk (0 = held in memory).
    pub spilled_bytes: u64,
    /// Wall time.
    pub seconds: f64,
    /// Of which in matmuls and sums (streaming; the rest is reading,
    /// writing and sorting).
    pub compute_seconds: f64,
    /// Bytes of input read: the features and the spill files (streaming).
    pub read_bytes: u64,
}

/// A spill file of `f32` rows (little-endian, no header: a temporary that
/// never outlives the process that writes it), deleted on drop (a failed
/// pass leaves none). Created new, never over a file it did not write.
pub(crate) struct SpillFile {
    pub(crate) file: File,
    pub(crate) path: PathBuf,
}

impl SpillFile {
    /// A new file `layerwise-PID-TAG[.K].f32` in `dir`, open for reading
    /// and writing; a name already taken (another process's, a crashed
    /// run's) is left alone and the next suffix tried.
    pub(crate) fn create(dir: &std::path::Path, tag: &str) -> Result<SpillFile> {
        remove_dead_spills(dir);
        let pid = std::process::id();
        for k in 0..1000 {
            let name = match k {
                0 => format!("layerwise-{pid}-{tag}.f32"),
                _ => format!("layerwise-{pid}-{tag}.{k}.f32"),
            };
            let path = dir.join(name);
            match std::fs::OpenOptions::new()
                .read(true)
                .write(true)
                .create_new(true)
                .open(&path)
            {
                Ok(file) => return Ok(SpillFile { file, path }),
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(Error::io("create", &path, e)),
            }
        }
        Err(Error::invalid_argument(format!(
            "{}: 1000 spill file names for layer-wise tag {tag} are taken; remove stale layerwise-{pid}-* files",
            dir.display()
        )))
    }
}

/// The process in a spill file's name (`layerwise-PID-TAG[.K].f32`), if
/// `name` is one.
fn spill_owner(name: &str) -> Option<u32> {
    let rest = name.strip_prefix("layerwise-")?.strip_suffix(".f32")?;
    let (pid, tag) = rest.split_once('-')?;
    if tag.is_empty() {
        return None;
    }
    pid.parse().ok()
}

/// Removes the spill files in `dir` whose process is gone (a `predict`
/// killed mid-pass cannot delete its own), with a warning naming what was
/// removed: the name says whose they are, and a dead process's
/// temporaries have no reader left.
fn remove_dead_spills(dir: &std::path::Path) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let (mut files, mut bytes) = (0u64, 0u64);
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let dead = spill_owner(&name).is_some_and(|pid| {
            pid != std::process::id() && !std::path::Path::new(&format!("/proc/{pid}")).exists()
        });
        if dead {
            let len = entry.metadata().map(|m| m.len()).unwrap_or(0);
            if std::fs::remove_file(entry.path()).is_ok() {
                (files, bytes) = (files + 1, bytes + len);
            }
        }
    }
    if files > 0 {
        tracing::warn!(
            "removed {files} layer-wise spill file(s) ({}) that killed runs left in {}",
            crate::size::format_bytes(bytes),
            dir.display()
        );
    }
}

impl Drop for SpillFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// Rows of `ids` from a spill file: sorted, runs of rows less than a page
/// apart read with one positioned read each.
pub(crate) fn read_spilled(
    spill: &SpillFile,
    ids: &[u64],
    width: usize,
    out: &mut [f32],
) -> Result<()> {
    let row_bytes = width * 4;
    let gap = (4096 / row_bytes.max(1)).max(1) as u64;
    let mut order: Vec<usize> = (0..ids.len()).collect();
    order.sort_unstable_by_key(|&i| ids[i]);
    let mut buf: Vec<u8> = Vec::new();
    let mut i = 0;
    while i < order.len() {
        let first = ids[order[i]];
        let mut j = i + 1;
        while j < order.len() && ids[order[j]] <= ids[order[j - 1]] + gap {
            j += 1;
        }
        let last = ids[order[j - 1]];
        let len = (last - first + 1) as usize * row_bytes;
        buf.resize(len, 0);
        spill
            .file
            .read_exact_at(&mut buf, first * row_bytes as u64)
            .map_err(|e| Error::io("read", &spill.path, e))?;
        for &k in &order[i..j] {
            let at = (ids[k] - first) as usize * row_bytes;
            for (x, b) in out[k * width..(k + 1) * width]
                .iter_mut()
                .zip(buf[at..at + row_bytes].chunks_exact(4))
            {
                *x = f32::from_le_bytes([b[0], b[1], b[2], b[3]]);
            }
        }
        i = j;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A new spill file removes the ones of processes that are gone (pid 0
    /// names none), and only those: a live process's (ours) and other
    /// files stay.
    #[test]
    fn a_new_spill_removes_only_the_spills_of_dead_processes() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path();
        let live = format!("layerwise-{}-self.f32", std::process::id());
        for name in [
            "layerwise-0-messages.f32",
            "layerwise-0-self.3.f32",
            &live,
            "layerwise-0-.f32",
            "notes.f32",
        ] {
            std::fs::write(dir.join(name), b"rows").unwrap();
        }
        let spill = SpillFile::create(dir, "messages").unwrap();
        let mut left: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        left.sort();
        let mine = spill
            .path
            .file_name()
            .unwrap()
            .to_string_lossy()
            .into_owned();
        let mut want = vec![
            "layerwise-0-.f32".to_string(),
            live,
            mine,
            "notes.f32".to_string(),
        ];
        want.sort();
        assert_eq!(left, want);
    }
}
