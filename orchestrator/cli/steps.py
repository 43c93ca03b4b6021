"""What `csorch bisect` prints: a line per step with a spinner for the step in flight,
and the answer (the commit, or the candidates skips leave)."""

from __future__ import annotations

from pathlib import Path

from rich.markup import escape
from rich.progress import Progress

from orchestrator.bisect import driver
from orchestrator.bisect.state import Commit, Mark, Status
from orchestrator.cli.common import ExitCode, out
from orchestrator.model import Build, TargetPattern

MARK_STYLE = {Mark.BAD: "bold red", Mark.GOOD: "bold green", Mark.SKIP: "yellow"}


class Reporter(driver.Reporter):
    """One line per step, and a spinner with the step in flight (and its build)."""

    def __init__(self, progress: Progress, targets: tuple[TargetPattern, ...]) -> None:
        self.progress, self.targets = progress, targets
        self.task = progress.add_task("", total=None)
        self.prefix = ""

    def build_started(self, variant: str) -> None:
        self.progress.update(self.task, description=f"{self.prefix}: building")

    def build_finished(self, build: Build) -> None:
        state = "cached" if build.cached else "built" if build.ok else "build failed"
        self.progress.update(self.task, description=f"{self.prefix}: {state}, running")

    def started(self, state: driver.State, status: Status) -> None:
        s, commits = state.search, state.bisection.commits
        wanted = "no longer shows" if s.find_fix else "shows"
        targets = "; ".join(_label(t) for t in self.targets)
        self.progress.console.print(
            f"bisecting {len(commits)} commits (first parent) of {s.repo}"
            f"{'/' + s.subdir if s.subdir else ''}: {commits[0].short} (--good) .. "
            f"{commits[-1].short} (--bad), for the first commit that {wanted} [{targets}]",
            markup=False,
            highlight=False,
            soft_wrap=True,
        )
        if state.steps:
            self.progress.console.print(f"resuming after step {len(state.steps)}", highlight=False)

    def step_started(self, number: int, commit: Commit, status: Status) -> None:
        self.prefix = f"step {number} {commit.short} ({status.role})"
        left = f", about {status.steps_left} steps left"
        self.progress.update(self.task, description=self.prefix + left)

    def step_finished(self, step: driver.Step, remaining: int) -> None:
        ev = step.evaluation
        style = MARK_STYLE[ev.mark]
        self.progress.console.print(
            f"step {step.number:>2}  {step.commit.short}  {step.role:<8}  "
            f"[{style}]{ev.mark.value.upper():<4}[/]  {escape(ev.reason)}  "
            f"({ev.build}, {ev.duration:.0f} s; {remaining} candidate(s) left)",
            highlight=False,
            soft_wrap=True,
        )


def _label(target: TargetPattern) -> str:
    return " ".join(f"{k}={v}" for k, v in target.to_dict().items() if v not in ("", None))


def answer(state: driver.State, result: Status, out_dir: Path, wall: float) -> int:
    steps = state.steps
    skipped = sum(1 for s in steps if s.evaluation.mark is Mark.SKIP)
    word = "first fixed commit" if state.search.find_fix else "first bad commit"
    if result.found is not None:
        out.print(
            f"{word}: [bold]{result.found.sha}[/] {escape(result.found.subject)}",
            highlight=False,
            soft_wrap=True,
        )
    else:
        out.print(
            f"inconclusive: skipped commits leave {len(result.candidates)} candidates; "
            f"the {word} is one of:",
            highlight=False,
        )
        for c in result.candidates:
            mark = state.bisection.mark_of(c.sha)
            out.print(
                f"  {c.sha} {escape(c.subject)}" + (f"  ({mark.value})" if mark else ""),
                highlight=False,
                soft_wrap=True,
            )
    out.print(
        f"steps: {len(steps)} ({skipped} skipped); wall time {wall:.0f} s this session, "
        f"{state.elapsed:.0f} s probing in all; evidence: {out_dir / driver.STEPS}",
        highlight=False,
        soft_wrap=True,
    )
    return ExitCode.PASS if result.found is not None else ExitCode.INCONCLUSIVE
