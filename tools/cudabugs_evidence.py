"""Builds cudabugs (the fixed tree, and each control patch applied to its own scratch
copy), runs every program x its checker(s) directly under compute-sanitizer, and
tabulates what the tool itself said: the evidence that csorch's parsed counts are
checked against (issue #10). No csorch code is involved on purpose: python3's standard
library, nvcc and compute-sanitizer only, offline.

    python3 tools/cudabugs_evidence.py OUTDIR [--jobs 16] [--sanitizer PATH] [--arch sm_90]
    python3 tools/cudabugs_evidence.py OUTDIR --build-only      # no GPU: compile only

OUTDIR gets:
  trees/<variant>/        the built trees (fixed, and one per control patch)
  logs/<name>.txt         each run's untrimmed text log (--log-file)
  logs/<name>.xml         the same run repeated with --xml --save (its own process)
  logs/<name>.out         the program's own stdout/stderr
  evidence.tsv            program, variant, checker, options, exit code, ERROR SUMMARY
                          count, the other summary lines, the XML run's exit code, seconds
  versions.txt            nvcc, compute-sanitizer and nvidia-smi as found
Each run has a time limit (--timeout, 60 s); a run past it is killed and recorded as
"timeout". Exit status: 0 when everything was built (and run), 1 when a build or a run
could not be done, 2 for a usage error (such as no compute-sanitizer or GPU without
--build-only). About a minute on a 16-core H200 host: the programs are tiny.
Then `.venv/bin/python tools/cudabugs_counts.py OUTDIR` sets csorch's parse of each log
beside the tool's count (OUTDIR/counts.md).
"""

from __future__ import annotations

import argparse
import concurrent.futures as cf
import os
import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SUBJECT = ROOT / "cudabugs"
DEFAULT_SANITIZER = "/usr/local/cuda/bin/compute-sanitizer"
DEFAULT_NVCC = "/usr/local/cuda/bin/nvcc"

#: program -> the checker runs that show its defect: (tag, tool, options)
RUNS: dict[str, list[tuple[str, str, tuple[str, ...]]]] = {
    "oob_write": [
        ("memcheck", "memcheck", ()),
        ("memcheck-destroy-kernel", "memcheck", ("--destroy-on-device-error", "kernel")),
    ],
    "misaligned": [("memcheck", "memcheck", ())],
    "leak": [
        ("memcheck-leak-full", "memcheck", ("--leak-check", "full")),
        ("memcheck", "memcheck", ()),  # without the leak check: blind to it
    ],
    "uninit": [("initcheck", "initcheck", ())],
    "race": [
        ("racecheck", "racecheck", ()),
        ("racecheck-report-all", "racecheck", ("--racecheck-report", "all")),
        ("racecheck-report-hazard", "racecheck", ("--racecheck-report", "hazard")),
        ("racecheck-report-analysis", "racecheck", ("--racecheck-report", "analysis")),
    ],
    "syncdiv": [("synccheck", "synccheck", ())],
    "api_error": [("memcheck", "memcheck", ())],
}
PROGRAMS = tuple(RUNS)
PRINT_LIMIT = ("--print-limit", "10000")  # printing only: ERROR SUMMARY counts every error

# ========= ERROR SUMMARY: 24 errors
ERROR_SUMMARY_RE = re.compile(r"^=+ ERROR SUMMARY: (?P<count>[\d,]+) errors?$", re.MULTILINE)
# ========= RACECHECK SUMMARY: 1 hazard displayed (1 error, 0 warnings)
# ========= LEAK SUMMARY: 4096 bytes leaked in 1 allocations
OTHER_SUMMARY_RE = re.compile(r"^=+ (?P<line>(?:RACECHECK|LEAK) SUMMARY: .*)$", re.MULTILINE)
COLUMNS = (
    "program",
    "variant",
    "checker",
    "options",
    "exit_code",
    "error_summary",
    "other_summaries",
    "xml_exit_code",
    "seconds",
    "log",
)


