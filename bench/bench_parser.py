"""compute-sanitizer log parsing: throughput (MB/s) and peak memory of `cs_log.parse`.

Run by ``make bench`` (issue #14 item 4). The log is a real H200 capture
(tests/fixtures/compute-sanitizer/h200/rng-owner-scope-memcheck-rng-64x96.log: 20
printed `Invalid __global__ read` records with full host backtraces, ~176 KB) repeated
until it reaches --mb megabytes, as one process's log per repetition. It is written to a
temporary file and parsed streaming from it, twice: once timed (MB/s, best of
--repeat), once under tracemalloc (peak Python memory during the parse, the result
included). Target: >= 100 MB/s; memory bounded by the distinct signatures, not the
number of findings.

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

from orchestrator.backends import cs_log  # noqa: E402
from orchestrator.findings import signature  # noqa: E402

FIXTURE = ROOT / "tests/fixtures/compute-sanitizer/h200/rng-owner-scope-memcheck-rng-64x96.log"
TARGET_MBS = 100.0


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--fixture", type=Path, default=FIXTURE)
    p.add_argument("--mb", type=float, default=100.0, help="size of the log to parse (MB)")
    p.add_argument("--repeat", type=int, default=3, help="timed parses; the best counts")
    p.add_argument("--json", type=Path, default=ROOT / "results" / "bench-parser.json")
    return p.parse_args(argv)


def make_log(fixture: Path, mb: float, out: Path) -> tuple[int, int]:
    """`fixture` repeated to `mb` MB in `out`; returns (bytes, repetitions)."""
    chunk = fixture.read_bytes()
    reps = max(1, round(mb * 1e6 / len(chunk)))
    with open(out, "wb") as f:
        for _ in range(reps):
            f.write(chunk)
    return reps * len(chunk), reps


def timed(path: Path) -> tuple[float, float, object]:
    """(wall seconds, CPU seconds, result) of one streaming parse. CPU time is reported
    beside wall time: on a shared machine the wall time also counts other processes."""
    gc.collect()
    start, cpu = time.perf_counter(), time.process_time()
    with open(path, errors="replace") as lines:
        result = cs_log.parse(lines)
    return time.perf_counter() - start, time.process_time() - cpu, result


def traced(path: Path) -> int:
    """Peak bytes traced while parsing (what parse holds, the result included)."""
    gc.collect()
    tracemalloc.start()
    with open(path, errors="replace") as lines:
        result = cs_log.parse(lines)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    del result
    return peak


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
    with tempfile.TemporaryDirectory(prefix="csorch-bench-parser-") as tmp:
        log = Path(tmp) / "memcheck.log"
        size, reps = make_log(args.fixture, args.mb, log)
        mb = size / 1e6
        print(f"bench: {args.fixture.name} x {reps} = {mb:.1f} MB", flush=True)
        best, cpu, result = min((timed(log) for _ in range(args.repeat)), key=lambda t: t[0])
        findings = result.findings  # type: ignore[attr-defined]
        kept = len(findings)
        distinct = len({signature(f) for f in findings})
        count = result.summary_count  # type: ignore[attr-defined]
        del result, findings
        peak = traced(log)
    rows = [
        ("log", f"{mb:.1f} MB", f"{reps} repetitions of {args.fixture.name}"),
        ("parse time (best)", f"{best:.2f} s", f"of {args.repeat}"),
        ("throughput", f"{mb / best:.1f} MB/s", f"target >= {TARGET_MBS:.0f} MB/s"),
        ("throughput, CPU time", f"{mb / cpu:.1f} MB/s", f"{cpu:.2f} s of CPU in that parse"),
        ("peak traced memory", f"{peak / 1e6:.1f} MB", "tracemalloc, result included"),
        ("findings kept", str(kept), f"{distinct} distinct signature(s)"),
        ("summary count", str(count), "ERROR SUMMARY totals"),
    ]
    width = max(len(r[0]) for r in rows)
    for name, value, note in rows:
        print(f"  {name:<{width}}  {value:>12}  {note}")
    report = {
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "commit": commit(),
        "host": {
            "platform": platform.platform(),
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
        },
        "fixture": args.fixture.name,
        "mb": mb,
        "repetitions": reps,
        "seconds": best,
        "mb_per_s": mb / best,
        "cpu_seconds": cpu,
        "mb_per_cpu_s": mb / cpu,
        "peak_traced_mb": peak / 1e6,
        "findings": kept,
        "distinct_signatures": distinct,
        "summary_count": count,
    }
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(report, indent=2))
    print(f"bench: wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
