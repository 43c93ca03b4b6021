"""The signatures of an experiment's records, grouped once for every report.

Each renderer (the terminal table, Markdown, HTML, JUnit, SARIF) used to group the
findings itself, and they disagreed: the HTML page had no ambient or follow-on mark,
each took its "first finding" in another order. `make` groups them once, and the
renderers only format what it holds:
- per signature (`SignatureView`): its label, id (the fingerprint's first 12 hex
  digits), whether it is ambient (`judge.ambient`), the fault it follows
  (`findings.follow_on`: the id of the first fault its records follow, "" for none), its
  example (the first finding, in config order of variants and runs, then repeat order)
  with that example's frames at file:line;
- where it showed (`Place`): per variant x run x case x device x case node, its records
  (folded ones included), the records a suppression or an allowance marked and why, the
  repeats that showed it and the first finding there. `SignatureView.tally` adds up the
  places of any scope (a variant x run for the table and Markdown, a case for SARIF, a
  case node for JUnit) into a `Tally`: records, repeats, tolerated, example;
- per variant x run (`Column`): the repeats planned, whether the evidence is conclusive,
  the variant's build error: what an absence means there.
Pure: records in, records out.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from orchestrator.findings import follow_on
from orchestrator.findings.signatures import (
    SignatureCount,
    fingerprint,
    located,
    named_frames,
    normalize_frame,
    signature,
    top_frames,
)
from orchestrator.judge.ambient import ambient
from orchestrator.judge.causality import failed_builds, judged_findings
from orchestrator.model import Attempt, Build, Checker, Experiment, Finding, Signature

#: the label every report gives an ambient signature, and a follow-on's, in words
AMBIENT = "ambient: every variant, no frame in the subject"


@dataclass(frozen=True)
class Place:
    """One signature's records in one variant x run x case x device x case node."""

    variant: str
    run: str
    case: str
    device: str  # "" without --devices
    node: str  # the case node the markers put it in ("" outside any test)
    count: int  # records, folded ones included
    suppressed: int  # of `count`, what a suppression or an allowance marked
    suppressed_by: tuple[str, ...]
    repeats: tuple[int, ...]  # the repeats that showed it, sorted
    example: Finding  # the first finding here


@dataclass(frozen=True)
class Tally:
    """A signature's places in one scope, added up."""

    signature: Signature
    fingerprint: str
    count: int
    suppressed: int
    suppressed_by: tuple[str, ...]
    repeats: tuple[int, ...]  # distinct repeats with it
    devices: tuple[str, ...]  # the devices given (--devices) that showed it, sorted
    nodes: tuple[str, ...]  # the case nodes it showed in, sorted
    example: Finding

    @property
    def hits(self) -> int:
        """Repeats that showed it."""
        return len(self.repeats)

    def tolerance(self) -> str:
        """`suppressed by supp.xml#1` / `allowed: <reason>` / `2 of 5: ...`; "" when
        nothing marked its records (`SignatureCount.tolerance`, the one wording)."""
        return SignatureCount(
            self.signature,
            self.count,
            self.fingerprint,
            self.example,
            self.suppressed,
            self.suppressed_by,
        ).tolerance()

    @property
    def skipped(self) -> tuple[str, ...]:
        """The example's frames above the culprit that are not the subject's (or, named
        on the host side, the library frames beside them)."""
        return tuple(normalize_frame(f) for f in named_frames(self.example)[1])


@dataclass(frozen=True)
class SignatureView:
    signature: Signature
    fingerprint: str
    example: Finding  # the first finding with it
    places: tuple[Place, ...]  # in the order first seen
    ambient: bool = False  # `judge.ambient`, in any run
    follows: str = ""  # the id of the fault its records follow (`findings.follow_on`)

    @property
    def id(self) -> str:
        """The signature id every report shows."""
        return self.fingerprint[:12]

    @property
    def label(self) -> str:
        return self.signature.label()

    @property
    def count(self) -> int:
        """Records, every place together."""
        return sum(p.count for p in self.places)

    @property
    def tolerated(self) -> bool:
        """Whether a suppression or an allowance marked any of its records."""
        return any(p.suppressed for p in self.places)

    def tally(
        self,
        variant: str | None = None,
        run: str | None = None,
        case: str | None = None,
        device: str | None = None,
        node: str | None = None,
    ) -> Tally | None:
        """Its places in a scope (None: any), added up; None where it never showed."""
        scope = (variant, run, case, device, node)
        chosen = [
            p
            for p in self.places
            if all(
                want is None or want == have
                for want, have in zip(
                    scope, (p.variant, p.run, p.case, p.device, p.node), strict=True
                )
            )
        ]
        if not chosen:
            return None
        return Tally(
            self.signature,
            self.fingerprint,
            sum(p.count for p in chosen),
            sum(p.suppressed for p in chosen),
            tuple(sorted({w for p in chosen for w in p.suppressed_by})),
            tuple(sorted({r for p in chosen for r in p.repeats})),
            tuple(sorted({p.device for p in chosen if p.device})),
            tuple(sorted({p.node for p in chosen if p.node})),
            chosen[0].example,
        )

    @property
    def frames(self) -> tuple[str, ...]:
        """The frames that name it, the example's, at `function (file:line)`."""
        return tuple(located(f) for f in named_frames(self.example)[0])

    @property
    def library(self) -> tuple[str, ...]:
        """The example's frames listed beside those (the library's, or skipped ones)."""
        return tuple(located(f) for f in named_frames(self.example)[1])

    @property
    def freed(self) -> tuple[str, ...]:
        """For a use-after-free, where the example's memory was freed; () otherwise."""
        stack = next((s for s in self.example.related if s.role == "freed"), None)
        return tuple(located(f) for f in top_frames(stack.frames)) if stack else ()


