"""The cache key covers what the build reads: a directory symlink re-pointed is a new
source, a new key, a new build; never a stale cache hit."""

from __future__ import annotations

import json
from pathlib import Path

from harness import csorch, experiment, said

from orchestrator.run import sources

PICK = """\
#include <stdio.h>
#include "inc/n.h"
int main(void) { printf("n %d\\n", N); return N == 8 ? 0 : 1; }
"""


def test_repointing_a_directory_link_changes_the_digest(tmp_path: Path) -> None:
    (tmp_path / "inc_good").mkdir()
    (tmp_path / "inc_bad").mkdir()
    (tmp_path / "inc_good" / "n.h").write_text("#define N 8\n")
    (tmp_path / "inc_bad" / "n.h").write_text("#define N 9\n")
    (tmp_path / "inc").symlink_to("inc_good")
    good = sources.tree_digest(tmp_path)
    (tmp_path / "inc").unlink()
    (tmp_path / "inc").symlink_to("inc_bad")
    assert sources.tree_digest(tmp_path) != good


def test_a_repointed_include_directory_is_built_again(place: Path) -> None:
    subject = place / "subject"
    (subject / "pick.c").write_text(PICK)
    (subject / "inc_good").mkdir()
    (subject / "inc_bad").mkdir()
    (subject / "inc_good" / "n.h").write_text("#define N 8\n")
    (subject / "inc_bad" / "n.h").write_text("#define N 9\n")
    (subject / "inc").symlink_to("inc_good")
    config = experiment(place, runs="[{name: plain, checker: none}]", expect=False)
    (place / "fix.patch").write_text("")  # the variants differ by name only
    config.write_text(config.read_text().replace("    patches: [fix.patch]\n", ""))
    done = csorch(place, "run", config, "--backend", "asan", "--out", "one")
    assert done.returncode == 3, said(done)[-3000:]  # no expectations: not judged
    first = json.loads((place / "one" / "results.json").read_text())
    assert {a["outcome"] for a in first["attempts"]} == {"passed"}
    (subject / "inc").unlink()
    (subject / "inc").symlink_to("inc_bad")
    csorch(place, "run", config, "--backend", "asan", "--out", "two")
    second = json.loads((place / "two" / "results.json").read_text())
    # a new key, built again (the two variants share it: one builds, the other waits)
    assert {b["cache_key"] for b in second["builds"]}.isdisjoint(
        b["cache_key"] for b in first["builds"]
    )
    assert not all(b["cached"] for b in second["builds"])
    assert {a["outcome"] for a in second["attempts"]} == {"failed"}
