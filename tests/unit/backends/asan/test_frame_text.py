"""ASan's frame lines with hostile paths: a file or module path holding spaces, colons,
quotes, `%`, `(`, non-UTF-8 bytes, is read back as the path, and the function before it
stays the function (a path with a space once made its first word the function's, and a
target missed the fix's finding)."""

from __future__ import annotations

import re

from hypothesis import assume, given
from hypothesis import strategies as st

from orchestrator.backends.asan.log import frame, parse
from tests.unit.hostile_text import QUICK, hostile

# C and C++ names as the symbolizer writes them: spaces, commas, templates, operators
functions = st.one_of(
    st.from_regex(r"[A-Za-z_][A-Za-z0-9_:]{0,30}", fullmatch=True),
    st.sampled_from(
        [
            "f(int, char const*) const",
            "operator new(unsigned long)",
            "(anonymous namespace)::g()",
            "std::vector<int, std::allocator<int> >::at(unsigned long)",
            "operator/(A const&, B const&)",
            "main::{lambda(int)#1}::operator()(int) const",
        ]
    ),
)
# an absolute path as the runtime prints it (one line: no newline, no NUL)
paths = hostile.map(lambda s: "/" + re.sub(r"[\x00\n\r\x0b\x0c\x1c-\x1e\x85\u2028\u2029]", "", s))


def _fine(function: str) -> bool:
    # a function never holds an absolute path after a space (what marks the path's start)
    return not re.search(r"\s\(?/", function) and function == function.strip()


@QUICK
@given(functions, paths, st.integers(1, 10**9 - 1), st.integers(1, 999))
def test_a_file_frame_round_trips(function: str, path: str, line: int, column: int) -> None:
    assume(_fine(function) and path == path.rstrip())
    got = frame(f"    #3 0x55d0aa01 in {function} {path}:{line}:{column}")
    assert (got.function, got.file, got.line, got.offset) == (function, path, line, "0x55d0aa01")


@QUICK
@given(functions, paths, st.integers(1, 10**9 - 1))
def test_a_file_frame_without_column_round_trips(function: str, path: str, line: int) -> None:
    # without a column a path ending in ":N" is ambiguous in ASan's text itself
    assume(_fine(function) and path == path.rstrip() and not re.search(r":[0-9]+$", path))
    got = frame(f"#0 0x1 in {function} {path}:{line}")
    assert (got.function, got.file, got.line) == (function, path, line)


@QUICK
@given(functions, paths)
def test_a_module_frame_round_trips(function: str, path: str) -> None:
    assume(_fine(function))
    got = frame(f"    #3 0x7f31 in {function} ({path}+0x1139)")
    assert (got.function, got.module, got.file) == (function, path, "")
    got = frame(f"    #4 0x7f31 ({path}+0x10c0) (BuildId: 4f2a)")
    assert (got.function, got.module) == ("", path)


def test_the_examples_of_the_brief() -> None:
    got = frame("#3 0x55d0 in func /a b/c.cc:12:3")
    assert (got.function, got.file, got.line) == ("func", "/a b/c.cc", 12)
    got = frame("#3 0x55d0 in func (/lib/a b.so+0x12)")
    assert (got.function, got.module) == ("func", "/lib/a b.so")
    # a relative file (the C library's own debug info) is the last word, as before
    got = frame("#2 0x7fc7 in __libc_start_call_main ../sysdeps/nptl/libc_start_call_main.h:58")
    assert got.file == "../sysdeps/nptl/libc_start_call_main.h" and got.line == 58


@QUICK
@given(st.sampled_from(["", "  ", "in ", "#0 0x1 in ", "(/", " /", "+0x1)", ":1:2"]), hostile)
def test_any_frame_text_parses_without_raising(head: str, text: str) -> None:
    for line in (head + text, f"#1 0x2 in {text}", f"#1 0x2 in f {text}:3"):
        frame(line)
        parse([line])
