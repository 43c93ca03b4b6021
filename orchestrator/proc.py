"""Child processes: the only module in csorch that starts one (but `sandbox.probe`, which
starts `unshare` once to learn whether this host can sandbox).

`run` starts an argv in a new session (its own process group) with an environment
delta, a working directory and a timeout; the child's stdout and stderr go straight
into a log file (no pipe to drain, so a chatty or hung child cannot block csorch).
On timeout, on Ctrl-C, and after a normal exit, the whole group is killed: a test must
not outlive its attempt and keep a GPU busy. The exit status is data in the result,
never an exception; only a program that cannot be started at all raises.

Given a `Sandbox`, `run` starts the argv inside one (`orchestrator.sandbox`: its own PID,
mount and network namespaces, read-only but for the writable paths named); the processes
it left alive when its main process ended are the result's `stragglers`, and its
environment is the allowed part of csorch's own (`sandbox.allowed_env`), plus the delta.
csorch's own tools (`capture`: git, sbatch, ssh-keygen, the host's probes) run with
csorch's whole environment (a cluster's `SLURM_CONF` or an agent's `SSH_AUTH_SOCK` is
theirs to see, and they run no subject code) but `GIT_LOCATION`.
"""

from __future__ import annotations

import contextlib
import errno
import os
import signal
import subprocess
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from orchestrator import files
from orchestrator import sandbox as sandboxes
from orchestrator.errors import ProcessStartError
from orchestrator.model.record import Record
from orchestrator.sandbox import Sandbox

DEFAULT_GRACE = 5.0  # seconds between SIGTERM and SIGKILL
_POLL_MAX = 0.05
#: every child of this csorch process carries SESSION_VAR=SESSION in its environment (not
#: in the recorded delta): after a SIGKILL of csorch, its children, which sit in their
#: own sessions, are found by it and stopped before a resume runs anything
SESSION_VAR = "CSORCH_SESSION"
SESSION = f"{os.getpid()}-{os.urandom(6).hex()}"


@dataclass(frozen=True)
class ProcResult(Record):
    argv: tuple[str, ...]
    returncode: int  # negative: killed by that signal
    timed_out: bool
    duration: float
    log_path: Path
    cwd: str
    env_delta: tuple[tuple[str, str | None], ...]  # what was set (None: removed)
    cpu: float = 0.0  # user + system seconds of the child and the descendants it waited for
    started: float = 0.0  # time.time() just before the start: places the child's own clock marks
    #: "pid 'comm' 'cmdline'" of each process a sandboxed launch left alive when its main
    #: process ended (all of them are killed)
    stragglers: tuple[str, ...] = ()


@dataclass(frozen=True)
class Captured(Record):
    """The output of a short probe (`--version` and the like)."""

    argv: tuple[str, ...]
    returncode: int
    timed_out: bool
    output: str


#: what git sets for a hook (a csorch started from one inherits them): they point any git
#: at the user's repository, index or objects; csorch's own git works on its own copies
GIT_LOCATION = frozenset(
    {
        "GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_OBJECT_DIRECTORY",
        "GIT_ALTERNATE_OBJECT_DIRECTORIES", "GIT_COMMON_DIR", "GIT_NAMESPACE", "GIT_PREFIX",
        "GIT_QUARANTINE_PATH", "GIT_DISCOVERY_ACROSS_FILESYSTEM", "GIT_CEILING_DIRECTORIES",
    }
)  # fmt: skip


def build_env(
    delta: Mapping[str, str | None] | None,
    base: Mapping[str, str] | None = None,
    *,
    sandboxed: bool = True,
) -> tuple[dict[str, str], tuple[tuple[str, str | None], ...]]:
    """The child's environment (base, by default csorch's own environment: for a
    `sandboxed` launch, with the sandbox on, only its allowed part; + delta; None
    removes) and the sorted delta."""
    if base is not None:
        env = dict(base)
    elif sandboxed and sandboxes.enabled():  # only what a build and a test need
        env = sandboxes.allowed_env(os.environ)
    else:  # csorch's own tools: all of it, but where git would find a repository
        env = {k: v for k, v in os.environ.items() if k not in GIT_LOCATION}
    recorded: list[tuple[str, str | None]] = []
    for key, value in sorted((delta or {}).items()):
        if value is None:
            env.pop(key, None)
        elif isinstance(value, str):
            env[key] = value
        else:
            raise TypeError(f"environment value for {key} must be a str, not {type(value)}")
        recorded.append((key, value))
    return env, tuple(recorded)