@dataclass(frozen=True)
class Column:
    """One variant x run that has attempts: what an absence of a signature means there."""

    variant: str
    run: str
    checked: bool  # a checker watched the run
    repeats: int  # N, the repeats planned
    conclusive: bool  # every attempt's evidence is
    not_built: str = ""  # the variant's build error ("" when it built)


@dataclass(frozen=True)
class Signatures:
    signatures: tuple[SignatureView, ...]  # most records first, ties by fingerprint
    columns: tuple[Column, ...]  # config order

    def within(self, **scope: str) -> tuple[tuple[SignatureView, Tally], ...]:
        """The signatures that showed in a scope (`SignatureView.tally`'s keywords) with
        their tally there, most records first, ties by fingerprint."""
        found = [(s, t) for s in self.signatures if (t := s.tally(**scope)) is not None]
        return tuple(sorted(found, key=lambda st: (-st[1].count, st[0].fingerprint)))

    @property
    def ambient(self) -> tuple[SignatureView, ...]:
        return tuple(s for s in self.signatures if s.ambient)


def _order(experiment: Experiment, attempts: Iterable[Attempt]) -> list[Attempt]:
    """Variants and runs in config order, then repeats in order (a sort keeps the
    records' order among the cases and devices of one repeat)."""
    variants = {v.name: i for i, v in enumerate(experiment.variants)}
    runs = {r.name: i for i, r in enumerate(experiment.runs)}
    return sorted(
        attempts,
        key=lambda a: (
            variants.get(a.variant, len(variants)),
            runs.get(a.run, len(runs)),
            a.repeat,
        ),
    )


def _columns(
    experiment: Experiment, attempts: Sequence[Attempt], builds: Iterable[Build]
) -> tuple[Column, ...]:
    broken = failed_builds(builds)
    out = []
    for v in experiment.variants:
        for r in experiment.runs:
            mine = [a for a in attempts if a.variant == v.name and a.run == r.name]
            if mine:
                out.append(
                    Column(
                        v.name,
                        r.name,
                        r.checker is not Checker.NONE,
                        experiment.repeats_for(r),
                        all(a.conclusive for a in mine),
                        broken.get(v.name, ""),
                    )
                )
    return tuple(out)


def make(
    experiment: Experiment, attempts: Sequence[Attempt], builds: Iterable[Build] = ()
) -> Signatures:
    """Every signature of the records, with where it showed (see the module's doc)."""
    # key -> [count, suppressed-by counts, repeats, example]
    places: dict[tuple[str, ...], list] = {}
    sigs: dict[str, Signature] = {}
    follows: dict[str, str] = {}
    for a in _order(experiment, attempts):
        for f in follow_on.link(a.findings):
            sig = signature(f)
            fp = fingerprint(sig)
            sigs.setdefault(fp, sig)
            if f.follows:
                follows.setdefault(fp, f.follows)
            key = (fp, a.variant, a.run, a.case, a.device, f.case)
            place = places.setdefault(key, [0, {}, set(), f])
            place[0] += f.count
            if f.suppressed:
                place[1][f.suppressed] = place[1].get(f.suppressed, 0) + f.count
            place[2].add(a.repeat)
    environment = {x.fingerprint for x in ambient(experiment, attempts, judged_findings)}
    by_sig: dict[str, list[Place]] = {fp: [] for fp in sigs}
    for (fp, *where), (count, marked, repeats, example) in places.items():
        by_sig[fp].append(
            Place(
                *where,
                count=count,
                suppressed=sum(marked.values()),
                suppressed_by=tuple(sorted(marked)),
                repeats=tuple(sorted(repeats)),
                example=example,
            )
        )
    views = [
        SignatureView(
            sigs[fp], fp, mine[0].example, tuple(mine), fp in environment, follows.get(fp, "")
        )
        for fp, mine in by_sig.items()
    ]
    views.sort(key=lambda s: (-s.count, s.fingerprint))
    return Signatures(tuple(views), _columns(experiment, attempts, builds))
