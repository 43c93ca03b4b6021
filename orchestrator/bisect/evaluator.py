"""The evaluator of a bisection: one tree in, GOOD / BAD / SKIP out, with its bundle.

A probe builds the tree as one variant of the config (its build description, flags and
patches) and runs only what a target watches under the chosen backend: the runs a
target applies to and the cases its `case` glob names, each repeated N times as the
config says. It goes through `runner.run_experiment`, so a tree that was built before
(the same digest, patches and toolchain) comes from the content-addressed cache, and
every probe leaves an ordinary results bundle, with the decision beside it in
`probe.json`.

The decision counts the config's target signature (expect.target) with the judge's
matching, per checker: BAD when it shows in at least k of N repeats (k = min_hits, by
default N), GOOD when it shows in none and every repeat is conclusive, SKIP otherwise: a
build that fails or a patch that does not apply (an unbuildable commit), an
inconclusive attempt, or 1..k-1 of N (flaky at this commit: neither answer is safe).
Findings other than the target, and failing tests, do not make a commit BAD.
"""

from __future__ import annotations

import contextlib
import dataclasses
import fnmatch
import json
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from orchestrator import backends, files, judge
from orchestrator.bisect import history
from orchestrator.bisect.state import Mark
from orchestrator.bundle import trust
from orchestrator.errors import BundleError, CsorchError, SourceError
from orchestrator.executors.execute import checker_for
from orchestrator.files import atomic_write
from orchestrator.host import Facts
from orchestrator.judge.causality import Hits
from orchestrator.model import (
    Attempt,
    Build,
    Experiment,
    SourceKind,
    SourceSpec,
    TargetPattern,
    Variant,
)
from orchestrator.model.record import Record
from orchestrator.run import runner
from orchestrator.run.events import Listener
from orchestrator.run.options import Options

DECISION = "probe.json"
# /tmp/w/ext/csrc/common/tensor.cpp:29:1: error: expected unqualified-id before 'this'
COMPILER_ERROR_RE = re.compile(
    r"^(?P<file>[^\s:]+):(?P<line>\d+)(?::\d+)?: (?:fatal )?error: (?P<message>.+)$"
)


@dataclass(frozen=True)
class Subject:
    """What every probe of one bisection builds and runs (see `subject`)."""

    experiment: Experiment  # narrowed: one variant, the watched runs and cases, no expect
    variant: str
    targets: tuple[TargetPattern, ...]
    min_hits: int | None
    backend: str  # "asan" or "compute-sanitizer"


@dataclass(frozen=True)
class Evaluation(Record):
    mark: Mark
    reason: str  # one line: why this mark
    commit: str = ""  # "" for a working tree that is not a commit
    digest: str = ""  # the materialized tree's digest ("" when it could not be made)
    build: str = ""  # "built", "cached" or "failed"
    hits: tuple[Hits, ...] = ()
    bundle: Path | None = None
    duration: float = 0.0


def pick_variant(experiment: Experiment, name: str | None) -> Variant:
    """The named variant; else the only one; else the only one that applies no patch
    (the tree as it is at each commit)."""
    names = ", ".join(v.name for v in experiment.variants)
    if name:
        for v in experiment.variants:
            if v.name == name:
                return v
        raise CsorchError(f"the config has no variant {name!r}", hint=f"variants: {names}")
    if len(experiment.variants) == 1:
        return experiment.variants[0]
    plain = [v for v in experiment.variants if not v.patches]
    if len(plain) == 1:
        return plain[0]
    raise CsorchError(
        "cannot tell which variant to build at each commit",
        hint=f"name it with --variant (variants: {names})",
    )


