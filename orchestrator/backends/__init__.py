"""Checker backends, and the choice `--backend auto` makes.

`choose` is pure: the caller probes the host (GPU count, `ComputeSanitizer().probe()`,
`Asan().probe()`) and passes the facts in; `choose` decides and says why. A backend
asked for explicitly but missing is an error, never a silent fallback.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from orchestrator.backends.asan.backend import Asan
from orchestrator.backends.base import Backend
from orchestrator.backends.compute_sanitizer.backend import ComputeSanitizer
from orchestrator.backends.none import NoChecker
from orchestrator.errors import CheckerUnavailable
from orchestrator.model import Checker, ToolInfo

__all__ = [
    "Asan",
    "Backend",
    "Choice",
    "ComputeSanitizer",
    "NoChecker",
    "choose",
    "make",
    "serves",
]

CHOICES = ("auto", "compute-sanitizer", "asan")


@dataclass(frozen=True)
class Choice:
    backend: str  # "compute-sanitizer" or "asan"
    reason: str


def choose(
    requested: str,
    *,
    gpus: int,
    sanitizer: ToolInfo | CheckerUnavailable,
    asan: ToolInfo | CheckerUnavailable,
) -> Choice:
    """Pick the sanitizing backend from what the host has."""
    if requested not in CHOICES:
        raise ValueError(f"unknown backend {requested!r}; choose from {', '.join(CHOICES)}")
    if requested == "compute-sanitizer":
        if isinstance(sanitizer, CheckerUnavailable):
            raise sanitizer
        if gpus == 0:
            raise CheckerUnavailable(
                "compute-sanitizer",
                "no GPU is visible",
                hint="check CUDA_VISIBLE_DEVICES and nvidia-smi, or use --backend asan",
            )
        return Choice("compute-sanitizer", "asked for with --backend compute-sanitizer")
    if requested == "asan":
        if isinstance(asan, CheckerUnavailable):
            raise asan
        return Choice("asan", "asked for with --backend asan")
    if gpus > 0 and isinstance(sanitizer, ToolInfo):
        return Choice(
            "compute-sanitizer",
            f"{gpus} GPU(s) and compute-sanitizer {sanitizer.version} at {sanitizer.path}",
        )
    why = "no GPU is visible" if gpus == 0 else f"compute-sanitizer missing ({sanitizer.reason})"  # type: ignore[union-attr]
    if isinstance(asan, ToolInfo):
        return Choice("asan", f"{why}; ASan runtime at {asan.path} stands in for memcheck")
    raise CheckerUnavailable(
        "auto",
        f"{why}, and ASan is unavailable too ({asan.reason})",
        hint="install the CUDA toolkit on a GPU machine, or gcc's ASan runtime",
    )


def make(
    backend: str,
    *,
    asan_runtime: Path | str | None = None,
    asan_fold: Path | None = None,
    sanitizer: Path | str | None = None,
    racecheck_workers: int = 0,
) -> Asan | ComputeSanitizer:
    """The one place a run's checker backend is made: "asan" (its runtime, else found;
    the report-fold shim once built) or "compute-sanitizer" (its path, else found;
    racecheck's CPU threads bounded to `racecheck_workers`, 0 for the tool's default)."""
    if backend == "asan":
        return Asan(asan_runtime or None, fold=asan_fold)
    if backend == "compute-sanitizer":
        return ComputeSanitizer(sanitizer or None, racecheck_workers=racecheck_workers)
    raise ValueError(f"no backend {backend!r} (resolve auto with choose)")


def serves(backend: str, checker: Checker) -> str:
    """ "" when `backend` can run a run with `checker`, else why not (that run is not run)."""
    if checker is Checker.NONE:
        return ""
    if backend == "asan" and checker is not Checker.MEMCHECK:
        return f"{checker.value} has no CPU stand-in; it needs compute-sanitizer on a GPU"
    return ""


def probe_checkers() -> tuple[ToolInfo | CheckerUnavailable, ToolInfo | CheckerUnavailable]:
    """(compute-sanitizer, ASan), each found or why not, as `choose` and `host.start` want them."""
    found: list[ToolInfo | CheckerUnavailable] = []
    for backend in (ComputeSanitizer(), Asan()):
        try:
            found.append(backend.probe())
        except CheckerUnavailable as exc:
            found.append(exc)
    return found[0], found[1]
