"""compute-sanitizer's frames and log names with hostile paths: a Python frame's file with
spaces (`test_a in /my dir/test_a.py:3`) keeps its function, so the case is still named
by it; a device frame's file keeps its spaces; a `--log-file` under an `--out` with `%`
lands at the prefix as it is; and no frame text, however long, is slow to read."""

from __future__ import annotations

import re
import time

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from orchestrator.backends import channel
from orchestrator.backends.compute_sanitizer.frames import device_frame, host_frame
from tests.unit.hostile_text import QUICK, hostile, long_text

one_line = hostile.map(lambda s: re.sub(r"[\x00\n\r\x0b\x0c\x1c-\x1e\x85\u2028\u2029]", "", s))
python_names = st.from_regex(
    r"(test_[A-Za-z0-9_]{0,20}|<module>|<lambda>|csorch_case_[0-9]{1,3})", fullmatch=True
)


@QUICK
@given(python_names, one_line, st.integers(1, 10**9 - 1))
def test_a_python_frame_round_trips(function: str, path: str, line: int) -> None:
    path = "/" + path.strip() + ".py"
    got = host_frame(f"{function} in {path}:{line}")
    assert (got.function, got.file, got.line) == (function, path, line)
    assert got.is_python


@QUICK
@given(st.sampled_from(["k(float *, int)", "helper(float)", "void ns::k<int>(int*)"]), one_line)
def test_a_device_frame_keeps_its_file(function: str, path: str) -> None:
    path = "/" + path.strip()
    assume(not re.search(r":[0-9]", path))
    got = device_frame(f"{function}+0xb0 in {path}:41")
    assert (got.function, got.file, got.line) == (function, path, 41)


def test_a_python_frame_in_a_directory_with_a_space() -> None:
    got = host_frame("test_replay in /home/me/my tests/test_rng.py:50")
    assert (got.function, got.file, got.line) == (
        "test_replay",
        "/home/me/my tests/test_rng.py",
        50,
    )
    got = device_frame("0x000000b0 in /src dir/k.cu:41:k(float *, int)")
    assert (got.function, got.file, got.line) == ("k(float *, int)", "/src dir/k.cu", 41)


def expand(pattern: str, pid: int) -> str:
    """What the tool makes of a `--log-file` name (its manual: %p the pid, %q{VAR} a
    variable, %% a %, any other % an error)."""
    out, i = [], 0
    while i < len(pattern):
        if pattern[i] != "%":
            out.append(pattern[i])
            i += 1
        elif pattern[i + 1 : i + 2] == "%":
            out.append("%")
            i += 2
        elif pattern[i + 1 : i + 2] == "p":
            out.append(str(pid))
            i += 2
        else:
            raise ValueError(f"bad % at {i} in {pattern!r}")
    return "".join(out)


@QUICK
@given(one_line)
def test_the_log_file_lands_at_the_prefix(name: str) -> None:
    from pathlib import Path

    prefix = Path("/bundle", name.replace("/", "_") or "x", "logs", "r0.launch0.checker")
    made = expand(str(channel.cs_pattern(prefix)), 4540)
    assert made == f"{prefix}.4540.log"
    m = channel.CS_LOG_RE.match(Path(made).name)
    assert m and m["prefix"] == prefix.name and m["pid"] == "4540"


@QUICK
@given(long_text)
def test_long_frame_text_is_read_quickly(text: str) -> None:
    start = time.perf_counter()
    for line in (
        text,
        f"f in {text}.py:1",
        f"{text} [0x1]",
        f"k+0x1 in {text}:3",
        text + " " * 50_000,
    ):
        host_frame(line)
        device_frame(line)
    assert time.perf_counter() - start < 5.0


@pytest.mark.parametrize("spaces", [100_000])
def test_a_frame_with_a_long_run_of_spaces_is_read_quickly(spaces: int) -> None:
    start = time.perf_counter()
    host_frame("/a b (f + 0x1) [0x2]" + " " * spaces)
    assert time.perf_counter() - start < 1.0  # 8 s before
