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
  one-repeat bundle cannot stand for a config of three, nor a `--case` subset for all.
Anything short is a reason; a reader that has reasons may show the bundle, never a
verdict from it (INCONCLUSIVE). Damaged JSON is a reason naming the file and the key,
not a traceback. Reads files; prints nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from orchestrator.bundle.layout import MANIFEST, MANIFEST_SCHEMA, RESULTS, RESULTS_SCHEMA
from orchestrator.bundle.read import Records, records
from orchestrator.bundle.verify import FAILING, Verification, verify
from orchestrator.errors import BundleError, CsorchError
from orchestrator.files import CONFIG, file_digest, read_json
from orchestrator.model import Experiment, Verdict

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

    @property
    def ok(self) -> bool:
        return not self.reasons

    @property
    def experiment(self) -> Experiment | None:
        """What to judge the attempts against: the experiment expected, else the bundle's."""
        if self.expected is not None:
            return self.expected
        return self.records.experiment if self.records is not None else None


def _few(items: Sequence[str]) -> str:
    shown = ", ".join(items[:_SHOWN])
    return shown + (f" and {len(items) - _SHOWN} more" if len(items) > _SHOWN else "")


def _verified(v: Verification) -> list[str]:
    bad = [c for c in v.checks if c.status in FAILING]
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


def load_trusted(path: Path | str, expect: Experiment | None = None) -> Trusted:
    """The bundle at `path` with every reason not to trust it (see the module's doc);
    BundleError only when `path` is no bundle at all (no directory, no results.json)."""
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
        verification = verify(root)
    except CsorchError as exc:
        reasons.append(f"cannot be verified: {exc.message}")
    if verification is not None:
        reasons += _verified(verification)
    if results is not None:
        reasons += _complete(results, manifest)
    if recs is not None:
        if expect is not None:
            reasons += _identity(recs, manifest, expect)
        reasons += _missing(recs, expect or recs.experiment)
    return Trusted(
        root,
        results,
        manifest,
        recs,
        verification,
        tuple(dict.fromkeys(f"bundle {root} {r}" for r in reasons)),
        expect,
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
