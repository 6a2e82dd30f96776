//! Memory cgroups for the benchmarks: a cap that counts the page cache, so
//! a run measures what a machine with that much memory would do.
//!
//! [`MemoryCgroup::create`] makes a fresh cgroup with a memory limit under
//! cgroup v2 (`memory.max`, when the v2 hierarchy has the memory controller)
//! or cgroup v1 (`memory.limit_in_bytes`), and removes it when dropped. A
//! child joins it through a tiny shell wrapper ([`MemoryCgroup::command`])
//! that writes its own pid to `cgroup.procs` and then `exec`s the program, so
//! every byte the program touches is charged. The file parsers are pure
//! functions, tested below.

use std::path::{Path, PathBuf};
use std::process::Command;

use ginex::internals::error::{Error, Result};

/// Which cgroup hierarchy a cgroup lives in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CgroupVersion {
    /// Legacy per-controller hierarchy (`/sys/fs/cgroup/memory`).
    V1,
    /// The unified hierarchy.
    V2,
}

impl CgroupVersion {
    /// `"v1"` or `"v2"`.
    pub fn name(self) -> &'static str {
        match self {
            CgroupVersion::V1 => "v1",
            CgroupVersion::V2 => "v2",
        }
    }
}

/// Where the memory cgroup hierarchies are mounted (from `/proc/self/mounts`).
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct CgroupMounts {
    /// The cgroup v1 hierarchy with the `memory` controller.
    pub v1_memory: Option<PathBuf>,
    /// The cgroup v2 (unified) hierarchy.
    pub v2: Option<PathBuf>,
}

/// Finds the cgroup mounts in the text of `/proc/self/mounts`
/// (`device mountpoint fstype options dump pass` per line).
pub fn parse_mounts(text: &str) -> CgroupMounts {
    let mut m = CgroupMounts::default();
    for line in text.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        let (Some(point), Some(fstype), Some(opts)) = (f.get(1), f.get(2), f.get(3)) else {
            continue;
        };
        let point = PathBuf::from(unescape_mount_path(point));
        match *fstype {
            "cgroup2" if m.v2.is_none() => m.v2 = Some(point),
            "cgroup" if m.v1_memory.is_none() && opts.split(',').any(|o| o == "memory") => {
                m.v1_memory = Some(point);
            }
            _ => {}
        }
    }
    m
}

