"""Per build and per attempt of a gate's bundles: start, wall, CPU, launches, phases."""
import json, sys
from pathlib import Path
sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
from orchestrator.markers import reader

out = Path(sys.argv[1])
rows = []
t0 = None
for res in sorted(out.glob("*/results.json")):
    r = json.loads(res.read_text())
    for a in r["attempts"]:
        for L in a["launches"]:
            if L.get("started"):
                t0 = L["started"] if t0 is None else min(t0, L["started"])
for res in sorted(out.glob("*/results.json")):
    b = res.parent
    r = json.loads(res.read_text())
    for x in r["builds"]:
        print(f"{b.name:20} build {x['variant']:9} {x['kind']:5} cached={x['cached']!s:5} "
              f"{x['duration']:6.1f} s cpu {x['cpu']:6.1f} s")
    for a in r["attempts"]:
        for k, L in enumerate(a["launches"]):
            log = b / L["log"]
            with open(log, errors="replace") as f:
                p = reader.phases(f, L["started"], L["duration"])
            fmt = lambda v: "   -" if v is None else f"{v:5.1f}"
            print(f"{b.name:20} {a['variant']:9} {a['run']:8} {a['case']:12} L{k} "
                  f"at {L['started']-t0:5.1f} wall {L['duration']:5.1f} cpu {L['cpu']:6.1f} | "
                  f"start {fmt(p.startup)} interp {fmt(p.interpreter)} coll {fmt(p.collection)} "
                  f"cases {fmt(p.cases)} exit {fmt(p.exit)} n={1+len(p.other_cases) if p.first_case is not None else 0}")
