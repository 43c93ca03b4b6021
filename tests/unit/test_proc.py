"""proc: real child processes (python -c ...), including a grandchild that must die."""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
from pathlib import Path

import pytest

from orchestrator import proc
from orchestrator.errors import ProcessStartError

pytestmark = pytest.mark.process  # builds, runs a checker, git or a child process


PY = sys.executable


def _dead(pid: int) -> bool:
    """Gone, or a zombie waiting for a reaper that is not us."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0] == "Z"
    except FileNotFoundError:
        return True


def _wait_dead(pid: int, within: float = 5.0) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if _dead(pid):
            return True
        time.sleep(0.02)
    return False


def _spawn_grandchild_code(pidfile: Path) -> str:
    # the child starts a sleeping grandchild, records its pid, then sleeps itself
    return (
        "import subprocess, sys, time\n"
        f"g = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'])\n"
        f"open({str(pidfile)!r}, 'w').write(str(g.pid))\n"
        "print('started', flush=True)\n"
        "time.sleep(60)\n"
    )


def test_output_goes_to_log_and_exit_code_is_data(tmp_path: Path) -> None:
    log = tmp_path / "sub" / "out.log"
    code = "import sys; print('to stdout'); print('to stderr', file=sys.stderr); sys.exit(3)"
    result = proc.run([PY, "-c", code], log_path=log)
    assert result.returncode == 3
    assert not result.timed_out
    text = log.read_text()
    assert "to stdout" in text and "to stderr" in text
    assert result.argv == (PY, "-c", code)
    assert result.duration > 0


def test_env_delta_cwd_and_removal(tmp_path: Path) -> None:
    code = (
        "import os; print(os.getcwd()); print(os.environ.get('CSORCH_A')); "
        "print(os.environ.get('CSORCH_GONE'))"
    )
    base = {**os.environ, "CSORCH_GONE": "here"}
    result = proc.run(
        [PY, "-c", code],
        log_path=tmp_path / "log",
        cwd=tmp_path,
        env={"CSORCH_A": "1", "CSORCH_GONE": None},
        base_env=base,
    )
    lines = (tmp_path / "log").read_text().split()
    assert lines == [str(tmp_path), "1", "None"]
    assert result.env_delta == (("CSORCH_A", "1"), ("CSORCH_GONE", None))
    assert result.cwd == str(tmp_path)


def test_append_keeps_earlier_output(tmp_path: Path) -> None:
    log = tmp_path / "log"
    proc.run([PY, "-c", "print('one')"], log_path=log)
    proc.run([PY, "-c", "print('two')"], log_path=log, append=True)
    assert log.read_text().split() == ["one", "two"]


def test_timeout_kills_the_whole_group(tmp_path: Path) -> None:
    pidfile = tmp_path / "grandchild.pid"
    start = time.monotonic()
    result = proc.run(
        [PY, "-c", _spawn_grandchild_code(pidfile)],
        log_path=tmp_path / "log",
        timeout=1.5,
        grace=0.5,
    )
    assert result.timed_out
    assert result.returncode < 0  # killed by a signal
    assert time.monotonic() - start < 10
    assert _wait_dead(int(pidfile.read_text()))


def test_grandchild_that_ignores_sigterm_is_killed(tmp_path: Path) -> None:
    pidfile = tmp_path / "pid"
    code = (
        "import signal, subprocess, sys, time\n"
        "g = subprocess.Popen([sys.executable, '-c', "
        "'import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(60)'])\n"
        f"open({str(pidfile)!r}, 'w').write(str(g.pid))\n"
        "time.sleep(60)\n"
    )
    result = proc.run([PY, "-c", code], log_path=tmp_path / "log", timeout=1.5, grace=0.3)
    assert result.timed_out
    assert _wait_dead(int(pidfile.read_text()))


def test_leftover_grandchild_is_killed_after_a_normal_exit(tmp_path: Path) -> None:
    pidfile = tmp_path / "pid"
    code = (
        "import subprocess, sys\n"
        "g = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'])\n"
        f"open({str(pidfile)!r}, 'w').write(str(g.pid))\n"
    )
    result = proc.run([PY, "-c", code], log_path=tmp_path / "log", timeout=30)
    assert result.returncode == 0 and not result.timed_out
    assert _wait_dead(int(pidfile.read_text()))


def test_keyboard_interrupt_kills_the_group_and_propagates(tmp_path: Path) -> None:
    pidfile = tmp_path / "pid"

    def interrupt() -> None:
        deadline = time.monotonic() + 10
        while not pidfile.exists() and time.monotonic() < deadline:
            time.sleep(0.02)
        os.kill(os.getpid(), signal.SIGINT)

    # Python's own SIGINT handler, whatever this process inherited: a test run started in
    # the background by a non-interactive shell ignores SIGINT, and the signal would be lost
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    threading.Thread(target=interrupt, daemon=True).start()
    try:
        with pytest.raises(KeyboardInterrupt):
            proc.run(
                [PY, "-c", _spawn_grandchild_code(pidfile)],
                log_path=tmp_path / "log",
                timeout=30,
                grace=0.5,
            )
    finally:
        signal.signal(signal.SIGINT, previous)
    assert _wait_dead(int(pidfile.read_text()))


def test_missing_program_is_an_error_not_a_result(tmp_path: Path) -> None:
    with pytest.raises(ProcessStartError) as info:
        proc.run(["csorch-no-such-program"], log_path=tmp_path / "log")
    assert "csorch-no-such-program" in str(info.value)
    assert "PATH" in str(info.value)


def test_missing_cwd_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(ProcessStartError):
        proc.run([PY, "-c", "pass"], log_path=tmp_path / "log", cwd=tmp_path / "nope")


def test_env_values_must_be_strings(tmp_path: Path) -> None:
    with pytest.raises(TypeError):
        proc.run([PY, "-c", "pass"], log_path=tmp_path / "log", env={"X": 1})  # type: ignore[dict-item]


def test_capture_returns_output_and_times_out(tmp_path: Path) -> None:
    got = proc.capture([PY, "-c", "print('version 1.2')"])
    assert got.returncode == 0 and got.output.strip() == "version 1.2" and not got.timed_out
    slow = proc.capture(
        [PY, "-c", "import time; print('x', flush=True); time.sleep(30)"], timeout=0.5
    )
    assert slow.timed_out and slow.output.startswith("x")


def test_result_round_trips() -> None:
    result = proc.ProcResult(("a",), 0, False, 1.0, Path("/tmp/x"), "/", (("A", None),))
    assert proc.ProcResult.from_dict(result.to_dict()) == result


def test_cpu_time_of_the_child_and_what_it_waited_for(tmp_path: Path) -> None:
    # the child spins in a grandchild: wait4's usage includes it, the wall clock cannot
    spin = "import time; t = time.process_time()\nwhile time.process_time() - t < 0.3: pass"
    code = f"import subprocess, sys; subprocess.run([sys.executable, '-c', {spin!r}])"
    result = proc.run([PY, "-c", code], log_path=tmp_path / "spin.log")
    assert result.returncode == 0 and result.cpu >= 0.3
    assert (
        proc.run([PY, "-c", "import sys; sys.exit(5)"], log_path=tmp_path / "x.log").returncode == 5
    )


def _script(path: Path) -> Path:
    path.write_text("#!/bin/sh\necho started\n")
    path.chmod(0o755)
    return path


def test_a_program_still_open_for_writing_is_waited_out_then_named(tmp_path: Path) -> None:
    """"Text file busy": a program just written (a copied build) whose writer's descriptor
    a child forked by another thread still holds. A short hold is waited out; one that
    lasts is a ProcessStartError, not an OSError read as a write of csorch's own."""
    prog = _script(tmp_path / "prog")
    held = os.open(prog, os.O_WRONLY)
    threading.Timer(0.3, os.close, (held,)).start()
    result = proc.run([str(prog)], log_path=tmp_path / "log")
    assert result.returncode == 0 and (tmp_path / "log").read_text() == "started\n"

    held = os.open(prog, os.O_WRONLY)
    try:
        with pytest.raises(ProcessStartError) as info:
            proc.run([str(prog)], log_path=tmp_path / "log2")
    finally:
        os.close(held)
    assert "Text file busy" in str(info.value) and str(prog) in str(info.value)


def test_a_file_that_is_no_program_cannot_be_started(tmp_path: Path) -> None:
    junk = tmp_path / "junk"
    junk.write_bytes(b"\x00\x01not an executable\n")
    junk.chmod(0o755)
    with pytest.raises(ProcessStartError) as info:
        proc.run([str(junk)], log_path=tmp_path / "log")
    assert "Exec format error" in str(info.value)
