"""Local Parquet files kept memory-mapped between reads, so the native reader decompresses their
pages in place instead of copying every page out of the page cache first.

A read of a local file with ``pread`` copies each page from the kernel's page cache into the
reader's buffer before it is decompressed: on the benchmark's scattered 1e7-row directory, where
every page is read, that copy was 12-23% of the read's CPU time (``perf``), more than anything
but the decompression itself.  A mapping costs a page fault per 64 KiB on first touch, and
unmapping costs too, so a mapping made for one read and dropped after it is slower than ``pread``.
Hence a file is mapped the *second* time a read asks for the same version of it, and the mapping
is kept (least recently used first out) for the reads after: a service asking question after
question of one directory pays the faults once; a one-off scan never maps.

Which version: the key :func:`paimon_fast.io.parquet.native.open_source` gives (path, size,
mtime, ctime, inode of the descriptor the read opened).  A new version of a path drops the old
one's mapping.  A mapping keeps its file's blocks on disk after the file is deleted, until it is
dropped: :meth:`Store.delete <paimon_fast.io.stores.Store.delete>` drops the mappings of a path it
deletes, and :func:`forget` drops any or all.  Mapped pages count in a process's RSS as shared
file pages (the page cache, which a ``pread`` read fills as well).

A file truncated while it is mapped and read fails that read with ``IndexFormatError`` ("changed
or shrank while it was read"), as a short ``pread`` does: the reader catches the fault
(``csrc/pq_read.h``, "mapped files that shrink").

Tunables: :data:`ENABLED`, :data:`MIN_BYTES`, :data:`MAX_FILES`, :data:`MAX_BYTES` (see
:func:`budget`).
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from typing import Optional

from ..memory import address_space_limit, physical_memory

#: map files at all (False: every local read uses ``pread``)
ENABLED = os.environ.get("PAIMON_FAST_MMAP", "1").strip().lower() not in ("0", "false", "no", "off")
#: smaller files are read with ``pread`` (a mapping of a few pages saves nothing)
MIN_BYTES = 1 << 20
#: at most this many files mapped at once
MAX_FILES = 1024


#: at most this many bytes of files mapped at once: a quarter of the machine's memory (and of the
#: process's address space where it is limited, see :func:`budget`)
MAX_BYTES = physical_memory() // 4


def budget() -> int:
    """The bytes that may be mapped at once: :data:`MAX_BYTES`, and at most a quarter of the
    address space when the process has a limit on it (``RLIMIT_AS``: Spark's Python workers under
    ``spark.executor.pyspark.memory``, where mappings would take the room of the arrays a read
    allocates).  Asked when a file is mapped, so a limit set after import counts."""
    limit = address_space_limit()
    return MAX_BYTES if limit is None else min(MAX_BYTES, limit // 4)


_LOCK = threading.Lock()
# path -> (key, FileMap), least recently used first: one version of a path at a time
_MAPS: "OrderedDict[str, tuple]" = OrderedDict()
_SEEN: "OrderedDict[str, tuple]" = OrderedDict()  # path -> the key of the version read once
_SEEN_MAX = 4 * MAX_FILES
_bytes = 0


def mapping(fd: int, size: int, key) -> Optional[object]:
    """The mapping of the file open on ``fd`` (``size`` bytes, version ``key``: its first item is
    the path) for a read, or None: read it with ``pread`` (the first read of this version, a small
    file, mapping off or failed)."""
    global _bytes
    if not ENABLED or key is None or size < MIN_BYTES or size > MAX_BYTES:
        return None
    path = key[0]
    with _LOCK:
        got = _MAPS.get(path)
        if got is not None and got[0] == key:
            _MAPS.move_to_end(path)
            return got[1]
        if got is not None:  # another version of the path: not wanted again
            del _MAPS[path]
            _bytes -= got[1].size
        if _SEEN.get(path) != key:
            _SEEN[path] = key
            _SEEN.move_to_end(path)
            while len(_SEEN) > _SEEN_MAX:
                _SEEN.popitem(last=False)
            return None
        del _SEEN[path]
    room = budget()
    if size > room:
        return None
    from ..._kernels import pqread

    try:
        m = pqread.FileMap(fd, size)
    except (OSError, ValueError):
        return None
    with _LOCK:
        got = _MAPS.get(path)
        if got is not None and got[0] == key:  # another thread mapped it meanwhile
            return got[1]
        if got is not None:
            _bytes -= got[1].size
        _MAPS[path] = (key, m)
        _MAPS.move_to_end(path)
        _bytes += size
        while _MAPS and (len(_MAPS) > MAX_FILES or _bytes > room):
            _, (_, old) = _MAPS.popitem(last=False)
            _bytes -= old.size
    return m


def forget(path: Optional[str] = None) -> None:
    """Drop the mappings of ``path`` (every version), or of every file.  A mapping still in use by
    a running read is unmapped when that read is done."""
    global _bytes
    with _LOCK:
        if path is None:
            _MAPS.clear()
            _SEEN.clear()
            _bytes = 0
            return
        path = os.fspath(path)
        got = _MAPS.pop(path, None)
        if got is not None:
            _bytes -= got[1].size
        _SEEN.pop(path, None)


def mapped() -> dict:
    """``{path: bytes}`` of the files mapped now (tests, diagnostics)."""
    with _LOCK:
        return {p: m.size for p, (_, m) in _MAPS.items()}
