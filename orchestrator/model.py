"""The records that flow through csorch: frozen dataclasses and enums.

Two families:
- what an experiment declares (config.py builds these): `Experiment`, `SourceSpec`,
  `Variant`, `BuildSpec`, `Run`, `Case`, `Expectations`, `TargetPattern`;
- what the stages produce: `SourceTree`, `Build`, `Attempt`, with the parsed log
  (`ParseResult` of `Finding`s), `Signature`s, tally's `CaseResult` and the judge's `Judgement`.
Every record converts with `to_dict`/`from_dict` (serial.Record) for the bundle.
Environments are tuples of (name, value) pairs so records stay hashable.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from pathlib import Path

from orchestrator.serial import Record
from orchestrator.slurm_options import SlurmSettings

Env = tuple[tuple[str, str], ...]


class Checker(enum.Enum):
    """The tool that watches a run. ASAN stands in for MEMCHECK on a CPU-only host."""

    NONE = "none"
    MEMCHECK = "memcheck"
    INITCHECK = "initcheck"
    RACECHECK = "racecheck"
    SYNCCHECK = "synccheck"
    ASAN = "asan"


#: the checkers a config's run may name (asan is chosen by the backend, not the run)
RUN_CHECKERS = (
    Checker.NONE,
    Checker.MEMCHECK,
    Checker.INITCHECK,
    Checker.RACECHECK,
    Checker.SYNCCHECK,
)


class SourceKind(enum.Enum):
    PATH = "path"
    GIT = "git"


class BuildKind(enum.Enum):
    JIT = "jit"
    WHEEL = "wheel"
    COMMAND = "command"


class CaseKind(enum.Enum):
    PYTEST = "pytest"
    COMMAND = "command"


class Outcome(enum.Enum):
    """What the test itself said, independent of the checker's findings."""

    PASSED = "passed"
    FAILED = "failed"
    ERROR = "error"
    SKIPPED = "skipped"


class Verdict(enum.Enum):
    PASS = "pass"
    FAIL = "fail"
    INCONCLUSIVE = "inconclusive"


# --- what an experiment declares ----------------------------------------------------


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
    flags: tuple[str, ...] = ()  # JIT/WHEEL: extra compile flags


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


@dataclass(frozen=True)
class Case(Record):
    name: str
    kind: CaseKind
    pytest: tuple[str, ...] = ()  # absolute paths or node ids ("/abs/test_x.py::test_y")
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

    def variant(self, name: str) -> Variant:
        return next(v for v in self.variants if v.name == name)

    def run(self, name: str) -> Run:
        return next(r for r in self.runs if r.name == name)

    def repeats_for(self, run: Run) -> int:
        return run.repeats if run.repeats is not None else self.repeats

    def timeout_for(self, run: Run) -> float:
        return run.timeout if run.timeout is not None else self.timeout

    def source_for(self, variant: Variant) -> SourceSpec:
        return variant.source if variant.source is not None else self.source

    def role(self, variant: str) -> str:
        """ "control", "fix" or "" (a variant the expectations do not name)."""
        if self.expect is None:
            return ""
        if variant == self.expect.fix:
            return "fix"
        return "control" if variant in self.expect.controls else ""


# --- what the stages produce --------------------------------------------------------


@dataclass(frozen=True)
class PatchRecord(Record):
    path: Path
    sha256: str


@dataclass(frozen=True)
class SourceTree(Record):
    variant: str
    root: Path
    digest: str  # sha256 over the materialized tree (after patches)
    source: SourceSpec
    commit: str = ""  # GIT: the resolved commit
    patches: tuple[PatchRecord, ...] = ()


@dataclass(frozen=True)
class Artifact(Record):
    path: str  # relative to the build directory or the install prefix
    sha256: str
    size: int


