"""carry.classify on a real git history (issue 39, item 5): a repository made in a temp
dir whose base commit is a copy of qext's tree `ext/` plus a small test data file; each
case is one commit on its own branch from the base, a real edit of a real qext file. The
changed files come from `git diff --name-only -z`, both versions from `git cat-file blob`
(bytes), as a carry would read them. Comment-only (C++, CUDA, Python), docstring-only and
formatting-only commits carry; a one-token change, a changed default argument, a changed
data file and a space inside a string literal (C++ and Python) do not, and the verdict
names the file that stops it; so do a `//` comment made to end in a backslash (it
swallows the next line) and a space put inside an include's <header name>. Real git and
real gcc in children; no user git config."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from orchestrator.carry.classify import EXECUTABLE, Change, classify

pytestmark = [
    pytest.mark.process,  # git, and gcc -fpreprocessed, in children
    pytest.mark.skipif(shutil.which("git") is None, reason="no git here"),
]
needs_gcc = pytest.mark.skipif(shutil.which("gcc") is None, reason="no gcc here")

EXT = Path(__file__).resolve().parents[3] / "ext"
DATA = "tests/data/cases.json"
CASES_JSON = '{"shapes": [[128, 64], [256, 32]], "seed": 7}\n'
WHO = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.invalid",
       "GIT_AUTHOR_DATE": "2024-01-01T00:00:00Z", "GIT_COMMITTER_NAME": "t",
       "GIT_COMMITTER_EMAIL": "t@example.invalid", "GIT_COMMITTER_DATE": "2024-01-01T00:00:00Z",
       "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}  # fmt: skip


def git(repo: Path, *args: str) -> bytes:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")} | WHO
    cmd = ["git", "-c", "user.name=t", "-c", "user.email=t@example.invalid", *args]
    return subprocess.run(cmd, cwd=repo, env=env, check=True, capture_output=True).stdout


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The base commit, tagged `base`: ext/ as it is in this checkout, plus a data file."""
    root = tmp_path_factory.mktemp("history")
    ignore = shutil.ignore_patterns("_C*.so", "__pycache__", "build")
    shutil.copytree(EXT, root / "ext", ignore=ignore)
    (root / DATA).parent.mkdir(parents=True)
    (root / DATA).write_text(CASES_JSON)
    git(root, "init", "-q")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "base: qext")
    git(root, "tag", "base")
    return root


def commit(repo: Path, branch: str, edits: list[tuple[str, str, str]]) -> list[Change]:
    """One commit on `branch` from the base, each (path, old, new) replacing the one
    occurrence of `old`; then every file changed against the base, classified."""
    git(repo, "checkout", "-q", "-f", "-b", branch, "base")  # -f: no leftovers of a failed case
    for path, old, new in edits:
        text = (repo / path).read_text()
        assert text.count(old) == 1, f"{path}: {old!r} is not there exactly once"
        (repo / path).write_text(text.replace(old, new))
    git(repo, "commit", "-q", "-a", "-m", branch)
    names = git(repo, "diff", "--no-renames", "--name-only", "-z", "base", branch)
    changes = []
    for path in names.decode().split("\0")[:-1]:
        old, new = (git(repo, "cat-file", "blob", f"{rev}:{path}") for rev in ("base", branch))
        changes.append(classify(path, old, new))
    assert sorted(c.path for c in changes) == sorted({p for p, _, _ in edits})
    return changes


AMAX = "ext/csrc/cuda/amax.cu"
NVFP4 = "ext/csrc/cpu/nvfp4.cpp"
MXFP8 = "ext/csrc/torch/quantize_mxfp8.cpp"
BUILD = "ext/qext/build.py"
QUANT = "ext/qext/quantizers.py"

