"""Bisection: the pure search state, the evaluator of one commit, the driver that loops them,
git history."""

from orchestrator.bisect.state import (  # noqa: F401 (the package's API)
    Bisection,
    Commit,
    Mark,
    Side,
    Status,
    status,
)
