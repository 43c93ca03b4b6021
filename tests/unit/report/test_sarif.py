"""report.sarif: SARIF of real ASan bundles validates against the official 2.1.0 schema,
with rule ids and fingerprints that do not change from run to run."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from orchestrator import bundle
from orchestrator.findings.signatures import fingerprint, signature
from orchestrator.model import Finding
from orchestrator.report import sarif
from unit.report.test_markdown import edited

SCHEMA = Path(__file__).resolve().parents[2] / "fixtures" / "sarif" / "sarif-schema-2.1.0.json"
ROOT = Path(__file__).resolve().parents[3]
CPROG = "tests/fixtures/e2e/cprog"


def log(path: Path) -> dict[str, Any]:
    return json.loads(sarif.render(*bundle.read(path)))


def found(run: dict[str, Any]) -> list[dict[str, Any]]:
    """A run's results of findings: without the verdict's own (a verdict not PASS)."""
    return [r for r in run["results"] if r["ruleId"] != sarif.VERDICT_RULE_ID]


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
        (rule,) = [r for r in run["tool"]["driver"]["rules"] if r["id"] != sarif.VERDICT_RULE_ID]
        ids.add(rule["id"])
        for result in found(run):
            assert result["ruleId"] == rule["id"] and result["ruleIndex"] == 0
            (fp,) = {fingerprint(signature(f)) for f in findings(path)}
            said = result["partialFingerprints"]
            assert said[sarif.FINGERPRINT_KEY] == fp
            props = result["properties"]
            own = sarif._result_fingerprint(fp, props["variant"], props["run"])
            assert said == {sarif.FINGERPRINT_KEY: fp, sarif.RESULT_KEY: own}
            assert rule["id"] == f"asan.heap-buffer-overflow.{fp[:16]}"
    assert len(ids) == 1
    addresses = {f.address for p in cprog_bundles.values() for f in findings(p)}
    assert all(a not in next(iter(ids)) for a in addresses)


def test_results_per_variant_with_levels_and_locations(cprog_bundles) -> None:
    run = log(cprog_bundles["fail"])["runs"][0]
    by_variant = {r["properties"]["variant"]: r for r in found(run)}
    assert set(by_variant) == {"fixed", "control"}
    assert by_variant["fixed"]["level"] == "error"  # the fix still shows the defect
    assert by_variant["control"]["level"] == "note"  # the control is meant to
    for result in by_variant.values():
        (location,) = result["locations"]
        physical = location["physicalLocation"]
        # pick.c relative to the repository (as code scanning maps it), also for the
        # cached control built in another run's scratch tree
        assert physical["artifactLocation"] == {"uri": CPROG + "/pick.c", "uriBaseId": "%SRCROOT%"}
        assert physical["region"]["startLine"] > 0
        assert result["properties"]["locationFrom"] == "frame"
        assert location["logicalLocations"] == [{"name": "sum", "kind": "function"}]
        assert result["properties"]["case"] == "sum" and result["properties"]["count"] == 1
    assert set(run["originalUriBaseIds"][sarif.BASE]) == {"description"}  # no machine path
    assert run["properties"]["verdict"] == "fail"


def test_only_the_control_shows_the_defect_when_the_fix_works(cprog_bundles) -> None:
    run = log(cprog_bundles["pass"])["runs"][0]
    assert [(r["properties"]["variant"], r["properties"]["run"]) for r in run["results"]] == [
        ("control", "memcheck")
    ]
    assert run["invocations"][0]["executionSuccessful"] is True


def uris(doc: Any) -> Iterator[str]:
    """Every `uri` anywhere in a SARIF log."""
    if isinstance(doc, dict):
        for key, value in doc.items():
            if key == "uri":
                yield value
            yield from uris(value)
    elif isinstance(doc, list):
        for item in doc:
            yield from uris(item)


def upload_safe(doc: dict[str, Any]) -> None:
    """What code scanning needs: relative URIs only, one physical location a result."""
    found = list(uris(doc))
    assert found and all(not u.startswith(("/", "file:")) and ":" not in u for u in found), found
    for result in doc["runs"][0]["results"]:
        (location,) = result["locations"]
        assert location["physicalLocation"]["artifactLocation"]["uriBaseId"] == sarif.BASE


def test_every_bundle_is_upload_safe(cprog_bundles) -> None:
    for path in cprog_bundles.values():
        doc = log(path)
        if doc["runs"][0]["results"]:
            upload_safe(doc)


def test_a_frame_outside_the_tree_falls_back_to_a_file_of_the_repository(
    cprog_bundles, tmp_path, validator
) -> None:
    """The old output gave a frame outside the tree as an absolute file:// URI (which code
    scanning cannot map) and a frameless finding no location at all (which it drops)."""

    def move(results: dict[str, Any]) -> None:
        for a in results["attempts"]:
            for f in (a["parse"] or {}).get("findings", []):
                if a["variant"] == "fixed":
                    for frame in f["frames"]:
                        frame["file"] = "/usr/include/c++/13/bits/stl_vector.h"
                else:
                    f["frames"], f["host_frames"] = [], []

    doc = json.loads(sarif.render(*bundle.read(edited(cprog_bundles["fail"], tmp_path, move))))
    assert not sorted(validator.iter_errors(doc), key=str)
    upload_safe(doc)
    by_variant = {r["properties"]["variant"]: r for r in found(doc["runs"][0])}
    for result in by_variant.values():
        physical = result["locations"][0]["physicalLocation"]
        # the config the experiment came from, in the repository
        assert physical["artifactLocation"]["uri"] == "tests/fixtures/e2e/c-oob-nofix.yaml"
        assert "region" not in physical and result["properties"]["locationFrom"] == "config"
    assert by_variant["fixed"]["properties"]["topFrame"].startswith("/usr/include/c++/13/")
    assert "topFrame" not in by_variant["control"]["properties"]


def test_uris_relative_to_a_root_given(cprog_bundles) -> None:
    doc = json.loads(sarif.render(*bundle.read(cprog_bundles["pass"]), root=ROOT / "tests"))
    (result,) = doc["runs"][0]["results"]
    uri = result["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
    assert uri == "fixtures/e2e/cprog/pick.c"


def test_the_fix_s_result_is_its_own_alert_at_the_repository_s_line(cprog_bundles) -> None:
    """The no-fix config's patch adds a line above the defect: the fix's frame names line
    10 of the patched tree; the repository (and the control) has it at line 9. The fix's
    result used to point at 10 and share its fingerprints with the control's (one alert)."""
    run = log(cprog_bundles["fail"])["runs"][0]
    by = {r["properties"]["variant"]: r for r in found(run)}
    fixed, control = by["fixed"], by["control"]
    line = lambda r: r["locations"][0]["physicalLocation"]["region"]["startLine"]  # noqa: E731
    assert line(control) == 9 and line(fixed) == 9
    assert fixed["properties"]["patchedLine"] == 10
    assert fixed["partialFingerprints"] != control["partialFingerprints"]


