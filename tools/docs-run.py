#!/usr/bin/env python3
"""Runs every shell block of the README and the user guide, as written.

A doc that shows a command the tools refuse is a bug: this script extracts
each ```sh block of README.md and the user-guide chapters (docs/README.md
lists them), runs the blocks of one document in order in one scratch
directory (so a block may use what an earlier one made, as a reader would),
and fails naming the document, the line and the output of the block that
failed. tools/check.sh runs it after the test builds, with their binaries.

Scale. Blocks are run as written except for these rewrites, printed for
every block they change, so a walk-through of a 10M-node graph runs in
seconds:
  --nodes N       -> at most --nodes 3000 (synthetic stores)
  --epochs N      -> at most --epochs 2
  STORE / CK      -> the placeholders name a small generated store
                     (`store`) and a checkpoint of it (`ckpt-store`)

Directives. An HTML comment (invisible once rendered) on the line right
above a block says how to run it:
  <!-- docs-run: skip REASON -->   not run; REASON is printed (a synopsis
                                   with [optional] parts, or a command that
                                   needs a download or another program)
  <!-- docs-run: before CMD -->    CMD runs first in the same shell (it
                                   makes the files a block assumes exist)
  <!-- docs-run: install -->       an install block: not run in a scratch
                                   directory but by `--installs` (below)
A block that installs (`pip install`, `cargo install`, `maturin build`) must
be an install block: skipping one fails the run, since a documented install
line that no check runs breaks unnoticed.

Installs. `--installs` runs only the install blocks, from the repository
root (so `./python`, `--path tools` and `examples/` mean what they say),
each document in a fresh scratch directory target/install-check/DOC/, with
these rewrites, printed: `.venv` names a fresh venv there, `dist` a folder
there, `cargo install` installs there (`--root`) and builds in target/, and
STORE names a small generated store there. pip resolves the build backend
itself (no pinned maturin). Release builds run at opt-level 0 (cargo's
CARGO_PROFILE_RELEASE_* variables): the check proves the lines resolve,
build, install and import, not how fast the result runs.
A block that runs `ginex train` or `ginex predict` (or names CK) needs a `--features
train` build: it is skipped, and said so, when the binaries lack it.

Usage: tools/docs-run.py [--bin-dir target/debug] [--keep] [--installs] [DOC.md ...]
"""

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DOCS = [
    "README.md",
    "docs/install.md",
    "docs/ginex.md",
    "docs/ginex-import.md",
    "docs/ginex-export.md",
    "docs/ginex-dump.md",
    "docs/python.md",
    "docs/rust-api.md",
]
BINARIES = ["ginex", "ginex-import", "ginex-dump", "ginex-export"]
NODES_CAP = 3000
EPOCHS_CAP = 2
BLOCK_TIMEOUT_S = 600
# An install block builds the release binaries and the extension first.
INSTALL_TIMEOUT_S = 1800

# What STORE and CK name: made once per document, before its first block.
FIXTURE = """\
ginex gen --quiet --nodes 3000 --avg-degree 10 --dim 32 --classes 4 --split 0.5,0.2,0.2 --seed 1 --out store >/dev/null
"""
FIXTURE_TRAIN = """\
ginex train store --model sage --fanouts 5,5 --batch-size 200 --hidden 16 --epochs 1 --checkpoint ckpt-store >/dev/null
"""

BLOCK = re.compile(r"^```(?:sh|bash|shell)\n(.*?)^```", re.S | re.M)
DIRECTIVE = re.compile(r"<!--\s*docs-run:\s*(skip|before|install)\b\s*(.*?)\s*-->")
INSTALL_COMMAND = re.compile(r"\b(pip install|cargo install|maturin build)\b")
# Release builds in the install pass: see "Installs" above.
INSTALL_ENV = {"CARGO_PROFILE_RELEASE_OPT_LEVEL": "0", "CARGO_PROFILE_RELEASE_DEBUG": "false"}
TRAIN_COMMAND = re.compile(r"\bginex (train|predict)\b")


