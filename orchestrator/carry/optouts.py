"""Checker opt-outs in a variant's source tree: text that takes the checker away from some
code, or lets code tell that a checker watches it, so that a defect can hide from the
checker instead of being fixed. A fix that adds one proves nothing by its clean run
(judge/optouts.py). This module finds them: run/build.py reads every variant's tree, and
`csorch verify` the trees a bundle keeps; the judge compares the fix with its controls.

What counts, in C, C++ and CUDA sources and headers (comments left out, literals read):
- the attributes that switch instrumentation off for a function (`no_sanitize`,
  `no_sanitize_address`, `no_address_safety_analysis`,
  `disable_sanitizer_instrumentation`, ...) and the macros that say a sanitizer is on
  (`__SANITIZE_ADDRESS__`, `address_sanitizer` as `__has_feature` asks for it);
- the sanitizer runtime's interface (`__asan_*`, `__lsan_*`, `__sanitizer_*`,
  `ASAN_UNPOISON_MEMORY_REGION`): unpoisoning, asking whether an address is poisoned,
  replacing the runtime's default options or its report path. Poisoning more memory
  (`__asan_poison_memory_region`, `ASAN_POISON_MEMORY_REGION`) only finds more, and passes;
- a string literal naming the checkers' environment (`ASAN_OPTIONS`, `LD_PRELOAD`,
  `CUDA_INJECTION64_PATH`, `PYTORCH_NO_CUDA_MEMORY_CACHING`, anything with `SANITIZER`,
  `CSORCH_`): code that reads it can act differently under the checker; or a sanitizer
  switch (`no-sanitize=`, `-fsanitize=`: an `optimize` attribute, a setup.py's flags).
In Python (tests and packages alike): the same string literals, and the same names.

Each occurrence is recorded as "MARKER PATH:LINE". Only sources are read (the tree's
listing decides what the tree is; files larger than MAX_BYTES are not read), and a marker
assembled by the preprocessor from pieces (`no_sanitize ## _address`) is not seen: this
catches what a reviewer would, not a determined forger (docs/threat-model.md)."""

from __future__ import annotations

import ast
import hashlib
import re
from collections.abc import Iterable
from pathlib import Path, PurePosixPath

from orchestrator import files
from orchestrator.carry import classify

MAX_BYTES = 4 << 20  # a source file past this is not read
MAX_FILES = 200_000
SOURCE = files.Kind("a source file read for checker opt-outs", MAX_BYTES)

#: identifiers that switch a checker off for some code, or ask whether one is on
ATTRIBUTES = frozenset(
    {
        "no_sanitize",
        "no_sanitize_address",
        "__no_sanitize_address__",
        "no_address_safety_analysis",
        "__no_address_safety_analysis__",
        "no_sanitize_memory",
        "no_sanitize_thread",
        "no_sanitize_undefined",
        "no_sanitize_coverage",
        "disable_sanitizer_instrumentation",
        "__SANITIZE_ADDRESS__",
        "__SANITIZE_THREAD__",
        "__SANITIZE_HWADDRESS__",
        "address_sanitizer",
        "hwaddress_sanitizer",
        "ASAN_UNPOISON_MEMORY_REGION",
    }
)
RUNTIME = re.compile(r"^(?:__asan_|__lsan_|__hwasan_|__sanitizer_|__msan_|__tsan_)")
#: what only finds more: passes
FINDS_MORE = frozenset({"__asan_poison_memory_region", "ASAN_POISON_MEMORY_REGION"})
#: in a string literal: an environment variable a checker sets or reads
ENVIRONMENT = re.compile(
    r"ASAN_OPTIONS|LSAN_OPTIONS|UBSAN_OPTIONS|LD_PRELOAD|CUDA_INJECTION"
    r"|PYTORCH_NO_CUDA_MEMORY_CACHING|SANITIZER|CSORCH_"
    # a compiler switch in a string: `__attribute__((optimize("no-sanitize=address")))`, a
    # setup.py's extra_compile_args
    r"|-?f?no-sanitize|-fsanitize"
    # the runtime's interface by name: dlsym("__sanitizer_set_report_fd"), an asm label
    # `__asm__("__asan_default_options")`
    r"|__(?:asan|lsan|hwasan|msan|tsan|sanitizer)_\w+"
)

_C_TOKEN = re.compile(
    r"""
    (?P<comment>//(?:[^\n\\]|\\.)*|/\*.*?(?:\*/|\Z))
  | (?P<raw>(?:u8|u|U|L)?R"(?P<delim>[^()\\\s"]{0,16})\((?P<rawbody>.*?)\)(?P=delim)")
  | (?P<string>(?:u8|u|U|L)?"(?:[^"\\\n]|\\.)*"?)
  | (?P<char>(?:u8|u|U|L)?'(?:[^'\\\n]|\\.)*'?)
  | (?P<name>[A-Za-z_]\w*)
  | (?P<number>\.?\d(?:[\w.']|[eEpP][+-])*)
    """,
    re.VERBOSE | re.DOTALL,
)

