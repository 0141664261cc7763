"""agentd's Python worker: runs each exec's code in one persistent namespace.

Started by reaper.py in its sandbox, with a scrubbed environment; it talks
to agentd over file descriptors 3 (from agentd) and 4 (to agentd) only.
"""

import io
import json
import linecache
import os
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


def _configure(cfg):
    global _display_pixels, _traceback_chars
    _agentd.limits = {op: (lim["head"], lim["payload"]) for op, lim in cfg["frames"].items()}
    _agentd.out_chunk = cfg["out_chunk"]
    _display_pixels = cfg["display_pixels"]
    _traceback_chars = cfg["traceback_chars"]


def main():
    _configure(json.loads(sys.argv[1]))
    sys.stdout = sys.stderr = _Out()
    ns = _namespace()
    _agentd.send({"op": "ready"})  # agentd starts the first call's deadline now
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
