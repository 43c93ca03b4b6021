"""ASan report floods (issue #14 item 5): what a use-after-free inside a loop costs a run,
with every report printed (csorch before the fold shim) and with the shim.

Two parts, on a CPU machine (`make bench-flood`; not part of `make bench`):

1. the fixture: tests/fixtures/asan/src/flood.c through csorch's executor, as
   `case_flood.py` (two cases of --reads bad reads each, one clean case between them).
   The checker run and the plain run, each without the shim (`Asan(fold=None)`: the checker
   run prints every report; the plain run falls back to ASan's suppress_equal_pcs=1) and
   with it. Per run: seconds, log MB, and the reports csorch counts.
2. qext: the red and the green gate of bench/flood/ (`csorch gate --backend asan`, the
   RNG-ownership experiment cut to two JIT variants and the unfused case; in the red one
   the fix re-reads the freed RNG state once per NVFP4 block: 33,024 bad reads). Wall
   time per gate with the builds cached (--cache-dir; a pass that had to build is run
   again, and the second one counts). --csorch ROOT runs the gates with another checkout of csorch
   (the "before" figures: a checkout without the shim). Skipped with --no-qext, and where
   torch is a CUDA build (qext's ASan path is the CPU machines').

Prints tables and writes JSON (--json).
"""

from __future__ import annotations

import argparse
import datetime
import importlib.util
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from orchestrator.backends import Asan  # noqa: E402
from orchestrator.backends.asan import backend as asan  # noqa: E402
from orchestrator.backends.asan import log as asan_log  # noqa: E402
from orchestrator.executors import execute  # noqa: E402
from orchestrator.model import (  # noqa: E402
    Build,
    BuildKind,
    BuildSpec,
    Case,
    CaseKind,
    Checker,
    Experiment,
    Run,
    SourceKind,
    SourceSpec,
    Variant,
)
from orchestrator.model.job import Job  # noqa: E402

SRC = ROOT / "tests" / "fixtures" / "asan" / "src"
GATES = ROOT / "bench" / "flood"


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--reads", type=int, default=5000, help="bad reads per flooding case")
    p.add_argument("--no-qext", action="store_true", help="the fixture only")
    p.add_argument("--no-fixture", action="store_true", help="the qext gates only")
    p.add_argument("--csorch", type=Path, default=ROOT, help="the csorch checkout for the gates")
    p.add_argument("--cache-dir", type=Path, default=ROOT / "build" / "csorch-cache")
    p.add_argument("--json", type=Path, default=ROOT / "results" / "bench-flood.json")
    return p.parse_args(argv)


def load() -> str:
    return " ".join(f"{x:.1f}" for x in os.getloadavg())


def per_case(findings) -> dict[str, int]:
    """Reports per case (the last part of its node id), folded repeats included."""
    out: dict[str, int] = {}
    for f in findings:
        case = f.case.rsplit("::", 1)[-1]
        out[case] = out.get(case, 0) + f.count
    return out


def fixture(reads: int, work: Path) -> list[dict]:
    """The flood fixture's checker and plain runs, without and with the shim."""
    lib = work / "libflood.so"
    cc = ["gcc", *asan.COMPILE_FLAGS, "-shared", "-fPIC", str(SRC / "flood.c"), "-o", str(lib)]
    subprocess.run(cc, check=True)
    env = (("CSORCH_FIXTURE_LIB", str(lib)), ("FLOOD_N", str(reads)))
    experiment = Experiment(
        name="flood",
        source=SourceSpec(SourceKind.PATH, str(SRC)),
        variants=(Variant("v", BuildSpec(BuildKind.JIT)),),
        runs=(Run("plain", Checker.NONE, env=env), Run("memcheck", Checker.MEMCHECK, env=env)),
        cases=(Case("flood", CaseKind.PYTEST, (str(SRC / "case_flood.py"),)),),
        timeout=3600,
    )
    pkg = work / "pkg"
    pkg.mkdir()
    built = Build("v", BuildKind.JIT, ok=True, directory=work, import_path=pkg, sanitizer="address")
    rows = []
    for folded in (False, True):
        backend = Asan()
        if folded:
            backend.build_fold(work / "fold")
        root = work / ("folded" if folded else "printed")
        (root / "logs").mkdir(parents=True)
        ctx = execute.Context(
            experiment=experiment,
            backend=backend,
            python=sys.executable,
            root=root,
            scratch=root / "cwd",
        )
        for run in ("memcheck", "plain"):
            before = load()
            start = time.monotonic()
            a = execute.execute(Job("v", run, "flood", 0), built, ctx)
            wall = time.monotonic() - start
            logs = [root / launch.log for launch in a.launches]
            with open(logs[0], errors="replace") as lines:
                parsed = asan_log.parse(lines)  # a plain run's reports, read the same way
            rows.append(
                {
                    "shim": folded,
                    "run": run,
                    "seconds": round(wall, 2),
                    "log_mb": round(sum(p.stat().st_size for p in logs) / 1e6, 3),
                    "reports": parsed.summary_count,
                    "printed": len(parsed.findings),
                    "per_case": per_case(parsed.findings) if folded else {},
                    "outcome": a.outcome.value,
                    "conclusive": a.conclusive,
                    "load": before,
                }
            )
    return rows


