#!/bin/bash
# H200, one call, from the repository root: `make validate` from an empty build cache with
# every build and attempt sandboxed (the default), then the same with the sandbox off
# (CSORCH_SANDBOX=0) for the time against it, and what the sandbox looks like from inside
# a launch on this host (doctor's line, the namespaces, a read-only home).
export PYTHONUNBUFFERED=1
L=/tmp/sb; mkdir -p $L
t() { local s=$(date +%s); "$@"; local rc=$?; echo "[$(( $(date +%s)-s )) s, rc=$rc] $*"; return $rc; }
t make setup > $L/setup.log 2>&1; tail -2 $L/setup.log
PY=.venv/bin/python; [ -x $PY ] || PY=python3
$PY -m orchestrator doctor > $L/doctor.txt 2>&1; grep -i sandbox $L/doctor.txt
XDG_CACHE_HOME=/tmp/xdg-on t make validate VALIDATE_OUT=/tmp/validate-on > $L/validate-sandboxed.log 2>&1
tail -8 $L/validate-sandboxed.log
XDG_CACHE_HOME=/tmp/xdg-off CSORCH_SANDBOX=0 t make validate VALIDATE_OUT=/tmp/validate-off > $L/validate-unsandboxed.log 2>&1
tail -4 $L/validate-unsandboxed.log
cp /tmp/validate-on/gate.json $L/gate.json 2>/dev/null; cp /tmp/validate-on/report.md $L/report.md 2>/dev/null
grep -rh '"sandbox"' /tmp/validate-on --include=results.json | sort | uniq -c | head -3 > $L/sandbox-facts.txt
# stragglers, setup errors or read-only complaints in any attempt or build log
grep -rlE "straggler|Read-only file system|sandbox:" /tmp/validate-on 2>/dev/null | head -20 > $L/ro-hits.txt
tar czf $OUT/sb.tgz -C /tmp sb; ls -la $OUT
