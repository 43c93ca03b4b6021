"""probe: what a probe runs (one variant, the watched runs and cases) and how its
attempts become GOOD / BAD / SKIP: the target signature in k of N, not any error."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from orchestrator import judge
from orchestrator.bisect import evaluator
from orchestrator.bisect.state import Mark
from orchestrator.errors import CsorchError
from orchestrator.model import (
    Attempt,
    Build,
    BuildKind,
    BuildSpec,
    Case,
    CaseKind,
    Checker,
    Expectations,
    Experiment,
    Finding,
    Frame,
    SourceKind,
    SourceSpec,
    TargetPattern,
    Variant,
    Verdict,
)
from orchestrator.run import runner
from tests import factories

ASAN_TARGET = TargetPattern(checker="asan", kind="heap-use-after-free", frame="*nvfp4*",
                            case="rng-unfused")  # fmt: skip
MEMCHECK_TARGET = TargetPattern(checker="memcheck", kind="invalid-access", frame="*nvfp4*",
                                case="rng-unfused")  # fmt: skip
UAF = Finding(
    Checker.ASAN, "heap-use-after-free", "read", 8,
    frames=(Frame("quantize_operand", "csrc/cpu/nvfp4.cpp", 88),), address="6030",
)  # fmt: skip
OTHER = Finding(
    Checker.ASAN, "heap-buffer-overflow", "write", 4,
    frames=(Frame("swizzle", "csrc/cpu/mxfp8_swizzle.cpp", 12),),
)  # fmt: skip


def experiment(repeats: int = 3, min_hits: int | None = 2) -> Experiment:
    jit = BuildSpec(BuildKind.JIT, description="qext/build.py")
    return factories.experiment(
        name="rng",
        source="/src/ext",
        variants=(
            Variant("patched", jit),
            Variant("rebuilt", jit, patches=(Path("/c/rng.patch"),)),
        ),
        fix="patched",
        controls=("rebuilt",),
        runs=("plain", "memcheck", "racecheck"),
        cases=(
            Case("rng-unfused", CaseKind.PYTEST, ("/t/test_rng.py",)),
            Case("rng-fused", CaseKind.PYTEST, ("/t/test_rng.py",)),
        ),
        repeats=repeats,
        min_hits=min_hits,
        targets=(ASAN_TARGET, MEMCHECK_TARGET),
    )


def test_a_probe_runs_one_variant_and_only_what_a_target_watches() -> None:
    subj = evaluator.subject(experiment(), None, "asan")
    e = subj.experiment
    assert subj.variant == "patched"  # the only variant without patches
    assert [v.name for v in e.variants] == ["patched"] and e.expect is None
    # under ASan: memcheck (ASan stands in); plain has no signature target, racecheck
    # no CPU stand-in; the fused case no target
    assert [r.name for r in e.runs] == ["memcheck"]
    assert [c.name for c in e.cases] == ["rng-unfused"]
    assert e.source == SourceSpec(SourceKind.PATH, "/src/ext")
    on_gpu = evaluator.subject(experiment(), None, "compute-sanitizer").experiment
    assert [r.name for r in on_gpu.runs] == ["memcheck"]


def test_a_probe_needs_a_target_this_backend_can_see() -> None:
    e = experiment()
    no_target = replace(e, expect=Expectations(("rebuilt",), "patched"))
    with pytest.raises(CsorchError, match="needs expect.target"):
        evaluator.subject(no_target, None, "asan")
    gpu_only = replace(e, expect=Expectations(("rebuilt",), "patched", None, (MEMCHECK_TARGET,)))
    with pytest.raises(CsorchError, match="no run of rng has a target under the asan backend"):
        evaluator.subject(gpu_only, None, "asan")


def test_which_variant() -> None:
    e = experiment()
    assert evaluator.pick_variant(e, "rebuilt").name == "rebuilt"
    with pytest.raises(CsorchError, match="no variant 'nope'"):
        evaluator.pick_variant(e, "nope")
    other = Variant("other", e.variants[1].build, (Path("/p"),))
    both_patched = replace(e, variants=(e.variants[1], other))
    with pytest.raises(CsorchError, match="--variant"):
        evaluator.pick_variant(both_patched, None)


def attempt(repeat: int, *findings: Finding, complete: bool = True, case="rng-unfused") -> Attempt:
    return factories.attempt("patched", "memcheck", case, repeat, *findings, complete=complete)


def decide(attempts: list[Attempt], *, repeats=3, min_hits=2, built=True, log="", tmp=None):
    subj = evaluator.subject(experiment(repeats, min_hits), None, "asan")
    build = Build("patched", BuildKind.JIT, ok=built, error="" if built else log[1],
                  log=Path("logs/build/patched.log") if not built else None)  # fmt: skip
    if not built and tmp is not None:
        (tmp / "logs" / "build").mkdir(parents=True)
        (tmp / "logs" / "build" / "patched.log").write_text(log[0])
    result = runner.RunResult(
        subj.experiment, tmp or Path("/nowhere"), "asan", (), (build,), tuple(attempts), (),
        judge.Judgement(Verdict.INCONCLUSIVE, ()), (),
    )  # fmt: skip
    return evaluator.decide(subj, result)


@pytest.mark.parametrize(
    ("per_repeat", "mark", "words"),
    [
        ([[UAF], [UAF], [UAF]], Mark.BAD, "the target in 3 of 3 repeats of memcheck"),
        ([[UAF], [], [UAF]], Mark.BAD, "in 2 of 3"),  # k = 2
        ([[], [], []], Mark.GOOD, "no target in 3 repeat(s) of memcheck"),
        ([[OTHER], [OTHER], []], Mark.GOOD, "no target"),  # another finding is not the target
        ([[UAF], [], []], Mark.SKIP, "flaky: the target in 1 of 3 repeats of memcheck, 2 needed"),
    ],
)
def test_the_target_in_k_of_n(per_repeat, mark, words) -> None:
    got, reason, hits = decide([attempt(r, *f) for r, f in enumerate(per_repeat)])
    assert got is mark and words in reason
    assert len(hits) == 1 and hits[0].repeats == 3


def test_without_min_hits_every_repeat_must_show_it() -> None:
    got, reason, _ = decide([attempt(0, UAF), attempt(1, UAF), attempt(2)], min_hits=None)
    assert got is Mark.SKIP and "3 needed" in reason


def test_absence_counts_only_from_conclusive_attempts() -> None:
    got, reason, _ = decide([attempt(0), attempt(1, complete=False), attempt(2)])
    assert got is Mark.SKIP and reason.startswith("inconclusive: case rng-unfused:")
    # but a printed finding was found: a truncated log with k hits is BAD
    got, _, _ = decide([attempt(0, UAF), attempt(1, UAF, complete=False), attempt(2)])
    assert got is Mark.BAD
    missing = decide([attempt(0), attempt(1)])  # repeat 2 never ran
    assert missing[0] is Mark.SKIP and "no attempt of case rng-unfused" in missing[1]


def test_a_tree_that_does_not_build_is_a_skip_with_the_compiler_error(tmp_path: Path) -> None:
    log = (
        "[1/9] c++ ... tensor.cpp\n"
        "/w/run-1/ext/csrc/common/tensor.cpp:29:1: error: expected unqualified-id before 'this'\n"
        "ninja: build stopped: subcommand failed.\n",
        "build of variant 'patched' failed: `python build.py ...` exited 1; full log: x\n    ...",
    )
    got, reason, hits = decide([], built=False, log=log, tmp=tmp_path)
    assert got is Mark.SKIP and hits == ()
    assert reason == (
        "untestable: the build failed: tensor.cpp:29: error: expected unqualified-id before 'this'"
    )
    patch = ("", "patch /c/x.patch does not apply (nvfp4.cpp, hunk #1 (@@ -97,10 @@))")
    got, reason, _ = decide([], built=False, log=patch, tmp=tmp_path / "p")
    assert got is Mark.SKIP and reason == "untestable: " + patch[1]
