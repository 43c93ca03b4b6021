"""csorch orchestration: overhead, a naive serial baseline, warm and patch-only reruns.

Run by ``make bench``; every figure comes from this one run on this machine:

1. cold: ``csorch run CONFIG`` (every case: the full default matrix) on an empty build
   cache. Overhead = csorch's wall time over the critical path of the child processes
   it ran (builds and attempts, from the bundle): the longest of the dependency chain (a
   variant's build, then its longest attempt), the children's CPU time over the CPU
   count (no schedule beats the machine) and the children's wall time over --jobs (no
   schedule beats the slots). Target <= 1.05.
2. warm: the same run again on the filled cache. Target: 0 rebuilds (from the bundle).
3. patch-only: the fix variant gets one more patch (it adds a one-line note file),
   everything else unchanged. Target: exactly that variant rebuilds (from the bundle).
   Its attempts are limited to one case (--patch-case): the rebuild count is the figure.
4. baseline: what a naive serial script would take for the same matrix: each variant
   built with no cache, one after another, then one checker process per test node, one
   after another, wrapped exactly as csorch wraps them. The full baseline is longer than
   the benchmark's budget on the H200 (72 node processes under memcheck), so it is
   SCALED and says so: the first --baseline-builds variants are built (the rest counted
   at their mean) and --baseline-nodes node processes (spread over the cases) are timed
   per built variant x run (every variant's nodes of a run counted at that run's mean,
   so the controls' nodes are assumed to cost what the built variants' do). 0 for
   either measures everything.
   Target: csorch >= 3x faster.
5. where attempts' time goes: each launch's `[csorch-clock]` marks (orchestrator.markers.reader
   .phases) split its wall time into checker start-up, interpreter, collection (torch and
   the extension imported), the first case, the other cases and the exit.

Prints a table and writes JSON (``--json``). ``--skip-baseline`` leaves out step 4.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from orchestrator import backends, host  # noqa: E402
from orchestrator.backends import choose  # noqa: E402
from orchestrator.cache import Cache  # noqa: E402
from orchestrator.config.experiment import load_experiment  # noqa: E402
from orchestrator.executors import execute  # noqa: E402
from orchestrator.markers import reader  # noqa: E402
from orchestrator.model import CaseKind, Experiment  # noqa: E402
from orchestrator.model.job import Job  # noqa: E402
from orchestrator.run import build  # noqa: E402
from orchestrator.run.sources import Workspace  # noqa: E402

TARGET_OVERHEAD = 1.05
TARGET_SPEEDUP = 3.0


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--config", type=Path, default=ROOT / "configs" / "nvfp4-rng-ownership.yaml")
    p.add_argument("--backend", default="auto", choices=("auto", "asan", "compute-sanitizer"))
    p.add_argument("--jobs", type=int, default=min(os.cpu_count() or 1, 8))
    p.add_argument("--work", type=Path, help="scratch directory (default: a temporary one)")
    p.add_argument("--skip-baseline", action="store_true", help="leave out the slow baseline")
    p.add_argument(
        "--baseline-builds",
        type=int,
        default=1,
        help="variants the baseline builds (0: all); the others count at their mean",
    )
    p.add_argument(
        "--baseline-nodes",
        type=int,
        default=2,
        help="node processes timed per variant x run (0: all); the rest count at the mean",
    )
    p.add_argument(
        "--patch-case",
        default="",
        help="the case the patch-only rerun runs (default: the config's last case)",
    )
    p.add_argument("--json", type=Path, default=ROOT / "results" / "bench-orchestrator.json")
    return p.parse_args(argv)


def csorch(config: Path, backend: str, out: Path, cache: Path, jobs: int, cases=()) -> dict:
    """One `csorch run`, timed from outside; its figures are read from the bundle."""
    argv = [
        sys.executable,
        "-m",
        "orchestrator",
        "run",
        str(config),
        "--backend",
        backend,
        "--out",
        str(out),
        "--cache-dir",
        str(cache),
        "--jobs",
        str(jobs),
        *[a for c in cases for a in ("--case", c)],
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
    node_ids: dict[str, set[str]] = {}
    for a in results["attempts"]:
        node_ids.setdefault(a["case"], set()).update(n["nodeid"] for n in a["nodes"])
    chain = max(built.get(v, 0.0) + max(d, default=0.0) for v, d in attempts.items())
    builds_cpu = sum(b["cpu"] for b in builds if not b["cached"])
    attempts_cpu = sum(x["cpu"] for a in results["attempts"] for x in a["launches"])
    cpu = builds_cpu + attempts_cpu
    cores = os.cpu_count() or 1
    # with --jobs slots, no schedule finishes before the children's wall time over the
    # slots (on 2 cores, --jobs 2 runs two of three builds at once, then the third)
    work = sum(built.values()) + sum(d for ds in attempts.values() for d in ds)
    bound = max(chain, cpu / cores, work / jobs)
    return {
        "wall_s": wall,
        "exit": done.returncode,
        "verdict": results["verdict"],
        "rebuilt": sorted(b["variant"] for b in builds if not b["cached"]),
        "rebuilds": sum(1 for b in builds if not b["cached"]),
        "builds_s": sum(built.values()),
        "attempts": len(results["attempts"]),
        "processes": sum(len(a["launches"]) for a in results["attempts"]),
        "chain_s": chain,
        "child_cpu_s": cpu,
        "builds_cpu_s": builds_cpu,
        "attempts_cpu_s": attempts_cpu,
        "cpu_bound_s": cpu / cores,
        "slots_bound_s": work / jobs,
        "critical_path_s": bound,
        "overhead": wall / bound if bound else float("nan"),
        "nodes": {case: sorted(ids) for case, ids in node_ids.items()},
        "phases": phases(out, results),
    }


def phases(bundle: Path, results: dict) -> dict:
    """Where the attempts' wall time went, per run, from the launches' clock marks."""
    per_run: dict[str, list[reader.Phases]] = {}
    walls: dict[str, float] = {}
    for a in results["attempts"]:
        for launch in a["launches"]:
            log = bundle / launch["log"]
            if not log.exists() or not launch.get("started"):
                continue
            with open(log, errors="replace") as lines:
                p = reader.phases(lines, launch["started"], launch["duration"])
            if p.collection is None:  # a command case: no pytest, no marks
                continue
            per_run.setdefault(a["run"], []).append(p)
            walls[a["run"]] = walls.get(a["run"], 0.0) + launch["duration"]
    out = {}
    for run, ps in per_run.items():

        def total(name: str, ps=ps) -> float:
            return sum(getattr(p, name) or 0.0 for p in ps)

        others = [x for p in ps for x in p.other_cases]
        row = {
            "launches": len(ps),
            "wall_s": walls[run],
            **{f"{k}_s": total(k) for k in ("startup", "interpreter", "collection", "exit")},
            "first_case_s": total("first_case"),
            "other_cases_s": sum(others),
            "median_other_case_s": statistics.median(others) if others else None,
        }
        fixed = sum(row[f"{k}_s"] for k in ("startup", "interpreter", "collection", "exit"))
        row["fixed_share"] = fixed / walls[run] if walls[run] else None
        out[run] = row
    return out


def patch_only_config(config: Path, work: Path) -> tuple[Path, str, str]:
    """A copy of `config` (beside it, so that its relative paths hold) whose fix variant
    has one more patch, which adds a one-line note file: the variant's tree digest
    changes and no other patch can conflict with it. Returns (copy, fix variant, file)."""
    experiment = load_experiment(config)
    fix = experiment.expect.fix if experiment.expect else experiment.variants[0].name
    note = "CSORCH_BENCH_NOTE"
    patch = work / "patch-only.patch"
    patch.write_text(
        f"diff --git a/{note} b/{note}\n"
        "new file mode 100644\n"
        "--- /dev/null\n"
        f"+++ b/{note}\n"
        "@@ -0,0 +1 @@\n"
        "+a patch-only change: csorch's benchmark checks that only this variant rebuilds\n"
    )
    raw = yaml.safe_load(config.read_text())
    for v in raw["variants"]:
        if v["name"] == fix:
            v["patches"] = [*(v.get("patches") or []), str(patch)]
    copy = config.parent / f".bench-patch-only-{os.getpid()}-{config.name}"
    copy.write_text(yaml.safe_dump(raw, sort_keys=False))
    return copy, fix, note


def baseline(
    args: argparse.Namespace,
    backend: str,
    facts: host.Host,
    work: Path,
    node_ids: dict[str, list[str]],
) -> dict:
    """Serial uncached builds, then one checker process per test node, serially; scaled
    to a sample when --baseline-builds / --baseline-nodes say so."""
    experiment = load_experiment(args.config)
    checker = backends.make(backend, facts)
    runtime = Path(facts.asan_runtime) if facts.asan_runtime else None
    per_node = []  # every node becomes its own case: one process each
    for case in experiment.cases:
        if case.kind is CaseKind.COMMAND:
            per_node.append(case)
            continue
        path = case.pytest[0].split("::")[0]
        for i, node in enumerate(node_ids.get(case.name, [])):
            per_node.append(
                dataclasses.replace(
                    case, name=f"{case.name}-{i}", pytest=(f"{path}::{node.split('::', 1)[1]}",)
                )
            )
    # a spread sample: every k-th node, so that each case is represented
    k = args.baseline_nodes
    step = max(len(per_node) // k, 1) if k else 1
    sample = per_node[::step][:k] if k else per_node
    split = dataclasses.replace(experiment, cases=tuple(sample))
    variants = experiment.variants
    to_build = variants[: args.baseline_builds] if args.baseline_builds else variants
    start = time.monotonic()
    build_s: list[float] = []
    node_s: dict[str, list[float]] = {}  # per run: a memcheck node costs more than a plain one
    processes = 0
    runs = [r for r in split.runs if not checker.serves(r.checker)]
    for variant in to_build:
        workspace = Workspace(work / "trees" / variant.name)
        t = time.monotonic()
        tree = workspace.materialize(variant, experiment.source_for(variant))
        ctx = build.Context(
            cache=Cache(work / "caches" / variant.name),
            logs=work / "logs",
            python=sys.executable,
            toolchain=facts.toolchain(),
            sanitizer=checker.build_sanitizer,
            flags=checker.build_flags(),
            asan_runtime=runtime,
        )
        built = build.build(variant, tree, ctx)
        build_s.append(time.monotonic() - t)
        processes += len(built.steps)
        xctx = execute.Context(split, checker, sys.executable, work / "bundle", work / "cwd")
        (work / "bundle" / "logs").mkdir(parents=True, exist_ok=True)
        for run in runs:
            for repeat in range(split.repeats_for(run)):
                for case in split.cases:
                    t = time.monotonic()
                    attempt = execute.execute(
                        Job(variant.name, run.name, case.name, repeat), built, xctx
                    )
                    node_s.setdefault(run.name, []).append(time.monotonic() - t)
                    processes += len(attempt.launches)
        workspace.close()
    measured = time.monotonic() - start
    per_run = {r.name: len(variants) * experiment.repeats_for(r) * len(per_node) for r in runs}
    full_nodes = sum(per_run.values())
    timed_nodes = sum(len(v) for v in node_s.values())
    estimate = statistics.mean(build_s) * len(variants) + sum(
        statistics.mean(node_s[r]) * n for r, n in per_run.items() if node_s.get(r)
    )
    scaled = len(to_build) < len(variants) or timed_nodes < full_nodes
    return {
        "wall_s": estimate if scaled else measured,
        "measured_s": measured,
        "scaled": scaled,
        "builds_measured": len(to_build),
        "builds_total": len(variants),
        "nodes_measured": timed_nodes,
        "nodes_total": full_nodes,
        "mean_build_s": statistics.mean(build_s),
        "mean_node_s": {r: statistics.mean(v) for r, v in node_s.items()},
        "processes": processes,
    }


def fmt(value, unit="s") -> str:
    return "-" if value is None else f"{value:.1f} {unit}"


def rows_for(cold, warm, patch, base, fix, touched) -> list[tuple[str, str, str]]:
    rows = [
        ("csorch cold wall", fmt(cold["wall_s"]), f"{cold['attempts']} attempts"),
        (
            "child critical path",
            fmt(cold["critical_path_s"]),
            f"chain {cold['chain_s']:.1f} s, child CPU / cores {cold['cpu_bound_s']:.1f} s, "
            f"child wall / jobs {cold['slots_bound_s']:.1f} s",
        ),
        ("orchestration overhead", f"{cold['overhead']:.3f}", f"target <= {TARGET_OVERHEAD}"),
        (
            "child CPU, cold",
            fmt(cold["child_cpu_s"]),
            f"builds {cold['builds_cpu_s']:.1f} s + attempts {cold['attempts_cpu_s']:.1f} s "
            f"of CPU beside {cold['wall_s']:.1f} s of wall (a cluster bills CPU and GPU time)",
        ),
        (
            "csorch warm wall",
            fmt(warm["wall_s"]),
            f"{warm['wall_s'] / cold['wall_s']:.2f} of cold",
        ),
        ("warm rebuilds", str(warm["rebuilds"]), "target 0 (from the bundle)"),
        (
            "patch-only rerun rebuilds",
            ",".join(patch["rebuilt"]) or "none",
            f"target: {fix} only ({touched} changed); {patch['wall_s']:.1f} s, "
            f"{patch['attempts']} attempts",
        ),
    ]
    if base:
        how = (
            f"SCALED: {base['builds_measured']} of {base['builds_total']} builds and "
            f"{base['nodes_measured']} of {base['nodes_total']} node processes timed "
            f"({base['measured_s']:.1f} s), the rest at their means"
            if base["scaled"]
            else f"measured in full, {base['processes']} processes"
        )
        rows += [
            ("naive serial baseline", fmt(base["wall_s"]), how),
            (
                "speedup over baseline",
                f"{base['wall_s'] / cold['wall_s']:.2f}x",
                f"target >= {TARGET_SPEEDUP}x",
            ),
        ]
    for run, p in cold["phases"].items():
        rows.append(
            (
                f"attempt time, run {run}",
                fmt(p["wall_s"]),
                f"{p['launches']} launches: checker start-up {p['startup_s']:.1f}, "
                f"interpreter {p['interpreter_s']:.1f}, collection {p['collection_s']:.1f}, "
                f"first cases {p['first_case_s']:.1f}, other cases {p['other_cases_s']:.1f}, "
                f"exit {p['exit_s']:.1f} s; fixed cost {100 * (p['fixed_share'] or 0):.0f}%",
            )
        )
    return rows


def main(argv=None) -> int:
    args = parse_args(argv)
    args.config = args.config.resolve()
    checkers = backends.probe_checkers()
    facts = host.probe(sys.executable, checkers)
    backend = choose(
        args.backend, gpus=len(facts.gpus), sanitizer=checkers[0], asan=checkers[1]
    ).backend
    work = args.work or Path(tempfile.mkdtemp(prefix="csorch-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    experiment: Experiment = load_experiment(args.config)
    patch_case = args.patch_case or experiment.cases[-1].name
    print(
        f"bench: {args.config.name}, backend {backend}, --jobs {args.jobs}, "
        f"{os.cpu_count()} CPUs, work in {work}",
        flush=True,
    )
    started = time.monotonic()
    cache = work / "cache"
    cold = csorch(args.config, backend, work / "cold", cache, args.jobs)
    print(f"cold: {cold['wall_s']:.1f} s, verdict {cold['verdict']}", flush=True)
    warm = csorch(args.config, backend, work / "warm", cache, args.jobs)
    print(f"warm: {warm['wall_s']:.1f} s, rebuilds {warm['rebuilds']}", flush=True)
    copy, fix, touched = patch_only_config(args.config, work)
    try:
        patch = csorch(copy, backend, work / "patch", cache, args.jobs, (patch_case,))
    finally:
        copy.unlink()
    print(f"patch-only: {patch['wall_s']:.1f} s, rebuilt {patch['rebuilt']}", flush=True)
    base = None
    if not args.skip_baseline:
        base = baseline(args, backend, facts, work / "baseline", cold["nodes"])
        print(f"baseline: {base['wall_s']:.1f} s (measured {base['measured_s']:.1f} s)", flush=True)
    rows = rows_for(cold, warm, patch, base, fix, touched)
    width = max(len(r[0]) for r in rows)
    for name, value, note in rows:
        print(f"  {name:<{width}}  {value:>10}  {note}")
    total = time.monotonic() - started
    print(f"bench: {total:.0f} s in all")
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
        "bench_s": total,
        "cold": {k: v for k, v in cold.items() if k != "nodes"},
        "warm": {k: v for k, v in warm.items() if k != "nodes"},
        "patch_only": {
            **{k: v for k, v in patch.items() if k != "nodes"},
            "fix": fix,
            "changed": touched,
            "case": patch_case,
        },
        "baseline": base,
        "ratios": {
            "overhead": cold["overhead"],
            "warm_over_cold": warm["wall_s"] / cold["wall_s"],
            "warm_rebuilds": warm["rebuilds"],
            "patch_only_rebuilt": patch["rebuilt"],
            "patch_only_ok": patch["rebuilt"] == [fix],
            "speedup_over_baseline": base["wall_s"] / cold["wall_s"] if base else None,
            "baseline_scaled": base["scaled"] if base else None,
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
