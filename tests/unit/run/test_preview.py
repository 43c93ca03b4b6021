"""preview: the plan `csorch check` prints, from real configs (tests/fixtures/e2e and
configs/), and the problems it finds without building."""

from __future__ import annotations

import shutil
from pathlib import Path

from orchestrator.config.experiment import load_experiment
from orchestrator.run.plan import plan
from orchestrator.run.preview import preview

ROOT = Path(__file__).resolve().parents[3]
E2E = ROOT / "tests" / "fixtures" / "e2e"


def test_a_command_subject_under_both_backends() -> None:
    e = load_experiment(E2E / "c-oob.yaml")
    cpu = preview(e, "asan", "no GPU")
    assert cpu.variants[0].startswith(f"fixed (fix): source {E2E / 'cprog'}; patches ")
    assert cpu.variants[0].endswith("fix-oob.patch; build command: make, outputs pick")
    assert cpu.runs[1] == (
        "memcheck: memcheck -> watched by asan; CSORCH_CHECKER=asan; 1 repeat(s), 120 s per attempt"
    )
    assert cpu.cases == ("sum: command ./pick (in the built tree)",)
    assert "attempts: 4 (2 variant(s) x 2 run repeat(s) x 1 case(s))" in cpu.summary
    assert "backend: asan (no GPU)" in cpu.summary and cpu.problems == ()
    gpu = preview(e, "compute-sanitizer")
    assert "watched by memcheck; CSORCH_CHECKER=memcheck" in gpu.runs[1]


def test_qext_jit_descriptions_pytest_args_and_targets() -> None:
    e = load_experiment(ROOT / "configs" / "nvfp4-rng-ownership.yaml")
    p = preview(e, "asan")
    assert p.variants[0].endswith("build jit: qext/build.py")
    assert "build wheel: pip wheel" in p.variants[2]
    test = ROOT / "tests" / "regression" / "test_rng_ownership.py"
    assert p.cases[0] == (f"rng-unfused: pytest {test} -p no:xdist -k not fused --qext-device cpu")
    assert f"attempts: {len(plan(e))} " in " ".join(p.summary)
    assert any(
        line.startswith("target: checker=asan, kind=heap-use-after-free") for line in p.summary
    )


def test_runs_the_backend_cannot_serve_are_named_and_not_counted(tmp_path: Path) -> None:
    text = (
        (E2E / "c-oob.yaml")
        .read_text()
        .replace(
            "  - name: memcheck\n    checker: memcheck\n",
            "  - name: memcheck\n    checker: memcheck\n  - name: race\n    checker: racecheck\n",
        )
    )
    shutil.copytree(E2E / "cprog", tmp_path / "cprog")
    (tmp_path / "fix-oob.patch").write_text((E2E / "fix-oob.patch").read_text())
    (tmp_path / "c.yaml").write_text(text.replace("expect:", "case_timeout: 30s\nexpect:"))
    p = preview(load_experiment(tmp_path / "c.yaml"), "asan")
    assert p.runs[2].startswith("race: racecheck: not run under asan (racecheck has no CPU")
    assert "attempts: 4 " in " ".join(p.summary)
    assert p.runs[0].endswith("120 s per attempt, 30 s per case")


def test_problems_found_without_building(tmp_path: Path) -> None:
    src = tmp_path / "src"
    src.mkdir()
    (src / "setup.py").write_text("")
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_a.py").write_text("def test_a():\n    pass\n")
    (tmp_path / "undo.patch").write_text("")
    (tmp_path / "e.yaml").write_text(
        "name: e\nsource: src\nvariants:\n  - {name: fixed, build: jit}\n"
        "  - {name: control, patches: [undo.patch], build: wheel}\n"
        "runs: [{name: plain, checker: none}]\ncases: [tests/test_a.py]\n"
    )
    e = load_experiment(tmp_path / "e.yaml")
    (tmp_path / "undo.patch").unlink()  # gone after loading
    p = preview(e, "asan")
    assert p.problems[0].startswith("variant fixed: a jit build needs one build description")
    assert "`build: wheel` (pip wheel of the tree's setup.py)" in p.problems[0]
    assert p.problems[1] == f"variant control: patch {tmp_path / 'undo.patch'} does not exist"
    assert "expect: none; the variants are tabulated, not judged" in p.summary
