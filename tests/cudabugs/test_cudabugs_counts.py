"""tools/cudabugs_counts.py: the tool's ERROR SUMMARY (as the evidence script scraped it)
against csorch's parse of the same log, one Markdown row per checker run. Uses the
hand-written grammar logs (tests/fixtures/compute-sanitizer/grammar) until the H200's
real cudabugs logs exist."""

from __future__ import annotations

import importlib.util
import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
GRAMMAR = ROOT / "tests" / "fixtures" / "compute-sanitizer" / "grammar"


def _load(name: str):
    spec = importlib.util.spec_from_file_location(name, ROOT / "tools" / f"{name}.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


counts = _load("cudabugs_counts")
evidence = _load("cudabugs_evidence")
COLUMNS = "\t".join(evidence.COLUMNS)


def _evidence_dir(tmp: Path, rows: list[tuple[str, str, str, str | None]]) -> Path:
    """An OUTDIR as the evidence script leaves it: (program, checker, grammar log, the
    ERROR SUMMARY to claim, or None to scrape it as the script does)."""
    (tmp / "logs").mkdir(parents=True)
    lines = [COLUMNS]
    for program, checker, log, claimed in rows:
        name = f"{program}.control.{checker}.txt"
        shutil.copyfile(GRAMMAR / log, tmp / "logs" / name)
        scraped, others = evidence._summaries((GRAMMAR / log).read_text())
        cells = [program, "control", checker, "", "1", claimed or scraped, others, "1", "2.0"]
        lines.append("\t".join([*cells, name]))
    lines.append("\t".join(["race", "control", "none", "", "0", "", "", "", "0.1", "x.out"]))
    (tmp / "evidence.tsv").write_text("\n".join(lines) + "\n")
    return tmp


def test_equal_and_unequal_rows(tmp_path: Path) -> None:
    out = _evidence_dir(
        tmp_path,
        [
            ("leak", "memcheck", "leak.log", None),
            ("oob_write", "memcheck", "memcheck-print-limit.log", None),  # 2 + 4,096 unprinted
            ("uninit", "initcheck", "initcheck.log", "2"),  # a count the log does not hold
            ("race", "racecheck", "no-summary.log", None),
        ],
    )
    assert counts.main([str(out)]) == 1
    table = (out / "counts.md").read_text().splitlines()
    assert table[0].startswith("| program | variant | checker |")
    rows = {line.split(" | ")[0].strip("| "): line for line in table[2:]}
    assert set(rows) == {"leak", "oob_write", "uninit", "race"}  # the plain run is no row
    assert rows["leak"].endswith("| 1 | 1 | 0 | leak x1 | make_workspace x1 | yes |")
    assert "| 4098 | 2 | 4096 |" in rows["oob_write"] and rows["oob_write"].endswith("yes |")
    assert rows["uninit"].endswith("**no** |")
    assert "| missing |" in rows["race"] and rows["race"].endswith("**no** |")


def test_every_row_equal_exits_0_and_no_evidence_exits_2(tmp_path: Path) -> None:
    out = _evidence_dir(tmp_path / "a", [("syncdiv", "synccheck", "synccheck.log", None)])
    assert counts.main([str(out), "--output", str(tmp_path / "t.md")]) == 0
    assert (tmp_path / "t.md").read_text().count("| yes |") == 1
    assert counts.main([str(tmp_path / "empty")]) == 2
