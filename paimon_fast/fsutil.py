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


def write_or_fault(fh, data: bytes, _fault: Optional[str], what: str) -> None:
    """Write ``data`` to ``fh``; with ``_fault`` (tests) write half of it and then raise
    (``"raise"``) or kill the process (``"exit"``)."""
    if _fault:
        fh.write(data[: len(data) // 2])
        fh.flush()
        if _fault == "exit":
            os._exit(17)
        raise RuntimeError(f"injected failure while writing {what}")
    fh.write(data)


def write_atomic(path: str, data: bytes, _fault: Optional[str] = None) -> None:
    """Write ``data`` to ``path`` through a hidden temporary file and an atomic rename.

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
