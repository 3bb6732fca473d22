"""Ranged, counted reads of a store's files: :class:`IOCounter` (bytes and requests read),
:class:`ArrowFileSource` (a pyarrow random-access file as a :class:`~paimon_fast.io.source.Source`,
one ranged read per ``read_at``) and :class:`CountingFile` (a seekable file for ``pyarrow.parquet``
counting what it reads).  :mod:`paimon_fast.io.fs` hands these names on."""

from __future__ import annotations

import io
import threading
from typing import Optional, Tuple

from .source import Source, checked_read


class IOCounter:
    """Bytes and requests read through a store (thread-safe)."""

    def __init__(self):
        self._lock = threading.Lock()
        self.bytes = 0
        self.requests = 0

    def add(self, n: int) -> None:
        with self._lock:
            self.bytes += n
            self.requests += 1

    def snapshot(self) -> Tuple[int, int]:
        with self._lock:
            return self.bytes, self.requests

    def __getstate__(self):  # shipped to executors inside datasets: counts there stay there
        return self.snapshot()

    def __setstate__(self, state):
        self.__init__()
        self.bytes, self.requests = state


class ArrowFileSource(Source):
    """A pyarrow random-access file: each ``read_at`` is one ranged read (thread-safe), counted."""

    def __init__(self, f, path: str = "", counter: Optional[IOCounter] = None, head: int = 0):
        self._f = f
        self.path = path
        self.size = f.size()
        self.counter = counter
        self._head_len = min(head, self.size)
        self._head = None
        self._lock = threading.Lock()

    def _read(self, offset, length):
        if offset + length <= self._head_len:
            with self._lock:
                if self._head is None:
                    self._head = self._fetch(0, self._head_len)
            return memoryview(self._head)[offset : offset + length]
        return self._fetch(offset, length)

    def _fetch(self, offset, length):
        return checked_read(self._f.read_at(length, offset), length, offset, self.path, self.counter)

    def close(self):
        if self._f is not None:
            self._f.close()
            self._f = None


class CountingFile(io.RawIOBase):
    """A seekable read-only file counting the bytes read (for ``pyarrow.parquet``)."""

    def __init__(self, f, counter: IOCounter):
        self._f = f
        self.counter = counter

    def readable(self):
        return True

    def seekable(self):
        return True

    def seek(self, offset, whence=io.SEEK_SET):
        return self._f.seek(offset, whence)

    def tell(self):
        return self._f.tell()

    def read(self, n=-1):
        data = self._f.read() if n is None or n < 0 else self._f.read(n)
        self.counter.add(len(data))
        return data

    def readinto(self, b):
        data = self.read(len(b))
        b[: len(data)] = data
        return len(data)

    def size(self):
        if hasattr(self._f, "size"):
            return self._f.size()
        cur = self._f.tell()
        end = self._f.seek(0, io.SEEK_END)
        self._f.seek(cur)
        return end

    def close(self):
        self._f.close()
        super().close()
