"""The `none` backend: the plain run (caching allocator on) that gives the regression
signal. It wraps nothing and parses nothing; only the test's outcome counts."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from orchestrator.backends.base import BuildFlags, Liveness, Wrapped
from orchestrator.host import Host
from orchestrator.model import Checker, ParseResult, ToolInfo

NAME = "none"


class NoChecker:
    name = NAME
    title = "no checker"
    checkers = frozenset({Checker.NONE})
    build_sanitizer = ""
    device_code = False
    uses_gpus = False
    frames_name_case = False

    @classmethod
    def for_run(cls, host: Host, *, workers: int = 0) -> NoChecker:
        return cls()

    @classmethod
    def from_task(cls, context: Mapping[str, str]) -> NoChecker:
        return cls()

    def build_flags(self) -> BuildFlags:
        return BuildFlags()

    def probe(self) -> ToolInfo:
        return ToolInfo(NAME, "", "")

    def serves(self, checker: Checker) -> str:
        return "" if checker is Checker.NONE else f"no checker runs {checker.value} here"

    def watcher(self, checker: Checker) -> Checker:
        return Checker.NONE

    def prepare(self, cache: Path, python: str) -> dict[str, str]:
        return {}

    def identity(self, host: Host) -> dict[str, str]:
        return {"version": "", "path": ""}

    def task_context(self) -> dict[str, str]:
        return {}

    def gres(self) -> str:
        return ""

    def log_target(self, prefix: Path) -> Path | None:
        return None

    def wrap(
        self,
        argv: Sequence[str],
        *,
        checker: Checker = Checker.NONE,
        options: Sequence[str] = (),
        env: Mapping[str, str] | None = None,
        log_path: Path | None = None,
        preset: str = "",
        target_processes: str = "",
    ) -> Wrapped:
        return Wrapped(argv=tuple(argv), env=(), log_path=None)

    def wrap_plain(self, argv: Sequence[str], env: Mapping[str, str], sanitizer: str) -> Wrapped:
        return Wrapped(argv=tuple(argv), env=(), log_path=None)

    def parse(self, lines: Iterable[str], *, checker: Checker = Checker.NONE) -> ParseResult:
        # nothing to prove: a plain run is complete when the process ends
        return ParseResult(complete=True)

    def read(
        self, prefix: Path, checker: Checker, env: Mapping[str, str] | None = None
    ) -> ParseResult:
        return ParseResult(complete=True)

    def attribute(self, result: ParseResult, nodes: Sequence[str]) -> ParseResult:
        return result

    def liveness(self, result: ParseResult) -> Liveness:
        return Liveness(False, "no checker watches a plain run")
