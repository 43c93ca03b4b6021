"""examples/: the GitHub Actions workflow validates against the workflow schema
(tests/fixtures/github), runs only csorch verbs and options that exist, and the config
examples name the editors' schema."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import typer.main
import yaml

from orchestrator.cli import app

ROOT = Path(__file__).resolve().parents[2]
WORKFLOW = ROOT / "examples" / "github-actions" / "csorch.yml"
SCHEMA = ROOT / "tests" / "fixtures" / "github" / "github-workflow.json"


@pytest.fixture(scope="module")
def validator():
    jsonschema = pytest.importorskip(
        "jsonschema", reason="installed on CPU machines only (tools/setup_venv.sh)"
    )
    schema = json.loads(SCHEMA.read_text())
    jsonschema.Draft7Validator.check_schema(schema)
    return jsonschema.Draft7Validator(schema)


def workflow() -> dict[str, Any]:
    doc = yaml.safe_load(WORKFLOW.read_text())
    # YAML 1.1 reads the key `on` as true; GitHub (YAML 1.2) reads the word
    doc["on"] = doc.pop(True)
    return doc


def test_the_workflow_validates(validator) -> None:
    doc = workflow()
    errors = sorted(validator.iter_errors(doc), key=str)
    assert not errors, f"{errors[0].message} at {list(errors[0].absolute_path)}"
    assert set(doc["on"]) == {"schedule", "workflow_dispatch"}
    assert "self-hosted" in doc["jobs"]["gate"]["runs-on"]
    assert doc["permissions"]["security-events"] == "write"
    uses = [s.get("uses", "") for s in doc["jobs"]["gate"]["steps"]]
    assert any(u.startswith("github/codeql-action/upload-sarif@") for u in uses)
    assert any(u.startswith("actions/upload-artifact@") for u in uses)


def test_the_schema_check_refuses_a_broken_workflow(validator) -> None:
    doc = workflow()
    doc["jobs"]["gate"]["steps"].append({"name": "neither run nor uses"})
    assert not validator.is_valid(doc)
    doc = workflow()
    doc["on"]["schedule"] = "weekly"
    assert not validator.is_valid(doc)


def test_the_workflow_calls_only_csorch_verbs_and_options_that_exist() -> None:
    steps = workflow()["jobs"]["gate"]["steps"]
    scripts = "\n".join(s.get("run", "") for s in steps)
    calls = re.findall(r"^\s*csorch (\w[\w-]*)(.*)$", scripts, re.M)
    assert {verb for verb, _ in calls} >= {"gate", "verify", "report", "doctor"}
    commands = {c.name: c for c in app.registered_commands}
    for verb, rest in calls:
        assert verb in commands, verb
        options = set(re.findall(r"(?<!\S)(--?[a-z][\w-]*)", rest))
        click = typer.main.get_command(app).commands[verb]  # type: ignore[attr-defined]
        known = {o for p in click.params for o in (*p.opts, *p.secondary_opts)}
        assert options <= known, (verb, options - known)
    assert re.search(r"-f (sarif|junit|html) -o ", scripts)


def test_the_config_examples_name_the_editors_schema() -> None:
    for path, kind in (
        (ROOT / "examples" / "experiment.yaml", "experiment"),
        (ROOT / "examples" / "gate.yaml", "gate"),
    ):
        first = path.read_text().splitlines()[0]
        assert first == f"# yaml-language-server: $schema=../docs/schema/{kind}.schema.json"
        assert (path.parent / first.split("=", 1)[1]).is_file()


def _step(name: str) -> str:
    (step,) = [s for s in workflow()["jobs"]["gate"]["steps"] if s.get("name", "").startswith(name)]
    return step["run"]


@pytest.mark.process
def test_the_reports_step_reports_every_bundle_when_one_does_not_verify(
    cprog_bundles, tmp_path: Path
) -> None:
    """The step as a script, under the runner's `bash -e`, with the real csorch: a bundle
    that fails `verify` used to end the loop, so the good bundles got no report."""
    import os
    import shutil
    import subprocess
    import sys

    out = tmp_path / "gate"
    for name in ("a-tampered", "b-fail", "c-pass"):
        src = cprog_bundles["pass" if name != "b-fail" else "fail"]
        shutil.copytree(src, out / name)
    log = out / "a-tampered" / "results.json"
    log.write_text(log.read_text().replace('"verdict": "pass"', '"verdict": "fail"'))
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "csorch").write_text(f'#!/bin/sh\nexec {sys.executable} -m orchestrator "$@"\n')
    (bin_dir / "csorch").chmod(0o755)
    env = {**os.environ, "OUT": str(out), "PYTHONPATH": str(ROOT),
           "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}  # fmt: skip
    done = subprocess.run(
        ["bash", "-e", "-c", _step("Reports")], env=env, capture_output=True, text=True,
        timeout=600, check=False,
    )  # fmt: skip
    assert done.returncode == 1, done.stdout + done.stderr  # the step says one did not verify
    assert "::warning::a-tampered does not verify" in done.stdout
    for name in ("a-tampered", "b-fail", "c-pass"):
        for suffix in (".sarif", ".junit.xml", ".html"):
            assert (out / "reports" / f"{name}{suffix}").is_file(), (name, suffix, done.stderr)
    assert "::error title=csorch c-oob-nofix%3A FAIL::" in done.stdout
    assert "::notice title=csorch c-oob%3A PASS::" in done.stdout


def test_the_workflow_installs_from_a_checkout_into_a_venv_with_the_runner_s_torch() -> None:
    doc = workflow()
    install = _step("Install csorch")
    assert "python3 -m venv --system-site-packages" in install and "GITHUB_PATH" in install
    assert "pip install" not in install.replace('"$VENV/bin/python" -m pip install', "")
    assert doc["jobs"]["gate"]["env"]["CSORCH"].endswith("|| '.' }}")
    uses = [s.get("uses", "") for s in doc["jobs"]["gate"]["steps"]]
    assert "github/codeql-action/upload-sarif@v4" in uses  # v3 is deprecated
