"""The checker's own channel, read back: one log file per process, never the subject's
stdout or stderr.

Under ASan a launch's processes write their reports to `P.<pid>` (`log_path=P`), and each
process that starts under the fold shim leaves `P.started.<pid>`; under compute-sanitizer
the tool writes `--log-file P.%p.log` (on the H200, `%p` is the tool's own pid: one file a
launch, with every target process in it). This module lists those files, parses each with the
backend's parser, checks that each process left its own end record, and merges the
parses into the launch's one. What the subject prints reaches none of these files, so a
report it prints is no finding and a stream it redirects hides none.

The rules (each breach makes the launch's parse inconclusive, with the process named):
- ASan: every process that started (a `started` record) has its log, and its log ends
  with the runtime's exit stats (or ABORTING); it started with the checker options csorch
  set for the launch (its start record holds them: a subject that starts a process with
  weaker ones, `poison_heap=0` say, made that process's silence worth nothing); a forked
  child that never exec'd has no start record and may end with `_exit`: its log counts
  when each report in it is whole;
  every report in `P.<pid>` is process <pid>'s (a line naming another pid was not
  written by that process's runtime);
- compute-sanitizer: every log file ends with its ERROR SUMMARY (the backend's parser);
- no file at all: the checker was not live in the launch.
Reads files only; the processes that wrote them are the executor's. Each backend reads its
own channel through these (`Backend.read`): the executor and `bundle.rederive` alike.
"""

from __future__ import annotations

import dataclasses
import io
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path

from orchestrator.files import Kind, LinkRefused, NotRegularFile, open_regular, read_text
from orchestrator.model import ParseResult

# r0.launch1.asan.4540   (the runtime's `log_path=PREFIX` file of process 4540)
ASAN_LOG_RE = re.compile(r"^(?P<prefix>.+)\.(?P<pid>[0-9]{1,9})\Z", re.DOTALL)
# r0.launch1.asan.started.4540   (the fold shim's start record of process 4540)
ASAN_STARTED_RE = re.compile(r"^(?P<prefix>.+)\.started\.(?P<pid>[0-9]{1,9})\Z", re.DOTALL)
# r0.launch1.cs.4540.log   (compute-sanitizer's `--log-file PREFIX.%p.log`)
CS_LOG_RE = re.compile(r"^(?P<prefix>.+)\.(?P<pid>[0-9]{1,9})\.log\Z", re.DOTALL)
# (each pattern whole to \Z, any character in the prefix: a name is any bytes but "/")

# csorch_case_3   (a Python host frame: the plugin's trampoline around the 4th case begun)
CASE_FRAME_RE = re.compile(r"^csorch_case_(?P<index>[0-9]{1,6})$")

AsanParser = Callable[..., ParseResult]

#: a start record: the two option variables, each at most the shim's 16 KiB
STARTED = Kind("an ASan start record", 64 << 10)
#: the variables a start record holds: the runtime's options and its defaults (the shim's)
OPTION_VARIABLES = ("ASAN_OPTIONS", "CSORCH_ASAN_OPTIONS")
Parser = Callable[[Iterable[str]], ParseResult]


def lines(path: Path) -> Iterator[str]:
    """The log's lines, streamed: a checker's log can run to gigabytes, and the parsers
    keep only what they count. A missing log has none, and so has a path that is no
    regular file (a named pipe put in a bundle would block the reader forever) or a link: either
    way the parse has no summary and is incomplete, never clean, and `bundle.verify`
    names the file."""
    try:
        raw = open_regular(path)
    except (FileNotFoundError, NotRegularFile, LinkRefused):
        return
    with io.TextIOWrapper(raw, encoding="utf-8", errors="replace") as f:
        yield from f


def _split_sum(splits: Sequence[tuple[int, int] | None]) -> tuple[int, int] | None:
    present = [s for s in splits if s is not None]
    return (sum(s[0] for s in present), sum(s[1] for s in present)) if present else None


