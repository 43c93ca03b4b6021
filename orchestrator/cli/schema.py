"""`csorch schema [experiment|gate]`: the JSON Schema of a config, for editors."""

from __future__ import annotations

import enum
import json
from pathlib import Path
from typing import Annotated

import typer

from orchestrator import files
from orchestrator.cli.common import ExitCode, app, fail
from orchestrator.config.json_schema import experiment
from orchestrator.errors import CsorchError
from orchestrator.gate.json_schema import gate


class Kind(str, enum.Enum):
    EXPERIMENT = "experiment"
    GATE = "gate"


SCHEMAS = {Kind.EXPERIMENT: experiment, Kind.GATE: gate}


def text(kind: Kind) -> str:
    """The schema as the committed files hold it (docs/schema/<kind>.schema.json)."""
    return json.dumps(SCHEMAS[kind](), indent=2) + "\n"


@app.command("schema")
def schema_command(
    kind: Annotated[Kind, typer.Argument(help="experiment or gate")] = Kind.EXPERIMENT,
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="write it here, not to stdout")
    ] = None,
) -> None:
    """Print the JSON Schema of experiment (or gate) configs, made from the tables the
    loader reads. Editors with yaml-language-server check and complete a config that
    starts with `# yaml-language-server: $schema=PATH-OR-URL`."""
    if output is None:
        typer.echo(text(kind), nl=False)
        raise typer.Exit(ExitCode.PASS)
    try:
        files.atomic_write(output, text(kind))
    except OSError as exc:
        raise fail(CsorchError(f"--output {output}: {exc.strerror}")) from None
    raise typer.Exit(ExitCode.PASS)
