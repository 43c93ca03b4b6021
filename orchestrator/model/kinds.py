"""The enums every stage shares: checkers, source, build and case kinds, outcomes, verdicts."""

from __future__ import annotations

import enum
from collections.abc import Iterable

Env = tuple[tuple[str, str], ...]


class Checker(enum.Enum):
    """The tool that watches a run. ASAN stands in for MEMCHECK on a CPU-only host."""

    NONE = "none"
    MEMCHECK = "memcheck"
    INITCHECK = "initcheck"
    RACECHECK = "racecheck"
    SYNCCHECK = "synccheck"
    ASAN = "asan"


#: the checkers a config's run may name (asan is chosen by the backend, not the run)
RUN_CHECKERS = (
    Checker.NONE,
    Checker.MEMCHECK,
    Checker.INITCHECK,
    Checker.RACECHECK,
    Checker.SYNCCHECK,
)


class SourceKind(enum.Enum):
    PATH = "path"
    GIT = "git"


class BuildKind(enum.Enum):
    """How a variant becomes importable (docs/your-extension.md): csorch's own build.py
    contract (JIT), a pip build of the tree (WHEEL: pip wheel + install; PIP: pip install
    --target), a release binary as users install it (PREBUILT), or an argv (COMMAND)."""

    JIT = "jit"
    WHEEL = "wheel"
    PIP = "pip"
    PREBUILT = "prebuilt"
    COMMAND = "command"


class CasesFrom(enum.Enum):
    """Where a pytest case's relative paths point: the config's directory, or the
    variant's own tree (its checkout of a git ref, so the tests match the ref)."""

    CONFIG = "config"
    VARIANT = "variant"


class CaseKind(enum.Enum):
    PYTEST = "pytest"
    COMMAND = "command"


class Outcome(enum.Enum):
    """What the test itself said, independent of the checker's findings."""

    PASSED = "passed"
    FAILED = "failed"
    ERROR = "error"
    SKIPPED = "skipped"


class Verdict(enum.Enum):
    PASS = "pass"
    FAIL = "fail"
    INCONCLUSIVE = "inconclusive"


def aggregate(outcomes: Iterable[Outcome]) -> Outcome:
    """ERROR if any attempt errored, else FAILED if any failed, else SKIPPED if all were
    skipped, else PASSED. No attempts at all is an ERROR (nothing ran)."""
    seen = set(outcomes)
    for worst in (Outcome.ERROR, Outcome.FAILED):
        if worst in seen:
            return worst
    if not seen:
        return Outcome.ERROR
    return Outcome.SKIPPED if seen == {Outcome.SKIPPED} else Outcome.PASSED
