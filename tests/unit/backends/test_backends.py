"""backends: the protocol, `--backend auto`, and what each backend can serve."""

from __future__ import annotations

import pytest

from orchestrator.backends import Asan, ComputeSanitizer, NoChecker, choose, serves
from orchestrator.backends.base import CASE_BEGIN_RE, CASE_END_RE, Backend
from orchestrator.errors import CheckerUnavailable
from orchestrator.model import Checker, ToolInfo

CS = ToolInfo("compute-sanitizer", "/cuda/bin/compute-sanitizer", "2025.3.1.0")
ASAN = ToolInfo("asan", "/lib/libasan.so.8", "gcc 12.2.0")
NO_CS = CheckerUnavailable("compute-sanitizer", "not found on PATH")
NO_ASAN = CheckerUnavailable("asan", "no libasan")


def test_every_backend_meets_the_protocol() -> None:
    for backend in (ComputeSanitizer("cs"), Asan("/lib/libasan.so"), NoChecker()):
        assert isinstance(backend, Backend)


@pytest.mark.parametrize(
    ("requested", "gpus", "sanitizer", "asan", "picked", "why"),
    [
        ("auto", 2, CS, ASAN, "compute-sanitizer", "2 GPU(s) and compute-sanitizer 2025.3.1.0"),
        ("auto", 0, CS, ASAN, "asan", "no GPU is visible"),
        ("auto", 1, NO_CS, ASAN, "asan", "compute-sanitizer missing (not found on PATH)"),
        ("asan", 4, CS, ASAN, "asan", "asked for"),
        ("compute-sanitizer", 1, CS, NO_ASAN, "compute-sanitizer", "asked for"),
    ],
)
def test_choose(requested, gpus, sanitizer, asan, picked, why) -> None:
    choice = choose(requested, gpus=gpus, sanitizer=sanitizer, asan=asan)
    assert choice.backend == picked and why in choice.reason


@pytest.mark.parametrize(
    ("requested", "gpus", "sanitizer", "asan", "message"),
    [
        ("compute-sanitizer", 1, NO_CS, ASAN, "not found on PATH"),
        ("compute-sanitizer", 0, CS, ASAN, "no GPU is visible"),
        ("asan", 0, CS, NO_ASAN, "no libasan"),
        ("auto", 0, NO_CS, NO_ASAN, "ASan is unavailable too"),
    ],
)
def test_missing_checker_asked_for_is_an_error_not_a_skip(
    requested, gpus, sanitizer, asan, message
) -> None:
    with pytest.raises(CheckerUnavailable, match=message):
        choose(requested, gpus=gpus, sanitizer=sanitizer, asan=asan)


def test_unknown_backend_name() -> None:
    with pytest.raises(ValueError, match="auto"):
        choose("valgrind", gpus=0, sanitizer=CS, asan=ASAN)


def test_serves() -> None:
    assert serves("asan", Checker.MEMCHECK) == ""
    assert serves("asan", Checker.NONE) == ""
    assert "compute-sanitizer" in serves("asan", Checker.RACECHECK)
    assert all(serves("compute-sanitizer", c) == "" for c in Checker if c is not Checker.ASAN)


def test_case_marker_grammar_matches_the_plugin() -> None:
    case_markers = pytest.importorskip("orchestrator.markers.plugin")
    assert (
        CASE_BEGIN_RE.match(f"{case_markers.BEGIN} t.py::test_a[x y]")["case"]
        == "t.py::test_a[x y]"
    )
    assert CASE_END_RE.match(f"{case_markers.END} t.py::test_a")


def test_none_backend_wraps_and_proves_nothing() -> None:
    backend = NoChecker()
    assert backend.wrap(["a", "b"]).argv == ("a", "b")
    assert backend.parse(["anything"]).conclusive
    assert not backend.liveness(backend.parse([])).live
