"""agentd's keeper of one code worker.

agentd starts it (python3 -I reaper.py CONFIG) with the worker's scrubbed
environment and the worker's two pipes as file descriptors 3 and 4. It is a
child subreaper: every process the worker starts stays in its subtree, since
an orphan is reparented to it, so none can outlive it. It forks the worker,
which enters its sandbox (resource limits, another user when agentd is
root, Landlock, seccomp) and execs python3 -I worker.py. The keeper exits
when the worker does, with the worker's status, or on SIGTERM (agentd
stopping the worker, or agentd's death: its parent-death signal); each time
after killing every process of its subtree.

It stays single-threaded, so its one thread id is its pid, which the
worker's seccomp filter keeps the worker from signalling.
"""

import ctypes
import json
import os
import resource
import signal
import stat
import struct
import sys
import time

libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
_prctl = libc.prctl
_prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong]

PR_SET_DUMPABLE = 4
PR_SET_SECCOMP = 22
PR_SET_CHILD_SUBREAPER = 36
PR_SET_NO_NEW_PRIVS = 38
SECCOMP_MODE_FILTER = 2

_SIGNALS = {signal.SIGCHLD, signal.SIGTERM, signal.SIGINT, signal.SIGHUP}

_RLIMITS = {
    "cpu": resource.RLIMIT_CPU,
    "as": resource.RLIMIT_AS,
    "fsize": resource.RLIMIT_FSIZE,
    "nofile": resource.RLIMIT_NOFILE,
    "core": resource.RLIMIT_CORE,
}


def prctl(option, arg2=0, arg3=0):
    if _prctl(option, arg2, arg3, 0, 0) != 0:
        err = ctypes.get_errno()
        raise OSError(err, "prctl(%d): %s" % (option, os.strerror(err)))


def send_frame(head):
    """Writes one frame to agentd (fd 4), as _agentd does."""
    j = json.dumps(head).encode("utf-8")
    os.write(4, struct.pack(">II", len(j), 0) + j)


# --- the keeper ---------------------------------------------------------


def children():
    """The pids whose parent is this process, read from /proc."""
    me = os.getpid()
    out = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % name, "rb") as f:
                data = f.read()
        except OSError:
            continue
        fields = data[data.rfind(b")") + 2:].split()
        if len(fields) > 1 and int(fields[1]) == me:
            out.append(int(name))
    return out


def reap(worker, status):
    """Reaps every child that has ended; returns the worker's wait status
    (status if the worker was not among them) and whether no child is
    left."""
    try:
        while True:
            pid, st = os.waitpid(-1, os.WNOHANG)
            if pid == 0:
                return status, False
            if pid == worker:
                status = st
    except ChildProcessError:
        return status, True


def kill_all(worker, status):
    """Kills and reaps every process of the subtree; returns the worker's
    wait status (status if it was already reaped)."""
    try:
        os.killpg(worker, signal.SIGKILL)
    except OSError:
        pass
    while True:
        for pid in children():
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        status, none_left = reap(worker, status)
        if none_left:
            return status
        # Orphans of the processes just killed are reparented here: again.
        time.sleep(0.005)


def exit_like(status):
    """Ends this process as the worker ended, so agentd sees its status."""
    if status is not None and os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        if sig not in (signal.SIGKILL, signal.SIGSTOP):
            signal.signal(sig, signal.SIG_DFL)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {sig})
        os.kill(os.getpid(), sig)
        os._exit(128 + sig)
    if status is not None and os.WIFEXITED(status):
        os._exit(os.WEXITSTATUS(status))
    os._exit(1)


def user_tasks(uid):
    """How many tasks (threads) the user runs: RLIMIT_NPROC counts them."""
    n = 0
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open("/proc/%s/status" % name) as f:
                real = threads = None
                for line in f:
                    if line.startswith("Uid:"):
                        real = int(line.split()[1])
                    elif line.startswith("Threads:"):
                        threads = int(line.split()[1])
        except (OSError, ValueError, IndexError):
            continue
        if real == uid and threads:
            n += threads
    return n