def subject(experiment: Experiment, variant: str | None, backend: str) -> Subject:
    """The one-variant experiment a probe runs; CsorchError when the config cannot be
    bisected under `backend` (no explicit target, or none that this backend can see)."""
    expect = experiment.expect
    if expect is None or not expect.targets:
        raise CsorchError(
            f"{experiment.config}: bisection needs expect.target, the signature to look for",
            hint="e.g. target: {checker: asan, kind: heap-use-after-free, frame: '*nvfp4*'}",
        )
    chosen = pick_variant(experiment, variant)
    targets = expect.targets
    made = backends.named(backend)
    runs = tuple(
        r
        for r in experiment.runs
        if not made.serves(r.checker)
        and any(judge.watches(p, r, checker_for(r, made)) for p in targets)
    )
    if not runs:
        raise CsorchError(
            f"no run of {experiment.name} has a target under the {backend} backend",
            hint="add a target for this backend's checker (checker: asan on the CPU, "
            "memcheck on a GPU), or pick the other backend",
        )
    cases = tuple(
        c
        for c in experiment.cases
        if any(not p.case or fnmatch.fnmatchcase(c.name, p.case) for p in targets)
    )
    if not cases:
        raise CsorchError(f"no case of {experiment.name} matches a target's case glob")
    narrowed = dataclasses.replace(
        experiment,
        source=experiment.source_for(chosen),
        variants=(dataclasses.replace(chosen, source=None),),
        runs=runs,
        cases=cases,
        expect=None,  # the step bundle is not a causality experiment; probe.json decides
    )
    return Subject(narrowed, chosen.name, targets, expect.min_hits, backend)


def locate(
    experiment: Experiment, variant: str, repo: Path | None, subdir: str | None
) -> tuple[str, str]:
    """(repository, subdir) to bisect: --repo and --subdir where given, else from the
    variant's source (a local git source, or a directory inside a work tree)."""
    base = experiment.source_for(experiment.variant(variant))
    root, sub = "", base.subdir
    if base.kind is SourceKind.PATH:
        try:  # where the directory sits in its work tree is the subdir to bisect
            root, sub = history.toplevel(Path(base.location))
        except SourceError:
            if repo is None:
                raise
            sub = ""
    elif Path(base.location).is_dir():
        root = base.location
    elif repo is None:
        raise CsorchError(
            f"the source is a remote repository ({base.location})",
            hint="clone it and pass --repo DIR",
        )
    if repo is not None:
        root = str(Path(repo).resolve())
    return root, sub if subdir is None else subdir.strip("/")


def at_commit(repo: str, sha: str, subdir: str) -> SourceSpec:
    return SourceSpec(SourceKind.GIT, repo, sha, subdir)


def _k(subj: Subject, hits: Hits) -> int:
    return min(subj.min_hits, hits.repeats) if subj.min_hits is not None else hits.repeats


def _unbuilt(bundle: Path, built: Build | None) -> str:
    """Why a tree did not build, in one line: the compiler's first error where the log
    has one (the log's tail is often the build tool's own exit noise), else the error."""
    if built is None:
        return "no build was recorded"
    log = bundle / built.log if built.log else None
    if log is not None and log.is_file():
        with contextlib.suppress(OSError):  # a log that cannot be read names no error
            for line in files.lines(log):
                if m := COMPILER_ERROR_RE.match(line.strip()):
                    where = f"{Path(m['file']).name}:{m['line']}"
                    return f"the build failed: {where}: error: {m['message']}"
    first = (built.error.strip().splitlines() or ["the build failed"])[0]
    if first.startswith("build of variant"):  # its argv is long and in the log already
        return f"the build failed (log: {built.log})"
    return first


def decide(subj: Subject, result: runner.RunResult) -> tuple[Mark, str, tuple[Hits, ...]]:
    """The mark of one probe's run (see the module docstring), with the one-line reason."""
    return decide_records(subj, result.experiment, result.builds, result.attempts, result.bundle)


