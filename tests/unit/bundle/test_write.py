"""bundle: atomic JSON (a reader never sees half a file), log digests, schemas, and a
Ctrl-C that leaves a valid bundle marked incomplete (a real csorch process)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from orchestrator import bundle, files
from orchestrator.errors import BundleError
from orchestrator.host import Host
from orchestrator.model import (
    BuildKind,
    BuildSpec,
    Case,
    CaseKind,
    Checker,
    Experiment,
    Run,
    SourceKind,
    SourceSpec,
    Variant,
)
from tests import procs

ROOT = Path(__file__).resolve().parents[3]


def test_a_reader_never_sees_half_a_file(tmp_path: Path) -> None:
    path = tmp_path / "doc.json"
    files.atomic_write(path, json.dumps({"n": 0}))
    stop = threading.Event()
    seen, bad = [], []

    def read() -> None:
        while not stop.is_set():
            try:
                seen.append(json.loads(path.read_text())["n"])
            except json.JSONDecodeError as exc:
                bad.append(exc)

    reader = threading.Thread(target=read)
    reader.start()
    for n in range(1, 200):
        files.atomic_write(path, json.dumps({"n": n, "pad": "x" * (n * 500)}))
    stop.set()
    reader.join()
    assert bad == [] and seen and json.loads(path.read_text())["n"] == 199
    assert [p.name for p in tmp_path.iterdir()] == ["doc.json"]  # no temporary left over


def snapshot(tmp_path: Path) -> bundle.Snapshot:
    experiment = Experiment(
        name="e",
        source=SourceSpec(SourceKind.PATH, str(tmp_path)),
        variants=(Variant("v", BuildSpec(BuildKind.JIT)),),
        runs=(Run("plain", Checker.NONE),),
        cases=(Case("c", CaseKind.COMMAND, command=("true",)),),
    )
    return bundle.Snapshot(experiment, {"name": "asan"}, Host("3.11", "linux"), {}, "now")


def test_write_and_read_back(tmp_path: Path) -> None:
    b = bundle.Bundle(tmp_path / "out")
    log = tmp_path / "out" / "logs" / "v" / "r0.log"
    log.parent.mkdir(parents=True)
    log.write_text("one")
    snap = snapshot(tmp_path)
    b.write(snap)
    results, manifest = bundle.read(tmp_path / "out")
    assert results["complete"] is False and results["verdict"] is None
    assert results["experiment"]["name"] == "e" and manifest["host"]["python"] == "3.11"
    first = manifest["logs"]["logs/v/r0.log"]
    log.write_text("two, longer")
    snap.complete = True
    b.write(snap)
    results, manifest = bundle.read(tmp_path / "out")
    assert results["complete"] is True and manifest["logs"]["logs/v/r0.log"] != first


@pytest.mark.parametrize(
    ("text", "problem"),
    [(None, "no results.json"), ("{", "not valid JSON"), ('{"schema": "x/9"}', "schema 'x/9'")],
)
def test_bad_bundles(tmp_path: Path, text: str | None, problem: str) -> None:
    if text is not None:
        (tmp_path / "results.json").write_text(text)
    with pytest.raises(BundleError, match=problem):
        bundle.read(tmp_path)


CONFIG = """\
name: sleepy
source: src
variants:
  - {name: only, build: {kind: command, command: ["true"]}}
runs:
  - {name: plain, checker: none}
cases:
  - {name: nap, command: [sleep, "SECONDS"]}
"""


@pytest.mark.process
@pytest.mark.skipif(shutil.which("gcc") is None, reason="the ASan backend needs gcc")
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
def test_ctrl_c_leaves_a_valid_bundle_marked_incomplete(tmp_path: Path, sig: int) -> None:
    (tmp_path / "src").mkdir()
    seconds = procs.token()  # the case's process, found by its argv (it runs sandboxed)
    (tmp_path / "exp.yaml").write_text(CONFIG.replace("SECONDS", seconds))
    out = tmp_path / "out"
    csorch = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "orchestrator",
            "run",
            str(tmp_path / "exp.yaml"),
            "--backend",
            "asan",
            "--out",
            str(out),
            "--cache-dir",
            str(tmp_path / "cache"),
        ],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    nap = procs.wait_for("sleep", seconds, alive=lambda: csorch.poll() is None, timeout=60)
    csorch.send_signal(sig)
    output, _ = csorch.communicate(timeout=60)
    assert csorch.returncode == 3, output
    assert f"interrupted; resume with: csorch run --resume {out}" in output
    results, manifest = bundle.read(out)
    assert results["complete"] is False and results["interrupted"] is True
    assert manifest["complete"] is False and results["builds"][0]["ok"] is True
    assert results["verdict"] == "inconclusive"
    assert procs.gone(nap)  # the case's process went with csorch


def test_records_come_back_from_a_bundle(tmp_path: Path) -> None:
    from orchestrator.judge.causality import Judgement
    from orchestrator.model import (
        Attempt,
        Build,
        Finding,
        Frame,
        Launch,
        NodeResult,
        Outcome,
        ParseResult,
        Verdict,
    )

    snap = snapshot(tmp_path)
    finding = Finding(
        Checker.ASAN,
        "heap-use-after-free",
        "read",
        8,
        frames=(Frame("f", "a.cpp", 3),),
        case="t.py::x",
    )
    attempt = Attempt(
        "v",
        "plain",
        "c",
        0,
        Checker.ASAN,
        argv=("true",),
        outcome=Outcome.FAILED,
        log=Path("logs/v/plain/c/r0.log"),
        parse=ParseResult((finding,), 1, 0, True),
        nodes=(NodeResult("t.py::x", Outcome.FAILED),),
        launches=(Launch(("true",), (("A", "1"),), "/", Path("logs/x.log"), 1),),
    )
    snap.builds.append(Build("v", BuildKind.JIT, True, cache_key="k", import_path=tmp_path))
    snap.attempts.append(attempt)
    snap.judgement = Judgement(Verdict.FAIL, ("why",))
    bundle.Bundle(tmp_path / "out").write(snap)
    results, _ = bundle.read(tmp_path / "out")
    back = bundle.records(results)
    assert back.experiment == snap.experiment and back.attempts == (attempt,)
    assert back.builds == tuple(snap.builds) and back.judgement == snap.judgement


def test_bundle_files_are_readable_by_others_under_the_usual_umask(tmp_path: Path) -> None:
    import stat

    from orchestrator import files
    from orchestrator.files import atomic_write

    path = tmp_path / "results.json"
    atomic_write(path, "{}")
    mode = stat.S_IMODE(path.stat().st_mode)
    assert mode == 0o666 & ~files._UMASK
    assert mode & 0o044 == 0o044 or files._UMASK & 0o044  # 0600 only if the umask says so
