"""builds/ccwrap and units, pure: how the wrapper reads a compiler's argv (which inputs a
link reads, what a compile makes, what is a query), which flags it adds (nvcc: the host's
through -Xcompiler), and which switches take a sanitizer away again."""

from __future__ import annotations

import pytest

from orchestrator.run.builds import ccwrap, units

CFG = {"cflags": ["-fsanitize=address", "-g"], "ldflags": ["-fsanitize=address"], "nvcc_host": True}


def test_the_mode_inputs_and_output_of_an_argv() -> None:
    mode, sources, inputs, output, libdirs, libs = ccwrap.parse(
        ["-O2", "-I", "inc", "-c", "bad.c", "-o", "bad.o", "-MF", "bad.d"]
    )
    assert (mode, sources, inputs, output) == ("compile", ["bad.c"], [], "bad.o")
    mode, sources, inputs, output, libdirs, libs = ccwrap.parse(
        ["-o", "prog", "main.o", "sneaky", "-L.", "-lbad", "-l", "m", "-Wl,extra.o"]
    )
    assert (mode, sources, output) == ("link", [], "prog")
    assert inputs == ["main.o", "sneaky", "extra.o"] and libdirs == ["."] and libs == ["bad", "m"]
    assert ccwrap.parse(["main.c", "-o", "prog"])[0] == "compile+link"
    assert ccwrap.parse(["--version"])[0] == "other"
    assert ccwrap.parse(["-print-file-name=libasan.so"])[0] == "other"
    assert ccwrap.parse(["-E", "x.c"])[0] == "other"
    assert ccwrap.parse(["-dlink", "a.o", "-o", "d.o"])[0] == "device-link"


def test_the_flags_added_go_last_and_reach_nvccs_host_compiler() -> None:
    assert ccwrap.added(CFG, "compile", nvcc=False) == ["-fsanitize=address", "-g"]
    assert ccwrap.added(CFG, "link", nvcc=False) == ["-fsanitize=address"]
    assert ccwrap.added(CFG, "compile+link", nvcc=False) == ["-fsanitize=address", "-g"]
    assert ccwrap.added(CFG, "other", nvcc=False) == []
    assert ccwrap.added(CFG, "compile", nvcc=True) == ["-Xcompiler=-fsanitize=address,-g"]
    assert ccwrap.added({**CFG, "nvcc_host": False}, "compile", nvcc=True) == []


def test_switches_that_take_the_sanitizer_away() -> None:
    assert units.opt_out(["-fsanitize=address", "-fsanitize-ignorelist=x.txt"]).startswith(
        "-fsanitize-ignorelist"
    )
    assert units.opt_out(["--param", "asan-instrument-writes=0"]) == (
        "--param asan-instrument-writes=0"
    )
    assert units.opt_out(["--param=asan-stack=0"]) == "--param=asan-stack=0"
    assert units.opt_out(["-Xcompiler", "-O2,-fsanitize-blacklist=b"]) == "-fsanitize-blacklist=b"
    # overridden by the wrapper's -fsanitize=address, which comes last
    assert units.opt_out(["-fno-sanitize=address", "asan-file.c", "-fno-sanitize-recover"]) == ""


def test_a_response_file_is_read_for_the_link_inputs(tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "link.rsp").write_text("main.o 'hidden one.o' -lbad\n")
    parsed = ccwrap.parse(ccwrap._expand(["-o", "prog", "@link.rsp"]))
    assert parsed[2] == ["main.o", "hidden one.o"] and parsed[5] == ["bad"]


def test_the_wrappers_come_first_and_torch_keeps_its_cuda_home(tmp_path) -> None:
    from orchestrator.backends.base import BuildFlags
    from orchestrator.run.builds import wrappers

    bin_ = tmp_path / "cuda" / "bin"
    bin_.mkdir(parents=True)
    for name in ("gcc", "nvcc", "gcc-ar"):
        (bin_ / name).write_text("#!/bin/sh\n")
        (bin_ / name).chmod(0o755)
    env = {"PATH": str(bin_), "CC": "gcc -pthread"}
    made = wrappers.make(tmp_path / "out", BuildFlags(), env, nvcc_host=False)
    assert set(made.compilers) == {"gcc", "nvcc"}  # gcc-ar is no compiler
    got = made.env(env)
    assert got["PATH"] == f"{made.directory}:{bin_}"
    assert got["CC"] == f"{made.directory}/gcc -pthread"
    # torch's guess from `which nvcc` would land in the wrapper directory: it is given
    assert got["CUDA_HOME"] == str(tmp_path / "cuda")
    assert got["PYTORCH_NVCC"] == f"{made.directory}/nvcc"
    assert "ccwrap.py" in (made.directory / "gcc").read_text()


@pytest.mark.process  # the wrapper's stub, run as a build runs it
def test_the_compilers_run_without_the_runtime_the_loader_was_given(tmp_path) -> None:
    """A jit build runs its build description under the ASan runtime (it imports what it
    built), and the compilers inherited it: each compile took a quarter more CPU. The
    wrapper leaves the runtime csorch preloaded out, and keeps what else was there."""
    import os
    import subprocess

    from orchestrator.backends.base import BuildFlags
    from orchestrator.run.builds import wrappers

    bin_ = tmp_path / "bin"
    bin_.mkdir()
    seen = tmp_path / "seen"
    (bin_ / "gcc").write_text(f'#!/bin/sh\nprintf "%s" "${{LD_PRELOAD-unset}}" > {seen}\n')
    (bin_ / "gcc").chmod(0o755)
    runtime, other = str(tmp_path / "libasan.so.8"), str(tmp_path / "libmine.so")
    env = {"PATH": str(bin_)}
    made = wrappers.make(tmp_path / "out", BuildFlags(), env, nvcc_host=False, unpreload=[runtime])
    for preload, expected in ((f"{runtime}:{other}", other), (runtime, "unset"), (other, other)):
        run_env = {**os.environ, **made.env(env), "LD_PRELOAD": preload}
        done = subprocess.run([str(made.directory / "gcc"), "--version"], env=run_env,
                              capture_output=True, text=True, timeout=60)  # fmt: skip
        assert done.returncode == 0, done.stderr
        assert seen.read_text() == expected


def test_a_driver_switch_is_refused_where_it_names_the_builds_own_files(tmp_path) -> None:
    """-B, -wrapper or -specs naming what the build could have written (its tree, its
    output, /tmp) is refused under a sanitizer; a toolchain the user may write outside
    them (a conda environment's `-B .../compiler_compat`, unsandboxed) is not the build's."""
    tree, toolchain = tmp_path / "tree", tmp_path / "conda" / "compiler_compat"
    (tree / "bin").mkdir(parents=True)
    toolchain.mkdir(parents=True)
    own = [str(tree)]
    assert ccwrap.foreign(["-B", f"{tree}/bin/", "-c", "x.c"], own).startswith("-B")
    assert ccwrap.foreign([f"-B{tree}", "-c", "x.c"], own) == f"-B{tree}"
    assert ccwrap.foreign(["-B", str(toolchain), "-c", "x.c"], own) == ""
    assert ccwrap.foreign([f"-specs={toolchain}/x.specs", "x.c"], own) == ""
    # without the build's directories named, anything writable counts (the sandbox's view)
    assert ccwrap.foreign(["-B", str(toolchain), "-c", "x.c"]).startswith("-B")
    assert ccwrap.foreign(["-c", "x.s"], own) == "x.s (assembly)"
