"""Length-prefixed pickle messages between the harness and its zygote process."""

from __future__ import annotations

import pickle
import struct
import threading

_lock = threading.Lock()


def send(stream, message: dict) -> None:
    data = pickle.dumps(message)
    with _lock:
        stream.write(struct.pack("<Q", len(data)) + data)
        stream.flush()


def receive(stream) -> dict | None:
    header = stream.read(8)
    if len(header) < 8:
        return None
    (size,) = struct.unpack("<Q", header)
    return pickle.loads(stream.read(size))
