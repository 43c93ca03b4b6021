"""The sandbox every build and attempt runs in (`proc.run(..., sandbox=Sandbox(...))`).

Linux's own namespaces, through util-linux `unshare` (bubblewrap is not assumed): a PID
namespace whose PID 1 is csorch's `init.py` (every descendant is counted; one still
alive when the command's main process ends is a straggler, named and killed, and nothing
outlives the namespace), a mount namespace where every mount is read-only but the
writable paths the caller names (/tmp is the host's under a private writable layer,
/dev/shm private and empty), and a network namespace (only a loopback of its own). A
user namespace maps csorch's user to root inside where csorch is not root.

`probe()` answers once per process whether this host can sandbox, and why not; where it
cannot, `proc.run` runs as before and the host fact says so (docs/threat-model.md).

It is on by default. `CSORCH_SANDBOX=0` (`ENV`) turns it off: then `probe()` answers
"off", every child runs with csorch's whole environment, and the host is unsandboxed as
one that cannot sandbox (doctor and every report say so; the gate asks for
`--allow-unsandboxed`).

The environment of every child comes from `ALLOWED_NAMES` and `ALLOWED_PREFIXES`
(`allowed_env`): what a build
and a test need, never git's (`GIT_INDEX_FILE` and friends) nor an inherited
`LD_PRELOAD`; csorch's own delta is applied on top.
"""

from __future__ import annotations

import functools
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from orchestrator.model.record import Record

INIT = Path(__file__).with_name("init.py")
#: the namespaces; --kill-child: if unshare dies (csorch's SIGKILL at a timeout), PID 1
#: dies with it, and the kernel ends the rest of the namespace
_UNSHARE = ("--pid", "--fork", "--kill-child", "--mount-proc", "--mount", "--net")
_AS_ROOT = ("--user", "--map-root-user")  # where csorch is not root
DESCRIPTION = "unshare pid+mount+net"
#: `CSORCH_SANDBOX=0` turns the sandbox (and the environment's allowlist) off
ENV = "CSORCH_SANDBOX"


def enabled() -> bool:
    """Whether the sandbox is on: unless the user turned it off (`CSORCH_SANDBOX=0`)."""
    return os.environ.get(ENV, "1") != "0"


#: exact names passed through from csorch's environment to every child
ALLOWED_NAMES = frozenset(
    {
        # the shell's basics
        "PATH", "HOME", "USER", "LOGNAME", "SHELL", "TERM", "LANG", "LANGUAGE", "TZ",
        "TMPDIR", "COLUMNS", "NO_COLOR", "FORCE_COLOR",
        # compilers and build tools
        "CC", "CXX", "CPP", "LD", "AR", "NM", "RANLIB", "CFLAGS", "CXXFLAGS", "CPPFLAGS",
        "LDFLAGS", "LIBRARY_PATH", "CPATH", "C_INCLUDE_PATH", "CPLUS_INCLUDE_PATH",
        "PKG_CONFIG_PATH", "MAKEFLAGS", "MAX_JOBS", "CMAKE_PREFIX_PATH", "CMAKE_GENERATOR",
        "NVCC_APPEND_FLAGS", "NVCC_PREPEND_FLAGS", "NVCC_CCBIN", "CCACHE_DIR",
        # the dynamic loader's search path (CUDA libraries), not LD_PRELOAD
        "LD_LIBRARY_PATH",
        # the project's interpreter and its installers; PYTHONPATH because the cases get
        # the user's after the build's own (executors/execute.py), so the host probe of
        # torch and the builds must see the same path (a module system's torch lives there)
        "PYTHONPATH", "VIRTUAL_ENV", "CONDA_PREFIX", "CONDA_DEFAULT_ENV", "PIP_INDEX_URL",
        "PIP_EXTRA_INDEX_URL", "PIP_FIND_LINKS", "PIP_NO_INDEX", "PIP_CACHE_DIR",
        "PIP_CONSTRAINT", "UV_CACHE_DIR", "XDG_CACHE_HOME",
        # SSL trust for an installer behind a proxy
        "SSL_CERT_FILE", "SSL_CERT_DIR", "REQUESTS_CA_BUNDLE",
        # threads
        "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS",
    }
)  # fmt: skip
#: prefixes passed through: the locale, the GPU stack, torch and OpenMP
ALLOWED_PREFIXES = (
    "LC_", "CUDA_", "CUDNN_", "NCCL_", "NVIDIA_", "TORCH_", "PYTORCH_", "OMP_", "KMP_",
    "TRITON_", "CSORCH_",
)  # fmt: skip


