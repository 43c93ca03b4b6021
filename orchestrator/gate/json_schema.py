"""The JSON Schema of gate configs, for editors: generated, as the experiment's
(`config/json_schema.py`), from the tables the gate's loader reads (`GATE_TOP`,
`POLICY`, the allowances' `ALLOW`), so a key the loader allows is a key the schema
offers, with the loader's phrase. `csorch schema gate` prints it."""

from __future__ import annotations

from typing import Any

from orchestrator.config.json_schema import DRAFT, NAME, enum_of, object_of
from orchestrator.gate.allowances import ALLOW
from orchestrator.gate.policy import AMBIENT_CHOICES, GATE_TOP, POLICY, UNEXPECTED_CHOICES


def gate() -> dict[str, Any]:
    """The JSON Schema (draft 7) of a gate config."""
    allowance = object_of(
        ALLOW,
        {
            **{k: {"type": "string"} for k in ALLOW},
            "size": {"type": "integer", "minimum": 0},
            # unquoted, YAML 1.1 reads a date; editors (YAML 1.2) read a string
            "expires": {"type": "string", "pattern": r"^\d{4}-\d{2}-\d{2}$"},
        },
        required=["reason"],
    )
    policy = object_of(
        POLICY,
        {
            "unexpected": enum_of(UNEXPECTED_CHOICES),
            "ambient": enum_of(AMBIENT_CHOICES),
            "allow": {"anyOf": [allowance, {"type": "array", "items": allowance}]},
        },
    )
    top = object_of(
        GATE_TOP,
        {
            "name": NAME,
            "description": {"type": "string"},
            "experiments": {"type": "array", "items": {"type": "string"}, "minItems": 1},
            "policy": policy,
        },
        required=["name", "experiments"],
    )
    return {"$schema": DRAFT, "title": "csorch gate config", **top}
