"""The compute-sanitizer backend: memcheck, initcheck, racecheck and synccheck on a GPU.

Wrapping: `compute-sanitizer --tool T --print-limit N [--log-file F] [options] -- argv`.
`--error-exitcode` is deliberately not passed: it only applies when the application
itself succeeded, so with it the exit code would mix the test's outcome with the
checker's; csorch judges the two separately (exit code = the test, log = the checker).
The log grammar and its parser live in `log` (frames and their trimming in `frames`).
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from orchestrator import proc
from orchestrator.backends import channel
from orchestrator.backends.base import BuildFlags, Liveness, Wrapped
from orchestrator.backends.compute_sanitizer import log as cs_log
from orchestrator.config.schema import RESERVED_OPTIONS
from orchestrator.errors import CheckerUnavailable, ProcessStartError
from orchestrator.host import Host
from orchestrator.model import Checker, ParseResult, ToolInfo

NAME = "compute-sanitizer"
DEFAULT_PRINT_LIMIT = 1000  # printing only; ERROR SUMMARY still counts every error
#: the options of each preset a run may name (config/schema.py's PRESETS says what each is
#: for and who runs it that way; a test keeps the two tables' names equal)
PRESETS: dict[str, tuple[str, ...]] = {
    "cccl": (
        "--padding", "512", "--track-stream-ordered-races", "all", "--check-device-heap", "yes",
    ),
    "leaks": ("--leak-check", "full"),
    "pool-allocator": ("--nvtx", "yes"),
    "blocking": ("--force-blocking-launches",),
}  # fmt: skip


# NVIDIA (R) Compute Sanitizer ... Version 2025.3.1.0 (build 36398880) (public-release)
VERSION_RE = re.compile(r"^Version (?P<version>\d[\w.]*)", re.MULTILINE)


def parse_version(text: str) -> str | None:
    """The version in `compute-sanitizer --version` output, or None."""
    m = VERSION_RE.search(text)
    return m["version"] if m else None


def locate(environ: Mapping[str, str]) -> Path | None:
    """compute-sanitizer on PATH, else under $CUDA_HOME (or /usr/local/cuda)."""
    found = shutil.which(NAME, path=environ.get("PATH", ""))
    if found:
        return Path(found)
    for root in (environ.get("CUDA_HOME"), environ.get("CUDA_PATH"), "/usr/local/cuda"):
        if root:
            candidate = Path(root) / "bin" / NAME
            if candidate.is_file() and os.access(candidate, os.X_OK):
                return candidate
    return None


def _unless_given(preset: Sequence[str], given: set[str]) -> list[str]:
    """A preset's options less those the run's own options set (the run's win)."""
    out: list[str] = []
    keep = True
    for token in preset:
        if token.startswith("--"):
            keep = token not in given
        if keep:
            out.append(token)
    return out


class ComputeSanitizer:
    """compute-sanitizer at `path` (found on PATH when None)."""

    name = NAME
    title = NAME
    checkers = frozenset(
        {Checker.MEMCHECK, Checker.INITCHECK, Checker.RACECHECK, Checker.SYNCCHECK}
    )
    build_sanitizer = ""
    device_code = True  # an extension's build must hold GPU code for the tool to watch
    uses_gpus = True
    #: the tool's file holds no case markers (they are the plugin's): its records' Python
    #: frames name the case (`attribute`)
    frames_name_case = True

    def __init__(
        self,
        path: Path | str | None = None,
        *,
        print_limit: int = DEFAULT_PRINT_LIMIT,
        racecheck_workers: int = 0,
    ):
        self.path = Path(path) if path is not None else locate(os.environ)
        self.print_limit = print_limit
        # racecheck's CPU threads (0: the tool's default, every CPU of the host, which
        # oversubscribes it when --jobs children run racecheck at once)
        self.racecheck_workers = racecheck_workers

    def _require_path(self) -> Path:
        if self.path is None:
            raise CheckerUnavailable(
                NAME,
                "compute-sanitizer was not found on PATH, in $CUDA_HOME/bin or in "
                "/usr/local/cuda/bin",
                hint="install the CUDA toolkit, put its bin directory on PATH, or pick "
                "--backend asan on a machine without a GPU",
            )
        return self.path

    def build_flags(self) -> BuildFlags:
        # -lineinfo: device frames get file:line; it does not change the generated code
        return BuildFlags(cflags=("-fno-omit-frame-pointer",), cuda_cflags=("-lineinfo",))

    def serves(self, checker: Checker) -> str:
        return ""  # every run checker: none is plain, the others are its tools

    def watcher(self, checker: Checker) -> Checker:
        return checker

    def prepare(self, cache: Path, python: str) -> dict[str, str]:
        return {}

    def identity(self, host: Host) -> dict[str, str]:
        return {"version": host.compute_sanitizer, "path": host.compute_sanitizer_path}

    def task_context(self) -> dict[str, str]:
        return {"checker_path": str(self.path or "")}

    @classmethod
    def for_run(cls, host: Host, *, workers: int = 0) -> ComputeSanitizer:
        """The backend of a run on `host` (the tool it found, else on PATH), racecheck's CPU
        threads bounded to `workers` (0: the tool's default)."""
        return cls(host.compute_sanitizer_path or None, racecheck_workers=workers)

    @classmethod
    def from_task(cls, context: Mapping[str, str]) -> ComputeSanitizer:
        """The backend a Slurm task's context describes (`task_context`)."""
        return cls(context.get("checker_path") or None)

    def gres(self) -> str:
        return "gpu:1"

    def log_target(self, prefix: Path) -> Path | None:
        return channel.cs_pattern(prefix)  # `--log-file prefix.%p.log`

    def wrap_plain(self, argv: Sequence[str], env: Mapping[str, str], sanitizer: str) -> Wrapped:
        return Wrapped(argv=tuple(argv), env=(), log_path=None)

    def read(
        self, prefix: Path, checker: Checker, env: Mapping[str, str] | None = None
    ) -> ParseResult:
        return channel.read_cs(prefix, lambda lines: cs_log.parse(lines, checker=checker))

    def attribute(self, result: ParseResult, nodes: Sequence[str]) -> ParseResult:
        return channel.attribute(result, nodes)

    def probe(self) -> ToolInfo:
        path = self._require_path()
        try:
            out = proc.capture([path, "--version"], timeout=60)
        except ProcessStartError as exc:
            raise CheckerUnavailable(NAME, exc.reason) from None
        version = parse_version(out.output)
        if out.returncode != 0 or version is None:
            tail = out.output.strip().splitlines()[-1:] or ["no output"]
            raise CheckerUnavailable(NAME, f"`{path} --version` exited {out.returncode}: {tail[0]}")
        return ToolInfo(NAME, str(path), version)

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
        if checker not in self.checkers:
            raise ValueError(f"{NAME} does not run checker {checker.value}")
        for option in options:
            flag = option.split("=", 1)[0]
            if flag in RESERVED_OPTIONS:
                raise ValueError(f"option {flag} is reserved: {RESERVED_OPTIONS[flag]}")
        args = [str(self._require_path()), "--tool", checker.value]
        if not any(o.split("=", 1)[0] == "--print-limit" for o in options):
            args += ["--print-limit", str(self.print_limit)]
        if log_path is not None:
            args += ["--log-file", str(log_path)]
        given = {o.split("=", 1)[0] for o in options if o.startswith("--")}
        args += _unless_given(PRESETS[preset] if preset else (), given)
        if target_processes:
            args += ["--target-processes", target_processes]
        if (
            checker is Checker.RACECHECK
            and self.racecheck_workers
            and ("--racecheck-num-workers" not in given)
        ):
            args += ["--racecheck-num-workers", str(self.racecheck_workers)]
        return Wrapped(argv=(*args, *options, *argv), env=(), log_path=log_path)

    def parse(self, lines: Iterable[str], *, checker: Checker = Checker.MEMCHECK) -> ParseResult:
        return cs_log.parse(lines, checker=checker)

    def liveness(self, result: ParseResult) -> Liveness:
        if result.tool_errors:
            return Liveness(False, result.tool_errors[0])
        if not result.complete:
            return Liveness(False, "no ERROR SUMMARY line: the tool did not finish the run")
        return Liveness(True, "ERROR SUMMARY present")
