"""Builds that cost what changed: the compile cache's ratios, each measured in this one run.

Run by ``make bench`` (``make bench-builds`` alone). Every step builds qext (the `jit`
kind, csorch's own build description) through ``csorch run`` on a copy of ext/ made in
the work directory, so nothing of the checkout is touched; one case (``--case``) keeps the
attempts short, and the figures are the builds' own CPU seconds from results.json (the
children's user + system time: what a build costs whatever the host's cores), with the
compile cache's hits and misses beside them. All steps share one build cache (and its
compile cache, CACHE/ccache), in order:

1. cold: the fix variant (``patched``, no patch) on an empty cache: every unit compiled.
2. one file: the control (``rebuilt``, controls/rng-owner-scope.patch changes one
   source file). Its build CPU over the cold build's. Target <= 0.25.
3. test-only edit: a regression test written inside the copied tree (the tree's digest,
   and so the build's key, changes; no compiled file does), then ``patched`` again. Its
   build CPU over the cold build's. Target <= 0.10.
4. ``--no-compile-cache``: the one-file control again on a fresh build cache without
   the compile cache, the baseline of step 2 measured in this same run.
5. bisect (``--skip-bisect`` leaves it out): tools/synthetic_history.py's history, one
   probe a round; build CPU of each probe that built after the first, over the first's.
   Target <= 0.25.
6. the gate (``--gate``, minutes on a CPU host): ``csorch gate configs/release-gate.yaml``
   from an empty build cache, with --no-compile-cache and then with the compile cache
   (each on a cache of its own): the wall time before / after. Target >= 1.6.

Prints a table and writes JSON (``--json``).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TARGET_ONE_FILE = 0.25
TARGET_TEST_EDIT = 0.10
TARGET_PROBE = 0.25
TARGET_GATE = 1.6

CONFIG = """\
name: bench-builds
source: {src}
variants:
  - name: {variant}
    build: {{kind: jit, description: qext/build.py}}{patches}
runs:
  - name: plain
    checker: none
cases:
  - name: rng-fused
    pytest: {tests}/test_rng_ownership.py
    args: [-k, fused]
    backend_args: {{asan: [--qext-device, cpu], compute-sanitizer: [--qext-device, cuda]}}
timeout: 60m
"""


def csorch(*args: str) -> list[str]:
    return [sys.executable, "-m", "orchestrator", *args]


def run(argv: list[str], log: Path, env: dict[str, str] | None = None) -> float:
    """One csorch command, its output kept in `log`; its wall time."""
    start = time.monotonic()
    done = subprocess.run(
        argv, cwd=ROOT, capture_output=True, text=True, env={**os.environ, **(env or {})}
    )
    wall = time.monotonic() - start
    log.write_text(f"$ {' '.join(argv)}\n[{wall:.1f} s, exit {done.returncode}]\n"
                   f"{done.stdout}\n--- stderr\n{done.stderr}")  # fmt: skip
    if done.returncode not in (0, 1, 3):
        raise RuntimeError(f"{argv[3]} failed ({done.returncode}), see {log}")
    return wall


def built(bundle: Path, variant: str) -> dict:
    """One variant's build in a bundle: its CPU, wall, hits and misses."""
    results = json.loads((bundle / "results.json").read_text())
    b = next(b for b in results["builds"] if b["variant"] == variant)
    if not b["ok"]:
        raise RuntimeError(f"{variant} did not build: {b.get('error', '')[:300]}")
    return {
        "cached": b["cached"],
        "cpu_s": b["cpu"],
        "wall_s": b["duration"],
        "compile_cpu_s": b.get("compile_cpu", 0.0),
        "hits": b.get("compile_hits", 0),
        "misses": b.get("compile_misses", 0),
        "units": len(b.get("units", [])),
    }


def one_variant(work: Path, src: Path, cache: Path, variant: str, name: str, *extra: str) -> dict:
    """`csorch run` of a config holding only `variant` (patched: ext/ as it is; rebuilt:
    with the control patch), one case."""
    out = work / name
    config = work / f"{name}.yaml"
    patches = f"\n    patches: [{ROOT / 'controls' / 'rng-owner-scope.patch'}]"
    config.write_text(CONFIG.format(
        src=src, variant=variant, patches=patches if variant == "rebuilt" else "",
        tests=ROOT / "tests" / "regression",
    ))  # fmt: skip
    argv = csorch("run", str(config), "--case", "rng-fused",
                  "--cache-dir", str(cache), "--out", str(out), *extra)  # fmt: skip
    wall = run(argv, work / f"{name}.log")
    return {**built(out, variant), "run_wall_s": wall}