def decide_records(
    subj: Subject,
    experiment: Experiment,
    builds: Sequence[Build],
    attempts: Sequence[Attempt],
    bundle: Path,
) -> tuple[Mark, str, tuple[Hits, ...]]:
    """`decide` over the records of a run (fresh, or read back from its bundle)."""
    built = builds[0] if builds else None
    if built is None or not built.ok:
        return Mark.SKIP, "untestable: " + _unbuilt(bundle, built), ()
    pairs = judge.target_hits(experiment, subj.targets, list(attempts), subj.variant)
    hits = tuple(h for h, _ in pairs)
    if not pairs:
        return Mark.SKIP, "no target applied to the runs as they ran", ()

    def what(h: Hits) -> str:
        return "the target" if len(pairs) == 1 else f"[{h.target}]"

    for h in hits:
        if h.hits >= _k(subj, h):  # a finding that was printed was found, whatever else
            return Mark.BAD, f"{what(h)} in {h.hits} of {h.repeats} repeats of {h.run}", hits
    if all(h.hits == 0 and h.unknown == 0 for h in hits):
        runs = ", ".join(dict.fromkeys(h.run for h in hits))
        n = max(h.repeats for h in hits)
        return Mark.GOOD, f"no target in {n} repeat(s) of {runs}", hits
    for h, why in pairs:
        if h.unknown:
            return Mark.SKIP, f"inconclusive: {why}", hits
    h = next(h for h in hits if h.hits)  # every repeat conclusive, hits below k
    return (
        Mark.SKIP,
        f"flaky: {what(h)} in {h.hits} of {h.repeats} repeats of {h.run}, {_k(subj, h)} needed",
        hits,
    )


def judged_again(
    subj: Subject, bundle: Path, commit: str, spec: SourceSpec, repeat: int | None
) -> tuple[Mark, str] | str:
    """The mark of a step re-derived from its bundle (read through `bundle.trust` against
    the experiment the probe ran: every digest, the logs re-parsed, complete, of this
    commit), never from probe.json or bisect.json; else why it cannot be."""
    expect = runner.with_repeats(dataclasses.replace(subj.experiment, source=spec), repeat)
    try:
        t = trust.load_trusted(bundle, expect, beside=frozenset({DECISION}))
    except BundleError as exc:
        return exc.message
    if t.records is None or t.reasons:
        return "; ".join(t.reasons) or "its records cannot be read"
    made = [s.commit for s in t.records.sources]
    if made != [commit]:
        return f"its bundle is of commit(s) {', '.join(c[:10] for c in made) or 'none'}"
    mark, reason, _ = decide_records(
        subj, expect, t.records.builds, t.records.attempts, Path(bundle)
    )
    return mark, reason


def fresh_dir(parent: Path, stem: str) -> Path:
    """`parent/stem`, or `stem-2`, `stem-3`... when a previous (interrupted) try left it."""
    path, n = parent / stem, 1
    while path.exists():
        n += 1
        path = parent / f"{stem}-{n}"
    return path


def evaluate(
    subj: Subject,
    spec: SourceSpec,
    options: Options,
    facts: Facts,
    events: Listener | None = None,
) -> Evaluation:
    """Build and run the tree `spec` names; the bundle goes to `options.out`."""
    start = time.monotonic()
    experiment = dataclasses.replace(subj.experiment, source=spec)
    result = runner.run_experiment(experiment, options, facts, events)
    mark, reason, hits = decide(subj, result)
    built = result.builds[0] if result.builds else None
    tree = result.sources[0] if result.sources else None
    commit = (
        tree.commit if tree and tree.commit else (spec.ref if spec.kind is SourceKind.GIT else "")
    )
    evaluation = Evaluation(
        mark=mark,
        reason=reason,
        commit=commit,
        digest=tree.digest if tree else "",
        build="failed" if not built or not built.ok else "cached" if built.cached else "built",
        hits=hits,
        bundle=result.bundle,
        duration=time.monotonic() - start,
    )
    atomic_write(result.bundle / DECISION, json.dumps(evaluation.to_dict(), indent=1))
    return evaluation
