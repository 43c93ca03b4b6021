"""`--help` at 80 columns: no option text cut short, no Python type as a metavar, and the
verb list wrapped at the terminal's edge, not where a docstring's source line ended."""

from __future__ import annotations

import re

import pytest
from typer.testing import CliRunner

from orchestrator import cli
from orchestrator.cli import helptext

runner = CliRunner()
VERBS = sorted(c.name for c in cli.app.registered_commands if c.name and not c.hidden)
PYTHON_TYPES = re.compile(r"<(bool|str|int|float|list\[[^]]*\]|int range|float range)>")


def shown(*argv: str, columns: int = 80) -> str:
    done = runner.invoke(cli.app, [*argv, "--help"], env={"COLUMNS": str(columns)})
    assert done.exit_code == 0, done.output
    return done.output


@pytest.mark.parametrize("verb", ["", *VERBS])
def test_every_verb_s_help_reads_at_80_columns(verb: str) -> None:
    text = shown(*([verb] if verb else []))
    assert "…" not in text, text  # nothing cropped
    assert not PYTHON_TYPES.search(text), text
    assert max(len(line) for line in text.splitlines()) <= 80, text


def test_the_verb_list_wraps_at_the_edge_not_mid_sentence() -> None:
    text = shown()
    listed = text.split("Commands:", 1)[1].splitlines()
    for before, line in zip(listed, listed[1:], strict=False):
        if line.startswith(" " * 11):  # a continuation: the line before was full
            assert len(before) >= 60, (before, line)
    assert "--find-fix, the first that no longer does" in " ".join(text.split())


def test_a_wide_terminal_keeps_rich_panels_with_plain_metavars() -> None:
    text = shown("run", columns=160)
    assert "╭─ Options" in text and "--out" in text and " PATH " in text
    assert not PYTHON_TYPES.search(text), text


def test_unwrap_keeps_paragraphs_and_lists() -> None:
    assert helptext.unwrap("one\ntwo\n\nthree\n- item\n  indented") == (
        "one two\n\nthree\n- item\n  indented"
    )
    assert helptext.first_sentence("First one. Then more.\n\nNext.") == "First one."
