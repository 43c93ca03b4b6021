"""PID 1 of a sandboxed launch: a program of its own, started by `unshare` inside fresh
PID, mount and network namespaces (csorch imports nothing from here; stdlib only, so it
runs under any Python 3.8+ with `-I -S`).

It makes the filesystem read-only except the writable paths it is given, mounts a
private /tmp (the host's /tmp shows through read-only, new files stay private) and
/dev/shm, brings the loopback up, starts the command in a session of its own, and reaps
every process of the namespace (orphans are reparented to it). When the command's main
process ends, every process still alive is a straggler: it writes them to the report
descriptor (a pipe from csorch the command never holds, so the subject cannot forge
it), kills them all and exits; the kernel ends whatever is left with PID 1.

argv: init.py SPEC_JSON -- COMMAND...; SPEC: {"writable": [...], "cwd": "...", "report": FD,
"env": FD} (and "overlay": false, where a test asks for /tmp's fallback; "aliases":
[[REAL, SEEN], ...], directories bound at a second path, which the command's argv, cwd
and environment already name). The command's
environment comes on its own descriptor (NUL-separated NAME=VALUE), not in the init's:
unshare and the init must not run under the subject's LD_PRELOAD (an ASan runtime would
write logs of its own), and not in argv, which any user of the host can read.
The report's lines: "exec ERRNO TEXT" (the command could not be started), "status N"
(its wait status), "straggler PID COMM CMDLINE" (one each).
"""

import contextlib
import ctypes
import errno
import fcntl
import json
import os
import signal
import socket
import struct
import sys
import time

MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 1, 2, 4, 8
MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = 32, 4096, 16384, 1 << 18
MS_NOATIME, MS_NODIRATIME, MS_RELATIME, MS_STRICTATIME = 1024, 2048, 1 << 21, 1 << 24
#: a remount in a user namespace must keep the flags the mount was given outside it
_KEEP = {
    "nosuid": MS_NOSUID,
    "nodev": MS_NODEV,
    "noexec": MS_NOEXEC,
    "noatime": MS_NOATIME,
    "nodiratime": MS_NODIRATIME,
    "relatime": MS_RELATIME,
}
MAX_STRAGGLERS = 64  # the pipe must not fill before csorch reads it
_libc = ctypes.CDLL(None, use_errno=True)
_libc.mount.argtypes = (ctypes.c_char_p,) * 3 + (ctypes.c_ulong, ctypes.c_char_p)


def _mount(source, target, fstype, flags, data=None):
    enc = [x.encode() if isinstance(x, str) else x for x in (source, target, fstype, data)]
    if _libc.mount(enc[0], enc[1], enc[2], flags, enc[3]) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"mount {target}: {os.strerror(err)}")


def _unescape(field):
    # mountinfo escapes space, tab, newline and backslash as octal
    out, i = bytearray(), 0
    raw = field.encode("utf-8", "surrogateescape")
    while i < len(raw):
        if raw[i : i + 1] == b"\\" and raw[i + 1 : i + 4].isdigit():
            out.append(int(raw[i + 1 : i + 4], 8))
            i += 4
        else:
            out.append(raw[i])
            i += 1
    return bytes(out).decode("utf-8", "surrogateescape")


def _mounts():
    """(mount point, kept flags) of every mount, parents first."""
    found = []
    with open("/proc/self/mountinfo", encoding="utf-8", errors="surrogateescape") as f:
        for line in f:
            fields = line.split()
            flags = 0
            for opt in fields[5].split(","):
                flags |= _KEEP.get(opt, 0)
            found.append((_unescape(fields[4]), flags))
    return found


def _readonly(point, flags):
    try:
        _mount(None, point, None, MS_REMOUNT | MS_BIND | MS_RDONLY | flags)
    except OSError as exc:
        # a mount hidden under another or gone (EINVAL/ENOENT), or locked read-only
        # already (EPERM on a mount that is read-only outside): nothing to make read-only
        if exc.errno not in (errno.EINVAL, errno.ENOENT, errno.EACCES, errno.EPERM):
            raise


def _flags_of(point):
    for mounted, flags in reversed(_mounts()):
        if mounted == point:
            return flags
    return 0


def _tmpfs(point):
    _mount("tmpfs", point, "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777")


