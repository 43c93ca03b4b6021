"""The AddressSanitizer backend: memcheck's stand-in on a host without a GPU.

Builds add `-fsanitize=address -fsanitize-recover=address -fno-omit-frame-pointer -g`;
runs preload the runtime (`gcc -print-file-name=libasan.so`), since a Python process
that loads an instrumented extension refuses to start otherwise, and set
`ASAN_OPTIONS=detect_leaks=0:halt_on_error=0:suppress_equal_pcs=0:alloc_dealloc_mismatch=0:atexit=1`
(and `verify_asan_link_order=0`, with the fold shim ahead of the runtime in LD_PRELOAD).

The checker's own channel: a checker run (not a plain one) gives `wrap` a `log_path`
prefix P and the runtime writes each process's reports to its own file, P.<pid>
(`log_path=P`, inherited by children), never to the command's stdout or stderr, which
csorch keeps for humans and never parses for findings. With the fold shim, each process
that starts (exec) also creates P.started.<pid> (`CSORCH_ASAN_STARTED`), so that a process
that leaves no exit record in its P.<pid> is seen, not missed (`backends/channel.py`).

C++ exceptions: ASan intercepts `__cxa_throw` and calls the real one, which it finds at
start-up; a Python that does not link libstdc++ has none then (an extension loads it
later), so the first C++ throw aborts the process ("AddressSanitizer: CHECK failed:
asan_interceptors.cpp:320 ..."). The C++ runtime the compiler links
(`g++ -print-file-name=libstdc++.so.6`) is preloaded right after the sanitizer runtime
where the interpreter does not load it itself (`needs_cxx_runtime`).

compute-sanitizer's options do not apply, with one exception: a run that asks for
memcheck's `--leak-check full` gets LeakSanitizer (`detect_leaks=1`), its stand-in. Its
report ("ERROR: LeakSanitizer: detected memory leaks", kind `memory-leak`) comes at exit,
before the exit-stats marker (with halt_on_error=0 the process is not killed for it), so a
leak log is still proven complete. Leaks stay off otherwise: a torch process leaks by
design and would bury the run in reports.

The log's grammar and its parser are `asan.log`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from orchestrator import proc
from orchestrator.backends import channel
from orchestrator.backends.asan import shim as asan_fold
from orchestrator.backends.asan.log import parse
from orchestrator.backends.base import BuildFlags, Liveness, Wrapped
from orchestrator.config import sanitizer_options
from orchestrator.errors import CheckerUnavailable, ProcessStartError
from orchestrator.files import file_digest
from orchestrator.host import Host
from orchestrator.model import Checker, ParseResult, ToolInfo

NAME = "asan"
COMPILE_FLAGS = (
    "-fsanitize=address",
    "-fsanitize-recover=address",
    "-fno-omit-frame-pointer",
    "-g",
)
LINK_FLAGS = ("-fsanitize=address",)
# atexit=1 last, so that a user's ASAN_OPTIONS cannot switch off the completion marker;
# alloc_dealloc_mismatch=0: torch mixes new/free across libraries that ASan cannot see;
# halt_on_error=0, suppress_equal_pcs=0: every bad access is reported (the fold shim
# prints the first of each instruction per case and counts the rest)
DEFAULT_OPTIONS = (
    "detect_leaks=0",
    "halt_on_error=0",
    "suppress_equal_pcs=0",
    "alloc_dealloc_mismatch=0",
)
# a plain run without the fold shim: each pc reported once keeps a flood from costing
# minutes (its reports are not judged, only its outcome; past 25 distinct pcs ASan ends
# the process)
PLAIN_OPTIONS = (
    "detect_leaks=0",
    "halt_on_error=0",
    "suppress_equal_pcs=1",
    "alloc_dealloc_mismatch=0",
)
REQUIRED_OPTIONS = ("atexit=1",)
#: the fold shim creates `$CSORCH_ASAN_STARTED.<pid>` in each process it starts in
STARTED_VAR = "CSORCH_ASAN_STARTED"
#: csorch's ASAN_OPTIONS again, which the fold shim gives the runtime as its defaults
DEFAULTS_VAR = "CSORCH_ASAN_OPTIONS"
#: what compute-sanitizer's `--leak-check full` turns on here
LEAK_OPTIONS = ("detect_leaks=1",)


def find_runtime(compiler: str = "gcc") -> Path:
    """The ASan runtime the compiler links against; CheckerUnavailable if there is none."""
    try:
        out = proc.capture([compiler, "-print-file-name=libasan.so"], timeout=60)
    except ProcessStartError as exc:
        raise CheckerUnavailable(
            NAME,
            f"{compiler}: {exc.reason}",
            hint="install gcc (with libasan) or pass another compiler",
        ) from None
    path = Path(out.output.strip())
    # the compiler echoes the bare name back when it has no such file
    if out.returncode != 0 or not path.is_absolute() or not path.exists():
        raise CheckerUnavailable(
            NAME,
            f"`{compiler} -print-file-name=libasan.so` found no runtime "
            f"(it printed {out.output.strip()!r})",
            hint="install the AddressSanitizer runtime (Debian/Ubuntu: libasan8 or gcc's "
            "libgcc-*-dev)",
        )
    return path.resolve()


def find_cxx_runtime(compiler: str = "gcc") -> Path | None:
    """The C++ runtime (libstdc++.so.6) the compiler links against, or None."""
    try:
        out = proc.capture([compiler, "-print-file-name=libstdc++.so.6"], timeout=60)
    except ProcessStartError:
        return None
    path = Path(out.output.strip())
    if out.returncode != 0 or not path.is_absolute() or not path.exists():
        return None
    return path.resolve()


def needs_cxx_runtime(python: str) -> bool:
    """Whether `python` starts without libstdc++ mapped (then a C++ throw under ASan
    aborts unless it is preloaded); True when that cannot be told."""
    probe = "print('libstdc++' in open('/proc/self/maps').read())"
    try:
        out = proc.capture([python, "-c", probe], timeout=60)
    except ProcessStartError:
        return True
    return out.output.strip().splitlines()[-1:] != ["True"]


def merge_options(
    user: str = "",
    *,
    leaks: bool = False,
    plain: bool = False,
    fold: bool = False,
    log_path: Path | None = None,
) -> str:
    """ASAN_OPTIONS: csorch's defaults (a checker run's or a command case's, with leak
    detection when `leaks`; or a plain run's without the fold shim), then the user's, then
    what csorch requires (and the shim, when `fold`; the per-process log files at
    `log_path`). The last setting of an option wins. The user's items are kept as written
    (a quoted value keeps its quotes: `sanitizer_options.split`), and the log path is
    quoted the runtime's way, so a path with spaces, colons or commas reads back whole;
    OptionsError for a user's string the runtime would refuse, or a path holding both
    quotes (the config and `--out` are checked for both before a run starts)."""
    defaults = PLAIN_OPTIONS if plain and not fold else DEFAULT_OPTIONS
    parts = [
        *defaults,
        *(LEAK_OPTIONS if leaks and not plain else ()),
        *sanitizer_options.split(user),
        *REQUIRED_OPTIONS,
        *(asan_fold.OPTIONS if fold else ()),
        *((sanitizer_options.pair("log_path", str(log_path)),) if log_path is not None else ()),
    ]
    return ":".join(parts)


#: what splits LD_PRELOAD's list (the dynamic loader has no quoting)
PRELOAD_SEPARATORS = frozenset(": \t\n\r\v\f")


def _preloadable(path: str) -> str:
    """`path` for LD_PRELOAD; CheckerUnavailable when the loader would split it (the
    build cache's path is refused before a run for the same reason: `run.places`)."""
    if set(path) & PRELOAD_SEPARATORS:
        raise CheckerUnavailable(
            NAME,
            f"{path} cannot be preloaded: LD_PRELOAD splits on ':' and whitespace, and the "
            "path holds one",
            hint="install the library (or give --cache-dir) under a path without ':' or whitespace",
        )
    return path


def wants_leak_check(options: Sequence[str]) -> bool:
    """Whether compute-sanitizer options ask for `--leak-check full` (either spelling)."""
    words = list(options)
    for i, word in enumerate(words):
        if word == "--leak-check=full" or (
            word == "--leak-check" and i + 1 < len(words) and words[i + 1] == "full"
        ):
            return True
    return False


class Asan:
    """ASan with the runtime at `runtime` (found through `compiler` when None); with
    `fold`, the report-fold shim (`asan.shim.build`) preloaded ahead of it; with `cxx`,
    the C++ runtime preloaded after it (see the module's docstring)."""

    name = NAME
    title = "ASan"
    checkers = frozenset({Checker.MEMCHECK})
    build_sanitizer = "address"
    device_code = False
    uses_gpus = False  # it runs on the CPU: no --devices, no GPU asked of Slurm
    frames_name_case = False  # the plugin's case markers reach the runtime's own log

    def __init__(
        self,
        runtime: Path | str | None = None,
        *,
        compiler: str = "gcc",
        fold: Path | str | None = None,
        cxx: Path | str | None = None,
    ) -> None:
        self.runtime = Path(runtime) if runtime is not None else None
        self.compiler = compiler
        self.fold = Path(fold) if fold is not None else None
        self.cxx = Path(cxx) if cxx is not None else None

    def find_cxx(self, python: str) -> Path | None:
        """Preload the compiler's libstdc++ from now on where `python` does not load it
        itself (the path, recorded in the bundle; None when not needed or not found)."""
        if needs_cxx_runtime(python):
            self.cxx = find_cxx_runtime(self.compiler)
        return self.cxx

    def build_fold(self, directory: Path) -> Path:
        """Build (or find built) the fold shim under `directory`; later wraps preload it."""
        self.fold = asan_fold.build(self.compiler, directory)
        return self.fold

    def _runtime(self) -> Path:
        if self.runtime is None:
            self.runtime = find_runtime(self.compiler)
        return self.runtime

    def build_flags(self) -> BuildFlags:
        return BuildFlags(cflags=COMPILE_FLAGS, ldflags=LINK_FLAGS)

    def serves(self, checker: Checker) -> str:
        if checker in (Checker.NONE, Checker.MEMCHECK):
            return ""
        return f"{checker.value} has no CPU stand-in; it needs compute-sanitizer on a GPU"

    def watcher(self, checker: Checker) -> Checker:
        return Checker.NONE if checker is Checker.NONE else Checker.ASAN

    def prepare(self, cache: Path, python: str) -> dict[str, str]:
        """The fold shim built (once per content, under `cache`), and the C++ runtime
        preloaded where `python` does not load it: both recorded in the bundle."""
        fold = self.build_fold(cache / "asan-fold")
        cxx = self.find_cxx(python)
        return {
            "fold_shim": str(fold),
            "fold_shim_sha256": file_digest(fold),
            **({"cxx_runtime": str(cxx)} if cxx else {}),
        }

    def identity(self, host: Host) -> dict[str, str]:
        return {"version": host.cc, "path": host.asan_runtime}

    def task_context(self) -> dict[str, str]:
        return {
            "asan_runtime": str(self.runtime or ""),
            "asan_fold": str(self.fold or ""),
            # the C++ runtime preloaded after ASan's (a C++ throw aborts without it)
            "asan_cxx": str(self.cxx or ""),
        }

    @classmethod
    def for_run(cls, host: Host, *, workers: int = 0) -> Asan:
        """The backend of a run on `host` (its ASan runtime, else found when first needed)."""
        return cls(host.asan_runtime or None)

    @classmethod
    def from_task(cls, context: Mapping[str, str]) -> Asan:
        """The backend a Slurm task's context describes (`task_context`)."""
        return cls(
            context.get("asan_runtime") or None,
            fold=context.get("asan_fold") or None,
            cxx=context.get("asan_cxx") or None,
        )

    def gres(self) -> str:
        return ""

    def log_target(self, prefix: Path) -> Path | None:
        return prefix  # `log_path=prefix`: the runtime writes prefix.<pid>

    def wrap_plain(self, argv: Sequence[str], env: Mapping[str, str], sanitizer: str) -> Wrapped:
        """An instrumented build cannot load without its runtime: preload it (no log)."""
        if sanitizer != self.build_sanitizer:
            return Wrapped(argv=tuple(argv), env=(), log_path=None)
        return self.wrap(argv, checker=Checker.MEMCHECK, env=env, plain=True)

    def read(
        self, prefix: Path, checker: Checker, env: Mapping[str, str] | None = None
    ) -> ParseResult:
        # every process that started under the shim started with csorch's options
        return channel.read_asan(prefix, parse, (env or {}).get("ASAN_OPTIONS"))

    def attribute(self, result: ParseResult, nodes: Sequence[str]) -> ParseResult:
        return result  # each report lies between its case's markers already

    def probe(self) -> ToolInfo:
        runtime = self._runtime()
        out = proc.capture([self.compiler, "-dumpfullversion"], timeout=60)
        version = out.output.strip() if out.returncode == 0 else "unknown"
        return ToolInfo(NAME, str(runtime), f"{self.compiler} {version}")

    def wrap(
        self,
        argv: Sequence[str],
        *,
        checker: Checker,
        options: Sequence[str] = (),
        env: Mapping[str, str] | None = None,
        log_path: Path | None = None,
        plain: bool = False,
        preset: str = "",
        target_processes: str = "",
    ) -> Wrapped:
        """Preload the runtime (the fold shim first, if any; the C++ runtime after it) and
        set ASAN_OPTIONS. `options` (compute-sanitizer's) do not apply, except
        `--leak-check full`, which turns on LeakSanitizer. `log_path`: the prefix of the
        per-process report files (None: reports go to stderr). `plain`: a run without a
        checker whose instrumented build needs the runtime to load."""
        if checker not in self.checkers:
            raise ValueError(f"{NAME} stands in for memcheck only, not {checker.value}")
        env = env or {}
        shim = str(self.fold) if self.fold else ""
        cxx = str(self.cxx) if self.cxx else ""
        own = [_preloadable(p) for p in (shim, str(self._runtime()), cxx) if p]
        preload = " ".join(p for p in (*own, env.get("LD_PRELOAD", "")) if p)
        merged = merge_options(
            env.get("ASAN_OPTIONS", ""),
            leaks=wants_leak_check(options),
            plain=plain,
            fold=bool(shim),
            log_path=log_path,
        )
        delta = (
            ("ASAN_OPTIONS", merged),
            # the same, as the runtime's defaults (the shim's __asan_default_options): a
            # child whose ASAN_OPTIONS its parent unset still reports into the channel
            *(((DEFAULTS_VAR, merged),) if shim else ()),
            ("LD_PRELOAD", preload),
            *(((STARTED_VAR, f"{log_path}.started"),) if log_path is not None and shim else ()),
        )
        return Wrapped(argv=tuple(argv), env=delta, log_path=log_path)

    def parse(self, lines: Iterable[str], *, checker: Checker = Checker.ASAN) -> ParseResult:
        return parse(lines)

    def liveness(self, result: ParseResult) -> Liveness:
        if result.tool_errors:
            return Liveness(False, result.tool_errors[0])
        if not result.complete:
            return Liveness(
                False,
                "no 'AddressSanitizer exit stats' marker: the runtime was "
                "not loaded or the process did not exit normally",
            )
        return Liveness(True, "exit-stats marker present")
