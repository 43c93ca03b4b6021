"""Where a run writes when given no --cache-dir, --out or work directory: nothing under
the current directory. Two runs of one config started from two different directories
share the build cache (the second builds nothing) and write their bundles under the
results home; a C subject (c-oob.yaml, built by make) keeps it quick."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CONFIG = ROOT / "tests" / "fixtures" / "e2e" / "c-oob.yaml"

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(shutil.which("gcc") is None, reason="the ASan backend needs gcc"),
]


def _run(cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "orchestrator", "run", str(CONFIG), "--backend", "asan"],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "200", **env},
    )


def _bundles(results_home: Path) -> list[Path]:
    return sorted(p for p in results_home.iterdir() if (p / "results.json").is_file())


def test_runs_from_two_directories_share_the_cache_and_write_nothing_in_either(
    tmp_path: Path,
) -> None:
    home = tmp_path / "home"
    env = {
        "HOME": str(home),
        "XDG_CACHE_HOME": str(tmp_path / "xdg-cache"),
        "XDG_DATA_HOME": str(tmp_path / "xdg-data"),
    }
    for name in ("CSORCH_CACHE_DIR", "CSORCH_RESULTS_DIR"):
        env[name] = ""  # the XDG defaults, not a caller's override
    one, two = tmp_path / "one", tmp_path / "two"
    one.mkdir()
    two.mkdir()
    first = _run(one, env)
    assert first.returncode == 0, first.stdout + first.stderr
    second = _run(two, env)
    assert second.returncode == 0, second.stdout + second.stderr
    assert list(one.iterdir()) == [] and list(two.iterdir()) == []  # nothing in either cwd
    results_home = tmp_path / "xdg-data" / "csorch" / "results"
    bundles = _bundles(results_home)
    assert len(bundles) == 2
    cached = [
        {b["variant"]: b["cached"] for b in json.loads((p / "results.json").read_text())["builds"]}
        for p in bundles
    ]
    assert sorted(map(sorted, (c.values() for c in cached))) == [
        [False, False],
        [True, True],
    ], cached
    assert (tmp_path / "xdg-cache" / "csorch" / "entries").is_dir()
    # the scratch trees live beside the cache and are gone after the run
    assert [p.name for p in (tmp_path / "xdg-cache" / "csorch" / "work").iterdir()] == []
    # each run says where its bundle is
    assert str(results_home) in first.stdout + first.stderr


def test_csorch_cache_dir_names_the_cache(tmp_path: Path) -> None:
    env = {
        "HOME": str(tmp_path / "home"),
        "XDG_CACHE_HOME": str(tmp_path / "xdg-cache"),
        "CSORCH_CACHE_DIR": str(tmp_path / "mine"),
        "CSORCH_RESULTS_DIR": str(tmp_path / "results"),
    }
    done = _run(tmp_path, env)
    assert done.returncode == 0, done.stdout + done.stderr
    assert (tmp_path / "mine" / "entries").is_dir()
    assert not (tmp_path / "xdg-cache").exists()
    assert len(_bundles(tmp_path / "results")) == 1