@dataclass(frozen=True)
class Job:
    program: str
    variant: str  # "fixed" or "control"
    tag: str
    tool: str  # a compute-sanitizer tool, or "none" for the plain run
    options: tuple[str, ...]

    @property
    def name(self) -> str:
        return f"{self.program}.{self.variant}.{self.tag}"


def _run(argv: list[str], *, cwd: Path, log: Path, timeout: float) -> tuple[str, float]:
    """(exit code or "timeout", seconds); the child's output goes to `log`."""
    start = time.monotonic()
    with open(log, "wb") as out:
        child = subprocess.Popen(
            argv, cwd=cwd, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )
        try:
            code = str(child.wait(timeout=timeout))
        except subprocess.TimeoutExpired:
            os.killpg(child.pid, 9)  # the whole group: compute-sanitizer and the program
            child.wait()
            code = "timeout"
    return code, time.monotonic() - start


def _tree(out: Path, variant: str, patch: Path | None) -> Path:
    """A scratch copy of cudabugs/ with `patch` applied (its own git repo, so that
    `git apply` cannot resolve paths against an enclosing checkout)."""
    tree = out / "trees" / variant
    shutil.rmtree(tree, ignore_errors=True)
    shutil.copytree(SUBJECT, tree, ignore=shutil.ignore_patterns(*PROGRAMS, "*.o"))
    if patch is not None:
        subprocess.run(["git", "init", "-q", str(tree)], check=True)
        subprocess.run(["git", "-C", str(tree), "apply", str(patch)], check=True)
    return tree


