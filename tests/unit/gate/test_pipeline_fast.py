"""The gate pipeline's fast tier: `gate.pipeline.run` over two experiment configs, run
together into their bundles, decided and written, over a backend that reads back
recorded parses of real captured ASan logs (tests/fakes.py): no compiler, no checker.
The host's probe is the one part replaced (the facts `fakes.install` makes); the real
gates: test_pipeline.py and tests/e2e."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from orchestrator import backends
from orchestrator.gate import pipeline
from orchestrator.gate.manifest import GATE
from orchestrator.model import Verdict
from orchestrator.run import options
from orchestrator.run.events import Listener
from tests import fakes

pytestmark = pytest.mark.process  # command builds and cases (`sh -c`): children

CONFIG = """\
name: {name}
source: src
variants:
  - {{name: {fix}, build: {{kind: command, command: [sh, -c, "true"]}}}}
  - {{name: {control}, build: {{kind: command, command: [sh, -c, "true"]}}}}
runs:
  - {{name: plain, checker: none}}
  - {{name: memcheck, checker: memcheck}}
cases:
  - {{name: prog, command: [sh, prog.sh]}}
repeats: 2
expect:
  controls: [{control}]
  fix: {fix}
  target: {{checker: asan, kind: heap-use-after-free}}
"""


def configs(tmp_path: Path) -> tuple[Path, Path]:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "prog.sh").write_text("exit 0\n")
    made = []
    for name, fix, control in (("one", "fixed", "control"), ("two", "fixed2", "control2")):
        path = tmp_path / f"{name}.yaml"
        path.write_text(CONFIG.format(name=name, fix=fix, control=control))
        made.append(path)
    return made[0], made[1]


class Heard(Listener):
    def __init__(self) -> None:
        self.chosen: list[str] = []
        self.experiments: list[str] = []

    def backend(self, choice):
        self.chosen.append(choice.backend)

    def experiment(self, experiment):
        self.experiments.append(experiment.name)
        return self


@pytest.fixture
def recorded(monkeypatch: pytest.MonkeyPatch):
    """Install the recorded backend; the host's probe answers with its facts."""

    def install(**by_variant):
        facts = fakes.install(monkeypatch, **by_variant)
        choice = backends.Choice(fakes.NAME, "recorded parses")
        monkeypatch.setattr(options, "choose_backend", lambda requested, python="": (choice, facts))

    return install


@pytest.mark.parametrize("together", [True, False])
def test_two_experiments_decide_one_gate(tmp_path: Path, recorded, together: bool) -> None:
    uaf = fakes.captured("uaf")
    recorded(control=uaf, control2=uaf, fixed2=uaf)  # the second "fix" keeps the fault
    settings = pipeline.Settings(
        backend=fakes.NAME, cache=tmp_path / "cache", jobs=2, together=together
    )
    heard = Heard()
    request = pipeline.Request(configs(tmp_path), settings, out=tmp_path / "gate")
    done = pipeline.run(request, listener=heard)
    assert heard.chosen == [fakes.NAME] and sorted(heard.experiments) == ["one", "two"]
    assert [(e.name, e.verdict) for e in done.result.experiments] == [
        ("one", Verdict.PASS),
        ("two", Verdict.FAIL),
    ]
    assert done.result.verdict is Verdict.FAIL
    written = json.loads((tmp_path / "gate" / GATE).read_text())
    assert written["verdict"] == "fail"
    for name in ("one", "two"):  # each bundle complete, as if run alone
        results = json.loads((tmp_path / "gate" / name / "results.json").read_text())
        assert results["complete"] and results["backend"]["name"] == fakes.NAME


def test_a_gate_with_no_positive_control_caught_is_inconclusive(tmp_path: Path, recorded) -> None:
    recorded()  # nothing recorded: every log is clean, the checker's liveness unproven
    settings = pipeline.Settings(backend=fakes.NAME, cache=tmp_path / "cache", jobs=2)
    request = pipeline.Request(configs(tmp_path), settings, out=tmp_path / "gate")
    done = pipeline.run(request)
    assert done.result.verdict is Verdict.INCONCLUSIVE