def main():
    cfg = json.loads(sys.argv[1])
    prctl(PR_SET_CHILD_SUBREAPER, 1)
    # Its memory and /proc files closed to processes of the same user.
    prctl(PR_SET_DUMPABLE, 0)
    signal.pthread_sigmask(signal.SIG_BLOCK, _SIGNALS)
    if os.getppid() != cfg["agentd"]:
        sys.exit("agentd is gone")
    uid = cfg["uid"] if cfg.get("uid") is not None else os.getuid()
    nproc = user_tasks(uid) + cfg["nproc_extra"]
    worker = os.fork()
    if worker == 0:
        try:
            enter_sandbox(cfg, nproc)
            os.execv(cfg["python"], [cfg["python"], "-I"] + cfg["worker"])
        except BaseException as e:  # noqa: B036 -- nothing of the code runs here
            os.write(2, ("the worker's sandbox: %s\n" % e).encode("utf-8", "replace"))
        os._exit(125)
    status = None
    while True:
        sig = signal.sigwait(_SIGNALS)
        status, _ = reap(worker, status)
        if status is not None or sig != signal.SIGCHLD:
            exit_like(kill_all(worker, status))


# --- the worker's sandbox, entered in the forked child -------------------


def enter_sandbox(cfg, nproc):
    os.setpgid(0, 0)  # kill(0) from the code never reaches the keeper
    signal.pthread_sigmask(signal.SIG_SETMASK, set())
    for name, value in cfg["rlimits"].items():
        resource.setrlimit(_RLIMITS[name], (value, value))
    resource.setrlimit(resource.RLIMIT_NPROC, (nproc, nproc))
    # Landlock's walk sees what agentd's user sees; then the user changes.
    why = landlock(cfg["hide"])
    if cfg.get("uid") is not None:
        os.setgroups([])
        os.setresgid(cfg["gid"], cfg["gid"], cfg["gid"])
        os.setresuid(cfg["uid"], cfg["uid"], cfg["uid"])
    if why is not None:
        send_frame({"op": "sandbox", "error": why})
    seccomp(os.getppid(), cfg["agentd"])


def landlock(hidden):
    """Closes the paths in hidden (agentd's token file, the X cookie) to
    this process and its children with Landlock, and keeps every other
    path's access as it was; where the kernel offers it (ABI 6), also
    signals to processes outside (agentd, the keeper) and abstract unix
    sockets. Returns why it could not, or None."""
    abi = libc.syscall(444, None, 0, 1)  # landlock_create_ruleset: the ABI version
    if abi < 1:
        return "Landlock is not available (errno %d)" % ctypes.get_errno()
    rights = (1 << 13) - 1  # ABI 1: execute .. make_sym
    rights |= (1 << 13 if abi >= 2 else 0) | (1 << 14 if abi >= 3 else 0) | (1 << 15 if abi >= 5 else 0)
    file_rights = rights & (1 | 2 | 4 | 1 << 14 | 1 << 15)  # execute, write, read, truncate, ioctl
    attr = struct.pack("=Q", rights) if abi < 6 else struct.pack("=QQQ", rights, 0, 1 | 2)
    rfd = libc.syscall(444, ctypes.create_string_buffer(attr, len(attr)), len(attr), 0)
    if rfd < 0:
        return "landlock_create_ruleset: errno %d" % ctypes.get_errno()
    hidden = {os.path.realpath(p) for p in hidden}
    on_the_way = set()
    for p in hidden:
        while p != "/":
            p = os.path.dirname(p)
            on_the_way.add(p)

    def allow(path):
        try:
            fd = os.open(path, os.O_PATH | os.O_NOFOLLOW | os.O_CLOEXEC)
        except OSError:
            return
        try:
            mode = os.fstat(fd).st_mode
            if stat.S_ISLNK(mode):
                return  # its target has a rule of its own, or is hidden
            r = rights if stat.S_ISDIR(mode) else file_rights
            rule = ctypes.create_string_buffer(struct.pack("=Qi", r, fd), 12)
            if libc.syscall(445, rfd, 1, rule, 0) < 0:
                raise OSError(ctypes.get_errno(), "landlock_add_rule " + path)
        finally:
            os.close(fd)

    def walk(d):
        try:
            names = os.listdir(d)
        except PermissionError:
            return  # what cannot be listed gets no rule: it stays closed
        for name in names:
            p = os.path.join(d, name)
            if p in on_the_way:
                walk(p)
            elif p not in hidden:
                allow(p)

    try:
        walk("/")
    except OSError as e:
        os.close(rfd)
        return str(e)
    try:
        prctl(PR_SET_NO_NEW_PRIVS, 1)
    except OSError as e:
        os.close(rfd)
        return str(e)
    if libc.syscall(446, rfd, 0) != 0:  # landlock_restrict_self
        err = ctypes.get_errno()
        os.close(rfd)
        return "landlock_restrict_self: errno %d" % err
    os.close(rfd)
    if abi < 6:
        return ("Landlock ABI %d, before 6: the code can signal its user's processes other than agentd and "
                "its keeper (seccomp still refuses every unix socket)" % abi)
    return None