#: how long a start waits out "Text file busy" (ETXTBSY): the program was just written
#: (a build's output, an attempt's copy of the built tree) and a child forked by another
#: thread still holds the writer's descriptor until it execs; the window is that short
BUSY_WAIT = 2.0


def _start(argv: Sequence[str], **kwargs: object) -> subprocess.Popen[bytes]:
    """Popen in a new session; a program that cannot be started at all (missing, not
    executable, not a program, a bad cwd) is a ProcessStartError, never an OSError that
    would read as a failed write of csorch's own."""
    deadline = time.monotonic() + BUSY_WAIT
    pause = 0.005
    while True:
        try:
            return subprocess.Popen(list(argv), start_new_session=True, **kwargs)  # type: ignore[call-overload]
        except OSError as exc:
            if exc.errno == errno.ETXTBSY and time.monotonic() < deadline:
                time.sleep(pause)
                pause = min(pause * 2, 0.1)
                continue
            raise ProcessStartError(argv, exc.strerror or str(exc)) from None


def _exited(pid: int) -> bool:
    """Whether the child has exited, without reaping it: while it is an unreaped
    zombie its pid (= the group id) cannot be reused, so killing the group is safe."""
    try:
        info = os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
    except ChildProcessError:
        return True
    return info is not None


def _wait_exit(pid: int, timeout: float | None, cancel: threading.Event | None = None) -> bool:
    """Poll until the child exits (True), or `timeout` passes or `cancel` is set (False)."""
    deadline = None if timeout is None else time.monotonic() + timeout
    delay = 0.0005
    while not _exited(pid):
        if cancel is not None and cancel.is_set():
            return False
        if deadline is not None:
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            delay = min(delay, left)
        time.sleep(delay)
        delay = min(delay * 2, _POLL_MAX)
    return True


