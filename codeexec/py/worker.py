"""agentd's Python worker: runs each exec's code in one persistent namespace.

Started by agentd with a scrubbed environment; it talks to agentd over file
descriptors 3 (from agentd) and 4 (to agentd) only.
"""

import ctypes
import io
import json
import linecache
import os
import stat
import struct
import sys
import time
import traceback

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import _agentd  # noqa: E402
import pyautogui  # noqa: E402


class _Out(io.TextIOBase):
    """sys.stdout and sys.stderr: text goes to agentd, in order."""

    def writable(self):
        return True

    def write(self, s):
        if not isinstance(s, str):
            raise TypeError("write() argument must be str, not " + type(s).__name__)
        if s:
            _agentd.write(s)
        return len(s)

    def flush(self):
        _agentd.flush()


def log(*values):
    """Writes the values to the output, like print."""
    print(*values)


_display_pixels = 1 << 24  # set from the configuration
_traceback_chars = 16384


def display(image):
    """Shows an image to the model: a PIL image, or PNG bytes. An image larger
    than the session's view is scaled down to fit it."""
    if isinstance(image, (bytes, bytearray, memoryview)):
        image = bytes(image)
        if len(image) > 4 * _display_pixels:
            raise ValueError("display() takes PNG bytes of at most %d bytes, not %d" % (4 * _display_pixels, len(image)))
        _agentd.send({"op": "image", "format": "png"}, image)
        return
    if hasattr(image, "tobytes") and hasattr(image, "size") and hasattr(image, "convert"):
        w, h = image.size
        if w * h > _display_pixels:
            raise ValueError("display() takes images of at most %d pixels, not %d×%d: scale it down first" % (_display_pixels, w, h))
        if image.mode != "RGBA":
            image = image.convert("RGBA")
        _agentd.send({"op": "image", "format": "rgba", "width": w, "height": h}, image.tobytes())
        return
    raise TypeError("display() takes a PIL image or PNG bytes, not " + type(image).__name__)


def _namespace():
    return {
        "__name__": "__main__",
        "__builtins__": __builtins__,
        "pyautogui": pyautogui,
        "time": time,
        "log": log,
        "display": display,
    }


def _traceback(exc, filename):
    # Drop the worker's own frames: the model needs its code's lines only.
    tb = exc.__traceback__
    while tb is not None and tb.tb_frame.f_code.co_filename != filename:
        tb = tb.tb_next
    text = "".join(traceback.format_exception(type(exc), exc, tb))
    if len(text) > _traceback_chars:
        # The end names the exception: keep it.
        text = "[traceback cut to its last %d characters]\n" % _traceback_chars + text[-_traceback_chars:]
    return text


def _landlock(hidden):
    """Closes the paths in hidden (agentd's token file) to this process and
    its children with Landlock, and keeps every other path's access as it
    was; where the kernel offers it, also signals to processes outside (agentd)
    and abstract unix sockets. Returns why it could not, or None."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
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
        for name in os.listdir(d):
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
    if libc.prctl(38, 1, 0, 0, 0) != 0 or libc.syscall(446, rfd, 0) != 0:  # no_new_privs, restrict_self
        err = ctypes.get_errno()
        os.close(rfd)
        return "landlock_restrict_self: errno %d" % err
    os.close(rfd)
    return None


def _configure(cfg):
    global _display_pixels, _traceback_chars
    _agentd.limits = {op: (lim["head"], lim["payload"]) for op, lim in cfg["frames"].items()}
    _agentd.out_chunk = cfg["out_chunk"]
    _display_pixels = cfg["display_pixels"]
    _traceback_chars = cfg["traceback_chars"]


def main():
    cfg = json.loads(sys.argv[1])
    _configure(cfg)
    if cfg.get("hide"):
        why = _landlock(cfg["hide"])
        if why is not None:
            _agentd.send({"op": "sandbox", "error": why})
    sys.stdout = sys.stderr = _Out()
    ns = _namespace()
    n = 0
    while True:
        try:
            head, _ = _agentd.next_exec()
        except EOFError:
            return
        if head.get("op") != "exec":
            _agentd.send({"op": "done", "traceback": "worker: unexpected message " + repr(head.get("op"))})
            continue
        n += 1
        filename = "<exec %d>" % n
        code = head.get("code", "")
        linecache.cache[filename] = (len(code), None, code.splitlines(True), filename)
        pyautogui._begin(head)
        tb = ""
        try:
            exec(compile(code, filename, "exec"), ns)
        except BaseException as exc:  # the code's own SystemExit too: the namespace lives on
            tb = _traceback(exc, filename)
        _agentd.send({"op": "done", "traceback": tb})


if __name__ == "__main__":
    main()
