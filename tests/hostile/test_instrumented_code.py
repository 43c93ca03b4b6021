"""A "fix" that keeps the defect and silences the checker without any of the markers the
source scan reads, each run end to end under ASan with the sandbox on:

- the runtime replaced from the fix's own binary: `__asan_default_options` given by an asm
  label (returning `poison_heap=0`), the runtime's report entry point taken over by the
  linker's `--wrap`, its allocator replaced by a `malloc` of the program's own. Each
  passed: the checker's own function never ran. Now the built binary's symbol table is
  read, and a binary that defines what the runtime defines fails the build by name;
- the compiler's output edited before it is assembled: `-S`, `sed` away the report call,
  the `.s` compiled through the wrappers; or a `cc1` of the build's own run through `-B`.
  Each passed: the unit's debug information named `-fsanitize=address` for code that no
  longer reported. Now, under a sanitizer, the wrappers refuse assembly input and a `-B`,
  `-wrapper` or `-specs` that names what the build could have written;
- `getenv("ASAN_" "OPTIONS")`: the compiler joins the two literals; the scan did not.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from harness import csorch, experiment, said

from orchestrator import sandbox
from orchestrator.carry import optouts

ORIGINAL = (Path(__file__).parents[1] / "fixtures" / "e2e" / "cprog" / "pick.c").read_text()
MAKE = "CC ?= cc\n\npick: pick.c\n"
SED = "sed -i 's/call\\t__asan_report_load4_noabort@PLT/nop/'"
FAKE_CC1 = f"""\
#!/bin/sh
real=$(/usr/bin/gcc -print-prog-name=cc1)
"$real" "$@" || exit $?
out=; prev=; for a; do [ "$prev" = -o ] && out=$a; prev=$a; done
[ -n "$out" ] && {SED} "$out"
exit 0
"""
TRIES = {
    "asm-label-default-options": {
        "pick.c": ORIGINAL.replace(
            "static int sum",
            'const char *opts(void) __asm__("__asan" "_default_options");\n'
            'const char *opts(void) { return "poison_heap=0"; }\n\nstatic int sum',
        )
    },
    "linker-wrap-report": {
        "Makefile": MAKE + "\t$(CC) $(CFLAGS) -o pick pick.c "
        "-Wl,--wrap=__asan_report_load4_noabort\n",
        "pick.c": ORIGINAL.replace(
            "static int sum",
            "void __wrap___asan_report_load4_noabort(void *p) { (void)p; }\n\nstatic int sum",
        ),
    },
    "own-malloc": {
        "pick.c": ORIGINAL.replace(
            "static int sum",
            "static char pool[1 << 16];\nstatic size_t used;\n"
            "void *malloc(size_t n) { void *p = pool + used; used += (n + 15) & ~15ul; "
            "return p; }\nvoid free(void *p) { (void)p; }\n"
            "void *calloc(size_t a, size_t b) { return malloc(a * b); }\n"
            "void *realloc(void *p, size_t n) { (void)p; return malloc(n); }\n\nstatic int sum",
        )
    },
    "assembly-edited": {
        "Makefile": MAKE + "\t$(CC) $(CFLAGS) -S pick.c -o pick.s\n"
        f"\t{SED} pick.s\n\t$(CC) -c pick.s -o pick.o\n\t$(CC) -o pick pick.o\n"
    },
    "own-cc1-by-B": {
        "Makefile": MAKE + "\tchmod +x bin/cc1\n\t$(CC) -B$$PWD/bin/ -o pick pick.c\n",
        "bin/cc1": FAKE_CC1,
    },
}


@pytest.fixture
def sandboxed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(sandbox.ENV, "1")
    sandbox.probe.cache_clear()
    support = sandbox.probe()
    sandbox.probe.cache_clear()
    if not support.works:
        pytest.skip(f"this host cannot sandbox: {support.fact}")


def _patch(place: Path, files: dict[str, str]) -> None:
    """fix.patch: the subject with `files` as given (new files created)."""
    out = []
    for rel, text in files.items():
        old = place / "subject" / rel
        before = old.read_text().splitlines(keepends=True) if old.exists() else []
        after = text.splitlines(keepends=True)
        out.append(f"--- {'a/' + rel if before else '/dev/null'}\n+++ b/{rel}\n")
        out.append(f"@@ -{1 if before else 0},{len(before)} +1,{len(after)} @@\n")
        out += ["-" + line for line in before] + ["+" + line for line in after]
    (place / "fix.patch").write_text("".join(out))


@pytest.mark.parametrize("trick", sorted(TRIES))
def test_a_fix_that_silences_the_checker_in_its_build_is_not_a_pass(
    place: Path, trick: str, sandboxed: None
) -> None:
    _patch(place, TRIES[trick])
    runs = "[{name: memcheck, checker: memcheck}]"
    done = csorch(place, "run", experiment(place, runs=runs), "--backend", "asan", "--out", "out")
    results = json.loads((place / "out" / "results.json").read_text())
    assert results["verdict"] == "inconclusive", said(done)[-3000:]
    assert done.returncode == 3
    fixed = next(b for b in results["builds"] if b["variant"] == "fixed")
    assert not fixed["ok"], fixed
    named = {
        "asm-label-default-options": "defines __asan_default_options",
        "linker-wrap-report": "defines __wrap___asan_report_load4_noabort",
        "own-malloc": "malloc",
        "assembly-edited": "pick.s (assembly)",
        "own-cc1-by-B": "-B",
    }[trick]
    assert named in fixed["error"], fixed["error"]


def test_adjacent_string_literals_are_read_as_the_compiler_joins_them() -> None:
    source = 'int f(void) { return getenv("ASAN_" /* x */ "OPTIONS") != 0; }\n'
    assert optouts.c_marks(source) == [("ASAN_OPTIONS", 1)]
    label = 'const char *o(void) __asm__("__asan"\n  "_default_options");\n'
    assert optouts.c_marks(label) == [("__asan_default_options", 1)]
    apart = 'char *a = "ASAN_"; int n; char *b = "OPTIONS";\n'
    assert optouts.c_marks(apart) == []


def test_a_fix_whose_program_weakens_the_checkers_options_is_not_a_pass(
    place: Path, sandboxed: None
) -> None:
    """The built `pick` is a script that starts the real program with `poison_heap=0`
    appended to ASAN_OPTIONS: the heap's redzones go unpoisoned and the out-of-bounds
    read goes unseen. It passed; each process's start record now holds the options it
    started with, and a process whose options are not csorch's makes the attempt
    inconclusive, named."""
    script = '#!/bin/sh\\nASAN_OPTIONS="$$ASAN_OPTIONS:poison_heap=0" exec ./pick.bin\\n'
    _patch(place, {"Makefile": MAKE + "\t$(CC) $(CFLAGS) -o pick.bin pick.c $(LDFLAGS)\n"
                   f"\tprintf '{script}' > pick\n\tchmod +x pick\n"})  # fmt: skip
    runs = "[{name: memcheck, checker: memcheck}]"
    done = csorch(place, "run", experiment(place, runs=runs), "--backend", "asan", "--out", "out")
    results = json.loads((place / "out" / "results.json").read_text())
    assert results["verdict"] == "inconclusive", said(done)[-3000:]
    assert done.returncode == 3
    fixed = [a for a in results["attempts"] if a["variant"] == "fixed"]
    assert fixed and all("checker options of its own" in (a["parse"] or {}).get(
        "tool_errors", [""])[0] for a in fixed), fixed  # fmt: skip
    assert "poison_heap=0" in json.dumps(fixed)
    # the bundle re-derives to the same: verify agrees with the run
    again = csorch(place, "verify", "out")
    assert again.returncode in (0, 3) and "differ" not in said(again), said(again)[-2000:]