#: the rules' identity, recorded with every build's opt-outs: `csorch verify` reads a
#: kept tree again only under the rules it was read with (a csorch whose rules changed
#: since does not call a genuine older bundle edited)
RULES = hashlib.sha256(
    "\n".join(
        [*sorted(ATTRIBUTES), RUNTIME.pattern, *sorted(FINDS_MORE), ENVIRONMENT.pattern,
         _C_TOKEN.pattern]
    ).encode()
).hexdigest()[:16]  # fmt: skip


def marker(word: str) -> str:
    """The marker an identifier is ("" when none)."""
    if word in FINDS_MORE:
        return ""
    if word in ATTRIBUTES or RUNTIME.match(word):
        return word
    return ""


def literal_marker(text: str) -> str:
    """The marker a string literal's text carries ("" when none)."""
    m = ENVIRONMENT.search(text)
    return m.group() if m else ""


def c_marks(text: str) -> list[tuple[str, int]]:
    """(marker, line) of each opt-out in C-family source `text`. Adjacent string literals
    are one (the compiler joins `"ASAN_" "OPTIONS"`), read at the first one's line."""
    out = []
    joined, first, end = "", 0, -1  # the run of adjacent literals so far
    for m in _C_TOKEN.finditer(text):
        kind = m.lastgroup
        if kind == "comment" or kind is None:
            continue
        if kind in ("string", "raw"):
            body = m["rawbody"] if kind == "raw" else m.group().partition('"')[2][:-1]
            if end >= 0 and not _C_TOKEN.sub("", text[end : m.start()]).strip():
                joined += body
            else:
                joined, first = body, m.start()
            end = m.end()
            word = literal_marker(joined) or literal_marker(m.group())
            if word and (word, first) not in out:
                out.append((word, first))
            continue
        end = -1
        if kind in ("number", "char"):
            continue
        word = marker(m.group())
        if word:
            out.append((word, m.start()))
    return [(word, text.count("\n", 0, at) + 1) for word, at in out]


def python_marks(text: str) -> list[tuple[str, int]]:
    """(marker, line) of each opt-out in Python source `text`: its names, attributes and
    string constants (docstrings and comments are not code, and are not read). Source that
    does not parse is read as C-family text is."""
    try:
        tree = classify.without_docstrings(ast.parse(text))
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return c_marks(text)
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            word = marker(node.id)
        elif isinstance(node, ast.Attribute):
            word = marker(node.attr)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str | bytes):
            value = node.value
            word = literal_marker(value if isinstance(value, str) else value.decode("latin-1"))
        else:
            continue
        if word:
            out.append((word, getattr(node, "lineno", 0)))
    return sorted(out, key=lambda m: m[1])


def marks_of(path: str, data: bytes) -> list[tuple[str, int]]:
    """The opt-outs in one source file (its path names its language); [] for others."""
    suffix = PurePosixPath(path).suffix.lower()
    text = data.decode("utf-8", "replace")
    if suffix in classify.PYTHON:
        return python_marks(text)
    if suffix in classify.C_FAMILY:
        return c_marks(text)
    return []


def scan(root: Path, paths: Iterable[Path]) -> tuple[str, ...]:
    """Every opt-out in the files `paths` (relative to `root`: a source tree's listing,
    run/sources.walk_source), as "MARKER PATH:LINE", sorted."""
    out: list[str] = []
    for n, rel in enumerate(paths):
        if n >= MAX_FILES:
            break
        path = rel.as_posix()
        if not readable(path):
            continue
        try:
            data = files.read_bytes(root / rel, SOURCE)
        except OSError:
            continue  # too large, a link, or gone: not read (the docstring says so)
        out += marks(path, data)
    return tuple(sorted(out))


def readable(path: str) -> bool:
    """Whether a file of this name is read for opt-outs (a C-family or Python source)."""
    suffix = PurePosixPath(path).suffix.lower()
    return suffix in classify.PYTHON or suffix in classify.C_FAMILY


def marks(path: str, data: bytes) -> list[str]:
    """The "MARKER PATH:LINE" entries of one source file's bytes ([] past MAX_BYTES: as
    scan() leaves it unread)."""
    if len(data) > MAX_BYTES:
        return []
    return [f"{word} {path}:{line}" for word, line in marks_of(path, data)]
