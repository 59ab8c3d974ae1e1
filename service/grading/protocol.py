"""Length-prefixed JSON frames: the only way data crosses between judge, zygote and child.

A frame is a 4-byte big-endian length followed by that many bytes of UTF-8 JSON (an object).
Never pickle, never eval: a frame from a child is untrusted data, parsed with `json.loads` and
then checked field by field by the judge.

Stdlib only. This module is imported by the judge (as `service.grading.protocol`) and by the
zygote and its children (as a plain module loaded from this folder), so it must not import
anything from `service`.
"""

from __future__ import annotations

import json
import os
import struct
from typing import Any

HEADER = struct.Struct(">I")
#: Frames a child may send (results); larger ones are refused as bad output.
MAX_RESULT_FRAME = 8 * 1024 * 1024
#: Frames a judge may send (a task: the code plus the plan).
MAX_TASK_FRAME = 16 * 1024 * 1024


class FrameError(Exception):
    """The byte stream is not a valid sequence of frames (too large, not JSON, not an object)."""


def encode(obj: Any) -> bytes:
    data = json.dumps(obj, separators=(",", ":"), allow_nan=True).encode("utf-8")
    return HEADER.pack(len(data)) + data


def encode_raw(json_bytes: bytes) -> bytes:
    """Frame already-serialised JSON (lets the judge splice a cached plan into a task)."""
    return HEADER.pack(len(json_bytes)) + json_bytes


def write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        n = os.write(fd, view)
        view = view[n:]


def read_exact(fd: int, n: int) -> bytes:
    """Blocking read of exactly n bytes; raises EOFError if the stream ends first."""
    chunks = []
    while n:
        chunk = os.read(fd, min(n, 1 << 20))
        if not chunk:
            raise EOFError("stream ended inside a frame")
        chunks.append(chunk)
        n -= len(chunk)
    return b"".join(chunks)


def read_frame_blocking(fd: int, limit: int = MAX_TASK_FRAME) -> dict[str, Any]:
    """Read one frame (used by the child for its task; the judge uses FrameReader)."""
    (length,) = HEADER.unpack(read_exact(fd, HEADER.size))
    if length > limit:
        raise FrameError(f"frame of {length} bytes exceeds {limit}")
    return decode(read_exact(fd, length))


def decode(data: bytes) -> dict[str, Any]:
    try:
        obj = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise FrameError(f"not JSON: {exc.__class__.__name__}") from None
    if not isinstance(obj, dict):
        raise FrameError("frame is not a JSON object")
    return obj


class FrameReader:
    """Incremental parser for a non-blocking reader: feed bytes, take complete frames."""

    def __init__(self, limit: int = MAX_RESULT_FRAME) -> None:
        self.limit = limit
        self._buf = bytearray()

    def feed(self, data: bytes) -> list[dict[str, Any]]:
        self._buf += data
        frames = []
        while len(self._buf) >= HEADER.size:
            (length,) = HEADER.unpack_from(self._buf)
            if length > self.limit:
                raise FrameError(f"frame of {length} bytes exceeds the {self.limit}-byte limit")
            if len(self._buf) < HEADER.size + length:
                break
            payload = bytes(self._buf[HEADER.size : HEADER.size + length])
            del self._buf[: HEADER.size + length]
            frames.append(decode(payload))
        return frames

    @property
    def pending(self) -> int:
        return len(self._buf)
