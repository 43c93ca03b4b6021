"""The run request: one way to resume a run or a gate (the saved settings under the ones
given again), read from what csorch saved before this module as well as now."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from orchestrator import cache
from orchestrator.errors import CsorchError
from orchestrator.model.job import Fanout
from orchestrator.run import journal, request
from orchestrator.run.request import Request, Settings

#: a gate-run.json as csorch wrote it before the run request (csorch.gate-run/1)
OLD_GATE_RUN = {
    "schema": "csorch.gate-run/1",
    "configs": ["/src/configs/release-gate.yaml"],
    "backend": "asan",
    "repeat": 3,
    "jobs": 4,
    "devices": None,
    "fanout": "replicate",
    "executor": None,
    "slurm": ["partition=gpu"],
    "cache": "/var/cache/csorch",
    "resume": "csorch gate --resume /tmp/g",
}

#: a run's journal settings as the pipeline writes them (resume.settings)
RUN_SETTINGS = {
    "config": "/src/configs/c-oob.yaml",
    "cases": ["oob"],
    "repeat": 2,
    "backend": "asan",
    "reason": "no GPU",
    "devices": [],
    "fanout": "shard",
    "jobs": 8,
    "cache": "/var/cache/csorch",
}


def test_given_settings_win_and_the_rest_are_the_saved_ones() -> None:
    saved = Settings(backend="asan", repeat=3, jobs=4, fanout=Fanout.REPLICATE, cases=("a",))
    given = Settings(jobs=2, fanout=Fanout.SHARD, cache=Path("/elsewhere"))
    merged = given.over(saved)
    assert (merged.backend, merged.repeat, merged.jobs, merged.cases) == ("asan", 3, 2, ("a",))
    assert merged.cache == Path("/elsewhere")
    assert merged.fanout is Fanout.REPLICATE  # the journal's attempts were placed by it
    assert Settings().over(saved).cache == cache.DEFAULT_DIR  # nothing saved: the default


def test_an_old_gate_run_record_resumes(tmp_path: Path) -> None:
    (tmp_path / request.GATE_RUN).write_text(json.dumps(OLD_GATE_RUN))
    configs, kept = request.saved("gate", tmp_path)
    assert configs == (Path("/src/configs/release-gate.yaml"),)
    assert kept == Settings(
        backend="asan",
        repeat=3,
        jobs=4,
        fanout=Fanout.REPLICATE,
        slurm=("partition=gpu",),
        cache=Path("/var/cache/csorch"),
    )


def test_a_gate_run_record_saved_now_reads_back_and_keeps_the_old_keys(tmp_path: Path) -> None:
    settings = Settings(backend="asan", repeat=2, slurm=("time=10",), cache=tmp_path / "c")
    config = tmp_path / "gate.yaml"
    request.save_gate(tmp_path / "g", (config,), settings)
    doc = json.loads((tmp_path / "g" / request.GATE_RUN).read_text())
    # an earlier csorch reads these keys of it
    assert set(OLD_GATE_RUN) <= set(doc) and doc["schema"] == request.GATE_RUN_SCHEMA
    assert doc["resume"] == journal.resume_command("gate", tmp_path / "g")
    assert request.saved("gate", tmp_path / "g") == ((config,), settings)


def test_bad_gate_run_records_are_resume_errors(tmp_path: Path) -> None:
    with pytest.raises(journal.ResumeError, match="holds no gate to resume"):
        request.saved("gate", tmp_path)
    (tmp_path / request.GATE_RUN).write_text(json.dumps({**OLD_GATE_RUN, "schema": "x"}))
    with pytest.raises(journal.ResumeError, match="is not a csorch.gate-run/1 record"):
        request.saved("gate", tmp_path)
    (tmp_path / request.GATE_RUN).write_text(json.dumps({**OLD_GATE_RUN, "fanout": "both"}))
    with pytest.raises(journal.ResumeError, match="is not a csorch.gate-run/1 record"):
        request.saved("gate", tmp_path)


def test_a_run_resumes_from_its_journal(tmp_path: Path) -> None:
    journal.Journal.create(tmp_path, {"experiment": "x"}, RUN_SETTINGS, ["csorch"], "now")
    given = Request(settings=Settings(repeat=None, jobs=3), resume=tmp_path)
    resumed = request.resumed(given, "run")
    assert resumed.configs == (Path("/src/configs/c-oob.yaml"),)
    assert resumed.out == tmp_path and resumed.resume == tmp_path
    s = resumed.settings
    assert (s.backend, s.repeat, s.jobs, s.cases, s.devices) == ("asan", 2, 3, ("oob",), None)
    assert s.cache == Path("/var/cache/csorch")
    # a config given again is the one run (a different one is refused by the journal)
    again = request.resumed(Request((tmp_path / "c.yaml",), resume=tmp_path), "run")
    assert again.configs == (tmp_path / "c.yaml",)


def test_a_resume_with_another_out_is_refused_with_the_command(tmp_path: Path) -> None:
    journal.Journal.create(tmp_path, {"experiment": "x"}, RUN_SETTINGS, ["csorch"], "now")
    asked = Request(out=tmp_path / "other", resume=tmp_path)
    with pytest.raises(CsorchError, match="continues the run in its own directory") as caught:
        request.resumed(asked, "run")
    assert caught.value.hint == f"drop --out: {journal.resume_command('run', tmp_path)}"
    # the same directory by another name is no other --out
    assert request.resumed(Request(out=tmp_path / ".", resume=tmp_path), "run").out == tmp_path


def test_prepare_refuses_before_any_work(tmp_path: Path) -> None:
    with pytest.raises(CsorchError, match=r"give CONFIG \(or --resume OUT\)"):
        request.prepare(Request())
    with pytest.raises(journal.ResumeError):
        request.prepare(Request(resume=tmp_path))  # no journal there
    with pytest.raises(CsorchError, match="unknown backend"):
        request.prepare(Request((tmp_path / "x.yaml",), Settings(backend="gpu")))
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / journal.JOURNAL).write_text("")
    with pytest.raises(CsorchError, match="not empty") as caught:
        request.prepare(Request((tmp_path / "x.yaml",), out=tmp_path / "out"))
    assert journal.resume_command("run", tmp_path / "out") in caught.value.hint


def test_interrupts_and_unwritten_directories_name_the_resume(tmp_path: Path) -> None:
    stop = journal.Interrupted("bisect", tmp_path)
    assert isinstance(stop, KeyboardInterrupt)
    assert stop.resume == f"csorch bisect --resume {tmp_path}"
    unwritten = journal.NotWritten(OSError(28, "No space left on device"), "run", tmp_path)
    assert unwritten.ran and not unwritten.failed
    assert unwritten.resume == f"csorch run --resume {tmp_path}"


def test_a_bisection_resumes_through_the_same_merge(tmp_path: Path) -> None:
    kept = ((tmp_path / "c.yaml",), Settings(backend="asan", jobs=4, cache=tmp_path / "c"))
    given = Request(settings=Settings(jobs=2), resume=tmp_path)
    resumed = request.resumed(given, "bisect", kept)
    assert resumed.configs == (tmp_path / "c.yaml",) and resumed.out == tmp_path
    assert (resumed.settings.jobs, resumed.settings.cache) == (2, tmp_path / "c")
    with pytest.raises(CsorchError, match="continues the bisect in its own directory"):
        request.resumed(Request(out=tmp_path / "new", resume=tmp_path), "bisect", kept)
