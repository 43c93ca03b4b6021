"""The results bundle: its layout, written atomically (write), read back as records (read),
and its evidence checked again (verify)."""

from orchestrator.bundle.layout import (  # noqa: F401 (the package's API)
    MANIFEST,
    MANIFEST_SCHEMA,
    RESULTS,
    RESULTS_SCHEMA,
)
from orchestrator.bundle.read import (  # noqa: F401 (the package's API)
    Records,
    read,
    records,
)
from orchestrator.bundle.write import (  # noqa: F401 (the package's API)
    Bundle,
    Snapshot,
    manifest,
    results,
)
