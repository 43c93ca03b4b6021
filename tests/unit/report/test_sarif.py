"""report.sarif: SARIF of real ASan bundles validates against the official 2.1.0 schema,
with rule ids and fingerprints that do not change from run to run."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from orchestrator import bundle
from orchestrator.findings.signatures import fingerprint, signature
from orchestrator.model import Finding
from orchestrator.report import sarif

SCHEMA = Path(__file__).resolve().parents[2] / "fixtures" / "sarif" / "sarif-schema-2.1.0.json"


def log(path: Path) -> dict[str, Any]:
    return json.loads(sarif.render(*bundle.read(path)))


def findings(path: Path) -> list[Finding]:
    return [f for a in bundle.records(bundle.read(path)[0]).attempts for f in a.findings]


@pytest.fixture(scope="module")
def validator():
    # the offline GPU machine has no jsonschema: only the schema check skips there
    jsonschema = pytest.importorskip(
        "jsonschema",
        reason="installed on CPU machines only (tools/setup_venv.sh); the GPU machine is offline",
    )
    schema = json.loads(SCHEMA.read_text())
    jsonschema.Draft4Validator.check_schema(schema)
    return jsonschema.Draft4Validator(schema, format_checker=jsonschema.FormatChecker())


def test_every_bundle_validates_against_the_schema(cprog_bundles, validator) -> None:
    for verdict, path in cprog_bundles.items():
        doc = log(path)
        errors = sorted(validator.iter_errors(doc), key=str)
        assert not errors, f"{verdict}: {errors[0].message} at {list(errors[0].absolute_path)}"
        assert doc["version"] == "2.1.0" and doc["$schema"] == sarif.SCHEMA
        assert len(doc["runs"]) == 1
        driver = doc["runs"][0]["tool"]["driver"]
        assert driver["name"] == "csorch" and driver["version"]


def test_rule_ids_and_fingerprints_are_stable_across_runs(cprog_bundles) -> None:
    """Three separate runs (other pids, addresses, build directories, one build from the
    cache with an older run's paths) give the same defect the same identity."""
    ids = set()
    for path in cprog_bundles.values():
        run = log(path)["runs"][0]
        (rule,) = run["tool"]["driver"]["rules"]
        ids.add(rule["id"])
        for result in run["results"]:
            assert result["ruleId"] == rule["id"] and result["ruleIndex"] == 0
            (fp,) = {fingerprint(signature(f)) for f in findings(path)}
            assert result["partialFingerprints"] == {sarif.FINGERPRINT_KEY: fp}
            assert rule["id"] == f"asan.heap-buffer-overflow.{fp[:16]}"
    assert len(ids) == 1
    addresses = {f.address for p in cprog_bundles.values() for f in findings(p)}
    assert all(a not in next(iter(ids)) for a in addresses)


def test_results_per_variant_with_levels_and_locations(cprog_bundles) -> None:
    run = log(cprog_bundles["fail"])["runs"][0]
    by_variant = {r["properties"]["variant"]: r for r in run["results"]}
    assert set(by_variant) == {"fixed", "control"}
    assert by_variant["fixed"]["level"] == "error"  # the fix still shows the defect
    assert by_variant["control"]["level"] == "note"  # the control is meant to
    for result in by_variant.values():
        (location,) = result["locations"]
        physical = location["physicalLocation"]
        # pick.c relative to the source, also for the cached control built in another run
        assert physical["artifactLocation"] == {"uri": "pick.c", "uriBaseId": sarif.BASE}
        assert physical["region"]["startLine"] > 0
        assert location["logicalLocations"] == [{"name": "sum", "kind": "function"}]
        assert result["properties"]["case"] == "sum" and result["properties"]["count"] == 1
    assert run["originalUriBaseIds"][sarif.BASE]["uri"].endswith("/e2e/cprog/")
    assert run["properties"]["verdict"] == "fail"


def test_only_the_control_shows_the_defect_when_the_fix_works(cprog_bundles) -> None:
    run = log(cprog_bundles["pass"])["runs"][0]
    assert [(r["properties"]["variant"], r["properties"]["run"]) for r in run["results"]] == [
        ("control", "memcheck")
    ]
    assert run["invocations"][0]["executionSuccessful"] is True
