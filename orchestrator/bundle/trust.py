"""A stored bundle, read the one way every reader reads it (`compare --from`, `gate --from`,
a gate's own bundles after it ran or resumed, `report`, `verify`): `load_trusted`.

It believes nothing the bundle says about itself:
- verify: every digest re-hashed, no symlink and no unlisted file anywhere, no empty
  digest, every attempt's findings re-parsed from its logs and compared with results.json,
  the attempts against the logs on disk (`bundle/verify.py`, `bundle/rederive.py`);
- completeness: the run finished (not interrupted) and every planned attempt (variant x
  run x case x repeat) is there;
- identity, when the experiment it should be is given (the config as loaded now, or a
  gate's): the same name, the same config file (its sha256), every case and run of the
  config, at least its repeats; completeness is then against that experiment, so a
  one-repeat bundle cannot stand for a config of three, nor a `--case` subset for all;
- the config file the manifest names, when no experiment is given and the file is still
  there (unchanged: verify checks its sha256): the experiment copied into results.json
  must be that file's (narrowed by the run's own `--case` and `--repeat`), so a case
  removed from the copy, every digest recomputed, is named, not judged. Absent, the copy
  is all there is, and `against` says so.
Anything short is a reason; a reader that has reasons may show the bundle, never a
verdict from it (INCONCLUSIVE). Damaged JSON is a reason naming the file and the key,
not a traceback. `stated` is the one line every reader prints first: tampered, signed
(by whom) or unsigned. Reads files; prints nothing.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from orchestrator.bundle.layout import (
    MANIFEST,
    MANIFEST_SCHEMA,
    RESULTS,
    RESULTS_SCHEMA,
    SIGNATURE,
)
from orchestrator.bundle.read import Records, records
from orchestrator.bundle.verify import FAILING, Status, Verification, verify
from orchestrator.config.experiment import load_experiment, only_cases
from orchestrator.errors import BundleError, CsorchError
from orchestrator.files import CONFIG, file_digest, loads, open_regular, read_json
from orchestrator.model import Experiment, Verdict
from orchestrator.model.experiment import MAX_REPEATS

#: how many of one kind of problem a reason names before it counts the rest
_SHOWN = 3


@dataclass(frozen=True)
class Trusted:
    """A bundle as read back, and every reason not to judge from it (none: trusted)."""

    root: Path
    results: dict[str, Any] | None  # None: results.json could not be read
    manifest: dict[str, Any] | None
    records: Records | None  # None: results.json's records could not be read back
    verification: Verification | None  # None: the manifest could not be read
    reasons: tuple[str, ...]
    expected: Experiment | None = None  # the experiment it was checked against
    against: str = ""  # what it was judged against, in words ("": the experiment given)
    tampered: tuple[str, ...] = ()  # its experiment is not its config file's

    @property
    def ok(self) -> bool:
        return not self.reasons

    @property
    def statement(self) -> str:
        """The line a reader prints first: tampered, signed (by whom) or unsigned."""
        return stated(self.verification, self.tampered)

    @property
    def experiment(self) -> Experiment | None:
        """What to judge the attempts against: the experiment expected, else the bundle's."""
        if self.expected is not None:
            return self.expected
        return self.records.experiment if self.records is not None else None


def _few(items: Sequence[str]) -> str:
    shown = ", ".join(items[:_SHOWN])
    return shown + (f" and {len(items) - _SHOWN} more" if len(items) > _SHOWN else "")


def _verified(v: Verification, beside: frozenset[str] = frozenset()) -> list[str]:
    bad = [
        c
        for c in v.checks
        if c.status in FAILING and not (c.status is Status.UNLISTED and c.path in beside)
    ]
    if not bad:
        return []
    first = bad[0]
    return [
        f"does not verify ({len(bad)} problem(s)), first: {first.kind.value} {first.path} "
        f"{first.status.value}" + (f": {first.detail}" if first.detail else "")
    ]


def _complete(results: dict[str, Any], manifest: dict[str, Any] | None) -> list[str]:
    if results.get("interrupted"):
        return ["is incomplete (interrupted)"]
    if not results.get("complete") or (manifest is not None and not manifest.get("complete")):
        return ["is incomplete (it never finished)"]
    return []


def planned(experiment: Experiment) -> list[tuple[str, str, str, int]]:
    """Every (variant, run, case, repeat) the experiment plans."""
    return [
        (v.name, r.name, c.name, k)
        for v in experiment.variants
        for r in experiment.runs
        for c in experiment.cases
        for k in range(experiment.repeats_for(r))
    ]


def _missing(recs: Records, experiment: Experiment) -> list[str]:
    have = {(a.variant, a.run, a.case, a.repeat) for a in recs.attempts}
    gone = [f"{v}/{r}/{c}/r{k}" for v, r, c, k in planned(experiment) if (v, r, c, k) not in have]
    if not gone:
        return []
    return [f"lacks {len(gone)} planned attempt(s): {_few(gone)}"]


