"""The options of one run: what the command line (or a Python caller) decides beyond the
experiment config, made in one place (`make`), with the checks every verb shares: the
backend asked for, `--devices`, a new `--out`."""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from orchestrator import backends, cache, host
from orchestrator.errors import CsorchError
from orchestrator.executors.base import Executor
from orchestrator.judge import Judgement
from orchestrator.model import Attempt, Build, Experiment
from orchestrator.model.job import Fanout
from orchestrator.run import places
from orchestrator.run.plan import parse_devices

#: names the directory the default results directories go under
RESULTS_ENV = "CSORCH_RESULTS_DIR"


def results_home() -> Path:
    """Where a run with no --out writes: $CSORCH_RESULTS_DIR, else
    $XDG_DATA_HOME/csorch/results, else ~/.local/share/csorch/results; never the current
    directory (the verb prints the directory it wrote)."""
    named = os.environ.get(RESULTS_ENV, "")
    if named:
        return Path(named).expanduser().resolve()
    xdg = os.environ.get("XDG_DATA_HOME", "")
    base = Path(xdg) if os.path.isabs(xdg) else Path.home() / ".local" / "share"
    return base / "csorch" / "results"


#: where results go when no --out is given
RESULTS = results_home()


@dataclass(frozen=True)
class Options:
    backend: str  # the chosen backend's name (auto is resolved by the caller; the run
    # makes its one object from it: `backends.make`)
    out: Path
    reason: str = ""  # why this backend (for the record)
    cache: Path = cache.DEFAULT_DIR
    work: Path | None = None  # the scratch trees; None: `cache`/work (see `work_dir`)
    jobs: int = 1
    devices: tuple[str, ...] = ()
    fanout: Fanout = Fanout.SHARD
    repeat: int | None = None  # overrides every run's repeats
    python: str = sys.executable
    keep_work: bool = False
    compile_cache: bool = True  # ccache under the builds where found (--no-compile-cache)
    executor: Executor | None = None  # None: local child processes
    resume: bool = False  # continue the run journaled in `out`
    #: a stored bundle whose verdict this run carries where nothing executable changed
    carry_from: Path | None = None
    #: the SSH key the bundle's manifest is signed with once the run returns (`run
    #: --sign`), kept in the journal so that a resume signs again
    sign: Path | None = None
    selected: tuple[str, ...] = ()  # the --case names (kept for a resume)
    # set by a caller running several pipelines in threads: stops this one as Ctrl-C does
    stop: threading.Event | None = None
    # shared by several pipelines at once (a gate's experiments): the jobs they all hold
    slots: threading.Semaphore | None = None
    # how the run is judged (builds, attempts) -> Judgement; None: causality against the
    # experiment's expectations (a scan, which states none, passes its own: run/scan.py)
    judge: Callable[[Sequence[Build], Sequence[Attempt]], Judgement] | None = None


def work_dir(options: Options) -> Path:
    """Where a run's scratch trees go: the given --work, else beside the build cache
    (CACHE/work), so that neither depends on the current directory."""
    return Path(options.work) if options.work is not None else Path(options.cache) / "work"


def check_repeat(experiment: Experiment, repeat: int | None) -> None:
    """CsorchError when `--repeat N` is below the experiment's `min_hits` (k of N): loading
    refuses a config whose k exceeds its N, and the flag must not lower k silently."""
    k = experiment.expect.min_hits if experiment.expect is not None else None
    if repeat is not None and k is not None and repeat < k:
        where = f" ({experiment.config})" if experiment.config else ""
        raise CsorchError(
            f"--repeat {repeat} is below min_hits {k} of experiment "
            f"'{experiment.name}'{where}: no control could reach k of N",
            hint=f"give --repeat {k} or more, or lower expect.min_hits in the config",
        )


#: the default's cap: every job may hold a CUDA context on one GPU (about 0.5 GiB each)
MAX_DEFAULT_JOBS = 16


def default_jobs() -> int:
    """Child processes at once when none is asked for: the CPU count, up to 16 (each
    child's threads are its share of the CPUs, `child_threads`). On 16 cores the release
    gate took 93.6 s cold with 8 jobs, 81.7 s with 12 and 86.2 s with 16, then 48.8 s
    with 16 and one thread a child (H200, 2026-12-04; docs/benchmarks.md)."""
    return min(os.cpu_count() or 1, MAX_DEFAULT_JOBS)


