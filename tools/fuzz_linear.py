"""Is parse time linear in input size? A measured check for `make fuzz` (not a unit test:
timings on a shared machine are not pass/fail material for CI).

For each parser (compute-sanitizer text, ASan, case markers) it parses inputs of size N
and 8N and prints the ratio of the times (about 8 when linear, about 64 when quadratic):
- whole logs: every real fixture log repeated to N characters (default 1,000,000);
- huge lines (default N 20,000): two fixture lines of each kind, each with one piece
  (spaces, digits, letters, a bracket, a frame prefix, the line itself) inflated to N
  characters at its start, middle and end: the shapes that make a regex backtrack.
It exits 1 when any input's ratio exceeds --max-ratio (with its time over --min-seconds,
so that noise on tiny timings is not counted) in each of three measurements, and prints
the worst inputs.

    python tools/fuzz_linear.py [--size 20000] [--log-size 1000000] [--max-ratio 24]
"""

from __future__ import annotations

import argparse
import re
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from orchestrator.backends.asan import log as asan_log  # noqa: E402
from orchestrator.backends.compute_sanitizer import log as cs_log  # noqa: E402
from orchestrator.markers import reader  # noqa: E402

FIXTURES = ROOT / "tests" / "fixtures"
PIECES = (" ", "a", "9", "(", "[", "0x1 ", "#0 0x1 in f ", ", ", ":", "=")
PER_KIND = 2  # distinct lines kept per kind of line (its first 14 characters)
PARSERS: dict[str, tuple[Callable[[list[str]], object], tuple[str, ...]]] = {
    "cs_log": (cs_log.parse, ("compute-sanitizer/**/*.log",)),
    "asan": (asan_log.parse, ("asan/*.log", "controls/cpu-asan/*.log")),
    "nodes": (reader.read, ("**/*.log",)),
}


def _lines(globs: tuple[str, ...]) -> list[list[str]]:
    paths = sorted({p for g in globs for p in FIXTURES.glob(g)})
    return [p.read_text(errors="replace").splitlines() for p in paths]


def _seconds(parse: Callable[[list[str]], object], lines: list[str]) -> float:
    best = float("inf")
    for _ in range(2):
        start = time.perf_counter()
        parse(lines)
        best = min(best, time.perf_counter() - start)
    return best


def whole_logs(logs: list[list[str]]):
    """(label, make(n) -> lines): each log repeated to about n characters."""
    for k, log in enumerate(logs):
        text_len = max(1, sum(len(x) + 1 for x in log))
        yield f"log#{k} repeated", lambda n, log=log, t=text_len: log * max(1, n // t)


def huge_lines(logs: list[list[str]]):
    """(label, make(n) -> lines): one line with a piece inflated to about n characters."""
    kinds: dict[str, list[str]] = {}
    for line in sorted({line for log in logs for line in log}):
        # the kind of line: its start, with hex digits and numbers folded together
        same = kinds.setdefault(re.sub(r"[0-9a-fA-Fx]+", "0", line.strip())[:10], [])
        if len(same) < PER_KIND:
            same.append(line)
    distinct = [line for same in kinds.values() for line in same]
    for line in distinct:
        for piece in (*PIECES, line or " "):
            for where in ("start", "middle", "end"):
                places = {"start": min(len(line), 10), "middle": len(line) // 2, "end": len(line)}
                at = places[where]

                def make(n, line=line, piece=piece, at=at):
                    return [line[:at] + piece * max(1, n // len(piece)) + line[at:]]

                yield f"{line[:50]!r} + {piece[:12]!r}x at {where}", make


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--size", type=int, default=20_000, help="N for a huge line (chars)")
    ap.add_argument("--log-size", type=int, default=1_000_000, help="N for whole logs (chars)")
    ap.add_argument("--max-ratio", type=float, default=24.0)
    ap.add_argument("--min-seconds", type=float, default=0.02)
    args = ap.parse_args()
    failed = False
    for name, (parse, globs) in PARSERS.items():
        logs = [log for log in _lines(globs) if log]
        worst: list[tuple[float, float, str]] = []
        count, start = 0, time.monotonic()
        shapes = [(args.log_size, *x) for x in whole_logs(logs)]
        shapes += [(args.size, *x) for x in huge_lines(logs)]
        for n, label, make in shapes:
            small, big = make(n), make(8 * n)
            t1, t8 = _seconds(parse, small), _seconds(parse, big)
            count += 1
            ratio = t8 / max(t1, 1e-6)
            for _ in range(2):  # confirm a bad ratio: on a shared machine one can be load
                if ratio <= args.max_ratio or t8 < args.min_seconds:
                    break
                t1, t8 = _seconds(parse, small), _seconds(parse, big)
                ratio = min(ratio, t8 / max(t1, 1e-6))
            worst.append((ratio if t8 >= args.min_seconds else 0.0, t8, label))
        worst.sort(reverse=True)
        bad = [w for w in worst if w[0] > args.max_ratio]
        failed |= bool(bad)
        slowest = max(worst, key=lambda w: w[1])
        print(
            f"{name}: {count} inputs (logs at N={args.log_size:,}, lines at N={args.size:,} "
            f"and 8N chars) in "
            f"{time.monotonic() - start:.0f} s; worst ratio t(8N)/t(N) "
            f"{worst[0][0]:.1f} ({worst[0][2]}); slowest 8N parse {slowest[1] * 1000:.1f} ms "
            f"({slowest[2]}): {'NOT LINEAR' if bad else 'linear'}"
        )
        for ratio, t8, label in bad[:10]:
            print(f"    ratio {ratio:.0f}, {t8:.2f} s at 8N: {label}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