def _killpg(pgid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


def _stop_group(pid: int, grace: float) -> None:
    """SIGTERM the group (a sanitizer may flush its log), wait up to `grace` for the
    leader; the caller then SIGKILLs whatever remains and reaps the leader."""
    if not _exited(pid):
        _killpg(pid, signal.SIGTERM)
        _wait_exit(pid, grace)


def _end_sandbox(pid: int) -> None:
    """SIGKILL the sandbox's PID 1 (unshare's child) and wait for unshare: PID 1's exit
    waits until every process of its namespace is gone, and unshare's waits for PID 1,
    so nothing of the launch is left when this returns (killing unshare first would not
    wait)."""
    try:
        children = files.read_text(Path(f"/proc/{pid}/task/{pid}/children")).split()
    except OSError:
        children = []
    for child in children:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(int(child), signal.SIGKILL)
    _wait_exit(pid, 10.0)


def run(
    argv: Sequence[str | os.PathLike[str]],
    *,
    log_path: Path,
    env: Mapping[str, str | None] | None = None,
    cwd: Path | str | None = None,
    timeout: float | None = None,
    base_env: Mapping[str, str] | None = None,
    grace: float = DEFAULT_GRACE,
    append: bool = False,
    cancel: threading.Event | None = None,
    sandbox: Sandbox | None = None,
) -> ProcResult:
    """Run `argv` to completion with its output in `log_path`; kill its group on timeout.

    `env` is applied on top of `base_env` (default: csorch's environment). On
    KeyboardInterrupt the group is killed and the interrupt re-raised. `cancel` is how
    another thread interrupts a run in a worker thread (Ctrl-C only reaches the main
    thread, and the children sit in their own sessions): when it is set, the group is
    killed and KeyboardInterrupt raised in the worker. `sandbox`: run inside it where
    this host can (`sandbox.probe`), else as without one.
    """
    if cancel is not None and cancel.is_set():
        raise KeyboardInterrupt
    args = tuple(os.fspath(a) for a in argv)
    child_env, delta = build_env(env, base_env, sandboxed=sandbox is not None)
    child_env[SESSION_VAR] = SESSION
    log_path = Path(log_path)
    files.make_dirs(log_path.parent)
    where = os.path.abspath(cwd if cwd is not None else os.getcwd())
    report = None
    if sandbox is not None and sandboxes.active():
        report = os.pipe()  # the init's word; the command never holds it
        # the launch's argv, cwd and environment name an aliased directory as it sees it
        launched, where, seen_env = sandboxes.seen(sandbox, args, where, child_env)
        env_fd = sandboxes.env_file(seen_env)
        # unshare and the init run in a bare environment; the command gets child_env
        init_env = {"PATH": child_env.get("PATH", os.defpath), SESSION_VAR: SESSION}
    timed_out = False
    # no link followed and no pipe opened (the caller has made and checked the directory
    # below its own root: execute's logs/)
    with files.open_file(log_path, "a" if append else "w", binary=True) as log:
        started = time.time()
        start = time.monotonic()
        try:
            if report is None:
                proc = _start(
                    args,
                    stdin=subprocess.DEVNULL,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    env=child_env,
                    cwd=cwd,
                )
            else:
                assert sandbox is not None
                proc = _start(
                    sandboxes.argv(sandbox, launched, where, report[1], env_fd),
                    stdin=subprocess.DEVNULL,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    env=init_env,
                    cwd=cwd,
                    pass_fds=(report[1], env_fd),
                )
        except ProcessStartError:
            _close(report)
            raise
        finally:
            if report is not None:
                os.close(env_fd)
        if report is not None:
            os.close(report[1])
        try:
            if not _wait_exit(proc.pid, timeout, cancel):
                if cancel is not None and cancel.is_set():
                    raise KeyboardInterrupt
                timed_out = True
                _stop_group(proc.pid, grace)
                if report is not None:
                    _end_sandbox(proc.pid)
        except KeyboardInterrupt:
            _stop_group(proc.pid, min(grace, 1.0))
            if report is not None:
                _end_sandbox(proc.pid)
            _killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            if report is not None:
                os.close(report[0])  # its write end is closed already (and maybe reused)
            raise
        # the leader is exited but not yet reaped, so its pid still names this group:
        # anything it left behind goes with it
        _killpg(proc.pid, signal.SIGKILL)
        # wait4, not wait: its resource usage is what the child cost (a build's compilers
        # included), which a wall-clock duration of parallel work does not tell
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = returncode = os.waitstatus_to_exitcode(status)
        duration = time.monotonic() - start
    said = sandboxes.Report()
    if report is not None:
        said = sandboxes.read_report(_read_all(report[0]))
        if said.exec_error or said.setup_error:
            raise ProcessStartError(args, said.exec_error or f"sandbox: {said.setup_error}")
        if said.status is not None:
            returncode = os.waitstatus_to_exitcode(said.status)
        elif timed_out:  # its PID 1 was killed, and with it the command
            returncode = -signal.SIGKILL
    return ProcResult(
        argv=args,
        returncode=returncode,
        timed_out=timed_out,
        duration=duration,
        log_path=log_path,
        cpu=usage.ru_utime + usage.ru_stime,
        started=started,
        cwd=os.fspath(cwd) if cwd is not None else os.getcwd(),
        env_delta=delta,
        stragglers=said.stragglers,
    )


def _close(report: tuple[int, int] | None) -> None:
    if report is not None:
        for fd in report:
            with contextlib.suppress(OSError):
                os.close(fd)


def _read_all(fd: int) -> str:
    """The init's report, once it has exited (every writer closed: EOF, no wait)."""
    chunks = []
    try:
        while chunk := os.read(fd, 65536):
            chunks.append(chunk)
    finally:
        os.close(fd)
    return b"".join(chunks).decode(errors="replace")


def capture(
    argv: Sequence[str | os.PathLike[str]],
    *,
    timeout: float = 60.0,
    env: Mapping[str, str | None] | None = None,
    cwd: Path | str | None = None,
) -> Captured:
    """Run a short probe and return its combined output as text."""
    args = tuple(os.fspath(a) for a in argv)
    child_env, _ = build_env(env, sandboxed=False)
    proc = _start(
        args,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        env=child_env,
        cwd=cwd,
    )
    try:
        out, _ = proc.communicate(timeout=timeout)
        timed_out = False
    except subprocess.TimeoutExpired:
        _killpg(proc.pid, signal.SIGKILL)
        out, _ = proc.communicate()
        timed_out = True
    except KeyboardInterrupt:
        _killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        raise
    return Captured(args, proc.returncode, timed_out, out.decode(errors="replace"))


@dataclass(frozen=True)
class Filtered:
    """What a filter (`filter_bytes`) wrote: its stdout as bytes, its stderr as text."""

    argv: tuple[str, ...]
    returncode: int
    timed_out: bool
    stdout: bytes
    stderr: str


def filter_bytes(
    argv: Sequence[str | os.PathLike[str]], data: bytes, *, timeout: float = 60.0
) -> Filtered:
    """Run a short filter of csorch's own (gcc -E, say) with `data` on its stdin; its
    stdout apart from its stderr (a warning must not become part of the output)."""
    args = tuple(os.fspath(a) for a in argv)
    child_env, _ = build_env(None, sandboxed=False)
    proc = _start(
        args, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=child_env
    )
    try:
        out, err = proc.communicate(data, timeout=timeout)
        timed_out = False
    except subprocess.TimeoutExpired:
        _killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        timed_out = True
    except KeyboardInterrupt:
        _killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        raise
    return Filtered(args, proc.returncode, timed_out, out, err.decode(errors="replace"))


_stopping = threading.Event()  # set by the first SIGINT/SIGTERM: csorch is shutting down
_SIGNALS = (signal.SIGINT, signal.SIGTERM)


def on_signal(signum: int, frame: object) -> None:
    """The SIGINT/SIGTERM handler: the first raises KeyboardInterrupt (children are
    stopped and the bundle marked interrupted on the way out); a second one during that
    shutdown is swallowed, or it would cut the shutdown short (the bundle left unmarked,
    the process ended by the signal instead of csorch's exit status)."""
    if _stopping.is_set():
        return
    _stopping.set()
    raise KeyboardInterrupt


def catch_signals() -> dict[int, object]:
    """Install `on_signal` for SIGINT and SIGTERM (main thread); the handlers it replaced,
    for `restore_signals`."""
    return {s: signal.signal(s, on_signal) for s in _SIGNALS}


def restore_signals(previous: Mapping[int, object]) -> None:
    """Put back the handlers `catch_signals` replaced, unless a signal has come: then
    `on_signal` stays, swallowing any further one until csorch exits."""
    if _stopping.is_set():
        return
    for sig, handler in previous.items():
        signal.signal(sig, handler)  # type: ignore[arg-type]


def leftovers(sessions: Sequence[str]) -> list[int]:
    """Pids of processes started by the csorch sessions named (children of a csorch that
    was killed outright), found by their environment in /proc."""
    wanted = {f"{SESSION_VAR}={s}".encode() for s in sessions if s and s != SESSION}
    found = []
    for entry in Path("/proc").glob("[0-9]*"):
        with contextlib.suppress(OSError):
            if wanted & set(files.read_bytes(entry / "environ").split(b"\0")):
                found.append(int(entry.name))
    return sorted(found)


def stop_leftovers(sessions: Sequence[str]) -> int:
    """SIGKILL the process groups of `leftovers(sessions)`; how many processes there were."""
    pids = leftovers(sessions)
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            _killpg(os.getpgid(pid), signal.SIGKILL)
    return len(pids)
