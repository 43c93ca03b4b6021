"""csorch's plans: a gate's experiments as one plan, and bisection J commits a round.

Run by ``make bench``; every figure comes from this one run on this machine, each step
on an empty build cache of its own:

1. gate: ``csorch gate GATE`` (default configs/release-gate.yaml). Its wall time over
   the longest critical path of one of its experiments, read from that experiment's
   bundle (a variant's build, then its longest attempt; the builds' and attempts' own
   durations). Target <= 1.1: the experiments' builds start together and their
   attempts share one pool, so the gate costs about what its longest experiment does.
2. bisect: a synthetic history of qext (tools/synthetic_history.py: --commits commits,
   the RNG defect at --defect-at, one unbuildable commit) bisected once with one probe a
   round and once with --probes J. Rounds are replayed from the saved marks
   (orchestrator.bisect.state.round_of); the two must name the same first bad commit.
   Targets with J = 3 on 24 commits: <= 3 rounds and <= 60 s.

Each step also gives the children's CPU seconds (builds and launches, from the bundles)
beside its wall time: on a cluster, cost is CPU and GPU time, not wall. The gate's CPU
over the host's cores is a floor no schedule can beat (the cores must do that work), and
so is the first build's end plus the attempts' CPU over the cores (no attempt starts
before a build is done): where the larger exceeds the longest path, the ratio's ceiling
is floor / longest path, printed.

Prints a table and writes JSON (``--json``). ``--skip-gate`` / ``--skip-bisect``.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from orchestrator.bisect.state import Bisection, Mark, round_of  # noqa: E402

TARGET_GATE = 1.1
TARGET_ROUNDS, TARGET_BISECT_S = 3, 60.0


def run(argv: list[str], what: str, log: Path) -> tuple[subprocess.CompletedProcess, float]:
    """Run one csorch command; its output is kept in `log` (beside the work it did)."""
    start = time.monotonic()
    done = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True)
    wall = time.monotonic() - start
    log.write_text(f"$ {' '.join(argv)}\n[{wall:.1f} s, exit {done.returncode}]\n"
                   f"{done.stdout}\n--- stderr\n{done.stderr}")  # fmt: skip
    if done.returncode not in (0, 1, 3):
        raise RuntimeError(f"{what} failed ({done.returncode}), see {log}:\n{done.stderr[-2000:]}")
    return done, wall


def csorch(*args: str) -> list[str]:
    return [sys.executable, "-m", "orchestrator", *args]


def bundle_costs(bundle: Path) -> dict:
    """One bundle's critical path (a variant's build, then its longest attempt) and the CPU
    seconds of its children."""
    results = json.loads((bundle / "results.json").read_text())
    builds = [b for b in results["builds"] if b["ok"]]
    built = {b["variant"]: 0.0 if b["cached"] else b["duration"] for b in builds}
    longest: dict[str, float] = {}
    for a in results["attempts"]:
        d = sum(x["duration"] for x in a["launches"])
        longest[a["variant"]] = max(longest.get(a["variant"], 0.0), d)
    chain = max((built.get(v, 0.0) + d for v, d in longest.items()), default=0.0)
    build_cpu = sum(b["cpu"] for b in builds if not b["cached"])
    attempt_cpu = sum(x["cpu"] for a in results["attempts"] for x in a["launches"])
    return {
        "chain_s": chain,
        "cpu_s": build_cpu + attempt_cpu,
        "build_cpu_s": build_cpu,
        "attempt_cpu_s": attempt_cpu,
        "first_build_s": min((b["duration"] for b in builds if not b["cached"]), default=0.0),
        "verdict": results["verdict"],
    }


def bench_gate(gate: Path, work: Path, backend: str, jobs: int | None = None) -> dict:
    out = work / "gate"
    done, wall = run(
        csorch("gate", str(gate), "--backend", backend, "--out", str(out),
               "--cache-dir", str(work / "cache-gate"),
               *(("--jobs", str(jobs)) if jobs else ())),
        "csorch gate",
        work / "gate.log",
    )  # fmt: skip
    decision = json.loads((out / "gate.json").read_text())
    per = {}
    for bundle in sorted(p.parent for p in out.glob("*/results.json")):
        per[bundle.name] = bundle_costs(bundle)
    longest = max((c["chain_s"] for c in per.values()), default=0.0)
    cpu = sum(c["cpu_s"] for c in per.values())
    # no schedule can end before the longest chain, nor before the host's cores have
    # done all the children's CPU work: the larger of the two is the ceiling of the ratio
    cores = os.cpu_count() or 1
    floor = cpu / cores
    # and no attempt starts before a build has ended (the builds start together)
    first = min((c["first_build_s"] for c in per.values() if c["first_build_s"]), default=0.0)
    floor = max(floor, first + sum(c["attempt_cpu_s"] for c in per.values()) / cores)
    return {
        "wall_s": wall,
        "exit": done.returncode,
        "verdict": decision.get("verdict"),
        "experiments": per,
        "longest_chain_s": longest,
        "ratio": wall / longest if longest else float("nan"),
        "jobs": jobs,
        "child_cpu_s": cpu,
        "build_cpu_s": sum(c["build_cpu_s"] for c in per.values()),
        "attempt_cpu_s": sum(c["attempt_cpu_s"] for c in per.values()),
        "cpu_floor_s": floor,
        "best_ratio": max(1.0, floor / longest) if longest else float("nan"),
    }


def rounds(out: Path, probes: int) -> int:
    """How many rounds the saved bisection took: its marks replayed through round_of."""
    state = json.loads((out / "bisect.json").read_text())["state"]
    saved = Bisection.from_dict(state["bisection"])
    marks = {sha: mark for sha, mark in saved.marks}
    b, n = Bisection(saved.commits, saved.find_fix), 0
    while picks := round_of(b, probes):
        n += 1
        for commit, _ in picks:
            mark = marks.get(commit.sha)
            if mark is None:  # a saved search that stopped early: count what it did
                return n
            b = b.mark(commit.sha, Mark(mark) if not isinstance(mark, Mark) else mark)
    return n


def bench_bisect(work: Path, backend: str, commits: int, defect: int, probes: int) -> dict:
    hist = work / "history"
    made = subprocess.run(
        [sys.executable, str(ROOT / "tools" / "synthetic_history.py"), str(hist),
         "--commits", str(commits), "--defect-at", str(defect)],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    command = made.stdout.strip().splitlines()[-1].split()[1:]  # after "csorch"
    first_bad = re.search(r"\(([0-9a-f]{40})\)", made.stdout).group(1)
    found = {}
    for j in (1, probes):
        out = work / f"bisect-{j}"
        done, wall = run(
            csorch(*command, "--backend", backend, "--out", str(out),
                   "--cache-dir", str(work / f"cache-bisect-{j}"), "--probes", str(j)),
            f"csorch bisect --probes {j}",
            work / f"bisect-{j}.log",
        )  # fmt: skip
        state = json.loads((out / "bisect.json").read_text())["state"]
        steps = state["steps"]
        cpu = sum(
            bundle_costs(out / s["evaluation"]["bundle"])["cpu_s"]
            for s in steps
            if s["evaluation"].get("bundle") and (out / s["evaluation"]["bundle"]).is_dir()
        )
        found[j] = {
            "wall_s": wall,
            "exit": done.returncode,
            "rounds": rounds(out, j),
            "probes_run": len(steps),
            "names_first_bad": first_bad in done.stdout,
            "child_cpu_s": cpu,
        }
    return {"commits": commits, "defect_at": defect, "first_bad": first_bad, "by_probes": found}


def table(rows: list[tuple[str, str, str]]) -> str:
    w = [max(len(r[i]) for r in rows) for i in range(3)]
    return "\n".join(f"{a:<{w[0]}}  {b:>{w[1]}}  {c}" for a, b, c in rows)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--gate", type=Path, default=ROOT / "configs" / "release-gate.yaml")
    p.add_argument("--backend", default="auto")
    p.add_argument("--commits", type=int, default=24)
    p.add_argument("--defect-at", type=int, default=13)
    p.add_argument("--probes", type=int, default=3)
    p.add_argument("--work", type=Path, help="keep the runs here (default: a temp dir)")
    p.add_argument("--gate-jobs", type=int, help="the gate's --jobs (default: csorch's)")
    p.add_argument("--skip-gate", action="store_true")
    p.add_argument("--skip-bisect", action="store_true")
    p.add_argument("--json", type=Path)
    args = p.parse_args(argv)
    work = args.work or Path(tempfile.mkdtemp(prefix="csorch-bench-plan-"))
    work.mkdir(parents=True, exist_ok=True)
    print(f"bench plan: {platform.node()}, {os.cpu_count()} CPUs, work in {work}", flush=True)
    doc: dict = {
        "date": datetime.date.today().isoformat(),
        "machine": {"node": platform.node(), "cpus": os.cpu_count()},
        "commit": subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT,
                                 capture_output=True, text=True).stdout.strip(),
    }  # fmt: skip
    rows: list[tuple[str, str, str]] = []
    failed = []

    def save() -> None:
        if args.json:
            args.json.parent.mkdir(parents=True, exist_ok=True)
            args.json.write_text(json.dumps(doc, indent=1))

    def step(name: str, fn):
        # one step's failure is reported and the other still measured
        try:
            doc[name] = fn()
        except (RuntimeError, OSError, KeyError, ValueError, subprocess.CalledProcessError) as e:
            doc[name] = {"error": str(e)}
            failed.append(name)
            print(f"{name}: {e}", file=sys.stderr)
        save()
        return None if name in failed else doc[name]

    if not args.skip_gate and (
        g := step("gate", lambda: bench_gate(args.gate, work, args.backend, args.gate_jobs))
    ):
        rows += [
            ("gate wall, cold", f"{g['wall_s']:.1f} s", f"{g['verdict']}, exit {g['exit']}"),
            ("longest experiment's path", f"{g['longest_chain_s']:.1f} s",
             ", ".join(f"{k} {v['chain_s']:.1f} s" for k, v in g["experiments"].items())),
            ("gate / longest path", f"{g['ratio']:.2f}", f"target <= {TARGET_GATE}"),
            ("gate child CPU", f"{g['child_cpu_s']:.1f} s",
             f"builds {g['build_cpu_s']:.1f} s, attempts {g['attempt_cpu_s']:.1f} s"),
            ("CPU floor", f"{g['cpu_floor_s']:.1f} s",
             f"best ratio any schedule can reach on this host: {g['best_ratio']:.2f}"),
        ]  # fmt: skip
    if not args.skip_bisect and (
        b := step(
            "bisect",
            lambda: bench_bisect(work, args.backend, args.commits, args.defect_at, args.probes),
        )
    ):
        for j, r in b["by_probes"].items():
            rows.append((
                f"bisect, {j} probe(s) a round", f"{r['wall_s']:.1f} s",
                f"{r['rounds']} rounds, {r['probes_run']} commits probed, first bad "
                f"{'named' if r['names_first_bad'] else 'NOT named'}, child CPU "
                f"{r['child_cpu_s']:.1f} s"
                + (f" (targets <= {TARGET_ROUNDS} rounds, <= {TARGET_BISECT_S:.0f} s)"
                   if j == args.probes and j > 1 else ""),
            ))  # fmt: skip
    if rows:
        print(table(rows))
    if not args.work:
        shutil.rmtree(work, ignore_errors=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
