#!/usr/bin/env bash
# Installs what tests/e2e/test_run_slurm.py runs a real single-node cluster with: Debian's
# slurmctld, slurmd and slurm-client (sbatch, squeue, sacct, scancel) and munge, and the
# Redis server its nodes share the compile cache through (redis-server). Quick
# when they are there. Not root or no apt (the offline GPU machine, a developer's
# laptop): it says so and the real-Slurm tests skip, unless CSORCH_REQUIRE_SLURM=1
# (CI sets it), where a missing cluster must fail the run instead of skipping.
set -euo pipefail

TOOLS=(slurmctld slurmd sbatch squeue sacct scancel scontrol sinfo munged redis-server)
# the smallest set that gives the tools above (slurm-wlm is these three plus docs)
PKGS=(slurmctld slurmd slurm-client munge redis-server)

missing=()
for tool in "${TOOLS[@]}"; do
  command -v "$tool" >/dev/null 2>&1 || [ -x "/usr/sbin/$tool" ] || missing+=("$tool")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "slurm-deps: present ($(/usr/sbin/slurmctld -V 2>/dev/null || echo slurmctld))"
  exit 0
fi

why=""
if [ "$(id -u)" -ne 0 ]; then
  why="not root"
elif ! command -v apt-get >/dev/null 2>&1; then
  why="no apt-get"
fi
if [ -n "$why" ]; then
  echo "slurm-deps: missing ${missing[*]} and cannot install them ($why);" \
       "the real-Slurm tests will skip (as root: apt-get install ${PKGS[*]})"
  [ "${CSORCH_REQUIRE_SLURM:-0}" = 1 ] && exit 1
  exit 0
fi

echo "slurm-deps: installing ${PKGS[*]} (missing: ${missing[*]})"
export DEBIAN_FRONTEND=noninteractive
# --no-install-recommends: no mail server, no docs; the packages' services are not
# started in a container (policy-rc.d) and the tests start their own daemons anyway
# bounded: on a machine without network (the GPU one) apt must give up quickly
APT_NET=(-o Acquire::Retries=0 -o Acquire::http::Timeout=10 -o Acquire::https::Timeout=10)
if ! { timeout 120 apt-get "${APT_NET[@]}" update -qq && apt-get install -y -qq --no-install-recommends "${PKGS[@]}" >/dev/null; }; then
  # root with apt but offline (the GPU machine): the same as not being able to install
  echo "slurm-deps: apt-get could not install ${PKGS[*]}; the real-Slurm tests will skip"
  [ "${CSORCH_REQUIRE_SLURM:-0}" = 1 ] && exit 1
  exit 0
fi
echo "slurm-deps: $(/usr/sbin/slurmctld -V)"
