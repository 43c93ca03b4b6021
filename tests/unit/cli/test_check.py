"""`csorch check`: a real config's plan printed, nothing built; config errors and
problems found without building exit 2."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from orchestrator import cli

pytestmark = pytest.mark.process  # the backend choice probes the host's checkers

runner = CliRunner()
ROOT = Path(__file__).resolve().parents[3]
E2E = ROOT / "tests" / "fixtures" / "e2e"


def test_check_prints_the_plan_and_builds_nothing(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    done = runner.invoke(
        cli.app, ["check", str(E2E / "cudabugs-oob-nofix.yaml"), "--backend", "asan"]
    )
    assert done.exit_code == 0, done.output
    assert "variants:\n  fixed (fix): source " in done.output
    assert "build command: make oob_write, outputs oob_write" in done.output
    assert "attempts: 4 (2 variant(s) x 2 run repeat(s) x 1 case(s))" in done.output
    assert "backend: asan (asked for with --backend asan)" in done.output
    assert done.output.rstrip().endswith("config ok: nothing was built")
    assert list(tmp_path.iterdir()) == []


def test_a_config_error_names_file_and_line(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text((E2E / "c-oob.yaml").read_text().replace("source: cprog", "source: nowhere"))
    done = runner.invoke(cli.app, ["check", str(bad), "--backend", "asan"])
    assert done.exit_code == 2 and f"{bad}:5: source" in done.output


def test_a_problem_found_without_building_exits_2(tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "setup.py").write_text("")
    (tmp_path / "e.yaml").write_text(
        "name: e\nsource: src\nvariants: [{name: v, build: jit}]\n"
        "runs: [{name: plain, checker: none}]\ncases: [[./prog]]\n"
    )
    done = runner.invoke(cli.app, ["check", str(tmp_path / "e.yaml"), "--backend", "asan"])
    assert done.exit_code == 2
    assert "error: variant v: a jit build needs one build description" in done.output
    assert "config ok" not in done.output


def test_a_misspelt_target_kind_is_named_with_the_kinds_it_is_close_to(tmp_path: Path) -> None:
    """`heap-overflow` passed check and the run ended INCONCLUSIVE with no hint."""
    config = tmp_path / "c-oob.yaml"
    text = (E2E / "c-oob.yaml").read_text().replace("source: cprog", f"source: {E2E / 'cprog'}")
    text = text.replace("fix-oob.patch", str(E2E / "fix-oob.patch"))
    config.write_text(text.replace("kind: heap-buffer-overflow", "kind: heap-overflow"))
    done = runner.invoke(cli.app, ["check", str(config), "--backend", "asan"])
    assert done.exit_code == 0, done.output  # a glob stays open: a warning, not an error
    assert (
        "warning: target 1: kind 'heap-overflow' is not one csorch's parsers give; did you "
        "mean heap-buffer-overflow" in " ".join(done.output.split())
    )
    right = runner.invoke(cli.app, ["check", str(E2E / "c-oob.yaml"), "--backend", "asan"])
    assert right.exit_code == 0 and "warning" not in right.output