CARRIES = {
    "comment-c-family": [
        (AMAX, "// kVec: x is 16-byte aligned.", "// kVec: x is aligned to 16 bytes."),
        (AMAX, "  // independent 16-byte loads in flight per thread",
               "  /* 16-byte loads in flight per thread, independent */"),
        (AMAX, "namespace {\n", "namespace {\n// a new comment line\n/* and a\n   block */\n"),
        (NVFP4, "// Quantizes operand A [R, C]", "// Quantizes A [R, C] /* a block */"),
    ],
    "comment-python": [
        (BUILD, "# -lineinfo: compute-sanitizer reports file:line",
                "# -lineinfo: so compute-sanitizer reports file:line"),
        (BUILD, '    cflags = ["-O2"', '    # a new comment line\n    cflags = ["-O2"'),
    ],
    "docstring": [
        (QUANT, '"""Compact scales -> GEMM layout', '"""Compact scales to the GEMM layout'),
        (QUANT, '"""NVFP4 (E2M1 data,', '"""The NVFP4 quantizer (E2M1 data,'),
    ],
    "reindent-c-family": [
        (NVFP4, "        bamax = std::max(bamax, fabsf(v[e]));",
                "      bamax = std::max( bamax,\n\t\tfabsf( v[e] ) ) ;"),
    ],
}  # fmt: skip

DOES_NOT = {  # the edits, and the one file that must stop the carry
    "one-token-lt-to-le": (
        [(AMAX, "for (; i < nv; i += stride)", "for (; i <= nv; i += stride)")], AMAX),
    "default-argument": (
        [(QUANT, "def swizzle_scales(scales: torch.Tensor, transposed: bool = False)",
                 "def swizzle_scales(scales: torch.Tensor, transposed: bool = True)")], QUANT),
    "data-file": ([(DATA, '"seed": 7', '"seed": 8')], DATA),
    "space-in-cpp-string": (
        [(MXFP8, '"qext MXFP8: the quantizer needs', '"qext MXFP8:  the quantizer needs')], MXFP8),
    "space-in-python-string": (
        [(QUANT, '"qext NVFP4: the quantizer needs', '"qext NVFP4: the  quantizer needs')], QUANT),
    "comment-plus-one-token": (  # a carried file does not hide an executable one
        [(AMAX, "// kVec: x is 16-byte aligned.", "// kVec: 16-byte aligned x."),
         (NVFP4, "int e = 0; e < kNvfp4Block; ++e", "int e = 0; e <= kNvfp4Block; ++e")],
        NVFP4),
    # what the real compile sees and `gcc -fpreprocessed` alone does not
    "backslash-ends-a-comment": (  # splices the next line, kBlocksPerSm, into the comment
        [(AMAX, "in flight per thread\n", "in flight per thread \\\n")], AMAX),
    "space-in-include-name": (  # `< utility>` names the file " utility": a different header
        [(AMAX, "#include <utility>", "#include < utility>")], AMAX),
}  # fmt: skip


def gcc_if_c(name: str, edits: list[tuple[str, str, str]]):
    """The case as a pytest.param, skipped without gcc when it touches C-family source."""
    c_family = any(p.endswith((".cu", ".cpp", ".h", ".cuh")) for p, _, _ in edits)
    marks = [needs_gcc] if c_family else []
    return pytest.param(name, marks=marks, id=name)


@pytest.mark.parametrize("name", [gcc_if_c(n, e) for n, e in CARRIES.items()])
def test_the_commit_carries(repo: Path, name: str) -> None:
    changes = commit(repo, f"carries/{name}", CARRIES[name])
    assert changes and all(c.carries for c in changes), [(c.path, c.reason) for c in changes]


@pytest.mark.parametrize("name", [gcc_if_c(n, e) for n, (e, _) in DOES_NOT.items()])
def test_the_commit_does_not_carry(repo: Path, name: str) -> None:
    edits, culprit = DOES_NOT[name]
    changes = commit(repo, f"does-not/{name}", edits)
    stopping = [f"{c.path}: {c.reason}" for c in changes if not c.carries]
    assert len(stopping) == 1 and stopping[0].startswith(f"{culprit}: "), stopping
    (change,) = (c for c in changes if c.path == culprit)
    assert change.kind == EXECUTABLE and change.reason
    expected = "not Python" if culprit == DATA else "changed"
    assert expected in change.reason, change.reason
