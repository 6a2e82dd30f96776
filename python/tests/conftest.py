"""Fixtures: a `ginex gen --raw` dataset and its store imported by the
CLI, made once per session with the binaries cargo built (GINEX_BIN_DIR,
default target/debug of this checkout)."""

import json
import os
import subprocess
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(os.environ.get("GINEX_BIN_DIR", ROOT / "target" / "debug"))


def run_cli(name, *args):
    exe = BIN / name
    if not exe.exists():
        pytest.fail(f"{exe} is missing: run `cargo build -p ginex-cli --bins` first")
    r = subprocess.run([str(exe), *map(str, args)], capture_output=True, text=True)
    if r.returncode != 0:
        raise AssertionError(f"{name} {' '.join(map(str, args))} failed:\n{r.stderr}")
    return r


class Raw:
    """The arrays of a `ginex gen --raw` dataset."""

    def __init__(self, d):
        self.dir = d
        self.edges = np.load(d / "edges.npy")  # (E, 2) of (source, target)
        self.x = np.load(d / "features.npy")
        self.y = np.load(d / "labels.npy")
        self.train = np.load(d / "train_ids.npy")
        self.valid = np.load(d / "valid_ids.npy")
        self.test = np.load(d / "test_ids.npy")
        self.meta = json.loads((d / "meta.json").read_text())


def cli_import(raw_dir, out, *extra):
    run_cli(
        "ginex-import", "files",
        "--edges", raw_dir / "edges.npy",
        "--features", raw_dir / "features.npy",
        "--labels", raw_dir / "labels.npy",
        "--train-ids", raw_dir / "train_ids.npy",
        "--valid-ids", raw_dir / "valid_ids.npy",
        "--test-ids", raw_dir / "test_ids.npy",
        "--out", out, "-q", *extra,
    )


@pytest.fixture(scope="session")
def data(tmp_path_factory):
    d = tmp_path_factory.mktemp("data")
    run_cli("ginex", "gen", "--nodes", 3000, "--dim", 24, "--avg-degree", 8, "--raw", d / "raw")
    cli_import(d / "raw", d / "store")
    return d


@pytest.fixture(scope="session")
def raw(data):
    return Raw(data / "raw")


@pytest.fixture(scope="session")
def store_path(data):
    return data / "store"
