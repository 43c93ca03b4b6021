"""The run pipeline's fast tier: every stage of `run_experiment` (plan, sources, a
`command` build of `sh -c`, the local executor, the journal, the judge, the bundle) over a
backend that reads back recorded parses of real captured ASan logs (tests/fakes.py), so
that no compiler and no checker runs. The real builds and checkers: test_runner.py and
tests/e2e."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from orchestrator import bundle
from orchestrator.model import BuildKind, BuildSpec, Case, CaseKind, TargetPattern, Variant, Verdict
from orchestrator.run import runner
from orchestrator.run.events import Listener
from orchestrator.run.options import Options
from tests import factories, fakes

pytestmark = pytest.mark.process  # a command build and command cases (`sh -c`): children

TARGET = TargetPattern(checker="asan", kind="heap-use-after-free")


class Heard(Listener):
    def __init__(self) -> None:
        self.calls: list[str] = []

    def planned(self, variants, jobs):
        self.calls.append(f"planned {','.join(variants)} {jobs}")

    def build_finished(self, build):
        self.calls.append(f"built {build.variant} {build.ok}")

    def attempt_started(self, job):
        self.calls.append(f"started {job.variant}/{job.run}")

    def attempt_finished(self, attempt):
        self.calls.append(f"ran {attempt.variant}/{attempt.run} {attempt.outcome.value}")

    def attempt_placed(self, job, phase, node):
        self.calls.append(f"placed {phase}")  # a queue's phases: never for local attempts

    def resumed(self, kept, dropped):
        self.calls.append(f"resumed {kept} {dropped}")


def experiment(tmp_path: Path, *, fixed_build: str = "true", repeats: int = 2, prog="exit 0"):
    source = tmp_path / "src"
    source.mkdir(exist_ok=True)
    (source / "prog.sh").write_text(prog + "\n")

    def variant(name: str, command: str) -> Variant:
        return Variant(name, BuildSpec(BuildKind.COMMAND, command=("sh", "-c", command)))

    return factories.experiment(
        source=str(source),
        variants=(variant("fixed", fixed_build), variant("control", "true")),
        cases=(Case("prog", CaseKind.COMMAND, command=("sh", "prog.sh")),),
        repeats=repeats,
        targets=(TARGET,),
    )


def options(tmp_path: Path, **changes) -> Options:
    base = Options(
        backend=fakes.NAME,
        out=tmp_path / "out",
        cache=tmp_path / "cache",
        work=tmp_path / "work",
        jobs=2,
    )
    return dataclasses.replace(base, **changes)


def test_a_fix_that_removes_the_recorded_fault_is_causal(tmp_path: Path, monkeypatch) -> None:
    facts = fakes.install(monkeypatch, control=fakes.captured("uaf"))
    heard = Heard()
    result = runner.run_experiment(experiment(tmp_path), options(tmp_path), facts, heard)
    assert result.judgement.verdict is Verdict.PASS, result.judgement.reasons
    assert len(result.attempts) == 8 and all(a.conclusive for a in result.attempts)
    control = [a for a in result.attempts if (a.variant, a.run) == ("control", "memcheck")]
    assert {f.kind for a in control for f in a.findings} == {"heap-use-after-free"}
    # the backend wrapped each checker launch with its channel beside the attempt's log
    assert (
        sorted(Path(w).name for w in fakes.Recorded.wraps)
        == ["r0.launch0.checker"] * 2 + ["r1.launch0.checker"] * 2
    )
    # events: planned first, each build before its attempts, no queue phases locally
    assert heard.calls[0] == "planned fixed,control 8"
    assert not [c for c in heard.calls if c.startswith("placed")]
    for v in ("fixed", "control"):
        built = heard.calls.index(f"built {v} True")
        assert all(i > built for i, c in enumerate(heard.calls) if c.startswith(f"started {v}/"))
    assert heard.calls.count("started fixed/memcheck") == 2
    # the bundle: complete, the backend's own record, verified by its re-derivation
    results, manifest = bundle.read(result.bundle)
    assert results["complete"] and results["verdict"] == "pass"
    assert results["backend"]["name"] == fakes.NAME
    assert results["backend"]["recorded"] == "control"


def test_a_fix_that_shows_the_fault_fails(tmp_path: Path, monkeypatch) -> None:
    uaf = fakes.captured("uaf")
    facts = fakes.install(monkeypatch, control=uaf, fixed=uaf)
    result = runner.run_experiment(experiment(tmp_path), options(tmp_path), facts)
    assert result.judgement.verdict is Verdict.FAIL


def test_a_variant_that_does_not_build_runs_nothing_and_is_inconclusive(
    tmp_path: Path, monkeypatch
) -> None:
    facts = fakes.install(monkeypatch, control=fakes.captured("uaf"))
    e = experiment(tmp_path, fixed_build="echo broken >&2; exit 3")
    result = runner.run_experiment(e, options(tmp_path), facts)
    assert result.judgement.verdict is Verdict.INCONCLUSIVE
    (failed,) = [b for b in result.builds if not b.ok]
    assert failed.variant == "fixed"
    fixed = [a for a in result.attempts if a.variant == "fixed"]
    assert len(fixed) == 4 and all(a.error == "variant fixed did not build" for a in fixed)
    assert all(a.conclusive for a in result.attempts if a.variant == "control")
    # only the control's checker launches were wrapped: a failed build starts nothing
    assert len(fakes.Recorded.wraps) == 2


def test_a_resumed_run_keeps_every_journaled_attempt(tmp_path: Path, monkeypatch) -> None:
    facts = fakes.install(monkeypatch, control=fakes.captured("uaf"))
    e = experiment(tmp_path)
    first = runner.run_experiment(e, options(tmp_path), facts)
    wrapped = len(fakes.Recorded.wraps)
    heard = Heard()
    again = runner.run_experiment(e, options(tmp_path, resume=True), facts, heard)
    assert len(fakes.Recorded.wraps) == wrapped  # nothing ran again
    assert "resumed 8 0" in heard.calls
    assert again.judgement == first.judgement
    assert [a.to_dict() for a in again.attempts] == [a.to_dict() for a in first.attempts]


def test_a_stop_ends_the_run_with_an_incomplete_bundle(tmp_path: Path, monkeypatch) -> None:
    import threading

    facts = fakes.install(monkeypatch, control=fakes.captured("uaf"))
    stop = threading.Event()
    stop.set()  # as a gate's Ctrl-C: before any attempt
    with pytest.raises(KeyboardInterrupt):
        runner.run_experiment(experiment(tmp_path), options(tmp_path, stop=stop), facts)
    results, _ = bundle.read(tmp_path / "out")
    assert not results["complete"] and results["interrupted"]


def test_a_stop_mid_run_ends_it_with_attempts_still_queued(tmp_path: Path, monkeypatch) -> None:
    """Attempts the pool cancels at its shutdown never wake a waiter (concurrent.futures
    notifies them only when a worker takes the item): the executor must not wait on them."""
    import threading

    facts = fakes.install(monkeypatch, control=fakes.captured("uaf"))
    stop = threading.Event()

    class StopAtFirst(Listener):
        def attempt_finished(self, attempt):
            stop.set()  # as Ctrl-C in a gate, with most attempts still queued

    opts = options(tmp_path, stop=stop, jobs=1)
    outcome: list[BaseException] = []

    def run() -> None:
        try:
            e = experiment(tmp_path, repeats=6, prog="sleep 0.5")  # the queue outlasts the stop
            runner.run_experiment(e, opts, facts, StopAtFirst())
        except BaseException as exc:  # noqa: BLE001 (the test looks at what ended it)
            outcome.append(exc)

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join(timeout=60)
    assert not worker.is_alive(), "the run did not end after its stop"
    assert outcome and isinstance(outcome[0], KeyboardInterrupt)
    results, _ = bundle.read(tmp_path / "out")
    assert not results["complete"] and len(results["attempts"]) < 24