# Audit architecture and system call numbers of the seccomp filter.
_ARCHES = {
    "x86_64": (0xC000003E, {"socket": 41, "kill": 62, "tkill": 200, "tgkill": 234, "rt_sigqueueinfo": 129,
                            "rt_tgsigqueueinfo": 297, "pidfd_open": 434, "pidfd_send_signal": 424,
                            "io_uring_setup": 425}),
    "aarch64": (0xC00000B7, {"socket": 198, "kill": 129, "tkill": 130, "tgkill": 131, "rt_sigqueueinfo": 138,
                             "rt_tgsigqueueinfo": 240, "pidfd_open": 434, "pidfd_send_signal": 424,
                             "io_uring_setup": 425}),
}


def seccomp_program(machine, keeper, agentd):
    """The worker's seccomp filter, as classic BPF: no unix socket (the X
    server's, by path or abstract name, D-Bus, any other local service);
    no io_uring (it would open sockets past this filter); no signal to the
    keeper, to agentd, or to every process at once (kill(-1)); no other
    architecture's system calls."""
    if machine not in _ARCHES:
        raise OSError("no seccomp filter for the %s architecture" % machine)
    arch, nr = _ARCHES[machine]
    ld, jeq, jge, ret = 0x20, 0x15, 0x35, 0x06
    allow, errno = 0x7FFF0000, 0x00050000
    prog, labels = [], {}

    def op(code, k=0, jt=0, jf=0):
        prog.append([code, jt, jf, k & 0xFFFFFFFF])

    op(ld, 4)  # seccomp_data.arch
    op(jeq, arch, 0, "enosys")
    op(ld, 0)  # seccomp_data.nr
    op(jge, 0x40000000, "enosys", 0)  # x32
    op(jeq, nr["io_uring_setup"], "enosys", 0)
    op(jeq, nr["tkill"], "eperm", 0)
    op(jeq, nr["pidfd_send_signal"], "eperm", 0)
    op(jeq, nr["socket"], "socket", 0)
    for name in ("kill", "tgkill", "rt_sigqueueinfo", "rt_tgsigqueueinfo", "pidfd_open"):
        op(jeq, nr[name], "target", 0)
    op(ret, allow)
    labels["socket"] = len(prog)
    op(ld, 16)  # the low half of args[0]: the domain
    op(jeq, 1, "eacces", 0)  # AF_UNIX
    op(ret, allow)
    labels["target"] = len(prog)
    op(ld, 16)  # the low half of args[0]: the pid
    for pid in (keeper, -keeper, agentd, -agentd, -1):
        op(jeq, pid, "eperm", 0)
    op(ret, allow)
    labels["enosys"] = len(prog)
    op(ret, errno | 38)
    labels["eperm"] = len(prog)
    op(ret, errno | 1)
    labels["eacces"] = len(prog)
    op(ret, errno | 13)
    out = b""
    for i, (code, jt, jf, k) in enumerate(prog):
        jt = labels[jt] - i - 1 if isinstance(jt, str) else jt
        jf = labels[jf] - i - 1 if isinstance(jf, str) else jf
        out += struct.pack("=HBBI", code, jt, jf, k)
    return out


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


def seccomp(keeper, agentd):
    prog = seccomp_program(os.uname().machine, keeper, agentd)
    buf = ctypes.create_string_buffer(prog, len(prog))
    fprog = _SockFprog(len(prog) // 8, ctypes.addressof(buf))
    prctl(PR_SET_NO_NEW_PRIVS, 1)
    prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.addressof(fprog))


if __name__ == "__main__":
    main()