def build(out: Path, arch: str, jobs: int, nvcc: str) -> dict[str, Path]:
    """variant -> built tree: "fixed" (every program), and each program's control."""
    trees = {"fixed": _tree(out, "fixed", None)}
    for program in PROGRAMS:
        trees[program] = _tree(out, program, SUBJECT / "controls" / f"{program}.patch")
    # the host's own CFLAGS & co. stay out: this is the tool's evidence, built one way
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("CFLAGS", "CXXFLAGS", "LDFLAGS", "NVCC_APPEND_FLAGS", "CSORCH_SANITIZE")
    }
    (out / "build").mkdir(parents=True, exist_ok=True)

    def make(variant: str) -> tuple[str, str]:
        targets = list(PROGRAMS) if variant == "fixed" else [variant]
        argv = [
            "make",
            "-C",
            str(trees[variant]),
            f"ARCH={arch}",
            f"NVCC={nvcc}",
            "-j",
            str(len(targets)),
            *targets,
        ]
        with open(out / "build" / f"{variant}.log", "wb") as log:
            done = subprocess.run(argv, stdout=log, stderr=subprocess.STDOUT, env=env)
        return variant, "ok" if done.returncode == 0 else f"exit {done.returncode}"

    with cf.ThreadPoolExecutor(max(1, jobs // 2)) as pool:
        results = dict(pool.map(make, trees))
    failed = {v: r for v, r in results.items() if r != "ok"}
    if failed:
        for variant, why in failed.items():
            print(
                f"build of {variant} failed ({why}): see {out}/build/{variant}.log", file=sys.stderr
            )
        raise SystemExit(1)
    return trees


def plan() -> list[Job]:
    jobs = []
    for program, runs in RUNS.items():
        for variant in ("fixed", "control"):
            jobs.append(Job(program, variant, "plain", "none", ()))
            jobs += [Job(program, variant, tag, tool, opts) for tag, tool, opts in runs]
    return jobs


def _summaries(text: str) -> tuple[str, str]:
    counts = [m["count"].replace(",", "") for m in ERROR_SUMMARY_RE.finditer(text)]
    others = [m["line"] for m in OTHER_SUMMARY_RE.finditer(text)]
    return ("+".join(counts) if counts else "missing"), " | ".join(others)


def execute(job: Job, tree: Path, sanitizer: str, logs: Path, timeout: float) -> dict[str, str]:
    program = f"./{job.program}"
    if job.tool == "none":
        code, seconds = _run([program], cwd=tree, log=logs / f"{job.name}.out", timeout=timeout)
        return {
            "program": job.program,
            "variant": job.variant,
            "checker": "none",
            "options": "",
            "exit_code": code,
            "error_summary": "",
            "other_summaries": "",
            "xml_exit_code": "",
            "seconds": f"{seconds:.1f}",
            "log": f"{job.name}.out",
        }
    text, xml = logs / f"{job.name}.txt", logs / f"{job.name}.xml"
    common = [sanitizer, "--tool", job.tool, *PRINT_LIMIT, *job.options]
    code, seconds = _run(
        [*common, "--log-file", str(text), program],
        cwd=tree,
        log=logs / f"{job.name}.out",
        timeout=timeout,
    )
    xml_code, _ = _run(
        [*common, "--xml", "--save", str(xml), program],
        cwd=tree,
        log=logs / f"{job.name}.xml.out",
        timeout=timeout,
    )
    content = text.read_text(errors="replace") if text.exists() else ""
    errors, others = _summaries(content)
    return {
        "program": job.program,
        "variant": job.variant,
        "checker": job.tool,
        "options": " ".join(job.options),
        "exit_code": code,
        "error_summary": errors,
        "other_summaries": others,
        "xml_exit_code": xml_code,
        "seconds": f"{seconds:.1f}",
        "log": text.name,
    }


def _version(argv: list[str]) -> str:
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"$ {' '.join(argv)}\n{exc}\n"
    return f"$ {' '.join(argv)}\n{done.stdout}{done.stderr}\n"


def _tool(requested: str | None, name: str, default: str) -> str | None:
    """The tool as asked for, else on PATH, else at the CUDA toolkit's usual place."""
    for candidate in (requested, shutil.which(name), default):
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    return None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 4)
    parser.add_argument("--sanitizer", help=f"default: on PATH, else {DEFAULT_SANITIZER}")
    parser.add_argument("--nvcc", help=f"default: on PATH, else {DEFAULT_NVCC}")
    parser.add_argument("--arch", default="sm_90")
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds per run")
    parser.add_argument("--build-only", action="store_true", help="compile, run nothing")
    args = parser.parse_args(argv)
    out = args.out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    sanitizer = _tool(args.sanitizer, "compute-sanitizer", DEFAULT_SANITIZER)
    nvcc = _tool(args.nvcc, "nvcc", DEFAULT_NVCC)
    if nvcc is None:
        print("nvcc not found (give --nvcc PATH)", file=sys.stderr)
        return 2
    if not args.build_only:
        if sanitizer is None:
            print(
                "compute-sanitizer not found (give --sanitizer PATH, or --build-only)",
                file=sys.stderr,
            )
            return 2
        if not Path("/dev/nvidiactl").exists():
            print(
                "no GPU visible (no /dev/nvidiactl); --build-only compiles only",
                file=sys.stderr,
            )
            return 2
    start = time.monotonic()
    trees = build(out, args.arch, args.jobs, nvcc)
    print(f"built {len(trees)} trees in {time.monotonic() - start:.0f}s under {out}/trees")
    if args.build_only:
        return 0
    (out / "versions.txt").write_text(
        _version([nvcc, "--version"])
        + _version([sanitizer, "--version"])  # type: ignore[list-item]
        + _version(["nvidia-smi", "-L"])
    )
    logs = out / "logs"
    logs.mkdir(exist_ok=True)
    jobs = plan()
    tree_of = {job: trees["fixed" if job.variant == "fixed" else job.program] for job in jobs}
    with cf.ThreadPoolExecutor(args.jobs) as pool:
        futures = [
            pool.submit(execute, j, tree_of[j], sanitizer, logs, args.timeout)  # type: ignore[arg-type]
            for j in jobs
        ]
        rows = [f.result() for f in futures]
    lines = ["\t".join(COLUMNS)] + ["\t".join(r[c] for c in COLUMNS) for r in rows]
    (out / "evidence.tsv").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    print(f"{len(rows)} runs, {time.monotonic() - start:.0f}s in all; {out}/evidence.tsv")
    incomplete = [r for r in rows if r["checker"] != "none" and r["error_summary"] == "missing"]
    for r in incomplete:
        print(f"no ERROR SUMMARY: {r['log']}", file=sys.stderr)
    return 1 if incomplete or any(r["exit_code"] == "timeout" for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