def _identity(recs: Records, manifest: dict[str, Any] | None, expect: Experiment) -> list[str]:
    got = recs.experiment
    if got.name != expect.name:
        return [f"is of experiment {got.name!r}, not {expect.name!r}"]
    reasons = []
    config = expect.config
    recorded = str(((manifest or {}).get("config") or {}).get("sha256") or "")
    if config is not None and Path(config).is_file():
        now = file_digest(Path(config), CONFIG)
        if recorded != now:
            reasons.append(
                f"was made from another version of {config} (sha256 {recorded[:12] or 'none'}, "
                f"the file now {now[:12]})"
            )
    for what, mine, theirs in (
        ("variant", [v.name for v in expect.variants], {v.name for v in got.variants}),
        ("run", [r.name for r in expect.runs], {r.name for r in got.runs}),
        ("case", [c.name for c in expect.cases], {c.name for c in got.cases}),
    ):
        lacking = [n for n in mine if n not in theirs]
        if lacking:
            reasons.append(f"did not run the config's {what}(s) {_few(lacking)}")
    runs = {r.name: r for r in got.runs}
    for run in expect.runs:
        if run.name in runs and got.repeats_for(runs[run.name]) < expect.repeats_for(run):
            reasons.append(
                f"ran {got.repeats_for(runs[run.name])} repeat(s) of run '{run.name}', "
                f"the config asks for {expect.repeats_for(run)}"
            )
    return reasons


#: what an unsigned bundle proves, and what it does not
UNSIGNED = "consistent, but anyone who can write could have re-hashed it"


def stated(v: Verification | None, tampered: Sequence[str] = ()) -> str:
    """One line on the evidence's authenticity, for a bundle or a gate's directory:
    "tampered" (a digest, a file, a signature or the experiment does not hold up), else
    "signed by WHO" (a good signature over the manifest), else "unsigned"."""
    if v is None:
        return "evidence: tampered: its manifest cannot be read"
    bad = [c for c in v.checks if c.status in FAILING]
    if bad or tampered:
        first = (
            f"{bad[0].kind.value} {bad[0].path} {bad[0].status.value}"
            + (f": {bad[0].detail}" if bad[0].detail else "")
            if bad
            else tampered[0]
        )
        count = len(bad) + len(tampered)
        return f"evidence: tampered ({count} problem(s)), first: {first}"
    for c in v.checks:
        if c.path == SIGNATURE and c.status is Status.OK:
            return f"evidence: {c.detail}"
    return f"evidence: unsigned: {UNSIGNED}"


#: a run's own narrowing (`--case`) is read from its journal's first line, the begin
#: line (small: its settings and command)
_JOURNAL, _BEGIN_BOUND = "journal.jsonl", 1 << 20
_COPY = "judged from the experiment copied into results.json"


def _selected(root: Path) -> tuple[str, ...]:
    """The `--case` names the run was started with (its journal's begin line; () none)."""
    try:
        with open_regular(root / _JOURNAL) as f:
            begin = loads(f.readline(_BEGIN_BOUND).decode("utf-8"))
        cases = begin["settings"]["cases"]
    except (OSError, ValueError, KeyError, TypeError):
        return ()
    return tuple(str(c) for c in cases) if isinstance(cases, list) else ()


def _configured(
    root: Path, results: dict[str, Any], manifest: dict[str, Any] | None
) -> tuple[Experiment | None, str]:
    """The experiment to judge the bundle against when no one names it (the config file
    its manifest names, narrowed as the run narrowed it), and what that was, in words.
    None: only the copy in results.json is there to judge from."""
    recorded = (manifest or {}).get("config") or {}
    where = str(recorded.get("path") or "") if isinstance(recorded, dict) else ""
    if not where:
        return None, f"no config file recorded (a scan): {_COPY}"
    command = (manifest or {}).get("command") or []
    if isinstance(command, list) and any(v in command[1:2] for v in ("bisect", "probe")):
        return None, f"a bisection's step (one variant of {where}): {_COPY}"
    path = Path(where)
    if not path.is_file():
        return None, f"its config file {where} is not there: {_COPY}"
    try:
        if file_digest(path, CONFIG) != str(recorded.get("sha256") or ""):
            return None, f"its config file {where} changed since the run: {_COPY}"
        loaded = load_experiment(path)
        cases = [c for c in _selected(root) if any(k.name == c for k in loaded.cases)]
        loaded = only_cases(loaded, cases)
    except (OSError, CsorchError) as exc:
        why = exc.message if isinstance(exc, CsorchError) else str(exc)
        return None, f"its config file {where} cannot be loaded ({why}): {_COPY}"
    said = f"judged against its config file {where}"
    if cases:
        said += f" (the run asked only for the case(s) {_few(cases)}: --case)"
    repeat = _repeat(results)
    if repeat is not None and not _odd_repeat(repeat):
        runs = tuple(dataclasses.replace(r, repeats=None) for r in loaded.runs)
        loaded = dataclasses.replace(loaded, repeats=repeat, runs=runs)
        said += f" (--repeat {repeat})"
    return loaded, said


