"""One error hierarchy. Each error carries what the user needs to fix the input.

Only deliberate, user-facing failures are `CsorchError`s; a bug in csorch stays an
ordinary exception with its traceback. A failure that belongs to one variant (a patch
that does not apply, a build that fails) is recorded in the bundle and the other
variants still run; the CLI is the only place that turns an error into an exit code.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path


class CsorchError(Exception):
    """Base class: `str(err)` is the complete message for the user, hint included."""

    def __init__(self, message: str, *, hint: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        return f"{self.message}\n  hint: {self.hint}" if self.hint else self.message


class ConfigError(CsorchError):
    """An experiment or policy file is invalid: names file, line and key."""

    def __init__(
        self, file: Path | str, line: int | None, key: str, problem: str, *, hint: str = ""
    ) -> None:
        self.file = Path(file)
        self.line = line
        self.key = key
        self.problem = problem
        where = f"{self.file}:{line}" if line else str(self.file)
        super().__init__(f"{where}: {key}: {problem}" if key else f"{where}: {problem}", hint=hint)


class SourceError(CsorchError):
    """A variant's source cannot be materialized (missing directory, unknown git ref)."""

    def __init__(self, source: str, problem: str, *, hint: str = "") -> None:
        self.source = source
        self.problem = problem
        super().__init__(f"source {source}: {problem}", hint=hint)


class PatchError(CsorchError):
    """A patch does not apply: names the patch, the file and the failing hunk."""

    def __init__(self, patch: Path | str, file: str = "", hunk: str = "", detail: str = "") -> None:
        self.patch = Path(patch)
        self.file = file
        self.hunk = hunk
        self.detail = detail
        where = ", ".join(p for p in (file, f"hunk {hunk}" if hunk else "") if p)
        msg = f"patch {self.patch} does not apply" + (f" ({where})" if where else "")
        super().__init__(
            msg + (f": {detail}" if detail else ""),
            hint="rebase the patch onto the variant's source, or point the variant at the "
            "source ref it was written for",
        )


class BuildError(CsorchError):
    """A build command failed: carries the command, its exit status and the log tail."""

    def __init__(
        self,
        variant: str,
        command: Sequence[str],
        returncode: int | None,
        log_path: Path | None = None,
        log_tail: str = "",
        *,
        problem: str = "",
    ) -> None:
        self.variant = variant
        self.command = tuple(command)
        self.returncode = returncode
        self.log_path = log_path
        self.log_tail = log_tail
        self.problem = problem
        status = "timed out" if returncode is None else f"exited {returncode}"
        what = problem or f"`{' '.join(self.command)}` {status}"
        msg = f"build of variant {variant!r} failed: {what}"
        if log_path is not None:
            msg += f"; full log: {log_path}"
        if log_tail:
            msg += "\n" + "\n".join("    " + line for line in log_tail.splitlines())
        super().__init__(msg, hint="fix the build error above; the other variants still run")


class CheckerUnavailable(CsorchError):
    """A checker was asked for but cannot run here (tool or runtime missing)."""

    def __init__(self, checker: str, reason: str, *, hint: str = "") -> None:
        self.checker = checker
        self.reason = reason
        super().__init__(f"checker {checker} is unavailable: {reason}", hint=hint)


class ProcessStartError(CsorchError):
    """A child process could not be started at all (missing program, bad cwd)."""

    def __init__(self, argv: Sequence[str], reason: str) -> None:
        self.argv = tuple(argv)
        self.reason = reason
        program = self.argv[0] if self.argv else "<empty argv>"
        super().__init__(
            f"cannot start {program!r}: {reason}",
            hint="check that the program is installed and on PATH, and that the working "
            "directory exists",
        )


class HostMismatch(CsorchError):
    """Torch's own answer about the host (`import torch`, joined behind the builds)
    contradicts a fast fact (torch/version.py, nvidia-smi) that the builds were keyed by
    or the backend was chosen on: names the fact and both values (host.py)."""

    def __init__(self, fact: str, fast: object, full: object, *, detail: str = "") -> None:
        self.fact = fact
        self.fast = fast
        self.full = full
        said = f" ({detail})" if detail else ""
        super().__init__(
            f"the host's facts disagree: {fact} is {fast!r} by torch/version.py and "
            f"nvidia-smi but {full!r} by `import torch`{said}; the builds were keyed by the "
            "first, so no attempt runs on them",
            hint="find why torch and nvidia-smi disagree (a driver too old for torch's CUDA, "
            "GPUs torch cannot open, a broken torch install); with CUDA_DEVICE_ORDER="
            "FASTEST_FIRST (CUDA's default) set, csorch asks torch before it builds",
        )


class BundleError(CsorchError):
    """A results bundle is missing, unreadable, of another schema, or fails a digest."""

    def __init__(self, path: Path | str, problem: str, *, hint: str = "") -> None:
        self.path = Path(path)
        self.problem = problem
        super().__init__(f"bundle {self.path}: {problem}", hint=hint)


class DocumentError(CsorchError):
    """A JSON document csorch wrote is missing, damaged or of another schema: names the
    file and the key."""

    def __init__(self, file: Path | str, key: str, problem: str, *, hint: str = "") -> None:
        self.file = Path(file)
        self.key = key
        self.problem = problem
        super().__init__(
            f"{self.file}: {key}: {problem}" if key else f"{self.file} {problem}",
            hint=hint or "the file was damaged or edited; re-run, or restore it from its source",
        )


class BisectError(CsorchError):
    """A bisection cannot give an answer: an end that does not re-check as the search
    assumes, marks that contradict each other, or a range that is not a range."""