class Block:
    def __init__(self, doc, line, text, directives):
        self.doc, self.line, self.text, self.directives = doc, line, text, directives

    def directive(self, name):
        return [arg for kind, arg in self.directives if kind == name]


def blocks_of(doc):
    """Each shell block of `doc` with the directives on the lines above it."""
    text = open(os.path.join(ROOT, doc), encoding="utf-8").read()
    out = []
    for m in BLOCK.finditer(text):
        line = text.count("\n", 0, m.start()) + 1
        above = text[: m.start()].rstrip("\n").split("\n")
        directives = []
        while above and DIRECTIVE.search(above[-1]):
            d = DIRECTIVE.search(above.pop())
            directives.insert(0, (d.group(1), d.group(2)))
        out.append(Block(doc, line, m.group(1), directives))
    return out


def cap(flag, limit, text):
    return re.sub(
        rf"(--{flag}[ =])(\d+)\b",
        lambda m: m.group(1) + str(min(int(m.group(2)), limit)),
        text,
    )


def scaled(text):
    """The block at test scale (see the module docstring)."""
    text = cap("nodes", NODES_CAP, text)
    text = cap("epochs", EPOCHS_CAP, text)
    text = re.sub(r"\bSTORE\b", "store", text)
    text = re.sub(r"\bCK\b", "ckpt-store", text)
    return text


def has_train(bin_dir):
    probe = subprocess.run(
        [os.path.join(bin_dir, "ginex"), "train", "--help"],
        capture_output=True,
        text=True,
    )
    return probe.returncode == 0


