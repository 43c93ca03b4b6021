"""The `csorch run` pipeline: variants -> sources -> builds -> attempts -> judge -> bundle.

Each variant is materialized and built by a worker; as soon as its build is ready, its
attempts go to the executor (`executors.local.Local`, on the same pool of job slots, or
the one the options name: Slurm), so running one variant overlaps building the next
(data still moves forward only: an attempt never asks for a build). `jobs` bounds the
child processes at any moment. One loop drives both: it waits for builds and for each
variant's batch of attempts, whichever executor runs them. The builds start on the host's
fast facts (host.py); torch's own answer is joined once they are under way, before the
bundle is first written or any attempt runs, and a disagreement (HostMismatch) stops the
run: its builds are stopped and the cache entries they made dropped (keyed by facts that
did not hold). A variant that fails to materialize or build is recorded with its error and its
attempts as not run; the others carry on. The bundle is rewritten after every build and
attempt; Ctrl-C stops the children, leaves the bundle marked incomplete (only the
journal, if torch's answer had not come yet), and re-raises. Nothing here prints:
progress goes to a `Listener` (run/events.py).

Progress is journaled (`run/journal.py`) as each build and attempt finishes; with
`Options.resume` the run continues the one journaled in `out` (`run/resume.py` decides what
of it is kept).
"""

from __future__ import annotations

import concurrent.futures as cf
import dataclasses
import tempfile
import threading
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from orchestrator import backends, cache, judge
from orchestrator.bundle import Bundle, Snapshot, trees
from orchestrator.errors import BuildError, CsorchError, HostMismatch
from orchestrator.executors import execute
from orchestrator.executors.base import Executor
from orchestrator.executors.local import Local
from orchestrator.host import Facts
from orchestrator.judge import tallies
from orchestrator.model import Attempt, Build, CasesFrom, Experiment, SourceTree, Variant
from orchestrator.model.job import Job, slot
from orchestrator.run import build, carried, cases, contexts, environment, lock, resume, sources
from orchestrator.run.events import QUIET, Listener
from orchestrator.run.journal import Journal
from orchestrator.run.options import Options, racecheck_workers, work_dir
from orchestrator.run.plan import plan
from orchestrator.run.sources import Workspace

#: the listener a run reports to (run/events.py), by the name `_Run` knows it
Events = Listener


@dataclass(frozen=True)
class RunResult:
    experiment: Experiment
    bundle: Path
    backend: str
    sources: tuple[SourceTree, ...]
    builds: tuple[Build, ...]
    attempts: tuple[Attempt, ...]
    cases: tuple[tallies.CaseResult, ...]
    judgement: judge.Judgement
    not_run: tuple[str, ...]


def with_repeats(experiment: Experiment, repeats: int | None) -> Experiment:
    """The experiment with every run repeated `repeats` times (None: as configured)."""
    if repeats is None:
        return experiment
    runs = tuple(dataclasses.replace(r, repeats=None) for r in experiment.runs)
    return dataclasses.replace(experiment, repeats=repeats, runs=runs)


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


