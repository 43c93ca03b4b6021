"""Builds the fixed tree and each control, runs the regression cases plainly and under a
checker, and tabulates outcomes and checker error counts per case.

A by-hand evidence script for the controls (issue #4), kept small: `csorch run` does this
properly (caching, bundles, verdicts). Usage::

    python tools/control_evidence.py --out results/evidence-cpu --checker asan
    python tools/control_evidence.py --out $OUT --checker memcheck --device cuda
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

from orchestrator.backends.asan import backend as asan

ROOT = Path(__file__).resolve().parents[1]
VARIANTS = {
    "fixed": None,
    "rng-owner-scope": ROOT / "controls" / "rng-owner-scope.patch",
    "noop-double-swizzle": ROOT / "controls" / "noop-double-swizzle.patch",
}
CASES = ["tests/regression/test_rng_ownership.py", "tests/regression/test_noop_replay.py"]
MEMCHECK_GROUPS = {"rng-256x128-fused": "rng and 256x128", "rng-64x96": "rng and 64x96",
                   "rng-32x256": "rng and 32x256", "rng-160x48": "rng and 160x48",
                   "noop": "noop"}
# Which groups each control is about (the fixed tree runs all of them).
GROUP_OF = {"rng-owner-scope": "rng", "noop-double-swizzle": "noop"}
BEGIN_RE = re.compile(r"^\[csorch-case-begin\] (\S+)")
OUTCOME_RE = re.compile(r"^\[csorch-case-outcome\] (\S+) (\w+)")
# "==123== ERROR: AddressSanitizer: heap-use-after-free on address ..."
ASAN_RE = re.compile(r"^==\d+==ERROR: AddressSanitizer: (\S+)")
# "========= Invalid __global__ read of size 8 bytes"
MEMCHECK_RE = re.compile(r"^========= (Invalid __\w+__ \w+|Program hit \w+)")
SUMMARY_RE = re.compile(r"^========= ERROR SUMMARY: ([\d,]+) errors?$")


def run(argv, log: Path, env=None, cwd=ROOT) -> tuple[int, float]:
    t0 = time.time()
    with open(log, "wb") as f:
        rc = subprocess.call(argv, stdout=f, stderr=subprocess.STDOUT, env=env, cwd=cwd)
    return rc, time.time() - t0


def parse(log: Path) -> tuple[dict, int | None]:
    cases: dict[str, dict] = {}
    current = None
    summary = None
    for line in log.read_text(errors="replace").splitlines():
        if m := BEGIN_RE.match(line):
            current = cases.setdefault(m[1], {"outcome": "?", "errors": 0, "kinds": {}})
        elif m := OUTCOME_RE.match(line):
            cases.setdefault(m[1], {"outcome": "?", "errors": 0, "kinds": {}})["outcome"] = m[2]
        elif (m := ASAN_RE.match(line) or MEMCHECK_RE.match(line)) and current is not None:
            current["errors"] += 1
            current["kinds"][m[1]] = current["kinds"].get(m[1], 0) + 1
        elif m := SUMMARY_RE.match(line):
            summary = int(m[1].replace(",", ""))
    return cases, summary


def trim(log: Path, keep: list[str], dest: Path) -> None:
    """Writes the log's head, the whole sections of the `keep` cases, and its tail."""
    text = log.read_text(errors="replace")
    lines = text.splitlines(keepends=True)
    out, inside = [], None
    started = False
    for line in lines:
        m = BEGIN_RE.match(line)
        if m:
            started = True
            inside = any(m[1].endswith(k) for k in keep)
        if not started or inside:
            out.append(line)
        if line.startswith("[csorch-case-end]"):
            inside = False
    last_end = text.rfind("[csorch-case-end]")
    out.append(text[text.index("\n", last_end) + 1:])
    dest.write_text("".join(out))


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--checker", choices=("asan", "memcheck"), required=True)
    p.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    p.add_argument("--variants", nargs="*", default=list(VARIANTS))
    p.add_argument("--work", type=Path, default=ROOT / "build" / "evidence")
    p.add_argument("--groups", nargs="*", choices=list(MEMCHECK_GROUPS),
                   help="memcheck: only these case groups")
    p.add_argument("--trim", nargs="+", metavar="CASE",
                   help="only trim OUT's checker logs to these cases into OUT/trimmed/")
    a = p.parse_args()
    if a.trim:
        (a.out / "trimmed").mkdir(exist_ok=True)
        for log in a.out.glob(f"*-{a.checker}.log"):
            if "-build-" in log.name:
                continue
            trim(log, a.trim, a.out / "trimmed" / log.name)
        return 0
    a.out.mkdir(parents=True, exist_ok=True)
    src = a.work / "src"
    py = sys.executable
    base_env = dict(os.environ)
    asan_env = {}
    if a.checker == "asan":
        asan_env = {"LD_PRELOAD": str(asan.find_runtime()), "ASAN_OPTIONS": asan.merge_options()}
    pytest = [py, "-m", "pytest", *CASES, "-p", "orchestrator.markers.plugin", "-s",
              "-q", "-p", "no:cacheprovider", f"--qext-device={a.device}"]
    table = {}
    for name in a.variants:
        # One source path for all variants, so ninja rebuilds only what a patch touches.
        if src.exists():
            shutil.rmtree(src / "csrc")
        # Fresh mtimes (shutil.copy, not copy2): a file restored from a patched state
        # must look newer than its object, or ninja keeps the patched build.
        shutil.copytree(ROOT / "ext", src, dirs_exist_ok=True, copy_function=shutil.copy,
                        ignore=shutil.ignore_patterns("_C*.so", "__pycache__"))
        if VARIANTS[name]:
            subprocess.check_call(["patch", "-p1", "--quiet", "-d", str(src), "-i",
                                   str(VARIANTS[name])])
        builds = {"plain": (None, {})}
        if a.checker == "asan":
            builds["asan"] = ("address", asan_env)
        pkgs = {}
        for kind, (sanitize, extra) in builds.items():
            pkg = a.work / f"pkg-{kind}" / name
            argv = [py, str(src / "qext" / "build.py"), "--root", str(src), "--build-dir",
                    str(a.work / f"build-{kind}"), "--package-dir", str(pkg)]
            if sanitize:
                argv += ["--sanitize", sanitize]
            rc, secs = run(argv, a.out / f"{name}-build-{kind}.log", {**base_env, **extra})
            print(f"{name}: {kind} build rc={rc} in {secs:.0f} s", flush=True)
            if rc:
                print((a.out / f"{name}-build-{kind}.log").read_text()[-3000:])
                return 1
            pkgs[kind] = pkg
        env = {**base_env, "PYTHONPATH": f"{pkgs['plain']}:{ROOT / 'tests' / 'regression'}"}
        rc, secs = run(pytest, a.out / f"{name}-plain.log", env)
        plain, _ = parse(a.out / f"{name}-plain.log")
        print(f"{name}: plain rc={rc} in {secs:.0f} s", flush=True)
        if a.checker == "asan":
            regression = ROOT / "tests" / "regression"
            env = {**env, **asan_env, "PYTHONPATH": f"{pkgs['asan']}:{regression}"}
            argv = pytest
        groups = {"all": None}
        if a.checker == "memcheck":
            env = {**env, "PYTORCH_NO_CUDA_MEMORY_CACHING": "1"}
            # One process per group: a faulting kernel can take the context down, and
            # the ERROR SUMMARY of each process then counts one group's errors.
            groups = {g: k for g, k in MEMCHECK_GROUPS.items()
                      if (name == "fixed" or g.startswith(GROUP_OF[name]))
                      and (not a.groups or g in a.groups)}
        table[name] = {"plain_rc": rc, "groups": {}, "cases": {}}
        for group, k in groups.items():
            argv = pytest + (["-k", k] if k else [])
            if a.checker == "memcheck":
                argv = ["compute-sanitizer", "--tool", "memcheck", "--print-limit", "20",
                        "--destroy-on-device-error", "kernel", *argv]
            log = a.out / f"{name}-{a.checker}{'' if group == 'all' else '-' + group}.log"
            crc, csecs = run(argv, log, env)
            checked, summary = parse(log)
            print(f"{name}/{group}: {a.checker} rc={crc} in {csecs:.0f} s, summary={summary}",
                  flush=True)
            table[name]["groups"][group] = {"rc": crc, "summary": summary, "cases": len(checked)}
            for c, v in checked.items():
                table[name]["cases"][c] = {"plain": plain.get(c, {}).get("outcome", "missing"),
                                           "checked": v["outcome"], "errors": v["errors"],
                                           "kinds": v["kinds"], "group": group,
                                           "group_summary": summary}
    (a.out / "evidence.json").write_text(json.dumps(table, indent=2))
    lines = ["| case | " + " | ".join(table) + " |", "|---" * (len(table) + 1) + "|"]
    all_cases = sorted({c for v in table.values() for c in v["cases"]})
    for c in all_cases:
        cells = []
        for v in table.values():
            r = v["cases"].get(c)
            cells.append("not run" if r is None else
                         f"{r['plain']} / {r['checked']}, {r['errors']} err")
        lines.append(f"| {c.split('::')[-1]} | " + " | ".join(cells) + " |")
    for group in next(iter(table.values()))["groups"]:
        lines.append(f"| ERROR SUMMARY ({group}) | " + " | ".join(
            str(v["groups"].get(group, {}).get("summary")) for v in table.values()) + " |")
    (a.out / "evidence.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
