"""The tool's own counts against csorch's: for every checker run that
`tools/cudabugs_evidence.py OUTDIR` recorded, the `ERROR SUMMARY` compute-sanitizer
printed beside what csorch's parser makes of the same untrimmed log (records, records
not printed, kinds, culprit functions), as a Markdown table (issue #10: "every row
equal"). Run it with the project's Python, after the evidence script:

    .venv/bin/python tools/cudabugs_counts.py OUTDIR [--output OUTDIR/counts.md]

A row is equal when csorch's records plus the unprinted ones equal the tool's count.
Exit 0 when every row is equal, 1 otherwise, 2 when OUTDIR has no evidence.tsv.
"""

from __future__ import annotations

import argparse
import csv
import re
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from orchestrator.backends.compute_sanitizer import log as cs_log  # noqa: E402
from orchestrator.findings.signatures import signature  # noqa: E402
from orchestrator.model import Checker  # noqa: E402

# RACECHECK SUMMARY: 257 hazards displayed (257 errors, 0 warnings)   (the evidence's column)
RACE_SUMMARY_RE = re.compile(
    r"RACECHECK SUMMARY: (?P<count>[\d,]+) hazards? displayed "
    r"\((?P<errors>\d+) errors?, (?P<warnings>\d+) warnings?\)"
)
HEADER = (
    "| program | variant | checker | options | exit | tool's summary | csorch records "
    "| not printed | csorch kinds | functions | equal |\n"
    "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"
)


def row(evidence: dict[str, str], logs: Path) -> tuple[str, bool]:
    """One Markdown row for one checker run, and whether its counts agree."""
    log = logs / evidence["log"]
    lines = log.read_text(errors="replace").splitlines() if log.exists() else []
    parsed = cs_log.parse(lines, checker=Checker(evidence["checker"]))
    tool = evidence["error_summary"]
    # racecheck prints no ERROR SUMMARY: its count is the RACECHECK SUMMARY's
    race = RACE_SUMMARY_RE.search(evidence.get("other_summaries", ""))
    if tool == "missing" and race:
        tool = race["count"].replace(",", "")
        split = tuple(int(race[k]) for k in ("errors", "warnings"))
        if parsed.summary_split is not None and tuple(parsed.summary_split) != split:
            tool += f" (split {split[0]}/{split[1]} != csorch's)"
    ours = parsed.records + parsed.not_printed
    equal = tool.isdigit() and parsed.complete and int(tool) == ours
    kinds: Counter[str] = Counter()
    functions: Counter[str] = Counter()
    for f in parsed.findings:  # folded: each finding counts the records it stands for
        kinds[f.kind] += f.count
        functions[signature(f).function or "?"] += f.count
    cells = (
        evidence["program"],
        evidence["variant"],
        evidence["checker"],
        evidence["options"] or "-",
        evidence["exit_code"],
        tool,
        str(parsed.records) if parsed.complete else f"{parsed.records} (incomplete)",
        str(parsed.not_printed),
        ", ".join(f"{k} x{n}" for k, n in sorted(kinds.items())) or "-",
        ", ".join(f"{k} x{n}" for k, n in sorted(functions.items())) or "-",
        "yes" if equal else "**no**",
    )
    return "| " + " | ".join(cells) + " |", equal


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", type=Path, help="the evidence script's OUTDIR")
    parser.add_argument("--output", type=Path, help="default: OUTDIR/counts.md")
    args = parser.parse_args(argv)
    tsv = args.out / "evidence.tsv"
    if not tsv.is_file():
        print(f"{tsv}: no such file; run tools/cudabugs_evidence.py first", file=sys.stderr)
        return 2
    with open(tsv, newline="") as f:
        runs = [r for r in csv.DictReader(f, delimiter="\t") if r["checker"] != "none"]
    rows = [row(r, args.out / "logs") for r in runs]
    text = "\n".join([HEADER, *(line for line, _ in rows)]) + "\n"
    output = args.output or args.out / "counts.md"
    output.write_text(text)
    print(text, end="")
    unequal = sum(not ok for _, ok in rows)
    print(f"{len(rows) - unequal} of {len(rows)} rows equal; {output}")
    return 1 if unequal else 0


if __name__ == "__main__":
    sys.exit(main())
