"""report.markdown: the PR validation section of real ASan bundles of the C program."""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

from orchestrator import bundle
from orchestrator.report import markdown

NODES = ("tests/t.py::test_a[cpu]", "tests/t.py::test_b[cpu]")


def render(path: Path) -> str:
    return markdown.render(*bundle.read(path))


def edited(src: Path, tmp_path: Path, edit: Callable[[dict[str, Any]], None]) -> Path:
    """A copy of a (read-only) session bundle with its results.json changed by `edit`."""
    dest = tmp_path / src.name
    shutil.copytree(src, dest)
    results = json.loads((dest / bundle.RESULTS).read_text())
    edit(results)
    (dest / bundle.RESULTS).write_text(json.dumps(results, indent=1))
    return dest


def as_pytest_nodes(results: dict[str, Any]) -> None:
    """Case `sum` as a pytest case of two nodes: test_b fails, findings go to test_a."""
    for a in results["attempts"]:
        if a["nodes"]:
            a["nodes"] = [
                {"nodeid": NODES[0], "outcome": "passed", "detail": ""},
                {"nodeid": NODES[1], "outcome": "failed", "detail": "AssertionError"},
            ]
        for f in (a["parse"] or {}).get("findings", []):
            f["case"] = NODES[0]


def table_rows(text: str, header_start: str) -> list[str]:
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(header_start))
    out = []
    for line in lines[start:]:
        if not line.startswith("|"):
            break
        out.append(line)
    return out


def cells(row: str) -> list[str]:
    return [c.strip() for c in re.split(r"(?<!\\)\|", row)[1:-1]]


def test_pass_bundle_holds_the_verdict_identities_and_table(cprog_bundles) -> None:
    text = render(cprog_bundles["pass"])
    results, manifest = bundle.read(cprog_bundles["pass"])
    assert text.startswith("## Validation: `c-oob`: PASS")
    assert "**Verdict: PASS: the fix causally removes the defect**" in text
    assert "- fixed removes every target (1)" in text
    assert "| backend | **asan**: asked for with --backend asan |" in text
    assert f"| torch | {manifest['host']['torch']}" in text
    for source in results["sources"]:  # tree digests in short and in full
        assert f"`{source['digest'][:12]}`" in text and f"`{source['digest']}`" in text
        for patch in source["patches"]:
            assert f"`{patch['sha256']}`" in text
    for build in results["builds"]:
        for artifact in build["artifacts"]:
            assert f"`{artifact['sha256']}`" in text
    rows = table_rows(text, "| case |")
    assert cells(rows[0]) == [
        "case",
        "`fixed` plain",
        "`fixed` memcheck (asan)",
        "`control` plain",
        "`control` memcheck (asan)",
        "reason",
    ]
    assert cells(rows[2]) == ["**sum**", "passed", "passed 0", "passed", "passed 1", ""]
    signature = "| `asan heap-buffer-overflow read size 4 in sum` | `c9c53e2d1ae7` |"
    assert f"{signature} 0 | 1 (1/1 repeats) |" in text
    assert "- Nothing: every planned attempt ran and its evidence is conclusive." in text


def test_every_table_row_has_as_many_cells_as_its_header(cprog_bundles) -> None:
    for path in cprog_bundles.values():
        lines = render(path).splitlines()
        width = None
        for line in lines:
            if not line.startswith("|"):
                width = None
                continue
            n = len(cells(line))
            width = width or n
            assert n == width, line


def test_fail_bundle_states_why(cprog_bundles) -> None:
    text = render(cprog_bundles["fail"])
    assert "**Verdict: FAIL: the fix does not remove the defect**" in text
    assert "fix fixed still shows [checker=asan kind=heap-buffer-overflow" in text
    assert "| **sum** | passed | passed 1 | passed | passed 1 |" in text
    assert "| 1 (1/1 repeats) | 1 (1/1 repeats) |" in text


def test_inconclusive_bundle_says_what_was_not_run(cprog_bundles) -> None:
    text = render(cprog_bundles["inconclusive"])
    assert "**Verdict: INCONCLUSIVE" in text
    assert "| **sum** | **not built** | **not built** | passed | passed 1 |" in text
    not_run = text.split("### What was not run", 1)[1]
    assert "Variant `fixed` did not build: patch" in not_run and "stale.patch" in not_run
    inconclusive = "Inconclusive (variant fixed did not build): `fixed` / `plain` / `sum` repeat 0"
    assert inconclusive in not_run
    # the variant that never got a tree still shows the patch it was given
    assert "| `fixed` | fix | not materialized (cprog) | `stale.patch` |" in text


