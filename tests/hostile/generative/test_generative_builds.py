"""Hostile builds, generated: the "fix" keeps the control's defect (a read one past the end
of a heap block, in its own unit `sum.c`) and its Makefile tries to build that unit past
the checker, in any combination of:
- the compiler called by absolute path (`/usr/bin/gcc`), past csorch's wrappers;
- switches that take the sanitizer or its debug information away (`-g0`,
  `-fno-sanitize=address`, an `asan-*` parameter, an ignore list naming `sum`);
- the program stripped of its debug information after the link;
- a line forged into the wrappers' record, claiming an instrumented compile of the
  object it made (the build can write that record: it runs as the same user).
Each is run end to end under ASan with the sandbox on, and held to docs/threat-model.md,
section 2: the fix is never PASS (FAIL where the checker still sees the read, else
INCONCLUSIVE with a reason: a build that failed naming the unit), every answer is a
documented exit code, and a finished bundle verifies.
"""

from __future__ import annotations

import difflib
import json
import uuid
from dataclasses import dataclass
from pathlib import Path

from gen_promises import answered, csorch, needs_sandbox, profile, said
from hypothesis import example, given
from hypothesis import strategies as st

MAIN = """\
#include <stdio.h>
#include <stdlib.h>

int sum(const int *values, int n);

int main(void) {
    int *values = malloc(8 * sizeof *values);
    for (int i = 0; i < 8; ++i)
        values[i] = i;
    printf("sum %d\\n", sum(values, 8));
    free(values);
    return 0;
}
"""
SUM = """\
int sum(const int *values, int n) {
    int total = 0;
    for (int i = 0; i <= n; ++i)  /* one past the end: the defect the fix keeps */
        total += values[i];
    return total;
}
"""
PLAIN = """\
CC ?= cc

pick: main.o sum.o
\t$(CC) $(CFLAGS) -o pick main.o sum.o $(LDFLAGS)

main.o: main.c
\t$(CC) $(CFLAGS) -c main.c -o main.o

sum.o: sum.c
\t$(CC) $(CFLAGS) -c sum.c -o sum.o
"""
FLAGS = (
    "-O2",
    "-g0",
    "-fno-sanitize=address",
    "--param=asan-instrument-reads=0",
    "-fsanitize-ignorelist=ignore.txt",
)
AFTER = ("", "strip -g pick", "objcopy --strip-debug pick")
# the record's line for sum.o, as a compile through the wrappers would have written it
FORGE = (
    "\tprintf '{\"tool\": \"gcc\", \"mode\": \"compile\", \"argv\": [\"gcc\", "
    "\"-fsanitize=address\", \"-g\", \"-c\", \"sum.c\"], \"cwd\": \"%s\", \"sources\": "
    "[\"%s/sum.c\"], \"outputs\": [{\"path\": \"%s/sum.o\", \"sha256\": \"%s\"}], "
    "\"inputs\": []}\\n' \"$$PWD\" \"$$PWD\" \"$$PWD\" \"$$(sha256sum sum.o | cut -c1-64)\" "
    ">> /tmp/csorch-build/out/units.jsonl\n"
)
CONFIG = """\
name: generated-build
source: subject
variants:
  - name: fixed
    patches: [fix.patch]
    build: {kind: command, command: [make], outputs: [pick]}
  - name: control
    build: {kind: command, command: [make], outputs: [pick]}
runs: [{name: memcheck, checker: memcheck}]
cases: [{name: sum, command: [./pick]}]
timeout: 30s
expect:
  controls: [control]
  fix: fixed
  target: {checker: asan, kind: heap-buffer-overflow, access: read, function: sum}
"""


@dataclass(frozen=True)
class Trick:
    absolute: bool  # sum.c compiled by /usr/bin/gcc
    flags: tuple[str, ...]  # sum.c's own switches
    after: str  # a step after the link
    forge: bool  # a forged record line for sum.o

    def makefile(self) -> str:
        compiler = "/usr/bin/gcc" if self.absolute else "$(CC)"
        rule = f"\t{compiler} {' '.join(self.flags)} -c sum.c -o sum.o\n"
        text = PLAIN.replace("\t$(CC) $(CFLAGS) -c sum.c -o sum.o\n", rule)
        if self.forge:
            text = text.replace(rule, rule + FORGE)
        if self.after:
            text = text.replace("-o pick main.o sum.o $(LDFLAGS)\n",
                                f"-o pick main.o sum.o $(LDFLAGS)\n\t{self.after}\n")  # fmt: skip
        return text


def tricks() -> st.SearchStrategy[Trick]:
    return st.builds(
        Trick,
        absolute=st.booleans(),
        flags=st.lists(st.sampled_from(FLAGS), max_size=3, unique=True).map(tuple),
        after=st.sampled_from(AFTER),
        forge=st.booleans(),
    )


def _try(shared: Path, trick: Trick) -> None:
    place = Path(shared) / f"build-{uuid.uuid4().hex}"
    tree = place / "subject"
    tree.mkdir(parents=True)
    (tree / "main.c").write_text(MAIN)
    (tree / "sum.c").write_text(SUM)
    (tree / "ignore.txt").write_text("fun:sum\n")
    (tree / "Makefile").write_text(PLAIN)
    patch = difflib.unified_diff(
        PLAIN.splitlines(keepends=True), trick.makefile().splitlines(keepends=True),
        "a/Makefile", "b/Makefile",
    )  # fmt: skip
    (place / "fix.patch").write_text("".join(patch))
    (place / "generated.yaml").write_text(CONFIG)
    home = place / "home"
    home.mkdir()
    done = csorch(place, "run", "generated.yaml", "--backend", "asan", "--out", "out",
                  home=home, cache=shared / "cache")  # fmt: skip
    answered(done)
    results = json.loads((place / "out" / "results.json").read_text())
    verdict = results["verdict"]
    assert verdict != "pass", f"a unit built past the checker passed\n{trick}\n{said(done)}"
    assert done.returncode in (1, 3), said(done)
    fixed = next(b for b in results["builds"] if b["variant"] == "fixed")
    if verdict == "inconclusive":
        reasons = results["judgement"]["reasons"]
        assert reasons, said(done)
        if not fixed["ok"]:  # refused by name: the unit, the object or the program
            assert any(w in fixed["error"] for w in ("sum", "pick")), fixed["error"]
    checked = csorch(place, "verify", "out", home=home, cache=shared / "cache")
    answered(checked)
    assert checked.returncode == 0, said(checked)


@profile()
@given(trick=tricks())
@example(trick=Trick(False, (), "", False))  # nothing hidden: the checker sees the read
@example(trick=Trick(True, ("-O2",), "", True))  # past the wrappers, its record forged
@example(trick=Trick(False, ("-fsanitize-ignorelist=ignore.txt",), "strip -g pick", False))
@example(trick=Trick(True, ("-g0",), "objcopy --strip-debug pick", True))
def test_a_unit_built_past_the_checker_never_passes(shared: Path, trick: Trick) -> None:
    needs_sandbox()
    _try(shared, trick)
