"""Checker backends, and the choice `--backend auto` makes.

`choose` is pure: the caller probes the host (GPU count, `ComputeSanitizer().probe()`,
`Asan().probe()`) and passes the facts in; `choose` decides and says why. A backend
asked for explicitly but missing is an error, never a silent fallback.
"""

from __future__ import annotations

from dataclasses import dataclass

from orchestrator.backends.asan.backend import Asan
from orchestrator.backends.base import Backend
from orchestrator.backends.compute_sanitizer.backend import ComputeSanitizer
from orchestrator.backends.none import NoChecker
from orchestrator.errors import CheckerUnavailable
from orchestrator.host import Host
from orchestrator.model import Checker, ToolInfo

__all__ = [
    "KINDS",
    "Asan",
    "Backend",
    "Choice",
    "ComputeSanitizer",
    "NoChecker",
    "choose",
    "from_task",
    "kind",
    "make",
    "named",
    "reader",
    "serves",
]

#: the sanitizing backends by the name a bundle records and --backend takes; a new
#: backend is a subpackage and one entry here (and its case in `choose`)
KINDS: dict[str, type[Backend]] = {
    Asan.name: Asan,
    ComputeSanitizer.name: ComputeSanitizer,
}
CHOICES = ("auto", *KINDS)


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


def kind(backend: str) -> type[Backend]:
    """The class of the backend named `backend` (ValueError for another name)."""
    try:
        return KINDS[backend]
    except KeyError:
        raise ValueError(f"no backend {backend!r} (resolve auto with choose)") from None


def make(backend: str, host: Host, *, workers: int = 0) -> Backend:
    """The one place a run's checker backend is made, from its name and the host's facts
    (ASan: the runtime they found; compute-sanitizer: the tool they found, its racecheck
    bounded to `workers` CPU threads, 0 for the tool's default)."""
    return kind(backend).for_run(host, workers=workers)


def named(backend: str) -> Backend:
    """A backend of that name, with nothing found or probed yet: what it serves, which
    tool watches a run, how it reads a channel (ValueError for another name)."""
    return kind(backend)()


def reader(backend: str) -> Backend | None:
    """A backend that reads the channel of a stored run recorded under `backend` (it
    starts nothing), or None for a name csorch does not know."""
    made = KINDS.get(backend)
    return made() if made is not None else None


def from_task(context: dict[str, str]) -> Backend:
    """The backend a Slurm task's context names (`Backend.task_context`)."""
    return kind(context["backend"]).from_task(context)


def serves(backend: str, checker: Checker) -> str:
    """ "" when `backend` can run a run with `checker`, else why not (that run is not run)."""
    return named(backend).serves(checker)


def probe_checkers() -> tuple[ToolInfo | CheckerUnavailable, ToolInfo | CheckerUnavailable]:
    """(compute-sanitizer, ASan), each found or why not, as `choose` and `host.start` want them."""
    found: list[ToolInfo | CheckerUnavailable] = []
    for backend in (ComputeSanitizer(), Asan()):
        try:
            found.append(backend.probe())
        except CheckerUnavailable as exc:
            found.append(exc)
    return found[0], found[1]