def test_an_interrupted_bundle_says_so_and_lists_the_gaps(cprog_bundles, tmp_path) -> None:
    def interrupt(results: dict[str, Any]) -> None:
        results.update(complete=False, interrupted=True, verdict=None, judgement=None)
        results["attempts"] = [a for a in results["attempts"] if a["variant"] == "control"]

    text = render(edited(cprog_bundles["pass"], tmp_path, interrupt))
    assert text.startswith("## Validation: `c-oob`: NOT JUDGED")
    assert "**Verdict: not judged**" in text
    not_run = text.split("### What was not run", 1)[1]
    assert "The run was interrupted: the bundle is incomplete" in not_run
    assert "Never attempted: `fixed` / `plain` / `sum`, `fixed` / `memcheck` / `sum`" in not_run


def test_pytest_nodes_get_rows_of_their_own(cprog_bundles, tmp_path) -> None:
    text = render(edited(cprog_bundles["pass"], tmp_path, as_pytest_nodes))
    rows = [cells(r) for r in table_rows(text, "| case |")[2:]]
    assert rows == [
        ["**sum**", "", "", "", "", ""],
        ["`test_a[cpu]`", "passed", "passed 0", "passed", "passed 1", ""],
        [
            "`test_b[cpu]`",
            "**failed**",
            "**failed** 0",
            "**failed**",
            "**failed** 0",
            "every column: AssertionError",
        ],
    ]


def test_cells_and_signatures_count_the_records_a_parser_folded(cprog_bundles, tmp_path) -> None:
    def folded(results: dict[str, Any]) -> None:
        as_pytest_nodes(results)
        for a in results["attempts"]:
            for f in (a["parse"] or {}).get("findings", []):
                f["count"] = 40  # as a parser writes the last example kept of 40 records

    text = render(edited(cprog_bundles["pass"], tmp_path, folded))
    rows = [cells(r) for r in table_rows(text, "| case |")[2:]]
    assert rows[1] == ["`test_a[cpu]`", "passed", "passed 0", "passed", "passed 40", ""]
    assert "40 (1/1 repeats)" in text


def test_nodes_of_two_classes_keep_their_class_names(cprog_bundles, tmp_path) -> None:
    def two_classes(results: dict[str, Any]) -> None:
        as_pytest_nodes(results)
        for a in results["attempts"]:
            for n, node in zip(
                a["nodes"], ("tests/t.py::TestA::test_x", "tests/t.py::TestB::test_x"), strict=False
            ):
                n["nodeid"] = node
            for f in (a["parse"] or {}).get("findings", []):
                f["case"] = "tests/t.py::TestA::test_x"

    text = render(edited(cprog_bundles["pass"], tmp_path, two_classes))
    rows = [cells(r)[0] for r in table_rows(text, "| case |")[2:]]
    # before: two rows both named `test_x`
    assert rows == ["**sum**", "`TestA::test_x`", "`TestB::test_x`"]


def test_the_reason_column_says_why_a_variant_did_not_run(cprog_bundles) -> None:
    text = render(cprog_bundles["inconclusive"])
    (row,) = [cells(r) for r in table_rows(text, "| case |")[2:]]
    # before: no reason in the table, only in *What was not run*
    assert row[-1].startswith("fixed/plain, fixed/memcheck: not built: patch"), row[-1]


def test_variants_state_their_description_and_build_environment(cprog_bundles, tmp_path) -> None:
    def describe(results: dict[str, Any]) -> None:
        v = results["experiment"]["variants"][0]
        v["description"] = "the fix of issue 7"
        v["build"]["env"] = [["CFLAGS", "-O1 -g"]]

    text = render(edited(cprog_bundles["pass"], tmp_path, describe))
    name = json.loads((cprog_bundles["pass"] / bundle.RESULTS).read_text())["experiment"][
        "variants"
    ][0]["name"]
    assert f"- `{name}`: the fix of issue 7; build environment `CFLAGS=-O1 -g`" in text