def run_shell(script, cwd, env, timeout=BLOCK_TIMEOUT_S):
    started = time.monotonic()
    try:
        proc = subprocess.run(
            ["bash", "-c", "set -euo pipefail\n" + script],
            cwd=cwd,
            env=env,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        return proc.returncode, proc.stdout + proc.stderr, time.monotonic() - started
    except subprocess.TimeoutExpired as e:
        out = (e.stdout or b"").decode(errors="replace") + (e.stderr or b"").decode(errors="replace")
        return 124, out + f"\n(timed out after {timeout} s)", time.monotonic() - started


def run_doc(doc, env, train, keep):
    """Runs one document's blocks in order; returns the failures."""
    blocks = blocks_of(doc)
    if not blocks:
        return []
    scratch = tempfile.mkdtemp(prefix="docs-run-", dir=os.path.join(ROOT, "target"))
    failures = []
    fixture = FIXTURE + (FIXTURE_TRAIN if train else "")
    needs_fixture = any(re.search(r"\b(STORE|CK)\b", b.text) for b in blocks)
    try:
        if needs_fixture:
            rc, out, _ = run_shell(fixture, scratch, env)
            if rc != 0:
                return [(f"{doc} (the STORE fixture)", fixture, out)]
        for b in blocks:
            where = f"{b.doc}:{b.line}"
            skip = b.directive("skip")
            if b.directive("install"):
                print(f"  install {where}: run by --installs")
                continue
            if INSTALL_COMMAND.search(b.text):
                failures.append((where, b.text, "installs, so it must be marked <!-- docs-run: install -->"))
                print(f"  FAIL {where}: an install block not marked `install`")
                continue
            if skip:
                print(f"  skip {where}: {skip[0]}")
                continue
            if (TRAIN_COMMAND.search(b.text) or re.search(r"\bCK\b", b.text)) and not train:
                print(f"  skip {where}: needs a `--features train` build (these binaries lack it)")
                continue
            script = scaled(b.text)
            if script != b.text:
                print(f"  {where}: at test scale (--nodes <= {NODES_CAP}, --epochs <= {EPOCHS_CAP}, STORE/CK fixtures)")
            before = "\n".join(b.directive("before"))
            rc, out, secs = run_shell(before + "\n" + script, scratch, env)
            if rc != 0:
                failures.append((where, script, out))
                print(f"  FAIL {where} (exit {rc}, {secs:.1f} s)")
            else:
                print(f"  ok   {where} ({secs:.1f} s)")
    finally:
        if keep:
            print(f"  (scratch kept: {scratch})")
        else:
            shutil.rmtree(scratch, ignore_errors=True)
    return failures


def installed(text, scratch):
    """An install block with its paths moved into `scratch` (see "Installs")."""
    text = re.sub(r"(?<![\w/])\.venv\b", f"{scratch}/venv", text)
    text = re.sub(r"(?<![\w/-])dist\b", f"{scratch}/dist", text)
    text = re.sub(r"\bcargo install\b", f"cargo install --root {scratch}/cargo --target-dir {ROOT}/target", text)
    return re.sub(r"\bSTORE\b", f"{scratch}/store", text)


def run_installs(doc, env, keep, done):
    """Runs one document's install blocks from the repository root; returns
    the failures. `done` maps the blocks already run (their text, as in
    the docs) to where: a block another document repeats runs once."""
    blocks = [b for b in blocks_of(doc) if b.directive("install")]
    if not blocks:
        return []
    scratch = os.path.join(ROOT, "target", "install-check", re.sub(r"\W", "-", doc))
    shutil.rmtree(scratch, ignore_errors=True)
    os.makedirs(scratch)
    if any(re.search(r"\bSTORE\b", b.text) for b in blocks):
        rc, out, _ = run_shell(FIXTURE, scratch, env)
        if rc != 0:
            return [(f"{doc} (the STORE fixture)", FIXTURE, out)]
    failures = []
    for b in blocks:
        where = f"{b.doc}:{b.line}"
        if b.text in done:
            print(f"  same  {where}: as {done[b.text]}, already run")
            continue
        done[b.text] = where
        script = installed(b.text, scratch)
        print(f"  {where}: as run from {ROOT}:\n    " + script.rstrip().replace("\n", "\n    "))
        rc, out, secs = run_shell(script, ROOT, {**env, **INSTALL_ENV}, INSTALL_TIMEOUT_S)
        if rc != 0:
            failures.append((where, script, out))
            print(f"  FAIL {where} (exit {rc}, {secs:.1f} s)")
        else:
            print(f"  ok   {where} ({secs:.1f} s)")
    if keep:
        print(f"  (scratch kept: {scratch})")
    else:  # a venv with torch is GBs
        shutil.rmtree(scratch, ignore_errors=True)
    return failures


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bin-dir", default=os.path.join(ROOT, "target", "debug"),
                    help="where ginex, ginex-import, ginex-dump, ginex-export are (default target/debug)")
    ap.add_argument("--keep", action="store_true", help="keep each document's scratch directory")
    ap.add_argument("--installs", action="store_true",
                    help="run only the install blocks, from the repository root, into target/install-check/")
    ap.add_argument("docs", nargs="*", help=f"documents to run (default: {' '.join(DOCS)})")
    a = ap.parse_args()

    bin_dir = os.path.abspath(a.bin_dir)
    missing = [b for b in BINARIES if not os.access(os.path.join(bin_dir, b), os.X_OK)]
    if missing:
        sys.exit(f"docs-run: {', '.join(missing)} not in {bin_dir}: build them first "
                 f"(cargo build -p ginex-cli --bins) or pass --bin-dir")
    env = dict(os.environ)
    env["PATH"] = bin_dir + os.pathsep + env.get("PATH", "")
    train = has_train(bin_dir)
    print(f"docs-run: binaries {bin_dir} ({'with' if train else 'without'} train)")

    failures, installs_done = [], {}
    for doc in a.docs or DOCS:
        print(f"==> {doc}")
        failures += run_installs(doc, env, a.keep, installs_done) if a.installs else run_doc(doc, env, train, a.keep)
    if failures:
        for where, script, out in failures:
            print(f"\n--- {where} failed; the block as run:\n{script}--- its output (the end):")
            print("\n".join(out.rstrip().split("\n")[-40:])[-4000:])
        sys.exit(f"\ndocs-run: {len(failures)} block(s) fail as written")
    print("docs-run: every block ran")


if __name__ == "__main__":
    main()
