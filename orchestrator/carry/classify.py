"""Whether a changed file changes what executes: the first proof of a carried verdict.

Python: both versions parse, and their ASTs are equal once each module's, class's and
function's docstring is removed (comments never reach the AST; a coding cookie does, as
it changes how literals decode: the bytes are parsed, not a decoded text). Line numbers
are left out of the comparison.

C, C++, CUDA (by suffix): the preprocessor's own comment removal (`gcc -fpreprocessed
-dD -E -P`: no include is read, no macro expanded, every directive kept) of both
versions, then the two token streams compared: string and character literals (raw
strings included) are one token each, byte for byte, so a space inside a literal is a
change; a directive ends at its line's end (a NEWLINE token), so a line break that
moves code into or out of a `#define` is a change; whitespace elsewhere is not.

Anything else (data a test reads, a build file, YAML), a file added or removed, one
larger than MAX_BYTES, one that does not parse or that gcc refuses, and a C file where
no gcc is found: executable, with the reason. Nothing is guessed.
"""

from __future__ import annotations

import ast
import re
import shutil
from dataclasses import dataclass
from pathlib import PurePosixPath

from orchestrator import proc
from orchestrator.model.record import Record

MAX_BYTES = 8 << 20
PYTHON = (".py", ".pyi")
C_FAMILY = {".c": "c", ".h": "c++", ".cc": "c++", ".cpp": "c++", ".cxx": "c++", ".c++": "c++",
            ".hh": "c++", ".hpp": "c++", ".hxx": "c++", ".h++": "c++", ".inl": "c++",
            ".ipp": "c++", ".tpp": "c++", ".cu": "c++", ".cuh": "c++"}  # fmt: skip
#: the kinds of a change
SAME_AST = "python: same AST without docstrings"
SAME_TOKENS = "c-family: same tokens without comments"
EXECUTABLE = "executable"
NOT_SOURCE = "not Python nor C, C++ or CUDA source: read as executable"


@dataclass(frozen=True)
class Change(Record):
    """One changed file of a tree and what the proof found."""

    path: str  # relative to the tree
    kind: str  # SAME_AST, SAME_TOKENS or EXECUTABLE
    reason: str = ""  # why it counts as executable, or what differs ("" when it carries)

    @property
    def carries(self) -> bool:
        return self.kind != EXECUTABLE


def classify(path: str, old: bytes | None, new: bytes | None) -> Change:
    """What the change of `path` (relative to the tree) from `old` to `new` is; None: the
    file is absent on that side."""
    if old is None or new is None:
        return Change(path, EXECUTABLE, "added" if old is None else "removed")
    if old == new:
        raise ValueError(f"{path}: not changed")
    if max(len(old), len(new)) > MAX_BYTES:
        return Change(path, EXECUTABLE, f"larger than {MAX_BYTES >> 20} MiB: not read")
    suffix = PurePosixPath(path).suffix.lower()
    if suffix in PYTHON:
        return _python(path, old, new)
    if suffix in C_FAMILY:
        return _c_family(path, old, new, C_FAMILY[suffix])
    return Change(path, EXECUTABLE, NOT_SOURCE)


# -- Python --------------------------------------------------------------------------


def without_docstrings(tree: ast.AST) -> ast.AST:
    """`tree` with every module, class and function docstring taken out (in place)."""
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if (
                body
                and isinstance(body[0], ast.Expr)
                and isinstance(body[0].value, ast.Constant)
                and isinstance(body[0].value.value, str)
            ):
                # a body of only a docstring keeps a `pass` in its place: still a body
                node.body = body[1:] or [ast.Pass()]
    return tree


def python_form(source: bytes) -> str:
    """The AST of `source` without docstrings, as text (SyntaxError, ValueError raise)."""
    return ast.dump(without_docstrings(ast.parse(source)), include_attributes=False)


def _python(path: str, old: bytes, new: bytes) -> Change:
    try:
        same = python_form(old) == python_form(new)
    except (SyntaxError, ValueError, RecursionError) as exc:
        return Change(path, EXECUTABLE, f"does not parse as Python ({type(exc).__name__})")
    return Change(path, SAME_AST) if same else Change(path, EXECUTABLE, "its AST changed")


