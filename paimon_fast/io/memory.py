"""Large working buffers from pyarrow's memory pool.

A plan loads megabytes per file (index regions read whole, bit slices decoded into dense words)
and drops them when the file is planned.  Memory fresh from the system costs a page fault and a
clearing of every page on first touch, and again after it is returned; that was close to half
of a range-bitmap count (``x < 1`` over 1e7 rows: 80 ms, of which page faults and copies made up
most of the kernel's 44%).  pyarrow's pool keeps freed memory for the next allocation, so the
same pages serve file after file and query after query.

Not above :data:`NUMPY_BYTES`: mimalloc (pyarrow's default pool) gives an allocation that large
back to the system when it is freed, so the next one faults and clears page by page again, while
numpy asks the kernel for huge pages (``madvise``) from 4 MiB on.  A 40 MiB array filled once:
17.6 ms from the pool, 3.3 ms from numpy; 200 MiB: 94 and 31 ms (the outputs of a read of 5e6
rows are of these sizes).
"""

from __future__ import annotations

import os

import numpy as np
import pyarrow as pa

# reads and arrays at least this large come from the pool (smaller ones cost no page faults)
POOLED_BYTES = 64 << 10
# arrays at least this large come from numpy (huge pages), not the pool
NUMPY_BYTES = 32 << 20
_PREADV = getattr(os, "preadv", None)


def physical_memory() -> int:
    """Bytes of memory the machine has (8 GiB where the system does not say)."""
    try:
        return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):  # pragma: no cover - not Linux
        return 8 << 30


def address_space_limit() -> "int | None":
    """The process's address-space limit in bytes (``RLIMIT_AS``, soft; Spark's Python workers run
    under ``spark.executor.pyspark.memory``), or None when it has none.  Asked anew each call, so a
    limit set after import counts."""
    try:
        import resource

        soft = resource.getrlimit(resource.RLIMIT_AS)[0]
    except (ImportError, OSError, ValueError, AttributeError):  # pragma: no cover - not POSIX
        return None
    if soft == resource.RLIM_INFINITY or soft <= 0:
        return None
    return soft


def array(shape, dtype=np.uint8, fill=None) -> np.ndarray:
    """A writable array over pool memory (its contents undefined unless ``fill`` is given)."""
    dt = np.dtype(dtype)
    n = 1
    for d in (shape,) if isinstance(shape, (int, np.integer)) else shape:
        n *= int(d)  # (not np.prod: a plan asks twice a file, and numpy's costs 10 us)
    size = n * dt.itemsize
    if size < POOLED_BYTES:
        return np.zeros(shape, dtype=dt) if fill is None or fill == 0 else np.full(shape, fill, dtype=dt)
    if size >= NUMPY_BYTES:
        arr = np.empty(shape, dtype=dt)
        if fill is not None:
            arr.fill(fill)
        return arr
    arr = np.frombuffer(pa.allocate_buffer(size), dtype=dt).reshape(shape)
    if fill is not None:
        arr.fill(fill)
    return arr


def zeros(shape, dtype=np.uint64) -> np.ndarray:
    """``np.zeros(shape, dtype)`` over pool memory."""
    return array(shape, dtype, fill=0)


def pread(fd: int, length: int, offset: int):
    """``length`` bytes of ``fd`` at ``offset`` into pool memory: a ``memoryview`` of format ``B``
    (it keeps the buffer alive), or None where it would not help (a small read, no ``preadv``)
    and the caller reads its usual way.  May return fewer bytes at the end of the file."""
    if length < POOLED_BYTES or _PREADV is None:
        return None
    buf = pa.allocate_buffer(length)
    view = memoryview(buf).cast("B")
    got = _PREADV(fd, [view], offset)
    return view if got == length else view[:got]