class _Run:
    """The state of one run, shared by the workers and the driving thread."""

    def __init__(
        self, experiment: Experiment, options: Options, facts: Facts, events: Events
    ) -> None:
        self.experiment, self.options, self.events = experiment, options, events
        self.facts, self.settled = facts, False
        host = facts.fast  # what torch's answer cannot change (its torch fields aside)
        self.cancel = threading.Event()
        self.lock = threading.Lock()
        # each variant's attempts wait on the executor in a thread of their own
        self.waiters = cf.ThreadPoolExecutor(max_workers=max(1, len(experiment.variants)))
        # the one backend object of the run: every stage asks it, none asks its name
        self.backend = backends.make(options.backend, host, workers=racecheck_workers(options.jobs))
        unserved = {r.name: self.backend.serves(r.checker) for r in experiment.runs}
        self.jobs = plan(
            experiment,
            devices=options.devices,
            fanout=options.fanout,
            runs=[name for name, why in unserved.items() if not why],
        )
        self.order = {slot(j): i for i, j in enumerate(self.jobs)}
        self.variants = [v.name for v in experiment.variants]
        # what every launch needs, set up once (ASan: the fold shim, built once per
        # content in the cache, and the C++ runtime where the interpreter lacks it)
        prepared = self.backend.prepare(Path(options.cache), options.python)
        self.bundle = Bundle(options.out)
        self.held: lock.Held | None = None
        self.journal: Journal | None = None
        self.kept: dict[tuple, Attempt] = {}  # journaled attempts whose logs are intact
        self.before: dict[str, tuple[Build, SourceTree | None]] = {}  # journaled builds
        self.snap = Snapshot(
            experiment=experiment,
            backend=contexts.backend_record(options, self.backend, host, prepared),
            host=host,  # torch's answer replaces it before the first write (settle)
            options={
                "repeat": options.repeat,
                "devices": list(options.devices),
                "fanout": options.fanout.value,
                "jobs": options.jobs,
                "cache": str(Path(options.cache).resolve()),
                "executor": options.executor.describe() if options.executor else "local",
            },
            started=_now(),
            not_run=[f"run {name}: {why}" for name, why in unserved.items() if why],
        )
        work = work_dir(options)
        work.mkdir(parents=True, exist_ok=True)
        self.workspace = Workspace(Path(tempfile.mkdtemp(prefix="run-", dir=work)))
        self.cache = cache.Cache(options.cache)
        made = contexts.make(
            experiment,
            options,
            host,
            self.backend,
            bundle=self.bundle.root,
            scratch=self.workspace.root / "cwd",
            cache=self.cache,
            python=environment.interpreter(experiment, options.python),
            cancel=self.cancel,
        )
        self.build_ctx, self.exec_ctx = made.build, made.execute
        self.pool: cf.ThreadPoolExecutor | None = None  # the job slots' pool, once driven
        # the bytes of sources the bundle may still keep (bundle/trees.py), for every tree
        self.keep_budget = [trees.MAX_KEPT_BYTES]
        # --carry-from: each built variant waits here until every variant is built
        self.waiting: list[tuple[Variant, Build]] = []
        self.executor: Executor = options.executor or Local(self.submit)

    def settle(self) -> None:
        """Join torch's answer (`Facts.full`; HostMismatch where it contradicts the fast
        facts the builds were keyed by) and write the bundle's first version with it."""
        host = self.facts.full()
        self.snap.host = host
        # CUDA's UUIDs by index: not the child's under csorch's own CUDA_VISIBLE_DEVICES
        uuids = () if "CUDA_VISIBLE_DEVICES" in dict(host.env) else host.gpu_uuids
        self.exec_ctx = dataclasses.replace(self.exec_ctx, gpu_uuids=uuids)
        self.settled = True
        with self.lock:  # the builds' workers keep their trees in the bundle meanwhile
            self.bundle.write(self.snap)

    def discard(self, builds: list[cf.Future]) -> None:
        """After a HostMismatch: stop the builds and drop the cache entries they made."""
        self.cancel.set()
        made = []
        for future in builds:
            if not future.cancel() and future.exception() is None:
                _, built = future.result()
                made += [built.cache_key] if built.ok and not built.cached else []
        self.cache.release()  # this run's own pins would keep them
        for key in made:
            self.cache.drop(key)

    def begin(self) -> None:
        """Open the journal: a new one, or (resume) the old one, checked to be this run's,
        with the attempts it holds re-verified and every file they do not account for
        removed from logs/."""
        root = self.bundle.root
        # before the journal is read or anyone's children stopped: one session at a time
        self.held = lock.hold(root)
        found = carried.case_files(self.experiment)
        with self.lock:
            kept = trees.store(
                root, trees.CASES, carried.case_listing(found), found, self.keep_budget
            )
        self.bundle.cover(kept)
        ident = resume.identity(self.experiment, self.options)
        if not self.options.resume:
            self.journal = Journal.create(
                root,
                ident,
                resume.settings(self.experiment, self.options),
                self.snap.command,
                self.snap.started,
            )
            return
        given = resume.settings(self.experiment, self.options)
        journal = resume.reopen(root, ident, self.snap.command, given)
        self.snap.started, self.snap.command = journal.started, journal.command
        self.kept = resume.keep(root, journal, self.jobs)
        self.before = journal.builds
        self.journal = journal
        untrusted = len(journal.attempts) - len(self.kept) + journal.dropped
        self.events.resumed(len(self.kept), untrusted)

    def prepare(self, variant: Variant) -> tuple[SourceTree | None, Build]:
        """Materialize and build one variant; its own failures become a record."""
        self.events.build_started(variant.name)
        log = Path("logs") / "build" / f"{variant.name}.log"
        tree = None
        try:
            tree = self.workspace.materialize(variant, self.experiment.source_for(variant))
            listing = self.keep(tree)
            tests = cases.forms(self.experiment, tree.root, listing)  # before the build
            done = build.build(variant, tree, self.build_ctx)
            if self.experiment.cases_from is CasesFrom.VARIANT:
                done = dataclasses.replace(
                    done, cases_root=cases.cases_root(self.experiment, tree), case_forms=tests
                )
        except BuildError as exc:
            detail = f"{exc.message}\n{exc.log_tail}" if exc.log_tail else exc.message
            done = Build(
                variant.name,
                variant.build.kind,
                ok=False,
                error=detail,
                source_digest=tree.digest if tree else "",
            )
        except CsorchError as exc:  # a patch that does not apply, a missing source
            done = Build(variant.name, variant.build.kind, ok=False, error=str(exc))
        has_log = (self.bundle.root / log).exists()
        return tree, dataclasses.replace(done, log=log if has_log else None)

    def keep(self, tree: SourceTree) -> dict[str, str]:
        """Keep the tree the variant is built from in the bundle (bundle/trees.py), before
        its build may write into it: what a later run carries this verdict against. Its
        listing."""
        listing = sources.listing(tree.root)
        where = {p: tree.root / p for p in listing}
        with self.lock:
            kept = trees.store(self.bundle.root, tree.variant, listing, where, self.keep_budget)
        self.bundle.cover(kept)
        return listing

    def forget(self, job: Job) -> None:
        """On resume, drop what an earlier session left of a job that is not kept."""
        if self.options.resume:
            resume.forget(self.bundle.root, job)

    def record(self, **items: object) -> None:
        with self.lock:
            for name, item in items.items():
                getattr(self.snap, name).append(item)
            self.snap.attempts.sort(key=lambda a: self.order.get(slot(a), -1))
            # config order, not completion order: bundles of two runs compare line by line
            self.snap.builds.sort(key=lambda b: self.variants.index(b.variant))
            self.snap.sources.sort(key=lambda s: self.variants.index(s.variant))
            self.bundle.write(self.snap)

    def slot(self, work, *args):  # type: ignore[no-untyped-def]
        """`work(*args)`, holding one of the caller's shared slots when it gave some
        (`Options.slots`: several experiments at once share one pool of jobs)."""
        if self.options.slots is None:
            return work(*args)
        with self.options.slots:
            if self.cancel.is_set():
                raise KeyboardInterrupt  # stopped while waiting for a slot
            return work(*args)

    def submit(self, work, *args) -> cf.Future:  # type: ignore[no-untyped-def]
        """`work(*args)` on the run's pool, holding one of its job slots."""
        assert self.pool is not None
        return self.pool.submit(self.slot, work, *args)

    def drive(self, pool: cf.ThreadPoolExecutor) -> None:
        self.pool = pool
        pending: dict[cf.Future, object] = {
            self.submit(self.prepare, v): v for v in self.experiment.variants
        }
        try:  # the builds are under way: torch's answer now, before any record or attempt
            self.settle()
        except HostMismatch:
            self.discard(list(pending))
            raise
        self.wait(pending)
        if self.waiting:  # --carry-from: every variant is built
            self.wait(self.carry())

    def wait(self, pending: dict[cf.Future, object]) -> None:
        """Until every build and batch of attempts in `pending` is done (a build hands
        its attempts on, `built`)."""
        stop = self.options.stop
        while pending:
            finished, _ = cf.wait(
                pending, timeout=None if stop is None else 0.2, return_when=cf.FIRST_COMPLETED
            )
            if stop is not None and stop.is_set():
                raise KeyboardInterrupt  # as Ctrl-C: the children stop, the bundle is incomplete
            for future in finished:
                what = pending.pop(future)
                if isinstance(what, Variant):
                    batch = self.built(what, *future.result())
                    if batch is not None:
                        pending[batch] = _Batch(what.name)
                else:
                    future.result()  # its attempts were recorded as they finished

    def built(self, variant: Variant, tree: SourceTree | None, built: Build) -> cf.Future | None:
        """Record a variant's build and hand its attempts to the executor (the future of
        that batch; None when none is left to run): the journaled ones a resume keeps are
        recorded again, and those of a variant that did not build are not run."""
        reuse = resume.reusable(self.before, variant.name, built, tree)
        self.events.build_finished(built)
        assert self.journal is not None
        self.journal.record_build(built, tree)
        self.record(builds=built, **({"sources": tree} if tree else {}))
        if self.options.carry_from is not None:
            self.waiting.append((variant, built))  # the verdict may carry: decided at the end
            return None
        return self.hand_on(variant, built, reuse)

    def carry(self) -> dict[cf.Future, object]:
        """Every variant built: carry the stored verdict (its attempts recorded as this
        run's, their logs copied) or, naming why not, hand every variant's attempts on."""
        assert self.options.carry_from is not None
        waiting, self.waiting = self.waiting, []
        try:
            decision = carried.decide(
                self.options.carry_from,
                self.bundle.root,
                self.experiment,
                self.jobs,
                self.snap.sources,
                self.snap.builds,
                self.snap.backend,
                self.snap.host.to_dict(),
            )
        except carried.NotCarried as exc:
            self.events.carry_decided(None, str(exc))
            pending: dict[cf.Future, object] = {}
            for variant, built in waiting:
                batch = self.hand_on(variant, built, reuse=False)
                if batch is not None:
                    pending[batch] = _Batch(variant.name)
            return pending
        self.events.carry_decided(decision.carried, "")
        self.bundle.cover(
            carried.copy_evidence(Path(self.options.carry_from), self.bundle.root, decision)
        )
        with self.lock:
            self.snap.carried = decision.carried
        for attempt in decision.attempts:
            self.finish_attempt(attempt)
        return {}

    def hand_on(self, variant: Variant, built: Build, reuse: bool) -> cf.Future | None:
        """Hand a built variant's attempts to the executor (see `built`)."""
        jobs = []
        for job in (j for j in self.jobs if j.variant == variant.name):
            if reuse and slot(job) in self.kept:
                self.finish_attempt(self.kept[slot(job)], journaled=True)
                continue
            self.forget(job)
            if built.ok:
                jobs.append(job)
            else:
                run = self.experiment.run(job.run)
                why = f"variant {variant.name} did not build"
                self.finish_attempt(execute.not_run(job, run, self.backend, why))
        if not jobs:
            return None
        # its own thread: waiting on the executor holds no job slot
        return self.waiters.submit(self.executor.run, jobs, built, self.exec_ctx, self.placed,
                                   self.finish_attempt)  # fmt: skip

    def placed(self, job: Job, phase: str, node: str) -> None:
        """The executor moved `job` to `phase` (queued, running, done) on `node`."""
        if self.executor.queues:
            self.events.attempt_placed(job, phase, node)
        if phase == "running":
            self.events.attempt_started(job)

    def finish_attempt(self, attempt: Attempt, *, journaled: bool = False) -> None:
        if not journaled:
            assert self.journal is not None
            stem = next(j.stem() for j in self.jobs if slot(j) == slot(attempt))
            with self.lock:  # the executors' threads finish attempts at once
                self.journal.record(attempt, self.bundle.root, stem)
        self.events.attempt_finished(attempt)
        self.record(attempts=attempt)

    def conclude(self, *, complete: bool) -> judge.Judgement:
        if self.options.judge is not None:
            judgement = self.options.judge(self.snap.builds, self.snap.attempts)
        else:
            judgement = judge.judged(self.experiment, self.snap.attempts, self.snap.builds)
        if self.snap.carried is not None:
            judgement = carried.judged(self.snap.carried, judgement)
        with self.lock:
            self.snap.cases = list(tallies.case_results(self.snap.attempts))
            self.snap.judgement = judgement
            self.snap.complete, self.snap.interrupted = complete, not complete
            self.snap.finished = _now()
            self.bundle.write(self.snap)
        return judgement


