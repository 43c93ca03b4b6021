"""sandbox: the record, the environment's allowlist and the init's report (fast); and,
marked `process`, real children in the sandbox: stragglers forked or double-forked out of
the session are named and ended, the tree is read-only but the scratch, no network, no
inherited GIT_* or LD_PRELOAD, and csorch's own git leaves the user's index alone."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import textwrap
import threading
import uuid
from pathlib import Path

import pytest

from orchestrator import proc, sandbox
from orchestrator.errors import ProcessStartError
from orchestrator.model import BuildKind, BuildSpec, SourceKind, SourceSpec, Variant
from orchestrator.run import sources
from orchestrator.sandbox import Sandbox


@pytest.fixture(autouse=True)
def sandbox_on(monkeypatch: pytest.MonkeyPatch):
    """The sandbox on (as by default, whatever the caller's environment), its probe
    asked afresh."""
    monkeypatch.delenv(sandbox.ENV, raising=False)
    sandbox.probe.cache_clear()
    yield
    sandbox.probe.cache_clear()


def test_turned_off_nothing_is_sandboxed_nor_filtered(monkeypatch) -> None:
    monkeypatch.setenv(sandbox.ENV, "0")
    sandbox.probe.cache_clear()
    assert sandbox.probe().fact.startswith("off") and not sandbox.probe().works
    monkeypatch.setenv("SSH_AUTH_SOCK", "/run/agent")
    monkeypatch.setenv("GIT_INDEX_FILE", "/elsewhere/index")
    env, _ = proc.build_env({})
    assert env["SSH_AUTH_SOCK"] == "/run/agent"  # as before the sandbox
    assert "GIT_INDEX_FILE" not in env  # never: it points git at the user's index


def test_csorch_s_own_tools_get_its_environment_but_git_s_locations(monkeypatch) -> None:
    monkeypatch.setenv("SLURM_CONF", "/etc/cluster/slurm.conf")
    for name in ("GIT_INDEX_FILE", "GIT_DIR", "GIT_WORK_TREE"):
        monkeypatch.setenv(name, "/elsewhere")
    env, _ = proc.build_env({}, sandboxed=False)
    assert env["SLURM_CONF"] == "/etc/cluster/slurm.conf"  # sbatch finds its cluster
    assert not {"GIT_INDEX_FILE", "GIT_DIR", "GIT_WORK_TREE"} & env.keys()


def test_a_sandbox_names_its_writable_paths_once_and_absolute(tmp_path: Path) -> None:
    rel = os.path.relpath(tmp_path)
    box = Sandbox.of(tmp_path, rel, None, tmp_path / "logs")
    assert box.writable == (str(tmp_path), str(tmp_path / "logs"))
    assert Sandbox.from_dict(box.to_dict()) == box


@pytest.mark.parametrize(
    "name", ["PATH", "HOME", "LANG", "LC_ALL", "CUDA_VISIBLE_DEVICES", "NVIDIA_DRIVER_CAPABILITIES",
             "TORCH_CUDA_ARCH_LIST", "PYTORCH_CUDA_ALLOC_CONF", "OMP_NUM_THREADS", "CC", "CFLAGS",
             "LD_LIBRARY_PATH", "VIRTUAL_ENV", "PYTHONPATH"],
)  # fmt: skip
def test_what_a_build_and_a_test_need_is_passed_on(name: str) -> None:
    assert sandbox.allowed(name)


@pytest.mark.parametrize(
    "name", ["GIT_INDEX_FILE", "GIT_DIR", "GIT_WORK_TREE", "LD_PRELOAD", "LD_AUDIT",
             "PYTHONSTARTUP", "PYTHONHOME", "BASH_ENV", "ENV", "ASAN_OPTIONS",
             "AWS_SECRET_ACCESS_KEY", "SSH_AUTH_SOCK"],
)  # fmt: skip
def test_what_would_steer_a_child_is_not(name: str) -> None:
    assert not sandbox.allowed(name)


def test_the_child_environment_is_the_allowed_part_plus_the_delta(monkeypatch) -> None:
    monkeypatch.setenv("GIT_INDEX_FILE", "/elsewhere/index")
    monkeypatch.setenv("LD_PRELOAD", "/evil.so")
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "1")
    env, delta = proc.build_env({"LD_PRELOAD": "/csorch/asan.so", "X": "1"})
    assert "GIT_INDEX_FILE" not in env and env["CUDA_VISIBLE_DEVICES"] == "1"
    assert env["LD_PRELOAD"] == "/csorch/asan.so" and env["X"] == "1"  # csorch's own: kept
    assert delta == (("LD_PRELOAD", "/csorch/asan.so"), ("X", "1"))


def test_the_init_s_report_is_read_line_by_line() -> None:
    said = sandbox.read_report(
        "status 768\nstraggler 4 'sleep' 'sleep 100'\nstraggler 5 'sh' 'sh -c x'\n"
    )
    assert said.status == 768 and os.waitstatus_to_exitcode(said.status) == 3
    assert said.stragglers == ("4 'sleep' 'sleep 100'", "5 'sh' 'sh -c x'")
    assert sandbox.read_report("exec 2 No such file or directory\n").exec_error == (
        "No such file or directory"
    )
    assert sandbox.read_report("").status is None  # the init was killed: unshare's status


@pytest.mark.process  # the probe starts unshare
def test_the_argv_is_unshare_then_the_init_then_the_command() -> None:
    support = sandbox.probe()
    if not support.works:
        pytest.skip(support.fact)
    argv = sandbox.argv(Sandbox.of("/w"), ["prog", "--flag"], "/w", 7, 8)
    assert argv[: len(support.prefix)] == list(support.prefix)
    assert "--pid" in argv and "--net" in argv and "--mount" in argv and "--kill-child" in argv
    rest = argv[len(support.prefix) :]
    assert rest[:4] == [sys.executable, "-I", "-S", str(sandbox.INIT)]
    assert rest[5:] == ["--", "prog", "--flag"]
    assert '"writable": ["/w"]' in rest[4] and '"report": 7' in rest[4] and '"env": 8' in rest[4]


# -- real children ---------------------------------------------------------------------


def _sandboxed() -> None:
    support = sandbox.probe()
    if not support.works:
        pytest.skip(f"this host cannot sandbox: {support.fact}")


def _run(tmp_path: Path, code: str, **kw) -> tuple[proc.ProcResult, str]:
    scratch = tmp_path / "scratch"
    scratch.mkdir(exist_ok=True)
    log = tmp_path / "logs" / "out.log"
    result = proc.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        log_path=log,
        cwd=scratch,
        sandbox=Sandbox.of(scratch, log.parent),
        **kw,
    )
    return result, log.read_text()


def _alive_with(token: str) -> list[int]:
    """Pids on this host whose command line holds `token`."""
    found = []
    for entry in Path("/proc").glob("[0-9]*"):
        try:
            if token.encode() in (entry / "cmdline").read_bytes():
                found.append(int(entry.name))
        except OSError:
            continue
    return found


STRAGGLERS = """
    import os, sys, time
    token = sys.argv[1] if len(sys.argv) > 1 else {token!r}
    if os.fork() == 0:  # a child, no exec: it outlives its parent, then acts
        time.sleep(1.5)
        open(os.path.join({target!r}, "child-wrote"), "w").write("late")
        os._exit(0)
    middle = os.fork()
    if middle == 0:  # a double fork out of the session
        os.setsid()
        if os.fork() == 0:
            os.execv(sys.executable, [sys.executable, "-c", "import time; time.sleep(30)", token])
        os._exit(0)
    os.waitpid(middle, 0)  # the middle one is gone: two stragglers, always
    print("parent done", flush=True)
"""


@pytest.mark.process
def test_a_child_that_outlives_the_launch_is_named_and_ended(tmp_path: Path) -> None:
    """Unsandboxed, both children outlived the launch and it looked clean; in the sandbox
    they are stragglers, named, and none of them is alive after the run."""
    _sandboxed()
    token = f"csorch-straggler-{uuid.uuid4().hex}"
    code = STRAGGLERS.format(token=token, target=str(tmp_path / "scratch"))
    result, output = _run(tmp_path, code)
    assert result.returncode == 0 and "parent done" in output
    named = " ".join(result.stragglers)
    assert len(result.stragglers) == 2, result.stragglers
    assert named.count(token) == 2  # the forked python, and the sleeping one
    assert _alive_with(token) == []
    assert not (tmp_path / "scratch" / "child-wrote").exists()  # killed before it acted


@pytest.mark.process
def test_without_a_sandbox_the_same_children_go_unseen(tmp_path: Path) -> None:
    """What the sandbox closes: the plain launch reports nothing, the double-forked child
    survives it (it is ended here by the test)."""
    token = f"csorch-straggler-{uuid.uuid4().hex}"
    code = STRAGGLERS.format(token=token, target=str(tmp_path))
    log = tmp_path / "plain.log"
    result = proc.run([sys.executable, "-c", textwrap.dedent(code)], log_path=log)
    left = _alive_with(token)
    for pid in left:
        os.kill(pid, 9)
    assert result.returncode == 0 and result.stragglers == () and left


@pytest.mark.process
def test_the_tree_is_read_only_but_the_scratch(tmp_path: Path) -> None:
    _sandboxed()
    source = tmp_path / "source"
    source.mkdir()
    (source / "main.c").write_text("int main(void) { return 0; }\n")
    home = Path.home() / f".csorch-sandbox-test-{uuid.uuid4().hex}"
    # a user's tree outside /tmp (/tmp's host files show through a private layer)
    outside = Path(tempfile.mkdtemp(prefix="csorch-sandbox-test-", dir="/var/tmp"))
    (outside / "main.c").write_text("int main(void) { return 0; }\n")
    code = f"""
        import os
        def attempt(path):
            try:
                with open(path, "w") as f:
                    f.write("x")
                return "wrote"
            except OSError as exc:
                return os.strerror(exc.errno)
        print("home:", attempt({str(home)!r}))
        print("here:", attempt("scratch-file"))
        print("tmp:", attempt("/tmp/csorch-private-{uuid.uuid4().hex}"))
        print("source:", attempt({str(source / "main.c")!r}))
        print("outside:", attempt({str(outside / "main.c")!r}))
    """
    try:
        result, output = _run(tmp_path, code)
        outside_kept = (outside / "main.c").read_text()
    finally:
        shutil.rmtree(outside)
    home_exists = home.exists()
    if home_exists:
        home.unlink()
    assert "home: Read-only file system" in output and not home_exists
    assert "outside: Read-only file system" in output
    assert outside_kept == "int main(void) { return 0; }\n"
    assert "here: wrote" in output and (tmp_path / "scratch" / "scratch-file").exists()
    assert "tmp: wrote" in output  # a private /tmp
    # under /tmp the host's files show through a private layer: the write stays there
    assert (source / "main.c").read_text() == "int main(void) { return 0; }\n"
    assert not list(Path("/tmp").glob("csorch-private-*"))


@pytest.mark.process
def test_a_mount_under_tmp_shows_through_and_its_scratch_is_writable(tmp_path: Path) -> None:
    """/tmp's private layer shows only /tmp's own filesystem: a disk mounted below it (a
    small tmpfs here, a scratch volume on a cluster) is bound back, read-only but where a
    launch may write."""
    _sandboxed()
    disk = tmp_path / "disk"
    disk.mkdir()
    if os.geteuid() != 0 or shutil.which("mount") is None:
        pytest.skip("mounting a tmpfs needs root")
    made = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(disk)],
                          capture_output=True, check=False)  # fmt: skip
    if made.returncode != 0:
        pytest.skip(f"this machine refuses a tmpfs mount: {made.stderr.decode().strip()}")
    try:
        (disk / "kept").write_text("on the disk\n")
        (disk / "scratch").mkdir()
        log = disk / "logs" / "out.log"
        code = f"""
            import os
            print("kept:", open({str(disk / "kept")!r}).read().strip())
            for path in ({str(disk / "kept")!r}, "mine"):
                try:
                    open(path, "a").close()
                    print(os.path.basename(path), "wrote")
                except OSError as exc:
                    print(os.path.basename(path), os.strerror(exc.errno))
        """
        scratch = disk / "scratch"
        result = proc.run([sys.executable, "-c", textwrap.dedent(code)], log_path=log,
                          cwd=scratch, sandbox=Sandbox.of(scratch, log.parent))  # fmt: skip
        output = log.read_text()
        assert result.returncode == 0, output
        assert "kept: on the disk" in output and "kept Read-only file system" in output
        assert "mine wrote" in output and (disk / "scratch" / "mine").exists()
    finally:
        subprocess.run(["umount", "-l", str(disk)], check=False)


@pytest.mark.process
def test_no_network_but_a_loopback_of_its_own(tmp_path: Path) -> None:
    _sandboxed()
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    port = server.getsockname()[1]
    code = f"""
        import socket
        for address in (("127.0.0.1", {port}), ("1.1.1.1", 53)):
            try:
                socket.create_connection(address, timeout=3).close()
                print(address[0], "connected")
            except OSError as exc:
                print(address[0], "refused:", type(exc).__name__)
    """
    try:
        _, output = _run(tmp_path, code)
    finally:
        server.close()
    assert "127.0.0.1 refused" in output and "1.1.1.1 refused" in output, output


@pytest.mark.process
def test_the_child_gets_no_git_nor_inherited_preload(tmp_path: Path, monkeypatch) -> None:
    _sandboxed()
    monkeypatch.setenv("GIT_INDEX_FILE", str(tmp_path / "index"))
    monkeypatch.setenv("LD_PRELOAD", "")  # set, and empty: the loader ignores it
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0")
    code = """
        import os
        for name in ("GIT_INDEX_FILE", "LD_PRELOAD", "CUDA_VISIBLE_DEVICES", "MINE"):
            print(name, "=", os.environ.get(name, "<unset>"))
    """
    _, output = _run(tmp_path, code, env={"MINE": "csorch's"})
    assert "GIT_INDEX_FILE = <unset>" in output and "LD_PRELOAD = <unset>" in output
    assert "CUDA_VISIBLE_DEVICES = 0" in output and "MINE = csorch's" in output


@pytest.mark.process
def test_a_timeout_ends_the_whole_namespace(tmp_path: Path) -> None:
    _sandboxed()
    token = f"csorch-timeout-{uuid.uuid4().hex}"
    code = f"""
        import os, signal, time
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        if os.fork() == 0:
            os.setsid()
            os.execvp("python3", ["python3", "-c", "import time; time.sleep(60)", {token!r}])
        time.sleep(60)
    """
    result, _ = _run(tmp_path, code, timeout=1, grace=0.5)
    assert result.timed_out and result.returncode < 0
    assert _alive_with(token) == []


@pytest.mark.process
def test_a_program_that_cannot_start_is_still_a_start_error(tmp_path: Path) -> None:
    _sandboxed()
    with pytest.raises(ProcessStartError, match="No such file"):
        proc.run(
            [str(tmp_path / "missing")],
            log_path=tmp_path / "log",
            cwd=tmp_path,
            sandbox=Sandbox.of(tmp_path),
        )


@pytest.mark.process
def test_csorch_s_git_leaves_the_user_s_index_alone(tmp_path: Path, monkeypatch) -> None:
    """A run from a pre-commit hook: git sets GIT_INDEX_FILE to the user's index; csorch's
    clone and checkout of a git source used to write it."""
    repo = tmp_path / "repo"
    (repo / "ext").mkdir(parents=True)
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"}  # fmt: skip
    for argv in (["init", "-q", "-b", "main"], ["add", "."], ["commit", "-q", "-m", "one"]):
        if argv[0] == "add":
            (repo / "ext" / "main.c").write_text("int main(void) { return 0; }\n")
        subprocess.run(["git", "-C", str(repo), *argv], check=True, env=env)
    (repo / "ext" / "staged.c").write_text("/* the user's work */\n")
    subprocess.run(["git", "-C", str(repo), "add", "ext/staged.c"], check=True, env=env)
    index = repo / ".git" / "index"
    before = index.read_bytes()
    monkeypatch.setenv("GIT_INDEX_FILE", str(index))
    ws = sources.Workspace(tmp_path / "scratch")
    try:
        st = ws.materialize(
            Variant("v", BuildSpec(BuildKind.COMMAND, command=("make",))),
            SourceSpec(SourceKind.GIT, str(repo), "HEAD", "ext"),
        )
        assert (st.root / "main.c").exists() and not (st.root / "staged.c").exists()
    finally:
        ws.close()
    assert index.read_bytes() == before


@pytest.mark.process
def test_where_the_kernel_refuses_the_overlay_tmp_is_private_and_the_host_s_read_only(
    tmp_path: Path,
) -> None:
    """The fallback of /tmp (no overlay: an older kernel in a user namespace): a tmpfs
    with the host's /tmp entries bound in read-only, the writable paths writable."""
    _sandboxed()
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    (tmp_path / "kept").write_text("the host's\n")
    code = f"""
        import os
        print("host file:", open({str(tmp_path / "kept")!r}).read().strip())
        for path in ({str(tmp_path / "kept")!r}, "/tmp/new-{uuid.uuid4().hex}", "mine"):
            try:
                open(path, "a").close()
                print(path.rsplit("/", 1)[-1][:3], "wrote")
            except OSError as exc:
                print(path.rsplit("/", 1)[-1][:3], os.strerror(exc.errno))
    """
    report, write = os.pipe()
    env = sandbox.env_file({"PATH": os.environ["PATH"]})
    spec = {"writable": [str(scratch)], "cwd": str(scratch), "report": write, "env": env,
            "overlay": False}  # fmt: skip
    argv = [*sandbox.probe().prefix, sys.executable, "-I", "-S", str(sandbox.INIT)]
    done = subprocess.run(
        [*argv, json.dumps(spec), "--", sys.executable, "-c", textwrap.dedent(code)],
        pass_fds=(write, env),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    os.close(write)
    os.close(env)
    with os.fdopen(report) as said:
        assert "status 0" in said.read(), done.stderr
    out = done.stdout
    assert "host file: the host's" in out
    assert "kep Read-only file system" in out and "new wrote" in out and "min wrote" in out
    assert (scratch / "mine").exists() and not list(Path("/tmp").glob("new-*"))


@pytest.mark.process
def test_a_cancelled_sandboxed_run_raises_and_leaves_nothing(tmp_path: Path) -> None:
    _sandboxed()
    token = f"csorch-cancel-{uuid.uuid4().hex}"
    cancel = threading.Event()
    threading.Timer(0.5, cancel.set).start()
    code = f"""
        import os, sys, time
        if os.fork() == 0:
            os.setsid()
            sleep = [sys.executable, "-c", "import time; time.sleep(60)", {token!r}]
            os.execv(sys.executable, sleep)
        time.sleep(60)
    """
    with pytest.raises(KeyboardInterrupt):
        _run(tmp_path, code, cancel=cancel, timeout=30, grace=0.5)
    assert _alive_with(token) == []
    before = len(os.listdir("/proc/self/fd"))
    _run(tmp_path, "pass")
    assert len(os.listdir("/proc/self/fd")) == before  # no descriptor left behind


def test_an_alias_renames_whole_path_components_only() -> None:
    pairs = [("/work/run-1/patched", sandbox.BUILD_TREE)]
    assert sandbox.seen_as("-I/work/run-1/patched/inc", pairs) == f"-I{sandbox.BUILD_TREE}/inc"
    assert sandbox.seen_as("/work/run-1/patched", pairs) == sandbox.BUILD_TREE
    assert sandbox.seen_as("a:/work/run-1/patched:b", pairs) == f"a:{sandbox.BUILD_TREE}:b"
    assert sandbox.seen_as("/work/run-1/patched2/x", pairs) == "/work/run-1/patched2/x"
    assert sandbox.real_of(f"{sandbox.BUILD_TREE}/x.c", pairs) == "/work/run-1/patched/x.c"
    # a directory that holds the alias, or lies in it, is not aliased
    assert Sandbox.of().seeing("/tmp", sandbox.BUILD_TREE).aliases == ()
    assert Sandbox.of().seeing(f"{sandbox.BUILD_TREE}/x", sandbox.BUILD_TREE).aliases == ()


@pytest.mark.process
def test_a_build_sees_its_tree_at_one_path_whatever_holds_it(tmp_path: Path) -> None:
    """The argv, cwd and environment name the alias; writes through it land in the real
    directory; the records keep the real path; a read-only directory stays read-only
    through its alias."""
    _sandboxed()
    trees = []
    for name in ("one", "two"):
        tree = tmp_path / name / "tree"
        tree.mkdir(parents=True)
        (tree / "unit.c").write_text(f"/* {name} */\n")
        code = textwrap.dedent("""
            import os, sys
            print("cwd", os.getcwd())
            print("argv", sys.argv[1])
            print("env", os.environ["WHERE"])
            print("read", open(sys.argv[1] + "/unit.c").read().strip())
            open("made-inside", "w").write("x")
        """)
        log = tmp_path / name / "log"
        result = proc.run(
            [sys.executable, "-c", code, str(tree)],
            log_path=log,
            cwd=tree,
            env={"WHERE": f"-I{tree}/include"},
            sandbox=Sandbox.of(tree).seeing(tree, sandbox.BUILD_TREE),
        )
        text = log.read_text()
        assert result.returncode == 0, text
        assert f"cwd {sandbox.BUILD_TREE}\n" in text and f"argv {sandbox.BUILD_TREE}\n" in text
        assert f"env -I{sandbox.BUILD_TREE}/include\n" in text
        assert f"read /* {name} */" in text  # its own tree, not the other's
        assert (tree / "made-inside").exists()
        assert result.argv[-1] == str(tree)  # the record: the real path
        trees.append(tree)
    # a directory not writable outside the alias is not writable through it (outside
    # /tmp: under it, a write lands in the launch's private layer either way)
    kept = Path(tempfile.mkdtemp(prefix="csorch-sandbox-test-", dir="/var/tmp"))
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    code = f"open({sandbox.BUILD_TREE + '/planted'!r}, 'w')"
    try:
        result = proc.run(
            [sys.executable, "-c", code],
            log_path=tmp_path / "ro.log",
            cwd=scratch,
            sandbox=Sandbox.of(scratch).seeing(kept, sandbox.BUILD_TREE),
        )
        planted = (kept / "planted").exists()
    finally:
        shutil.rmtree(kept)
    assert result.returncode != 0 and "Read-only file system" in (tmp_path / "ro.log").read_text()
    assert not planted