def allowed(name: str) -> bool:
    """Whether csorch passes `name` on from its own environment to a child."""
    return name in ALLOWED_NAMES or name.startswith(ALLOWED_PREFIXES)


def allowed_env(environ: Mapping[str, str]) -> dict[str, str]:
    """The part of `environ` a child inherits (csorch sets the rest explicitly)."""
    return {k: v for k, v in environ.items() if allowed(k)}


#: where a build sees its source tree, whichever directory csorch copied it to (`seen_as`)
BUILD_TREE = "/tmp/csorch-build/tree"
#: where a build sees its own output directory (its objects, its compiler wrappers: the
#: host compiler torch hands nvcc as -ccbin), whichever scratch directory holds it
BUILD_OUT = "/tmp/csorch-build/out"


@dataclass(frozen=True)
class Sandbox(Record):
    """Where a launch may write (everything else is read-only); it always runs in its
    own PID namespace without network.

    `aliases`: (real, seen) pairs: the launch sees the directory `real` also at `seen`
    (in its private /tmp), and its argv, environment and cwd name `seen` wherever they
    named `real`. A build's tree is seen at `BUILD_TREE` whatever scratch directory
    holds it, so every variant, rerun and bisect probe compiles the same paths: the
    compile cache serves one tree's units to another, and debug information (sanitizer
    frames) names the tree's file the same way in every variant."""

    writable: tuple[str, ...] = ()
    aliases: tuple[tuple[str, str], ...] = ()

    @staticmethod
    def of(*paths: str | os.PathLike[str] | None) -> Sandbox:
        """A sandbox writing only to `paths` (made absolute, duplicates and Nones dropped)."""
        seen = dict.fromkeys(os.path.abspath(os.fspath(p)) for p in paths if p is not None)
        return Sandbox(tuple(seen))

    def seeing(self, real: str | os.PathLike[str], seen: str) -> Sandbox:
        """This sandbox with `real` seen at `seen` as well (not where one holds the other:
        the alias would hide or contain its own directory)."""
        real = os.path.abspath(os.fspath(real))
        if _within(real, seen) or _within(seen, real):
            return self
        return Sandbox(self.writable, (*self.aliases, (real, seen)))


def seen(
    sandbox: Sandbox, command: Sequence[str], cwd: str, env: Mapping[str, str]
) -> tuple[tuple[str, ...], str, dict[str, str]]:
    """`command`, `cwd` and `env` as the launch sees them: each aliased path renamed."""
    pairs = sorted(sandbox.aliases, key=lambda p: -len(p[0]))
    if not pairs:
        return tuple(command), cwd, dict(env)
    return (
        tuple(seen_as(a, pairs) for a in command),
        seen_as(cwd, pairs),
        {k: seen_as(v, pairs) for k, v in env.items()},
    )


def _within(path: str, top: str) -> bool:
    return path == top or path.startswith(top.rstrip("/") + "/")


def seen_as(text: str, aliases: Sequence[tuple[str, str]]) -> str:
    """`text` with each `real` path of `aliases` (a whole path component) named as seen."""
    for real, seen in aliases:
        text = re.sub(re.escape(real) + r"(?=[/:;,=\s'\"]|$)", lambda _, s=seen: s, text)
    return text


def real_of(text: str, aliases: Sequence[tuple[str, str]]) -> str:
    """`seen_as` undone: a path the launch named as seen, as it is outside."""
    return seen_as(text, [(seen, real) for real, seen in aliases])


@dataclass(frozen=True)
class Support(Record):
    """Whether this host sandboxes: `prefix` is what goes before the init ("" when not),
    `fact` what doctor and the bundle's host block say."""

    prefix: tuple[str, ...]
    fact: str

    @property
    def works(self) -> bool:
        return bool(self.prefix)


def _python() -> str:
    # csorch's own interpreter runs the init: it is outside the sandbox, read-only inside
    return sys.executable


