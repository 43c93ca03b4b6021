"""A stranger's first experiment, end to end on the CPU: a real git repository made here
(a setup.py C extension whose `sum` reads one past the end, then the commit that fixes
it), `csorch init --fix HEAD`, `csorch check`, `csorch run` with no target (it prints the
target: block it derived), the block pasted into the config, and a second run from
another directory that judges with it and rebuilds nothing."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(shutil.which("gcc") is None, reason="the ASan backend needs gcc"),
]

SETUP = """\
from setuptools import Extension, setup

setup(name="oob", version="0.1", ext_modules=[Extension("oob", ["oob.c"])])
"""
OOB_C = """\
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdlib.h>

static int sum(const int *v, int n) {
    int s = 0;
    for (int i = 0; i <= n; i++) s += v[i];
    return s;
}

static PyObject *total(PyObject *self, PyObject *args) {
    int n;
    if (!PyArg_ParseTuple(args, "i", &n)) return NULL;
    int *v = malloc(sizeof(int) * n);
    for (int i = 0; i < n; i++) v[i] = i;
    int s = sum(v, n);
    free(v);
    return PyLong_FromLong(s);
}

static PyMethodDef methods[] = {{"total", total, METH_VARARGS, ""}, {NULL, NULL, 0, NULL}};
static struct PyModuleDef mod = {PyModuleDef_HEAD_INIT, "oob", NULL, -1, methods};
PyMODINIT_FUNC PyInit_oob(void) { return PyModule_Create(&mod); }
"""
TEST = "import oob\n\n\ndef test_total():\n    assert oob.total(8) >= 28\n"


def git(repo: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t", *args],
        check=True,
        capture_output=True,
    )


def csorch(*args: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "orchestrator", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=900,
        env={**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "200", **env},
    )


def test_init_check_run_paste_the_target_and_run_again(tmp_path: Path) -> None:
    repo = tmp_path / "oob"
    (repo / "tests").mkdir(parents=True)
    (repo / "setup.py").write_text(SETUP)
    (repo / "oob.c").write_text(OOB_C)
    (repo / "tests" / "test_oob.py").write_text(TEST)
    git(repo, "init", "-q")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "oob: total")
    (repo / "oob.c").write_text(OOB_C.replace("i <= n", "i < n"))
    git(repo, "commit", "-qam", "sum: stop at the last element")
    env = {"CSORCH_CACHE_DIR": str(tmp_path / "cache"), "CSORCH_RESULTS_DIR": str(tmp_path / "r")}
    config = tmp_path / "cfg" / "oob.yaml"
    made = csorch("init", str(repo), "--fix", "HEAD", "--out", str(config), cwd=tmp_path, env=env)
    assert made.returncode == 0, made.stderr
    checked = csorch("check", str(config), "--backend", "asan", cwd=tmp_path, env=env)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "build wheel: pip wheel" in checked.stdout and "attempts: 12 " in checked.stdout

    first = csorch("run", str(config), "--backend", "asan", cwd=tmp_path, env=env)
    assert first.returncode == 0, first.stdout[-3000:] + first.stderr[-3000:]
    assert "verdict: PASS (causal)" in first.stdout
    block = first.stdout.split("paste under expect:")[1].split("\n", 1)[1]
    assert block.startswith(
        "target:\n  - {checker: asan, kind: heap-buffer-overflow, access: read, size: 4, "
        "function: sum}\n"
    ), block
    config.write_text(config.read_text() + "".join(f"  {line}\n" for line in block.splitlines()))

    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    second = csorch("run", str(config), "--backend", "asan", cwd=elsewhere, env=env)
    assert second.returncode == 0, second.stdout[-3000:] + second.stderr[-3000:]
    assert "proposed target" not in second.stdout  # the config has one now
    bundles = sorted((tmp_path / "r").iterdir())
    results = json.loads((bundles[-1] / "results.json").read_text())
    assert all(b["cached"] for b in results["builds"])
    assert results["verdict"] == "pass"
    assert list(elsewhere.iterdir()) == []