def racecheck_workers(jobs: int) -> int:
    """racecheck's CPU threads per child: the CPUs shared among the `jobs` children that
    may run at once (at least one); left to itself, each racecheck takes every CPU."""
    return max(1, (os.cpu_count() or 1) // max(1, jobs))


def child_threads(jobs: int) -> int:
    """OpenMP threads per child (OMP_NUM_THREADS) when `jobs` children may run at once:
    the CPUs shared among them (at least one); 0 for a single job, which keeps the host's
    default. Left to itself every child's torch starts a thread per core: the release
    gate's 16 children on 16 cores spent 825 CPU seconds in their attempts, 233 s with one
    thread each, and took 97 s against 62 s (H200, 2026-12-04; docs/benchmarks.md)."""
    return 0 if jobs <= 1 else racecheck_workers(jobs)  # the same share of the CPUs


def make(choice: backends.Choice, out: Path, *, jobs: int | None = None, **settings) -> Options:
    """The one place Options are made: the backend chosen (and why), the results
    directory, the jobs (default `default_jobs()`), any other field by name."""
    return Options(
        backend=choice.backend,
        reason=choice.reason,
        out=out,
        jobs=jobs or default_jobs(),
        **settings,
    )


def default_out(name: str) -> Path:
    """results/<name>-<time>, made unique with -2, -3 ... when taken."""
    stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
    path = RESULTS / f"{name}-{stamp}"
    n = 1
    while path.exists():
        n += 1
        path = RESULTS / f"{name}-{stamp}-{n}"
    return path


def check_backend(name: str) -> None:
    """CsorchError unless `name` is a backend --backend accepts (checked before any work)."""
    choices = ("auto", *backends.KINDS)  # the registry as it is now
    if name not in choices:
        raise CsorchError(f"unknown backend {name!r}", hint="choose one of: " + ", ".join(choices))


def choose_backend(requested: str, python: str = "") -> tuple[backends.Choice, host.Facts]:
    """The backend to run with and the host's facts (torch's own answer still coming:
    the pipeline joins it behind the builds), asked of `python` (the experiments' own
    interpreter, the config's `python:`; csorch's where empty): the torch, CUDA and
    Python the bundle records are the ones the builds and cases use. CsorchError for an
    unknown name or a checker asked for by name that is missing."""
    check_backend(requested)
    facts = host.start(python or sys.executable, backends.probe_checkers)
    sanitizer, asan = facts.checkers
    choice = backends.choose(requested, gpus=len(facts.fast.gpus), sanitizer=sanitizer, asan=asan)
    return choice, facts


def interpreter_of(experiments) -> str:
    """The one interpreter every experiment names with `python:` ("" when none does or
    they differ: then the host is csorch's own, and each build records its own)."""
    named = {e.environment.python for e in experiments}
    return named.pop() if len(named) == 1 else ""


def resolve_devices(text: str | None, backend: str, facts: host.Host) -> tuple[str, ...]:
    """`--devices`: explicit GPU indices/UUIDs, or `all` (every GPU present when there are
    two or more; one GPU or none needs no fan-out). CsorchError for bad text, or explicit
    devices with the ASan backend (it runs on the CPU)."""
    if text is None:
        return ()
    made = backends.kind(backend)
    on_gpus = made.uses_gpus
    if text.strip() == "all":
        gpus = len(facts.gpus) if on_gpus else 0
        return tuple(str(i) for i in range(gpus)) if gpus >= 2 else ()
    try:
        devices = parse_devices(text)
    except ValueError as exc:
        raise CsorchError(f"--devices: {exc}") from None
    if not on_gpus:
        raise CsorchError(
            f"--devices fans out over GPUs; the {made.title} backend runs on the CPU",
            hint="drop --devices, or use --backend compute-sanitizer",
        )
    return devices


def check_out(path: Path) -> None:
    """CsorchError unless `--out path` can become a new results directory: not a file,
    not under one, and empty if it exists (a bundle's manifest hashes every log in it:
    old files would pass as evidence)."""
    places.nameable(path, "--out")
    if path.exists() and not path.is_dir():
        raise CsorchError(f"--out {path} is a file", hint="give a new directory")
    parent = next((p for p in path.parents if p.exists()), None)
    if parent is not None and not parent.is_dir():
        raise CsorchError(f"--out {path} is under {parent}, a file", hint="give a new directory")
    if path.is_dir() and any(path.iterdir()):
        raise CsorchError(f"--out {path} is not empty", hint="give a new directory")
