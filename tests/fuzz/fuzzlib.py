"""Inputs for the property-based fuzzing of csorch's parsers (tests/fuzz/).

The strategies start from the real captured logs and configs in the repository and
damage them the ways real logs get damaged: lines lost, repeated or reordered, a log cut
anywhere, bytes that are not UTF-8, a line inflated to hundreds of kilobytes, two
processes writing into one file. Each fuzz module counts the inputs it fed to its
parser (`fed`), and conftest.py prints the counts at the end of the session.
"""

from __future__ import annotations

import random
from collections import Counter
from pathlib import Path

from hypothesis import strategies as st

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures"

#: inputs fed to each parser in this session (printed by conftest.py)
FED: Counter[str] = Counter()


def fed(parser: str) -> None:
    FED[parser] += 1


def decode(data: bytes) -> list[str]:
    """Bytes to lines exactly as the executor reads a log (`attempt_log.lines`)."""
    return data.decode("utf-8", errors="replace").splitlines()


def fixture_lines(*globs: str) -> list[list[str]]:
    """The lines of each real fixture log matching `globs` (sorted, for reproducibility)."""
    paths = sorted({p for g in globs for p in FIXTURES.glob(g)})
    assert paths, f"no fixture matches {globs}"
    return [decode(p.read_bytes()) for p in paths]


# text that real logs are made of, and text they are not
_NOISE = st.one_of(
    st.text(max_size=80),
    st.binary(max_size=80).map(lambda b: b.decode("utf-8", errors="replace")),
    st.sampled_from(
        [
            "",
            "=========",
            "========= ",
            "=========     ",
            "==1==",
            "[csorch-case-begin] ",
            "[csorch-case-end] ",
            "ERROR SUMMARY: ",
            "#0 0x",
            "\x00",
            "\ufffd",
            "\r",
            "9" * 5000,  # past int()'s default digit limit
            ",",
            " " * 300,
        ]
    ),
)


@st.composite
def mutated(draw: st.DrawFn, logs: list[list[str]]) -> list[str]:
    """One real log with up to 8 edits: delete, duplicate, swap, cut, splice noise into a
    line, replace a line, or insert one."""
    lines = list(draw(st.sampled_from(logs)))
    for _ in range(draw(st.integers(0, 8))):
        if not lines:
            lines.append(draw(_NOISE))
            continue
        i = draw(st.integers(0, len(lines) - 1))
        op = draw(st.sampled_from(["delete", "dup", "swap", "cut", "splice", "replace", "insert"]))
        if op == "delete":
            del lines[i]
        elif op == "dup":
            lines.insert(i, lines[i])
        elif op == "swap":
            j = draw(st.integers(0, len(lines) - 1))
            lines[i], lines[j] = lines[j], lines[i]
        elif op == "cut":  # a log truncated mid-line
            at = draw(st.integers(0, len(lines[i])))
            lines = lines[:i] + [lines[i][:at]]
        elif op == "splice":
            at = draw(st.integers(0, len(lines[i])))
            lines[i] = lines[i][:at] + draw(_NOISE) + lines[i][at:]
        elif op == "replace":
            lines[i] = draw(_NOISE)
        else:
            lines.insert(i, draw(_NOISE))
    return lines


@st.composite
def raw_bytes(draw: st.DrawFn, logs: list[list[str]]) -> list[str]:
    """Random bytes (invalid UTF-8 included), alone or spliced into a real log, read the
    way the executor reads a log file."""
    junk = draw(st.binary(max_size=2000))
    if draw(st.booleans()):
        return decode(junk)
    text = "\n".join(draw(st.sampled_from(logs))).encode()
    at = draw(st.integers(0, len(text)))
    return decode(text[:at] + junk + text[at:])


@st.composite
def huge_line(draw: st.DrawFn, logs: list[list[str]], limit: int = 200_000) -> list[str]:
    """A real log with one line inflated: a piece of it repeated up to `limit` chars
    (spaces, digits, a word, the whole line), the shapes that make a regex backtrack."""
    lines = list(draw(st.sampled_from(logs)))
    if not lines:
        return ["=" * limit]
    i = draw(st.integers(0, len(lines) - 1))
    line = lines[i]
    a = draw(st.integers(0, len(line)))
    b = draw(st.integers(a, min(len(line), a + 40)))
    piece = line[a:b] or draw(st.sampled_from([" ", "9", "a", "(", "#0 0x1 in f ", ", "]))
    times = draw(st.integers(1, max(1, limit // len(piece))))
    lines[i] = line[:a] + piece * times + line[b:]
    return lines


@st.composite
def interleaved(draw: st.DrawFn, logs: list[list[str]]) -> list[str]:
    """Two logs' lines shuffled together, each keeping its own order (two processes
    writing into one file). The merge order comes from one drawn seed: a draw per line
    would make a 3000-line log cost hypothesis more than the parse."""
    first = list(draw(st.sampled_from(logs)))
    second = list(draw(st.sampled_from(logs)))
    rng = random.Random(draw(st.integers(0, 2**32 - 1)))
    out, i, j = [], 0, 0
    while i < len(first) or j < len(second):
        if j >= len(second) or (i < len(first) and rng.random() < 0.5):
            out.append(first[i])
            i += 1
        else:
            out.append(second[j])
            j += 1
    return out


# application output that no parser may read as its own: no prefix, no marker, no
# sanitizer keyword (lowercase words only, no digits, '#', '=', ':' or '[')
APP_LINE = st.text(alphabet="abcdefghijklmnopqrstuvwxyz .,;()'\"-_/", max_size=60)


@st.composite
def with_app_output(draw: st.DrawFn, logs: list[list[str]]) -> tuple[list[str], list[str]]:
    """(a real log, the same log with application output lines inserted anywhere)."""
    lines = list(draw(st.sampled_from(logs)))
    noisy = list(lines)
    for _ in range(draw(st.integers(1, 10))):
        noisy.insert(draw(st.integers(0, len(noisy))), draw(APP_LINE))
    return lines, noisy
