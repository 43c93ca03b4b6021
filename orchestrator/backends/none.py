"""The `none` backend: the plain run (caching allocator on) that gives the regression
signal. It wraps nothing and parses nothing; only the test's outcome counts."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from orchestrator.backends.base import BuildFlags, Liveness, Wrapped
from orchestrator.model import Checker, ParseResult, ToolInfo

NAME = "none"


class NoChecker:
    name = NAME
    checkers = frozenset({Checker.NONE})

    def build_flags(self) -> BuildFlags:
        return BuildFlags()

    def probe(self) -> ToolInfo:
        return ToolInfo(NAME, "", "")

    def wrap(
        self,
        argv: Sequence[str],
        *,
        checker: Checker = Checker.NONE,
        options: Sequence[str] = (),
        env: Mapping[str, str] | None = None,
        log_path: Path | None = None,
    ) -> Wrapped:
        return Wrapped(argv=tuple(argv), env=(), log_path=None)

    def parse(self, lines: Iterable[str]) -> ParseResult:
        # nothing to prove: a plain run is complete when the process ends
        return ParseResult(complete=True)

    def liveness(self, result: ParseResult) -> Liveness:
        return Liveness(False, "no checker watches a plain run")
