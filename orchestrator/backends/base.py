"""What a backend is: one checker's flags, wrapping, version probe, liveness and parser.

A backend wraps a test command (argv + environment) so that its checker watches it,
says which log to parse afterwards, and parses that log into a `ParseResult`. Parsing
is pure: text lines in, records out; no files, no environment. Probing the tool's
version starts a process, through `proc` only.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol, runtime_checkable

from orchestrator.model import Checker, Env, ParseResult, ToolInfo
from orchestrator.model.record import Record

__all__ = [
    "CASE_BEGIN_RE",
    "CASE_END_RE",
    "Backend",
    "BuildFlags",
    "Liveness",
    "ParseResult",
    "ToolInfo",
    "Wrapped",
]

# Case boundaries written by the pytest plugin `orchestrator.markers.plugin`: into its own
# markers file, and under ASan into the runtime's own per-process log (through the
# runtime), where the findings between the two belong to that test.
# (`.*\S|\s` then `\s*$`, not `.+?\s*$`: the lazy form is quadratic on a long run of
# spaces inside a line, the greedy one linear; both drop the trailing whitespace)
# [csorch-case-begin] tests/regression/test_rng_ownership.py::test_replay[cpu]
CASE_BEGIN_RE = re.compile(r"^\[csorch-case-begin\] (?P<case>.*\S|\s)\s*$")
# [csorch-case-end] tests/regression/test_rng_ownership.py::test_replay[cpu]
CASE_END_RE = re.compile(r"^\[csorch-case-end\] (?P<case>.*\S|\s)\s*$")


@dataclass(frozen=True)
class BuildFlags(Record):
    """Extra flags a build needs for this checker (they enter the build-cache key)."""

    cflags: tuple[str, ...] = ()  # host C/C++ compiler
    cuda_cflags: tuple[str, ...] = ()  # nvcc
    ldflags: tuple[str, ...] = ()


@dataclass(frozen=True)
class Wrapped(Record):
    """A command ready to run under a checker."""

    argv: tuple[str, ...]
    env: Env  # set on top of the attempt's environment
    log_path: Path | None  # the checker's own log; None: parse the command's output log


@dataclass(frozen=True)
class Liveness(Record):
    """Whether the checker demonstrably watched the run."""

    live: bool
    reason: str


@runtime_checkable
class Backend(Protocol):
    name: str
    checkers: frozenset[Checker]  # the run checkers this backend can serve

    def build_flags(self) -> BuildFlags: ...

    def probe(self) -> ToolInfo:
        """Find the tool and its version; raise CheckerUnavailable if it cannot run."""
        ...

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
        """`argv` under the checker. `env` is the attempt's environment delta, so that a
        backend can extend a variable (LD_PRELOAD) instead of replacing it. `log_path`:
        where the checker writes its own logs, one per process (ASan: the `log_path`
        prefix; compute-sanitizer: a `--log-file` pattern with `%p`); csorch's executor
        always passes one (`executors/channel.py`), so that the subject's output is never
        parsed as the checker's. None keeps the checker's output in the command's stream.
        `preset` (a named set of options) and `target_processes` are the run's, for a
        backend that has them."""
        ...

    def parse(self, lines: Iterable[str]) -> ParseResult: ...

    def liveness(self, result: ParseResult) -> Liveness: ...