def test_top_frames_carry_file_and_line_and_a_use_after_free_its_free_site(
    cprog_bundles, tmp_path
) -> None:
    def freed(results: dict[str, Any]) -> None:
        for a in results["attempts"]:
            for f in (a["parse"] or {}).get("findings", []):
                f["related"] = [
                    {
                        "role": "freed",
                        "frames": [
                            {
                                "function": "__interceptor_free",
                                "file": "asan_malloc_linux.cpp",
                                "line": 52,
                            },
                            {"function": "release(float*)", "file": "/src/pool.c", "line": 17},
                        ],
                    }
                ]

    text = render(edited(cprog_bundles["pass"], tmp_path, freed))
    frames = text.split("Top frames:", 1)[1]
    assert re.search(r"`sum \(\w+\.c:\d+\)`", frames), frames
    # the free site, its allocator frame skipped
    assert "freed at `release (pool.c:17)`" in frames


STARTUP = {
    "checker": "asan",
    "kind": "api-error",
    "code": "CUDA_ERROR_INVALID_VALUE",
    "frames": [{"function": "cuGetProcAddress_v2"}],
    "host_frames": [
        {"function": "cuGetProcAddress_v2", "module": "libcuda.so.1"},
        {"function": "c10::cuda::DriverAPI::get()", "module": "libc10_cuda.so"},
    ],
}


def test_ambient_signatures_and_broken_cases_are_listed_as_such(cprog_bundles, tmp_path) -> None:
    def environment(results: dict[str, Any]) -> None:
        for a in results["attempts"]:
            if a["run"] == "memcheck" and a["parse"]:
                a["parse"]["findings"].append(dict(STARTUP))
        results["judgement"]["broken"] = ["memcheck/other: pytest: ImportError in conftest"]

    text = render(edited(cprog_bundles["pass"], tmp_path, environment))
    row = next(line for line in text.splitlines() if "cuGetProcAddress_v2" in line and "|" in line)
    assert "(ambient)" in row
    assert "sum` (ambient)" not in text  # the control's own finding is not the environment's
    not_run = text.split("### What was not run", 1)[1]
    assert "Broken in every variant alike" in not_run and "memcheck/other" in not_run


def test_no_path_of_this_machine_reaches_a_comment(cprog_bundles) -> None:
    """The repository, the bundle, the cache and the home are written relative: a pull
    request's comment does not carry /home/someone/... or the runner's scratch paths."""
    path = cprog_bundles["inconclusive"]
    text = markdown.render(*bundle.read(path), str(path))
    root = str(Path(__file__).resolve().parents[3])
    for machine in (root, str(path), str(path.parent / "cache"), str(Path.home())):
        assert machine not in text, machine
    assert "--out <bundle> --cache-dir <cache>" in text
    assert "./tests/fixtures/e2e/c-oob-badpatch.yaml" in text


def test_a_long_reason_is_cut_in_its_cell_and_given_whole_below(cprog_bundles) -> None:
    text = render(cprog_bundles["inconclusive"])
    (row,) = [cells(r) for r in table_rows(text, "| case |")[2:]]
    assert len(row[-1]) <= markdown.REASON_CELL + 6 and row[-1].endswith("… [1]"), row[-1]
    (note,) = [line for line in text.splitlines() if line.startswith("[1] ")]
    assert note.rstrip().endswith("the hunk's context is not in the file")


def test_a_gate_too_long_for_one_comment_keeps_every_verdict() -> None:
    from orchestrator.report import verdicts

    gate = "## Release gate `g`: **FAIL**\n\n- why\n"
    sections = [gate] + [
        f"## Validation: `e{i}`: FAIL\n\n**Verdict: FAIL**\n\n- reason {i}\n\n### Setup\n\n"
        + "x" * 20_000
        for i in range(5)
    ]
    text = verdicts.fit(sections)
    assert len(text) <= verdicts.COMMENT_LIMIT and text.startswith(gate)
    for i in range(5):
        assert f"## Validation: `e{i}`: FAIL" in text and f"- reason {i}" in text
    assert "GitHub's comment limit" in text
    assert verdicts.fit(sections[:2]) == "\n".join(sections[:2])  # short: as it was


def test_frames_without_file_and_line_are_explained(cprog_bundles, tmp_path) -> None:
    """A stripped .so gives frames of bare symbols: the report says why and what to do."""

    def stripped(results: dict[str, Any]) -> None:
        for a in results["attempts"]:
            for f in (a["parse"] or {}).get("findings", []):
                for frame in f["frames"]:
                    frame.update(file="", line=None, module="/opt/libpick.so")

    text = render(edited(cprog_bundles["fail"], tmp_path, stripped))
    (line,) = [x for x in text.splitlines() if x.startswith("- `") and "sum" in x]
    assert markdown.NO_LINES in line
    assert markdown.NO_LINES not in render(cprog_bundles["fail"])
