"""nodes: the case markers read back, for a clean session, a crash, a lost CUDA context,
an import shadowing error, and a fixture error."""

from __future__ import annotations

from pathlib import Path

from orchestrator.markers import plugin, reader
from orchestrator.model import Outcome

A, B, C = "t.py::test_a", "t.py::test_b[x-1]", "t.py::test_c"


def log(*lines: str) -> list[str]:
    return [*lines]


def begin(n: str) -> str:
    return f"{plugin.BEGIN} {n}"


def end(n: str) -> str:
    return f"{plugin.END} {n}"


def outcome(n: str, o: str) -> str:
    return f"{plugin.OUTCOME} {n} {o}"


def test_a_finished_session() -> None:
    r = reader.read(
        log(
            begin(A),
            outcome(A, "passed"),
            end(A),
            begin(B),
            "noise",
            outcome(B, "failed"),
            end(B),
            f"{plugin.SESSION_END} 1",
        )
    )
    assert r.finished and r.session_status == 1 and r.began == (A, B)
    assert [(n.nodeid, n.outcome) for n in r.nodes] == [(A, Outcome.PASSED), (B, Outcome.FAILED)]


def test_a_process_that_died_mid_case() -> None:
    r = reader.read(log(begin(A), outcome(A, "passed"), end(A), begin(B), "Segmentation fault"))
    assert not r.finished and r.session_status is None
    assert r.nodes[1].outcome is Outcome.ERROR
    assert "died" in r.nodes[1].detail


def test_a_cuda_error_at_teardown_loses_the_context() -> None:
    r = reader.read(
        log(
            begin(A),
            outcome(A, "passed"),
            f"{plugin.CUDA_ERROR} {A} CUDA error: unspecified launch failure",
            end(A),
            f"{plugin.SESSION_END} 2",
        )
    )
    assert r.context_lost == A and not r.finished
    assert r.nodes[0].outcome is Outcome.ERROR and "unspecified" in r.nodes[0].detail


def test_a_launch_failure_message_inside_a_case_loses_the_context() -> None:
    r = reader.read(
        log(
            begin(A),
            "RuntimeError: CUDA error: unspecified launch failure",
            outcome(A, "failed"),
            end(A),
            begin(C),
            outcome(C, "failed"),
            end(C),
            f"{plugin.SESSION_END} 1",
        )
    )
    assert r.context_lost == A and r.began == (A, C)


def test_a_fixture_error_outranks_the_call_outcome() -> None:
    r = reader.read(
        log(
            begin(A),
            outcome(A, "passed"),
            outcome(A, "error"),
            end(A),
            begin(C),
            outcome(C, "skipped"),
            end(C),
            f"{plugin.SESSION_END} 1",
        )
    )
    assert [n.outcome for n in r.nodes] == [Outcome.ERROR, Outcome.SKIPPED]


def test_an_import_error() -> None:
    r = reader.read(
        log(
            f"{plugin.IMPORT_ERROR} qext qext comes from /x, not from /y",
            f"{plugin.SESSION_END} 4",
        )
    )
    assert r.import_error.startswith("qext comes from /x") and r.nodes == ()


def test_unrun_counts_what_a_fresh_process_would_still_have_to_run() -> None:
    collected = f"{plugin.COLLECTED} 3"
    died_at_last = reader.read(log(collected, begin(A), end(A), begin(B), end(B), begin(C)))
    assert died_at_last.unrun == 0 and died_at_last.began == (A, B, C)
    # the context died in A: B and C prove nothing and must run again
    lost = reader.read(
        log(collected, begin(A), "CUDA error: unspecified launch failure", end(A), begin(B))
    )
    assert lost.context_lost == A and lost.unrun == 2
    assert reader.read(log(begin(A))).unrun is None  # no collection marker: unknown


