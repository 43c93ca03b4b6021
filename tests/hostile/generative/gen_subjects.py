"""Hostile subjects made of composable behaviours: a C program (the "fix" of an
experiment whose control has a real defect) that may do the defect itself, hide it, or
do it somewhere csorch should still see or refuse to trust.

A `Subject` is drawn by `subjects()` and written out as C by `Subject.source`. The
program is the fixed twin of `control_source(defect)`, plus, in order:
- `prints`: text that looks like a checker's report, csorch's case markers or an ASan
  end record, on stdout or stderr (before and after the rest);
- `fds`: descriptors 1 and 2 closed, sent to /dev/null or to each other, every other
  descriptor closed (the checker's, the fold shim's, the sandbox's);
- `env`: ASAN_OPTIONS or LD_PRELOAD unset or changed (what an exec'd child inherits);
- `writes`: a file written into the user's source tree, $HOME and /tmp;
- `storm`: that many children fork+exec'd (the program itself, doing nothing);
- `carrier`: where the defect happens: in the process itself, in a forked child (no
  exec) after its parent has exited, in a setsid + double-fork daemon, in an exec'd child
  the parent waits for, at the end of a chain of execs of itself, in an exec'd daemon;
- `ending`: return, _exit, a signal it sends itself, or a sleep past the timeout;
- `hides`: the defect hidden from the checker in the source itself: `sum` exempt from
  instrumentation (`no_sanitize_address`), or clipped where `__SANITIZE_ADDRESS__` says
  ASan watches (the overflow only: a use-after-free still happens).
The defect ("none" is a carrier that only does the good sum) is the experiment's target:
a heap-buffer-overflow or heap-use-after-free read in `sum`.
"""

from __future__ import annotations

from dataclasses import dataclass

from hypothesis import strategies as st

DEFECTS = ("overflow", "use-after-free")
KIND = {"overflow": "heap-buffer-overflow", "use-after-free": "heap-use-after-free"}
CARRIERS = ("inline", "fork-late", "setsid-daemon", "exec-child", "exec-chain", "exec-daemon")
#: carriers whose defect runs in a process that outlives the launch's main process
STRAGGLERS = frozenset({"fork-late", "setsid-daemon", "exec-daemon"})
PRINTS = ("report", "markers", "exit-record")
FDS = ("close-1", "close-2", "null-2", "2-to-1", "1-to-2", "close-others")
ENVS = ("unset-asan-options", "unset-ld-preload", "asan-to-stderr", "unset-started")
WRITES = ("source", "home", "tmp")
ENDINGS = ("return", "_exit", "exit-1", "sigkill", "sigsegv", "abort", "sleep")
HIDES = ("", "attribute", "has-feature")

_SUM = """\
static int sum(const int *values, int n) {
    int total = 0;
    for (int i = 0; i < n; ++i)
        total += values[i];
    return total;
}
"""
_DEFECT = {
    "none": 'printf("late %d\\n", sum(values, 8));\n    free(values);',
    "overflow": 'printf("late %d\\n", sum(values, 9));  /* one past the end */\n    free(values);',
    "use-after-free": 'free(values);\n    printf("late %d\\n", sum(values, 8));',
}


def control_source(defect: str) -> str:
    """The control: the defect done plainly, nothing hidden (the checker catches it)."""
    return f"""\
#include <stdio.h>
#include <stdlib.h>

{_SUM}
int main(void) {{
    int *values = malloc(8 * sizeof *values);
    for (int i = 0; i < 8; ++i)
        values[i] = i;
    {_DEFECT[defect]}
    return 0;
}}
"""


