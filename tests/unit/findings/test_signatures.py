"""findings: normalization, signatures, grouping, fingerprints, target matching."""

from __future__ import annotations

from pathlib import Path

import pytest

from orchestrator.backends.asan import log as asan_log
from orchestrator.findings.signatures import (
    fingerprint,
    group,
    is_noise,
    matches,
    normalize_frame,
    normalize_function,
    signature,
    tolerate,
    total,
)
from orchestrator.model import Checker, Finding, Frame, Signature, TargetPattern
from tests import factories

ASAN_LOGS = Path(__file__).resolve().parents[2] / "fixtures" / "asan"


@pytest.mark.parametrize(
    ("raw", "normalized"),
    [
        ("main", "main"),
        ("kernel(float *, int)+0xb0", "kernel"),
        ("void qext::nvfp4_kernel<float, 4>(const float *, int)", "qext::nvfp4_kernel<float, 4>"),
        ("std::vector<int>::size() const", "std::vector<int>::size"),
        ("foo(int) [clone .constprop.0]", "foo"),
        ("operator new(unsigned long)", "operator new"),
        ("Functor::operator()(int)", "Functor::operator()"),
        ("<module>", "<module>"),
        ("f(void (*)(int))", "f"),
    ],
)
def test_normalize_function(raw: str, normalized: str) -> None:
    assert normalize_function(raw) == normalized


def test_normalize_frame_drops_lines_and_directories() -> None:
    assert (
        normalize_frame(Frame("quantize(float const*)", "/scratch/a/bug.cpp", 11))
        == "quantize (bug.cpp)"
    )
    assert normalize_frame(Frame("", "", None, "/lib/libffi.so.8", "0x1")) == "libffi.so.8"
    assert normalize_frame(Frame()) == "?"


def test_noise_frames() -> None:
    assert is_noise(Frame("__interceptor_free", "asan_malloc_linux.cpp", 52))
    assert is_noise(Frame("__libc_start_call_main"))
    assert is_noise(Frame("cudaMalloc", "", None, "/cuda/lib64/libcudart.so.13"))
    assert not is_noise(Frame("consume", "uaf.c", 11))


def _finding(**changes) -> Finding:
    base = dict(
        checker=Checker.MEMCHECK,
        space="global",
        frames=(Frame("k(float *)", "/a/k.cu", 41, "", "b0"),),
        thread="0,0,0",
        block="8,0,0",
        address="7f00",
    )
    return factories.finding("invalid-access", **{**base, **changes})


def test_signature_ignores_what_changes_between_runs_and_variants() -> None:
    a = _finding()
    b = _finding(
        thread="31,0,0",
        block="2,0,0",
        address="7e08",
        frames=(Frame("k(float *)", "/other/tree/k.cu", 44, "", "c0"),),
    )
    assert signature(a) == signature(b)
    assert fingerprint(signature(a)) == fingerprint(signature(b))
    assert signature(a) != signature(_finding(access="write"))
    assert signature(a) != signature(_finding(size=4))


def test_fingerprint_is_stable_across_versions() -> None:
    sig = Signature("memcheck", "invalid-access", "read", "global", 8, "", "k", ("k (k.cu)",))
    # sha256 of the signature's compact sorted JSON; changing it (or adding a Signature
    # field) breaks every stored SARIF fingerprint: only on purpose
    assert fingerprint(sig) == "841b0b7d5ad4b85c298c4d3e4431fd74b2ea1c7fd615c134f79b6a19d6c4a10d"


def test_signature_of_a_real_asan_report_skips_runtime_frames() -> None:
    with open(ASAN_LOGS / "uaf.log") as lines:
        (finding,) = asan_log.parse(lines).findings
    sig = signature(finding)
    assert sig.function == "consume" and sig.frames == ("consume (uaf.c)", "main (uaf.c)")
    assert sig.label() == "asan heap-use-after-free read size 8 in consume"


def test_group_counts_and_orders() -> None:
    findings = [_finding(thread=str(i)) for i in range(3)] + [_finding(access="write")]
    groups = group(findings)
    assert [g.count for g in groups] == [3, 1]
    assert groups[0].example.thread == "0"
    assert groups[0].fingerprint == fingerprint(groups[0].signature)


def test_group_counts_the_records_folded_into_a_finding() -> None:
    folded = [_finding(thread="0"), _finding(thread="1", count=4000), _finding(access="write")]
    groups = group([*folded, tolerate(_finding(count=7), "supp.xml#1")])
    assert [g.count for g in groups] == [4008, 1] and total(folded) == 4002
    assert groups[0].example.thread == "0"
    assert groups[0].tolerance() == "7 of 4008: suppressed by supp.xml#1"


@pytest.mark.parametrize(
    ("pattern", "hit"),
    [
        (TargetPattern(), True),
        (TargetPattern(checker="memcheck", kind="invalid-access"), True),
        (TargetPattern(function="*k*", size=8, access="read", space="global"), True),
        (TargetPattern(frame="k (*.cu)"), True),
        (TargetPattern(checker="asan"), False),
        (TargetPattern(size=4), False),
        (TargetPattern(function="K"), False),  # globs are case-sensitive
        (TargetPattern(frame="main*"), False),
        (TargetPattern(outcome=None, kind="invalid-*"), True),
    ],
)
def test_matches(pattern: TargetPattern, hit: bool) -> None:
    assert matches(pattern, signature(_finding())) is hit


def test_a_group_says_what_tolerated_its_findings() -> None:
    frames = (Frame("__ldg(const float *)", "sm_32_intrinsics.hpp"), Frame("k(float *)", "k.cu"))
    f = Finding(Checker.MEMCHECK, "invalid-access", "read", 4, "global", frames=frames)
    marked = tolerate(f, "supp.xml#1")
    assert tolerate(marked, "allowed: x") == marked  # the first mark stays
    (all_of_them,) = group([marked, marked])
    assert all_of_them.tolerance() == "suppressed by supp.xml#1"
    assert all_of_them.skipped == ("__ldg (sm_32_intrinsics.hpp)",)
    (some,) = group([f, tolerate(f, "allowed: known (g.yaml:3)")])
    assert some.tolerance() == "1 of 2: allowed: known (g.yaml:3)"
    (none,) = group([f])
    assert none.tolerance() == "" and none.suppressed == 0
