"""One test per checker log under tests/fixtures/, through one shared checker.

Each `NAME.log` has a `NAME.expected.json` beside it stating what the parser must
report: completeness, summary counts, checker errors, and the findings grouped by
signature (with counts and the case they were attributed to). Every compute-sanitizer
log is also checked against the tool's own count: csorch's records plus the unprinted
ones equal the ERROR SUMMARY (racecheck: the RACECHECK SUMMARY and its error/warning
split); and its folded parse (`findings.folding`: the first few findings per case and signature,
the rest counted, records skimmed) against its parse with every finding kept, folded
afterwards: they must be the same. A new captured log only needs its expected file, which
`tools/fixture_expectation.py LOG --checker racecheck` drafts from the current parse
(review it against the log before committing it). A log without one is reported as
skipped (with the file it lacks), except under the directories listed in SPECIFIED,
where it fails.
"""

from __future__ import annotations

import dataclasses
import json
from collections import Counter
from pathlib import Path

import pytest

from orchestrator.backends.asan import log as asan_log
from orchestrator.backends.compute_sanitizer import log as cs_log
from orchestrator.findings import folding
from orchestrator.findings.signatures import group
from orchestrator.model import Checker, ParseResult

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
LOGS = sorted(FIXTURES.rglob("*.log"))
# every log under these must have expectations
SPECIFIED = ("asan", "compute-sanitizer", "controls")


def parse_fixture(log: Path, spec: dict, **options) -> ParseResult:
    with open(log, encoding="utf-8", errors="replace") as lines:
        if spec["parser"] == "asan":
            return asan_log.parse(lines)
        checker = Checker(spec.get("checker", "memcheck"))
        return cs_log.parse(lines, checker=checker, **options)


def check(log: Path) -> None:
    expected_file = log.with_name(log.stem + ".expected.json")
    if not expected_file.exists():
        where = log.relative_to(FIXTURES).parts[0]
        assert where not in SPECIFIED, f"{log} has no {expected_file.name}"
        pytest.skip(f"{log.relative_to(FIXTURES)}: no {expected_file.name} beside it yet")
    spec = json.loads(expected_file.read_text())
    result = parse_fixture(log, spec)

    assert result.complete is spec["complete"]
    assert result.summary_count == spec["summary_count"]
    assert result.not_printed == spec["not_printed"]
    assert len(result.tool_errors) == spec["tool_errors"], result.tool_errors
    assert result.app_crashed is spec["app_crashed"]
    assert len(result.unparsed) == spec["unparsed"], result.unparsed
    assert result.records == spec["findings"]
    # an incomplete or failed log is never evidence of a clean run
    if not spec["complete"] or spec["tool_errors"]:
        assert not result.conclusive and result.reason
    groups = []
    for g in group(result.findings):
        row = {k: v for k, v in g.signature.to_dict().items() if v not in ("", None)}
        groups.append({**row, "count": g.count})
    key = lambda row: json.dumps(row, sort_keys=True)  # noqa: E731
    assert sorted(groups, key=key) == sorted(spec["signatures"], key=key)
    cases: Counter[str] = Counter()
    for f in result.findings:
        cases[f.case] += f.count
    assert dict(cases) == spec["cases"]
    check_counts(result, spec)
    if spec["parser"] == "compute-sanitizer":
        whole = parse_fixture(log, spec, examples=None)
        assert all(f.count == 1 for f in whole.findings)
        assert result == dataclasses.replace(whole, findings=folding.fold(whole.findings))


def check_counts(result: ParseResult, spec: dict) -> None:
    """csorch's count equals the tool's own: the summary accounts for every parsed record
    plus the unprinted ones (plus, in a log trimmed for the repository, the printed
    records cut out of it), and racecheck's error/warning split is csorch's too. (ASan's
    "summary" is its SUMMARY lines plus the fold shim's counts.)"""
    if "race_split" in spec:
        expected = spec["race_split"]
        assert result.summary_split == (tuple(expected) if expected is not None else None)
    if result.summary_count is None:
        return
    cut = spec.get("trimmed_records", 0)
    if not spec.get("count_mismatch"):
        assert result.records + result.not_printed + cut == result.summary_count
    if cut or spec.get("count_mismatch"):
        # a trimmed log, or one with a record csorch cannot read: never conclusive
        assert result.count_mismatch and not result.conclusive
        assert "parse incomplete" in result.reason
    else:
        assert result.count_mismatch == "", result.count_mismatch
    if result.summary_split is not None:
        severities: Counter[str] = Counter()
        for f in result.findings:
            severities[f.severity] += f.count
        assert (severities["error"], severities["warning"]) == result.summary_split


@pytest.mark.parametrize("log", LOGS, ids=[str(p.relative_to(FIXTURES)) for p in LOGS])
def test_fixture(log: Path) -> None:
    check(log)


def test_every_fixture_directory_has_logs() -> None:
    assert any(p.parent.name == "asan" for p in LOGS)
    assert any("compute-sanitizer" in p.parts for p in LOGS)
