"""Local file writes that never leave a partial file under the final name.

Every index, catalog, listing and manifest the project writes goes through
:func:`write_atomic`: the bytes go to a hidden temporary file in the same
directory (``.<name>.tmp-<uuid>``), are flushed and fsynced, and are renamed
into place; on any failure the temporary file is removed.  A process killed
mid-write can leave only a temporary file, which :data:`TMP_MARK` identifies
for clean-up.
"""

from __future__ import annotations

import os
import uuid
from typing import Optional

TMP_MARK = ".tmp-"


class Chunks:
    """A file's bytes as buffers written one after another, never joined into one (a global
    index file of a large table is tens of MB, and joining it costs a copy): ``len()`` is
    the size, ``bytes()`` joins them; :func:`write_all` and every writer here take it
    wherever they take bytes."""

    __slots__ = ("parts", "size")

    def __init__(self, parts):
        self.parts = [p for p in (memoryview(q).cast("B") for q in parts) if len(p)]
        self.size = sum(len(p) for p in self.parts)

    def __len__(self) -> int:
        return self.size

    def __bytes__(self) -> bytes:
        return b"".join(self.parts)


def write_all(fh, data) -> None:
    """``fh.write(data)`` for bytes, or each part of :class:`Chunks` in order."""
    if isinstance(data, Chunks):
        for p in data.parts:
            fh.write(p)
    else:
        fh.write(data)


def write_or_fault(fh, data, _fault: Optional[str], what: str) -> None:
    """Write ``data`` (bytes or :class:`Chunks`) to ``fh``; with ``_fault`` (tests) write half
    of it and then raise (``"raise"``) or kill the process (``"exit"``)."""
    if _fault:
        data = bytes(data)
        fh.write(data[: len(data) // 2])
        fh.flush()
        if _fault == "exit":
            os._exit(17)
        raise RuntimeError(f"injected failure while writing {what}")
    write_all(fh, data)


def write_atomic(path: str, data, _fault: Optional[str] = None) -> None:
    """Write ``data`` (bytes or :class:`Chunks`) to ``path`` through a hidden temporary file
    and an atomic rename.

    ``_fault`` (tests only): ``"raise"`` fails after writing half the bytes,
    ``"exit"`` kills the process there, leaving the temporary file behind.
    """
    path = os.fspath(path)
    d, name = os.path.split(os.path.abspath(path))
    os.makedirs(d, exist_ok=True)
    tmp = os.path.join(d, f".{name}{TMP_MARK}{uuid.uuid4().hex}")
    try:
        with open(tmp, "wb") as fh:
            write_or_fault(fh, data, _fault, path)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
