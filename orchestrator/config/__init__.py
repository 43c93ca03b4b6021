"""Experiment configs: YAML nodes that know their file and line, the schema, the experiment and
its expectations."""

from orchestrator.config.experiment import (  # noqa: F401 (the package's API)
    load_experiment,
    only_cases,
)