def _repeat(results: dict[str, Any]) -> Any:
    options = results.get("options")
    return options.get("repeat") if isinstance(options, dict) else None


def _odd_repeat(repeat: Any) -> list[str]:
    """results.json's `--repeat` when it is none csorch takes (a count of 1 to
    MAX_REPEATS): a bound the config file would be narrowed by, never believed (a
    billion repeats is a billion attempts planned by every reader)."""
    if repeat is None:
        return []
    if isinstance(repeat, int) and not isinstance(repeat, bool) and 1 <= repeat <= MAX_REPEATS:
        return []
    return [f"records --repeat {repeat!r} in results.json's options: not a count csorch takes "
            f"(1 to {MAX_REPEATS:,})"]  # fmt: skip


def _differs(got: Experiment, want: Experiment) -> list[str]:
    """How the experiment copied into results.json differs from its config file's."""
    config = str(want.config or want.name)
    mine, theirs = want.to_dict(), got.to_dict()
    found = []
    for key in dict.fromkeys([*mine, *theirs]):
        if mine.get(key) == theirs.get(key):
            continue
        if key not in ("variants", "runs", "cases"):
            found.append(f"its {key}")
            continue
        want_of = {x["name"]: x for x in mine.get(key) or []}
        got_of = {x["name"]: x for x in theirs.get(key) or []}
        what = key[:-1]
        if gone := [n for n in want_of if n not in got_of]:
            found.append(f"no {what}(s) {_few(gone)}")
        if added := [n for n in got_of if n not in want_of]:
            found.append(f"{what}(s) {_few(added)} the config does not have")
        if changed := [n for n in want_of if n in got_of and want_of[n] != got_of[n]]:
            found.append(f"its {what}(s) {_few(changed)} changed")
    if not found:
        return []
    return [f"holds an experiment that is not its config file {config}'s: " + "; ".join(found)]


def load_trusted(
    path: Path | str,
    expect: Experiment | None = None,
    allowed: Path | None = None,
    identity: str | None = None,
    beside: frozenset[str] = frozenset(),
) -> Trusted:
    """The bundle at `path` with every reason not to trust it (see the module's doc);
    BundleError only when `path` is no bundle at all (no directory, no results.json).
    `allowed` (an allowed-signers file, `identity` in it when given) requires a good
    signature over its manifest (`csorch run --sign`). `beside`: files a later stage
    writes into the bundle, not unlisted for that (a bisection's probe.json, which its
    reader re-derives rather than believes)."""
    root = Path(path)
    if not root.is_dir():
        raise BundleError(
            root,
            f"not a directory (no {RESULTS}, no {MANIFEST})",
            hint="give what `csorch run --out` wrote",
        )
    if not (root / RESULTS).exists() and not (root / MANIFEST).exists():
        raise BundleError(
            root, f"no {RESULTS}, no {MANIFEST}", hint="give what `csorch run --out` wrote"
        )
    reasons: list[str] = []
    results = manifest = None
    recs = None
    verification = None
    try:
        results = read_json(root / RESULTS, RESULTS_SCHEMA)
        recs = records(results, root / RESULTS)
    except CsorchError as exc:
        reasons.append(f"cannot be read: {exc.message}")
    try:
        manifest = read_json(root / MANIFEST, MANIFEST_SCHEMA)
        verification = verify(root, allowed, identity)
    except CsorchError as exc:
        reasons.append(f"cannot be verified: {exc.message}")
    if verification is not None:
        reasons += _verified(verification, beside)
    if results is not None:
        reasons += _complete(results, manifest)
    against, tampered = "", []
    if recs is not None and results is not None:
        if expect is not None:
            reasons += _identity(recs, manifest, expect)
        else:
            expect, against = _configured(root, results, manifest)
            tampered = _odd_repeat(_repeat(results))
            tampered += _differs(recs.experiment, expect) if expect is not None else []
            reasons += tampered
        reasons += _missing(recs, expect or recs.experiment)
    return Trusted(
        root,
        results,
        manifest,
        recs,
        verification,
        tuple(dict.fromkeys(f"bundle {root} {r}" for r in reasons)),
        expect,
        against,
        tuple(tampered),
    )


def shown(t: Trusted) -> dict[str, Any]:
    """results.json as a report should show it: as recorded when trusted, else with the
    verdict INCONCLUSIVE and the reasons first (a report never calls evidence conclusive
    that does not hold up)."""
    assert t.results is not None
    if t.ok:
        return t.results
    doc = dict(t.results)
    doc["verdict"] = Verdict.INCONCLUSIVE.value
    judgement = doc.get("judgement")
    if isinstance(judgement, dict):
        doc["judgement"] = {
            **judgement,
            "verdict": Verdict.INCONCLUSIVE.value,
            "reasons": [*t.reasons, *(judgement.get("reasons") or [])],
        }
    return doc
