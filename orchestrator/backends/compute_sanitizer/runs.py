"""Runs of records of one shape, counted at once: the rest of a racecheck hazard report.

racecheck's hazard report prints a 7-line record per hazardous byte, each the one
before with other numbers (the address, the block, the threads, the value). Counted one
by one (`skim`), such a record costs ~7 µs of Python, and the log reads at ~65 MB/s.
So once `skim` has counted a record, `Runs.count` makes its text a `Shape`: a regex
of its lines with every number a hole but those in the groups its key keeps (its
kernel's offsets and line numbers), its host frames any host frames (as many), its bare
prefix as it is. One match of `(?:shape)+` finds the run of records after it that
have that shape; they are counted if every line of theirs with a hole has the same skim
key item as the record's own line (`Dispatch.all_keyed`, over each line position's
distinct texts at once): then `skim` would have counted each of them with the same
key, in the same case. Anything else stops the run at the first record that differs,
which `skim` (or the line-by-line path) reads as before. A key keeps a few shapes;
while records come one by one (a run of one costs more than `skim`'s read), runs
are tried only now and then.

Why the shape keeps every other line exact: a hole matches only a number, which starts
with a digit, and never a line end; so for any text T without digits (the prefix and
indentation, "Saved host backtrace", "Host Frame:"), a line of a record that matches
the shape starts with T when the record's own line does, and only then: it is a
header, detail line, host frame or bare prefix as that line is, and the record ends
where it does. Lines without a hole are the record's own lines. The keys are the
grammar's (`backends.dispatch`), read from the lines themselves: the shape only finds the
run, it never decides what a line means.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from itertools import compress, repeat
from operator import itemgetter, ne

from orchestrator.backends.dispatch import Dispatch

#: records a run's regex reads at a time (its lines are then split to check them):
#: the first try, and the most (a run that checks doubles it; one that does not resets it)
REACH = 8
MAX_CHARS = 1 << 18
#: the longest record counted so (characters): a longer one, as a memcheck record with its
#: host backtrace (~9 KB), costs mostly the C-level scan of its lines whichever way it
#: is counted, and splitting a run of them into lines would only add to that
LONGEST = 2048
#: shapes kept per key (records of a few shapes can alternate); after how many records in
#: a row with no run after them the next ones are tried once in BACKOFF
SHAPES_PER_KEY = 4
TRIES = 8
BACKOFF = 64
#: lines whose key item is remembered, and shapes compiled (each then forgotten at once)
MEMO = 4096
SHAPES = 256

# a number in a record's line: "0x4fd", "18" (in "... 0x4fd in block (0,0,0) :", "k.cu:18")
NUMBER_RE = re.compile(r"0x[0-9a-fA-F]+|[0-9]+")
HEX_HOLE = r"0x[0-9a-fA-F]+"
DECIMAL_HOLE = r"[0-9]+"


@dataclass(frozen=True)
class Shape:
    """A record's text as a regex (`regex` matches a run of records so shaped) with its
    `lines`, its `size` in characters, and, per line with a hole, (its index, its table,
    its key item) to check."""

    regex: re.Pattern[str]
    lines: int
    size: int
    checks: tuple[tuple[int, Dispatch, tuple], ...]


class Runs:
    """Counts the records after a counted one that have its shape (see the module's
    docstring). `headers` and `details` are the grammar's tables (`log`)."""

    def __init__(self, prefix: str, headers: Dispatch, details: Dispatch) -> None:
        self.prefix = prefix
        self.n = len(prefix)
        self.headers = headers
        self.details = details
        p = re.escape(prefix)
        # "=========     Saved host backtrace up to driver entry point at kernel launch time"
        self.saved = prefix + "     Saved host backtrace"
        # "=========         Host Frame: main [0x153b] in race"
        self.host_hole = rf"(?:{p}         Host Frame:[^\n]*\n)"
        # "=========" or "========= " (a bare prefix: `skim`'s `bare`), the record's end
        self.bare_re = re.compile(rf"{p}(?:\r*| [^\S\n]*)")
        self.reach = REACH
        self.shapes: dict[tuple, list[Shape]] = {}  # a skim key -> its shapes, latest first
        self.misses = 0  # records in a row with no run after them
        self.wait = 0  # records the caller passes before it calls `count` again
        self.compiled: dict[str, Shape] = {}  # a shape's source -> its Shape
        self.known: dict[str, tuple] = {}  # a line -> its key item, once checked

    def count(self, text: str, start: int, stop: int, key: tuple) -> tuple[int, int]:
        """For a record that `skim` counted with `key`, at [start, stop) of `text`:
        (where reading goes on, how many records after it were counted: 0 for none).
        After `TRIES` records in a row with no run after them, `wait` says how many
        records the caller passes before it calls again."""
        if stop - start > LONGEST:
            return stop, 0
        shapes = self.shapes.setdefault(key, [])
        found = next(filter(None, (self._runs(shape, text, stop) for shape in shapes)), None)
        if found is None and not any(_matches(shape, text, start, stop) for shape in shapes):
            own = self._shape(text, start, stop)  # the record's own
            if own is not None:
                shapes.insert(0, own)
                del shapes[SHAPES_PER_KEY:]
                found = self._runs(own, text, stop)
        at, n = found or (stop, 0)
        if n > 1:
            self.misses = 0
        else:  # a run of one costs more than the record read by `skim`: a miss too
            self.misses += 1
            if self.misses >= TRIES:
                self.wait = BACKOFF - 1
        return at, n

    def _runs(self, shape: Shape, text: str, at: int) -> tuple[int, int] | None:
        """(the end, the count) of the records from `at` that `_run` counts, run after
        run; None for none."""
        total = 0
        while True:
            at, n, more = self._run(shape, text, at)
            total += n
            if not more:
                return (at, total) if total else None

    def _run(self, shape: Shape, text: str, at: int) -> tuple[int, int, bool]:
        """(the end, the count, whether more may follow) of the records from `at` that
        have `shape` and the key items of its lines, up to `reach` of them."""
        end = min(len(text), at + min(MAX_CHARS, self.reach * shape.size))
        m = shape.regex.match(text, at, end)
        if m is None:
            return at, 0, False
        lines = text[at : m.end()].split("\n")
        size = shape.lines
        records = (len(lines) - 1) // size
        good = records
        for row, table, item in shape.checks:
            column = lines[row : records * size : size]
            if not self._keyed(set(column), table, item):
                good = min(good, self._first_other(column, table, item))
        if good == records:
            self.reach = min(2 * self.reach, MAX_CHARS)
            # the run stopped at `end`, not at a record of another shape
            more = end < len(text) and end - m.end() < 2 * shape.size
            return m.end(), records, more
        self.reach = REACH
        # the records before the first that differs: their lines and line ends
        return at + sum(map(len, lines[: good * size])) + good * size, good, False

    def _keyed(self, texts: set[str], table: Dispatch, item: tuple) -> bool:
        """Whether every line of `texts` has the key item `item` in `table`."""
        known = self.known
        found = list(map(known.get, texts))
        if set(found) == {item}:
            return True
        fresh = list(compress(texts, map(ne, found, repeat(item))))
        bodies = list(map(str.strip, map(itemgetter(slice(self.n, None)), fresh)))
        if not table.all_keyed(bodies, item):
            return False
        if len(known) + len(fresh) > MEMO:  # addresses, blocks: lines that may not repeat
            known.clear()
        known.update(zip(fresh, repeat(item)))
        return True

    def _first_other(self, column: list[str], table: Dispatch, item: tuple) -> int:
        """The index of the first line of `column` whose key item is not `item`."""
        for i, line in enumerate(column):
            if (table.key(line[self.n :].strip()) or ()) != item:
                return i
        return len(column)

    def _shape(self, text: str, start: int, stop: int) -> Shape | None:
        """The shape of the record at [start, stop), or None when it ends other than with
        a bare prefix (it is then not one of a run)."""
        lines = text[start:stop].split("\n")
        if lines[-1] or len(lines) < 2 or not self.bare_re.fullmatch(lines[-2]):
            return None
        body = lines[:-2]  # the header, its detail lines, its saved line and host frames
        saved = next((i for i, line in enumerate(body) if line.startswith(self.saved)), None)
        head = body if saved is None else body[: saved + 1]
        hosts = len(body) - len(head)
        parts, checks = [], []
        for i, line in enumerate(head):
            table = self.headers if i == 0 else self.details
            part, item = self._holes(line, table)
            parts.append(part)
            if item is not None:
                checks.append((i, table, item))
        source = "".join(parts) + (f"{self.host_hole}{{{hosts}}}" if hosts else "")
        source += re.escape(lines[-2]) + r"\n"
        shape = self.compiled.get(source)
        if shape is None:
            if len(self.compiled) >= SHAPES:
                self.compiled.clear()
            regex = re.compile(f"(?:{source})+")
            shape = Shape(regex, len(lines) - 1, stop - start, tuple(checks))
            self.compiled[source] = shape
        return shape

    def _holes(self, line: str, table: Dispatch) -> tuple[str, tuple | None]:
        """(a line as a regex: the prefix, then its text with each number a hole but those
        in the groups its key keeps; its key item when it has a hole, else None)."""
        body = line[self.n :]
        text = body.strip()
        row, m = table.find(text)
        at = self.n + len(body) - len(body.lstrip())  # where `text` starts in `line`
        kept = [] if m is None else [m.span(g) for g in table.kept[row] if m.start(g) >= 0]
        out, last, holes = [re.escape(self.prefix)], self.n, False
        for number in NUMBER_RE.finditer(line, self.n):
            a, b = number.start() - at, number.end() - at
            if any(a < end and start < b for start, end in kept):
                continue  # part of the signature: it stays as it is
            out.append(re.escape(line[last : number.start()]))
            out.append(HEX_HOLE if number[0].startswith("0x") else DECIMAL_HOLE)
            last, holes = number.end(), True
        out.append(re.escape(line[last:]) + r"\n")
        return "".join(out), (table.key(text) or ()) if holes else None


def _matches(shape: Shape, text: str, at: int, end: int) -> bool:
    """Whether a record of `shape` starts at `at` and ends by `end`."""
    return shape.regex.match(text, at, end) is not None
