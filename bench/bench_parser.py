"""compute-sanitizer log parsing: throughput (MB/s) and peak memory of its `log.parse`.

Run by ``make bench`` (issue #14 item 4). Two logs, each made of real H200 captures
repeated, as one process's log per repetition:
- memcheck: tests/fixtures/compute-sanitizer/h200/rng-owner-scope-memcheck-rng-64x96.log
  (20 printed `Invalid __global__ read` records with full host backtraces, ~176 KB)
  repeated until it reaches --mb megabytes;
- racecheck: tests/fixtures/compute-sanitizer/cudabugs-h200/race.control.racecheck-report-all.log
  (256 `Potential RAW hazard` records and one `Race reported` record, 1,797 lines) repeated
  until it reaches --race-lines lines: the hazard logs that run to hundreds of thousands
  of lines. Repeated, every record's text recurs once a repetition, as in a log of many
  launches of one kernel;
- racecheck-distinct: the same, each repetition's block id its own ("in block (7,0,0)"
  in the 8th), so that no header line recurs, as in one launch of many blocks: the
  parser remembers the lines it has checked (`compute_sanitizer.runs`), and this log gains nothing
  from that.
Each is written to a temporary file and parsed streaming from it: --repeat times timed
(MB/s over wall and CPU time, best wall time of the repeats), once under tracemalloc
(peak Python memory during the parse, the result included). Target: >= 100 MB/s;
memory bounded by the distinct signatures, not the number of records (the parser keeps
the first few findings per case and signature and counts the rest: `findings.folding`).

Prints a table and writes JSON (``--json``).
"""

from __future__ import annotations

import argparse
import datetime
import gc
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from orchestrator.backends.compute_sanitizer import log as cs_log  # noqa: E402
from orchestrator.findings.signatures import signature  # noqa: E402
from orchestrator.model import Checker  # noqa: E402

FIXTURES = ROOT / "tests/fixtures/compute-sanitizer"
FIXTURE = FIXTURES / "h200/rng-owner-scope-memcheck-rng-64x96.log"
RACE_FIXTURE = FIXTURES / "cudabugs-h200/race.control.racecheck-report-all.log"
TARGET_MBS = 100.0


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--fixture", type=Path, default=FIXTURE, help="the memcheck log repeated")
    p.add_argument("--mb", type=float, default=100.0, help="size of the memcheck log (MB)")
    p.add_argument("--race-fixture", type=Path, default=RACE_FIXTURE)
    p.add_argument(
        "--race-lines", type=int, default=500_000, help="lines of the racecheck log (0: none)"
    )
    p.add_argument("--repeat", type=int, default=3, help="timed parses; the best counts")
    p.add_argument("--json", type=Path, default=ROOT / "results" / "bench-parser.json")
    return p.parse_args(argv)


def make_log(fixture: Path, reps: int, out: Path, distinct: bool = False) -> int:
    """`fixture` repeated `reps` times in `out` (`distinct`: the i-th repetition's
    "in block (0," made "in block (i,"); returns its size in bytes."""
    chunk = fixture.read_bytes()
    size = 0
    with open(out, "wb") as f:
        for i in range(reps):
            text = chunk.replace(b"in block (0,", b"in block (%d," % i) if distinct else chunk
            f.write(text)
            size += len(text)
    return size


def timed(path: Path, checker: Checker) -> tuple[float, float, object]:
    """(wall seconds, CPU seconds, result) of one streaming parse. CPU time is reported
    beside wall time: on a shared machine the wall time also counts other processes."""
    gc.collect()
    start, cpu = time.perf_counter(), time.process_time()
    with open(path, errors="replace") as lines:
        result = cs_log.parse(lines, checker=checker)
    return time.perf_counter() - start, time.process_time() - cpu, result


def traced(path: Path, checker: Checker) -> int:
    """Peak bytes traced while parsing (what parse holds, the result included)."""
    gc.collect()
    tracemalloc.start()
    with open(path, errors="replace") as lines:
        result = cs_log.parse(lines, checker=checker)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    del result
    return peak


