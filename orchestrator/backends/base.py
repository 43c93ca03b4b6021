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

from orchestrator.host import Host
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
    """Everything that varies by checker. Nothing outside `backends/` asks which backend it
    holds (tests/unit/test_backend_seam.py): it asks the backend."""

    name: str  # as recorded in a bundle and given to --backend
    title: str  # as a sentence names it ("ASan")
    checkers: frozenset[Checker]  # the run checkers this backend can serve
    #: the sanitizer the builds are instrumented with ("address": ASan) or ""
    build_sanitizer: str
    #: whether an extension built for it must hold GPU code (compute-sanitizer)
    device_code: bool
    #: whether its attempts run on GPUs (--devices fans out over them; Slurm asks for one)
    uses_gpus: bool
    #: whether its channel lacks the case markers, so that the Python frames in its
    #: records name the case (`CSORCH_CASE_FRAMES`, `attribute`)
    frames_name_case: bool

    @classmethod
    def for_run(cls, host: Host, *, workers: int = 0) -> Backend:
        """The backend of a run on `host` (`backends.make`; `workers`: the CPU threads a
        checker that has them may use, 0 for its default)."""
        ...

    @classmethod
    def from_task(cls, context: Mapping[str, str]) -> Backend:
        """The backend a Slurm task's context describes (`task_context`)."""
        ...

    def build_flags(self) -> BuildFlags: ...

    def probe(self) -> ToolInfo:
        """Find the tool and its version; raise CheckerUnavailable if it cannot run."""
        ...

    def serves(self, checker: Checker) -> str:
        """ "" when this backend can run a run with `checker`, else why not."""
        ...

    def watcher(self, checker: Checker) -> Checker:
        """The tool that actually watches a run configured with `checker`."""
        ...

    def prepare(self, cache: Path, python: str) -> dict[str, str]:
        """Set up what every launch of a run needs (built once per content under `cache`;
        `python` runs the cases), and say what the bundle records of it."""
        ...

    def identity(self, host: Host) -> dict[str, str]:
        """The bundle's `backend` block beside its name: the tool's version and path, as
        the host's facts give them."""
        ...

    def task_context(self) -> dict[str, str]:
        """What a Slurm task needs to make this backend again (`backends.from_task`)."""
        ...

    def gres(self) -> str:
        """What a Slurm task asks for by default: a GPU where the checker needs one."""
        ...

    def log_target(self, prefix: Path) -> Path | None:
        """The `log_path` to give `wrap` so that the checker writes its channel under
        `prefix` (`backends.channel`), where `read` finds it."""
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
        where the checker writes its own logs, one per process (`log_target`); csorch's
        executor always passes one, so that the subject's output is never parsed as the
        checker's. None keeps the checker's output in the command's stream. `preset` (a
        named set of options) and `target_processes` are the run's, for a backend that has
        them."""
        ...

    def wrap_plain(self, argv: Sequence[str], env: Mapping[str, str], sanitizer: str) -> Wrapped:
        """`argv` run without a checker over a build instrumented with `sanitizer` (its
        runtime preloaded where it cannot load otherwise); its findings are not read."""
        ...

    def parse(self, lines: Iterable[str], *, checker: Checker = Checker.MEMCHECK) -> ParseResult:
        """One log's records (`checker`: the tool that wrote it)."""
        ...

    def read(
        self, prefix: Path, checker: Checker, env: Mapping[str, str] | None = None
    ) -> ParseResult:
        """One launch's channel (the files under `prefix`) as one parse: the executor and
        `bundle.rederive` both read it through here. `env`: what csorch set for the launch
        (`wrap`'s), which the channel's processes are held to."""
        ...

    def attribute(self, result: ParseResult, nodes: Sequence[str]) -> ParseResult:
        """`result`'s findings given their case, where the channel did not say (`nodes`:
        the launch's cases, in the order they began)."""
        ...

    def liveness(self, result: ParseResult) -> Liveness: ...
