#!/usr/bin/env python3
"""tools/peers/run.sh's bookkeeping (stdlib only).

``--log LOG ...``: one JSON record (a line of results.jsonl) from a run's
log: the driver's result (or, when it was killed, its last progress line),
cgrun's wall time, peak and OOM kills, and the load before and after.

``--report RESULTS``: Markdown tables of the records: per ratio and mode,
the median seeds/s of each peer over its rounds and ginex's ratio to each.
"""
import argparse
import json
import statistics
import sys


def parse_log(path):
    result = progress = cg = None
    errors = []
    for line in open(path, errors="replace"):
        line = line.strip()
        if line.startswith("{"):
            try:
                obj = json.loads(line)
            except ValueError:
                continue
            if "result" in obj:
                result = obj["result"]
            elif "progress" in obj:
                progress = obj["progress"]
            elif "cgroup" in obj:
                cg = obj
        elif line:
            errors.append(line)
    return result, progress, cg, errors


def record(a):
    result, progress, cg, errors = parse_log(a.log)
    rec = {"peer": a.peer, "mode": a.mode, "ratio": a.ratio, "round": a.round,
           "feature_bytes": a.feature_bytes, "load_before": a.load_before,
           "load_after": a.load_after, "log": a.log}
    if cg:
        rec.update(limit=cg["limit"], wall_s=cg["wall_s"], rc=cg["rc"], peak=cg["peak"],
                   oom_kills=cg["oom_kills"])
    if result:
        rec["status"] = "done"
        rec.update(result)
    else:
        rec["status"] = "oom" if cg and cg.get("oom_kills") else (
            "timeout" if cg and cg.get("rc") == 124 else "failed")
        if progress:
            rec["partial"] = progress
            rec["seeds_per_s"] = round(progress["seeds"] / progress["s"], 1) if progress["s"] else None
        rec["error"] = errors[-3:]
    print(json.dumps(rec))


def fmt(v):
    return "—" if v is None else f"{v:,.0f}"


def report(path):
    recs = [json.loads(l) for l in open(path) if l.strip()]
    ratios = list(dict.fromkeys(r["ratio"] for r in recs))
    modes = list(dict.fromkeys(r["mode"] for r in recs))
    peers = list(dict.fromkeys(r["peer"] for r in recs))
    for mode in modes:
        title = "data loading alone" if mode == "load" else "data loading + a GraphSAGE step"
        print(f"\n### {title} (seeds/s, median of rounds)\n")
        head = ["features / memory", "limit"] + peers
        head += [f"ginex / {p}" for p in peers if p != "ginex"]
        print("| " + " | ".join(head) + " |")
        print("|" + "---|" * len(head))
        for ratio in ratios:
            rows = [r for r in recs if r["ratio"] == ratio and r["mode"] == mode]
            if not rows:
                continue
            med = {}
            cells = [f"{ratio}×" if ratio != "fits" else "fits", ""]
            cells[1] = f"{rows[0].get('limit', 0) / 2**20:,.0f} MiB"
            for p in peers:
                done = [r["seeds_per_s"] for r in rows if r["peer"] == p and r["status"] == "done"]
                other = [r for r in rows if r["peer"] == p and r["status"] != "done"]
                if done:
                    med[p] = statistics.median(done)
                    cells.append(fmt(med[p]) + (f" ({len(done)})" if len(done) > 1 else ""))
                elif other:
                    o = other[0]
                    part = o.get("seeds_per_s")
                    cells.append(f"{o['status']}" + (f", ≤ {part:,.0f} partial" if part else ""))
                else:
                    cells.append("—")
            for p in peers:
                if p == "ginex":
                    continue
                if "ginex" in med and p in med and med[p]:
                    cells.append(f"{med['ginex'] / med[p]:.2f}×")
                else:
                    cells.append("—")
            print("| " + " | ".join(cells) + " |")
    print("\nRuns:\n")
    print("| peer | mode | ratio | round | status | seeds | epoch s | setup s | seeds/s | peak MiB | load before → after |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for r in recs:
        print(f"| {r['peer']} | {r['mode']} | {r['ratio']} | {r['round']} | {r['status']} | "
              f"{r.get('seeds', (r.get('partial') or {}).get('seeds', '—'))} | {r.get('epoch_s', '—')} | "
              f"{r.get('setup_s', '—')} | {fmt(r.get('seeds_per_s'))} | "
              f"{(r.get('peak') or 0) / 2**20:,.0f} | {r['load_before']} → {r['load_after']} |")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--log")
    ap.add_argument("--report")
    for k in ("peer", "mode", "ratio", "round", "load-before", "load-after"):
        ap.add_argument("--" + k)
    ap.add_argument("--feature-bytes", type=int)
    a = ap.parse_args()
    if a.report:
        report(a.report)
    elif a.log:
        record(a)
    else:
        ap.error("--log or --report")


if __name__ == "__main__":
    sys.exit(main())
