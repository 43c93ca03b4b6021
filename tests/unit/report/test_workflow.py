"""report.workflow: GitHub Actions annotations of real ASan bundles: the verdict first (an
error on FAIL, a warning on INCONCLUSIVE), each finding at the file and line SARIF gives
it, and nothing a subject prints can end an annotation early or forge one."""

from __future__ import annotations

from orchestrator import bundle
from orchestrator.report import workflow


def lines(path) -> list[str]:
    return workflow.render(*bundle.read(path)).splitlines()


def test_a_failing_fix_is_an_error_on_its_line(cprog_bundles) -> None:
    said = lines(cprog_bundles["fail"])
    assert said[0].startswith("::error title=csorch c-oob-nofix%3A FAIL::fix fixed still shows")
    (fixed,) = [s for s in said[1:] if "in fixed" in s]
    assert fixed.startswith("::error file=tests/fixtures/e2e/cprog/pick.c,line=")
    (control,) = [s for s in said[1:] if "in control" in s]
    assert control.startswith("::notice file=tests/fixtures/e2e/cprog/pick.c,line=9,")


def test_pass_and_inconclusive_verdicts(cprog_bundles) -> None:
    assert lines(cprog_bundles["pass"])[0].startswith("::notice title=csorch c-oob%3A PASS::")
    first = lines(cprog_bundles["inconclusive"])[0]
    assert first.startswith("::warning title=csorch c-oob-badpatch%3A INCONCLUSIVE::")


def test_text_cannot_end_an_annotation_or_forge_one() -> None:
    made = workflow.command("error", "50%\r\n::error::forged", file="a,b:c.c", line=3)
    assert made == "::error file=a%2Cb%3Ac.c,line=3::50%25%0D%0A::error::forged"
    assert "\n" not in made


def test_a_test_outcome_target_is_annotated_by_its_case(cprog_bundles, tmp_path) -> None:
    """An experiment whose target is a test outcome (`outcome: failed`, as qext's noop
    experiment has): its SARIF results name no checker, and the annotations were a
    KeyError (seen on a GPU host's gate bundle)."""
    from unit.report.test_markdown import edited

    def outcome_target(results: dict) -> None:
        target = results["experiment"]["expect"]["targets"][0]
        target.update({k: "" for k in ("checker", "kind", "access", "function")}, outcome="failed")
        for a in results["attempts"]:
            if a["run"] == "plain":
                a["outcome"] = "failed"

    path = edited(cprog_bundles["pass"], tmp_path, outcome_target)
    lines = workflow.render(*bundle.read(path)).splitlines()
    cases = [line for line in lines if "%3A case sum in " in line]  # the title, escaped
    assert cases and all(" in fixed" in c or " in control" in c for c in cases), lines