def bench_builds(work: Path) -> dict:
    src = work / "src"
    shutil.copytree(
        ROOT / "ext", src, ignore=shutil.ignore_patterns("build", "*.so", "__pycache__")
    )
    cache = work / "cache"
    cold = one_variant(work, src, cache, "patched", "cold")
    one = one_variant(work, src, cache, "rebuilt", "one-file")
    (src / "tests_local").mkdir(exist_ok=True)
    (src / "tests_local" / "test_new_case.py").write_text("def test_new():\n    assert True\n")
    edit = one_variant(work, src, cache, "patched", "test-edit")
    base = one_variant(
        work, src, work / "cache-nocc", "rebuilt", "one-file-nocc", "--no-compile-cache"
    )
    for name, b in (("one-file", one), ("test-edit", edit)):
        if b["cached"]:
            raise RuntimeError(f"{name}: the build came from the build cache, not built")
    return {
        "cold": cold,
        "one_file": one,
        "test_edit": edit,
        "one_file_no_compile_cache": base,
        "one_file_ratio": one["cpu_s"] / cold["cpu_s"],
        "test_edit_ratio": edit["cpu_s"] / cold["cpu_s"],
        "no_cache_ratio": base["cpu_s"] / cold["cpu_s"],
        # the compilers' share alone (the wrappers time every compile and link)
        "one_file_compile_ratio": _ratio(one["compile_cpu_s"], cold["compile_cpu_s"]),
        "test_edit_compile_ratio": _ratio(edit["compile_cpu_s"], cold["compile_cpu_s"]),
    }


def _ratio(a: float, b: float) -> float:
    return a / b if b else float("nan")