def _private_tmp(overlay=True):
    """/tmp: the host's read-only, under a private writable layer (an overlay); where the
    kernel refuses the overlay (an older kernel in a user namespace), a private tmpfs
    with each of the host's /tmp entries bound into it read-only."""
    _mount("tmpfs", "/dev/shm", "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777")
    os.makedirs("/dev/shm/.csorch/u")
    os.makedirs("/dev/shm/.csorch/w")
    os.chmod("/dev/shm/.csorch/u", 0o1777)
    below = _mounts_below("/tmp")
    try:
        if not overlay:
            raise OSError(errno.EPERM, "the overlay is not asked for")
        _mount(
            "overlay",
            "/tmp",
            "overlay",
            MS_NOSUID | MS_NODEV,
            "lowerdir=/tmp,upperdir=/dev/shm/.csorch/u,workdir=/dev/shm/.csorch/w",
        )
    except OSError:
        _tmpfs_over_tmp()
    else:
        _rebind(below)
    for _, fd in below:
        os.close(fd)
    _tmpfs("/dev/shm")  # covers the overlay's layer: the subject's /dev/shm is empty


def _mounts_below(top):
    """(point, O_PATH descriptor) of each outermost mount strictly below `top`: an overlay
    of `top` shows only its own filesystem, so they are bound back into it."""
    points = [p for p, _ in _mounts() if p.startswith(top.rstrip("/") + "/")]
    outer = [p for p in points if not any(p.startswith(q + "/") for q in points if q != p)]
    held = []
    for point in dict.fromkeys(outer):
        with contextlib.suppress(OSError):  # gone meanwhile, or hidden: not ours to see
            held.append((point, os.open(point, os.O_PATH | os.O_CLOEXEC)))
    return held


def _rebind(held):
    """Bind each held mount back at its point in the overlay, read-only (as every mount
    is by now), its mount point made in the overlay's private layer."""
    for point, fd in held:
        try:
            if os.path.isdir(f"/proc/self/fd/{fd}"):
                os.makedirs(point, exist_ok=True)
            elif not os.path.exists(point):
                os.makedirs(os.path.dirname(point), exist_ok=True)
                os.close(os.open(point, os.O_CREAT | os.O_WRONLY, 0o600))
            _mount(f"/proc/self/fd/{fd}", point, None, MS_BIND | MS_REC)
            _mount(None, point, None, MS_REMOUNT | MS_BIND | MS_RDONLY | _flags_of(point))
        except OSError:
            continue  # the subject does without it; a writable path there fails by name