def test_every_rule_has_help_as_code_scanning_asks(cprog_bundles) -> None:
    for path in cprog_bundles.values():
        for rule in log(path)["runs"][0]["tool"]["driver"]["rules"]:
            assert rule["help"]["text"] and rule["help"]["markdown"], rule


def test_patch_lines_map_back_to_the_original() -> None:
    from orchestrator.report.patchlines import original

    patch = (ROOT / "tests" / "fixtures" / "e2e" / "comment-only.patch").read_text()
    # the comment goes in at line 8; everything from there moves down by one
    assert [original(patch, "pick.c", n) for n in (7, 8, 9, 10, 20)] == [7, 8, 8, 9, 19]
    assert original(patch, "other.c", 10) == 10
    flood = (ROOT / "tests" / "fixtures" / "e2e" / "fix-flood.patch").read_text()
    # a line removed above and one added below: the lines between keep their place
    assert original(flood, "flood.c", 9) == 10 and original(flood, "flood.c", 30) == 30


def test_a_target_that_is_a_test_outcome_gives_results(cprog_bundles, tmp_path) -> None:
    """An experiment whose target is `outcome: failed` gave 0 results: nothing for code
    scanning to show on a failing fix."""
    from unit.report.test_markdown import edited

    def outcome_target(results: dict[str, Any]) -> None:
        target = results["experiment"]["expect"]["targets"][0]
        target.update({k: "" for k in ("checker", "kind", "access", "function")}, outcome="failed")
        for a in results["attempts"]:
            if a["run"] == "plain":
                a["outcome"] = "failed"

    path = edited(cprog_bundles["pass"], tmp_path, outcome_target)
    run = json.loads(sarif.render(*bundle.read(path)))["runs"][0]
    cases = [r for r in run["results"] if r["ruleId"].startswith("outcome.")]
    assert {(r["properties"]["variant"], r["level"]) for r in cases} == {
        ("fixed", "error"),
        ("control", "note"),
    }
    rule = run["tool"]["driver"]["rules"][cases[0]["ruleIndex"]]
    assert rule["id"] == cases[0]["ruleId"] and rule["help"]["text"]


@pytest.mark.parametrize("verdict", ["pass", "fail", "inconclusive"])
def test_a_verdict_other_than_pass_is_an_error_result_of_its_own(cprog_bundles, verdict) -> None:
    """An INCONCLUSIVE bundle whose only findings were the control's notes (a tampered
    bundle, re-derived) read as a clean scan in code scanning: the verdict is now an
    error result of its own, first, at the config file, with a rule that has help."""
    run = json.loads(sarif.render(*bundle.read(cprog_bundles[verdict])))["runs"][0]
    said = [r for r in run["results"] if r["ruleId"] == sarif.VERDICT_RULE_ID]
    if verdict == "pass":
        assert said == []
        return
    (result,) = said
    assert run["results"][0] is result or run["results"][0] == result
    assert result["level"] == "error" and verdict.upper() in result["message"]["text"]
    rule = run["tool"]["driver"]["rules"][result["ruleIndex"]]
    assert rule["id"] == sarif.VERDICT_RULE_ID and rule["help"]["text"]
    uri = result["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
    assert uri.endswith(".yaml") and not uri.startswith("/")
