"""Judging: attempts in, outcomes and verdicts out (causality), tallies, pinned-release
comparisons. Pure."""

from orchestrator.judge.causality import (  # noqa: F401 (the package's API)
    Hits,
    Judgement,
    causality,
    expected_outcomes,
    failed_builds,
    judged,
    judged_findings,
    needed,
    target_hits,
    uncovered,
    watches,
)
