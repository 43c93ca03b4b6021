"""The machine's paths in a report meant to be read elsewhere (a pull request's comment, a
CI summary): the repository the config lies in becomes `.`, the bundle `<bundle>`, the
build cache `<cache>`, the user's home `~`, the path every build saw its tree at
`<tree>`. The bundle keeps the paths as they were; only
the Markdown shown to others is rewritten."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from typing import Any

from orchestrator.sandbox import BUILD_TREE


def _repository(path: str) -> str:
    """The working tree holding `path` (a directory with `.git`), else its directory."""
    here = os.path.dirname(os.path.abspath(path))
    while True:
        if os.path.exists(os.path.join(here, ".git")):
            return here
        parent = os.path.dirname(here)
        if parent == here:
            return os.path.dirname(os.path.abspath(path))
        here = parent


def _option(command: Sequence[str], flag: str) -> str:
    for i, word in enumerate(command):
        if word == flag and i + 1 < len(command):
            return str(command[i + 1])
        if word.startswith(flag + "="):
            return word.split("=", 1)[1]
    return ""


def anchors(manifest: Mapping[str, Any], bundle: str = "") -> list[tuple[str, str]]:
    """(absolute path, what to write instead), longest first: the bundle (`bundle`, else
    the run's --out), the cache (--cache-dir), the config's repository, the home."""
    command = [str(w) for w in manifest.get("command") or () if isinstance(w, str)]
    config = str((manifest.get("config") or {}).get("path") or "")
    pairs = [
        (BUILD_TREE, "<tree>"),  # where every build saw its source (a frame's file)
        (bundle or _option(command, "--out"), "<bundle>"),
        (_option(command, "--cache-dir"), "<cache>"),
        (_repository(config) if os.path.isabs(config) else "", "."),
        (os.path.expanduser("~"), "~"),
    ]
    seen: dict[str, str] = {}
    for path, name in pairs:
        path = os.path.normpath(path) if path else ""
        if path and path != os.sep and os.path.isabs(path) and path not in seen:
            seen[path] = name
    return sorted(seen.items(), key=lambda p: -len(p[0]))


def scrub(text: str, pairs: Sequence[tuple[str, str]]) -> str:
    """`text` with each absolute path of `pairs` (as a whole path component) rewritten."""
    for path, name in pairs:
        # a path ends where Markdown's code span (`) or an HTML tag or entity (<, &) begins
        text = re.sub(re.escape(path) + r"(?=[/\s`'\"),:;|\]<&]|$)", name, text)
    return text
