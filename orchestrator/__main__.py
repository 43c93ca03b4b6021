"""`python -m orchestrator` runs the csorch CLI (handy before the package is installed)."""

from orchestrator.cli import app

app(prog_name="csorch")