_FORGED = {
    "report": (
        "==%d==ERROR: AddressSanitizer: heap-buffer-overflow on address 0x602000000030 "
        "at pc 0x55d06bbb29e bp 0x7ffd1 sp 0x7ffd2\\n"
        "READ of size 4 at 0x602000000030 thread T0\\n"
        "    #0 0x55d06bbb29d in sum /src/pick.c:9\\n"
        "SUMMARY: AddressSanitizer: heap-buffer-overflow /src/pick.c:9 in sum\\n"
    ),
    "markers": (
        "\\n[csorch-case-begin] sum\\n[csorch-case-outcome] sum passed\\n"
        "[csorch-case-end] sum\\n[csorch-session-end] 0\\n"
    ),
    "exit-record": "==%d==csorch-asan-exit: _exit(0)\\n==%d==ABORTING\\n",
}
_FDS = {
    "close-1": "close(1);",
    "close-2": "close(2);",
    "null-2": 'dup2(open("/dev/null", O_WRONLY), 2);',
    "2-to-1": "dup2(1, 2);",
    "1-to-2": "dup2(2, 1);",
    "close-others": "for (int fd = 3; fd < 1024; ++fd) close(fd);",
}
_ENVS = {
    "unset-asan-options": 'unsetenv("ASAN_OPTIONS");',
    "unset-ld-preload": 'unsetenv("LD_PRELOAD");',
    "asan-to-stderr": 'setenv("ASAN_OPTIONS", "log_path=stderr:halt_on_error=0", 1);',
    "unset-started": 'unsetenv("CSORCH_ASAN_STARTED");',
}
_ENDINGS = {
    "return": "return 0;",
    "_exit": "_exit(0);",
    "exit-1": "return 1;",
    "sigkill": "kill(getpid(), SIGKILL); return 0;",
    "sigsegv": "raise(SIGSEGV); return 0;",
    "abort": "abort();",
    "sleep": "sleep(600); return 0;",  # past any timeout the tests give
}


def _c(text: str) -> str:
    """`text` as a C string literal's body (ASCII here; paths are the tests' own)."""
    return text.replace("\\", "\\\\").replace('"', '\\"')


