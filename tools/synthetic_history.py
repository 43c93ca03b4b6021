"""A synthetic git history of qext for `csorch bisect`, and a config to bisect it with.

    python tools/synthetic_history.py OUT [--commits 20] [--defect-at 13] [--unbuildable-at 7]

OUT/repo is a repository whose `ext/` is this checkout's: commit 0 imports it; the
commit at --unbuildable-at breaks the build (fixed in the next one); the commit at
--defect-at applies controls/rng-owner-scope.patch; every other commit appends to NOTES
outside `ext/` (so its tree, and its build, is the same as its parent's). OUT/bisect.yaml
bisects it for the RNG use-after-free: memcheck (compute-sanitizer, no caching, one
unfused shape, `--destroy-on-device-error kernel` so one process runs every test) and
ASan targets, so one config serves both backends. Prints the command to run.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PATCH = ROOT / "controls" / "rng-owner-scope.patch"

CONFIG = """\
# written by tools/synthetic_history.py: bisect builds `tree` at every commit
name: rng-bisect
source: repo/ext
variants:
  - name: tree
    build: {{kind: jit, description: qext/build.py}}
  - name: control
    patches: [{patch}]
    build: {{kind: jit, description: qext/build.py}}
runs:
  - name: memcheck
    checker: memcheck
    options: [--print-limit, "20", --destroy-on-device-error, kernel]
    env: {{PYTORCH_NO_CUDA_MEMORY_CACHING: 1}}
cases:
  - name: rng-unfused
    pytest: {tests}/test_rng_ownership.py
    args: [-k, "not fused and 64x96"]
    backend_args: {{asan: [--qext-device, cpu], compute-sanitizer: [--qext-device, cuda]}}
timeout: 10m
expect:
  controls: [control]
  fix: tree
  target:
    - {{checker: memcheck, kind: invalid-access, access: read, space: global, size: 8,
       frame: "*nvfp4*", case: rng-unfused}}
    - {{checker: asan, kind: heap-use-after-free, access: read, size: 8, frame: "*nvfp4*",
       case: rng-unfused}}
"""


def git(repo: Path, *args: str) -> str:
    done = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True)
    if done.returncode:
        sys.exit(f"git {' '.join(args)}: {done.stderr.strip()}")
    return done.stdout.strip()


def commit(repo: Path, subject: str) -> str:
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", subject)
    return git(repo, "rev-parse", "HEAD")


def make_history(repo: Path, commits: int, defect_at: int, unbuildable_at: int) -> list[str]:
    """Create the repository at `repo` (see the module's docstring); its commits' shas,
    oldest first. tests/e2e/test_bisect_asan.py bisects one made by this."""
    if not 0 < unbuildable_at < defect_at - 1 < commits - 2:
        raise ValueError("need 0 < unbuildable_at < defect_at - 1 < commits - 2")
    repo.mkdir(parents=True)
    git(repo, "init", "-q", "-b", "main")
    git(repo, "config", "user.email", "csorch@example.invalid")
    git(repo, "config", "user.name", "csorch synthetic history")
    ignore = shutil.ignore_patterns("__pycache__", "*.so", "*.o", "build", "dist", "*.egg-info")
    shutil.copytree(ROOT / "ext", repo / "ext", ignore=ignore)
    shas = [commit(repo, "import qext")]
    tensor = repo / "ext" / "csrc" / "common" / "tensor.cpp"
    clean = tensor.read_text()
    for i in range(1, commits):
        if i == unbuildable_at:
            tensor.write_text(clean + "\nthis is not C++\n")
            shas.append(commit(repo, "tensor: a half-finished edit (does not compile)"))
        elif i == unbuildable_at + 1:
            tensor.write_text(clean)
            shas.append(commit(repo, "tensor: finish the edit"))
        elif i == defect_at:
            patch(repo)
            shas.append(commit(repo, "nvfp4: scope the RNG state owners to their branch"))
        else:
            shas.append(note(repo, f"commit {i}"))
    return shas


def patch(repo: Path, *, reverse: bool = False) -> None:
    """Apply (or take back) the RNG owner-scope control in the repository's ext/."""
    argv = ["patch", "-s", "-p1", "-d", "ext"] + (["-R"] if reverse else [])
    with open(PATCH) as f:
        subprocess.run(argv, cwd=repo, stdin=f, check=True)


def note(repo: Path, text: str) -> str:
    """A commit outside ext/: its subject tree, and so its build, is its parent's."""
    with open(repo / "NOTES", "a") as f:
        f.write(text + "\n")
    return commit(repo, f"notes: {text}")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("out", type=Path)
    p.add_argument("--commits", type=int, default=20)
    p.add_argument("--defect-at", type=int, default=13)
    p.add_argument("--unbuildable-at", type=int, default=7)
    args = p.parse_args(argv)
    repo = args.out / "repo"
    if repo.exists():
        p.error(f"{repo} exists")
    try:
        shas = make_history(repo, args.commits, args.defect_at, args.unbuildable_at)
    except ValueError as exc:
        p.error(str(exc).replace("_", "-"))
    config = args.out / "bisect.yaml"
    config.write_text(CONFIG.format(patch=PATCH, tests=ROOT / "tests" / "regression"))
    print(f"{len(shas)} commits in {repo}; the defect at commit {args.defect_at} "
          f"({shas[args.defect_at]}), commit {args.unbuildable_at} unbuildable")
    print(f"csorch bisect {config} --good {shas[0]} --bad main")
    return 0


if __name__ == "__main__":
    sys.exit(main())
