"""What an experiment declares (config/ builds these): `Experiment`, `SourceSpec`, `Variant`,
`BuildSpec`, `Environment`, `Run`, `Case`, `Suppression`, `Expectations`, `TargetPattern`,
`SlurmSettings`."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from orchestrator.model.kinds import (
    BuildKind,
    CaseKind,
    CasesFrom,
    Checker,
    Env,
    Outcome,
    SourceKind,
)
from orchestrator.model.record import Record

#: the most repeats a run may ask for (config `repeats:` and --repeat)
MAX_REPEATS = 10_000
#: the most attempts one experiment may plan (variants x runs x repeats x cases x devices)
MAX_ATTEMPTS = 100_000


@dataclass(frozen=True)
class SlurmSettings(Record):
    partition: str = ""
    account: str = ""
    time: float | None = None  # seconds per task; None: the longest attempt timeout + margin
    gres: str | None = None  # None: the backend's (gpu:1 under compute-sanitizer, "" under asan)
    sbatch: tuple[str, ...] = ()
    throttle: int = 0  # 0: as many at once as Slurm gives
    poll: float = 10.0
    max_array: int = 1000
    compile_cache: str = ""  # the compile cache's shared Redis, redis://HOST[:PORT][/DB]

    def gres_for(self, default: str) -> str:
        """What each attempt asks for: the configured resource, else the backend's
        `default` (one GPU per attempt where the checker needs one)."""
        if self.gres is not None:
            return "" if self.gres == "none" else self.gres
        return default


@dataclass(frozen=True)
class SourceSpec(Record):
    """Where a variant's source comes from: a directory, or a git repository at a ref."""

    kind: SourceKind
    location: str  # absolute directory (PATH, or a local GIT repository) or a git URL
    ref: str = ""  # GIT only
    subdir: str = ""  # GIT only: the subject's directory inside the repository


@dataclass(frozen=True)
class BuildSpec(Record):
    kind: BuildKind
    command: tuple[str, ...] = ()  # COMMAND: argv run in the materialized tree
    description: str = ""  # JIT/WHEEL: the build description inside the tree ("" = default)
    outputs: tuple[str, ...] = ()  # globs inside the tree whose sha256 the bundle records
    env: Env = ()
    flags: tuple[str, ...] = ()  # JIT/WHEEL/PIP: extra compile flags
    import_path: str = ""  # COMMAND: the directory in the built tree the cases import from
    # PREBUILT: exactly one of a wheel file, a pinned requirement (from `find_links`, a
    # wheel directory, or `index`, a package index URL), or an installed distribution
    wheel: str = ""  # absolute path of a .whl
    requirement: str = ""  # "name==version"
    find_links: str = ""  # absolute directory of wheels (offline)
    index: str = ""  # a package index URL
    installed: str = ""  # a distribution's name, installed in the environment's python


@dataclass(frozen=True)
class Environment(Record):
    """The project's environment: the interpreter its builds and cases use, and the test
    requirements installed into each variant's private directory (docs/your-extension.md)."""

    python: str = ""  # "" = csorch's own interpreter
    requires: tuple[str, ...] = ()  # pinned requirements ("expecttest==0.3.0")
    requirements_file: str = ""  # absolute path of a requirements file
    wheels: str = ""  # a wheel directory: installs from it only (--no-index)


@dataclass(frozen=True)
class Variant(Record):
    name: str
    build: BuildSpec
    patches: tuple[Path, ...] = ()  # applied in order
    source: SourceSpec | None = None  # None: the experiment's source
    description: str = ""


@dataclass(frozen=True)
class Suppression(Record):
    """One record of a compute-sanitizer suppression file (`suppressions.py` reads and
    matches them). String values are regexes, as the tool treats them."""

    source: str  # "path/supp.xml#2": the file and the record's number in it
    kind: str  # the tool's <kind>: "Api", "Precise", ...
    what: tuple[tuple[str, str], ...] = ()  # <what> children: ("api", "cuda.*"), ("size", "4")
    frames: tuple[tuple[str, str, str], ...] = ()  # (function, file, module), innermost first
    stack: str = ""  # "host" or "device": which of a finding's stacks `frames` is


@dataclass(frozen=True)
class Run(Record):
    name: str
    checker: Checker
    options: tuple[str, ...] = ()  # extra compute-sanitizer options
    env: Env = ()
    repeats: int | None = None  # None: the experiment's
    timeout: float | None = None  # seconds per attempt; None: the experiment's
    description: str = ""
    suppressions: tuple[Suppression, ...] = ()  # findings they match are kept, marked
    case_timeout: float | None = None  # seconds per pytest case; None: the experiment's
    preset: str = ""  # a named set of options (config/schema.py's PRESETS), "" for none
    target_processes: str = ""  # compute-sanitizer's --target-processes; "" the tool's default