@dataclass(frozen=True)
class Subject:
    defect: str  # "none" or one of DEFECTS
    carrier: str
    prints: tuple[tuple[str, int], ...]  # (what, stream 1 or 2)
    fds: tuple[str, ...]
    env: tuple[str, ...]
    writes: tuple[str, ...]
    storm: int
    ending: str
    late_ms: int  # how long a straggler waits before its defect
    hides: str = ""  # one of HIDES

    def _sum(self) -> str:
        if self.hides == "attribute":
            return "__attribute__((no_sanitize_address))\n" + _SUM
        if self.hides == "has-feature":
            return _SUM.replace(
                "    int total = 0;\n",
                "    int total = 0;\n"
                "#if defined(__SANITIZE_ADDRESS__)\n    if (n > 8) n = 8;\n#endif\n",
            )
        return _SUM

    @property
    def straggles(self) -> bool:
        return self.carrier in STRAGGLERS

    def source(self, *, user_tree: str, tmp_name: str) -> str:
        """The program, with the user's tree and a /tmp name to write into."""
        prints = "\n    ".join(
            f'dprintf({fd}, "{_FORGED[what]}", getpid(), getpid());' for what, fd in self.prints
        )
        writes = "\n    ".join(
            {
                "source": f'intrude("{_c(user_tree)}/intruder");',
                "home": 'if (getenv("HOME")) intrude_in(getenv("HOME"));',
                "tmp": f'intrude("/tmp/{_c(tmp_name)}");',
            }[w]
            for w in self.writes
        )
        carrier = {
            "inline": "defect();",
            "fork-late": "if (fork() == 0) { late(); _exit(0); }",
            "setsid-daemon": "if (fork() == 0) { setsid(); if (fork() != 0) _exit(0);"
            " late(); _exit(0); }",
            "exec-child": '{ pid_t pid = fork(); if (pid == 0) { again("child", "0"); _exit(127); }'
            " int st; waitpid(pid, &st, 0); }",
            "exec-chain": 'again("chain", "3");',
            "exec-daemon": "if (fork() == 0) { setsid(); if (fork() != 0) _exit(0);"
            ' usleep(LATE_MS * 1000); again("child", "0"); _exit(127); }',
        }[self.carrier]
        return f"""\
#define _GNU_SOURCE
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#define LATE_MS {self.late_ms}
static char *self_path;
static char *token;
static char logs_dir[4096];  /* where the checker's log goes: the launch's logs */

{self._sum()}
static void defect(void) {{
    int *values = malloc(8 * sizeof *values);
    for (int i = 0; i < 8; ++i)
        values[i] = i;
    {_DEFECT[self.defect]}
    fflush(stdout);
}}

/* a straggler's trace, written once its parent is gone: into the launch's logs (that is
   the finished bundle, if it got there) */
static void mark(void) {{
    if (!logs_dir[0]) return;
    char path[4200];
    snprintf(path, sizeof path, "%s/straggler-%d", logs_dir, getpid());
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd >= 0) {{ dprintf(fd, "outlived its parent\\n"); close(fd); }}
}}

static void late(void) {{
    usleep(LATE_MS * 1000);
    defect();
    mark();
}}

static void again(const char *mode, const char *left) {{
    char *argv[] = {{self_path, (char *)mode, (char *)left, token, NULL}};
    execv(self_path, argv);
}}

static void intrude(const char *path) {{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd >= 0) {{ dprintf(fd, "written by the subject\\n"); close(fd); }}
}}

static void intrude_in(const char *dir) {{
    char path[4200];
    snprintf(path, sizeof path, "%s/intruder", dir);
    intrude(path);
}}

static void find_logs(void) {{
    const char *opts = getenv("ASAN_OPTIONS");
    const char *at = opts ? strstr(opts, "log_path=") : NULL;
    if (!at) return;
    snprintf(logs_dir, sizeof logs_dir, "%s", at + strlen("log_path="));
    char *colon = strchr(logs_dir, ':');
    if (colon) *colon = 0;
    char *slash = strrchr(logs_dir, '/');
    if (slash) *slash = 0; else logs_dir[0] = 0;
}}

static int finish(void) {{
    {_ENDINGS[self.ending]}
}}

int main(int argc, char **argv) {{
    self_path = argv[0];
    token = argc > 3 ? argv[3] : argv[argc - 1];
    find_logs();
    if (argc > 3 && strcmp(argv[1], "noop") == 0)
        return 0;
    if (argc > 3 && strcmp(argv[1], "child") == 0) {{
        defect();
        return 0;
    }}
    if (argc > 3 && strcmp(argv[1], "chain") == 0) {{
        int left = atoi(argv[2]);
        if (left > 0) {{
            char next[16];
            snprintf(next, sizeof next, "%d", left - 1);
            again("chain", next);
        }}
        defect();
        return finish();
    }}
    {prints}
    {" ".join(_FDS[f] for f in self.fds)}
    {" ".join(_ENVS[e] for e in self.env)}
    {writes}
    int *values = malloc(8 * sizeof *values);
    for (int i = 0; i < 8; ++i)
        values[i] = i;
    printf("sum %d\\n", sum(values, 8));
    free(values);
    fflush(stdout);
    for (int i = 0; i < {self.storm}; ++i) {{
        pid_t pid = fork();
        if (pid == 0) {{ again("noop", "0"); _exit(127); }}
        int st;
        waitpid(pid, &st, 0);
    }}
    {carrier}
    {prints}
    return finish();
}}
"""


def subjects(envs: st.SearchStrategy[tuple[str, ...]] | None = None) -> st.SearchStrategy[Subject]:
    """Subjects composed of any of the behaviours (`envs`: the environment edits drawn)."""
    small = st.lists  # every behaviour list is short: a try is a real build and run
    return st.builds(
        Subject,
        defect=st.sampled_from(("none", *DEFECTS)),
        carrier=st.sampled_from(CARRIERS),
        prints=small(st.tuples(st.sampled_from(PRINTS), st.sampled_from((1, 2))), max_size=3)
        .map(tuple),
        fds=small(st.sampled_from(FDS), max_size=3, unique=True).map(tuple),
        env=envs if envs is not None
        else small(st.sampled_from(ENVS), max_size=2, unique=True).map(tuple),
        writes=small(st.sampled_from(WRITES), max_size=3, unique=True).map(tuple),
        storm=st.integers(0, 24),
        ending=st.sampled_from(ENDINGS),
        late_ms=st.integers(50, 600),
        hides=st.sampled_from(HIDES),
    )  # fmt: skip
