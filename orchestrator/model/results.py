"""What the stages produce: `SourceTree`, `Build`, `Attempt`, with the parsed log
(`ParseResult` of `Finding`s), `Signature`s, launches, node results and placements."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from orchestrator.model.experiment import SourceSpec
from orchestrator.model.kinds import BuildKind, Checker, Env, Outcome
from orchestrator.model.record import Record


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
    #: what it executes, as one digest (carry/sections.executes: an ELF file's loaded
    #: sections, a Python module's AST without docstrings, a wheel by its members);
    #: "" where not recorded (a bundle of an older csorch)
    executes: str = ""


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
    requirements_path: Path | None = None  # the test requirements: second on PYTHONPATH
    python: str = ""  # the interpreter it was built for and its cases run under ("": csorch's)
    distribution: Distribution | None = None  # PREBUILT: the release binary's identity
    cases_root: Path | None = None  # `cases_from: variant`: the variant's tree
    #: the units its compiler wrappers recorded (sources, relative to the tree where in it);
    #: under a sanitizer each was checked to carry it (run/builds/units.py)
    units: tuple[str, ...] = ()
    #: the units ccache served from its storage / compiled, in the build that made the
    #: entry (run/builds/compilecache.py); both 0 where no compile cache ran
    compile_hits: int = 0
    compile_misses: int = 0
    compile_remote_hits: int = 0  # of the hits, served by the shared remote storage
    #: CPU seconds of the build's compiler calls (compiles and links through the wrappers,
    #: ccache's included), within `cpu`; 0.0 where no wrapper ran (prebuilt)
    compile_cpu: float = 0.0
    #: the checker opt-outs in the variant's tree, "MARKER PATH:LINE" (carry/optouts.py),
    #: read from the tree at every run: a fix that adds one does not pass (judge/optouts)
    opt_outs: tuple[str, ...] = ()
    opt_out_rules: str = ""  # the identity of the rules that found them (carry/optouts.RULES)
    #: under `cases_from: variant`, the variant's own test files, "PATH DIGEST" (run/cases.py
    #: forms): a fix whose tests differ from its controls' does not pass (judge/causality)
    case_forms: tuple[str, ...] = ()


@dataclass(frozen=True)
class Distribution(Record):
    """A prebuilt control's identity: which release binary it is, as users install it."""

    name: str
    version: str
    origin: str  # the wheel file, "REQ from DIR/URL", or "installed in PYTHON"
    wheel: str = ""  # the wheel's file name ("" for an installed distribution)
    sha256: str = ""  # of the wheel file


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
    # the log's records this finding stands for: 1, or, for the last example a parser
    # kept of its signature in its case, 1 + the later ones it counted but did not keep
    # (`findings.folding`); every count csorch states or checks adds these up, never len(findings)
    count: int = 1
    # the signature id (`fingerprint`, 12 hex digits) of the memory fault this record is a
    # consequence of: a sticky launch failure after the fault destroyed the context
    # (`findings.follow_on`); "" when it stands on its own
    follows: str = ""


@dataclass(frozen=True)
class ParseResult(Record):
    """A parsed log. A log is `complete` only when its end-of-run marker was seen.
    `findings` are folded (`findings.folding`): per case and signature the first few records whole,
    the rest counted in `Finding.count`; `records` is how many the log printed."""

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
    def records(self) -> int:
        """The checker's records in the log: every finding's `count` added up."""
        return sum(f.count for f in self.findings)

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
    # why it did not pass: pytest's own reason for a failed or errored case (the
    # exception's message, from the plugin's marker: "AssertionError: planted"), "killed by
    # signal 9 (SIGKILL) during this case", "CUDA context lost: ...", "timed out"
    detail: str = ""


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


@dataclass(frozen=True)
class ToolInfo(Record):
    """A checker found on this host."""

    name: str
    path: str
    version: str


@dataclass(frozen=True)
class CarriedFile(Record):
    """A file that changed between the stored trees and this run's, and why it does not
    count (carry/classify)."""

    tree: str  # a variant's name, or "cases" (the case files outside every tree)
    path: str
    kind: str  # classify.SAME_AST or classify.SAME_TOKENS


@dataclass(frozen=True)
class CarriedBinary(Record):
    """A built file of this run whose `Artifact.executes` equals the stored build's."""

    variant: str
    path: str
    executes: str


#: how a carried verdict's first reason begins (`Carried.headline`)
CARRIED_PREFIX = "evidence carried from "


@dataclass(frozen=True)
class Carried(Record):
    """A verdict carried from a stored bundle (`csorch run --carry-from`): its attempts
    are that bundle's, judged again; both proofs held for every variant and case file."""

    source: str  # the stored bundle, as given
    manifest_sha256: str  # of its manifest.json, when the verdict was carried
    verdict: str  # its verdict (a carried one is never stronger)
    #: (tree name, the stored tree's digest): every variant's, and "cases"
    trees: tuple[tuple[str, str], ...] = ()
    files: tuple[CarriedFile, ...] = ()
    binaries: tuple[CarriedBinary, ...] = ()
    #: the stored bundle's authenticity when carried from (`trust.stated`): "signed by
    #: WHO" or "unsigned" ("" in a record older than it)
    evidence: str = ""

    def headline(self) -> str:
        """The first line every report gives a carried verdict."""
        if not self.files:
            changed = "no file changed"
        else:
            where: dict[tuple[str, str], list[str]] = {}
            for f in self.files:  # one patch shared by every variant: named once
                where.setdefault((f.path, f.kind), []).append(f.tree)
            named = ", ".join(
                f"{p} in {', '.join(t)} ({k})" for (p, k), t in list(where.items())[:6]
            )
            more = f" and {len(where) - 6} more" if len(where) > 6 else ""
            changed = f"{len(where)} file(s) changed, none executable: {named}{more}"
        same = f"{len(self.binaries)} built file(s) execute the same"
        # whether anyone who can write could have re-hashed it, said where it is read
        auth = f"{self.evidence}, " if self.evidence else ""
        return f"{CARRIED_PREFIX}{self.source} ({auth}no attempt ran): {changed}; {same}"
