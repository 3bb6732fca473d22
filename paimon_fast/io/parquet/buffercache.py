"""How much of its freed memory the native reader keeps for the next reads.

A read of millions of rows fills hundreds of MB of large buffers: the pages' byte-array values
between its phases and the bytes of its string outputs.  Memory fresh from the system costs a
page fault and a clearing of every 4 KiB page on first touch; in a read of half the scattered
1e7-row benchmark directory that was about a tenth of the CPU time (``perf``: ``clear_page``
and the fault path).  So the reader (``csrc/pq_read.h``, "large buffers, kept between uses")
puts a freed buffer of 64 KiB or more on a free list of its size class, and the next buffer of
the class reuses its warm pages.  An output's bytes join the list when Arrow lets go of them.
That took 5-13% off the read above when its answers are dropped, 2% when they are held.

Bounds (:func:`budget`, applied before every read, so a limit set after import counts):

- at most :data:`MAX_BYTES` (512 MiB, or a thirty-second of the machine's memory if that is
  less), and at most an eighth of the process's address space where it is limited
  (``RLIMIT_AS``: Spark's Python workers under ``spark.executor.pyspark.memory``);
- ``PAIMON_FAST_READER_CACHE_MB`` sets the cap in MiB (``0``: keep nothing);
- a buffer not taken again within :data:`DECAY_SECONDS` is freed the next time the reader
  allocates after that; a process idle since its last read keeps what it holds until then, or
  until :func:`release` (``paimon_fast.io.parquet.buffercache.release()``).

The memory kept is at most the cap, whatever the reads; it shows in the process's RSS.
"""

from __future__ import annotations

import os
from typing import Optional

from ..memory import address_space_limit, physical_memory

#: the most bytes kept, before the limits of :func:`budget`
MAX_BYTES = min(512 << 20, physical_memory() // 32)
#: seconds a kept buffer may wait to be taken again
DECAY_SECONDS = 10.0

_applied: Optional[tuple] = None


def _env_bytes() -> Optional[int]:
    v = os.environ.get("PAIMON_FAST_READER_CACHE_MB", "").strip()
    if not v:
        return None
    try:
        mb = float(v)
    except ValueError:
        return None  # (a malformed value leaves the default, as PAIMON_FAST_THREADS does)
    return max(0, int(mb * (1 << 20)))


def budget() -> int:
    """The bytes the reader may keep now: ``PAIMON_FAST_READER_CACHE_MB`` or :data:`MAX_BYTES`,
    and at most an eighth of the address space when the process has a limit on it."""
    cap = _env_bytes()
    if cap is None:
        cap = MAX_BYTES
    limit = address_space_limit()
    return cap if limit is None else min(cap, limit // 8)


def apply(kernel) -> None:
    """Give the compiled reader the current bounds (when they changed since the last read)."""
    global _applied
    want = (budget(), DECAY_SECONDS)
    if want != _applied and hasattr(kernel, "set_buffer_cache"):
        kernel.set_buffer_cache(*want)
        _applied = want


def held() -> tuple:
    """``(bytes, buffers)`` the compiled reader keeps now."""
    from .arrowmap import _kernel

    return _kernel().buffer_cache()


def release() -> None:
    """Free everything the compiled reader keeps between reads."""
    from .arrowmap import _kernel

    _kernel().release_memory()