@dataclass(frozen=True)
class _Batch:
    variant: str


def run_experiment(
    experiment: Experiment, options: Options, facts: Facts, listener: Listener | None = None
) -> RunResult:
    """Run one experiment end to end; the bundle is in `options.out`. HostMismatch when
    torch's answer contradicts the fast facts (no attempt ran, no bundle written)."""
    experiment = with_repeats(experiment, options.repeat)
    state = _Run(experiment, options, facts, listener or QUIET)
    pool = cf.ThreadPoolExecutor(max_workers=max(1, options.jobs))
    try:
        state.begin()
        state.events.planned([v.name for v in experiment.variants], len(state.jobs))
        drove = False
        try:
            state.drive(pool)
            drove = True
        finally:
            # Ctrl-C (or a bug) mid-run: the workers kill their children and stop, and
            # the bundle says it is incomplete; after a normal end nothing is left to stop
            state.cancel.set()
            pool.shutdown(wait=True, cancel_futures=True)
            state.waiters.shutdown(wait=True)  # after scancel: nothing left queued
            if not drove and state.settled:  # unsettled: the journal alone, to resume
                state.conclude(complete=False)
        state.cache.evict(keep=[b.cache_key for b in state.snap.builds if b.ok])
        judgement = state.conclude(complete=True)
    finally:
        state.cache.release()
        state.workspace.close(keep=options.keep_work)
        if state.held is not None:
            state.held.release()
    snap = state.snap
    return RunResult(
        experiment,
        state.bundle.root,
        options.backend,
        tuple(snap.sources),
        tuple(snap.builds),
        tuple(snap.attempts),
        tuple(snap.cases),
        judgement,
        tuple(snap.not_run),
    )