/// `/proc/mounts` writes space, tab, newline and backslash as `\ooo`.
fn unescape_mount_path(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let octal = b
            .get(i + 1..i + 4)
            .filter(|d| b[i] == b'\\' && d.iter().all(|c| (b'0'..=b'7').contains(c)));
        match octal {
            Some(d) => {
                out.push((d[0] - b'0') * 64 + (d[1] - b'0') * 8 + (d[2] - b'0'));
                i += 4;
            }
            None => {
                out.push(b[i]);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// This process's cgroup path (relative to the hierarchy's mount, starting
/// with `/`) from the text of `/proc/self/cgroup`: the `0::/path` line for
/// v2, the line whose controller list holds `memory` for v1.
pub fn own_cgroup(proc_self_cgroup: &str, version: CgroupVersion) -> Option<String> {
    proc_self_cgroup.lines().find_map(|line| {
        let mut parts = line.splitn(3, ':');
        let (_id, controllers, path) = (parts.next()?, parts.next()?, parts.next()?);
        let hit = match version {
            CgroupVersion::V2 => controllers.is_empty(),
            CgroupVersion::V1 => controllers.split(',').any(|c| c == "memory"),
        };
        hit.then(|| path.trim().to_string())
    })
}

/// The value of `key` in a flat-keyed cgroup file (`key value` per line),
/// such as `oom_kill` in v1 `memory.oom_control` or v2 `memory.events`.
pub fn keyed_counter(text: &str, key: &str) -> Option<u64> {
    text.lines().find_map(|line| {
        let mut it = line.split_whitespace();
        (it.next()? == key).then(|| it.next()?.parse().ok())?
    })
}

/// A single-value cgroup file such as `memory.peak` (`max` = no value).
pub fn single_value(text: &str) -> Option<u64> {
    text.trim().parse().ok()
}

/// A memory cgroup this process created; removed on drop.
#[derive(Debug)]
pub struct MemoryCgroup {
    dir: PathBuf,
    version: CgroupVersion,
}

impl MemoryCgroup {
    /// Creates cgroup `name` with a memory limit of `limit` bytes (page
    /// cache included; swap capped where the kernel allows), trying cgroup
    /// v2 first when its hierarchy offers the memory controller, then v1 —
    /// under this process's own cgroup where possible (so limits above it
    /// still apply), else at the hierarchy's root. Fails with every
    /// attempt's reason when none works (not root, no cgroup fs).
    pub fn create(name: &str, limit: u64) -> Result<MemoryCgroup> {
        let mounts =
            parse_mounts(&std::fs::read_to_string("/proc/self/mounts").unwrap_or_default());
        let own = std::fs::read_to_string("/proc/self/cgroup").unwrap_or_default();
        let mut tried: Vec<String> = Vec::new();
        let mut candidates: Vec<(CgroupVersion, PathBuf)> = Vec::new();
        if let Some(v2) = &mounts.v2 {
            let controllers =
                std::fs::read_to_string(v2.join("cgroup.controllers")).unwrap_or_default();
            if controllers.split_whitespace().any(|c| c == "memory") {
                // v2 forbids processes in inner cgroups, so the bench's own
                // cgroup (which holds this process) cannot be the parent.
                candidates.push((CgroupVersion::V2, v2.clone()));
            } else {
                tried.push(format!(
                    "cgroup v2 at {} has no memory controller",
                    v2.display()
                ));
            }
        }
        if let Some(v1) = &mounts.v1_memory {
            if let Some(own) = own_cgroup(&own, CgroupVersion::V1) {
                let rel = own.trim_start_matches('/');
                if !rel.is_empty() {
                    candidates.push((CgroupVersion::V1, v1.join(rel)));
                }
            }
            candidates.push((CgroupVersion::V1, v1.clone()));
        }
        if mounts.v1_memory.is_none() && mounts.v2.is_none() {
            tried.push("no cgroup file system is mounted (/proc/self/mounts)".into());
        }
        for (version, parent) in candidates {
            match Self::create_under(&parent, version, name, limit) {
                Ok(cg) => return Ok(cg),
                Err(e) => tried.push(format!(
                    "cgroup {} under {}: {e}",
                    version.name(),
                    parent.display()
                )),
            }
        }
        Err(Error::io(
            "create a memory cgroup",
            name,
            std::io::Error::other(format!(
                "no memory cgroup could be created ({}); this benchmark needs root and cgroup v1 \
                 with the memory controller or cgroup v2 with the memory controller enabled",
                tried.join("; ")
            )),
        ))
    }

    fn create_under(
        parent: &Path,
        version: CgroupVersion,
        name: &str,
        limit: u64,
    ) -> Result<MemoryCgroup> {
        if version == CgroupVersion::V2 {
            let ctl = parent.join("cgroup.subtree_control");
            let on = std::fs::read_to_string(&ctl).map_err(|e| Error::io("read", &ctl, e))?;
            if !on.split_whitespace().any(|c| c == "memory") {
                std::fs::write(&ctl, "+memory").map_err(|e| Error::io("write", &ctl, e))?;
            }
        }
        let dir = parent.join(name);
        std::fs::create_dir(&dir).map_err(|e| Error::io("mkdir", &dir, e))?;
        // From here on, Drop removes the directory whatever fails.
        let cg = MemoryCgroup { dir, version };
        let limit_file = match version {
            CgroupVersion::V1 => "memory.limit_in_bytes",
            CgroupVersion::V2 => "memory.max",
        };
        cg.write(limit_file, &limit.to_string())?;
        let written = cg.read(limit_file)?.and_then(|t| single_value(&t));
        // v1 rounds the limit down to whole pages.
        if written.is_none_or(|w| w > limit || w + 4096 < limit) {
            return Err(Error::io(
                "set the limit of",
                cg.dir.join(limit_file),
                std::io::Error::other(format!("wrote {limit}, reads back {written:?}")),
            ));
        }
        // Best effort: swap must not extend the cap (absent without swap
        // accounting).
        let _ = match version {
            CgroupVersion::V1 => cg.write("memory.memsw.limit_in_bytes", &limit.to_string()),
            CgroupVersion::V2 => cg.write("memory.swap.max", "0"),
        };
        Ok(cg)
    }

    fn write(&self, file: &str, value: &str) -> Result<()> {
        let p = self.dir.join(file);
        std::fs::write(&p, value).map_err(|e| Error::io("write", &p, e))
    }

    /// A control file's text, `None` when the kernel does not offer it.
    fn read(&self, file: &str) -> Result<Option<String>> {
        let p = self.dir.join(file);
        match std::fs::read_to_string(&p) {
            Ok(t) => Ok(Some(t)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(Error::io("read", &p, e)),
        }
    }

    /// The cgroup's directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Which hierarchy it is in.
    pub fn version(&self) -> CgroupVersion {
        self.version
    }

    /// Peak memory use (page cache included) since creation:
    /// `memory.max_usage_in_bytes` (v1) or `memory.peak` (v2, kernel 5.19+).
    pub fn peak_bytes(&self) -> Result<Option<u64>> {
        let file = match self.version {
            CgroupVersion::V1 => "memory.max_usage_in_bytes",
            CgroupVersion::V2 => "memory.peak",
        };
        Ok(self.read(file)?.and_then(|t| single_value(&t)))
    }

    /// Processes killed by the OOM killer in this cgroup: `oom_kill` of
    /// `memory.oom_control` (v1) or `memory.events` (v2).
    pub fn oom_kills(&self) -> Result<Option<u64>> {
        let file = match self.version {
            CgroupVersion::V1 => "memory.oom_control",
            CgroupVersion::V2 => "memory.events",
        };
        Ok(self.read(file)?.and_then(|t| keyed_counter(&t, "oom_kill")))
    }

    /// `program args…` started inside this cgroup: `sh` writes its pid to
    /// `cgroup.procs` and then `exec`s the program, so the program is in the
    /// cgroup before it runs a single instruction.
    pub fn command(&self, program: &Path, args: &[String]) -> Command {
        let mut c = Command::new("/bin/sh");
        c.arg("-c")
            .arg("echo $$ > \"$0\" && exec \"$@\"")
            .arg(self.dir.join("cgroup.procs"))
            .arg(program)
            .args(args);
        c
    }
}

impl Drop for MemoryCgroup {
    fn drop(&mut self) {
        // Its processes have been waited for; the kernel may need a moment
        // to let go of an exited task.
        for _ in 0..50 {
            match std::fs::remove_dir(&self.dir) {
                Ok(()) => return,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => return,
                Err(_) => std::thread::sleep(std::time::Duration::from_millis(20)),
            }
        }
        eprintln!(
            "warning: could not remove cgroup {} (remove it with rmdir)",
            self.dir.display()
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mounts_find_the_v1_memory_and_the_v2_hierarchies() {
        let text = "\
tmpfs /sys/fs/cgroup tmpfs rw,relatime,mode=755 0 0
cgroup /sys/fs/cgroup/cpu cgroup rw,relatime,cpu 0 0
cgroup /sys/fs/cgroup/memory cgroup rw,relatime,memory 0 0
cgroup /sys/fs/cgroup/memsw\\040x cgroup rw,memsw 0 0
cgroup2 /sys/fs/cgroup/unified cgroup2 rw,relatime 0 0
";
        let m = parse_mounts(text);
        assert_eq!(m.v1_memory, Some(PathBuf::from("/sys/fs/cgroup/memory")));
        assert_eq!(m.v2, Some(PathBuf::from("/sys/fs/cgroup/unified")));
        let v2_only = parse_mounts("cgroup2 /sys/fs/cgroup cgroup2 rw,nsdelegate 0 0\n");
        assert_eq!(v2_only.v1_memory, None);
        assert_eq!(v2_only.v2, Some(PathBuf::from("/sys/fs/cgroup")));
        assert_eq!(
            parse_mounts("proc /proc proc rw 0 0\n"),
            CgroupMounts::default()
        );
        let spaced = parse_mounts("cgroup /mnt/my\\040cg cgroup rw,cpu,memory 0 0\n");
        assert_eq!(spaced.v1_memory, Some(PathBuf::from("/mnt/my cg")));
    }

    #[test]
    fn own_cgroup_reads_the_memory_line_or_the_unified_line() {
        let text =
            "9:name=systemd:/\n4:memory,hugetlb:/process_api/abc\n1:cpu:/\n0::/user.slice/x\n";
        assert_eq!(
            own_cgroup(text, CgroupVersion::V1).as_deref(),
            Some("/process_api/abc")
        );
        assert_eq!(
            own_cgroup(text, CgroupVersion::V2).as_deref(),
            Some("/user.slice/x")
        );
        assert_eq!(own_cgroup("1:cpu:/\n", CgroupVersion::V1), None);
    }

    #[test]
    fn oom_kill_counts_parse_from_v1_and_v2_files() {
        let v1 = "oom_kill_disable 0\nunder_oom 0\noom_kill 3\n";
        assert_eq!(keyed_counter(v1, "oom_kill"), Some(3));
        assert_eq!(keyed_counter(v1, "under_oom"), Some(0));
        let v2 = "low 0\nhigh 0\nmax 12\noom 2\noom_kill 1\noom_group_kill 0\n";
        assert_eq!(keyed_counter(v2, "oom_kill"), Some(1));
        assert_eq!(keyed_counter(v2, "oom"), Some(2));
        // An old kernel without the counter, or a garbled value.
        assert_eq!(
            keyed_counter("oom_kill_disable 0\nunder_oom 0\n", "oom_kill"),
            None
        );
        assert_eq!(keyed_counter("oom_kill x\n", "oom_kill"), None);
    }

    #[test]
    fn single_values_parse_and_max_is_none() {
        assert_eq!(single_value("805306368\n"), Some(805_306_368));
        assert_eq!(single_value("max\n"), None);
        assert_eq!(single_value(""), None);
    }
}
