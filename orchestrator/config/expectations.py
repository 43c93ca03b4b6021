"""The `expect:` block of an experiment config: which variants are the controls, which
is the fix, k of N (`min_hits`), and the target patterns. Checked against the
experiment it belongs to (variant and run names, the repeats each target's runs have);
errors name the file, line and key like the rest of `config`.
"""

from __future__ import annotations

from orchestrator.config.nodes import View
from orchestrator.config.schema import EXPECT, SIGNATURE_KEYS, TARGET
from orchestrator.model import Checker, Expectations, Experiment, Outcome, TargetPattern


def expectations(view: View, experiment: Experiment) -> Expectations:
    """The `expect:` block of `experiment`'s config, checked against its variants and runs."""
    f = view.mapping(EXPECT)
    names = {v.name for v in experiment.variants}
    controls_view, fix_view = f.require("controls"), f.require("fix")
    controls_items = list(controls_view.items()) if controls_view.is_list else [controls_view]
    controls: list[str] = []
    for item in controls_items:
        name = item.text("a variant name")
        if name not in names:
            raise item.error(f"no variant named '{name}'; variants: {', '.join(sorted(names))}")
        if name in controls:
            raise item.error(f"'{name}' is listed twice")
        controls.append(name)
    if not controls:
        raise controls_view.error("needs at least one control variant")
    fix = fix_view.text("a variant name")
    if fix not in names:
        raise fix_view.error(f"no variant named '{fix}'; variants: {', '.join(sorted(names))}")
    if fix in controls:
        raise fix_view.error(f"'{fix}' cannot be both a control and the fix")
    target = f.get("target")
    target_views = (list(target.items()) if target.is_list else [target]) if target else []
    targets = tuple(_target(t, experiment) for t in target_views)
    min_hits_view = f.get("min_hits")
    min_hits = min_hits_view.integer(minimum=1) if min_hits_view else None
    checked: list[tuple[View, TargetPattern | None]] = list(zip(target_views, targets, strict=True))
    for t_view, pattern in checked or [(view, None)]:
        runs = [r for r in experiment.runs if pattern is None or pattern.applies_to(r)]
        if not runs:
            watched = (
                "plain runs (checker: none)"
                if pattern and pattern.outcome
                else "runs with a checker"
            )
            raise t_view.error(
                f"this target watches {watched}, and the experiment has none",
                hint="add such a run, or name one with 'run:'",
            )
        for run in runs:
            n = experiment.repeats_for(run)
            if min_hits is not None and min_hits > n:
                raise min_hits_view.error(  # type: ignore[union-attr]
                    f"min_hits {min_hits} exceeds the {n} repeat(s) of run '{run.name}'"
                )
    return Expectations(tuple(controls), fix, min_hits, targets)


def _target(view: View, experiment: Experiment) -> TargetPattern:
    f = view.mapping(TARGET)
    values: dict[str, object] = {}
    for key in SIGNATURE_KEYS + ("case",):
        item = f.get(key)
        if item is not None:
            values[key] = item.integer(minimum=0) if key == "size" else item.text()
    checker = f.get("checker")
    if checker is not None:
        checker.choice([c.value for c in Checker if c is not Checker.NONE])
    run = f.get("run")
    if run is not None:
        values["run"] = run.text("a run name")
        if values["run"] not in {r.name for r in experiment.runs}:
            raise run.error(f"no run named '{values['run']}'")
    outcome = f.get("outcome")
    if outcome is not None:
        values["outcome"] = Outcome(outcome.choice([Outcome.FAILED.value, Outcome.ERROR.value]))
        mixed = [k for k in SIGNATURE_KEYS if k in values]
        if mixed:
            raise outcome.error(
                f"an outcome target cannot also match findings ({mixed[0]})",
                hint="give two targets instead",
            )
    if not values or set(values) <= {"run", "case"}:
        raise view.error(
            "a target needs at least one signature key or 'outcome'",
            hint="signature keys: " + ", ".join(SIGNATURE_KEYS),
        )
    return TargetPattern(**values)  # type: ignore[arg-type]
