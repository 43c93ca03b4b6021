"""proposal: a target for a config without one, from the attempts of a run: what every
control reproduces and the fix never shows, and the block that pastes back into a
config (loaded by the real config reader)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from orchestrator import judge
from orchestrator.config.experiment import load_experiment
from orchestrator.judge.proposal import propose, target_block
from orchestrator.model import (
    Checker,
    Experiment,
    Finding,
    Frame,
    Outcome,
    TargetPattern,
    Verdict,
)
from tests import factories

UAF = Finding(
    Checker.ASAN, "heap-use-after-free", "read", 8, frames=(Frame("nvfp4_quant", "q.cpp", 9),)
)
LEAK = Finding(Checker.ASAN, "memory-leak", "", 64, frames=(Frame("operator new[]", "", 0),))


def experiment(min_hits: int | None = None, targets=()) -> Experiment:
    return factories.experiment(
        name="e",
        variants=("fix", "c1", "c2"),
        fix="fix",
        controls=("c1", "c2"),
        cases=("t",),
        min_hits=min_hits,
        targets=targets,
    )


def attempt(variant: str, repeat: int, *found: Finding, run: str = "memcheck", failed=False):
    outcome = Outcome.FAILED if failed else Outcome.PASSED
    return factories.attempt(variant, run, "t", repeat, *found, outcome=outcome)


def test_what_every_control_shows_and_the_fix_does_not() -> None:
    attempts = [
        attempt("c1", 0, UAF, LEAK),
        attempt("c1", 1, UAF, LEAK),
        attempt("c2", 0, UAF, LEAK),
        attempt("c2", 1, UAF),  # the leak in 1 of 2 repeats of c2 only
        attempt("fix", 0),
        attempt("fix", 1),
        *[
            attempt(v, r, run="plain", failed=v != "fix")
            for v in ("fix", "c1", "c2")
            for r in (0, 1)
        ],
    ]
    found = propose(experiment(), attempts)
    # the plain run's failing case is left out where a checker signature qualifies: one
    # flaky failure in the fix would make a test-outcome target FAIL
    assert found == (
        TargetPattern(
            checker="asan",
            kind="heap-use-after-free",
            access="read",
            size=8,
            function="nvfp4_quant",
        ),
    )
    # k = 1 of 2: the leak is reproduced by both controls too; its name is a literal glob
    loose = propose(experiment(min_hits=1), attempts)
    assert (
        TargetPattern(checker="asan", kind="memory-leak", size=64, function="operator new[[]]")
        in loose
    )
    # what the fix shows is never proposed; a config with targets gets no proposal
    only_outcome = propose(experiment(), [*attempts, attempt("fix", 0, UAF)])
    assert only_outcome == (TargetPattern(outcome=Outcome.FAILED, case="t"),)
    block = target_block(only_outcome)
    assert "{case: t, outcome: failed}  # a test outcome: one flaky failure" in block
    assert propose(experiment(targets=[TargetPattern(kind="x")]), attempts) == ()


def test_the_block_pastes_into_a_config_and_judges_the_same(tmp_path: Path) -> None:
    attempts = [attempt(v, r, UAF, LEAK) for v in ("c1", "c2") for r in (0, 1)]
    attempts += [attempt("fix", r) for r in (0, 1)]
    found = propose(experiment(min_hits=1), attempts)
    block = target_block(found)
    assert sorted(block.splitlines()) == [
        "  - {checker: asan, kind: heap-use-after-free, access: read, size: 8, "
        "function: nvfp4_quant}",
        '  - {checker: asan, kind: memory-leak, size: 64, function: "operator new[[]]"}',
        "target:",
    ]
    (tmp_path / "src").mkdir()
    (tmp_path / "t.py").write_text("")
    config = (
        "name: e\nsource: src\nvariants: [{name: fix, build: jit}, {name: c1, build: jit},"
        " {name: c2, build: jit}]\nruns: [{name: plain, checker: none},"
        " {name: memcheck, checker: memcheck}]\ncases: [t.py]\nrepeats: 2\n"
        "expect:\n  controls: [c1, c2]\n  fix: fix\n  min_hits: 1\n"
    )
    indented = "".join("  " + line + "\n" for line in block.splitlines())
    (tmp_path / "e.yaml").write_text(config + indented)
    loaded = load_experiment(tmp_path / "e.yaml")
    assert loaded.expect is not None and loaded.expect.targets == found
    e = dataclasses.replace(experiment(min_hits=1), expect=loaded.expect)
    judged = judge.causality(e, attempts, {})
    assert judged.verdict is Verdict.PASS and len(judged.targets) == 2
    # the leak's target matches the leak: the fix showing it fails the verdict
    leaky = judge.causality(e, [*attempts, attempt("fix", 0, LEAK)], {})
    assert leaky.verdict is Verdict.FAIL