@dataclass(frozen=True)
class Build(Record):
    variant: str
    kind: BuildKind
    ok: bool
    cache_key: str = ""
    directory: Path | None = None  # the cache entry
    artifacts: tuple[Artifact, ...] = ()  # paths relative to `directory`
    cached: bool = False
    duration: float = 0.0  # of the build that made the entry
    cpu: float = 0.0  # user + system seconds of that build's processes
    log: Path | None = None
    error: str = ""  # the BuildError/PatchError message when not ok
    sanitizer: str = ""  # "address": the binaries need the ASan runtime to load
    import_path: Path | None = None  # JIT/WHEEL: goes first on the cases' PYTHONPATH
    workdir: Path | None = None  # COMMAND: the built tree, where command cases run
    source_digest: str = ""
    steps: tuple[tuple[str, ...], ...] = ()  # the argv of each build step


@dataclass(frozen=True)
class Frame(Record):
    """One stack frame as printed; the signature normalizes it, this keeps it verbatim."""

    function: str = ""
    file: str = ""
    line: int | None = None
    module: str = ""
    offset: str = ""  # pc or +0x offset, for display only

    @property
    def is_python(self) -> bool:
        return self.file.endswith(".py")


@dataclass(frozen=True)
class Stack(Record):
    role: str  # "freed", "allocated", "thread-created", "second-access", ...
    frames: tuple[Frame, ...]


@dataclass(frozen=True)
class Finding(Record):
    """One report parsed from a checker log."""

    checker: Checker
    kind: str  # "invalid-access", "race", "leak", "api-error", "heap-use-after-free", ...
    access: str = ""  # "read", "write", "atomic"; races: "write-read"
    size: int | None = None
    space: str = ""  # CUDA memory space: "global", "shared", "local"
    code: str = ""  # API errors: "cudaErrorLaunchFailure"
    frames: tuple[Frame, ...] = ()  # where it happened, innermost first
    host_frames: tuple[Frame, ...] = ()  # CUDA: host backtrace at launch / API call
    related: tuple[Stack, ...] = ()
    thread: str = ""
    block: str = ""
    address: str = ""
    detail: str = ""
    hazards: int | None = None  # racecheck: "[508 hazards]"
    severity: str = ""  # racecheck: "error", "warning", "info" (RACECHECK SUMMARY splits by it)
    suppressed: str = ""  # the suppression that matched it ("" none): kept, shown as suppressed
    pid: int | None = None
    case: str = ""  # pytest node id from the case markers around it ("" outside any)
    header: str = ""  # the record's first line, verbatim
    # ASan: later reports of this one's instruction in its case, counted by csorch's fold
    # shim instead of printed (backends/asan_fold.py); the record stands for 1 + folded
    folded: int = 0

    @property
    def reports(self) -> int:
        """The checker's reports this record stands for: itself and its folded repeats."""
        return 1 + self.folded


@dataclass(frozen=True)
class ParseResult(Record):
    """A parsed log. A log is `complete` only when its end-of-run marker was seen."""

    findings: tuple[Finding, ...] = ()
    summary_count: int | None = None  # what the tool's own summary line(s) said
    not_printed: int = 0  # findings counted by the summary but cut by --print-limit
    complete: bool = False
    tool_errors: tuple[str, ...] = ()  # the checker failed or was not live
    app_error: bool = False  # "Target application returned an error"
    app_crashed: bool = False  # "process didn't terminate successfully"
    summary_lines: tuple[str, ...] = ()
    unparsed: tuple[str, ...] = ()  # checker lines no matcher knew (first few)
    summary_split: tuple[int, int] | None = None  # racecheck: the summary's (errors, warnings)
    count_mismatch: str = ""  # how csorch's count differs from the tool's summary ("" agrees)

    @property
    def conclusive(self) -> bool:
        return not self.reason

    @property
    def reason(self) -> str:
        """Why the log is inconclusive ("" when it is conclusive)."""
        if self.tool_errors:
            return "checker error: " + self.tool_errors[0]
        if not self.complete:
            return "log has no end-of-run summary (truncated, crashed or checker not live)"
        if self.count_mismatch:
            return "parse incomplete: " + self.count_mismatch
        return ""


