"""The worker's channel to agentd: framed messages over two pipes.

A frame is a 4-byte big-endian length of a JSON header, a 4-byte big-endian
length of a binary payload, the header, then the payload. agentd answers each
request ("act", "hold", "screenshot", ...) with exactly one frame; "out",
"image" and "done" have no answer.
"""

import json
import os
import struct
import threading

_rd = os.fdopen(3, "rb", buffering=0)
_wr = os.fdopen(4, "wb", buffering=0)
_pending = []  # printed text not yet sent
# agentd's caps on each kind of frame (op: (header, payload) bytes), set by
# the worker from its configuration: a frame over them would stop the
# worker, so it is refused here with an exception instead.
limits = {}
small = (4096, 0)
out_chunk = 8192  # characters of printed text per frame
# One exchange at a time: threads of the code share the pipes, and a
# request's answer must go to the thread that asked.
_lock = threading.RLock()


class AgentdError(Exception):
    """agentd refused or could not perform a request."""


def _read_exact(n):
    chunks = []
    while n:
        b = _rd.read(n)
        if not b:
            raise EOFError("agentd closed the channel")
        chunks.append(b)
        n -= len(b)
    return b"".join(chunks)


def recv():
    jl, pl = struct.unpack(">II", _read_exact(8))
    head = json.loads(_read_exact(jl))
    return head, (_read_exact(pl) if pl else b"")


def _send(head, payload=b""):
    j = json.dumps(head, ensure_ascii=False).encode("utf-8")
    max_head, max_payload = limits.get(head.get("op"), small)
    if len(j) > max_head or len(payload) > max_payload:
        raise ValueError("a %s message of %d+%d bytes is over agentd's limit of %d+%d bytes"
                         % (head.get("op"), len(j), len(payload), max_head, max_payload))
    _wr.write(struct.pack(">II", len(j), len(payload)) + j)
    if payload:
        _wr.write(payload)


def send(head, payload=b""):
    """Sends a frame after any pending text, so output stays in order."""
    with _lock:
        flush()
        _send(head, payload)


def write(text):
    """Queues printed text; a line break or a large buffer sends it, so what
    was printed before a long loop is not lost if the worker is stopped."""
    with _lock:
        _pending.append(text)
        if "\n" in text or sum(len(t) for t in _pending) > 8192:
            flush()


def flush():
    """Sends pending text in chunks that keep within the "out" frame's cap
    whatever the characters (JSON escapes at most 6 bytes for one)."""
    with _lock:
        if _pending:
            text = "".join(_pending)
            _pending.clear()
            for i in range(0, len(text), out_chunk):
                _send({"op": "out", "text": text[i:i + out_chunk]})


_execs = []  # exec messages read by another thread, in order


def next_exec():
    """Waits for agentd's next exec message."""
    with _lock:
        if _execs:
            return _execs.pop(0)
        return recv()


# errors maps agentd's error kinds to the exception classes pyautogui sets.
errors = {}


def call(head, payload=b""):
    """Sends a request and returns agentd's answer (header, payload)."""
    with _lock:
        send(head, payload)
        while True:
            rep, data = recv()
            if rep.get("op") != "exec":
                break
            # A thread the code left running asked between two calls:
            # the next call's code arrived first and waits for the worker.
            _execs.append((rep, data))
    err = rep.get("error")
    if err is not None:
        raise errors.get(rep.get("kind"), AgentdError)(err)
    return rep, data