def test_a_real_memcheck_log_where_the_context_died_in_the_last_case() -> None:
    # H200, csorch's ninth process of the RNG control's memcheck attempt (trimmed)
    log = (
        Path(__file__).resolve().parents[2]
        / "fixtures/compute-sanitizer/h200-csorch/rebuilt-memcheck-160x48-context-lost.log"
    )
    r = reader.read(log.read_text().splitlines())
    node = "tests/regression/test_rng_ownership.py::test_seed_sensitivity[cuda-160x48]"
    assert r.collected == 1 and r.began == (node,) and r.context_lost == node
    assert r.nodes[0].outcome is Outcome.ERROR and "unspecified launch failure" in r.nodes[0].detail
    assert r.session_status is None and not r.finished and r.unrun == 0


def test_the_gpu_a_process_used() -> None:
    line = "[csorch-device] GPU-6a1c0c5e-8f0b-4b4e-9d44-2b1f7f0e8a11 pci=0000:19:00.0 index=0"
    report = reader.read(["[csorch-collected] 1", line + " name=NVIDIA H200", "x"])
    assert report.gpu == "GPU-6a1c0c5e-8f0b-4b4e-9d44-2b1f7f0e8a11"
    assert reader.read(["[csorch-collected] 1"]).gpu == ""
    assert plugin.DEVICE == "[csorch-device]"


def test_phases_split_a_launch_by_its_clock_marks() -> None:
    clock = plugin.CLOCK
    lines = [
        f"{clock} process 100.0",
        f"{clock} configure 100.5",
        f"{clock} collected 102.0",
        f"{clock} case-begin 102.1",
        begin(A),
        f"{clock} case-end 103.1",
        f"{clock} case-begin 103.1",
        f"{clock} case-end 103.3",
        f"{clock} session-end 103.4",
    ]
    p = reader.phases(lines, started=99.75, duration=4.0)
    assert p.startup == 0.25 and p.interpreter == 0.5 and p.collection == 1.5
    assert round(p.cases, 3) == 1.3 and p.first_case == 1.0
    assert [round(x, 3) for x in p.other_cases] == [0.2]
    assert round(p.exit, 3) == 0.35
    # a launch without marks (a command case, an old log) has no phases, not zeros
    bare = reader.phases(["hello"], started=0.0, duration=1.0)
    assert bare.startup is None and bare.cases is None and bare.exit is None


# --- found by tests/fuzz (issue 11) -----------------------------------------------------


def test_a_corrupt_number_in_a_marker_is_no_marker_not_a_crash() -> None:
    report = reader.read(["[csorch-collected] " + "9" * 5000, "[csorch-session-end] " + "1" * 5000])
    assert report.collected is None and report.session_status is None and not report.finished


def test_a_cuda_error_for_a_node_whose_begin_was_lost_counts_it_as_begun() -> None:
    report = reader.read(["[csorch-collected] 2", "[csorch-cuda-error] t.py::a CUDA error: x"])
    assert report.began == ("t.py::a",) and report.context_lost == "t.py::a"
    assert report.unrun == 1  # raised ValueError before: the node was not in `began`


def test_a_node_that_begins_twice_is_reported_once() -> None:
    lines = ["[csorch-case-begin] t.py::a", "[csorch-case-begin] t.py::a"]
    assert reader.read(lines).began == ("t.py::a",)


def test_a_marker_keeps_its_node_id_and_drops_trailing_whitespace() -> None:
    # the linear form of the pattern (tools/fuzz_linear.py) reads what the lazy one did
    assert reader.read(["[csorch-case-begin] t.py::a  b \t"]).began == ("t.py::a  b",)


def test_real_h200_rank_logs_name_the_gpu_they_ran_on() -> None:
    """Two ranks of a replicate fan-out on the H200 (one by index, one by UUID): both
    children named the same GPU, the one nvidia-smi listed."""
    from pathlib import Path

    ranks = Path(__file__).resolve().parents[2] / "fixtures" / "e2e" / "h200-ranks"
    for name in ("rank0-gpu0.txt", "rank1-uuid-memcheck.txt"):
        report = reader.read((ranks / name).read_text().splitlines())
        assert report.gpu == "GPU-00c0510e-e71c-899e-9edf-39021cd3ea5c", name
        assert report.finished and len(report.nodes) == 3