def merge(parses: Sequence[ParseResult]) -> ParseResult:
    """One attempt's launches as one parse: complete only if every launch's log is."""
    counts = [p.summary_count for p in parses]
    return ParseResult(
        findings=tuple(f for p in parses for f in p.findings),
        summary_count=None if not parses or None in counts else sum(counts),  # type: ignore[arg-type]
        not_printed=sum(p.not_printed for p in parses),
        complete=bool(parses) and all(p.complete for p in parses),
        tool_errors=tuple(dict.fromkeys(e for p in parses for e in p.tool_errors)),
        app_error=any(p.app_error for p in parses),
        app_crashed=any(p.app_crashed for p in parses),
        summary_lines=tuple(s for p in parses for s in p.summary_lines),
        unparsed=tuple(u for p in parses for u in p.unparsed)[:20],
        summary_split=_split_sum([p.summary_split for p in parses]),
        count_mismatch="; ".join(dict.fromkeys(c for c in (p.count_mismatch for p in parses) if c)),
    )


def _files(prefix: Path, pattern: re.Pattern[str]) -> dict[int, Path]:
    found: dict[int, Path] = {}
    if not prefix.parent.is_dir():
        return found
    for path in prefix.parent.iterdir():
        m = pattern.match(path.name)
        if m and m["prefix"] == prefix.name and path.is_file():
            found[int(m["pid"])] = path
    return dict(sorted(found.items()))


def _broken(parse: ParseResult, why: str) -> ParseResult:
    """`parse` made inconclusive for `why` (a process without its end record)."""
    return dataclasses.replace(
        parse,
        complete=False,
        summary_count=None,
        summary_lines=(),
        tool_errors=(*parse.tool_errors, why),
    )


def changed_options(record: Path, options: str) -> str:
    """What in a start record says its process did not start with `options` (the
    ASAN_OPTIONS csorch set for the launch), "" when nothing does. A variable the process
    started without is no change (the shim's defaults, or none: then its reports land
    outside the channel and the missing log says so); an empty record (a shim older than
    the options it records) says nothing."""
    try:
        text = read_text(record, STARTED, errors="replace")
    except (OSError, ValueError) as exc:
        return f"its start record {record.name} cannot be read ({exc})"
    if not text:
        return ""
    seen = {}
    for line in text.split("\n")[:-1] if text.endswith("\n") else [text]:
        name, eq, value = line.partition("=")
        if eq and name in OPTION_VARIABLES and name not in seen:
            seen[name] = value
        elif not (line.startswith("-") and line[1:] in OPTION_VARIABLES):
            return f"its start record {record.name} is not the shim's ({line[:80]!r})"
    for name, value in seen.items():
        if value != options:
            return f"it started with {name}={value[:300]!r}, not the options csorch set"
    return ""


def read_asan(prefix: Path, parse: AsanParser, options: str | None = None) -> ParseResult:
    """One launch's ASan channel (`prefix` = the `log_path` it ran with) as one parse.
    `options`: the ASAN_OPTIONS csorch set for the launch, which every process that
    started under the shim must have started with (None: not checked)."""
    logs = {
        pid: path
        for pid, path in _files(prefix, ASAN_LOG_RE).items()
        if not ASAN_STARTED_RE.match(path.name)
    }
    started = _files(Path(f"{prefix}.started"), ASAN_LOG_RE)
    if not logs and not started:
        return ParseResult(
            tool_errors=(
                f"no AddressSanitizer log {prefix.name}.<pid>: the runtime was not loaded "
                "in the launched process (a program that clears LD_PRELOAD or "
                "ASAN_OPTIONS?)",
            ),
        )
    parses = []
    for pid in sorted(set(logs) | set(started)):
        if pid not in logs:
            parses.append(
                _broken(
                    ParseResult(),
                    f"process {pid} started under ASan and left no log "
                    f"{prefix.name}.{pid} (killed before its exit?)",
                )
            )
            continue
        one = parse(lines(logs[pid]), exit_required=pid in started)
        changed = changed_options(started[pid], options) if pid in started and options else ""
        foreign = sorted({f.pid for f in one.findings if f.pid is not None and f.pid != pid})
        if changed:
            one = _broken(
                one,
                f"process {pid} ran with checker options of its own: {changed} (a subject "
                "that changes ASAN_OPTIONS for a process it starts can silence the checker)",
            )
        elif foreign:
            one = _broken(
                one,
                f"{logs[pid].name} holds reports of process(es) {foreign}, not of {pid}: "
                "not written by that process's runtime",
            )
        elif not one.complete and not one.tool_errors:
            one = _broken(
                one,
                f"process {pid} left no exit record in {logs[pid].name} (killed by a signal "
                "or ended without exit handlers)",
            )
        parses.append(one)
    return merge(parses)


