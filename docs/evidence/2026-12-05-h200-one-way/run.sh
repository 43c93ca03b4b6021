#!/bin/bash
# H200, one call, from the repository root: `make validate` cold after "One way through"
# (the backend interface, the local executor, the run request, the listener and the CLI's
# boundary), then what the host has for the sandbox and compiler-cache work (unshare,
# bwrap, ccache) and whether compute-sanitizer works inside a PID/mount/net namespace.
export PYTHONUNBUFFERED=1
L=/tmp/ow; mkdir -p $L
t() { local s=$(date +%s); "$@"; local rc=$?; echo "[$(( $(date +%s)-s )) s, rc=$rc] $*"; return $rc; }
t make setup > $L/setup.log 2>&1; tail -2 $L/setup.log
git log -1 --format=%h 2>/dev/null
export XDG_CACHE_HOME=/tmp/xdg-validate
t make validate VALIDATE_OUT=/tmp/validate > $L/validate.log 2>&1; tail -6 $L/validate.log
cp /tmp/validate/gate.json /tmp/validate/report.md $L/ 2>/dev/null
{ for x in unshare bwrap ccache nsjail; do printf '%s: ' $x; command -v $x || echo missing; done
  unshare --version 2>&1 | head -1
  unshare --pid --fork --mount-proc --mount --net true && echo "unshare pid+mount+net: ok"
  CS=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
  unshare --pid --fork --mount-proc --mount --net -- "$CS" --tool memcheck \
    python3 -c "import torch; x=torch.ones(4, device='cuda'); print('cuda in the namespace:', float(x.sum()))" 2>&1 | tail -4
} > $L/tools.txt 2>&1; cat $L/tools.txt
tar czf $OUT/ow.tgz -C /tmp ow; ls -la $OUT
