"""What a run, a gate and a bisection say while they work: one listener, heard by all three
(as a bisector takes a handler). Every method is a no-op here; the CLI overrides the ones it
shows (cli/progress.py), a caller from Python passes its own or none.

Build and attempt events come from worker threads; the rest from the calling thread.
"""

from __future__ import annotations

from orchestrator.backends import Choice
from orchestrator.model import Attempt, Build, Carried, Experiment
from orchestrator.model.job import Fanout, Job


class Listener:
    """The events of a run (`planned` .. `attempt_placed`), of what a run, a gate or a
    bisection chose before it started (`backend`, `devices`), and `experiment`: the
    listener of one experiment's events when several run at once (default: this one)."""

    def backend(self, choice: Choice) -> None:
        """The backend chosen (and why), before anything is built."""

    def devices(self, devices: tuple[str, ...], fanout: Fanout) -> None:
        """The devices the attempts fan out over (none said when there are none)."""

    def experiment(self, experiment: Experiment) -> Listener:
        """The listener of `experiment`'s own run (a gate runs several at once)."""
        return self

    def planned(self, variants: list[str], jobs: int) -> None: ...
    def resumed(self, kept: int, dropped: int) -> None: ...
    def build_started(self, variant: str) -> None: ...
    def build_finished(self, build: Build) -> None: ...
    def attempt_started(self, job: Job) -> None: ...
    def attempt_finished(self, attempt: Attempt) -> None: ...
    def carry_decided(self, carried: Carried | None, why_not: str) -> None:
        """--carry-from: the stored verdict carries (its record), or why not."""

    def attempt_placed(self, job: Job, phase: str, node: str) -> None:
        """A cluster executor's job moved to `phase` (queued, running, done) on `node`."""


QUIET = Listener()
