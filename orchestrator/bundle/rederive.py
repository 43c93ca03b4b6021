"""What results.json says, derived again from the logs on disk: every attempt's findings
re-parsed with its backend's parser and compared with the record, and every attempt's
logs against the logs the bundle holds.

A manifest only proves that the files are the ones it lists; someone who edits
results.json can recompute its digest. The logs are the evidence: a FAIL turned PASS by
deleting the fix's findings from results.json, while its log still holds the report, is
caught here, and so is an attempt removed from results.json (its log is then claimed by
no attempt) or one added (its log is not in the bundle). Reads files; prints nothing.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from orchestrator import backends, judge
from orchestrator.backends import Backend, channel
from orchestrator.bundle import trees
from orchestrator.bundle.layout import LOGS, RESULTS
from orchestrator.bundle.read import Records, records
from orchestrator.carry import caseforms, optouts
from orchestrator.errors import CsorchError
from orchestrator.executors import slurm
from orchestrator.files import read_json
from orchestrator.findings.signatures import fingerprint, signature
from orchestrator.judge import optouts as judge_optouts
from orchestrator.model import Attempt, CasesFrom, Checker, ParseResult, Verdict

T = TypeVar("T")


@dataclass(frozen=True)
class Problem:
    """Something results.json claims that its logs do not bear out."""

    path: str  # the log (or results.json), relative to the bundle
    subject: str  # the variant
    detail: str


def _parse(backend: Backend, attempt: Attempt, root: Path, k: int, log: Path) -> ParseResult:
    """Launch `k`'s checker records parsed again, from the checker's own channel (the
    files beside its output log: `backends.channel`), read by the method the executor
    read them with."""
    env = dict(attempt.launches[k].env) if k < len(attempt.launches) else {}
    return backend.read(root / channel.prefix_for(log, k), attempt.checker, env)


def _tally(parse: ParseResult) -> Counter[str]:
    out: Counter[str] = Counter()
    for f in parse.findings:
        out[fingerprint(signature(f))] += f.count
    return out


def _said(parse: ParseResult) -> str:
    n = sum(f.count for f in parse.findings)
    return (
        f"{n} finding(s) in {len(_tally(parse))} signature(s), summary "
        f"{parse.summary_count}, {'complete' if parse.complete else 'incomplete'}"
    )


def _attempt(root: Path, backend: Backend, attempt: Attempt) -> Problem | None:
    """The attempt's record against its logs parsed again (None: they agree)."""
    if attempt.checker is Checker.NONE or attempt.parse is None or not attempt.launches:
        return None  # a plain run's outcome is its exit status; no findings to re-derive
    parses = [
        _parse(backend, attempt, root, k, Path(launch.log))
        for k, launch in enumerate(attempt.launches)
    ]
    again, recorded = channel.merge(parses), attempt.parse
    same = (
        _tally(again) == _tally(recorded)
        and again.summary_count == recorded.summary_count
        and again.complete == recorded.complete
        and again.not_printed == recorded.not_printed
    )
    if same:
        return None
    return Problem(
        str(attempt.launches[0].log),
        attempt.variant,
        f"results.json records {_said(recorded)}; its log holds {_said(again)}: "
        "results.json was edited after the run",
    )


def _verdict(results: Mapping[str, Any], recs: Records) -> list[Problem]:
    """The verdict results.json records against its attempts judged again."""
    if recs.judgement is None:
        return []
    again = judge.judged(recs.experiment, recs.attempts, recs.builds)
    said = {recs.judgement.verdict.value, str(results.get("verdict"))}
    if said == {again.verdict.value}:
        return []
    return [
        Problem(RESULTS, "", f"results.json records the verdict {' / '.join(sorted(said))}; "
                f"its attempts, judged again, give {again.verdict.value}")
    ]  # fmt: skip


def _kept_trees(root: Path, recs: Records) -> tuple[dict[str, trees.Stored], list[Problem]]:
    """The tree the bundle keeps of each variant that built, read once for every check
    below, and a problem for each that cannot be read; a variant without one (a bundle of
    a csorch that kept no trees) has none to read."""
    kept: dict[str, trees.Stored] = {}
    out = []
    for build in recs.builds:
        rel = trees.relpath(build.variant)
        if not build.ok or not os.path.lexists(root / rel):
            continue
        try:
            kept[build.variant] = trees.load(root, build.variant)
        except trees.TreeError as exc:
            out.append(Problem(rel, build.variant, str(exc)))
    return kept, out


def _read_again(variant: str, read: Callable[[], T], out: list[Problem]) -> T | None:
    """`read()` of a variant's kept tree; None, and a problem, where a kept file is not
    the one its listing names."""
    try:
        return read()
    except trees.TreeError as exc:
        out.append(Problem(trees.relpath(variant), variant, str(exc)))
        return None


