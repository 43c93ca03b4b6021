"""csorch orchestration: overhead, against a naive serial baseline, and a warm rerun.

Run by ``make bench``, all ratios measured in one run on one machine:

1. cold: ``csorch run CONFIG`` with an empty build cache. Overhead = csorch's wall time
   over the critical path of the child processes it ran (builds and attempts, from the
   bundle): the longer of the dependency chain (a variant's build, then its longest
   attempt) and the children's CPU time over the CPU count (no schedule beats the
   machine; builds are parallel inside, so their wall time would not tell). Target
   <= 1.10.
2. baseline: the same matrix the naive way: each variant built serially with no cache,
   then one sanitizer process per test node (the nodes csorch ran), one after another,
   wrapped exactly as csorch wraps them. Target: csorch >= 2x faster.
3. warm: the same ``csorch run`` again on the now-filled cache: rebuilds (target 0) and
   wall time relative to the cold run.

Prints a table and writes JSON (``--json``). With ``--skip-baseline`` step 2 is left out
(it is the slow one: every build again, serially).
"""

from __future__ import annotations

import argparse
import dataclasses
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
sys.path.insert(0, str(ROOT))

from orchestrator import build, execute, host  # noqa: E402
from orchestrator.backends import Asan, ComputeSanitizer, choose, serves  # noqa: E402
from orchestrator.cache import Cache  # noqa: E402
from orchestrator.config import load_experiment, only_cases  # noqa: E402
from orchestrator.model import CaseKind  # noqa: E402
from orchestrator.plan import Job  # noqa: E402
from orchestrator.sources import Workspace  # noqa: E402

TARGET_OVERHEAD = 1.10
TARGET_SPEEDUP = 2.0


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--config", type=Path, default=ROOT / "configs" / "nvfp4-rng-ownership.yaml")
    p.add_argument("--backend", default="auto", choices=("auto", "asan", "compute-sanitizer"))
    p.add_argument("--jobs", type=int, default=min(os.cpu_count() or 1, 8))
    p.add_argument("--work", type=Path, help="scratch directory (default: a temporary one)")
    p.add_argument("--skip-baseline", action="store_true", help="leave out the slow baseline")
    p.add_argument(
        "--case",
        action="append",
        default=[],
        help="bench only this config case (repeatable; default: all): a smaller matrix",
    )
    p.add_argument("--json", type=Path, default=ROOT / "results" / "bench-orchestrator.json")
    return p.parse_args(argv)


def csorch(args: argparse.Namespace, backend: str, out: Path, cache: Path) -> dict:
    """One `csorch run`, timed from outside; returns its figures read from the bundle."""
    argv = [
        sys.executable,
        "-m",
        "orchestrator",
        "run",
        str(args.config),
        "--backend",
        backend,
        "--out",
        str(out),
        "--cache-dir",
        str(cache),
        "--jobs",
        str(args.jobs),
        *[a for c in args.case for a in ("--case", c)],
    ]
    start = time.monotonic()
    done = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True)
    wall = time.monotonic() - start
    if done.returncode not in (0, 1, 3):
        sys.exit(f"csorch run failed ({done.returncode}):\n{done.stdout[-3000:]}{done.stderr}")
    results = json.loads((out / "results.json").read_text())
    builds = [b for b in results["builds"] if b["ok"]]
    built = {b["variant"]: (0.0 if b["cached"] else b["duration"]) for b in builds}
    attempts: dict[str, list[float]] = {}
    for a in results["attempts"]:
        attempts.setdefault(a["variant"], []).append(sum(x["duration"] for x in a["launches"]))
    nodes: dict[str, set[str]] = {}
    for a in results["attempts"]:
        nodes.setdefault(a["case"], set()).update(n["nodeid"] for n in a["nodes"])
    chain = max(built.get(v, 0.0) + max(d, default=0.0) for v, d in attempts.items())
    cpu = sum(b["cpu"] for b in builds if not b["cached"]) + sum(
        x["cpu"] for a in results["attempts"] for x in a["launches"]
    )
    cores = os.cpu_count() or 1
    bound = max(chain, cpu / cores)
    return {
        "wall_s": wall,
        "exit": done.returncode,
        "verdict": results["verdict"],
        "rebuilds": sum(1 for b in results["builds"] if b["ok"] and not b["cached"]),
        "builds_s": sum(built.values()),
        "attempts": len(results["attempts"]),
        "processes": sum(len(a["launches"]) for a in results["attempts"]),
        "chain_s": chain,
        "child_cpu_s": cpu,
        "cpu_bound_s": cpu / cores,
        "critical_path_s": bound,
        "overhead": wall / bound if bound else float("nan"),
        "nodes": {case: sorted(ids) for case, ids in nodes.items()},
    }