def bench_bisect(work: Path, commits: int, defect: int) -> dict:
    hist = work / "history"
    made = subprocess.run(
        [sys.executable, str(ROOT / "tools" / "synthetic_history.py"), str(hist),
         "--commits", str(commits), "--defect-at", str(defect)],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    command = made.stdout.strip().splitlines()[-1].split()[1:]  # after "csorch"
    out = work / "bisect"
    run(csorch(*command, "--out", str(out), "--cache-dir", str(work / "cache-bisect"),
               "--probes", "1"), work / "bisect.log")  # fmt: skip
    state = json.loads((out / "bisect.json").read_text())["state"]
    probes = []
    for s in state["steps"]:
        rel = s["evaluation"].get("bundle")
        if not rel or not (out / rel / "results.json").is_file():
            continue
        results = json.loads((out / rel / "results.json").read_text())
        for b in results["builds"]:
            if b["ok"] and not b["cached"]:
                probes.append({
                    "commit": str((s.get("commit") or {}).get("sha", ""))[:12], "cpu_s": b["cpu"],
                    "compile_cpu_s": b.get("compile_cpu", 0.0),
                    "hits": b.get("compile_hits", 0), "misses": b.get("compile_misses", 0),
                })  # fmt: skip
    if not probes:
        raise RuntimeError("no probe built")
    first, rest = probes[0], probes[1:]
    mean = sum(p["cpu_s"] for p in rest) / len(rest) if rest else 0.0
    compiling = sum(p["compile_cpu_s"] for p in rest) / len(rest) if rest else 0.0
    return {
        "probes": probes,
        "first_cpu_s": first["cpu_s"],
        "later_mean_cpu_s": mean,
        "ratio": mean / first["cpu_s"] if rest else float("nan"),
        "compile_ratio": _ratio(compiling, first["compile_cpu_s"]) if rest else float("nan"),
    }


def bench_gate(work: Path) -> dict:
    gate = ROOT / "configs" / "release-gate.yaml"
    walls = {}
    for name, extra in (("before", ("--no-compile-cache",)), ("after", ())):
        walls[name] = run(
            csorch("gate", str(gate), "--backend", "auto", "--out", str(work / f"gate-{name}"),
                   "--cache-dir", str(work / f"cache-gate-{name}"), *extra),
            work / f"gate-{name}.log",
        )  # fmt: skip
    return {**{f"{k}_s": v for k, v in walls.items()}, "speedup": walls["before"] / walls["after"]}


def table(rows: list[tuple[str, str, str]]) -> str:
    w = [max(len(r[i]) for r in rows) for i in range(3)]
    return "\n".join(f"{a:<{w[0]}}  {b:>{w[1]}}  {c}" for a, b, c in rows)


def _build_row(name: str, b: dict) -> tuple[str, str, str]:
    return (name, f"{b['cpu_s']:.1f} s CPU",
            f"compilers {b['compile_cpu_s']:.1f} s CPU, {b['wall_s']:.1f} s wall, "
            f"{b['hits']} hits / {b['misses']} misses")  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--work", type=Path, help="keep the runs here (default: a temp dir)")
    p.add_argument("--commits", type=int, default=24)
    p.add_argument("--defect-at", type=int, default=13)
    p.add_argument("--skip-builds", action="store_true", help="leave out steps 1-4")
    p.add_argument("--skip-bisect", action="store_true")
    p.add_argument("--gate", action="store_true", help="also the gate, before / after")
    p.add_argument("--json", type=Path)
    args = p.parse_args(argv)
    work = args.work or Path(tempfile.mkdtemp(prefix="csorch-bench-builds-"))
    work.mkdir(parents=True, exist_ok=True)
    print(f"bench builds: {platform.node()}, {os.cpu_count()} CPUs, work in {work}", flush=True)
    doc: dict = {
        "date": datetime.date.today().isoformat(),
        "machine": {"node": platform.node(), "cpus": os.cpu_count()},
        "commit": subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT,
                                 capture_output=True, text=True).stdout.strip(),
    }  # fmt: skip
    rows: list[tuple[str, str, str]] = []
    failed = []

    def step(name: str, fn):  # one step's failure is reported and the others measured
        try:
            doc[name] = fn()
        except (RuntimeError, OSError, KeyError, ValueError, TypeError, StopIteration,
                subprocess.CalledProcessError) as e:  # fmt: skip
            doc[name] = {"error": str(e)}
            failed.append(name)
            print(f"{name}: {e}", file=sys.stderr)
        if args.json:
            args.json.parent.mkdir(parents=True, exist_ok=True)
            args.json.write_text(json.dumps(doc, indent=1))
        return None if name in failed else doc[name]

    if not args.skip_builds and (b := step("builds", lambda: bench_builds(work))):
        rows += [
            _build_row("cold build (patched)", b["cold"]),
            _build_row("one file changed (rebuilt)", b["one_file"]),
            (
                "  / cold",
                f"{b['one_file_ratio']:.3f}",
                f"target <= {TARGET_ONE_FILE} (compilers alone: {b['one_file_compile_ratio']:.3f})",
            ),
            _build_row("test-only edit (patched)", b["test_edit"]),
            (
                "  / cold",
                f"{b['test_edit_ratio']:.3f}",
                f"target <= {TARGET_TEST_EDIT} "
                f"(compilers alone: {b['test_edit_compile_ratio']:.3f})",
            ),
            _build_row("one file, --no-compile-cache", b["one_file_no_compile_cache"]),
            ("  / cold", f"{b['no_cache_ratio']:.3f}", "the baseline: every unit compiled"),
        ]
    if not args.skip_bisect and (
        r := step("bisect", lambda: bench_bisect(work, args.commits, args.defect_at))
    ):
        rows += [
            ("bisect: first probe's build", f"{r['first_cpu_s']:.1f} s CPU",
             f"{len(r['probes'])} probes built"),
            ("  later probes' mean / first", f"{r['ratio']:.3f}", f"target <= {TARGET_PROBE} "
             f"(compilers alone: {r['compile_ratio']:.3f})"),
        ]  # fmt: skip
    if args.gate and (g := step("gate", lambda: bench_gate(work))):
        rows += [
            ("gate, --no-compile-cache", f"{g['before_s']:.1f} s", "empty build cache"),
            ("gate, compile cache", f"{g['after_s']:.1f} s", "empty build and compile cache"),
            ("  before / after", f"{g['speedup']:.2f}x", f"target >= {TARGET_GATE}"),
        ]
    if rows:
        print(table(rows))
    if not args.work:
        shutil.rmtree(work, ignore_errors=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
