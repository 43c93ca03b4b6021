"""carry/optouts: the checker opt-outs found in a real tree on disk, C-family and Python,
with comments and docstrings left out and literals read."""

from __future__ import annotations

from pathlib import Path

from orchestrator.carry import optouts
from orchestrator.run import sources

C = r"""// no_sanitize_address: only a comment
/* __asan_unpoison_memory_region in a block comment */
#include <stdlib.h>
__attribute__((no_sanitize("address"))) int f(int *p) { return p[1]; }
#if defined(__SANITIZE_ADDRESS__) || __has_feature(address_sanitizer)
static const char *e = "ASAN_OPTIONS";
#endif
void g(char *p) { ASAN_POISON_MEMORY_REGION(p, 1); __asan_poison_memory_region(p, 1); }
void h(char *p) { __asan_unpoison_memory_region(p, 1); puts("no sanitizer here"); }
const char *r = R"x(CUDA_INJECTION64_PATH)x";
__attribute__((optimize("no-sanitize=address"))) int k(int *p) { return p[2]; }
"""

PY = '''"""Runs under compute-sanitizer; reads SANITIZER settings (a docstring: not code)."""
import os


def test_sum():
    """ASAN_OPTIONS in a docstring is no code."""
    # PYTORCH_NO_CUDA_MEMORY_CACHING in a comment is no code
    if os.environ.get("PYTORCH_NO_CUDA_MEMORY_CACHING"):
        return
    lib.__asan_default_options
'''


def test_c_family_marks_are_read_from_code_and_literals_only() -> None:
    assert optouts.c_marks(C) == [
        ("no_sanitize", 4),
        ("__SANITIZE_ADDRESS__", 5),
        ("address_sanitizer", 5),
        ("ASAN_OPTIONS", 6),
        ("__asan_unpoison_memory_region", 9),
        ("CUDA_INJECTION", 10),
        ("no-sanitize", 11),
    ]


def test_python_marks_leave_docstrings_and_comments_out() -> None:
    assert optouts.python_marks(PY) == [
        ("PYTORCH_NO_CUDA_MEMORY_CACHING", 8),
        ("__asan_default_options", 10),
    ]


def test_python_that_does_not_parse_is_still_read() -> None:
    assert optouts.python_marks('x = (\nos.environ["LD_PRELOAD"]\n') == [("LD_PRELOAD", 2)]


def test_a_tree_is_scanned_by_language_with_paths_and_lines(tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "k.cu").write_text("__global__ void k() {}\n#ifdef __SANITIZE_ADDRESS__\n")
    (tmp_path / "test_k.py").write_text(PY)
    (tmp_path / "notes.txt").write_text("no_sanitize_address\n")  # not a source: not read
    (tmp_path / "big.h").write_bytes(b"// " + b"x" * optouts.MAX_BYTES + b"\nno_sanitize\n")
    assert optouts.scan(tmp_path, sources.walk_source(tmp_path)) == (
        "PYTORCH_NO_CUDA_MEMORY_CACHING test_k.py:8",
        "__SANITIZE_ADDRESS__ src/k.cu:2",
        "__asan_default_options test_k.py:10",
    )
