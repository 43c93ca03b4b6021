"""GitHub-flavoured Markdown text that survives what the reports put in it: table cells
(a pipe would end the cell, a newline the row), code spans (kernel names hold `<...>`,
which GitHub would take for HTML, and sometimes backticks) and tables. Pure.
"""

from __future__ import annotations

from collections.abc import Sequence

DASH = "–"


def esc(text: str) -> str:
    """Safe inside a table cell: a pipe would end the cell, a newline the row."""
    return text.replace("|", "\\|").replace("\r", " ").replace("\n", " ")


def code(text: str) -> str:
    """A code span (kernel names hold `<...>`, which GitHub would take for HTML)."""
    fence = "``" if "`" in text else "`"
    pad = " " if fence == "``" else ""
    return f"{fence}{pad}{esc(text)}{pad}{fence}" if text else DASH


def table(header: Sequence[str], body: Sequence[Sequence[str]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in body]
    return lines + [""]