def baseline(
    args: argparse.Namespace,
    backend: str,
    facts: host.Host,
    work: Path,
    nodes: dict[str, list[str]],
) -> dict:
    """Serial uncached builds, then one checker process per test node, serially."""
    experiment = only_cases(load_experiment(args.config), args.case)
    asan = backend == "asan"
    checker = (
        Asan(facts.asan_runtime or None)
        if asan
        else ComputeSanitizer(facts.compute_sanitizer_path or None)
    )
    runtime = Path(facts.asan_runtime) if facts.asan_runtime else None
    # every node becomes its own case: one process each
    per_node = []
    for case in experiment.cases:
        if case.kind is CaseKind.COMMAND:
            per_node.append(case)
            continue
        path = case.pytest[0].split("::")[0]
        for i, node in enumerate(nodes.get(case.name, [])):
            per_node.append(
                dataclasses.replace(
                    case, name=f"{case.name}-{i}", pytest=(f"{path}::{node.split('::', 1)[1]}",)
                )
            )
    split = dataclasses.replace(experiment, cases=tuple(per_node))
    start = time.monotonic()
    processes = 0
    for variant in experiment.variants:
        workspace = Workspace(work / "trees" / variant.name)
        tree = workspace.materialize(variant, experiment.source_for(variant))
        ctx = build.Context(
            cache=Cache(work / "caches" / variant.name),
            logs=work / "logs",
            python=sys.executable,
            toolchain=facts.toolchain(),
            sanitizer="address" if asan else "",
            flags=checker.build_flags(),
            asan_runtime=runtime,
        )
        built = build.build(variant, tree, ctx)
        processes += len(built.steps)
        xctx = execute.Context(
            split, backend, checker, sys.executable, work / "bundle", work / "cwd", runtime
        )
        (work / "bundle" / "logs").mkdir(parents=True, exist_ok=True)
        for run in split.runs:
            if serves(backend, run.checker):
                continue
            for repeat in range(split.repeats_for(run)):
                for case in split.cases:
                    attempt = execute.execute(
                        Job(variant.name, run.name, case.name, repeat), built, xctx
                    )
                    processes += len(attempt.launches)
        workspace.close()
    return {"wall_s": time.monotonic() - start, "processes": processes}


def main(argv=None) -> int:
    args = parse_args(argv)
    checkers = host.probe_checkers()
    facts = host.probe(sys.executable, checkers)
    backend = choose(
        args.backend, gpus=len(facts.gpus), sanitizer=checkers[0], asan=checkers[1]
    ).backend
    work = args.work or Path(tempfile.mkdtemp(prefix="csorch-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    print(
        f"bench: {args.config.name}, backend {backend}, --jobs {args.jobs}, "
        f"{os.cpu_count()} CPUs, work in {work}",
        flush=True,
    )
    cold = csorch(args, backend, work / "cold", work / "cache")
    print(f"cold: {cold['wall_s']:.1f} s, verdict {cold['verdict']}", flush=True)
    warm = csorch(args, backend, work / "warm", work / "cache")
    print(f"warm: {warm['wall_s']:.1f} s, rebuilds {warm['rebuilds']}", flush=True)
    base = None
    if not args.skip_baseline:
        base = baseline(args, backend, facts, work / "baseline", cold["nodes"])
        print(f"baseline: {base['wall_s']:.1f} s", flush=True)
    rows = [
        ("csorch cold wall", f"{cold['wall_s']:.1f} s", ""),
        (
            "child critical path",
            f"{cold['critical_path_s']:.1f} s",
            f"chain {cold['chain_s']:.1f} s, child CPU / cores {cold['cpu_bound_s']:.1f} s",
        ),
        ("orchestration overhead", f"{cold['overhead']:.3f}", f"target <= {TARGET_OVERHEAD}"),
        (
            "csorch warm wall",
            f"{warm['wall_s']:.1f} s",
            f"{warm['wall_s'] / cold['wall_s']:.2f} of cold",
        ),
        ("warm rebuilds", str(warm["rebuilds"]), "target 0"),
    ]
    if base:
        rows += [
            (
                "naive serial baseline",
                f"{base['wall_s']:.1f} s",
                f"{base['processes']} processes vs csorch's {cold['processes']}",
            ),
            (
                "speedup over baseline",
                f"{base['wall_s'] / cold['wall_s']:.2f}x",
                f"target >= {TARGET_SPEEDUP}x",
            ),
        ]
    width = max(len(r[0]) for r in rows)
    for name, value, note in rows:
        print(f"  {name:<{width}}  {value:>10}  {note}")
    report = {
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "host": {
            "platform": platform.platform(),
            "cpus": os.cpu_count(),
            "gpus": facts.gpus,
            "torch": facts.torch,
        },
        "config": str(
            args.config.relative_to(ROOT) if args.config.is_relative_to(ROOT) else args.config
        ),
        "backend": backend,
        "jobs": args.jobs,
        "cold": {k: v for k, v in cold.items() if k != "nodes"},
        "warm": {k: v for k, v in warm.items() if k != "nodes"},
        "baseline": base,
        "ratios": {
            "overhead": cold["overhead"],
            "warm_over_cold": warm["wall_s"] / cold["wall_s"],
            "warm_rebuilds": warm["rebuilds"],
            "speedup_over_baseline": base["wall_s"] / cold["wall_s"] if base else None,
        },
    }
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(report, indent=2))
    print(f"bench: wrote {args.json}")
    if args.work is None:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
