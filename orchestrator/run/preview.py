"""What a run of an experiment would do, without building or running anything: its
variants (source, patches, build kind and what the build would run), runs (the tool that
would watch each one under the chosen backend, or why it would not run), cases (pytest
node ids or argv, with the arguments csorch adds), the attempts count, and the causality
claim. Pure over the loaded experiment and the backend; `csorch check` prints it."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from orchestrator import backends
from orchestrator.executors.execute import checker_for, wants_xdist
from orchestrator.findings import kinds
from orchestrator.model import (
    BuildKind,
    CaseKind,
    CasesFrom,
    Experiment,
    SourceKind,
    SourceSpec,
    Variant,
)
from orchestrator.run import build, buildhelp
from orchestrator.run.plan import plan


@dataclass(frozen=True)
class Preview:
    """The plan as text lines under four headings, and what would stop it."""

    variants: tuple[str, ...]
    runs: tuple[str, ...]
    cases: tuple[str, ...]
    summary: tuple[str, ...]
    problems: tuple[str, ...] = ()  # found without building: a missing patch or script
    # worth a look, not wrong: a target kind no parser gives (a misspelling, most likely)
    warnings: tuple[str, ...] = ()


def _source(spec: SourceSpec) -> str:
    if spec.kind is SourceKind.PATH:
        return spec.location
    sub = f", subdir {spec.subdir}" if spec.subdir else ""
    return f"git {spec.location} at {spec.ref or 'HEAD'}{sub}"


def _build(variant: Variant, spec: SourceSpec, problems: list[str]) -> str:
    """What the variant's build would run; for a directory source, the description found
    (a git source is read at its ref only when materialized)."""
    b = variant.build
    flags = f", flags {' '.join(b.flags)}" if b.flags else ""
    if b.kind is BuildKind.COMMAND:
        outputs = f", outputs {', '.join(b.outputs)}" if b.outputs else ""
        return f"command: {' '.join(b.command)}{outputs}"
    if b.kind is BuildKind.WHEEL:
        return f"wheel: pip wheel of the tree, installed privately{flags}"
    if b.kind is BuildKind.PIP:
        return f"pip: pip install --target of the tree (setup.py or pyproject.toml){flags}"
    if b.kind is BuildKind.PREBUILT:
        release = b.wheel or b.requirement or b.installed
        missing = b.wheel and not Path(b.wheel).is_file()
        if missing:
            problems.append(f"variant {variant.name}: wheel {b.wheel} does not exist")
        return f"prebuilt: {release}, installed unchanged (no patches)"
    if spec.kind is not SourceKind.PATH or spec.subdir:
        return f"jit: {b.description or 'the tree’s only build.py or */build.py'}{flags}"
    tree = Path(spec.location)
    script = build.description(tree, b.description)
    if script is None:
        problems.append(f"variant {variant.name}: {buildhelp.no_description(tree, b.description)}")
        return "jit: no build description found"
    return f"jit: {script.relative_to(tree).as_posix()}{flags}"


def preview(experiment: Experiment, backend: str, reason: str = "") -> Preview:
    """The plan of `experiment` under `backend` ("asan" or "compute-sanitizer")."""
    e = experiment
    problems: list[str] = []
    variants = []
    for v in e.variants:
        spec = e.source_for(v)
        role = e.role(v.name)
        missing = [p for p in v.patches if not Path(p).is_file()]
        problems += [f"variant {v.name}: patch {p} does not exist" for p in missing]
        patches = ", ".join(str(p) for p in v.patches) or "none"
        variants.append(
            f"{v.name}{f' ({role})' if role else ''}: source {_source(spec)}; "
            f"patches {patches}; build {_build(v, spec, problems)}"
        )
    runs, served = [], []
    made = backends.named(backend)
    for r in e.runs:
        why = made.serves(r.checker)
        limit = e.case_timeout_for(r)
        per_case = f", {limit:g} s per case" if limit is not None else ""
        if why:
            runs.append(f"{r.name}: {r.checker.value}: not run under {backend} ({why})")
            continue
        served.append(r.name)
        tool = checker_for(r, made).value
        runs.append(
            f"{r.name}: {r.checker.value} -> watched by {tool}; CSORCH_CHECKER={tool}; "
            f"{e.repeats_for(r)} repeat(s), {e.timeout_for(r):g} s per attempt{per_case}"
        )
    cases = []
    for c in e.cases:
        if c.kind is CaseKind.COMMAND:
            cases.append(f"{c.name}: command {' '.join(c.command)} (in the built tree)")
            continue
        extra = [*e.pytest_args, *c.args_for(backend)]
        added = [] if wants_xdist(extra) else ["-p", "no:xdist"]
        marker = ["-m", c.marker] if c.marker else []
        argv = " ".join([*c.pytest, *added, *marker, *extra])
        cases.append(f"{c.name}: pytest {argv}")
        if e.cases_from is CasesFrom.VARIANT:
            continue  # relative to each variant's tree, which exists once materialized
        problems += [
            f"case {c.name}: {t.partition('::')[0]} does not exist"
            for t in c.pytest
            if not Path(t.partition("::")[0]).exists()
        ]
    jobs = plan(e, runs=served)
    summary = [
        f"backend: {backend}" + (f" ({reason})" if reason else ""),
        f"executor: {e.executor}",
        f"attempts: {len(jobs)} ({len(e.variants)} variant(s) x "
        f"{sum(e.repeats_for(e.run(n)) for n in served)} run repeat(s) x {len(e.cases)} case(s))",
    ]
    if e.expect is None:
        summary.append("expect: none; the variants are tabulated, not judged")
    else:
        x = e.expect
        k = f"{x.min_hits} of N" if x.min_hits else "every"
        summary.append(f"expect: controls {', '.join(x.controls)} show the target in {k} repeat(s)")
        summary.append(f"        fix {x.fix} shows it in none")
        if x.targets:
            summary += [
                "target: " + ", ".join(f"{k}={v}" for k, v in t.to_dict().items() if v)
                for t in x.targets
            ]
        else:
            summary.append(
                "target: none given; the verdict uses what every control reproduces, and the "
                "run prints it as a target: block to paste"
            )
    warnings = [
        f"target {i + 1}: {said}"
        for i, t in enumerate(e.expect.targets if e.expect else ())
        if (said := kinds.unknown(t.kind))
    ]
    return Preview(
        tuple(variants), tuple(runs), tuple(cases), tuple(summary), tuple(problems),
        tuple(warnings),
    )  # fmt: skip
