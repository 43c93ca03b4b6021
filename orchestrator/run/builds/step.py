"""What every build kind shares: the run's build `Context`, the `Step` runner that puts
each command of one build into one log, and the compilers' environment."""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass, field
from pathlib import Path

from orchestrator import files, proc
from orchestrator import sandbox as sandboxes
from orchestrator.backends.base import BuildFlags
from orchestrator.cache import Cache
from orchestrator.errors import BuildError
from orchestrator.model import Environment, Variant
from orchestrator.run.builds.compilecache import CompileCache
from orchestrator.run.builds.wrappers import Wrappers
from orchestrator.sandbox import BUILD_OUT, BUILD_TREE, Sandbox

TAIL_LINES = 30
DEFAULT_TIMEOUT = 3600.0
PIP_ENV = {"PIP_DISABLE_PIP_VERSION_CHECK": "1", "PIP_NO_INPUT": "1"}


@dataclass(frozen=True)
class Context:
    """What every build of one run shares."""

    cache: Cache
    logs: Path  # the bundle's logs/build directory
    python: str  # the interpreter the builds are for (the environment's, else csorch's)
    toolchain: dict[str, object] = field(default_factory=dict)
    sanitizer: str = ""  # "address" under the ASan backend
    flags: BuildFlags = BuildFlags()
    asan_runtime: Path | None = None
    timeout: float = DEFAULT_TIMEOUT
    cancel: threading.Event | None = None
    environment: Environment = Environment()  # the project's test requirements
    device_code: bool = False  # compute-sanitizer: an extension's build must have GPU code
    compile_cache: CompileCache | None = None  # ccache under every compile; None: off/absent


def _joined(*parts: object) -> str:
    return " ".join(str(p) for group in parts for p in (group or ()) if p)


def compile_env(variant: Variant, ctx: Context, wrappers: Wrappers | None = None) -> dict[str, str]:
    """Sanitizer and user flags for the compilers, plus the build's own `env`; with the
    build's compiler `wrappers` first on PATH and named by CC/CXX (run/builds/wrappers.py),
    which add the flags to every compile whatever a Makefile does with CFLAGS."""
    spec = variant.build
    env = {
        "CFLAGS": _joined([os.environ.get("CFLAGS")], ctx.flags.cflags, spec.flags),
        "CXXFLAGS": _joined([os.environ.get("CXXFLAGS")], ctx.flags.cflags, spec.flags),
        "LDFLAGS": _joined([os.environ.get("LDFLAGS")], ctx.flags.ldflags),
        "NVCC_APPEND_FLAGS": _joined([os.environ.get("NVCC_APPEND_FLAGS")], ctx.flags.cuda_cflags),
        "CSORCH_SANITIZE": ctx.sanitizer,
        # a description's loader prints its compiler command lines (torch: verbose=True)
        "CSORCH_VERBOSE": "1",
        "PYTHONDONTWRITEBYTECODE": "1",
    }
    env = {k: v for k, v in env.items() if v or k == "CSORCH_SANITIZE"}
    env = {**env, **dict(spec.env)}
    return wrappers.env(env) if wrappers is not None else env


def tail(log: Path) -> str:
    try:
        lines = files.tail(log, TAIL_LINES)
    except FileNotFoundError:
        return ""
    return "\n".join(lines)


class Step:
    """Runs the steps of one build into one log; a failing step raises BuildError."""

    def __init__(self, variant: str, log: Path, ctx: Context) -> None:
        self.variant, self.log, self.ctx = variant, log, ctx
        self.argvs: list[tuple[str, ...]] = []
        self.cpu = 0.0
        self.wrappers: Wrappers | None = None  # the build's compiler wrappers, once made
        self.tree: Path | None = None  # the source tree, seen at BUILD_TREE by every step

    def __call__(self, argv: list[str], *, cwd: Path, env: dict[str, str]) -> None:
        result = proc.run(
            argv,
            log_path=self.log,
            env=env,
            cwd=cwd,
            timeout=self.ctx.timeout,
            append=bool(self.argvs),
            cancel=self.ctx.cancel,
            sandbox=self.sandbox(cwd),
        )
        self.argvs.append(result.argv)
        self.cpu += result.cpu
        if result.timed_out or result.returncode != 0:
            raise BuildError(
                self.variant,
                result.argv,
                None if result.timed_out else result.returncode,
                self.log,
                tail(self.log),
            )

    def sandbox(self, cwd: Path) -> Sandbox:
        """A step writes only its cwd (csorch's copy of the source tree, or the build's
        output) and the build's output directory (its log's; the cache entry to be); with a
        compile cache, its storage directory too (only that one, never the build cache).
        It sees the source tree at BUILD_TREE and the build's output at BUILD_OUT, whatever
        directories hold them: the same paths in every variant's compiles, objects and
        compiler wrappers (nvcc's -ccbin is one, and enters the compile cache's hash;
        sandbox.Sandbox.aliases)."""
        cc = self.ctx.compile_cache
        box = Sandbox.of(cwd, self.log.parent, *(cc.writable() if cc is not None else ()))
        box = box.seeing(self.log.parent, BUILD_OUT)
        return box.seeing(self.tree, BUILD_TREE) if self.tree is not None else box

    @property
    def aliases(self) -> tuple[tuple[str, str], ...]:
        """The (real, seen) directories of this build's steps (`Sandbox.aliases`)."""
        return self.sandbox(self.log.parent).aliases if sandboxes.active() else ()

    def fail(self, problem: str) -> BuildError:
        """A build that cannot go on; it cites its log only where a step wrote one."""
        log = self.log if self.log.exists() else None
        return BuildError(self.variant, (), 1, log, tail(self.log), problem=problem)
