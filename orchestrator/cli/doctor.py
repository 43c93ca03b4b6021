"""`csorch doctor`: what this machine can run (checkers, GPUs, torch), and why not."""

from __future__ import annotations

import json
import sys
from typing import Annotated

import typer
from rich.markup import escape

from orchestrator import __version__, backends, host
from orchestrator.cli.common import ExitCode, app, err, out
from orchestrator.errors import CheckerUnavailable, HostMismatch
from orchestrator.model import RUN_CHECKERS, Checker, ToolInfo
from orchestrator.report.provenance import unsandboxed
from orchestrator.run.builds import compilecache


def _tool(found: ToolInfo | CheckerUnavailable, *, runtime: bool = False) -> list[str]:
    """A checker's line (and its hint, when missing)."""
    if isinstance(found, CheckerUnavailable):
        lines = [f"[red]missing[/]: {escape(found.reason)}"]
        return lines + ([f"[dim]hint:[/] {escape(found.hint)}"] if found.hint else [])
    if runtime:
        return [escape(f"{found.path} ({found.version})")]
    return [escape(f"{found.version} at {found.path}")]


def _gpus(facts: host.Host) -> str:
    """Plain text (no markup)."""
    if facts.gpus:
        return ", ".join(
            f"{name} (sm {cap})" for name, cap in zip(facts.gpus, facts.capabilities, strict=False)
        )
    # the GPU count comes from torch, so without torch the answer is unknown, not zero
    if not facts.torch:
        return f"no GPU seen: torch is not importable from {sys.executable}, and csorch asks torch"
    hidden = dict(facts.env).get("CUDA_VISIBLE_DEVICES")
    why = (
        f"CUDA_VISIBLE_DEVICES={hidden!r}"
        if hidden is not None
        else "a CPU-only torch build"
        if not facts.torch_cuda
        else "torch sees no CUDA device"
    )
    return f"no GPU visible ({why})"


def _checkers(backend: str) -> str:
    """Which run checkers the chosen backend can serve, and why not the others."""
    served, skipped = [], []
    for checker in RUN_CHECKERS:
        if checker is Checker.NONE:
            continue
        why = backends.serves(backend, checker)
        (skipped if why else served).append(checker.value)
    made = backends.kind(backend)()
    stand_in = made.watcher(Checker.MEMCHECK) is not Checker.MEMCHECK
    line = ", ".join(served) + (f" (through {made.title})" if stand_in else "")
    if skipped:
        line += f"; not {', '.join(skipped)}: they need compute-sanitizer on a GPU"
    return line


def _probe_line(probed: host.Facts, mismatch: HostMismatch | None) -> str:
    """How a run learns the host: from the fast facts (torch's answer joined behind the
    builds), or waiting for torch first, and why."""
    if mismatch is not None:
        return f"[bold red]disagrees[/]: {escape(mismatch.message)}"
    if probed.waited:
        return escape(f"waits for `import torch` before building: {probed.waited}")
    return (
        "fast: builds start on torch/version.py and nvidia-smi; `import torch` agrees "
        "(joined before any attempt)"
    )


def _sandbox_line(fact: str) -> str:
    """How builds and attempts are sandboxed here, or why they are not (a warning)."""
    if fact.startswith("none"):
        return f"[bold yellow]{escape(fact)}[/]: builds and attempts run unsandboxed"
    if fact.startswith("off"):
        return f"[bold yellow]{escape(fact)}[/]: builds and attempts run unsandboxed"
    return escape(f"{fact}: every build and attempt (read-only tree, no network)")


def _tool_json(found: ToolInfo | CheckerUnavailable) -> dict[str, str]:
    if isinstance(found, CheckerUnavailable):
        return {"missing": found.reason, "hint": found.hint}
    return {"version": found.version, "path": str(found.path)}


