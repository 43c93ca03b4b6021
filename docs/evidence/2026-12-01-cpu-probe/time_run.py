"""Interleaved timing of `csorch run` (c-oob, asan) from two trees: cold and warm cache."""
import os, subprocess, sys, time, tempfile, json
from pathlib import Path
PY = "/work/main/.venv/bin/python"
trees = {"before": "/tmp/probe-bench/before", "after": "/work/wt-probe"}
which = sys.argv[1].split(",") if len(sys.argv) > 1 else list(trees)
reps = int(sys.argv[2]) if len(sys.argv) > 2 else 3
config = sys.argv[3] if len(sys.argv) > 3 else "tests/fixtures/e2e/c-oob.yaml"
def load():
    return open("/proc/loadavg").read().split()[0]
rows = []
for rep in range(reps):
    for name in which:
        tree = trees[name]
        tmp = Path(tempfile.mkdtemp(prefix=f"t-{name}-", dir="/tmp/probe-bench"))
        for mode in ("cold", "warm"):
            argv = [PY, "-m", "orchestrator", "run", (config if config.startswith("/") else str(Path(tree) / config)), "--backend", "asan",
                    "--out", str(tmp / mode), "--cache-dir", str(tmp / "cache")]
            l0 = load()
            t = time.monotonic()
            done = subprocess.run(argv, cwd=tmp, capture_output=True, text=True,
                                  env={**os.environ, "PYTHONPATH": tree, "PYTHONDONTWRITEBYTECODE": "1", "COLUMNS": "200"})
            wall = time.monotonic() - t
            res = json.loads((tmp / mode / "results.json").read_text())
            builds = sum(b["duration"] for b in res["builds"] if not b["cached"])
            print(f"{name:6} {mode} rep{rep} wall {wall:6.2f} s exit {done.returncode} builds(sum) {builds:5.2f} load {l0}->{load()}", flush=True)
