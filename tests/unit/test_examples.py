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