def _opt_outs(recs: Records, kept: Mapping[str, trees.Stored]) -> list[Problem]:
    """Each build's checker opt-outs against its tree as the bundle keeps it: the files
    kept are read again (carry/optouts.py). Read by the rules the run used, what
    results.json records of them must be what they hold. Read by other rules (an older
    csorch's, or a record that claims so), the bundle is not called edited, but a PASS
    whose fix adds an opt-out by this csorch's rules does not stand. A file not kept
    cannot be read again."""
    out: list[Problem] = []
    again: dict[str, tuple[str, ...]] = {}
    for build in recs.builds:
        tree = kept.get(build.variant) if build.ok else None
        if tree is None:
            continue
        found = _read_again(
            build.variant,
            lambda tree=tree: tuple(
                sorted(
                    m
                    for path in sorted(tree.kept)
                    if optouts.readable(path)
                    for m in optouts.marks(path, tree.read(path) or b"")
                )
            ),
            out,
        )
        if found is None:
            continue
        again[build.variant] = found
        if build.opt_out_rules != optouts.RULES:
            continue
        said = tuple(
            sorted(m for m in build.opt_outs if m.partition(" ")[2].rpartition(":")[0] in tree.kept)
        )
        if found != said:
            extra = sorted(set(found) - set(said)) or sorted(set(said) - set(found))
            out.append(
                Problem(RESULTS, build.variant, f"results.json records {len(said)} checker "
                        f"opt-out(s) in the kept files of variant {build.variant}'s tree; the "
                        f"files hold {len(found)} ({extra[0]} differs): results.json was "
                        "edited after the run")
            )  # fmt: skip
    expect = recs.experiment.expect
    older = any(b.ok and b.opt_out_rules != optouts.RULES for b in recs.builds)
    passed = recs.judgement is not None and recs.judgement.verdict is Verdict.PASS
    if expect is not None and older and passed:
        for reason in judge_optouts.reasons(expect.fix, expect.controls, again):
            out.append(
                Problem(RESULTS, expect.fix, f"read by this csorch's opt-out rules, "
                        f"{reason}; the recorded PASS does not stand")
            )  # fmt: skip
    return out


def _case_forms(recs: Records, kept: Mapping[str, trees.Stored]) -> list[Problem]:
    """Under `cases_from: variant`, each build's own case files (carry/caseforms.py) read
    again from its tree as the bundle keeps it: the listing names every file and its
    digest, the kept sources give a Python file's AST (one not kept is not compared)."""
    if recs.experiment.cases_from is not CasesFrom.VARIANT:
        return []
    out: list[Problem] = []
    for build in recs.builds:
        tree = kept.get(build.variant) if build.ok else None
        if tree is None:
            continue
        forms = _read_again(
            build.variant,
            lambda tree=tree: caseforms.forms(recs.experiment, tree.listing, tree.read),
            out,
        )
        if forms is None:
            continue
        again = dict(f.rpartition(" ")[::2] for f in forms)
        said = dict(f.rpartition(" ")[::2] for f in build.case_forms)
        differ = sorted(
            p
            for p in said.keys() | again.keys()
            if said.get(p) != again.get(p)
            and not (p in said and p in again and not again[p].startswith(caseforms.AST))
        )
        if differ:
            out.append(
                Problem(RESULTS, build.variant, f"results.json records variant "
                        f"{build.variant}'s own test files as {len(said)} file(s); its kept "
                        f"tree holds {len(again)} ({differ[0]} differs): results.json was "
                        "edited after the run")
            )  # fmt: skip
    return out


def problems(root: Path | str, listed: set[str]) -> list[Problem]:
    """Where results.json and the logs (`listed` by the manifest) disagree."""
    root = Path(root)
    try:
        results: Mapping[str, Any] = read_json(root / RESULTS)
        recs = records(results, root / RESULTS)
    except CsorchError as exc:
        return [Problem(RESULTS, "", str(exc.message))]
    # the backend the run recorded, to read its channel again (None: no checker csorch knows)
    backend = backends.reader(str((results.get("backend") or {}).get("name") or ""))
    out: list[Problem] = []
    claimed: set[str] = set()
    for build in recs.builds:
        if build.log is not None:
            claimed.add(Path(build.log).as_posix())
    for attempt in recs.attempts:
        if attempt.placement is not None and attempt.placement.executor == "slurm":
            # Slurm's output of every try (a retried task has one per try)
            for tried in attempt.placement.tries or (attempt.placement.job_id,):
                claimed.add(slurm.output_log(attempt.variant, tried.split(" ", 1)[0].rstrip(":")))
        for k, launch in enumerate(attempt.launches):
            rel = Path(launch.log).as_posix()
            claimed.add(rel)
            # its checker's channel and its case markers, beside the output log
            prefix = channel.prefix_for(Path(launch.log), k)
            claimed.update(p.relative_to(root).as_posix() for p in channel.files_of(root / prefix))
            markers = prefix.with_name(prefix.name.removesuffix(".checker") + ".markers")
            claimed.add(markers.as_posix())
            if k:
                done = Path(launch.log).with_suffix(".done")
                claimed.add(done.as_posix())
            if rel not in listed:
                out.append(
                    Problem(rel, attempt.variant, "results.json names a log the bundle does "
                            "not hold: an attempt added to results.json, or its log removed")
                )  # fmt: skip
    for rel in sorted(listed - claimed):
        if rel.startswith(LOGS + "/"):
            out.append(
                Problem(rel, "", "a log no attempt in results.json claims: an attempt removed "
                        "from results.json")
            )  # fmt: skip
    kept, unread = _kept_trees(root, recs)
    out += _verdict(results, recs) + unread + _opt_outs(recs, kept) + _case_forms(recs, kept)
    if backend is None:
        return out
    for attempt in recs.attempts:
        if all(Path(x.log).as_posix() in listed for x in attempt.launches):
            found = _attempt(root, backend, attempt)
            if found is not None:
                out.append(found)
    return out
