"""carry.classify on qext's own files: a comment-only and a docstring-only change carry;
a one-token change, a changed default argument, a changed data file, a space inside a
string literal, code moved into a #define by a line break, a coding cookie: executable.
Real gcc for the comment removal."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from orchestrator.carry.classify import EXECUTABLE, SAME_AST, SAME_TOKENS, classify, tokens

pytestmark = pytest.mark.process  # gcc -fpreprocessed in a child

ROOT = Path(__file__).resolve().parents[3]
CPP = "csrc/cpu/nvfp4.cpp"
PY = "qext/quantizers.py"
needs_gcc = pytest.mark.skipif(shutil.which("gcc") is None, reason="no gcc here")


def source(rel: str) -> bytes:
    return (ROOT / "ext" / rel).read_bytes()


def edited(rel: str, old: str, new: str, count: int = 1) -> bytes:
    text = source(rel).decode()
    assert old in text, old
    return text.replace(old, new, count).encode()


@needs_gcc
def test_a_comment_only_change_in_cpp_carries() -> None:
    new = edited(CPP, "// NVFP4 quantization on the CPU", "/* NVFP4, on the CPU */ //")
    new = new.replace(b"namespace cpu {", b"namespace cpu {  // the CPU path\n/* more\n*/")
    assert classify(CPP, source(CPP), new).kind == SAME_TOKENS


@needs_gcc
def test_a_one_token_change_does_not() -> None:
    new = edited(CPP, "r < R;", "r <= R;")
    change = classify(CPP, source(CPP), new)
    assert change.kind == EXECUTABLE and "tokens changed" in change.reason


@needs_gcc
def test_a_space_inside_a_string_literal_does_not() -> None:
    old = b'const char* s = "a b";  // x\n'
    assert classify("x.cu", old, b'const char* s = "a b"; /* y */\n').carries
    assert not classify("x.cu", old, b'const char* s = "a  b";\n').carries
    raw = b'auto r = R"d(one // two)d";\n'
    assert classify("x.cc", raw, b'auto r = R"d(one // two)d"; // c\n').carries
    assert not classify("x.cc", raw, b'auto r = R"d(one //  two)d";\n').carries


@needs_gcc
def test_a_line_break_into_a_define_does_not() -> None:
    old = b"#define LIMIT 10\nint x = LIMIT;\n"
    assert not classify("k.h", old, b"#define LIMIT 10 \\\nint x = LIMIT;\n").carries
    assert classify("k.h", old, b"#define LIMIT /* ten */ 10\nint   x =\n  LIMIT;\n").carries


def test_a_docstring_only_change_carries() -> None:
    text = source(PY).decode()
    new = text.replace('"""', '"""Reworded. ', 1).encode()
    assert new != source(PY)
    assert classify(PY, source(PY), new).kind == SAME_AST
    # a comment and a blank line too
    assert classify(PY, source(PY), new + b"\n# trailing note\n").kind == SAME_AST


def test_a_changed_default_argument_does_not() -> None:
    new = edited(PY, "rowwise: bool = True", "rowwise: bool = False")
    change = classify(PY, source(PY), new)
    assert change.kind == EXECUTABLE and "AST changed" in change.reason


def test_a_string_that_is_not_a_docstring_counts() -> None:
    old = b'def f():\n    """doc"""\n    return "a b"\n'
    assert classify("m.py", old, b'def f():\n    """other doc"""\n    return "a b"\n').carries
    assert not classify("m.py", old, b'def f():\n    """doc"""\n    return "a  b"\n').carries
    # a function whose body was only its docstring keeps a body
    assert classify("m.py", b'def g():\n    """x"""\n', b'def g():\n    """y"""\n').carries


def test_a_coding_cookie_changes_what_literals_mean() -> None:
    old = b"# -*- coding: utf-8 -*-\nS = '\xc3\xa9'\n"
    new = b"# -*- coding: latin-1 -*-\nS = '\xc3\xa9'\n"
    assert not classify("c.py", old, new).carries


def test_data_added_removed_unparsable_and_large_files_are_executable() -> None:
    assert classify("tests/data/cases.json", b"[1]", b"[2]").reason.startswith("not Python")
    assert classify("new.py", None, b"x = 1\n").reason == "added"
    assert classify("old.cpp", b"int x;", None).reason == "removed"
    assert "does not parse" in classify("bad.py", b"x = 1\n", b"x = (\n").reason
    big = b"#" * (9 << 20)
    assert "not read" in classify("big.py", b"x = 1\n", big).reason


def test_tokens_keep_literals_whole_and_directive_ends() -> None:
    assert tokens('#define A "x y" \\\n  + 1\nint b<=c;') == [
        "#", "define", "A", '"x y"', "+", "1", "\n", "int", "b", "<=", "c", ";",
    ]  # fmt: skip
    assert tokens("a ->* b <=> c") == ["a", "->*", "b", "<=>", "c"]