def measure(name: str, fixture: Path, reps: int, checker: Checker, repeat: int, tmp: Path):
    """One log: its figures as a dict, and the rows of the printed table."""
    log = tmp / f"{name}.log"
    size = make_log(fixture, reps, log, distinct=name.endswith("-distinct"))
    lines = reps * fixture.read_bytes().count(b"\n")
    mb = size / 1e6
    print(f"bench: {name}: {fixture.name} x {reps} = {mb:.1f} MB, {lines:,} lines", flush=True)
    best, cpu, result = min((timed(log, checker) for _ in range(repeat)), key=lambda t: t[0])
    findings = result.findings  # type: ignore[attr-defined]
    kept = len(findings)
    records = result.records  # type: ignore[attr-defined]
    distinct = len({signature(f) for f in findings})
    count = result.summary_count  # type: ignore[attr-defined]
    mismatch = result.count_mismatch  # type: ignore[attr-defined]
    del result, findings
    peak = traced(log, checker)
    log.unlink()
    rows = [
        (f"{name} log", f"{mb:.1f} MB", f"{reps} x {fixture.name}, {lines:,} lines"),
        ("parse time (best)", f"{best:.2f} s", f"of {repeat}"),
        ("throughput", f"{mb / best:.1f} MB/s", f"target >= {TARGET_MBS:.0f} MB/s"),
        ("throughput, CPU time", f"{mb / cpu:.1f} MB/s", f"{cpu:.2f} s of CPU in that parse"),
        ("peak traced memory", f"{peak / 1e6:.1f} MB", "tracemalloc, result included"),
        ("records", f"{records:,}", "printed records counted (Finding.count added up)"),
        ("findings kept", str(kept), f"{distinct} distinct signature(s), the first few each"),
        ("summary count", str(count), "the tool's summaries, added up"),
        ("count check", "ok" if not mismatch else "MISMATCH", mismatch[:60]),
    ]
    figures = {
        "fixture": fixture.name,
        "checker": checker.value,
        "mb": mb,
        "lines": lines,
        "repetitions": reps,
        "seconds": best,
        "mb_per_s": mb / best,
        "cpu_seconds": cpu,
        "mb_per_cpu_s": mb / cpu,
        "peak_traced_mb": peak / 1e6,
        "records": records,
        "findings": kept,
        "distinct_signatures": distinct,
        "summary_count": count,
        "count_mismatch": mismatch,
    }
    return figures, rows


def commit() -> str:
    try:
        out = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True
        )
        return out.stdout.strip()
    except OSError:
        return ""


def main(argv=None) -> int:
    args = parse_args(argv)
    # (name, fixture, checker, repetitions)
    reps = args.mb * 1e6 / args.fixture.stat().st_size
    logs = [("memcheck", args.fixture, Checker.MEMCHECK, reps)]
    if args.race_lines:
        per = args.race_fixture.read_bytes().count(b"\n")
        logs.append(("racecheck", args.race_fixture, Checker.RACECHECK, args.race_lines / per))
        logs.append(
            ("racecheck-distinct", args.race_fixture, Checker.RACECHECK, args.race_lines / per)
        )
    report: dict[str, object] = {
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "commit": commit(),
        "host": {
            "platform": platform.platform(),
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
            "load": os.getloadavg()[0],
        },
    }
    table = []
    with tempfile.TemporaryDirectory(prefix="csorch-bench-parser-") as tmp:
        for name, fixture, checker, reps in logs:
            figures, rows = measure(
                name, fixture, max(1, round(reps)), checker, args.repeat, Path(tmp)
            )
            report[name] = figures
            table += rows
    width = max(len(r[0]) for r in table)
    for name, value, note in table:
        print(f"  {name:<{width}}  {value:>12}  {note}")
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(report, indent=2))
    print(f"bench: wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
