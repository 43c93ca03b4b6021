"""The bulk path through a compute-sanitizer log: its text in chunks of whole lines
(`chunks`), and a record counted without being read whole once its signature has its
examples (`Skimmer`).

Once a case and signature have their examples (`findings.folding`), csorch needs nothing of a
further record but its count. Read line by line, a memcheck record of a pytest case is
~100 lines (~90 of them host frames) and racecheck's hazard report prints a 7-line
record per hazardous byte: 10-30 MB/s. So after a record's header, `Skimmer.skim` reads
the lines a signature is made of (the header and the detail lines before the host
backtrace) into a key, checks with one regex search that only host frames follow up to
the record's end, and when the key's signature has its examples, counts the record and
steps past it. Anything else (a case marker or the application's output inside the
record, a detail line after the host backtrace, a record that the chunk's end cuts)
leaves the record to the line-by-line path, which reads it whole: the result is the
same either way (tests/unit/test_cs_skim.py). After a record it counted, the records
shaped as that one are counted at once (`runs`).

A key is each line's pattern and its named groups, less `VOLATILE` ones: so a key is
finer than a signature (it keeps the offsets and line numbers of the frames) and stands
for one signature, learnt from the first record read whole with that key
(`State.close`). Keys are bounded by the code locations that print records, not by
the records.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from typing import IO

from orchestrator.backends.compute_sanitizer.runs import LONGEST, Runs
from orchestrator.backends.compute_sanitizer.state import State
from orchestrator.backends.dispatch import Dispatch
from orchestrator.findings.folding import Group
from orchestrator.model import Checker

#: characters read at a time from a file (one chunk is held in memory at a time)
CHUNK = 1 << 20
#: detail lines whose key item is remembered (then forgotten all at once)
MEMO = 4096


def _pieces(source: Iterable[str] | IO[str]) -> Iterator[str]:
    """`source`'s text in pieces: a file's `read`, or lines joined (with or without their
    line ends)."""
    read = getattr(source, "read", None)
    if read is not None:
        while piece := read(CHUNK):
            yield piece
        return
    batch: list[str] = []
    size = 0
    for line in source:
        batch.append(line)
        size += len(line)
        if size >= CHUNK:
            yield _joined(batch)
            batch, size = [], 0
    if batch:
        yield _joined(batch)


def _joined(lines: list[str]) -> str:
    text = "".join(lines)
    if text.endswith("\n") and text.count("\n") == len(lines):
        return text  # every line has its line end, and only that one
    # lines without their ends (or a mix: an empty line between two is only an empty line)
    return "\n".join(lines) + "\n"


def ends_record(line: str, prefix: str) -> bool:
    """Whether a line ends the record before it: a checker line (the prefix, then a
    space or nothing) that is not a detail line (indented, not blank). Application
    output and case markers do not: the tool and the test write concurrently."""
    line = line.rstrip("\r\n")
    n = len(prefix)
    if not line.startswith(prefix) or line[n : n + 1] not in ("", " "):
        return False
    body = line[n:]
    return not (body.startswith("  ") and body.strip())


def chunks(source: Iterable[str] | IO[str], prefix: str) -> Iterator[tuple[str, bool]]:
    """(text, clean): `source` in chunks of whole lines; `clean` when the line after the
    chunk ends records (or there is none), so that a record open at its end ends there."""
    carry = ""
    for piece in _pieces(source):
        text = carry + piece
        last = text.rfind("\n")  # the lines before it are whole; the rest waits
        cut = _cut(text, last, prefix)
        if cut > 0:
            yield text[:cut], True
            carry = text[cut:]
        elif last >= 0:
            yield text[: last + 1], False
            carry = text[last + 1 :]
        else:
            carry = text
    if carry:
        yield carry, True


def _cut(text: str, last: int, prefix: str) -> int:
    """The start of the last whole line before `last` that ends records, or -1."""
    needle = "\n" + prefix
    at = last
    while (at := text.rfind(needle, 0, at)) >= 0:
        end = text.find("\n", at + 1)
        if ends_record(text[at + 1 : end], prefix):
            return at + 1
    return -1


class Skimmer:
    """Counts a record whose signature has its examples without reading it whole.
    `headers` and `details` dispatch the grammar's header and detail lines; `saved` is
    the row of the detail line after which a record's host frames come ("Saved host
    backtrace ...")."""

    def __init__(self, prefix: str, headers: Dispatch, details: Dispatch, saved: int) -> None:
        self.prefix = prefix
        self.n = len(prefix)
        self.headers = headers
        self.details = details
        self.saved = saved
        self.runs = Runs(prefix, headers, details)
        self.memo: dict[str, tuple] = {}  # a detail line -> its key item (() for none)
        # a key -> (the case, its full fold group, checker, severity) to count it with
        self.ready: dict[tuple, tuple[str, Group, Checker, str]] = {}
        p = re.escape(prefix)
        # a line that ends a record (`ends_record`, or fewer): a bare prefix, "=========" or
        # "========= " (`bare`: a skimmed record's, stepped over with it), or a header
        # as "========= ERROR SUMMARY: 1 error"; a line it misses is only not skimmed
        bare = rf"{p}(?:\r*| [^\S\n]*)(?:\n|\Z)"
        ends = rf"(?P<bare>{bare})|(?={p} \S)"
        self.ends_re = re.compile(ends)
        # a header line: "========= Error: Potential RAW hazard detected at __shared__ ..."
        self.header_re = re.compile(rf"{p} (\S[^\n]*)(?:\n|\Z)")
        # a record's lines after its header, up to its host backtrace or its end:
        #   "=========     at k()+0x10 in k.cu:3\n" ... (detail lines: `head`), then
        #   "=========     Saved host backtrace up to driver entry point ...\n" (`saved`), or
        #   a line that ends the record, or the chunk's end next
        self.head_re = re.compile(
            rf"(?P<head>(?:{p}  [^\S\n]*\S[^\n]*\n)*?)"
            rf"(?:(?P<saved>{p}     Saved host backtrace[^\n]*)\n|{ends}|\Z)"
        )
        # after the saved line: the first line that is not a host frame
        # ("\n=========         Host Frame: cudaLaunchKernel [0x745b7] in libcudart.so.13"
        # is one; "\n========= " and "\n[csorch-case-end] t.py::test_a" are not)
        self.not_host_re = re.compile(rf"\n(?!{p}         Host Frame:)")

    def skim(
        self, state: State, text: str, start: int, pos: int, clean: bool, head: tuple
    ) -> tuple[int, tuple | None]:
        """For a header line at `start` of `text` (its skim key `head`), before it is
        handled; its next line starts at `pos`. (where reading goes on, key): past the
        record when its key's signature has its examples (the record counted, the header
        handled), and past the records right after it that are counted so too; else -1
        and the record's key (None when it cannot have one): read it whole."""
        stop, key = self._record(state, text, pos, clean, head)
        if stop < 0:
            return stop, key
        first, k = key, key
        # a hazard report is a long run of such records: stay here while they last, and
        # count the records shaped as the last one counted at once (`runs`)
        runs = self.runs
        while True:
            if runs.wait:  # records have come one by one: a run is tried now and then
                runs.wait -= 1
            elif stop - start <= LONGEST:  # (a longer record is not one of a run)
                stop, n = runs.count(text, start, stop, k)  # type: ignore[arg-type]
                if n:
                    state.skip(*self.ready[k][1:], n=n)  # type: ignore[index]
            h = self.header_re.match(text, stop)
            if h is None:
                break
            item = self.headers.key(h[1].strip())
            if item is None:
                break
            after, k = self._record(state, text, h.end(), clean, item)
            if after < 0:
                break  # `parse` reads that header again, the record whole
            start, stop = h.start(), after
        return stop, first

    def _record(
        self, state: State, text: str, pos: int, clean: bool, head: tuple
    ) -> tuple[int, tuple | None]:
        """`skim` for one record."""
        m = self.head_re.match(text, pos)
        if m is None:  # a marker or the application's output inside it, or another layout
            return -1, None
        key = [head]
        memo = self.memo
        for line in m["head"].split("\n")[:-1]:
            item = memo.get(line)
            if item is None:
                item = self._item(line)
            if item:
                if item[0] == self.saved:  # a host backtrace in a layout not expected
                    return -1, None
                key.append(item)
        stop = m.end()  # past the record (and its bare prefix), or at the line ending it
        if m["saved"] is not None:
            if self._item(m["saved"])[:1] != (self.saved,):
                return -1, None
            stop = self._after_host_frames(text, stop - 1)
        if stop < 0 or (stop >= len(text) and not clean):
            return -1, None  # the record may go on in the next chunk
        k = tuple(key)
        ready = self.ready.get(k)
        if ready is None or ready[0] != state.case:
            known = state.signatures.get(k)
            group = state.fold.full(state.case, known[0]) if known is not None else None
            if group is None:
                return -1, k
            ready = self.ready[k] = (state.case, group, known[1], known[2])  # type: ignore[index]
        state.skip(*ready[1:])
        return stop, k

    def _item(self, line: str) -> tuple:
        """A detail line's key item (`Dispatch.key`; () when no pattern matches it)."""
        item = self.memo.get(line)
        if item is None:
            item = self.details.key(line[self.n :].strip()) or ()
            if len(self.memo) >= MEMO:  # thread ids, addresses: lines that do not repeat
                self.memo.clear()
            self.memo[line] = item
        return item

    def _after_host_frames(self, text: str, nl: int) -> int:
        """Where the record whose host backtrace begins after `nl` ends (past its bare
        prefix, or at the header after it; len(text) at the chunk's end), or -1 when a
        line other than a host frame comes first."""
        found = self.not_host_re.search(text, nl)
        q = found.start() + 1 if found is not None else len(text)
        if q >= len(text):
            return len(text)
        end = self.ends_re.match(text, q)
        return -1 if end is None else end.end()
