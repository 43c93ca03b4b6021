"""GitHub Actions workflow commands of a bundle (`--format github`): an annotation on the
diff for each finding, for repositories without code scanning, and one for the verdict.

Each finding is a SARIF result (`report.sarif`: one location logic, relative to the
repository, the same file and line code scanning shows): a finding in the fix or another
variant is an `::error`, in a control a `::notice` (the defect it exists to reproduce),
one suppressed or allowed none. The verdict comes first: FAIL an `::error`, INCONCLUSIVE
(or none) a `::warning`, PASS a `::notice`. Values are escaped as the runner reads them
(`%`, CR and LF in a message; also `:` and `,` in a property), so a subject's text cannot
end an annotation early or forge another."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any
from urllib.parse import unquote

from orchestrator import bundle
from orchestrator.report import sarif

LEVELS = {"error": "error", "warning": "warning", "note": "notice"}
VERDICT_LEVELS = {"fail": "error", "pass": "notice"}


def _data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _property(text: str) -> str:
    return _data(text).replace(":", "%3A").replace(",", "%2C")


def command(level: str, message: str, **props: object) -> str:
    """One workflow command: `::level key=value,...::message`, escaped."""
    said = ",".join(f"{k}={_property(str(v))}" for k, v in props.items() if v not in ("", None))
    return f"::{level} {said}::{_data(message)}" if said else f"::{level}::{_data(message)}"


def _what(props: Mapping[str, Any]) -> str:
    """What showed: the checker of a finding, or the case of a test-outcome target (a
    SARIF result of that kind names no checker)."""
    if props.get("checker"):
        return str(props["checker"])
    return f"case {props['case']}" if props.get("case") else "an outcome"


def render(
    results: Mapping[str, Any], manifest: Mapping[str, Any], *, root: Path | None = None
) -> str:
    """The bundle's annotations, one workflow command per line: the verdict, then each
    finding that is not suppressed (file and line where a frame places it)."""
    records = bundle.records(results)
    name = records.experiment.name
    verdict = str(results.get("verdict") or "not judged")
    reasons = records.judgement.reasons if records.judgement else ()
    lines = [
        command(
            VERDICT_LEVELS.get(verdict, "warning"),
            "; ".join(reasons) or verdict,
            title=f"csorch {name}: {verdict.upper()}",
        )
    ]
    for result in sarif.log(results, manifest, root=root)["runs"][0]["results"]:
        if result.get("suppressions"):
            continue  # tolerated: listed in the reports, not put on the diff
        if result["ruleId"] == sarif.VERDICT_RULE_ID:
            continue  # the verdict's annotation is the first line already
        physical = result["locations"][0]["physicalLocation"]
        uri = unquote(physical["artifactLocation"]["uri"])
        line = physical.get("region", {}).get("startLine")
        props = result["properties"]
        lines.append(
            command(
                LEVELS.get(result["level"], "warning"),
                result["message"]["text"],
                file=uri if uri != "." else "",
                line=line,
                title=f"csorch {name}: {_what(props)} in {props.get('variant', '')}",
            )
        )
    return "\n".join(lines) + "\n"
