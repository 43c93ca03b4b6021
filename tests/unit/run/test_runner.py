"""workflow: the run pipeline on the tiny C subject (real builds, real ASan): a variant
whose patch does not apply is recorded and the others still run; events and bundle."""

from __future__ import annotations

import dataclasses
import shutil
import sys
import time
from pathlib import Path

import pytest

from orchestrator import backends, bundle, host, report
from orchestrator.config.experiment import load_experiment
from orchestrator.errors import HostMismatch
from orchestrator.model import Checker, Outcome, Verdict
from orchestrator.model.job import Fanout
from orchestrator.run import runner as workflow
from orchestrator.run.options import Options

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "e2e"
STALE = """\
--- a/pick.c
+++ b/pick.c
@@ -8,1 +8,1 @@
-    for (int i = 0; i < n - 1; ++i)
+    for (int i = 0; i < n; ++i)
"""

CUDA_VERSION_PY = (
    "from typing import Optional\n__version__ = '2.13.0+cu130'\ncuda: Optional[str] = '13.0'\n"
)

pytestmark = [
    pytest.mark.process,  # builds and runs under ASan
    pytest.mark.skipif(shutil.which("gcc") is None, reason="needs gcc with ASan"),
]


class Recorder(workflow.Events):
    def __init__(self) -> None:
        self.calls: list[str] = []

    def planned(self, variants, jobs):
        self.calls.append(f"planned {len(variants)} {jobs}")

    def build_finished(self, build):
        self.calls.append(f"built {build.variant} {build.ok}")

    def attempt_finished(self, attempt):
        self.calls.append(f"ran {attempt.variant}")


def probe() -> host.Facts:
    return host.start(sys.executable, backends.probe_checkers)


@pytest.fixture(scope="module")
def facts() -> host.Facts:
    return probe()


def options(tmp_path: Path, **extra) -> Options:
    """ASan, two jobs, and the bundle, cache and scratch trees under `tmp_path`."""
    return Options(
        backend="asan",
        out=tmp_path / "out",
        cache=tmp_path / "cache",
        work=tmp_path / "work",
        jobs=2,
        **extra,
    )


def test_with_repeats_overrides_every_run() -> None:
    e = load_experiment(FIXTURES / "c-oob.yaml")
    e3 = workflow.with_repeats(e, 3)
    assert e3.repeats == 3 and all(e3.repeats_for(r) == 3 for r in e3.runs)
    assert workflow.with_repeats(e, None) is e


def test_a_patch_that_does_not_apply_spoils_only_its_variant(tmp_path: Path, facts) -> None:
    shutil.copytree(FIXTURES, tmp_path / "fx")
    (tmp_path / "fx" / "stale.patch").write_text(STALE)
    config = tmp_path / "fx" / "c-oob.yaml"
    config.write_text(
        config.read_text().replace(
            "  - name: control\n",
            "  - name: stale\n    patches: [stale.patch]\n"
            "    build: {kind: command, command: [make], outputs: [pick]}\n"
            "  - name: control\n",
        )
    )
    events = Recorder()
    result = workflow.run_experiment(load_experiment(config), options(tmp_path), facts, events)
    builds = {b.variant: b for b in result.builds}
    assert builds["stale"].ok is False and "stale.patch" in builds["stale"].error
    assert "pick.c" in builds["stale"].error
    assert builds["fixed"].ok and builds["control"].ok
    stale = [a for a in result.attempts if a.variant == "stale"]
    assert len(stale) == 2 and all(a.error == "variant stale did not build" for a in stale)
    control = next(a for a in result.attempts if (a.variant, a.run) == ("control", "memcheck"))
    assert control.checker is Checker.ASAN and control.outcome is Outcome.PASSED
    assert [f.kind for f in control.findings] == ["heap-buffer-overflow"]
    # the fix is still causal against its control; the broken variant is not a control
    assert result.judgement.verdict is Verdict.PASS
    assert events.calls[0] == "planned 3 6" and "built stale False" in events.calls
    assert sum(c.startswith("ran") for c in events.calls) == 6
    results, manifest = bundle.read(result.bundle)
    assert results["complete"] and results["verdict"] == "pass"
    assert {b["variant"] for b in manifest["builds"] if b["binaries"]} == {"fixed", "control"}
    assert not list((tmp_path / "work").iterdir())  # scratch trees removed