@app.command("doctor")
def doctor_command(
    as_json: Annotated[
        bool,
        typer.Option(
            "--json",
            help="one JSON object on stdout (the host's facts, each checker, the sandbox, "
            "the backend auto picks) for a CI step to read; the exit code as without it",
        ),
    ] = False,
) -> None:
    """What this machine offers csorch (GPUs, driver, checkers, torch, compilers) and which
    backend `--backend auto` would pick. Exit 0 when some backend is usable, else 3."""
    probed = host.start(sys.executable, backends.probe_checkers)
    facts = probed.wait()  # torch's own answer, as the bundle records it
    sanitizer, asan = probed.checkers
    mismatch: HostMismatch | None = None
    try:
        probed.full()
    except HostMismatch as exc:
        mismatch = exc
    nvcc = " ".join(p for p in (facts.nvcc_release, f"({facts.nvcc})" if facts.nvcc else "") if p)
    rows: list[tuple[str, list[str]]] = [
        ("csorch", [__version__]),
        ("python", [escape(facts.python)]),
        ("platform", [escape(facts.platform)]),
        ("GPUs", [escape(_gpus(facts))]),
        ("driver", [escape(facts.driver) or "none (nvidia-smi is missing or failed)"]),
        ("compute-sanitizer", _tool(sanitizer)),
        ("torch", [escape(facts.torch) or f"[red]not importable[/] from {escape(sys.executable)}"]),
        ("torch CUDA", [facts.torch_cuda or ("none (a CPU-only build)" if facts.torch else "-")]),
        ("nvcc", [escape(nvcc) or "not found on PATH"]),
        ("cc", [escape(facts.cc) or "not found"]),
        ("c++", [escape(facts.cxx) or "not found"]),
        ("ASan runtime", _tool(asan, runtime=True)),
        ("host probe", [_probe_line(probed, mismatch)]),
        ("sandbox", [_sandbox_line(facts.sandbox)]),
        ("compile cache", [escape(compilecache.describe())]),
    ]
    problem: CheckerUnavailable | HostMismatch | None = mismatch
    choice: backends.Choice | None = None
    try:
        gpus = len(probed.fast.gpus)  # what a run decides on
        choice = backends.choose("auto", gpus=gpus, sanitizer=sanitizer, asan=asan)
    except CheckerUnavailable as exc:
        problem = problem or exc
        rows.append(("backend auto", [f"[bold red]none[/]: {escape(exc.reason)}"]))
    else:
        rows.append(("backend auto", [f"[bold]{choice.backend}[/]: {escape(choice.reason)}"]))
        rows.append(("checkers", [_checkers(choice.backend)]))
    if as_json:
        said = {
            "csorch": __version__,
            "host": facts.to_dict(),
            "checkers": {"compute-sanitizer": _tool_json(sanitizer), "asan": _tool_json(asan)},
            "sandbox": {"fact": facts.sandbox, "sandboxed": not unsandboxed(facts.sandbox)},
            "compile_cache": {
                "program": "" if compilecache.disabled() else compilecache.find(),
                "fact": compilecache.describe(),
            },
            "backend": None
            if choice is None
            else {"auto": choice.backend, "reason": choice.reason},
            "problem": None if problem is None else {"reason": str(problem), "hint": problem.hint},
        }
        typer.echo(json.dumps(said, indent=1))  # plain: a console would wrap long strings
        raise typer.Exit(ExitCode.PASS if problem is None else ExitCode.INCONCLUSIVE)
    width = max(len(label) for label, _ in rows) + 2
    for label, lines in rows:
        for i, line in enumerate(lines):
            out.print(f"{label if i == 0 else '':<{width}}{line}", highlight=False, soft_wrap=True)
    if problem is not None:  # a run could not start (a mismatch is the first reported)
        err.print(f"[dim]hint:[/] {escape(problem.hint)}", highlight=False, soft_wrap=True)
        raise typer.Exit(ExitCode.INCONCLUSIVE)
    raise typer.Exit(ExitCode.PASS)
