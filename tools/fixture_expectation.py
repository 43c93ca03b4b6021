"""Drafts the `NAME.expected.json` of a captured checker log from csorch's current parse,
for `tests/unit/test_parser_fixtures.py`. Usage::

    python tools/fixture_expectation.py tests/fixtures/compute-sanitizer/h200-cudabugs/race.log \
        --checker racecheck > tests/fixtures/compute-sanitizer/h200-cudabugs/race.expected.json

A draft, not an oracle: it states what csorch parses today, so read it against the log
(the summary line, the records, the culprit functions) before committing it. It prints
the tool's summary beside csorch's count on stderr, so a disagreement is seen at once.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path

from orchestrator.backends.asan import log as asan_log
from orchestrator.backends.compute_sanitizer import log as cs_log
from orchestrator.findings.signatures import group
from orchestrator.model import Checker


def expectation(log: Path, parser: str, checker: Checker) -> dict:
    with open(log, encoding="utf-8", errors="replace") as lines:
        result = asan_log.parse(lines) if parser == "asan" else cs_log.parse(lines, checker=checker)
    cases: Counter[str] = Counter()
    for f in result.findings:  # folded: each finding counts the records it stands for
        cases[f.case] += f.count
    signatures = []
    for g in group(result.findings):
        row = {k: v for k, v in g.signature.to_dict().items() if v not in ("", None)}
        signatures.append({**row, "count": g.count})
    spec: dict = {"parser": parser}
    if parser == "compute-sanitizer":
        spec["checker"] = checker.value
    spec |= {
        "complete": result.complete,
        "summary_count": result.summary_count,
        "not_printed": result.not_printed,
        "tool_errors": len(result.tool_errors),
        "app_crashed": result.app_crashed,
        "unparsed": len(result.unparsed),
        "findings": result.records,
        "signatures": signatures,
        "cases": dict(cases),
    }
    if result.summary_split is not None:
        spec["race_split"] = list(result.summary_split)
    if result.count_mismatch:
        spec["count_mismatch"] = True
    parsed = result.records + result.not_printed
    print(
        f"{log.name}: tool's summary {result.summary_count}, csorch {parsed}"
        + (f" -- MISMATCH: {result.count_mismatch}" if result.count_mismatch else ""),
        file=sys.stderr,
    )
    return spec


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("log", type=Path)
    ap.add_argument("--parser", choices=("compute-sanitizer", "asan"), default="compute-sanitizer")
    ap.add_argument("--checker", default="memcheck", choices=[c.value for c in Checker])
    args = ap.parse_args(argv)
    spec = expectation(args.log, args.parser, Checker(args.checker))
    print(json.dumps(spec, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
