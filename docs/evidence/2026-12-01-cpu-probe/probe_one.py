import sys, time
from orchestrator import host
t = time.perf_counter()
if sys.argv[1] == "after":
    f = host.start(sys.executable); t1 = time.perf_counter(); f.full()
    print(f"after  fast {t1-t:.3f} full {time.perf_counter()-t:.3f}")
else:
    c = host.probe_checkers(); host.probe(sys.executable, c)
    print(f"before full {time.perf_counter()-t:.3f}")