@pytest.mark.parametrize("fanout", [Fanout.REPLICATE, Fanout.SHARD])
def test_fan_out_over_devices(tmp_path: Path, facts, fanout) -> None:
    """--devices on the real pipeline: the C subject does not use the GPU, but each child
    gets its CUDA_VISIBLE_DEVICES, its own attempt and log, and the reports a column per
    device (replicate), or the work dealt over the devices (shard)."""
    experiment = workflow.with_repeats(load_experiment(FIXTURES / "c-oob.yaml"), 2)
    result = workflow.run_experiment(
        experiment, options(tmp_path, devices=("0", "1"), fanout=fanout), facts
    )
    units = 2 * 2 * 2  # variants x runs x repeats (one case)
    if fanout is Fanout.REPLICATE:
        assert len(result.attempts) == 2 * units
        for device in ("0", "1"):
            mine = [a for a in result.attempts if a.device == device]
            assert len(mine) == units
            assert all(("CUDA_VISIBLE_DEVICES", device) in a.env for a in mine)
            assert all(a.log and f"-rank{device}-gpu{device}." in a.log.name for a in mine)
            hits = [a for a in mine if (a.variant, a.run) == ("control", "memcheck")]
            assert [len(a.findings) for a in hits] == [1, 1]  # every rank shows it
    else:
        assert len(result.attempts) == units
        assert sorted(a.device for a in result.attempts) == ["0"] * 4 + ["1"] * 4
    assert len({a.log for a in result.attempts}) == len(result.attempts)
    assert all(a.conclusive for a in result.attempts)
    assert result.judgement.verdict is Verdict.PASS  # a hit on either device counts
    results, manifest = bundle.read(result.bundle)
    assert all((result.bundle / log).is_file() for log in manifest["logs"])
    text = report.render("markdown", results, manifest)
    junit = report.render("junit", results, manifest)
    if fanout is Fanout.REPLICATE:
        assert "gpu0" in text and "gpu1" in text
        assert 'classname="c-oob.control.memcheck.gpu1"' in junit


# --- the host's facts: builds on the fast ones, torch's answer joined before attempts ---

H200_UUIDS = (
    "GPU-5e2a1c9d-0000-4000-8000-000000000001",
    "GPU-5e2a1c9d-0000-4000-8000-000000000002",
)


class Clock(workflow.Events):
    """When the first build and the first attempt started (time.time, as the stamp)."""

    def __init__(self) -> None:
        self.builds: list[float] = []
        self.attempts: list[float] = []

    def build_started(self, variant):
        self.builds.append(time.time())

    def attempt_started(self, job):
        self.attempts.append(time.time())


def test_builds_start_before_torchs_answer_and_attempts_after_it(tmp_path: Path, fake_host):
    stamp = tmp_path / "import-ended"
    gpus = [("NVIDIA H200", "9.0", uuid) for uuid in H200_UUIDS]
    fake_host.torch(CUDA_VERSION_PY, gpus, import_s=3.0, stamp=stamp)
    fake_host.smi(["580.95.05, NVIDIA H200, 9.0"] * 2)
    facts = probe()
    assert facts.waited == "" and facts.fast.gpu_uuids == ()
    clock = Clock()
    result = workflow.run_experiment(
        load_experiment(FIXTURES / "c-oob.yaml"), options(tmp_path), facts, clock
    )
    assert result.judgement.verdict is Verdict.PASS
    ended = float(stamp.read_text())  # when `import torch` ended in the probe's child
    assert min(clock.builds) < ended < min(clock.attempts)
    # the bundle records torch's answer: CUDA's UUIDs, which the fast facts never hold
    _, manifest = bundle.read(result.bundle)
    assert manifest["host"]["gpu_uuids"] == list(H200_UUIDS)
    assert manifest["host"]["torch"] == "2.13.0+cu130"


def test_a_contradiction_stops_the_run_before_any_attempt(tmp_path: Path, fake_host):
    # nvidia-smi lists two GPUs, torch sees one (a MIG slice, a GPU it cannot open)
    fake_host.torch(CUDA_VERSION_PY, [("NVIDIA H200", "9.0", H200_UUIDS[0])], import_s=5.0)
    fake_host.smi(["580.95.05, NVIDIA H200, 9.0"] * 2)
    clock = Clock()
    experiment = load_experiment(FIXTURES / "c-oob.yaml")
    with pytest.raises(HostMismatch) as caught:
        workflow.run_experiment(experiment, options(tmp_path), probe(), clock)
    assert caught.value.fact == "the GPU count" and (caught.value.fast, caught.value.full) == (2, 1)
    assert clock.builds and not clock.attempts  # built on the fast facts; nothing ran
    out = tmp_path / "out"
    assert not (out / bundle.RESULTS).exists()  # nothing recorded the contradicted host
    # the builds (done in well under the 5 s of `import torch`) were keyed by facts that
    # did not hold: their entries were dropped, so a run whose facts agree builds afresh
    fake_host.torch(CUDA_VERSION_PY, [("NVIDIA H200", "9.0", u) for u in H200_UUIDS])
    same_cache = dataclasses.replace(options(tmp_path), out=tmp_path / "again")
    again = workflow.run_experiment(experiment, same_cache, probe())
    assert [b.cached for b in again.builds] == [False, False]
    assert again.judgement.verdict is Verdict.PASS


def test_the_children_share_the_cpus_among_the_jobs(tmp_path: Path, facts, monkeypatch) -> None:
    """Each child's OpenMP threads are its share of the CPUs (OMP_NUM_THREADS, recorded in
    the launch's environment): left to itself every child's torch starts a thread per
    core, and `jobs` of them at once oversubscribe the host."""
    from orchestrator.run.options import child_threads

    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    experiment = load_experiment(FIXTURES / "c-oob.yaml")
    result = workflow.run_experiment(experiment, options(tmp_path), facts)
    assert result.attempts and all(a.conclusive for a in result.attempts)
    want = str(child_threads(2))
    assert all(dict(a.env).get("OMP_NUM_THREADS") == want for a in result.attempts)
    launches = [x for a in bundle.read(result.bundle)[0]["attempts"] for x in a["launches"]]
    assert launches and all(dict(x["env"])["OMP_NUM_THREADS"] == want for x in launches)
