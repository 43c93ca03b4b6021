import sys, time, os
from orchestrator import host
which = sys.argv[1]
for i in range(5):
    load = open("/proc/loadavg").read().split()[0]
    t = time.perf_counter()
    if which == "after":
        f = host.start(sys.executable); t1 = time.perf_counter(); f.full(); t2 = time.perf_counter()
        print(f"after  rep{i}: fast part {t1-t:.3f} s, full() joined at {t2-t:.3f} s (load {load})")
    else:
        c = host.probe_checkers(); h = host.probe(sys.executable, c); t2 = time.perf_counter()
        print(f"before rep{i}: probe_checkers + probe {t2-t:.3f} s (load {load})")