def gate(name: str, csorch: Path, cache: Path, out: Path) -> dict:
    """`csorch gate bench/flood/qext-NAME.yaml` with the checkout at `csorch`."""
    argv = [sys.executable, "-m", "orchestrator", "gate", str(GATES / f"qext-{name}.yaml")]
    argv += ["--backend", "asan", "--out", str(out), "--cache-dir", str(cache), "--jobs", "1"]
    env = {**os.environ, "PYTHONPATH": str(csorch), "COLUMNS": "200"}
    before = load()
    start = time.monotonic()
    done = subprocess.run(argv, cwd=csorch, env=env, capture_output=True, text=True)
    wall = time.monotonic() - start
    bundle = out / f"qext-flood-{name}"
    results = json.loads((bundle / "results.json").read_text())
    attempts = []
    for a in results["attempts"]:
        with open(bundle / a["log"], errors="replace") as lines:
            parsed = asan_log.parse(lines)  # the plain runs' reports too, read the same way
        attempts.append(
            {
                "variant": a["variant"],
                "run": a["run"],
                "seconds": round(a["duration"], 1),
                "reports": parsed.summary_count,
                "printed": len(parsed.findings),
                "log_mb": round((bundle / a["log"]).stat().st_size / 1e6, 3),
            }
        )
    return {
        "gate": name,
        "exit": done.returncode,
        "wall": round(wall, 1),
        "builds_cached": all(b["cached"] for b in results["builds"]),
        "attempts": attempts,
        "load": before,
    }


def commit(root: Path) -> str:
    out = subprocess.run(
        ["git", "-C", str(root), "rev-parse", "--short", "HEAD"], capture_output=True, text=True
    )
    return out.stdout.strip() or "unknown"


def main(argv=None) -> int:
    args = parse_args(argv)
    report: dict = {
        "date": datetime.date.today().isoformat(),
        "machine": f"{platform.node()}, {os.cpu_count()} cores",
        "commit": commit(ROOT),
        "csorch": str(args.csorch),
    }
    rows = []
    if not args.no_fixture:
        with tempfile.TemporaryDirectory(prefix="bench-flood-") as tmp:
            report["fixture"] = rows = fixture(args.reads, Path(tmp))
        print(f"flood fixture: 2 cases x {args.reads} bad reads + 1 clean case")
        head = ("shim", "run", "seconds", "log MB", "reports", "printed")
        print("{:6} {:9} {:>8} {:>8} {:>8} {:>8}  load".format(*head))
    for r in rows:
        print(
            f"{'yes' if r['shim'] else 'no':6} {r['run']:9} {r['seconds']:8.2f} "
            f"{r['log_mb']:8.3f} {r['reports'] or 0:8d} {r['printed']:8d}  {r['load']}"
        )
    cuda_torch = False
    if importlib.util.find_spec("torch") is not None:
        import torch

        cuda_torch = torch.version.cuda is not None
    if not args.no_qext and not cuda_torch:
        gates = []
        with tempfile.TemporaryDirectory(prefix="bench-flood-gates-") as tmp:
            for name in ("green", "red"):
                timed = gate(name, args.csorch, args.cache_dir, Path(tmp) / name)
                if not timed["builds_cached"]:  # that pass warmed the cache: time another
                    timed = gate(name, args.csorch, args.cache_dir, Path(tmp) / f"{name}-2")
                gates.append(timed)
        report["gates"] = gates
        print(f"qext gates (csorch at {args.csorch}):")
        for g in gates:
            print(f"  {g['gate']:5} exit {g['exit']} wall {g['wall']:7.1f} s  load {g['load']}")
            for a in g["attempts"]:
                print(
                    f"    {a['variant']:7} {a['run']:8} {a['seconds']:7.1f} s "
                    f"{a['log_mb']:9.3f} MB  reports {a['reports']} ({a['printed']} printed)"
                )
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(report, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
