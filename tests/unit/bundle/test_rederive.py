"""bundle/rederive: every real captured log (compute-sanitizer on an H200, ASan here),
recorded as a run records it, re-derives to the same findings; the record with its
findings deleted, or its summary changed, does not."""

from __future__ import annotations

import dataclasses
import functools
import json
import re
import shutil
from pathlib import Path

import pytest

from orchestrator import backends
from orchestrator.backends import channel
from orchestrator.backends.asan import log as asan_log
from orchestrator.backends.compute_sanitizer import log as cs_log
from orchestrator.bundle import rederive
from orchestrator.model import Attempt, Checker, Launch

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
LOGS = sorted(
    p
    for p in [*FIXTURES.glob("compute-sanitizer/*/*.log"), *FIXTURES.glob("asan/*.log")]
    if p.with_suffix(".expected.json").is_file()
)


def recorded(log: Path, root: Path) -> tuple[str, Attempt]:
    """(backend, the attempt as a run records it) with the log in the bundle `root`, as
    the checker's own channel file beside the launch's output log (`backends.channel`),
    its parse the executor's."""
    expected = json.loads(log.with_suffix(".expected.json").read_text())
    backend = "asan" if expected["parser"] == "asan" else "compute-sanitizer"
    checker = Checker(expected.get("checker", "asan"))
    rel = Path("logs") / "v" / "r" / "c" / "r0.log"
    (root / rel).parent.mkdir(parents=True, exist_ok=True)
    (root / rel).write_text("the case's own output: never parsed for findings\n")
    prefix = root / channel.prefix_for(rel, 0)
    text = log.read_text(encoding="utf-8", errors="replace")
    if backend == "asan":
        pid = re.search(r"==(\d+)==", text)
        shutil.copy(log, f"{prefix}.{pid[1] if pid else 4242}")
        parse = channel.read_asan(prefix, asan_log.parse)
    else:
        shutil.copy(log, f"{prefix}.4242.log")
        parse = channel.read_cs(prefix, functools.partial(cs_log.parse, checker=checker))
    attempt = Attempt(
        "v", "r", "c", 0, Checker.ASAN if backend == "asan" else checker,
        parse=parse, launches=(Launch(("prog",), (), "", rel),),
    )  # fmt: skip
    # through the bundle's JSON and back, as `gate --from` reads it
    return backends.reader(backend), Attempt.from_dict(json.loads(json.dumps(attempt.to_dict())))


@pytest.mark.parametrize("log", LOGS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_a_recorded_attempt_re_derives_from_its_log(log: Path, tmp_path: Path) -> None:
    backend, attempt = recorded(log, tmp_path)
    assert rederive._attempt(tmp_path, backend, attempt) is None
    assert attempt.parse is not None
    if attempt.parse.findings:
        emptied = dataclasses.replace(attempt.parse, findings=())
        found = rederive._attempt(tmp_path, backend, dataclasses.replace(attempt, parse=emptied))
        assert found is not None and "results.json was edited" in found.detail
    recount = dataclasses.replace(
        attempt.parse, summary_count=(attempt.parse.summary_count or 0) + 1
    )
    assert rederive._attempt(tmp_path, backend, dataclasses.replace(attempt, parse=recount))


def test_there_are_logs_of_both_parsers() -> None:
    assert any("asan" in str(p) for p in LOGS) and any("h200" in str(p) for p in LOGS)