def _tmpfs_over_tmp():
    host = os.open("/tmp", os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
    names = os.listdir(f"/proc/self/fd/{host}")
    _tmpfs("/tmp")
    for name in names:
        source, target = f"/proc/self/fd/{host}/{name}", f"/tmp/{name}"
        try:
            if os.path.islink(source):
                os.symlink(os.readlink(source), target)
                continue
            if os.path.isdir(source):
                os.mkdir(target)
            else:
                os.close(os.open(target, os.O_CREAT | os.O_WRONLY, 0o600))
            _mount(source, target, None, MS_BIND | MS_REC)
            _mount(None, target, None, MS_REMOUNT | MS_BIND | MS_RDONLY | _flags_of(target))
        except OSError:
            continue  # gone meanwhile, or not ours to see: the subject does without it
    os.close(host)


def _loopback_up():
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        ifreq = struct.pack("16sh14x", b"lo", 0)
        flags = struct.unpack("16sh14x", fcntl.ioctl(sock, 0x8913, ifreq))[1]  # SIOCGIFFLAGS
        fcntl.ioctl(sock, 0x8914, struct.pack("16sh14x", b"lo", flags | 1))  # SIOCSIFFLAGS, IFF_UP
    finally:
        sock.close()


def setup(writable, overlay=True, aliases=()):
    """Every mount read-only, a private /tmp and /dev/shm, the `writable` paths bound
    back writable (through descriptors opened first: a path under /tmp is covered by
    the private one), and each aliased directory bound at the path it is seen as (in
    the private /tmp), writable where it is."""
    _mount(None, "/", None, MS_REC | MS_PRIVATE)
    # a writable path that does not exist has nothing to write into: it is left out
    held = [(p, os.open(p, os.O_PATH | os.O_CLOEXEC)) for p in writable if os.path.exists(p)]
    for point, flags in _mounts():
        if point == "/proc" or point.startswith("/proc/"):
            continue  # this namespace's own /proc
        _readonly(point, flags)
    _private_tmp(overlay)
    for path, fd in held:
        _mount(f"/proc/self/fd/{fd}", path, None, MS_BIND | MS_REC)
        _mount(None, path, None, MS_REMOUNT | MS_BIND | _flags_of(path))
        os.close(fd)
    # opened now, through the writable binds: a bind keeps its source's flags (read-only
    # where the directory is)
    seen = [(s, os.open(r, os.O_PATH | os.O_CLOEXEC)) for r, s in aliases if os.path.isdir(r)]
    for path, fd in seen:
        os.makedirs(path, exist_ok=True)
        _mount(f"/proc/self/fd/{fd}", path, None, MS_BIND | MS_REC)
        os.close(fd)


def _alive():
    """(pid, comm, cmdline) of every process of the namespace but this one, zombies left
    out (they are dead, only not yet reaped)."""
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit() or name == "1":
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                stat = f.read()
            with open(f"/proc/{name}/cmdline", "rb") as f:
                cmdline = f.read()
        except OSError:
            continue
        comm = stat[stat.index(b"(") + 1 : stat.rindex(b")")]
        if stat[stat.rindex(b")") + 2 : stat.rindex(b")") + 3] in (b"Z", b"X"):
            continue
        words = [w.decode(errors="replace") for w in cmdline.split(b"\0") if w]
        found.append((int(name), comm.decode(errors="replace"), " ".join(words)[:200]))
    return sorted(found)


def _reap():
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def _environment(fd):
    chunks = []
    while True:
        chunk = os.read(fd, 1 << 16)
        if not chunk:
            break
        chunks.append(chunk)
    os.close(fd)
    pairs = (e.split(b"=", 1) for e in b"".join(chunks).split(b"\0") if b"=" in e)
    return {os.fsdecode(k): os.fsdecode(v) for k, v in pairs}


def _exec(argv, env, cwd, report):
    """The command's process: its own session, the namespace's own cwd, no report fd."""
    os.setsid()
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    try:
        os.chdir(cwd)
        deadline = time.monotonic() + 2.0
        while True:
            try:
                os.execvpe(argv[0], argv, env)
            except OSError as exc:
                if exc.errno == errno.ETXTBSY and time.monotonic() < deadline:
                    time.sleep(0.01)
                    continue
                raise
    except OSError as exc:
        os.write(report, f"exec {exc.errno} {exc.strerror}\n".encode())
        os._exit(127)


def _forward(signum, frame):
    with contextlib.suppress(ProcessLookupError):  # none left
        os.kill(-1, signum)


def main():
    """Set the namespace up, run the command, report and end the stragglers."""
    spec = json.loads(sys.argv[1])
    argv = sys.argv[3:]
    report = spec["report"]
    env = _environment(spec["env"])
    try:
        setup(spec["writable"], spec.get("overlay", True), spec.get("aliases", ()))
        _loopback_up()
    except OSError as exc:
        os.write(report, f"setup {exc.errno} {exc}\n".encode())
        return 125
    # csorch's SIGTERM (timeout, Ctrl-C) goes on to everyone: a sanitizer flushes its log
    signal.signal(signal.SIGTERM, _forward)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    os.set_inheritable(report, False)  # the command's exec closes it
    child = os.fork()
    if child == 0:
        _exec(argv, env, spec["cwd"], report)
    status = None
    while status is None:
        try:
            pid, got = os.wait()
        except InterruptedError:
            continue
        if pid == child:
            status = got
    _reap()
    lines = [f"status {status}\n"]
    alive = _alive()
    for pid, comm, cmdline in alive[:MAX_STRAGGLERS]:
        lines.append(f"straggler {pid} {comm!r} {cmdline!r}\n")
    if len(alive) > MAX_STRAGGLERS:
        lines.append(f"straggler 0 'more' '{len(alive) - MAX_STRAGGLERS} more'\n")
    with contextlib.suppress(ProcessLookupError):  # none left
        os.kill(-1, signal.SIGKILL)
    while True:
        try:
            os.wait()
        except ChildProcessError:
            break
    os.write(report, "".join(lines).encode(errors="replace"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
