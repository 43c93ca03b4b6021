"""The JSON Schema of experiment configs, for editors (yaml-language-server completes and
checks a file that names it in a `# yaml-language-server: $schema=...` line).

Generated from the tables the loader itself reads (`config/schema.py`, the slurm block's
`SLURM`): every key of an object is a key the loader allows, with the loader's own phrase
as its description, and `_object` refuses a shape whose keys differ from its table, so
the two cannot drift apart. The shapes add what the tables leave to the reader's code
(a word or a list of words, a duration, the choices); where the loader checks more than a
schema can say (a path exists, a variant named in `expect` exists), the loader still has
the last word, with file:line errors. `csorch schema` prints it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from orchestrator.config.schema import (
    BACKENDS,
    BUILD,
    CASE,
    EXPECT,
    PRESETS,
    RUN,
    SOURCE,
    TARGET,
    TARGET_PROCESSES,
    TOP,
    VARIANT,
)
from orchestrator.config.slurm import EXECUTORS, SLURM
from orchestrator.findings import kinds
from orchestrator.model import RUN_CHECKERS, BuildKind, CasesFrom, Outcome

DRAFT = "http://json-schema.org/draft-07/schema#"
#: NAME_RE in JSON Schema's dialect (`$` there never matches before a final newline)
NAME_PATTERN = "^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$"
DURATION_PATTERN = r"^\d+(\.\d+)?\s*(s|m|h)?$"

WORD: dict[str, Any] = {"type": ["string", "number"]}
WORDS: dict[str, Any] = {"anyOf": [WORD, {"type": "array", "items": WORD}]}
ARGV: dict[str, Any] = {"type": "array", "items": WORD, "minItems": 1}
TEXTS: dict[str, Any] = {
    "anyOf": [{"type": "string"}, {"type": "array", "items": {"type": "string"}}]
}
NAME: dict[str, Any] = {"type": "string", "pattern": NAME_PATTERN}
DURATION: dict[str, Any] = {
    "anyOf": [
        {"type": "number", "exclusiveMinimum": 0},
        {"type": "string", "pattern": DURATION_PATTERN},
    ]
}
ENV: dict[str, Any] = {
    "type": "object",
    "propertyNames": {"pattern": "^[A-Za-z_][A-Za-z0-9_]*$"},
    "additionalProperties": WORD,
}


def object_of(
    table: Mapping[str, str], shapes: Mapping[str, dict[str, Any]], required: Sequence[str] = ()
) -> dict[str, Any]:
    """An object of exactly `table`'s keys, each described by the loader's phrase."""
    if set(shapes) != set(table):
        raise ValueError(
            f"the shapes' keys {sorted(shapes)} differ from the table's {sorted(table)}"
        )
    return {
        "type": "object",
        "properties": {k: {"description": table[k], **shapes[k]} for k in table},
        "required": list(required),
        "additionalProperties": False,
    }


def enum_of(values: Sequence[str]) -> dict[str, Any]:
    return {"type": "string", "enum": list(values)}


def source() -> dict[str, Any]:
    return {
        "anyOf": [
            {"type": "string", "description": "a directory, relative to this file"},
            object_of(
                SOURCE,
                {
                    "path": {"type": "string"},
                    "git": {"type": "string"},
                    "ref": {"type": "string"},
                    "subdir": {"type": "string"},
                },
            ),
        ]
    }


def target() -> dict[str, Any]:
    return object_of(
        TARGET,
        {
            "checker": {"type": "string"},
            # a glob: any string; the kinds the parsers give are offered as values
            "kind": {"anyOf": [{"enum": list(kinds.KNOWN)}, {"type": "string"}]},
            "access": {"type": "string"},
            "space": {"type": "string"},
            "size": {"type": "integer", "minimum": 0},
            "function": {"type": "string"},
            "frame": {"type": "string"},
            "run": {"type": "string"},
            "case": {"type": "string"},
            "outcome": enum_of([o.value for o in (Outcome.FAILED, Outcome.ERROR)]),
        },
    )


def experiment() -> dict[str, Any]:
    """The JSON Schema (draft 7) of an experiment config."""
    build = {
        "anyOf": [
            enum_of([BuildKind.JIT.value, BuildKind.WHEEL.value, BuildKind.PIP.value]),
            object_of(
                BUILD,
                {
                    "kind": enum_of([k.value for k in BuildKind]),
                    "command": ARGV,
                    "description": {"type": "string"},
                    "outputs": WORDS,
                    "env": ENV,
                    "flags": WORDS,
                    "import_path": {"type": "string"},
                    "wheel": {"type": "string"},
                    "requirement": {"type": "string"},
                    "find_links": {"type": "string"},
                    "index": {"type": "string"},
                    "installed": {"type": "string"},
                },
                required=["kind"],
            ),
        ]
    }
    variant = object_of(
        VARIANT,
        {
            "name": NAME,
            "patches": TEXTS,
            "build": build,
            "source": {"$ref": "#/definitions/source"},
            "description": {"type": "string"},
        },
        required=["name", "build"],
    )
    run = object_of(
        RUN,
        {
            "name": NAME,
            "checker": enum_of([c.value for c in RUN_CHECKERS]),
            "options": WORDS,
            "preset": {
                **enum_of(list(PRESETS)),
                "markdownEnumDescriptions": [
                    f"{p.what} ({', '.join(p.checkers)}). From: {p.source}"
                    for p in PRESETS.values()
                ],
            },
            "target_processes": enum_of(TARGET_PROCESSES),
            "suppressions": TEXTS,
            "env": ENV,
            "repeats": {"type": "integer", "minimum": 1},
            "timeout": DURATION,
            "case_timeout": DURATION,
            "description": {"type": "string"},
        },
        required=["name", "checker"],
    )
    case = {
        "anyOf": [
            {"type": "string", "description": "a pytest path or node id, relative to this file"},
            {**ARGV, "description": "a command (argv), run in the variant's tree"},
            object_of(
                CASE,
                {
                    "name": NAME,
                    "pytest": TEXTS,
                    "marker": {"type": "string"},
                    "command": ARGV,
                    "args": WORDS,
                    "backend_args": {
                        "type": "object",
                        "properties": {b: WORDS for b in BACKENDS},
                        "additionalProperties": False,
                    },
                },
            ),
        ]
    }
    expect = object_of(
        EXPECT,
        {
            "controls": TEXTS,
            "fix": {"type": "string"},
            "min_hits": {"type": "integer", "minimum": 1},
            "target": {
                "anyOf": [
                    {"$ref": "#/definitions/target"},
                    {"type": "array", "items": {"$ref": "#/definitions/target"}},
                ]
            },
        },
        required=["controls", "fix"],
    )
    slurm = object_of(
        SLURM,
        {
            "partition": WORD,
            "account": WORD,
            "time": DURATION,
            "gres": WORD,
            "sbatch": WORDS,
            "throttle": {"type": "integer", "minimum": 1},
            "poll": DURATION,
            "max_array": {"type": "integer", "minimum": 1},
            "compile_cache": {"type": "string", "pattern": "^redis://[^@/]+(/[0-9]{0,2})?$"},
        },
    )
    top = object_of(
        TOP,
        {
            "name": NAME,
            "description": {"type": "string"},
            "source": {"$ref": "#/definitions/source"},
            "variants": {"type": "array", "items": variant, "minItems": 1},
            "runs": {"type": "array", "items": run, "minItems": 1},
            "cases": {"type": "array", "items": case, "minItems": 1},
            "repeats": {"type": "integer", "minimum": 1},
            "timeout": DURATION,
            "expect": expect,
            "executor": enum_of(EXECUTORS),
            "slurm": slurm,
            "case_timeout": DURATION,
            "pytest_args": WORDS,
            "python": {"type": "string"},
            "test_requires": TEXTS,
            "wheels": {"type": "string"},
            "cases_from": enum_of([c.value for c in CasesFrom]),
        },
        required=["name", "source", "variants", "runs", "cases"],
    )
    return {
        "$schema": DRAFT,
        "title": "csorch experiment config",
        **top,
        "definitions": {"source": source(), "target": target()},
    }
