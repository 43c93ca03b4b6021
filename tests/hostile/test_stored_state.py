"""Stored state is read back as what csorch wrote, or named: real bundles of `csorch run
--backend asan` over the C program (tests/fixtures/e2e/cprog), with one value of
results.json edited the way a hand or a script can (a count made a string, a list, NaN or
a billion; a key given twice) and every digest recomputed. Every reader of a stored
bundle (`verify`, `compare --from`, `report`, `gate --from`) answers each one in seconds
with an exit code and a reason naming the file and the key: never a traceback, never a
hang, and never a verdict better than INCONCLUSIVE."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from harness import E2E, ROOT, invoke

from orchestrator.cli import ExitCode


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def edited(src: Path, tmp_path: Path, change: Callable[[dict[str, Any]], str | None]) -> Path:
    """A copy of the bundle at `src` with results.json changed by `change` (which may
    return the document's new text itself) and the manifest's digest of it recomputed."""
    bundle = tmp_path / "bundle"
    shutil.copytree(src, bundle, symlinks=True)
    doc = json.loads((bundle / "results.json").read_text())
    text = change(doc)
    (bundle / "results.json").write_text(text if text is not None else json.dumps(doc))
    manifest = json.loads((bundle / "manifest.json").read_text())
    manifest["results"]["sha256"] = sha(bundle / "results.json")
    (bundle / "manifest.json").write_text(json.dumps(manifest, indent=1))
    return bundle


def _set(*path: Any, value: Any) -> Callable[[dict[str, Any]], None]:
    def change(doc: dict[str, Any]) -> None:
        for step in path[:-1]:
            doc = doc[step]
        doc[path[-1]] = value

    return change


def _twice(doc: dict[str, Any]) -> str:
    """The verdict given twice: "fail" first, the value csorch's parser keeps last."""
    text = json.dumps(doc)
    return text.replace('"verdict": "pass"', '"verdict": "fail", "verdict": "pass"', 1)


#: (what, the edit, what the readers name)
EDITS = [
    ("repeats a string", _set("experiment", "repeats", value="1"), "Experiment.repeats"),
    ("timeout NaN", _set("experiment", "timeout", value=float("nan")), "NaN"),
    ("a duration Infinity", _set("attempts", 0, "duration", value=float("inf")), "Infinity"),
    ("repeat a list", _set("attempts", 0, "repeat", value=[0]), "Attempt.repeat"),
    ("repeat a bool", _set("attempts", 0, "repeat", value=False), "Attempt.repeat"),
    ("name a list", _set("experiment", "name", value=["c-oob"]), "Experiment.name"),
    ("cases a string", _set("experiment", "cases", value="sum"), "Experiment.cases"),
    ("a key twice", _twice, "'verdict' twice"),
]


@pytest.mark.parametrize(("what", "change", "named"), EDITS, ids=[e[0] for e in EDITS])
def test_a_value_not_of_its_type_is_named_by_every_reader(
    cprog_bundles, tmp_path, what, change, named
):
    bundle = edited(cprog_bundles["pass"], tmp_path, change)
    verified = invoke("verify", str(bundle))
    assert verified.exit_code == ExitCode.FAIL, verified.output
    assert named in verified.output, verified.output
    compared = invoke("compare", "--from", str(bundle))
    assert compared.exit_code == ExitCode.INCONCLUSIVE, compared.output
    shown = invoke("report", str(bundle), "--format", "json")
    assert shown.exit_code in (ExitCode.PASS, ExitCode.USAGE), shown.output
    if shown.exit_code == ExitCode.PASS:  # rendered: INCONCLUSIVE, the reasons first
        assert json.loads(shown.stdout)["verdict"] == "inconclusive", shown.stdout
    gate = invoke("gate", str(E2E / "c-oob.yaml"), "--from", str(bundle),
                  "--out", str(tmp_path / "gate"))  # fmt: skip
    assert gate.exit_code == ExitCode.INCONCLUSIVE, gate.output


def _csorch(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """csorch in a child, with a deadline: a reader that plans what a hand wrote would run
    for hours (and a test run in-process would never end)."""
    return subprocess.run(
        [sys.executable, "-m", "orchestrator", *args],
        cwd=cwd, capture_output=True, text=True, timeout=60,
        env={**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "200"},
    )  # fmt: skip


@pytest.mark.parametrize(
    "change",
    [_set("experiment", "repeats", value=10**9), _set("options", "repeat", value=10**9)],
    ids=["the experiment's repeats", "the run's --repeat"],
)
def test_a_billion_repeats_is_named_not_planned(cprog_bundles, tmp_path, change):
    """A config is refused past 10,000 repeats when it loads; the experiment copied into a
    bundle (and the --repeat the run recorded, which narrows the config file) were not
    loaded, and every reader planned their billion attempts (minutes, then out of memory)."""
    bundle = edited(cprog_bundles["pass"], tmp_path, change)
    done = _csorch("verify", str(bundle), cwd=tmp_path)
    assert done.returncode == ExitCode.FAIL, done.stdout + done.stderr
    assert "Traceback" not in done.stderr
    assert "1000000000" in done.stdout and "10,000" in done.stdout, done.stdout
    compared = _csorch("compare", "--from", str(bundle), cwd=tmp_path)
    assert compared.returncode == ExitCode.INCONCLUSIVE, compared.stdout + compared.stderr


def test_a_gate_directorys_bundle_that_is_a_symlink_carries_nothing(tmp_path):
    """`gate --carry-from DIR` takes DIR/EXPERIMENT as the bundle; `--carry-from` refuses
    a symlink, and so must the bundle found inside: it carried the verdict of whatever
    bundle the link led to, named by the link's path."""
    if shutil.which("gcc") is None or shutil.which("make") is None:
        pytest.skip("the C program needs gcc and make")
    for name in ("old", "new"):
        (tmp_path / name).mkdir()
        shutil.copytree(E2E / "cprog", tmp_path / name / "cprog")
        for f in ("c-oob.yaml", "fix-oob.patch", "gate-cprog.yaml"):
            shutil.copy(E2E / f, tmp_path / name / f)
    pick = tmp_path / "new" / "cprog" / "pick.c"
    pick.write_text(pick.read_text().replace("sums an 8-element table", "sums eight"))
    cache = str(tmp_path / "cache")
    done = _csorch("run", "old/c-oob.yaml", "--backend", "asan", "--out", "stored",
                   "--cache-dir", cache, cwd=tmp_path)  # fmt: skip
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    (tmp_path / "links").mkdir()
    (tmp_path / "links" / "c-oob").symlink_to(tmp_path / "stored")
    gate = _csorch("gate", "new/gate-cprog.yaml", "--backend", "asan", "--out", "gate",
                   "--cache-dir", cache, "--carry-from", "links", cwd=tmp_path)  # fmt: skip
    said = gate.stdout + gate.stderr
    assert gate.returncode == ExitCode.PASS, said  # every attempt ran again
    assert "not carried" in said and "is a symlink" in said, said
    assert json.loads((tmp_path / "gate" / "c-oob" / "results.json").read_text())["carried"] is None
