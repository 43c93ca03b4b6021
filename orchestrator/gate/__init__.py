"""The release gate: a policy over experiments (policy), its allowances, and the gate
directory's manifest."""

from orchestrator.gate.policy import (  # noqa: F401 (the package's API)
    GATE_TOP,
    POLICY,
    UNEXPECTED_CHOICES,
    ExperimentVerdict,
    GateResult,
    Judged,
    Liveness,
    Policy,
    Tolerated,
    Unexpected,
    decide,
    default_policy,
    is_gate_config,
    liveness,
    load_policy,
    suppressed,
    unexpected,
)
