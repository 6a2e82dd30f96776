#!/usr/bin/env python3
"""Runs one command in a fresh memory cgroup whose limit counts the page
cache, after dropping the page cache, and prints one JSON line: the command,
the limit, wall seconds, the cgroup's peak memory, OOM kills, exit status.

    cgrun.py --limit BYTES --name NAME [--no-drop] -- CMD ARGS...

The cgroup goes under this process's own v1 memory cgroup (so limits above
it still apply), else the v1 root, else cgroup v2 (memory controller on);
it is removed afterwards. The child joins it through ``sh -c 'echo $$ >
cgroup.procs && exec CMD'``, so every page it touches is charged — the
approach of tools/bench/src/cgroup.rs. Needs root. Stdlib only.
"""
import argparse
import json
import os
import subprocess
import sys
import time


def _mounts():
    v1 = v2 = None
    with open("/proc/self/mounts") as f:
        for line in f:
            parts = line.split()
            if len(parts) < 4:
                continue
            point, fstype, opts = parts[1], parts[2], parts[3].split(",")
            if fstype == "cgroup" and "memory" in opts and v1 is None:
                v1 = point
            elif fstype == "cgroup2" and v2 is None:
                v2 = point
    return v1, v2


def _own_v1():
    with open("/proc/self/cgroup") as f:
        for line in f:
            _, ctl, path = line.rstrip("\n").split(":", 2)
            if "memory" in ctl.split(","):
                return path.lstrip("/")
    return ""


def create(name, limit):
    """(directory, version) of a new memory cgroup limited to ``limit``."""
    v1, v2 = _mounts()
    candidates = []
    if v1:
        own = _own_v1()
        if own:
            candidates.append(("v1", os.path.join(v1, own)))
        candidates.append(("v1", v1))
    if v2 and "memory" in open(os.path.join(v2, "cgroup.controllers")).read().split():
        candidates.append(("v2", v2))
    tried = []
    for version, parent in candidates:
        d = os.path.join(parent, name)
        try:
            if version == "v2":
                ctl = os.path.join(parent, "cgroup.subtree_control")
                if "memory" not in open(ctl).read().split():
                    open(ctl, "w").write("+memory")
            os.mkdir(d)
        except OSError as e:
            tried.append(f"{version} under {parent}: {e}")
            continue
        limit_file = "memory.limit_in_bytes" if version == "v1" else "memory.max"
        try:
            with open(os.path.join(d, limit_file), "w") as f:
                f.write(str(limit))
            back = int(open(os.path.join(d, limit_file)).read())
            if back > limit or back + 4096 < limit:
                raise OSError(f"wrote {limit}, reads back {back}")
        except OSError as e:
            os.rmdir(d)
            tried.append(f"{version} {d}: {e}")
            continue
        try:  # swap must not extend the cap (absent without swap accounting)
            if version == "v1":
                open(os.path.join(d, "memory.memsw.limit_in_bytes"), "w").write(str(limit))
            else:
                open(os.path.join(d, "memory.swap.max"), "w").write("0")
        except OSError:
            pass
        return d, version
    sys.exit("cgrun: no memory cgroup could be created (" + "; ".join(tried) + "); needs root")


def _read(d, name):
    try:
        return open(os.path.join(d, name)).read()
    except OSError:
        return None


def _keyed(text, key):
    for line in (text or "").splitlines():
        k, _, v = line.partition(" ")
        if k == key:
            return int(v)
    return None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--limit", type=int, required=True, help="bytes, page cache included")
    ap.add_argument("--name", required=True, help="the cgroup's name")
    ap.add_argument("--no-drop", action="store_true", help="keep the page cache")
    ap.add_argument("cmd", nargs=argparse.REMAINDER)
    a = ap.parse_args()
    cmd = a.cmd[1:] if a.cmd[:1] == ["--"] else a.cmd
    if not cmd:
        ap.error("no command")
    d, version = create(f"{a.name}-{os.getpid()}", a.limit)
    try:
        if not a.no_drop:
            os.sync()
            with open("/proc/sys/vm/drop_caches", "w") as f:
                f.write("3\n")
        procs = os.path.join(d, "cgroup.procs")
        t0 = time.monotonic()
        rc = subprocess.call(["/bin/sh", "-c", 'echo $$ > "$0" && exec "$@"', procs] + cmd)
        wall = time.monotonic() - t0
        peak_file = "memory.max_usage_in_bytes" if version == "v1" else "memory.peak"
        peak = _read(d, peak_file)
        events = _read(d, "memory.oom_control" if version == "v1" else "memory.events")
        print(json.dumps({
            "cgroup": version, "limit": a.limit, "wall_s": round(wall, 3), "rc": rc,
            "peak": int(peak) if peak and peak.strip().isdigit() else None,
            "oom_kills": _keyed(events, "oom_kill"), "cmd": cmd,
        }), flush=True)
        return rc
    finally:
        for _ in range(100):
            try:
                os.rmdir(d)
                break
            except FileNotFoundError:
                break
            except OSError:
                time.sleep(0.05)


if __name__ == "__main__":
    sys.exit(main())
