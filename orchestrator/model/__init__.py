"""The records that flow through csorch, frozen dataclasses and enums with to_dict/from_dict:
what an experiment declares (experiment), what the stages produce (results), the shared
enums (kinds) and a planned job (job). The record base class is in record."""

from orchestrator.model.experiment import (  # noqa: F401 (the package's API)
    BuildSpec,
    Case,
    Environment,
    Expectations,
    Experiment,
    Run,
    SlurmSettings,
    SourceSpec,
    Suppression,
    TargetPattern,
    Variant,
)
from orchestrator.model.job import (  # noqa: F401 (the package's API)
    Fanout,
    Job,
    device_label,
    slot,
)
from orchestrator.model.kinds import (  # noqa: F401 (the package's API)
    RUN_CHECKERS,
    BuildKind,
    CaseKind,
    CasesFrom,
    Checker,
    Env,
    Outcome,
    SourceKind,
    Verdict,
    aggregate,
)
from orchestrator.model.results import (  # noqa: F401 (the package's API)
    Artifact,
    Attempt,
    Build,
    Carried,
    CarriedBinary,
    CarriedFile,
    Distribution,
    Finding,
    Frame,
    Launch,
    NodeResult,
    ParseResult,
    PatchRecord,
    Placement,
    Signature,
    SourceTree,
    Stack,
    ToolInfo,
)
