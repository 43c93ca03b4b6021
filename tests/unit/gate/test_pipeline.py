"""gate/pipeline: the gate run from Python over real bundles (pass, fail, inconclusive,
a truncated one, an interrupted one, a log cut short), and a real gate run under ASan;
asserted on the records `gate.run` returns and the files it writes. The CLI's own part
(exit codes, usage errors) is at the end."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from orchestrator import cli
from orchestrator.errors import CsorchError
from orchestrator.gate import pipeline
from orchestrator.model import Verdict
from orchestrator.run.events import Listener

pytestmark = pytest.mark.process  # real bundles are made by real runs

ROOT = Path(__file__).resolve().parents[3]
E2E = ROOT / "tests" / "fixtures" / "e2e"
runner = CliRunner()


def judge_again(*bundles: Path, config: Path = E2E / "c-oob.yaml", out: Path | None = None):
    request = pipeline.Request(configs=(config,), stored=bundles, out=out)
    return pipeline.run(request)


def test_stored_bundles_judged_again(cprog_bundles: dict[str, Path]) -> None:
    done = judge_again(cprog_bundles["pass"])
    assert done.result.verdict is Verdict.PASS and done.out is None
    assert [(c.checker.value, c.caught_by) for c in done.result.liveness] == [
        ("asan", ("c-oob/control",))
    ]
    assert [j.bundle for j in done.judged] == [str(cprog_bundles["pass"])]
    fail = judge_again(cprog_bundles["fail"], config=E2E / "c-oob-nofix.yaml")
    assert fail.result.verdict is Verdict.FAIL
    assert any("the fix is not causal" in r for r in fail.result.reasons)
    shaky = judge_again(cprog_bundles["inconclusive"], config=E2E / "c-oob-badpatch.yaml")
    assert shaky.result.verdict is Verdict.INCONCLUSIVE
    assert any("does not apply" in r for r in shaky.result.reasons)
    # the gate config lists c-oob; a bundle of another experiment leaves it unjudged, and
    # is itself not judged (its FAIL is not this gate's)
    other = judge_again(cprog_bundles["fail"], config=E2E / "gate-cprog.yaml")
    assert other.result.verdict is Verdict.INCONCLUSIVE
    assert "experiment c-oob: no results (not in the bundles given)" in other.result.reasons
    assert any("'c-oob-nofix', which this gate does not hold" in r for r in other.result.reasons)


def test_a_gate_is_not_green_unsandboxed_unless_the_user_accepts_it(
    cprog_bundles: dict[str, Path],
) -> None:
    passed = judge_again(cprog_bundles["pass"]).result
    none = "none: util-linux unshare is not on PATH"
    shaky = pipeline.unsandboxed(passed, none, allowed=False)
    assert shaky.verdict is Verdict.INCONCLUSIVE
    assert any("cannot sandbox" in r and "--allow-unsandboxed" in r for r in shaky.reasons)
    assert pipeline.unsandboxed(passed, none, allowed=True) == passed
    assert pipeline.unsandboxed(passed, "unshare pid+mount+net", allowed=False) == passed
    assert pipeline.unsandboxed(passed, "", allowed=False) == passed  # --from: nothing ran


def test_damaged_stored_bundles_are_inconclusive(
    cprog_bundles: dict[str, Path], tmp_path: Path
) -> None:
    truncated = shutil.copytree(cprog_bundles["pass"], tmp_path / "truncated")
    text = (truncated / "results.json").read_text()
    (truncated / "results.json").write_text(text[: len(text) // 2])
    done = judge_again(truncated)
    assert done.result.verdict is Verdict.INCONCLUSIVE and not done.judged
    assert any("cannot be read" in r and "not valid JSON" in r for r in done.result.reasons)
    interrupted = shutil.copytree(cprog_bundles["pass"], tmp_path / "interrupted")
    doc = json.loads((interrupted / "results.json").read_text())
    doc.update(complete=False, interrupted=True)
    (interrupted / "results.json").write_text(json.dumps(doc))
    done = judge_again(interrupted)
    assert done.result.verdict is Verdict.INCONCLUSIVE
    assert f"bundle {interrupted} is incomplete (interrupted)" in done.judged[0].problems
    # a log cut short after the run: the evidence no longer matches its manifest
    cut = shutil.copytree(cprog_bundles["pass"], tmp_path / "cut")
    log = next(p for p in sorted((cut / "logs").rglob("*.log")) if p.stat().st_size)
    log.write_bytes(log.read_bytes()[: log.stat().st_size // 2])
    done = judge_again(cut)
    assert done.result.verdict is Verdict.INCONCLUSIVE
    (problem,) = done.judged[0].problems
    assert "does not verify (1 problem(s)), first: log" in problem and "mismatch" in problem


def test_an_expired_allowance_turns_a_passing_gate_red(
    cprog_bundles: dict[str, Path], tmp_path: Path
) -> None:
    config = tmp_path / "gate.yaml"
    text = (
        f"name: g\nexperiments: [{E2E / 'c-oob.yaml'}]\npolicy:\n  allow:\n"
        "    - {kind: heap-use-after-free, reason: 'issue #12, fixed upstream', expires: DATE}\n"
    )
    config.write_text(text.replace("DATE", "2999-01-01"))
    done = judge_again(cprog_bundles["pass"], config=config)
    assert done.result.verdict is Verdict.PASS
    assert any("matched no finding: remove it" in u for u in done.result.unused)
    config.write_text(text.replace("DATE", "2020-01-01"))
    done = judge_again(cprog_bundles["pass"], config=config)
    assert done.result.verdict is Verdict.FAIL
    said = "gate.yaml:5) expired on 2020-01-01 (reason given: issue #12, fixed upstream)"
    assert any(said in r for r in done.result.reasons), done.result.reasons


def test_a_gate_judged_again_writes_its_directory(
    cprog_bundles: dict[str, Path], tmp_path: Path
) -> None:
    out = tmp_path / "again"
    done = judge_again(cprog_bundles["pass"], out=out, config=E2E / "gate-cprog.yaml")
    assert done.out == out and done.result.verdict is Verdict.PASS
    doc = json.loads((out / "gate.json").read_text())
    assert (doc["schema"], doc["verdict"]) == (pipeline.GATE_SCHEMA, "pass")
    # the default report from Python is the verdict alone; the CLI passes the full one
    assert (out / "report.md").read_text() == "# csorch gate: pass\n"
    assert json.loads((out / "manifest.json").read_text())["outside"]


def test_a_gate_that_cannot_be_written_says_so_with_its_decision(
    cprog_bundles: dict[str, Path], tmp_path: Path
) -> None:
    (tmp_path / "file").write_text("x")
    # an --out under a file is a usage error, found before any judging (exit 2, not 3)
    with pytest.raises(CsorchError, match="is under .*, a file"):
        judge_again(cprog_bundles["pass"], out=tmp_path / "file" / "gate")
    # one that fails only when written (gate.json is a directory) keeps the decision
    (tmp_path / "gate" / "gate.json").mkdir(parents=True)
    with pytest.raises(pipeline.NotWritten) as caught:
        judge_again(cprog_bundles["pass"], out=tmp_path / "gate")
    assert caught.value.result.verdict is Verdict.PASS and not caught.value.ran


def test_bad_requests_are_csorch_errors(tmp_path: Path) -> None:
    with pytest.raises(CsorchError, match="give a gate config"):
        pipeline.run(pipeline.Request())
    with pytest.raises(CsorchError, match="not a results bundle"):
        judge_again(tmp_path)
    with pytest.raises(CsorchError, match="holds no gate to resume"):
        pipeline.run(pipeline.Request(resume=tmp_path))
    with pytest.raises(CsorchError, match="unknown backend"):
        pipeline.run(pipeline.Request((E2E / "c-oob.yaml",), pipeline.Settings(backend="gpu")))


def test_a_gate_run_under_asan(tmp_path: Path) -> None:
    out = tmp_path / "gate"
    seen = []

    class Heard(Listener):
        def backend(self, choice) -> None:
            seen.append(choice.backend)

    settings = pipeline.Settings(backend="asan", cache=tmp_path / "cache")
    request = pipeline.Request((E2E / "gate-cprog.yaml",), settings, out=out)
    done = pipeline.run(request, listener=Heard())
    assert seen == ["asan"] and done.result.verdict is Verdict.PASS
    assert [e.name for e in done.result.experiments] == ["c-oob"]
    assert [j.bundle for j in done.judged] == [str(out / "c-oob")]
    saved = json.loads((out / pipeline.GATE_RUN).read_text())
    assert saved["backend"] == "asan" and saved["configs"] == [str(E2E / "gate-cprog.yaml")]
    # the stored gate judged again gives the same verdict
    assert judge_again(out, config=E2E / "gate-cprog.yaml").result.verdict is Verdict.PASS


# --- the CLI's part: exit codes and words ----------------------------------------------


def gate_cli(*args: str):
    result = runner.invoke(cli.app, ["gate", *args])
    # Rich wraps long lines at the runner's width: compare words, not line breaks
    return result.exit_code, " ".join(result.output.split())


def test_gate_exit_codes_and_files(cprog_bundles: dict[str, Path], tmp_path: Path) -> None:
    code, output = gate_cli(str(E2E / "c-oob.yaml"), "--from", str(cprog_bundles["pass"]))
    assert code == cli.ExitCode.PASS and "gate: PASS" in output, output
    code, _ = gate_cli(str(E2E / "c-oob-nofix.yaml"), "--from", str(cprog_bundles["fail"]))
    assert code == cli.ExitCode.FAIL
    bad = str(E2E / "c-oob-badpatch.yaml")
    code, _ = gate_cli(bad, "--from", str(cprog_bundles["inconclusive"]))
    assert code == cli.ExitCode.INCONCLUSIVE
    out = tmp_path / "g"
    gate = str(E2E / "gate-cprog.yaml")
    code, output = gate_cli(gate, "--from", str(cprog_bundles["pass"]), "--out", str(out))
    assert code == cli.ExitCode.PASS, output
    assert "## Release gate `gate-cprog`: **PASS**" in (out / "report.md").read_text()
    assert "| asan | c-oob/control |" in (out / "report.md").read_text()


def test_gate_usage_errors(tmp_path: Path) -> None:
    code, output = gate_cli(str(E2E / "c-oob.yaml"), "--from", str(tmp_path))
    assert code == cli.ExitCode.USAGE and "not a results bundle" in output
    code, output = gate_cli(str(E2E / "gate-cprog.yaml"), str(ROOT / "configs/release-gate.yaml"))
    assert code == cli.ExitCode.USAGE and "at most one gate config" in output


def test_experiments_run_together_decide_as_one_by_one(tmp_path: Path) -> None:
    # one mode: --serial (together=False) is the same plan, one experiment at a time
    configs = (E2E / "c-oob.yaml", E2E / "c-oob-nofix.yaml")
    decided = {}
    for together in (True, False):
        settings = pipeline.Settings(
            backend="asan", cache=tmp_path / f"cache-{together}", jobs=2, together=together
        )
        out = tmp_path / f"gate-{together}"
        done = pipeline.run(pipeline.Request(configs, settings, out=out))
        assert len(done.runs) == 2
        decided[together] = (
            done.result.verdict,
            [(e.name, e.verdict) for e in done.result.experiments],
            [sorted((a.variant, a.case, a.outcome) for a in j.attempts) for j in done.judged],
        )
        for j in done.judged:  # each bundle complete and verifying, as if run alone
            assert json.loads((Path(j.bundle) / "results.json").read_text())["complete"]
    assert decided[True] == decided[False]
    assert decided[True][0] is Verdict.FAIL  # c-oob-nofix's fix is not causal


def test_ctrl_c_while_together_names_the_gate_to_resume(tmp_path: Path) -> None:
    class Stopped(Listener):
        def experiment(self, experiment):
            raise KeyboardInterrupt  # as Ctrl-C lands while the experiments start

    configs = (E2E / "c-oob.yaml", E2E / "c-oob-nofix.yaml")
    settings = pipeline.Settings(backend="asan", cache=tmp_path / "cache")
    with pytest.raises(pipeline.Interrupted) as caught:
        pipeline.run(pipeline.Request(configs, settings, out=tmp_path / "g"), listener=Stopped())
    assert caught.value.out == tmp_path / "g"
    assert caught.value.resume == f"csorch gate --resume {tmp_path / 'g'}"
    assert (tmp_path / "g" / pipeline.GATE_RUN).is_file()  # what the resume starts from


def test_two_experiments_of_one_name_are_a_config_error_naming_both(tmp_path: Path) -> None:
    """Each experiment's bundle is OUT/<name>: two of one name are refused at load (exit
    2, both configs named), not found out by the second one's lock on the first's
    directory ("in use by another session", with csorch's own pid)."""
    twin = tmp_path / "twin.yaml"
    twin.write_text(
        (E2E / "c-oob.yaml")
        .read_text()
        .replace("source: cprog", f"source: {E2E}/cprog")
        .replace("[fix-oob.patch]", f"[{E2E}/fix-oob.patch]")
    )
    args = ["gate", str(E2E / "c-oob.yaml"), str(twin), "--backend", "asan"]
    done = runner.invoke(cli.app, [*args, "--out", str(tmp_path / "g"), "--cache-dir",
                                   str(tmp_path / "cache")])  # fmt: skip
    assert done.exit_code == 2, done.output
    text = " ".join(done.output.split())
    assert "two experiments of the gate are named 'c-oob'" in text
    assert str(E2E / "c-oob.yaml") in text and str(twin) in text
    assert "in use by another" not in text and not (tmp_path / "g").exists()


def test_the_gate_s_section_writes_no_machine_path(
    cprog_bundles: dict[str, Path], tmp_path: Path
) -> None:
    """The inconclusive bundle's reasons name its stale patch by absolute path: the gate's
    own section of report.md writes it relative to the repository, as each experiment's
    section does."""
    out = tmp_path / "g"
    bad = str(E2E / "c-oob-badpatch.yaml")
    code, output = gate_cli(bad, "--from", str(cprog_bundles["inconclusive"]), "--out", str(out))
    assert code == cli.ExitCode.INCONCLUSIVE, output
    head = (out / "report.md").read_text().split("\n### ", 1)[0]
    assert "patch ./tests/fixtures/e2e/stale.patch does not apply" in head, head
    assert str(ROOT) not in head and str(tmp_path) not in head, head
