"""Records that follow a fault: the consequences of a finding, not findings of their own.

With memcheck's default `--destroy-on-device-error context`, a memory fault in a kernel
destroys the CUDA context; every CUDA call the process makes after it fails with the
sticky error of that fault (`cudaErrorLaunchFailure` "unspecified launch failure",
`CUDA_ERROR_LAUNCH_FAILED`, `cudaErrorIllegalAddress` "an illegal memory access was
encountered"), and memcheck reports each one: cudaFree, cudaMemcpy, cudaGetLastError,
torch's caching allocator at exit. A device-side `assert()` (memcheck's "Warp assert",
ATen's index checks among them) is as sticky: every later call fails with
`cudaErrorAssert` "device-side assert triggered". A control that plants a use-after-free shows them
beside the fault it is expected to show; they are that fault's consequences.

`link` marks them: within one process's records, in log order, each API error with a
sticky error after the first memory-error record is marked `follows=<signature id of
the fault>` (`Finding.follows`). The judge does not weigh a marked record (the fault
it follows is weighed), the gate does not call it unexpected, and every report lists it
as following that fault. An API error before any fault, or one with another error, is
left alone. The records of one attempt are one process's unless their `pid` says
otherwise (ASan's do; compute-sanitizer's text log does not name a process, so an
attempt's launches are read as one sequence: a sticky error in a later launch that had
no fault of its own is still linked to the earlier launch's fault). Pure.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import replace

from orchestrator.findings.signatures import fingerprint, signature
from orchestrator.model import Finding

#: finding kinds that are a memory fault in a kernel
FAULT_KINDS = frozenset(
    {
        "invalid-access",
        "misaligned-address",
        "out-of-range-address",
        "hardware-exception",
        "malloc-free-error",
    }
)
# the error code or message of a call that failed because the context is gone:
#   Program hit cudaErrorLaunchFailure (error 719) due to "unspecified launch failure" ...
#   Program hit CUDA_ERROR_LAUNCH_FAILED (error 719) due to "unspecified launch failure" ...
#   Program hit cudaErrorIllegalAddress (error 700) due to "an illegal memory access ..."
#   Program hit cudaErrorAssert (error 710) due to "device-side assert triggered" ...
STICKY_RE = re.compile(
    r"cudaErrorLaunchFailure|CUDA_ERROR_LAUNCH_FAILED|cudaErrorIllegalAddress|"
    r"CUDA_ERROR_ILLEGAL_ADDRESS|unspecified launch failure|illegal memory access|"
    r"cudaErrorAssert|CUDA_ERROR_ASSERT|device-side assert triggered"
)


def sig_id(finding: Finding) -> str:
    """The signature id every report shows: the fingerprint's first 12 hex digits."""
    return fingerprint(signature(finding))[:12]


def sticky(finding: Finding) -> bool:
    """Whether the finding is an API error that a destroyed context explains."""
    return finding.kind == "api-error" and bool(
        STICKY_RE.search(finding.code) or STICKY_RE.search(finding.detail)
    )


def link(findings: Sequence[Finding]) -> tuple[Finding, ...]:
    """The findings, in order, with each sticky API error after a fault in the same
    process marked `follows` that fault's signature id (one marked already is kept)."""
    faults: dict[int | None, str] = {}
    out = []
    for f in findings:
        if f.kind in FAULT_KINDS:
            if f.pid not in faults:
                faults[f.pid] = sig_id(f)
        elif not f.follows and f.pid in faults and sticky(f):
            f = replace(f, follows=faults[f.pid])
        out.append(f)
    return tuple(out)


def follow_ons(findings: Sequence[Finding]) -> tuple[Finding, ...]:
    """The findings `link` ties to a fault."""
    return tuple(f for f in link(findings) if f.follows)
