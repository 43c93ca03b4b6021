"""A backend made of recorded parse results, for the pipelines' fast tier.

`Recorded` implements the whole `backends.base.Backend` interface. It wraps nothing (the
case runs as it is) and, for each launch, returns the parse recorded for its variant: real
captured logs (tests/fixtures/asan) parsed by the real parser, once, when the backend is
made. So a run or a gate goes through every stage of the pipeline (plan, sources, a
`command` build of `true`, the executor, the journal, the judge, the bundle) with no
compiler and no checker, in well under a second an attempt. `install` registers it in
`backends.KINDS` under `NAME`, as a new backend would be, and makes the host's facts.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

import pytest

from orchestrator import backends, host
from orchestrator.backends.asan import log as asan_log
from orchestrator.backends.base import BuildFlags, Liveness, Wrapped
from orchestrator.errors import CheckerUnavailable
from orchestrator.model import Checker, ParseResult, ToolInfo

NAME = "recorded"
ASAN = Path(__file__).resolve().parent / "fixtures" / "asan"


def captured(name: str) -> ParseResult:
    """A real captured ASan log (tests/fixtures/asan/<name>.log), parsed."""
    with open(ASAN / f"{name}.log", encoding="utf-8", errors="replace") as lines:
        return asan_log.parse(lines)


class Recorded:
    """Each variant's launches read back as the parse recorded for it (`by_variant`;
    any other variant: a clean, complete log). `wraps` counts the launches wrapped."""

    name = NAME
    title = "recorded"
    checkers = frozenset({Checker.MEMCHECK})
    build_sanitizer = ""
    device_code = False
    uses_gpus = False
    frames_name_case = False
    #: what the next run's backend reads back, set by the test (`install`)
    by_variant: Mapping[str, ParseResult] = {}
    wraps: list[str] = []

    @classmethod
    def for_run(cls, host: host.Host, *, workers: int = 0) -> Recorded:
        return cls()

    @classmethod
    def from_task(cls, context: Mapping[str, str]) -> Recorded:
        return cls()

    def build_flags(self) -> BuildFlags:
        return BuildFlags()

    def probe(self) -> ToolInfo:
        return ToolInfo(NAME, "", "recorded")

    def serves(self, checker: Checker) -> str:
        if checker in (Checker.NONE, Checker.MEMCHECK):
            return ""
        return f"{checker.value} was not recorded"

    def watcher(self, checker: Checker) -> Checker:
        return Checker.NONE if checker is Checker.NONE else Checker.ASAN

    def prepare(self, cache: Path, python: str) -> dict[str, str]:
        return {"recorded": ",".join(sorted(self.by_variant))}

    def identity(self, host: host.Host) -> dict[str, str]:
        return {"version": "recorded", "path": ""}

    def task_context(self) -> dict[str, str]:
        return {}

    def gres(self) -> str:
        return ""

    def log_target(self, prefix: Path) -> Path | None:
        return prefix

    def wrap(
        self,
        argv: Sequence[str],
        *,
        checker: Checker,
        options: Sequence[str] = (),
        env: Mapping[str, str] | None = None,
        log_path: Path | None = None,
        preset: str = "",
        target_processes: str = "",
    ) -> Wrapped:
        type(self).wraps.append(str(log_path))
        return Wrapped(argv=tuple(argv), env=(("CSORCH_RECORDED", "1"),), log_path=log_path)

    def wrap_plain(self, argv: Sequence[str], env: Mapping[str, str], sanitizer: str) -> Wrapped:
        return Wrapped(argv=tuple(argv), env=(), log_path=None)

    def parse(self, lines: Iterable[str], *, checker: Checker = Checker.ASAN) -> ParseResult:
        return asan_log.parse(lines)

    def read(
        self, prefix: Path, checker: Checker, env: Mapping[str, str] | None = None
    ) -> ParseResult:
        # logs/<variant>/<run>/<case>/r<k>.launch<j>.checker
        variant = prefix.parts[-4]
        return self.by_variant.get(variant, captured("clean"))

    def attribute(self, result: ParseResult, nodes: Sequence[str]) -> ParseResult:
        return result

    def liveness(self, result: ParseResult) -> Liveness:
        return Liveness(result.complete, "recorded")


def install(monkeypatch: pytest.MonkeyPatch, **by_variant: ParseResult) -> host.Facts:
    """Register `Recorded` as the backend `NAME`, reading `by_variant`, and return a host's
    facts known without probing anything (this interpreter, no GPU, no checker)."""
    monkeypatch.setitem(backends.KINDS, NAME, Recorded)
    monkeypatch.setattr(Recorded, "by_variant", dict(by_variant))
    monkeypatch.setattr(Recorded, "wraps", [])
    missing = CheckerUnavailable(NAME, "not probed")
    fast = host.Host(python=f"3.11 ({sys.executable})", platform="test")
    return host.Facts(fast, (missing, missing))
