"""config.json_schema (and gate.json_schema): the editors' JSON Schema is the loader's
own tables, every shipped config validates against it, the mistakes the loader refuses
by key are refused by it too, and the committed docs/schema files are what
`csorch schema` prints."""

from __future__ import annotations

import datetime
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from orchestrator.cli import schema as cli_schema
from orchestrator.config import json_schema, schema
from orchestrator.config.experiment import load_experiment
from orchestrator.gate import json_schema as gate_schema
from orchestrator.gate.policy import GATE_TOP, load_policy

ROOT = Path(__file__).resolve().parents[3]
CONFIGS = sorted(
    [*(ROOT / "configs").glob("*.yaml"), *(ROOT / "tests" / "fixtures" / "e2e").glob("*.yaml")]
    + sorted((ROOT / "examples").glob("*.yaml"))
)


@pytest.fixture(scope="module")
def jsonschema():
    return pytest.importorskip(
        "jsonschema", reason="installed on CPU machines only (tools/setup_venv.sh)"
    )


def read(path: Path) -> Any:
    """The YAML as an editor's YAML 1.2 reads it: an unquoted date stays text."""

    def plain(value: Any) -> Any:
        if isinstance(value, dict):
            return {k: plain(v) for k, v in value.items()}
        if isinstance(value, list):
            return [plain(v) for v in value]
        return value.isoformat() if isinstance(value, datetime.date) else value

    return plain(yaml.safe_load(path.read_text()))


def is_gate(doc: Any) -> bool:
    return isinstance(doc, dict) and "experiments" in doc


def test_the_schemas_are_draft_7_and_the_committed_files_are_current(jsonschema) -> None:
    for kind in cli_schema.Kind:
        generated = cli_schema.SCHEMAS[kind]()
        jsonschema.Draft7Validator.check_schema(generated)
        committed = ROOT / "docs" / "schema" / f"{kind.value}.schema.json"
        assert committed.read_text() == cli_schema.text(kind), (
            f"{committed} is stale: csorch schema {kind.value} -o {committed.relative_to(ROOT)}"
        )


def test_every_key_the_loader_allows_is_in_the_schema_with_its_phrase() -> None:
    doc = json_schema.experiment()
    assert set(doc["properties"]) == set(schema.TOP)
    run = doc["properties"]["runs"]["items"]
    assert set(run["properties"]) == set(schema.RUN)
    assert run["properties"]["preset"]["enum"] == list(schema.PRESETS)
    assert run["properties"]["checker"]["description"] == schema.RUN["checker"]
    assert set(gate_schema.gate()["properties"]) == set(GATE_TOP)
    with pytest.raises(ValueError, match="differ from the table"):
        json_schema.object_of({"a": "x"}, {"a": {}, "b": {}})


@pytest.mark.parametrize("path", CONFIGS, ids=lambda p: p.name)
def test_every_shipped_config_the_loader_takes_validates(path: Path, jsonschema) -> None:
    doc = read(path)
    try:  # the fixtures include configs the loader refuses on purpose (a bad patch is fine)
        load_policy(path) if is_gate(doc) else load_experiment(path)
    except Exception as exc:  # noqa: BLE001 (only a config the loader takes must validate)
        pytest.skip(f"the loader refuses it: {exc}")
    chosen = gate_schema.gate() if is_gate(doc) else json_schema.experiment()
    errors = sorted(jsonschema.Draft7Validator(chosen).iter_errors(doc), key=str)
    assert not errors, f"{errors[0].message} at {list(errors[0].absolute_path)}"


def test_what_the_loader_refuses_by_key_the_schema_refuses(jsonschema) -> None:
    base = read(ROOT / "configs" / "cudabugs-oob-write.yaml")
    validator = jsonschema.Draft7Validator(json_schema.experiment())
    assert validator.is_valid(base)
    bad = [
        {**base, "repeat": 2},  # a misspelt key
        {**base, "runs": [{"name": "m", "checker": "asan"}]},  # a backend, not a checker
        {**base, "runs": [{"name": "m", "checker": "memcheck", "preset": "ccl"}]},
        {**base, "variants": [{"name": "../evil", "build": "jit"}]},
        {**base, "timeout": "ten minutes"},
        {**base, "variants": [{"name": "v", "build": "command"}]},  # a command needs argv
    ]
    for doc in bad:
        assert not validator.is_valid(doc), doc
    gate = {"name": "g", "experiments": ["a.yaml"], "policy": {"allow": [{"kind": "leak"}]}}
    assert not jsonschema.Draft7Validator(gate_schema.gate()).is_valid(gate)  # no reason


def test_the_schema_verb_prints_it() -> None:
    from typer.testing import CliRunner

    from orchestrator.cli import app

    result = CliRunner().invoke(app, ["schema", "gate"])
    assert result.exit_code == 0 and json.loads(result.output)["title"] == "csorch gate config"