def argv(
    sandbox: Sandbox, command: Sequence[str], cwd: str, report_fd: int, env_fd: int
) -> list[str]:
    """The argv that runs `command` in `sandbox`: unshare's, then the init's (its spec
    names the descriptors of its report and of the command's environment, `env_file`).
    `command` and `cwd` as the launch sees them (`Sandbox.seen`)."""
    return [
        *probe().prefix,
        *_init(sandbox.writable, cwd, report_fd, env_fd, sandbox.aliases),
        *command,
    ]


def _init(
    writable: Sequence[str],
    cwd: str,
    report_fd: int,
    env_fd: int,
    aliases: Sequence[tuple[str, str]] = (),
) -> list[str]:
    spec = {"writable": list(writable), "cwd": cwd, "report": report_fd, "env": env_fd}
    if aliases:
        spec["aliases"] = [list(pair) for pair in aliases]
    return [_python(), "-I", "-S", str(INIT), json.dumps(spec), "--"]


def env_file(env: Mapping[str, str]) -> int:
    """A descriptor (an anonymous file, read from its start) holding `env` for the init."""
    fd = os.memfd_create("csorch-env", os.MFD_CLOEXEC)
    os.write(fd, b"".join(os.fsencode(f"{k}={v}") + b"\0" for k, v in env.items()))
    os.lseek(fd, 0, os.SEEK_SET)
    return fd


@functools.cache
def probe() -> Support:
    """Whether `unshare` can make the namespaces here, tried once with the init itself
    (a read-only tree, a private /tmp, the loopback) on `true`."""
    if not enabled():
        return Support((), f"off: {ENV}=0 is set (unset it to sandbox builds and attempts)")
    unshare = shutil.which("unshare")
    if unshare is None:
        return Support((), "none: util-linux unshare is not on PATH")
    prefix = (unshare, *_UNSHARE) if os.geteuid() == 0 else (unshare, *_AS_ROOT, *_UNSHARE)
    with tempfile.TemporaryDirectory(prefix="csorch-sandbox-") as scratch:
        read, write = os.pipe()
        env = env_file({"PATH": os.environ.get("PATH", os.defpath)})
        try:
            try:
                done = subprocess.run(
                    [*prefix, *_init([scratch], scratch, write, env), "true"],
                    pass_fds=(write, env),
                    env={"PATH": os.environ.get("PATH", os.defpath)},
                    stdin=subprocess.DEVNULL,
                    capture_output=True,
                    timeout=30,
                    check=False,
                )
            except (OSError, subprocess.TimeoutExpired) as exc:
                return Support((), f"none: unshare failed ({exc})")
            os.close(write)
            write = -1
            report = os.read(read, 4096).decode(errors="replace")
        finally:
            os.close(read)
            os.close(env)
            if write >= 0:
                os.close(write)
    if done.returncode != 0 or "status 0" not in report:
        why = (done.stderr.decode(errors="replace").strip() or report.strip()).splitlines()
        return Support((), f"none: unshare failed ({why[-1] if why else done.returncode})")
    return Support(prefix, DESCRIPTION + ("" if os.geteuid() == 0 else "+user"))


def active() -> bool:
    """Whether a launch given a sandbox runs in one here (on, and this host can)."""
    return enabled() and probe().works


@dataclass(frozen=True)
class Report(Record):
    """What the init told csorch about one launch."""

    status: int | None = None  # the command's wait status; None: the init did not say
    stragglers: tuple[str, ...] = ()  # "pid comm cmdline" of each process left alive
    exec_error: str = ""  # the command could not be started
    setup_error: str = ""  # the sandbox could not be made


def read_report(text: str) -> Report:
    """The init's report lines (`init.py`'s docstring) as a `Report`."""
    status, stragglers, exec_error, setup_error = None, [], "", ""
    for line in text.splitlines():
        word, _, rest = line.partition(" ")
        if word == "status" and rest.lstrip("-").isdigit():
            status = int(rest)
        elif word == "straggler":
            stragglers.append(rest)
        elif word == "exec":
            exec_error = rest.partition(" ")[2] or rest
        elif word == "setup":
            setup_error = rest
    return Report(status, tuple(stragglers), exec_error, setup_error)