# -- C, C++, CUDA --------------------------------------------------------------------

_TOKEN = re.compile(
    r"""
    (?P<raw>(?:u8|u|U|L)?R"(?P<delim>[^()\\\s"]{0,16})\((?:.|\n)*?\)(?P=delim)")
  | (?P<string>(?:u8|u|U|L)?"(?:\\.|[^"\\\n])*")
  | (?P<char>(?:u8|u|U|L)?'(?:\\.|[^'\\\n])*')
  | (?P<splice>\\\n)
  | (?P<newline>\n)
  | (?P<space>[ \t\r\f\v]+)
  | (?P<number>\.?[0-9](?:[eEpP][+-]|[A-Za-z0-9_.']|'[0-9A-Za-z])*)
  | (?P<name>[A-Za-z_$][A-Za-z0-9_$]*)
  | (?P<punct>%:%:|\.\.\.|<<=|>>=|<=>|->\*|::|\#\#|<:|:>|<%|%>|%:|->|\+\+|--|<<|>>|<=|>=|==
      |!=|&&|\|\||\+=|-=|\*=|/=|%=|&=|\^=|\|=|\.\*)
  | (?P<other>.)
    """,
    re.VERBOSE | re.DOTALL,
)


INCLUDES = ("include", "include_next", "import")


def tokens(text: str) -> list[str]:
    """The token stream of comment-free C-family `text`: literals whole, an include's
    <header name> whole (a space in it is part of the name), a NEWLINE token at the end
    of each directive line, other whitespace dropped."""
    out: list[str] = []
    line_start, directive = True, False
    pos = 0
    while pos < len(text):
        if directive and text[pos] == "<" and len(out) >= 2 and out[-1] in INCLUDES:
            end = text.find(">", pos, _line_end(text, pos))
            end = end + 1 if end >= 0 else _line_end(text, pos)
            out.append(text[pos:end])
            pos = end
            continue
        m = _TOKEN.match(text, pos)
        assert m is not None  # `other` takes any one character
        pos = m.end()
        kind = m.lastgroup
        if kind in ("space", "splice"):
            continue
        if kind == "newline":
            if directive:
                out.append("\n")
            line_start, directive = True, False
            continue
        word = m.group()
        if line_start and word in ("#", "%:"):
            directive = True
        line_start = False
        out.append(word)
    return out


def _line_end(text: str, pos: int) -> int:
    end = text.find("\n", pos)
    return end if end >= 0 else len(text)


_SPLICE = re.compile(rb"\\\r?\n")
_RAW = re.compile(rb'(?:u8|u|U|L)?R"')


def _spliced(source: bytes) -> bytes:
    """`source` with its backslash-newlines removed, as the compiler's second phase does
    before anything else (gcc -fpreprocessed keeps a `//` comment's, so the line it joins
    to the comment would count as code); OSError beside a raw string literal, where the
    compiler undoes the splice."""
    if not _SPLICE.search(source):
        return source
    if _RAW.search(source):
        raise OSError("a line splice beside a raw string literal: not read")
    return _SPLICE.sub(b"", source)


def _uncommented(source: bytes, language: str) -> str:
    source = _spliced(source)
    gcc = shutil.which("gcc")
    if gcc is None:
        raise OSError("no gcc on PATH to remove the comments")
    done = proc.filter_bytes(
        [gcc, "-fpreprocessed", "-dD", "-E", "-P", "-x", language, "-"], source, timeout=60
    )
    if done.returncode != 0 or done.timed_out:
        raise OSError(f"gcc -fpreprocessed refused it: {done.stderr[-300:].strip()}")
    return done.stdout.decode("utf-8", errors="surrogateescape")


def _c_family(path: str, old: bytes, new: bytes, language: str) -> Change:
    try:
        same = tokens(_uncommented(old, language)) == tokens(_uncommented(new, language))
    except (OSError, ValueError) as exc:
        return Change(path, EXECUTABLE, str(exc))
    if same:
        return Change(path, SAME_TOKENS)
    return Change(path, EXECUTABLE, "its tokens changed (comments removed)")