@dataclass(frozen=True)
class Signature(Record):
    """A finding's identity: addresses, thread/block ids, pcs and line numbers removed."""

    checker: str
    kind: str
    access: str = ""
    space: str = ""
    size: int | None = None
    code: str = ""
    function: str = ""  # kernel or function at the top of the stack
    frames: tuple[str, ...] = ()  # top frames, normalized

    def label(self) -> str:
        parts = [self.checker, self.kind, self.space, self.access]
        size = f"size {self.size}" if self.size is not None else ""
        return " ".join(p for p in (*parts, self.code, size) if p) + (
            f" in {self.function}" if self.function else ""
        )


@dataclass(frozen=True)
class Launch(Record):
    """One child process of an attempt; a case that destroys the CUDA context or kills
    the process sends the cases after it to a fresh launch."""

    argv: tuple[str, ...]
    env: Env  # what csorch set on top of its own environment
    cwd: str
    log: Path
    returncode: int | None = None
    timed_out: bool = False
    duration: float = 0.0
    cpu: float = 0.0  # user + system seconds (what it cost; duration is what it took)
    skipped: int = 0  # node ids deselected because an earlier launch ran them
    ended: str = ""  # "" a normal end, else why the cases after it moved on
    started: float = 0.0  # epoch seconds at the start (0: not recorded)


@dataclass(frozen=True)
class NodeResult(Record):
    """One pytest node (or one command case) as its markers reported it."""

    nodeid: str
    outcome: Outcome
    detail: str = ""  # "process died during this case", "CUDA error: ..."


@dataclass(frozen=True)
class Placement(Record):
    """Where a cluster executor ran an attempt: the Slurm job and node of each try.
    A try that Slurm killed (time limit, node failure, preemption) is retried once."""

    executor: str  # "slurm"
    job_id: str  # the array task that gave the result: "1234_7"
    node: str
    state: str  # Slurm's final word for it: COMPLETED, FAILED, TIMEOUT, ...
    tries: tuple[str, ...] = ()  # every try, first to last: "1234_7 on gpu-a17: TIMEOUT"


@dataclass(frozen=True)
class Attempt(Record):
    """One variant x run x case x device x repeat execution (`repeat` counts from 0)."""

    variant: str
    run: str
    case: str
    repeat: int
    checker: Checker  # the tool that watched it (ASAN when it stood in for memcheck)
    device: str = ""
    argv: tuple[str, ...] = ()
    env: Env = ()  # what csorch set on top of its own environment
    returncode: int | None = None
    timed_out: bool = False
    duration: float = 0.0
    outcome: Outcome = Outcome.ERROR
    log: Path | None = None
    checker_log: Path | None = None
    parse: ParseResult | None = None
    error: str = ""  # why it could not run (start failure, build failure)
    nodes: tuple[NodeResult, ...] = ()
    launches: tuple[Launch, ...] = ()
    gpu: str = ""  # the UUID of the GPU the child reported using ("" where none said)
    placement: Placement | None = None  # None: run locally

    @property
    def inconclusive_reason(self) -> str:
        """ "" when the attempt's evidence can be trusted, else why not."""
        if self.error:
            return self.error
        if self.timed_out:
            return "timed out"
        if self.checker is Checker.NONE:
            return ""
        if (self.returncode or 0) < 0:  # the checked process (ASan with it) did not end itself
            return f"killed by signal {-self.returncode}"
        if self.parse is None:
            return "no checker log was parsed"
        return self.parse.reason

    @property
    def conclusive(self) -> bool:
        return not self.inconclusive_reason

    @property
    def findings(self) -> tuple[Finding, ...]:
        return self.parse.findings if self.parse is not None else ()
