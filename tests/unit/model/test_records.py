"""model: records are frozen, and every record survives to_dict/from_dict (through JSON)."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from orchestrator.backends.asan import log as asan_log
from orchestrator.model import (
    Artifact,
    Attempt,
    Build,
    BuildKind,
    BuildSpec,
    Case,
    CaseKind,
    Checker,
    Expectations,
    Experiment,
    Outcome,
    ParseResult,
    PatchRecord,
    Run,
    SourceKind,
    SourceSpec,
    SourceTree,
    TargetPattern,
    Variant,
)

UAF = Path(__file__).resolve().parents[2] / "fixtures" / "asan" / "uaf.log"


def _experiment() -> Experiment:
    return Experiment(
        name="x",
        source=SourceSpec(SourceKind.GIT, "/repo", "v1", "ext"),
        variants=(
            Variant("patched", BuildSpec(BuildKind.JIT, flags=("-O1",))),
            Variant(
                "rebuilt",
                BuildSpec(BuildKind.COMMAND, command=("make",), env=(("A", "1"),)),
                patches=(Path("/p/a.patch"),),
                source=SourceSpec(SourceKind.PATH, "/src"),
            ),
        ),
        runs=(
            Run("plain", Checker.NONE),
            Run(
                "memcheck",
                Checker.MEMCHECK,
                ("--padding", "512"),
                (("PYTORCH_NO_CUDA_MEMORY_CACHING", "1"),),
                4,
                60.0,
            ),
        ),
        cases=(
            Case("rng", CaseKind.PYTEST, ("/t/test_rng.py::test_a",), "not slow"),
            Case("bug-8", CaseKind.COMMAND, command=("./bug", "8")),
        ),
        repeats=2,
        expect=Expectations(
            ("rebuilt",),
            "patched",
            1,
            (
                TargetPattern(checker="memcheck", size=8),
                TargetPattern(outcome=Outcome.FAILED, case="rng"),
            ),
        ),
        config=Path("/c/x.yaml"),
    )


def _attempt() -> Attempt:
    with open(UAF) as lines:
        parsed = asan_log.parse(lines)
    return Attempt(
        "rebuilt",
        "memcheck",
        "rng",
        0,
        Checker.ASAN,
        "cpu",
        ("python", "-m"),
        (("LD_PRELOAD", "/lib/libasan.so"),),
        0,
        False,
        1.5,
        Outcome.PASSED,
        Path("/b/log"),
        None,
        parsed,
    )


@pytest.mark.parametrize(
    "record",
    [
        _experiment(),
        _attempt(),
        SourceTree(
            "rebuilt",
            Path("/s"),
            "ab" * 32,
            SourceSpec(SourceKind.PATH, "/src"),
            "",
            (PatchRecord(Path("/p/a.patch"), "cd" * 32),),
        ),
        Build("rebuilt", BuildKind.WHEEL, True, "key", Path("/b"), (Artifact("q.so", "ef", 10),)),
        ParseResult(),
    ],
    ids=lambda r: type(r).__name__,
)
def test_round_trip_through_json(record) -> None:
    data = json.loads(json.dumps(record.to_dict()))
    assert type(record).from_dict(data) == record


def test_records_are_frozen_and_hashable() -> None:
    experiment = _experiment()
    with pytest.raises(dataclasses.FrozenInstanceError):
        experiment.name = "y"  # type: ignore[misc]
    hash(experiment)
    hash(_attempt())


def test_unknown_keys_are_refused() -> None:
    with pytest.raises(ValueError, match="unknown keys"):
        Run.from_dict({"name": "a", "checker": "none", "colour": "red"})


def test_a_bundle_written_before_findings_were_folded_still_reads() -> None:
    """Bundles before `Finding.count` kept every record: each finding counts once."""
    old = {"checker": "memcheck", "kind": "invalid-access", "access": "read", "size": 8}
    parse = ParseResult.from_dict({"findings": [old, old], "summary_count": 2, "complete": True})
    assert [f.count for f in parse.findings] == [1, 1] and parse.records == 2
    assert parse.conclusive


def test_experiment_helpers() -> None:
    e = _experiment()
    plain, memcheck = e.runs
    assert (e.repeats_for(plain), e.repeats_for(memcheck)) == (2, 4)
    assert (e.timeout_for(plain), e.timeout_for(memcheck)) == (900.0, 60.0)
    assert e.source_for(e.variant("patched")) == e.source
    assert e.source_for(e.variant("rebuilt")).location == "/src"
    assert e.run("memcheck") is memcheck


def test_target_pattern_applies_to() -> None:
    plain, memcheck = Run("plain", Checker.NONE), Run("memcheck", Checker.MEMCHECK)
    sig, out = TargetPattern(kind="x"), TargetPattern(outcome=Outcome.FAILED)
    assert sig.applies_to(memcheck) and not sig.applies_to(plain)
    assert out.applies_to(plain) and not out.applies_to(memcheck)
    assert TargetPattern(kind="x", run="plain").applies_to(plain)


def test_attempt_conclusiveness() -> None:
    good = _attempt()
    assert good.conclusive and len(good.findings) == 1
    assert dataclasses.replace(good, timed_out=True).inconclusive_reason == "timed out"
    assert "no checker log" in dataclasses.replace(good, parse=None).inconclusive_reason
    cut = dataclasses.replace(good, parse=ParseResult(complete=False))
    assert "no end-of-run summary" in cut.inconclusive_reason
    plain = dataclasses.replace(good, checker=Checker.NONE, parse=None)
    assert plain.conclusive and plain.findings == ()
    assert dataclasses.replace(good, error="build failed").inconclusive_reason == "build failed"
