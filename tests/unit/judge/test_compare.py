"""compare: pinned-release controls side by side, from a real ASan bundle of the C
program (two controls built two ways, one fix), and from that bundle's records altered
to make the controls disagree or the fix fall short."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from typer.testing import CliRunner

from orchestrator import bundle, cli
from orchestrator.judge.compare import compare
from orchestrator.model import ParseResult
from unit.judge import test_causality as test_judge

ROOT = Path(__file__).resolve().parents[3]
CONFIG = ROOT / "tests" / "fixtures" / "e2e" / "c-oob-pinned.yaml"


@pytest.fixture(scope="module")
def pinned(tmp_path_factory: pytest.TempPathFactory, run_asan) -> Path:
    tmp = tmp_path_factory.mktemp("pinned")
    done = run_asan(CONFIG, tmp / "out", tmp / "cache", cwd=tmp)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return tmp / "out"


def records(path: Path):
    r = bundle.records(bundle.read(path)[0])
    return r.experiment, r.sources, r.builds, r.attempts


def test_the_controls_agree_and_the_fix_removes_what_they_share(pinned: Path) -> None:
    c = compare(*records(pinned))
    assert (c.controls, c.fix) == (("rebuilt", "installed"), "patched")
    assert c.agree and c.removes and c.remaining == () and c.inconclusive == ()
    assert c.shared == ("memcheck: asan heap-buffer-overflow read size 4 in sum",)
    ids = {i.variant: i for i in c.identities}
    assert ids["rebuilt"].source_digest == ids["installed"].source_digest
    assert ids["rebuilt"].source_digest != ids["patched"].source_digest
    # built two ways from one source: two different binaries, both recorded
    assert ids["rebuilt"].binaries != ids["installed"].binaries
    assert [p.split()[0] for p in ids["patched"].patches] == ["fix-oob.patch"]
    assert {(r.run, r.node) for r in c.nodes} == {("plain", "sum"), ("memcheck", "sum")}
    sets = {s.variant: s.signatures for s in c.signatures}
    assert sets["patched"] == () and sets["rebuilt"] == sets["installed"]
    assert "agree" in c.statements[0] and "same source" in c.statements[0]
    assert c.statements[1] == "The fix (patched) removes all 1 item(s) the controls share."


def _without_findings(attempts, variant: str):
    return tuple(
        dataclasses.replace(a, parse=ParseResult((), 0, 0, True))
        if a.variant == variant and a.findings
        else a
        for a in attempts
    )


def test_controls_that_disagree_are_said_to(pinned: Path) -> None:
    experiment, sources, builds, attempts = records(pinned)
    c = compare(experiment, sources, builds, _without_findings(attempts, "installed"))
    assert not c.agree
    assert c.disagreements == (
        "memcheck: asan heap-buffer-overflow read size 4 in sum (rebuilt only)",
    )
    assert "disagree in 1 item(s)" in c.statements[0]
    assert c.shared == () and not c.removes


def test_a_fix_that_keeps_the_shared_signature(pinned: Path) -> None:
    experiment, sources, builds, attempts = records(pinned)
    control = next(a for a in attempts if a.variant == "rebuilt" and a.findings)
    leaky = tuple(
        dataclasses.replace(a, parse=control.parse)
        if a.variant == "patched" and a.run == "memcheck"
        else a
        for a in attempts
    )
    c = compare(experiment, sources, builds, leaky)
    assert c.agree and not c.removes and len(c.remaining) == 1
    assert c.statements[-1].startswith("The fix (patched) does not remove what the controls share")


def test_the_compare_command_from_a_bundle(pinned: Path) -> None:
    result = CliRunner().invoke(cli.app, ["compare", str(CONFIG), "--from", str(pinned)])
    assert result.exit_code == cli.ExitCode.PASS, result.output
    text = " ".join(result.output.split())
    assert "The controls (rebuilt, installed) agree" in text
    assert "tree/pick" in text and "fix-oob.patch" in text
    bad = CliRunner().invoke(cli.app, ["compare", str(CONFIG), "--from", str(pinned.parent)])
    assert bad.exit_code == cli.ExitCode.USAGE


def test_signature_counts_are_records_when_a_parser_folded_findings() -> None:
    folded = dataclasses.replace(test_judge.OTHER, count=500)
    rows = [
        dataclasses.replace(a, parse=ParseResult((folded, test_judge.OTHER), None, 0, True))
        if a.variant == "rebuilt" and a.run == "memcheck" and a.repeat == 0
        else a
        for a in test_judge.attempts()
    ]
    result = compare(test_judge.experiment(), [], [], rows)
    (rebuilt,) = [s for s in result.signatures if s.variant == "rebuilt" and s.run == "memcheck"]
    assert ("memcheck invalid-access global write size 4 in other", 501) in rebuilt.signatures