@dataclass(frozen=True)
class Case(Record):
    name: str
    kind: CaseKind
    # absolute paths or node ids ("/abs/test_x.py::test_y"); relative to the variant's
    # tree under `cases_from: variant`
    pytest: tuple[str, ...] = ()
    marker: str = ""  # pytest -m expression
    command: tuple[str, ...] = ()  # COMMAND: argv, run in the variant's tree
    args: tuple[str, ...] = ()  # PYTEST: extra pytest arguments (`-k "not fused"`)
    # PYTEST: extra arguments per backend ("asan", "compute-sanitizer"): how a subject's
    # suite is told which device to use is the subject's business, not csorch's
    backend_args: tuple[tuple[str, tuple[str, ...]], ...] = ()

    def args_for(self, backend: str) -> tuple[str, ...]:
        """The case's pytest arguments under `backend`."""
        extra = next((a for b, a in self.backend_args if b == backend), ())
        return (*self.args, *extra)


@dataclass(frozen=True)
class TargetPattern(Record):
    """What the defect looks like. String fields are fnmatch globs; empty matches anything.

    A signature pattern matches findings; an outcome pattern (`outcome` set) matches a
    case whose test ended that way (a regression signal with no checker finding).
    """

    checker: str = ""
    kind: str = ""
    access: str = ""
    space: str = ""
    size: int | None = None
    function: str = ""
    frame: str = ""  # any of the signature's top frames
    run: str = ""  # only attempts of this run count; "" = see `applies_to`
    case: str = ""  # glob on case names
    outcome: Outcome | None = None

    def applies_to(self, run: Run) -> bool:
        """By default signature patterns watch checker runs, outcome patterns plain runs."""
        if self.run:
            return run.name == self.run
        return (run.checker is Checker.NONE) == (self.outcome is not None)


@dataclass(frozen=True)
class Expectations(Record):
    controls: tuple[str, ...]
    fix: str
    min_hits: int | None = None  # k of N; None: every repeat (k = N)
    targets: tuple[TargetPattern, ...] = ()  # empty: whatever every control reproduces


@dataclass(frozen=True)
class Experiment(Record):
    name: str
    source: SourceSpec
    variants: tuple[Variant, ...]
    runs: tuple[Run, ...]
    cases: tuple[Case, ...]
    repeats: int = 1
    timeout: float = 900.0
    expect: Expectations | None = None
    description: str = ""
    config: Path | None = None
    executor: str = "local"  # where attempts run: "local" or "slurm" (flags override)
    slurm: SlurmSettings = SlurmSettings()
    case_timeout: float | None = None  # seconds per pytest case (None: only `timeout`)
    pytest_args: tuple[str, ...] = ()  # extra pytest arguments for every pytest case
    environment: Environment = Environment()
    cases_from: CasesFrom = CasesFrom.CONFIG

    def variant(self, name: str) -> Variant:
        return next(v for v in self.variants if v.name == name)

    def run(self, name: str) -> Run:
        return next(r for r in self.runs if r.name == name)

    def repeats_for(self, run: Run) -> int:
        return run.repeats if run.repeats is not None else self.repeats

    def attempts(self) -> int:
        """How many attempts the experiment plans on one device."""
        per_variant = sum(self.repeats_for(r) for r in self.runs) * len(self.cases)
        return per_variant * len(self.variants)

    def beyond_bounds(self) -> str:
        """What of the experiment lies past the bounds a config is held to when it loads
        ("": nothing): an experiment read back from a bundle was not loaded from a config,
        and a reader that plans its attempts (completeness, the judge) would otherwise
        list a billion of them."""
        counts = [("repeats", self.repeats)]
        counts += [(f"run {r.name!r}'s repeats", r.repeats) for r in self.runs]
        for what, repeats in counts:
            if repeats is not None and not 1 <= repeats <= MAX_REPEATS:
                return f"{what} is {repeats}, expected 1 to {MAX_REPEATS:,}"
        if self.attempts() > MAX_ATTEMPTS:
            return f"plans {self.attempts():,} attempts, at most {MAX_ATTEMPTS:,}"
        return ""

    def timeout_for(self, run: Run) -> float:
        return run.timeout if run.timeout is not None else self.timeout

    def case_timeout_for(self, run: Run) -> float | None:
        return run.case_timeout if run.case_timeout is not None else self.case_timeout

    def source_for(self, variant: Variant) -> SourceSpec:
        return variant.source if variant.source is not None else self.source

    def role(self, variant: str) -> str:
        """ "control", "fix" or "" (a variant the expectations do not name)."""
        if self.expect is None:
            return ""
        if variant == self.expect.fix:
            return "fix"
        return "control" if variant in self.expect.controls else ""