def read_cs(prefix: Path, parse: Parser) -> ParseResult:
    """One launch's compute-sanitizer channel (`--log-file PREFIX.%p.log`) as one parse:
    complete only when every file is (each ends with its ERROR SUMMARY)."""
    logs = _files(prefix, CS_LOG_RE)
    if not logs:
        return ParseResult(
            tool_errors=(f"no compute-sanitizer log {prefix.name}.<pid>.log: the tool did not run",)
        )
    return merge([parse(lines(path)) for path in logs.values()])


def attribute(parse: ParseResult, nodes: Sequence[str]) -> ParseResult:
    """compute-sanitizer's findings given the case whose test function launched them.

    The tool's own file holds no case markers (they are the plugin's, on another channel),
    but its host backtraces hold the Python frames (`Host Frame: test_replay in
    test_rng.py:50`): a finding goes to the one node of the launch (`nodes`, as its
    markers name them) whose function and file those frames name; where none or several
    match (a test parametrized twice in one process), it stays outside any case. First,
    though, a frame `csorch_case_<k>` (the plugin runs each test through one, with
    `CSORCH_CASE_FRAMES`) names the k-th node the process began."""
    by_frame: dict[tuple[str, str], list[str]] = {}
    for node in nodes:
        path, _, name = node.partition("::")
        function = name.split("::")[-1].split("[", 1)[0]
        by_frame.setdefault((function, Path(path).name), []).append(node)
    out = []
    for f in parse.findings:
        case = f.case
        named = [
            nodes[int(m["index"])]
            for frame in f.host_frames
            if (m := CASE_FRAME_RE.match(frame.function)) and int(m["index"]) < len(nodes)
        ]
        if not case and named:
            case = named[0]
        elif not case:
            for frame in f.host_frames:
                match = by_frame.get((frame.function, Path(frame.file).name))
                if match:
                    case = match[0] if len(match) == 1 else ""
                    break
        out.append(f if case == f.case else dataclasses.replace(f, case=case))
    return dataclasses.replace(parse, findings=tuple(out))


def cs_pattern(prefix: Path) -> Path:
    """The `--log-file` argument whose files `read_cs(prefix, ...)` reads. The tool reads
    the name as a pattern (`%p` its pid, `%q{VAR}` a variable, `%%` a `%`; any other `%`
    is an error): a `%` of the prefix's own (an `--out` of `50%`) is doubled, so the files
    land at the prefix as it is."""
    return Path(str(prefix).replace("%", "%%") + ".%p.log")


def prefix_for(launch_log: Path, k: int) -> Path:
    """The prefix of the checker logs of launch `k` whose output log is `launch_log`
    (`logs/JOB.log` for the first launch, `logs/JOB.launchK.log` after it): beside it,
    `logs/JOB.launchK.checker`. The executor writes there; a bundle's reader finds them."""
    base = launch_log.with_suffix("") if launch_log.suffix == ".log" else launch_log
    if k == 0:
        base = base.with_name(base.name + ".launch0")
    return base.with_name(base.name + ".checker")


def files_of(prefix: Path) -> list[Path]:
    """Every file of a launch's channel: its per-process logs and start records."""
    if not prefix.parent.is_dir():
        return []
    head = prefix.name + "."
    return sorted(p for p in prefix.parent.iterdir() if p.name.startswith(head))
