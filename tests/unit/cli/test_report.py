"""cli.report: `csorch report BUNDLE --format ...` on real bundles; usage errors exit 2."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from orchestrator import bundle
from orchestrator.cli import ExitCode, app
from unit.report.test_markdown import edited

runner = CliRunner()


def report(*args: str):
    return runner.invoke(app, ["report", *args])


def test_each_format_renders_the_bundle(cprog_bundles) -> None:
    path = str(cprog_bundles["fail"])
    stored = (cprog_bundles["fail"] / bundle.RESULTS).read_text()
    outputs = {}
    for fmt in ("table", "markdown", "junit", "sarif", "json"):
        result = report(path, "--format", fmt)
        assert result.exit_code == ExitCode.PASS, (fmt, result.output)
        outputs[fmt] = result.stdout
    assert "verdict: FAIL" in outputs["table"]
    assert "**Verdict: FAIL" in outputs["markdown"] and "| **sum** |" in outputs["markdown"]
    suite = ET.fromstring(outputs["junit"]).find("testsuite")
    assert suite.get("tests") == "7" and suite.get("failures") == "3"  # a FAIL never reads green
    assert json.loads(outputs["sarif"])["version"] == "2.1.0"
    assert outputs["json"] == stored + "\n"  # the file as stored


def test_output_goes_to_a_file(cprog_bundles, tmp_path: Path) -> None:
    for fmt in ("markdown", "table"):
        dest = tmp_path / f"report.{fmt}"
        result = report(str(cprog_bundles["inconclusive"]), "-f", fmt, "--output", str(dest))
        assert result.exit_code == ExitCode.PASS and result.stdout == ""
        assert "INCONCLUSIVE" in dest.read_text()
    unwritable = report(
        str(cprog_bundles["pass"]), "-f", "junit", "-o", str(tmp_path / "no" / "x.xml")
    )
    assert unwritable.exit_code == ExitCode.USAGE and "--output" in unwritable.output


def test_the_table_of_an_interrupted_bundle(cprog_bundles, tmp_path: Path) -> None:
    def interrupt(results: dict[str, Any]) -> None:
        results.update(complete=False, interrupted=True, verdict=None, judgement=None)

    path = edited(cprog_bundles["pass"], tmp_path, interrupt)
    result = report(str(path))
    assert result.exit_code == ExitCode.PASS
    assert "verdict: not judged" in result.stdout and "incomplete (interrupted)" in result.stdout


def test_usage_errors(cprog_bundles, tmp_path: Path) -> None:
    missing = report(str(tmp_path / "nowhere"), "-f", "markdown")
    assert missing.exit_code == ExitCode.USAGE and "no results.json" in missing.output
    unknown = report(str(cprog_bundles["pass"]), "--format", "pdf")
    assert unknown.exit_code == ExitCode.USAGE
    assert "unknown format 'pdf'" in unknown.output and "markdown" in unknown.output

    other = edited(cprog_bundles["pass"], tmp_path / "a", lambda r: r.update(schema="x/9"))
    wrong = report(str(other), "-f", "sarif")
    assert wrong.exit_code == ExitCode.USAGE and "expected csorch.results/1" in wrong.output

    def damage(results: dict[str, Any]) -> None:
        results["attempts"][0]["colour"] = "red"

    broken = report(str(edited(cprog_bundles["pass"], tmp_path / "b", damage)), "-f", "junit")
    assert broken.exit_code == ExitCode.USAGE and "cannot be read back" in broken.output


def test_allowed_findings_show_as_allowed_in_every_format(cprog_bundles, tmp_path: Path) -> None:
    path = str(cprog_bundles["pass"])
    policy = tmp_path / "gate.yaml"
    e2e = Path(__file__).resolve().parents[2] / "fixtures" / "e2e"
    policy.write_text(
        f"name: g\nexperiments: [{e2e / 'c-oob.yaml'}]\npolicy:\n  allow:\n"
        "    - {kind: heap-buffer-overflow, reason: 'the control plants it', expires: 2999-01-01}\n"
    )
    outputs = {}
    for fmt in ("table", "markdown", "junit", "sarif"):
        result = report(path, "--format", fmt, "--policy", str(policy))
        assert result.exit_code == ExitCode.PASS, (fmt, result.output)
        outputs[fmt] = result.stdout
        plain = report(path, "--format", fmt).stdout
        assert "the control plants it" not in plain  # only the policy marks them
    why = "allowed: the control plants it (gate.yaml:5)"
    assert why in " ".join(outputs["table"].split())
    assert "(tolerated)" in outputs["markdown"] and why in outputs["markdown"]
    assert f"tolerated: {why}" in outputs["junit"]
    results = json.loads(outputs["sarif"])["runs"][0]["results"]
    assert results and all(
        r["suppressions"] == [{"kind": "external", "status": "accepted", "justification": why}]
        for r in results
    )
    expired = policy.read_text().replace("2999-01-01", "2020-01-01")
    policy.write_text(expired)
    assert why not in report(path, "--format", "junit", "--policy", str(policy)).stdout
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        f"name: g\nexperiments: [{e2e / 'c-oob.yaml'}]\npolicy: {{allow: [{{kind: x}}]}}\n"
    )
    broken = report(path, "--policy", str(bad))
    assert broken.exit_code == ExitCode.USAGE and "needs a reason" in broken.output


def test_sarif_uris_relative_to_the_repo_root_given(cprog_bundles) -> None:
    path = str(cprog_bundles["pass"])
    default = json.loads(report(path, "-f", "sarif").stdout)
    fixtures = str(Path(__file__).resolve().parents[2] / "fixtures")
    given = json.loads(report(path, "-f", "sarif", "--repo-root", fixtures).stdout)

    def uri(doc):
        (result,) = doc["runs"][0]["results"]
        return result["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]

    assert uri(default) == "tests/fixtures/e2e/cprog/pick.c"
    assert uri(given) == "e2e/cprog/pick.c"


def test_a_gate_directory_renders_its_verdict_and_every_bundle(
    cprog_bundles, tmp_path: Path
) -> None:
    import shutil

    from orchestrator import gate
    from orchestrator.gate import pipeline, stored

    out = tmp_path / "gate"
    out.mkdir()
    shutil.copytree(cprog_bundles["pass"], out / "c-oob")
    judged = [stored.judge_bundle(out / "c-oob")]
    result = gate.decide(gate.Policy("g", (Path("/x.yaml"),)), judged)
    pipeline.finish(out, result, judged, "stored report.md\n")
    # before: "is not a results bundle"
    md = report(str(out), "--format", "markdown")
    assert md.exit_code == ExitCode.PASS, md.output
    assert md.stdout.startswith(f"## Release gate `g`: **{result.verdict.name}**")
    assert "## Validation: `c-oob`" in md.stdout
    table = report(str(out))
    assert table.exit_code == ExitCode.PASS and "gate g" in table.stdout and "c-oob" in table.stdout
    as_json = report(str(out), "-f", "json")
    assert json.loads(as_json.stdout)["verdict"] == result.verdict.value
    junit = report(str(out), "-f", "junit")
    assert junit.exit_code == ExitCode.USAGE and "gate's directory" in junit.output
    (out / "gate.json").write_text("{")
    broken = report(str(out), "-f", "markdown")
    assert broken.exit_code == ExitCode.USAGE and "gate.json cannot be read back" in broken.output


@pytest.mark.process  # piped, as in a CI log: the console is made at import
@pytest.mark.parametrize("verdict", ["pass", "fail", "inconclusive"])
def test_piped_with_columns_set_every_line_fits(cprog_bundles, verdict: str) -> None:
    """Piped, the table is 200 wide (a CI log); with COLUMNS set (a pager, a log viewer
    that says its width) it fits that width, and still names the verdict and its reasons."""
    done = subprocess.run(
        [sys.executable, "-m", "orchestrator", "report", str(cprog_bundles[verdict])],
        capture_output=True, text=True, timeout=120,
        env={**os.environ, "COLUMNS": "80"},
    )  # fmt: skip
    assert done.returncode == ExitCode.PASS, done.stdout + done.stderr
    widths = [len(line.rstrip()) for line in done.stdout.splitlines()]
    assert max(widths) <= 80, done.stdout
    assert f"verdict: {verdict.upper()}" in done.stdout
