"""The finding kinds csorch's parsers give, per checker: what a target's `kind` names.

A target's `kind` is a glob and stays open (a checker's newer wording is still matched);
these lists are what `csorch check` compares a plain kind with, so a misspelling
(`heap-overflow`) is named before a run ends INCONCLUSIVE on it, and what the config's
JSON schema offers an editor as values."""

from __future__ import annotations

import difflib

#: AddressSanitizer's report kinds as the parser names them (the word after
#: "ERROR: AddressSanitizer:"; LeakSanitizer's report is memory-leak)
ASAN = (
    "heap-buffer-overflow", "heap-use-after-free", "stack-buffer-overflow",
    "global-buffer-overflow", "stack-use-after-return", "stack-use-after-scope",
    "dynamic-stack-buffer-overflow", "container-overflow", "use-after-poison",
    "double-free", "bad-free", "alloc-dealloc-mismatch", "new-delete-type-mismatch",
    "memcpy-param-overlap", "negative-size-param", "calloc-overflow",
    "allocation-size-too-big", "unknown-crash", "SEGV", "memory-leak",
)  # fmt: skip
#: compute-sanitizer's record kinds as the parser names them, every tool together
COMPUTE_SANITIZER = (
    "invalid-access", "misaligned-address", "out-of-range-address", "hardware-exception",
    "api-error", "malloc-free-error", "leak", "uninitialized-access", "unused-memory",
    "race", "race-hazard", "cluster-race", "barrier-error", "wgmma-error",
)  # fmt: skip
KNOWN = (*ASAN, *COMPUTE_SANITIZER)

_GLOB = set("*?[")


def unknown(kind: str) -> str:
    """ "" where `kind` is a glob or a kind a parser gives; else what to say about it
    (the closest known kinds, where there are any)."""
    if not kind or _GLOB & set(kind) or kind in KNOWN:
        return ""
    close = difflib.get_close_matches(kind, KNOWN, n=3, cutoff=0.6)
    hint = f"; did you mean {' or '.join(close)}?" if close else ""
    return f"kind {kind!r} is not one csorch's parsers give{hint}"
